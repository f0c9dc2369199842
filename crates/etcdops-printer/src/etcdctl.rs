//! Pieces of etcdctl's `-w json` shared by the commands' `Render::etcdctl_json`: its response
//! header, its IDs (numbers, or hex strings under `--hex`), Go's `omitempty`, base64 bytes.

use base64::Engine;
use etcdops::client::ResponseHeader;
use serde_json::{Map, Value};

/// An ID as etcdctl prints it: a JSON number, or with `--hex` a hex string.
pub fn id(value: u64, hex: bool) -> Value {
    if hex {
        Value::from(format!("{value:x}"))
    } else {
        Value::from(value)
    }
}

/// etcdctl's `header` object: zero fields left out as Go's `omitempty` does.
pub fn header(header: &ResponseHeader, hex: bool) -> Value {
    let mut map = Map::new();
    if header.cluster_id != 0 {
        map.insert("cluster_id".into(), id(header.cluster_id, hex));
    }
    if header.member_id != 0 {
        map.insert("member_id".into(), id(header.member_id, hex));
    }
    if header.revision != 0 {
        map.insert("revision".into(), header.revision.into());
    }
    if header.raft_term != 0 {
        map.insert("raft_term".into(), header.raft_term.into());
    }
    Value::Object(map)
}

/// Inserts `value` under `name` unless it is Go's zero value (`0`, `false`, `""`, `[]`, `{}`,
/// null), as `omitempty` does.
pub fn put(map: &mut Map<String, Value>, name: &str, value: impl Into<Value>) {
    let value = value.into();
    let zero = match &value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    };
    if !zero {
        map.insert(name.to_string(), value);
    }
}

/// Bytes as Go's `encoding/json` prints a `[]byte`: standard base64.
pub fn bytes(value: &[u8]) -> Value {
    Value::from(base64::engine::general_purpose::STANDARD.encode(value))
}

/// Bytes as Go's `%q` writes them: double-quoted, `\"` and `\\`, `\n` and the other C escapes,
/// `\xNN` for bytes that are not UTF-8 and for other ASCII controls, `\uNNNN` for
/// non-printable characters beyond ASCII (controls, separators, format marks).
pub fn go_quote(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                }
                c if is_go_printable(c) => out.push(c),
                c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push_str(&format!("\\U{:08x}", c as u32)),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint` as far as std can tell: letters, marks, numbers, punctuation,
/// symbols and the ASCII space; not controls, other spaces, format marks or private use.
fn is_go_printable(c: char) -> bool {
    let code = c as u32;
    let format_mark = matches!(code,
        0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e | 0x200b..=0x200f
        | 0x202a..=0x202e | 0x2060..=0x206f | 0xfeff | 0xfff9..=0xfffb);
    let private = matches!(code, 0xe000..=0xf8ff | 0xf0000..);
    c == ' ' || !(c.is_control() || c.is_whitespace() || format_mark || private)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_as_go_quotes_them() {
        assert_eq!(go_quote(b"PUT"), "\"PUT\"");
        assert_eq!(go_quote(b"a\"b\nc"), "\"a\\\"b\\nc\"");
        assert_eq!(go_quote(b"k\x00\xff\x1b\\"), "\"k\\x00\\xff\\x1b\\\\\"");
        assert_eq!(
            go_quote("ü\u{202e}\u{a0}".as_bytes()),
            "\"ü\\u202e\\u00a0\""
        );
        assert_eq!(go_quote(b""), "\"\"");
    }

    #[test]
    fn header_leaves_zero_fields_out_as_go_does() {
        let h = ResponseHeader {
            cluster_id: 17497139193859109479,
            member_id: 14423874141243768641,
            revision: 0,
            raft_term: 2,
        };
        // member-list.json of the etcd 3.6.14 fixture: member list's header has no revision.
        assert_eq!(
            header(&h, false).to_string(),
            r#"{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"raft_term":2}"#
        );
        assert_eq!(header(&h, true)["member_id"], "c82be51c49c6ff41");
    }

    #[test]
    fn omitempty_drops_zero_values_only() {
        let mut map = Map::new();
        put(&mut map, "zero", 0);
        put(&mut map, "no", false);
        put(&mut map, "empty", "");
        put(&mut map, "one", 1);
        put(&mut map, "yes", true);
        assert_eq!(Value::Object(map).to_string(), r#"{"one":1,"yes":true}"#);
        assert_eq!(bytes(b"z"), "eg==");
    }
}
