//! `etcd_platform_info`: which etcd runs on this host (kubeadm or OpenShift static pod, a
//! package, or none), with its endpoints, data dir, certificate paths and version.

use std::path::PathBuf;

use etcd_k8s::{PlatformRequest, detect_platform};
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};

pub const OPTIONS: &[&[OptionSpec]] = &[&[opt("root", Kind::Str)]];

#[derive(Debug, Deserialize)]
struct Args {
    root: Option<PathBuf>,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let info = detect_platform(&PlatformRequest { root: args.root })
        .map_err(|e| ModuleError::new(e.to_string()))?;
    let msg = match &info.name {
        Some(name) => format!("{} etcd member {name}", info.platform),
        None => format!("platform: {}", info.platform),
    };
    Ok(Outcome::unchanged(msg).with_fields(&info))
}
