//! `etcdops get | history | watch`: read-only, streamed, Secrets redacted by default.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use etcdops::client::{Client, ClusterConfig};
use etcdops::kv::KeyQuery;
use etcdops::kv::{Encoding, GetRequest, RevisionBounds, SortBy};
use futures::StreamExt;

use super::ExitStatus;
use crate::flags::{ConsistencyArg, GetArgs, HistoryArgs, OrderArg, SortByArg};
use crate::output::warn;
use etcdops_printer::views::kv::*;
use etcdops_printer::{OutputFormat, Printer};

mod watch;
pub use watch::run_watch;

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
        serializable: args.consistency == ConsistencyArg::S,
    };
    let mut request = query.request();
    request.bounds = RevisionBounds {
        min_create: args.min_create_rev,
        max_create: args.max_create_rev,
        min_mod: args.min_mod_rev,
        max_mod: args.max_mod_rev,
    };
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

/// After everything was printed: where a script reads the values and some were redacted,
/// one warning line and a failure (exit code 1), so no script takes a placeholder or a
/// missing value for the Secret; else success.
fn redaction_status(redacted: u64, printer: Printer) -> ExitStatus {
    if redacted > 0 && redaction_fails(printer) {
        warn(&redacted_warning(redacted));
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}

/// `get`
///
/// `hex` is the global `--hex`: keys and values as `\xNN` in simple, as etcdctl prints them.
pub async fn run_get(
    config: &ClusterConfig,
    args: &GetArgs,
    printer: Printer,
    hex: bool,
) -> Result<ExitStatus> {
    if args.print_value_only && printer.format().is_etcdctl_json() {
        anyhow::bail!("print-value-only is only for `--write-out=simple`");
    }
    // etcdctl (3.5 and later) prints a count in its fields output only; etcdops' own modes
    // print it in every format.
    if args.count_only && printer.is_etcdctl() && printer.format() != OutputFormat::Fields {
        anyhow::bail!("--count-only is only for `--write-out=fields`");
    }
    let request = get_request(args);
    let bytes = Bytes::of_stdout(hex);
    // etcdctl's --hex changes member list's JSON only: get's keeps numeric IDs.
    let hex = false;
    let mut out = BufWriter::new(io::stdout());
    let mut first = true;
    let mut redacted = 0u64;
    if printer.format().is_json() && !printer.format().is_etcdctl_json() {
        out.write_all(KVS_OPEN.as_bytes())?;
    }
    // An error, of etcd or of the output, returns at once: the stream dropped, the read stops.
    let client = Client::new(config.clone());
    let mut pages = client.kv().get_stream(&request);
    // `-w protobuf` is one RangeResponse: the keys are kept until the read ends.
    let protobuf = printer.format() == OutputFormat::Protobuf;
    let mut kept = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page?;
        for kv in page.kvs {
            if kv.value_encoding == Some(Encoding::Redacted) {
                redacted += 1;
            }
            if protobuf {
                kept.push(kv);
                continue;
            }
            if printer.format().is_etcdctl_json() && first {
                write!(
                    out,
                    "{{\"header\":{},\"kvs\":[",
                    etcdctl_header(&page.header, hex)
                )?;
            }
            if printer.format() == OutputFormat::Fields && first {
                let mut header = Vec::new();
                etcdops_printer::fields::header(&mut header, Some(&page.header));
                header.iter().try_for_each(|line| writeln!(out, "{line}"))?;
            }
            write_kv(
                &mut out,
                &kv,
                args.print_value_only,
                (printer, bytes),
                &mut first,
            )?;
        }
    }
    let summary = pages
        .summary()
        .ok_or_else(|| anyhow::anyhow!("internal error: the read ended without its summary"))?;
    if protobuf {
        let header = summary.header.unwrap_or_default();
        let message =
            etcdops_printer::protobuf::range_response(&header, &kept, summary.more, summary.count);
        out.write_all(&message)?;
    } else {
        write_get_end(&mut out, summary, args.count_only, printer, first)?;
    }
    out.flush()?;
    Ok(redaction_status(redacted, printer))
}

/// `history`
pub async fn run_history(
    config: &ClusterConfig,
    args: &HistoryArgs,
    printer: Printer,
) -> Result<ExitStatus> {
    let report = Client::new(config.clone())
        .kv()
        .history(args.key.as_bytes(), args.show_secrets)
        .await?;
    let redacted = report
        .events
        .iter()
        .filter(|e| e.value_encoding == Some(Encoding::Redacted))
        .count() as u64;
    printer.print(&HistoryView(report))?;
    Ok(redaction_status(redacted, printer))
}
