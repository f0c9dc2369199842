//! `etcd_snapshot_restore`: restores a snapshot (file or object URL), or a surviving member's
//! own db (`from_data_dir`, the quorum-loss fix), into a new data dir; with `to_revision` or
//! `to_time`, the state at that point from a store written by `backup run` (a full backup
//! with its delta segments replayed). Repeating the same
//! restore changes nothing (the library's marker file); check mode runs every check and
//! writes nothing. `skip_in_service` does nothing when the cluster already runs from this
//! very restore; `replace_restored` restores anew over a restored dir a member ran on.

use etcdops::guard::Guards;
use etcdops::hints::{Style, with_hint};
use etcdops::snapshot::{Previous, RestoreRequest, RestoreWarning, restore};
use schemars::JsonSchema;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

fn remote_src() -> bool {
    true
}

/// The module's options: the library's request, and `remote_src` (read by the action plugin,
/// which uploads a controller-side `snapshot` when false).
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema: the shim reads `RestoreRequest`
pub(crate) struct Options {
    #[serde(flatten)]
    request: RestoreRequest,
    #[serde(default = "remote_src")]
    remote_src: bool,
}

/// What the data dir held, for the diff.
fn describe(previous: &Previous) -> String {
    match previous {
        Previous::Restore(m) => format!(
            "member {} ({}) of cluster {}, revision {}, db sha256 {}\n",
            m.name, m.member_id, m.cluster_id, m.revision, m.db_sha256
        ),
        Previous::Other => "a data dir not written by a restore\n".into(),
        Previous::Empty => String::new(),
    }
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let mut request: RestoreRequest = context.args()?;
    request.dry_run = context.check_mode;
    request.guards = Guards::on_host(context.platform_root()?);
    if request.skip_in_service {
        request.cluster = Some(context.cluster()?);
    }
    let restored = restore(&request).await?;
    let result = &restored.result;
    let mut outcome = Outcome::unchanged(if restored.in_service {
        format!(
            "the cluster already runs from this restore ({} holds it as member {} of cluster {}, revision {}; every member healthy); nothing changed",
            result.data_dir.display(),
            result.member_id,
            result.cluster_id,
            result.revision
        )
    } else if result.changed && context.check_mode {
        format!(
            "would restore {} as member {} ({}) of cluster {} at revision {} (check mode: nothing written)",
            result.data_dir.display(),
            result.name,
            result.member_id,
            result.cluster_id,
            result.revision
        )
    } else if result.changed {
        format!(
            "restored {} as member {} ({}) of cluster {} at revision {}",
            result.data_dir.display(),
            result.name,
            result.member_id,
            result.cluster_id,
            result.revision
        )
    } else {
        format!(
            "{} already holds this restore (member {}, revision {}); nothing changed",
            result.data_dir.display(),
            result.member_id,
            result.revision
        )
    });
    // Removing what a killed restore left (a plaintext db) is a change too.
    outcome.changed = result.changed || !result.leftovers_removed.is_empty();
    outcome.diff = Some(serde_json::json!({
        "before_header": request.data_dir.display().to_string(),
        "after_header": request.data_dir.display().to_string(),
        "before": describe(&restored.previous),
        "after": format!(
            "member {} ({}) of cluster {}, revision {}, db sha256 {}\n",
            result.name, result.member_id, result.cluster_id, result.revision, result.db_sha256
        ),
    }));
    // Where the previous dir went is in `moved_aside`; the rest are warnings.
    outcome.warnings = restored
        .warnings
        .iter()
        .filter(|w| !matches!(w, RestoreWarning::MovedAside(_)))
        .map(|w| with_hint(&w.message(), w.hint().as_ref(), Style::Module))
        .collect();
    Ok(outcome.with_fields(&restored))
}
