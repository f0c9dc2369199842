//! `etcd_kv_info`: read-only key queries (a key, a prefix or a range, at any retained
//! revision) and a key's history. Values of Kubernetes Secrets are redacted unless
//! `show_secrets`. Returns at most `limit` keys (default 1000): a module result is held in
//! memory by Ansible, so big ranges belong to `count_only` or the CLI.

use etcdops::client::Client;
use etcdops::kv::KeyQuery;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// Keys returned when the task sets no limit.
/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    #[serde(flatten)]
    query: KeyQuery,
    #[serde(default)]
    history: bool,
    /// At most this many keys (the library reads them all when unset).
    #[serde(default = "default_limit")]
    limit: i64,
}

fn default_limit() -> i64 {
    1000
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let Args {
        mut query,
        history: wants_history,
        limit,
    } = context.args()?;
    let client = Client::new(context.cluster()?);
    if wants_history {
        if !query.is_one_key() {
            return Err(ModuleError::new(
                "etcd_kv_info: history reads one key: give etcd_key, without prefix or range_end",
            ));
        }
        let report = client
            .kv()
            .history(query.key.as_bytes(), query.show_secrets)
            .await?;
        let msg = format!(
            "{} event(s) of {} up to revision {}",
            report.events.len(),
            report.key,
            report.revision
        );
        return Ok(Outcome::unchanged(msg).with_fields(&report));
    }
    query.limit = Some(limit);
    let mut kvs = Vec::new();
    let summary = client
        .kv()
        .get_pages(&query.request(), |page| {
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
