//! `etcd_snapshot`: saves a snapshot to a store URL with compression and labels, then applies
//! the retention rules (`keep_*`) in the saved cluster's folder (every cluster's with
//! `all_clusters`); returns the manifest.

use etcdops::snapshot::{NoProgress, SaveRequest, preview_save, save};

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};
use crate::store::STORE_OPTIONS;

pub const OPTIONS: &[&[OptionSpec]] = &[
    &[
        opt("store", Kind::Str)
            .aliases(&["dest"])
            .field("dest")
            .required(),
        opt("compression", Kind::Str)
            .choices(&["zstd", "none"])
            .default_str("zstd"),
        opt("compression_level", Kind::Int)
            .default_int(etcdops::snapshot::DEFAULT_ZSTD_LEVEL as i64),
        opt("labels", Kind::Dict),
        opt("endpoint", Kind::Str),
        opt("verify_after_upload", Kind::Bool).default_bool(false),
        opt("encrypt_to", Kind::List),
        opt("encrypt_to_file", Kind::Path),
        opt("openshift_backup_dir", Kind::Path),
        opt("metrics_file", Kind::Path),
        opt("keep_last", Kind::Int),
        opt("keep_hourly", Kind::Int),
        opt("keep_daily", Kind::Int),
        opt("keep_weekly", Kind::Int),
        opt("keep_monthly", Kind::Int),
        opt("max_age", Kind::Str),
        opt("orphan_grace", Kind::Str),
        opt("all_clusters", Kind::Bool).default_bool(false),
    ],
    STORE_OPTIONS,
];

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
