//! `etcd_cluster_info`: members, health, status, leader, alarms, hashkv agreement and the
//! `check` report (certificates, latency, backup freshness, progress, disk), in one read-only
//! call; `fail_on` turns findings into a failed task (`etcdops::member::info`).

use etcdops::member::info::{ClusterInfoRequest, cluster_info};

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};
use crate::store::{IDENTITY_OPTIONS, STORE_OPTIONS};

pub const OPTIONS: &[&[OptionSpec]] = &[
    &[
        opt("fail_on", Kind::List)
            .choices(&[
                "unhealthy",
                "alarm",
                "inconsistent",
                "certificates",
                "backup",
                "latency",
            ])
            .default_list(&[]),
        opt("quota_bytes", Kind::Int),
        opt("cert_warn_days", Kind::Int).default_int(30),
        opt("cert_critical_days", Kind::Int).default_int(7),
        opt("metrics_urls", Kind::List).default_list(&[]),
        opt("skip_metrics", Kind::Bool).default_bool(false),
        opt("fsync_p99_warn_ms", Kind::Int).default_int(10),
        opt("commit_p99_warn_ms", Kind::Int).default_int(25),
        opt("latency_min_samples", Kind::Int).default_int(100),
        opt("max_leader_changes", Kind::Int).default_int(3),
        opt("max_failed_proposals", Kind::Int).default_int(10),
        opt("max_slow_applies", Kind::Int).default_int(100),
        opt("max_raft_index_gap", Kind::Int).default_int(5000),
        opt("store", Kind::Str),
        opt("max_backup_age", Kind::Str),
        opt("skip_backup_verify", Kind::Bool).default_bool(false),
        opt("data_dir", Kind::Path),
    ],
    IDENTITY_OPTIONS,
    STORE_OPTIONS,
];

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let mut request: ClusterInfoRequest = context.args()?;
    request.check.platform_root = Some(context.platform_root()?);
    let info = cluster_info(&context.cluster()?, &request).await?;
    let outcome = if info.failures.is_empty() {
        Outcome::unchanged(&info.summary)
    } else {
        Outcome::failure(format!("{}; {}", info.failures.join("; "), info.summary))
    };
    Ok(outcome.with_fields(&info))
}
