//! `etcd_snapshot`: saves a snapshot to a store URL with compression and labels, then applies
//! the retention rules (`keep_*`) in the saved cluster's folder (every cluster's with
//! `all_clusters`); returns the manifest.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::Utc;
use etcd_core::parse_duration;
use etcd_k8s::{OpenshiftBackupRequest, write_openshift_backup};
use etcd_snapshot::{
    Compression, DEFAULT_ORPHAN_GRACE, DEFAULT_ZSTD_LEVEL, NoProgress, PruneRequest, Recipients,
    RetentionPolicy, SaveRequest, SnapshotError, prune_store, save_snapshot, write_save_metrics,
};
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};
use crate::store::{STORE_OPTIONS, StoreArgs};

pub const OPTIONS: &[&[OptionSpec]] = &[
    &[
        opt("dest", Kind::Str),
        opt("compression", Kind::Str),
        opt("compression_level", Kind::Int),
        opt("labels", Kind::Dict),
        opt("endpoint", Kind::Str),
        opt("verify_after_upload", Kind::Bool),
        opt("encrypt_to", Kind::List),
        opt("encrypt_to_file", Kind::Str),
        opt("openshift_backup_dir", Kind::Str),
        opt("metrics_file", Kind::Str),
        opt("keep_last", Kind::Int),
        opt("keep_hourly", Kind::Int),
        opt("keep_daily", Kind::Int),
        opt("keep_weekly", Kind::Int),
        opt("keep_monthly", Kind::Int),
        opt("max_age", Kind::Str),
        opt("orphan_grace", Kind::Str),
        opt("all_clusters", Kind::Bool),
    ],
    STORE_OPTIONS,
];

#[derive(Debug, Default, Deserialize, PartialEq, Eq, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum CompressionArg {
    #[default]
    Zstd,
    None,
}

#[derive(Debug, Deserialize)]
struct Args {
    dest: String,
    #[serde(default)]
    compression: CompressionArg,
    compression_level: Option<i32>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    endpoint: Option<String>,
    #[serde(default)]
    verify_after_upload: bool,
    #[serde(default)]
    encrypt_to: Vec<String>,
    encrypt_to_file: Option<std::path::PathBuf>,
    openshift_backup_dir: Option<std::path::PathBuf>,
    metrics_file: Option<std::path::PathBuf>,
    keep_last: Option<u32>,
    keep_hourly: Option<u32>,
    keep_daily: Option<u32>,
    keep_weekly: Option<u32>,
    keep_monthly: Option<u32>,
    max_age: Option<String>,
    orphan_grace: Option<String>,
    #[serde(default)]
    all_clusters: bool,
    #[serde(flatten)]
    store: StoreArgs,
}

/// A Go-style or day/week duration option (`7d`, `36h`).
pub(crate) fn duration_option(
    name: &str,
    text: &Option<String>,
) -> Result<Option<Duration>, ModuleError> {
    text.as_deref()
        .map(|t| parse_duration(t).map_err(|e| ModuleError::new(format!("option '{name}': {e}"))))
        .transpose()
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let config = context.cluster()?;
    let store = args.store.open(&args.dest)?;
    let policy = RetentionPolicy {
        keep_last: args.keep_last,
        keep_hourly: args.keep_hourly,
        keep_daily: args.keep_daily,
        keep_weekly: args.keep_weekly,
        keep_monthly: args.keep_monthly,
        max_age: duration_option("max_age", &args.max_age)?,
    };
    // A rule set to zero is refused before anything is saved.
    policy.validate()?;
    let orphan_grace =
        duration_option("orphan_grace", &args.orphan_grace)?.unwrap_or(DEFAULT_ORPHAN_GRACE);
    // Bad recipients are refused in check mode too.
    let mut encrypt_to = Recipients::none();
    for recipient in &args.encrypt_to {
        encrypt_to.add(recipient, "option 'encrypt_to'")?;
    }
    if let Some(path) = &args.encrypt_to_file {
        encrypt_to.add_file(path)?;
    }
    let openshift = match &args.openshift_backup_dir {
        Some(dir) => {
            let request = OpenshiftBackupRequest {
                dir: dir.clone(),
                root: Some(context.platform_root()?),
            };
            request.check(!encrypt_to.is_empty())?;
            Some(request)
        }
        None => None,
    };
    if context.check_mode {
        // A save always makes a new backup: report it, and what retention would delete now.
        let mut outcome = Outcome::unchanged(format!(
            "would save a snapshot to {} (check mode: nothing saved)",
            store.url()
        ));
        outcome.changed = true;
        if !policy.is_empty() {
            // The cluster a save would prune is the one etcd names.
            let cluster = if args.all_clusters {
                Ok(None)
            } else {
                etcd_core::member_list(&config)
                    .await
                    .map(|l| Some(l.cluster_id))
            };
            match cluster {
                Ok(cluster) => {
                    let request = PruneRequest {
                        policy,
                        cluster,
                        orphan_grace,
                        dry_run: true,
                        ..PruneRequest::default()
                    };
                    match prune_store(&store, &request, Utc::now()).await {
                        Ok(report) => {
                            outcome.warnings.extend(report.warnings.iter().cloned());
                            outcome = outcome.with("pruned", &report.deleted);
                        }
                        // The first save of this cluster: nothing to prune yet.
                        Err(SnapshotError::NoSuchCluster { .. }) => {
                            outcome = outcome.with("pruned", Vec::<String>::new());
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(e) => outcome.warnings.push(format!(
                    "what retention would delete is not shown: the cluster ID is unknown ({e})"
                )),
            }
        }
        return Ok(outcome);
    }
    let request = SaveRequest {
        endpoint: args.endpoint.clone(),
        compression: match args.compression {
            CompressionArg::Zstd => Compression::Zstd,
            CompressionArg::None => Compression::None,
        },
        level: args.compression_level.unwrap_or(DEFAULT_ZSTD_LEVEL),
        labels: args.labels.clone(),
        verify_after_upload: args.verify_after_upload,
        encrypt_to,
    };
    let saved = save_snapshot(&config, &store, &request, &NoProgress).await;
    let mut warnings = Vec::new();
    if let Some(path) = &args.metrics_file {
        let written = match &saved {
            Ok(result) => write_save_metrics(path, Ok(result), Utc::now()),
            Err(e) => write_save_metrics(path, Err(&e.to_string()), Utc::now()),
        };
        if let Err(e) = written {
            warnings.push(e.to_string());
        }
    }
    let saved = saved?;
    let mut outcome = Outcome::unchanged(format!(
        "saved {}/{} at revision {}",
        saved.store, saved.manifest.object, saved.manifest.revision
    ));
    outcome.changed = true;
    outcome.warnings = warnings;
    outcome = outcome
        .with(
            "object_url",
            format!(
                "{}/{}",
                saved.store.trim_end_matches('/'),
                saved.manifest.object
            ),
        )
        .with_fields(&saved);
    if let Some(request) = &openshift {
        let pair = write_openshift_backup(&store, &saved.manifest, request).await?;
        outcome = outcome.with("openshift", &pair);
    }
    if !policy.is_empty() {
        // Never the backup just saved.
        let request = saved.prune_request(policy, args.all_clusters, orphan_grace);
        let report = prune_store(&store, &request, Utc::now()).await?;
        outcome.warnings.extend(report.warnings.iter().cloned());
        outcome = outcome
            .with("pruned", &report.deleted)
            .with("prune_report", &report);
    }
    Ok(outcome)
}
