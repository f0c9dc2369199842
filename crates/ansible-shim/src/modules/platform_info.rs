//! `etcd_platform_info`: which etcd runs on this host (kubeadm or OpenShift static pod, a
//! package, or none), with its endpoints, data dir, certificate paths and version.

use etcdops::kubernetes::{PlatformRequest, detect_platform};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// No options of its own: the directory standing for `/` (a test-only option) is the
/// connection option `platform_root` (old name `root`).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let Args {} = context.args()?;
    let root = Some(context.platform_root()?);
    let info =
        detect_platform(&PlatformRequest { root }).map_err(|e| ModuleError::new(e.to_string()))?;
    let msg = match &info.name {
        Some(name) => format!("{} etcd member {name}", info.platform),
        None => format!("platform: {}", info.platform),
    };
    Ok(Outcome::unchanged(msg).with_fields(&info))
}
