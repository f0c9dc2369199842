//! `etcd_snapshot`: saves a snapshot to a store URL with compression and labels, then applies
//! the retention rules (`keep_*`) in the saved cluster's folder (every cluster's with
//! `all_clusters`); returns the manifest.

use etcdops::snapshot::{NoProgress, SaveRequest, preview_save, save};

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let mut request: SaveRequest = context.args()?;
    request.platform_root = Some(context.platform_root()?);
    let config = context.cluster()?;
    if context.check_mode {
        // A save always makes a new backup: report it, and what retention would delete.
        let preview = preview_save(&config, &request).await?;
        let mut outcome = Outcome::unchanged(format!(
            "would save a snapshot from {} to {} (check mode: nothing saved)",
            preview.endpoint, preview.store
        ));
        outcome.changed = true;
        outcome.warnings = preview.warnings;
        return Ok(match preview.pruned {
            Some(pruned) => outcome.with("pruned", pruned),
            None => outcome,
        });
    }
    let saved = save(&config, &request, &NoProgress).await?;
    let mut outcome = Outcome::unchanged(format!(
        "saved {}/{} at revision {}",
        saved.result.store, saved.result.manifest.object, saved.result.manifest.revision
    ));
    outcome.changed = true;
    outcome.warnings.clone_from(&saved.warnings);
    outcome = outcome
        .with("object_url", saved.object_url())
        .with_fields(&saved.result);
    if let Some(pair) = &saved.openshift {
        outcome = outcome.with("openshift", pair);
    }
    if let Some(report) = &saved.pruned {
        outcome.warnings.extend(report.warnings.iter().cloned());
        outcome = outcome
            .with("pruned", &report.deleted)
            .with("prune_report", report);
    }
    if let Some(report) = &saved.copied {
        outcome = outcome.with("copied", report);
    }
    if let Some(report) = &saved.copy_pruned {
        outcome.warnings.extend(report.warnings.iter().cloned());
        outcome = outcome.with("copy_pruned", &report.deleted);
    }
    if let Some(error) = &saved.prune_error {
        // The backup is saved: the task fails, and says so with the backup's values.
        outcome.failed = true;
        outcome.msg = format!(
            "{}; the backup was saved, pruning failed: {}",
            outcome.msg,
            ModuleError::from_library(error).0
        );
    }
    Ok(outcome)
}
