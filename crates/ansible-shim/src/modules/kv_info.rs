//! `etcd_kv_info`: read-only key queries (a key, a prefix or a range, at any retained
//! revision) and a key's history. Values of Kubernetes Secrets are redacted unless
//! `show_secrets`. Returns at most `limit` keys (default 1000): a module result is held in
//! memory by Ansible, so big ranges belong to `count_only` or the CLI.

use etcdops::kv::KeyQuery;
use etcdops::kv::{get_pages, history};
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};

pub const OPTIONS: &[&[OptionSpec]] = &[&[
    opt("etcd_key", Kind::Str),
    opt("prefix", Kind::Bool).default_bool(false),
    opt("range_end", Kind::Str),
    opt("from_key", Kind::Bool).default_bool(false),
    opt("revision", Kind::Int).default_int(0),
    opt("keys_only", Kind::Bool).default_bool(false),
    opt("count_only", Kind::Bool).default_bool(false),
    opt("limit", Kind::Int).default_int(1000),
    opt("history", Kind::Bool).default_bool(false),
    opt("show_secrets", Kind::Bool).default_bool(false),
]];

/// Keys returned when the task sets no limit.
const DEFAULT_LIMIT: i64 = 1000;

#[derive(Debug, Deserialize)]
struct Args {
    #[serde(flatten)]
    query: KeyQuery,
    #[serde(default)]
    history: bool,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let Args {
        mut query,
        history: wants_history,
    } = context.args()?;
    let config = context.cluster()?;
    if wants_history {
        if !query.is_one_key() {
            return Err(ModuleError::new(
                "etcd_kv_info: history reads one key: give etcd_key, without prefix or range_end",
            ));
        }
        let report = history(&config, query.key.as_bytes(), query.show_secrets).await?;
        let msg = format!(
            "{} event(s) of {} up to revision {}",
            report.events.len(),
            report.key,
            report.revision
        );
        return Ok(Outcome::unchanged(msg).with_fields(&report));
    }
    query.limit.get_or_insert(DEFAULT_LIMIT);
    let mut kvs = Vec::new();
    let summary = get_pages(&config, &query.request(), |page| {
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
