//! `etcd_cluster_info`: members, health, status, leader, alarms, hashkv agreement and the
//! `check` report, in one read-only call; `fail_on` turns findings into a failed task
//! (`etcdops::member::info`).

use etcdops::member::info::{ClusterInfoRequest, cluster_info};

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};

pub const OPTIONS: &[&[OptionSpec]] = &[&[
    opt("fail_on", Kind::List)
        .choices(&["unhealthy", "alarm", "inconsistent"])
        .default_list(&[]),
    opt("quota_bytes", Kind::Int),
]];

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let request: ClusterInfoRequest = context.args()?;
    let info = cluster_info(&context.cluster()?, &request).await?;
    let outcome = if info.failures.is_empty() {
        Outcome::unchanged(&info.summary)
    } else {
        Outcome::failure(format!("{}; {}", info.failures.join("; "), info.summary))
    };
    Ok(outcome.with_fields(&info))
}
