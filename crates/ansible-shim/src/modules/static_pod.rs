//! `etcd_static_pod`: stop a static etcd pod by parking its manifest outside the kubelet's
//! directory (kept, never deleted) and waiting until etcd is gone, or start it by moving the
//! manifest back and waiting until etcd is healthy; `force_new_cluster` starts it once with
//! `--force-new-cluster` in the etcd container's command (a normal start removes the flag).
//! No Python needed on the host.

use etcdops::kubernetes::{PodState, StaticPodRequest, static_pod};
use serde_json::json;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    // The manifest and parking dir default to the library's: the manifest found under the root
    // (OpenShift's or kubeadm's), as the CLI's `platform stop/start`.
    let mut request: StaticPodRequest = context.args()?;
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
    let result = static_pod(&request, connection.as_ref())
        .await
        .map_err(|e| ModuleError::new(format!("etcd_static_pod: {e}")))?;
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
    outcome.warnings.extend(result.notes.iter().cloned());
    Ok(outcome.with_fields(&result))
}
