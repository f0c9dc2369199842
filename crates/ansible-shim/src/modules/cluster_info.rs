//! `etcd_cluster_info`: members, health, status, leader, alarms, hashkv agreement and the
//! `check` report (certificates, latency, backup freshness, progress, disk), in one read-only
//! call; `fail_on` turns findings into a failed task (`etcdops::member::info`).

use std::time::Duration;

use etcdops::member::info::{ClusterInfoRequest, cluster_info};
use etcdops::wait::{WaitedInfo, cluster_info_when};
use schemars::JsonSchema;

use crate::context::Context;
use crate::modules::WaitOptions;
use crate::outcome::{ModuleError, Outcome};

/// The module's options: the library's request and the wait.
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema: its fields are read as `ClusterInfoRequest` and `WaitOptions`
pub(crate) struct Options {
    #[serde(flatten)]
    request: ClusterInfoRequest,
    #[serde(flatten)]
    wait: WaitOptions,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let mut request: ClusterInfoRequest = context.args()?;
    let wait: WaitOptions = context.args()?;
    request.check.platform_root = Some(context.platform_root()?);
    let config = context.cluster()?;
    if wait.wait && !context.check_mode {
        let timeout = Duration::from_secs(wait.wait_timeout);
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
        return check_mode_look(&config, &request, wait.wait_timeout).await;
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
