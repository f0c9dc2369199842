//! `etcd_cluster_info`: members, health, status, leader, alarms, hashkv agreement and the
//! `check` report (certificates, latency, backup freshness, progress, disk), in one read-only
//! call; `fail_on` turns findings into a failed task (`etcdops::member::info`).

use std::time::Duration;

use etcdops::member::info::{ClusterInfoRequest, cluster_info};
use etcdops::wait::{WaitedInfo, cluster_info_when};
use serde::Deserialize;

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
        opt("wait", Kind::Bool).default_bool(false),
        opt("wait_timeout", Kind::Int).default_int(120),
    ],
    IDENTITY_OPTIONS,
    STORE_OPTIONS,
];

/// The wait options (the rest deserialize into the library's request).
#[derive(Debug, Deserialize)]
struct WaitArgs {
    #[serde(default)]
    wait: bool,
    wait_timeout: Option<u64>,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let mut request: ClusterInfoRequest = context.args()?;
    let wait: WaitArgs = context.args()?;
    request.check.platform_root = Some(context.platform_root()?);
    let config = context.cluster()?;
    if wait.wait && !context.check_mode {
        let timeout = Duration::from_secs(wait.wait_timeout.unwrap_or(120));
        let WaitedInfo { info, waited } = cluster_info_when(&config, &request, timeout).await?;
        let outcome = if info.failures.is_empty() {
            Outcome::unchanged(format!("{} (after {}s)", info.summary, waited.seconds))
        } else {
            Outcome::failure(format!(
                "still failing after waiting {}s: {}; {}",
                waited.seconds,
                info.failures.join("; "),
                info.summary
            ))
        };
        return Ok(outcome.with_fields(&info).with("waited", &waited));
    }
    if wait.wait {
        return check_mode_look(&config, &request, wait.wait_timeout.unwrap_or(120)).await;
    }
    let info = cluster_info(&config, &request).await?;
    let outcome = if info.failures.is_empty() {
        Outcome::unchanged(&info.summary)
    } else {
        Outcome::failure(format!("{}; {}", info.failures.join("; "), info.summary))
    };
    Ok(outcome.with_fields(&info))
}

/// A wait in check mode: not waited. One look; what a real run would wait for (its
/// failures, or a cluster not answering yet, as after a start check mode did not make) is a
/// warning, not a failure.
async fn check_mode_look(
    config: &etcdops::client::ClusterConfig,
    request: &ClusterInfoRequest,
    timeout: u64,
) -> Result<Outcome, ModuleError> {
    let mut request = request.clone();
    if request.fail_on.is_empty() {
        request
            .fail_on
            .push(etcdops::member::info::FailOn::Unhealthy);
    }
    let info = match cluster_info(config, &request).await {
        Ok(info) => info,
        Err(e) if etcdops::is_transient(&e) => {
            let mut outcome =
                Outcome::unchanged("check mode: not waited; the cluster does not answer now");
            outcome.warnings.push(format!(
                "a real run waits up to {timeout}s for the cluster to answer and pass: {}",
                ModuleError::from_library(&e).0
            ));
            return Ok(outcome);
        }
        Err(e) => return Err(e.into()),
    };
    let mut outcome = Outcome::unchanged(format!("{} (check mode: not waited)", info.summary));
    if !info.failures.is_empty() {
        outcome.warnings.push(format!(
            "a real run waits up to {timeout}s for these to clear: {}",
            info.failures.join("; ")
        ));
    }
    Ok(outcome.with_fields(&info))
}
