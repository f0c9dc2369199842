//! How `get`, `history` and `watch` print keys: etcdctl's exact bytes, escaped text, hex, or
//! JSON (ours or etcdctl's), streamed as the pages and events arrive.

use std::io::{self, IsTerminal, Write};

use etcdops::client::ResponseHeader;
use etcdops::kv::{Encoding, KeyEvent, KeyHistory, KeyValueView};

use crate::output::{Lines, Render, escape, json_line, text};
use crate::{OutputFormat, Printer, etcdctl};

/// A value on the line below its key: one line whatever it holds.
pub fn value_text(value: &str, encoding: Option<Encoding>) -> String {
    text(value, encoding.unwrap_or(Encoding::Text))
}

/// A value printed on its own (`--print-value-only`): multi-line text stays multi-line, other
/// control characters are escaped, base64 is marked.
pub fn value_alone(value: &str, encoding: Option<Encoding>) -> String {
    match encoding {
        Some(Encoding::Base64) => text(value, Encoding::Base64),
        _ => escape(value, Lines::Keep),
    }
}

/// One event of a key's history or a watch, on one line.
pub fn event_line(e: &KeyEvent) -> String {
    let key = text(&e.key, e.key_encoding);
    match &e.value {
        Some(v) => format!("PUT {key}\n{}", value_text(v, e.value_encoding)),
        None => format!("DELETE {key}"),
    }
}

/// `history`: every change of a key, as events.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct HistoryView(pub KeyHistory);

impl Render for HistoryView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["REVISION", "EVENT", "VERSION", "CREATED", "LEASE", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = self
            .0
            .events
            .iter()
            .map(|e| {
                vec![
                    e.revision.to_string(),
                    format!("{:?}", e.kind).to_uppercase(),
                    e.version.to_string(),
                    e.create_revision.to_string(),
                    e.lease.clone().unwrap_or_default(),
                    e.value
                        .as_ref()
                        .map(|v| value_text(v, e.value_encoding))
                        .unwrap_or_default(),
                ]
            })
            .collect();
        if let Some(first) = self.0.compacted_before {
            rows.push(vec![
                first.to_string(),
                "COMPACTED".into(),
                String::new(),
                String::new(),
                String::new(),
                "older versions were compacted away".into(),
            ]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        self.0
            .events
            .iter()
            .map(|e| format!("{} {}", e.revision, event_line(e)))
            .collect()
    }

    fn multiline_simple(&self) -> bool {
        // A put's value on the line under its key, as etcdctl's watch prints it.
        true
    }
}

/// The JSON document `get -w json` streams: its opening, then one key a line.
pub const KVS_OPEN: &str = "{\"kvs\":[";

/// How etcd data goes to stdout in `simple`: etcdctl's exact bytes when stdout is not a
/// terminal (pipes and files get what etcdctl gives them), escaped and marked on a terminal,
/// or as etcdctl's `--hex` writes them wherever they go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bytes {
    /// The exact bytes.
    Raw,
    /// Escaped, binary marked `base64:`.
    Escaped,
    /// etcdctl's `--hex`: every byte as `\xNN` (lowercase), plain ASCII.
    Hex,
}

impl Bytes {
    /// Raw to a pipe or file, escaped on a terminal, or hex with etcdctl's `--hex`.
    pub fn of_stdout(hex: bool) -> Bytes {
        if hex {
            Bytes::Hex
        } else if io::stdout().is_terminal() {
            Bytes::Escaped
        } else {
            Bytes::Raw
        }
    }
}

/// The bytes of a value as etcdctl would print them, or the redaction notice in their place.
pub fn value_bytes<'a>(bytes: &'a Option<Vec<u8>>, shown: &'a Option<String>) -> &'a [u8] {
    match (bytes, shown) {
        (Some(raw), _) => raw,
        (None, Some(notice)) => notice.as_bytes(),
        (None, None) => b"",
    }
}

/// The bytes of a value for etcdctl's JSON: none for a redacted Secret (the field is left
/// out, as for a key read without its value), so no placeholder passes for a value.
pub fn json_value_bytes(bytes: &Option<Vec<u8>>) -> &[u8] {
    bytes.as_deref().unwrap_or_default()
}

/// Bytes as etcdctl's `--hex` prints them: `\x` and two lowercase hex digits each.
pub fn hex_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\x{b:02x}")).collect()
}

