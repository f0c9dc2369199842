//! `etcd_kv_info`: read-only key queries (a key, a prefix or a range, at any retained
//! revision) and a key's history. Values of Kubernetes Secrets are redacted unless
//! `show_secrets`. Returns at most `limit` keys (default 1000): a module result is held in
//! memory by Ansible, so big ranges belong to `count_only` or the CLI.

use etcd_core::{GetRequest, get_pages, history};
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};

pub const OPTIONS: &[&[OptionSpec]] = &[&[
    opt("etcd_key", Kind::Str),
    opt("prefix", Kind::Bool),
    opt("range_end", Kind::Str),
    opt("from_key", Kind::Bool),
    opt("revision", Kind::Int),
    opt("keys_only", Kind::Bool),
    opt("count_only", Kind::Bool),
    opt("limit", Kind::Int),
    opt("history", Kind::Bool),
    opt("show_secrets", Kind::Bool),
]];

/// Keys returned when the task sets no limit.
const DEFAULT_LIMIT: i64 = 1000;

#[derive(Debug, Deserialize)]
struct Args {
    /// The etcd key (`key` is the client key of the connection options).
    #[serde(default)]
    etcd_key: String,
    #[serde(default)]
    prefix: bool,
    range_end: Option<String>,
    #[serde(default)]
    from_key: bool,
    #[serde(default)]
    revision: i64,
    #[serde(default)]
    keys_only: bool,
    #[serde(default)]
    count_only: bool,
    limit: Option<i64>,
    #[serde(default)]
    history: bool,
    #[serde(default)]
    show_secrets: bool,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let config = context.cluster()?;
    if args.history {
        if args.etcd_key.is_empty() || args.prefix || args.range_end.is_some() {
            return Err(ModuleError::new(
                "etcd_kv_info: history reads one key: give etcd_key, without prefix or range_end",
            ));
        }
        let report = history(&config, args.etcd_key.as_bytes(), args.show_secrets).await?;
        let msg = format!(
            "{} event(s) of {} up to revision {}",
            report.events.len(),
            report.key,
            report.revision
        );
        return Ok(Outcome::unchanged(msg).with_fields(&report));
    }
    let request = GetRequest {
        key: args.etcd_key.as_bytes().to_vec(),
        range_end: args.range_end.as_ref().map(|e| e.as_bytes().to_vec()),
        prefix: args.prefix,
        from_key: args.from_key,
        revision: args.revision,
        keys_only: args.keys_only,
        count_only: args.count_only,
        limit: args.limit.unwrap_or(DEFAULT_LIMIT),
        sort: None,
        show_secrets: args.show_secrets,
        page_size: 0,
    };
    let mut kvs = Vec::new();
    let summary = get_pages(&config, &request, |page| {
        kvs.extend(page);
        Ok(())
    })
    .await?;
    let msg = format!(
        "{} key(s) at revision {}{}",
        summary.count,
        summary.revision,
        if summary.more {
            format!(", {} returned (limit)", summary.returned)
        } else {
            String::new()
        }
    );
    Ok(Outcome::unchanged(msg)
        .with("kvs", &kvs)
        .with_fields(&summary))
}
