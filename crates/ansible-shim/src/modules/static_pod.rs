//! `etcd_static_pod`: stop a static etcd pod by parking its manifest outside the kubelet's
//! directory (kept, never deleted) and waiting until etcd is gone, or start it by moving the
//! manifest back and waiting until etcd is healthy; `force_new_cluster` starts it once with
//! `--force-new-cluster` in the etcd container's command (a normal start removes the flag).
//! No Python needed on the host.

use etcdops::guard::Force;
use etcdops::kubernetes::{PodState, StaticPodRequest, static_pod};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// The module's options: the library's request and the switch past the guard.
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema: its fields are read as `StaticPodRequest` and `Guarded`
pub(crate) struct Options {
    #[serde(flatten)]
    request: StaticPodRequest,
    #[serde(flatten)]
    guarded: Guarded,
}

/// Stopping OpenShift's etcd pod even though its operator runs it.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Guarded {
    #[serde(default)]
    force: Force,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    // The manifest and parking dir default to the library's: the manifest found under the root
    // (OpenShift's or kubeadm's), as the CLI's `platform stop/start`.
    let mut request: StaticPodRequest = context.args_except(&["force"])?;
    request.dry_run = context.check_mode;
    // `root` (a test-only option) is the connection option `platform_root` now.
    request.root = Some(context.platform_root()?);
    // Connection options given (or set by module_defaults / ETCDCTL_*) are used for the
    // health check; without endpoints, the manifest's own endpoints and certificates are.
    let explicit = context.params().contains_key("endpoints")
        || std::env::var_os("ETCDCTL_ENDPOINTS").is_some();
    let connection = if explicit {
        Some(context.cluster()?)
    } else {
        None
    };
    let Guarded { force } = context.args()?;
    let done = static_pod(&context.guards()?, &request, connection.as_ref(), force).await?;
    let result = done.result;
    let where_is = |stopped: bool| {
        if stopped {
            format!("manifest parked at {}\n", result.parked_manifest.display())
        } else {
            format!("manifest at {}\n", result.manifest.display())
        }
    };
    let stopping = request.state == PodState::Stopped;
    let msg = result.summary(context.check_mode);
    let mut outcome = Outcome::unchanged(msg);
    outcome.changed = result.changed;
    if result.changed {
        outcome.diff = Some(json!({
            "before": where_is(!stopping),
            "after": where_is(stopping),
        }));
    }
    outcome.warnings.extend(done.forced);
    outcome.warnings.extend(result.notes.iter().cloned());
    Ok(outcome.with_fields(&result))
}