/// A key then its value, one line each, as etcdctl's simple printer: exact bytes, or escaped.
pub fn write_pair(
    out: &mut impl Write,
    bytes: Bytes,
    (key, key_encoding, raw_key): (&str, Encoding, &[u8]),
    (value, value_encoding, raw_value): (Option<&str>, Option<Encoding>, &[u8]),
    value_only: bool,
) -> io::Result<()> {
    let redacted = value_encoding == Some(Encoding::Redacted);
    if redacted && value_only {
        // Nothing that could pass for the value.
        return Ok(());
    }
    match bytes {
        Bytes::Hex => {
            if !value_only {
                writeln!(out, "{}", hex_bytes(raw_key))?;
            }
            match value {
                // The notice stays readable: hex would make it look like data.
                Some(v) if redacted => writeln!(out, "{}", text(v, Encoding::Text)),
                _ => writeln!(out, "{}", hex_bytes(raw_value)),
            }
        }
        Bytes::Raw => {
            if !value_only {
                out.write_all(raw_key)?;
                out.write_all(b"\n")?;
            }
            out.write_all(raw_value)?;
            out.write_all(b"\n")
        }
        Bytes::Escaped => {
            if !value_only {
                writeln!(out, "{}", text(key, key_encoding))?;
            }
            match value {
                Some(v) if value_only => writeln!(out, "{}", value_alone(v, value_encoding)),
                Some(v) => writeln!(out, "{}", value_text(v, value_encoding)),
                None => writeln!(out),
            }
        }
    }
}

/// A key-value pair as etcdctl's simple printer writes it (a key of `get`, a watch event's
/// previous pair): the key's line unless `value_only`, then the value's.
pub fn write_simple_kv(
    out: &mut impl Write,
    bytes: Bytes,
    kv: &KeyValueView,
    value_only: bool,
) -> io::Result<()> {
    write_pair(
        out,
        bytes,
        (&kv.key, kv.key_encoding, &kv.bytes.key),
        (
            kv.value.as_deref(),
            kv.value_encoding,
            value_bytes(&kv.bytes.value, &kv.value),
        ),
        value_only,
    )
}

/// One key of `get` as its format prints it; `first` says whether a JSON separator goes before.
pub fn write_kv(
    out: &mut impl Write,
    kv: &KeyValueView,
    value_only: bool,
    (printer, bytes): (Printer, Bytes),
    first: &mut bool,
) -> io::Result<()> {
    match printer.format() {
        _ if printer.format().is_etcdctl_json() => {
            let sep = if *first { "" } else { "," };
            *first = false;
            write!(out, "{sep}{}", etcdctl_kv(kv))
        }
        OutputFormat::Fields => {
            *first = false;
            let mut lines = Vec::new();
            crate::fields::key_value(
                &mut lines,
                "",
                &kv.bytes.key,
                (kv.create_revision, kv.mod_revision, kv.version),
                json_value_bytes(&kv.bytes.value),
                kv.bytes.lease,
            );
            lines.iter().try_for_each(|line| writeln!(out, "{line}"))
        }
        _ if printer.format().is_json() => {
            let sep = if *first { "" } else { "," };
            *first = false;
            json_line(kv).and_then(|json| write!(out, "{sep}\n{json}"))
        }
        OutputFormat::Simple => write_simple_kv(out, bytes, kv, value_only),
        // Our own lines: escaped wherever they go, a key alone with --keys-only.
        _ if value_only => match &kv.value {
            Some(v) => writeln!(out, "{}", value_alone(v, kv.value_encoding)),
            None => Ok(()),
        },
        _ => {
            let key = text(&kv.key, kv.key_encoding);
            match &kv.value {
                Some(v) => writeln!(out, "{key}\n{}", value_text(v, kv.value_encoding)),
                None => writeln!(out, "{key}"),
            }
        }
    }
}

/// A key-value pair as etcdctl's JSON prints one (`mvccpb.KeyValue`): its field order, bytes
/// as base64, zero fields left out.
pub fn etcdctl_kv_json(
    key: &[u8],
    (create_revision, mod_revision, version): (i64, i64, i64),
    value: &[u8],
    lease: i64,
) -> String {
    let mut map = serde_json::Map::new();
    etcdctl::put(&mut map, "key", etcdctl::bytes(key));
    etcdctl::put(&mut map, "create_revision", create_revision);
    etcdctl::put(&mut map, "mod_revision", mod_revision);
    etcdctl::put(&mut map, "version", version);
    if !value.is_empty() {
        map.insert("value".into(), etcdctl::bytes(value));
    }
    etcdctl::put(&mut map, "lease", lease);
    // In etcdctl's order (serde_json's map sorts its keys).
    let fields: Vec<String> = [
        "key",
        "create_revision",
        "mod_revision",
        "version",
        "value",
        "lease",
    ]
    .iter()
    .filter_map(|name| map.get(*name).map(|v| format!("\"{name}\":{v}")))
    .collect();
    format!("{{{}}}", fields.join(","))
}

