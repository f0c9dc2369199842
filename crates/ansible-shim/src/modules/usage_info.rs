//! `etcd_usage_info`: what fills the db, per key prefix and per Kubernetes resource and
//! namespace: live (paged reads), or offline from a snapshot or a stopped member's data dir
//! (with the history a compaction frees and the free pages a defragmentation gives back).
//! Read-only.

use std::path::PathBuf;

use etcdops::usage::{UsageRequest, usage};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::store::{IdentityArgs, StoreArgs};

fn default_depth() -> usize {
    etcdops::usage::DEFAULT_DEPTH
}

fn default_top() -> usize {
    etcdops::usage::DEFAULT_TOP
}

/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    #[serde(default)]
    key_prefix: String,
    #[serde(default = "default_depth")]
    depth: usize,
    #[serde(default = "default_top")]
    top: usize,
    kubernetes_prefix: Option<String>,
    snapshot: Option<String>,
    data_dir: Option<PathBuf>,
    #[serde(default)]
    skip_hash_check: bool,
    #[serde(flatten)]
    store: StoreArgs,
    #[serde(flatten)]
    identity: IdentityArgs,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let request = UsageRequest {
        prefix: args.key_prefix,
        depth: Some(args.depth),
        top: Some(args.top),
        kubernetes_prefix: args.kubernetes_prefix,
        snapshot: args.snapshot,
        data_dir: args.data_dir,
        skip_hash_check: args.skip_hash_check,
        identity: args.identity,
        store: args.store,
    };
    let config = if request.is_offline() {
        None
    } else {
        Some(context.cluster()?)
    };
    let result = usage(config.as_ref(), &request).await?;
    let r = &result.report;
    let history = match r.history_bytes {
        Some(bytes) => format!("{bytes} bytes of history"),
        None => "history not visible live".into(),
    };
    let mut outcome = Outcome::unchanged(format!(
        "{} key(s), {} live bytes, {history}, {:.1}% of the db free ({})",
        r.keys,
        r.live_bytes,
        r.db.free_share * 100.0,
        if r.offline { "offline" } else { "live" }
    ));
    outcome.warnings.extend(result.warnings.iter().cloned());
    Ok(outcome.with_fields(&result))
}
