//! `etcdops get | history | watch`: read-only, streamed, Secrets redacted by default.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use etcd_core::{
    ClusterConfig, Encoding, GetRequest, KeyEvent, KeyHistory, KeyValueView, SortBy, WatchBound,
    WatchRequest, get_pages, history, watch,
};
use etcdops::kv::KeyQuery;

use super::ExitStatus;
use crate::flags::{GetArgs, HistoryArgs, OrderArg, OutputFormat, SortByArg, WatchArgs};
use crate::output::{Lines, Render, escape, json_line, print, text};

/// The output closed under us: remember the I/O error and stop the library's loop.
fn stop(slot: &mut Option<io::Error>, err: io::Error) -> etcd_core::Error {
    *slot = Some(err);
    etcd_core::Error::Refused {
        reason: "output closed".into(),
    }
}

/// The JSON document `get -w json` streams: its opening, then one key a line.
const KVS_OPEN: &str = "{\"kvs\":[";

/// The library request of `get`'s flags.
fn get_request(args: &GetArgs) -> GetRequest {
    let query = KeyQuery {
        key: args.key.clone(),
        prefix: args.prefix,
        range_end: args.range_end.clone(),
        from_key: args.from_key,
        revision: args.rev,
        keys_only: args.keys_only,
        count_only: args.count_only,
        limit: Some(args.limit),
        show_secrets: args.show_secrets,
    };
    let mut request = query.request();
    request.sort = match (args.sort_by, args.order) {
        (None, None) => None,
        (by, order) => Some((
            match by.unwrap_or(SortByArg::Key) {
                SortByArg::Key => SortBy::Key,
                SortByArg::Create => SortBy::Create,
                SortByArg::Modify => SortBy::Modify,
                SortByArg::Version => SortBy::Version,
                SortByArg::Value => SortBy::Value,
            },
            order != Some(OrderArg::Descend),
        )),
    };
    request
}

/// One key of `get` as its format prints it; `first` says whether a JSON separator goes before.
fn write_kv(
    out: &mut impl Write,
    kv: &KeyValueView,
    args: &GetArgs,
    format: OutputFormat,
    first: &mut bool,
) -> io::Result<()> {
    match format {
        _ if format.is_json() => {
            let sep = if *first { "" } else { "," };
            *first = false;
            json_line(kv).and_then(|json| write!(out, "{sep}\n{json}"))
        }
        _ if args.print_value_only => match &kv.value {
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

/// `get`
pub async fn run_get(
    config: &ClusterConfig,
    args: &GetArgs,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let request = get_request(args);
    let mut out = BufWriter::new(io::stdout());
    let mut io_error: Option<io::Error> = None;
    let mut first = true;
    if format.is_json() {
        out.write_all(KVS_OPEN.as_bytes())?;
    }
    let result = get_pages(config, &request, |page| {
        for kv in page {
            write_kv(&mut out, &kv, args, format, &mut first)
                .map_err(|e| stop(&mut io_error, e))?;
        }
        Ok(())
    })
    .await;
    if let Some(e) = io_error {
        return Err(e.into());
    }
    let summary = result?;
    match format {
        _ if format.is_json() => {
            let tail = serde_json::to_string(&summary)?;
            // Merge the summary's fields into the document.
            writeln!(out, "\n],{}", &tail[1..])?;
        }
        _ if args.count_only => writeln!(out, "{}", summary.count)?,
        _ => {}
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// `history`
pub async fn run_history(
    config: &ClusterConfig,
    args: &HistoryArgs,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let report = history(config, args.key.as_bytes(), args.show_secrets).await?;
    print(format, &HistoryView(report))?;
    Ok(ExitStatus::Success)
}

/// A value on the line below its key: one line whatever it holds.
fn value_text(value: &str, encoding: Option<Encoding>) -> String {
    text(value, encoding.unwrap_or(Encoding::Text))
}

/// A value printed on its own (`--print-value-only`): multi-line text stays multi-line, other
/// control characters are escaped, base64 is marked.
fn value_alone(value: &str, encoding: Option<Encoding>) -> String {
    match encoding {
        Some(Encoding::Base64) => text(value, Encoding::Base64),
        _ => escape(value, Lines::Keep),
    }
}

fn event_line(e: &KeyEvent) -> String {
    let key = text(&e.key, e.key_encoding);
    match &e.value {
        Some(v) => format!("PUT {key}\n{}", value_text(v, e.value_encoding)),
        None => format!("DELETE {key}"),
    }
}

/// `watch`
pub async fn run_watch(
    config: &ClusterConfig,
    args: &WatchArgs,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let request = WatchRequest {
        key: args.key.as_bytes().to_vec(),
        prefix: args.prefix,
        start_revision: args.rev,
        bound: WatchBound {
            until_revision: args.until_rev,
            timeout: args.timeout,
        },
        show_secrets: args.show_secrets,
    };
    let mut out = BufWriter::new(io::stdout());
    let mut io_error: Option<io::Error> = None;
    let mut first = true;
    if format.is_json() {
        write!(out, "{{\"events\":[")?;
    }
    let result = watch(config, &request, &mut |event| {
        let written = match format {
            _ if format.is_json() => {
                let sep = if first { "" } else { "," };
                first = false;
                json_line(&event).and_then(|json| write!(out, "{sep}\n{json}"))
            }
            _ => writeln!(out, "{}", event_line(&event)),
        }
        .and_then(|_| out.flush());
        written.map_err(|e| stop(&mut io_error, e))
    })
    .await;
    if let Some(e) = io_error {
        return Err(e.into());
    }
    let summary = result?;
    if format.is_json() {
        writeln!(
            out,
            "\n],\"summary\":{}}}",
            serde_json::to_string(&summary)?
        )?;
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct HistoryView(KeyHistory);

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
}