/// A key of `get` or `watch` as etcdctl's JSON prints it.
pub fn etcdctl_kv(kv: &KeyValueView) -> String {
    etcdctl_kv_json(
        &kv.bytes.key,
        (kv.create_revision, kv.mod_revision, kv.version),
        json_value_bytes(&kv.bytes.value),
        kv.bytes.lease,
    )
}

/// etcdctl's header object, in its field order.
pub fn etcdctl_header(header: &ResponseHeader, hex: bool) -> String {
    let map = etcdctl::header(header, hex);
    let fields: Vec<String> = ["cluster_id", "member_id", "revision", "raft_term"]
        .iter()
        .filter_map(|name| map.get(*name).map(|v| format!("\"{name}\":{v}")))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// Whether redacted values fail the command: in the output a script reads (simple, fields), and in
/// every form under etcdctl's conventions, where etcdctl would have printed them (a script
/// written for etcdctl must not take a missing value for an answer). Our own table and JSON
/// mark them.
pub fn redaction_fails(printer: Printer) -> bool {
    let read_by_scripts = matches!(
        printer.format(),
        OutputFormat::Simple | OutputFormat::Fields
    );
    printer.is_etcdctl() || read_by_scripts
}

/// The one warning line of redacted values.
pub fn redacted_warning(redacted: u64) -> String {
    format!(
        "{redacted} Kubernetes Secret value(s) redacted (not printed); --show-secrets or ETCDOPS_SHOW_SECRETS=true prints them"
    )
}

/// What `get` prints after its keys: the end of the JSON document with the summary, or the
/// count of `--count-only`; `none_written` says whether no key was printed.
pub fn write_get_end(
    out: &mut impl Write,
    summary: &etcdops::kv::GetSummary,
    count_only: bool,
    printer: Printer,
    none_written: bool,
) -> std::io::Result<()> {
    // etcdctl's --hex changes member list's JSON only: get's keeps numeric IDs.
    let hex = false;
    match printer.format() {
        _ if printer.format().is_etcdctl_json() => {
            if none_written {
                let header = summary.header.unwrap_or_default();
                write!(out, "{{\"header\":{}", etcdctl_header(&header, hex))?;
            } else {
                write!(out, "]")?;
            }
            if summary.more {
                write!(out, ",\"more\":true")?;
            }
            if summary.count != 0 {
                write!(out, ",\"count\":{}", summary.count)?;
            }
            writeln!(out, "}}")?;
        }
        OutputFormat::Fields => {
            let mut lines = Vec::new();
            if none_written {
                crate::fields::header(&mut lines, summary.header.as_ref());
            }
            lines.push(crate::fields::line("More", summary.more));
            lines.push(crate::fields::line("Count", summary.count));
            for line in lines {
                writeln!(out, "{line}")?;
            }
        }
        _ if printer.format().is_json() => {
            let tail = serde_json::to_string(summary).map_err(std::io::Error::other)?;
            // Merge the summary's fields into the document.
            writeln!(out, "\n],{}", &tail[1..])?;
        }
        _ if count_only => writeln!(out, "{}", summary.count)?,
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// etcdctl 3.7.1's `get --prefix /registry/ -w json`, rebuilt from its own values by our
    /// writers of the header and of each key: the same bytes.
    #[test]
    fn etcdctl_json_of_3_7_is_rebuilt_byte_for_byte() {
        use base64::Engine;
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/etcd-3.7.1/outputs/get-prefix.json");
        let theirs = std::fs::read_to_string(path).unwrap();
        let json: serde_json::Value = serde_json::from_str(&theirs).unwrap();
        let number = |v: &serde_json::Value| v.as_u64().unwrap_or_default();
        let h = &json["header"];
        let header = ResponseHeader {
            cluster_id: number(&h["cluster_id"]),
            member_id: number(&h["member_id"]),
            revision: number(&h["revision"]) as i64,
            raft_term: number(&h["raft_term"]),
        };
        let b64 = |v: &serde_json::Value| {
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap_or_default())
                .unwrap()
        };
        let kvs: Vec<String> = json["kvs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|kv| {
                let revisions = (
                    number(&kv["create_revision"]) as i64,
                    number(&kv["mod_revision"]) as i64,
                    number(&kv["version"]) as i64,
                );
                etcdctl_kv_json(&b64(&kv["key"]), revisions, &b64(&kv["value"]), 0)
            })
            .collect();
        let ours = format!(
            "{{\"header\":{},\"kvs\":[{}],\"count\":{}}}\n",
            etcdctl_header(&header, false),
            kvs.join(","),
            json["count"]
        );
        assert_eq!(ours, theirs);
    }

    /// Lines of etcdctl 3.6.14's `get --prefix /registry/ -w json` and `get /registry/hot`
    /// (tests/fixtures/etcd-3.6.14/outputs/get-prefix.json, get-hot.simple).
    #[test]
    fn etcdctl_json_and_simple_match_the_3_6_fixture() {
        let header = ResponseHeader {
            cluster_id: 17497139193859109479,
            member_id: 14423874141243768641,
            revision: 54,
            raft_term: 2,
        };
        assert_eq!(
            etcdctl_header(&header, false),
            r#"{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"revision":54,"raft_term":2}"#
        );
        assert_eq!(
            etcdctl_kv_json(b"/registry/hot", (42, 49, 8), b"v8", 0),
            r#"{"key":"L3JlZ2lzdHJ5L2hvdA==","create_revision":42,"mod_revision":49,"version":8,"value":"djg="}"#
        );
        assert_eq!(
            etcdctl_kv_json(
                b"/registry/secrets/default/s1",
                (51, 51, 1),
                b"k8s\0\n\x0bbinary-ish",
                0
            ),
            r#"{"key":"L3JlZ2lzdHJ5L3NlY3JldHMvZGVmYXVsdC9zMQ==","create_revision":51,"mod_revision":51,"version":1,"value":"azhzAAoLYmluYXJ5LWlzaA=="}"#
        );
        // Keys only, a deletion in a watch: zero fields and the empty value are left out.
        assert_eq!(
            etcdctl_kv_json(b"k", (0, 7, 0), b"", 0),
            r#"{"key":"aw==","mod_revision":7}"#
        );
        assert_eq!(
            etcdctl_kv_json(b"k", (1, 1, 1), b"v", 0x1234),
            r#"{"key":"aw==","create_revision":1,"mod_revision":1,"version":1,"value":"dg==","lease":4660}"#
        );
        let mut out = Vec::new();
        write_pair(
            &mut out,
            Bytes::Raw,
            ("/registry/hot", Encoding::Text, b"/registry/hot"),
            (Some("v8"), Some(Encoding::Text), b"v8"),
            false,
        )
        .unwrap();
        assert_eq!(out, b"/registry/hot\nv8\n");
    }

    #[test]
    fn simple_writes_exact_bytes_to_pipes_and_escapes_on_terminals() {
        let key = ("k", Encoding::Text, b"k".as_slice());
        let value = (
            Some("AGs4cw=="),
            Some(Encoding::Base64),
            b"\0k8s\x1b[2J".as_slice(),
        );
        let mut raw = Vec::new();
        write_pair(&mut raw, Bytes::Raw, key, value, true).unwrap();
        assert_eq!(raw, b"\0k8s\x1b[2J\n");
        let mut shown = Vec::new();
        write_pair(&mut shown, Bytes::Escaped, key, value, false).unwrap();
        assert_eq!(shown, b"k\nbase64:AGs4cw==\n");
        // etcdctl's --hex: every byte as \xNN, wherever stdout goes.
        let mut hex = Vec::new();
        write_pair(&mut hex, Bytes::Hex, key, value, false).unwrap();
        assert_eq!(hex, b"\\x6b\n\\x00\\x6b\\x38\\x73\\x1b\\x5b\\x32\\x4a\n");
        // A redacted Secret: nothing with --print-value-only, the notice (never hex) beside
        // its key, and no value in etcdctl's JSON.
        let notice = "<redacted Kubernetes Secret, 3 bytes>";
        let redacted = (Some(notice), Some(Encoding::Redacted), notice.as_bytes());
        for bytes in [Bytes::Raw, Bytes::Escaped, Bytes::Hex] {
            let mut alone = Vec::new();
            write_pair(&mut alone, bytes, key, redacted, true).unwrap();
            assert!(alone.is_empty(), "{bytes:?}");
        }
        let mut pair = Vec::new();
        write_pair(&mut pair, Bytes::Hex, key, redacted, false).unwrap();
        assert_eq!(pair, format!("\\x6b\n{notice}\n").as_bytes());
        assert_eq!(json_value_bytes(&None), b"");
        assert_eq!(
            etcdctl_kv_json(b"k", (2, 2, 1), json_value_bytes(&None), 0),
            r#"{"key":"aw==","create_revision":2,"mod_revision":2,"version":1}"#
        );
        // Keys only: etcdctl's blank value line.
        let mut keys = Vec::new();
        write_pair(&mut keys, Bytes::Raw, key, (None, None, b""), false).unwrap();
        assert_eq!(keys, b"k\n\n");
    }
}
