//! `etcdops snapshot ...`: builds the workflow's request from the flags, calls it, prints
//! the result (`etcdops_printer::views::snapshot`) and its warnings.

mod compact;

use std::path::Path;

use anyhow::Result;
use etcdops::client::ClusterConfig;
use etcdops::guard::{Force, Guards};
use etcdops::hints::{Style, with_hint};
use etcdops::snapshot::{
    CopyRequest, CopyRetention, IdentitySettings, ListRequest, ListWarning, PruneRequest,
    RestoreRequest, Retention, SaveRequest, StatusRequest, StoreSettings, VerifyRequest,
};
use etcdops::snapshot::{
    Identities, NoProgress, Progress, PruneReport, SnapshotError, TrailerCheck, new_identity_file,
};
use etcdops::store::StoreOptions;

use super::ExitStatus;
use crate::flags::{
    CompressionArg, CopyToFlags, IdentityFlags, LockModeArg, ObjectLockFlags, RestoreArgs,
    RetentionFlags, SaveArgs, SnapshotCommand, StatusArgs, StoreFlags, VerifyArgs,
};
use crate::output::{Render, note, warn};
use crate::progress::BarProgress;
use etcdops_printer::Printer;
use etcdops_printer::views::snapshot::{
    CatalogView, CopyView, DeletedView, KeygenView, OrphansView, PruneView, RestoreView, SaveView,
    StatusView, VerifyView, print_restore,
};

/// Runs a snapshot command.
pub async fn run(
    config: &ClusterConfig,
    command: &SnapshotCommand,
    printer: Printer,
    platform_root: Option<&Path>,
) -> Result<ExitStatus> {
    match command {
        SnapshotCommand::Save(args) => save(config, args, printer, platform_root).await,
        SnapshotCommand::List(args) => {
            let request = ListRequest {
                store: args.store.clone(),
                settings: settings(&args.store_flags),
            };
            let listed = etcdops::snapshot::list(&request).await?;
            for warning in &listed.warnings {
                let text = match warning {
                    ListWarning::DanglingDeltas(count) => format!(
                        "{count} delta segment(s) have no full backup; `snapshot prune` deletes them"
                    ),
                    other => other.message(),
                };
                warn(&text);
            }
            if args.orphans {
                printer.print(&OrphansView(listed.catalog))?;
            } else {
                printer.print(&CatalogView(listed.catalog))?;
            }
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Verify(args) => verify(config, args, printer).await,
        SnapshotCommand::Compact(args) => compact::compact(args, printer).await,
        SnapshotCommand::Delete(args) => {
            let report = etcdops::snapshot::delete(&args.url, &settings(&args.store_flags)).await?;
            printer.print(&DeletedView(report.deleted))?;
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Prune(args) => {
            let request = PruneRequest {
                store: args.store.clone(),
                cluster: args.cluster,
                dry_run: args.dry_run,
                verify_newest: args.verify_newest,
                retention: retention(&args.retention),
                settings: settings(&args.store_flags),
            };
            let report = etcdops::snapshot::prune(&request)
                .await
                .map_err(in_flag_words)?;
            warn_about_prune(&report);
            let failed = !report.verify_failed.is_empty();
            printer.print(&PruneView(report))?;
            Ok(ExitStatus::from_ok(!failed))
        }
        SnapshotCommand::Copy(args) => {
            let bar = bar("copy", args.quiet, printer);
            let request = CopyRequest {
                source: args.source.clone(),
                destination: args.destination.clone(),
                backups: args.backups.clone(),
                dry_run: args.dry_run,
                settings: settings(&args.store_flags),
            };
            let report = etcdops::snapshot::copy(&request, progress(&bar)).await?;
            for segment in &report.incomplete_segments {
                warn(&format!(
                    "delta segment {segment} not copied: its object is missing or incomplete in {}",
                    report.source
                ));
            }
            for entry in &report.foreign_entries {
                eprintln!(
                    "etcdops: warning: {} in {} is {}, not a file etcdops wrote: not copied",
                    entry.name, report.source, entry.kind
                );
            }
            printer.print(&CopyView(report))?;
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Status(args) => status(args, printer).await,
        SnapshotCommand::Keygen(args) => {
            let recipient = new_identity_file(&args.out)?;
            let view = KeygenView {
                identity_file: args.out.display().to_string(),
                recipient,
            };
            printer.print(&view)?;
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Restore(args) => restore(args, printer, platform_root).await,
    }
}

/// The store settings of the flags.
pub(crate) fn settings(flags: &StoreFlags) -> StoreSettings {
    StoreSettings {
        s3_endpoint: flags.s3_endpoint.clone(),
        s3_region: flags.s3_region.clone(),
        s3_path_style: flags.s3_path_style,
        allow_http: flags.allow_http,
        azure_emulator: flags.azure_emulator,
        store_endpoint: flags.store_endpoint.clone(),
        part_size: flags.part_size,
        store_ca_bundle: flags.store_ca_bundle.clone(),
    }
}

/// The store options of the flags, over the environment's.
pub(crate) fn store_options(flags: &StoreFlags) -> StoreOptions {
    settings(flags).options()
}

/// The `--identity` files.
pub(crate) fn identity_settings(flags: &IdentityFlags) -> IdentitySettings {
    IdentitySettings {
        identity_file: flags.identity.clone(),
        identity_content: None,
    }
}

/// The identities of `--identity` files; a warning on stderr for each file others can read.
pub(crate) fn identities(flags: &IdentityFlags) -> Result<Identities> {
    let (identities, warnings) = identity_settings(flags).identities()?;
    warn_all(&warnings);
    Ok(identities)
}

/// The retention rules of the flags.
pub(crate) fn retention(flags: &RetentionFlags) -> Retention {
    Retention {
        keep_last: flags.keep_last.map(i64::from),
        keep_hourly: flags.keep_hourly.map(i64::from),
        keep_daily: flags.keep_daily.map(i64::from),
        keep_weekly: flags.keep_weekly.map(i64::from),
        keep_monthly: flags.keep_monthly.map(i64::from),
        max_age: flags.max_age,
        orphan_grace: flags.orphan_grace,
    }
}

/// The Object Lock mode of the flags.
pub(crate) fn lock_mode(flags: &ObjectLockFlags) -> Option<etcdops::store::LockMode> {
    flags.object_lock_mode.map(|mode| match mode {
        LockModeArg::Governance => etcdops::store::LockMode::Governance,
        LockModeArg::Compliance => etcdops::store::LockMode::Compliance,
    })
}

/// The second store's own retention rules of the flags.
pub(crate) fn copy_retention(flags: &CopyToFlags) -> CopyRetention {
    CopyRetention {
        copy_keep_last: flags.copy_keep_last.map(i64::from),
        copy_max_age: flags.copy_max_age,
    }
}

/// The options a refusal may name (retention rules such as `keep_last`, and
/// `compact_after`), each also a flag (`--keep-last`).
const RULES: &[&str] = &[
    "keep_last",
    "keep_hourly",
    "keep_daily",
    "keep_weekly",
    "keep_monthly",
    "max_age",
    "compact_after",
    "object_lock_mode",
    "object_lock_retain",
];

/// A workflow's refusal in the flags' words: a bad rule named as its flag, a cluster not in
/// the store with the command that lists them.
pub(crate) fn in_flag_words(error: etcdops::Error) -> anyhow::Error {
    match error.library::<SnapshotError>() {
        Some(SnapshotError::InvalidOption(invalid))
            if invalid.option.is_some_and(|o| RULES.contains(&o.name)) =>
        {
            anyhow::anyhow!("--{} {}", invalid.subject.replace('_', "-"), invalid.reason)
        }
        Some(SnapshotError::NoSuchCluster { cluster, store }) => {
            anyhow::anyhow!(
                "no backups of cluster {cluster} in {store}; `snapshot list` shows the clusters it holds"
            )
        }
        _ => error.into(),
    }
}

pub(super) fn warn_all(warnings: &[String]) {
    for warning in warnings {
        warn(warning);
    }
}

pub(super) fn bar(what: &'static str, quiet: bool, printer: Printer) -> Option<BarProgress> {
    BarProgress::for_terminal(what, quiet || printer.format().is_json())
}

pub(super) fn progress(bar: &Option<BarProgress>) -> &dyn Progress {
    match bar {
        Some(b) => b,
        None => &NoProgress,
    }
}

/// `snapshot verify`: the backup, then its chain; exit 1 when either fails the check. With
/// `--against-cluster`, then the backup (its chain's last revision with segments) against the
/// live cluster: exit 1 when a member differs, 2 when no member can be compared. With
/// `--restore-drill`, the backup restored and served by a scratch etcd: exit 1 when it fails.
async fn verify(config: &ClusterConfig, args: &VerifyArgs, printer: Printer) -> Result<ExitStatus> {
    let request = VerifyRequest {
        snapshot: args.backup.url.clone(),
        identity: identity_settings(&args.identity),
        store: settings(&args.backup.store_flags),
    };
    let drills = etcdops::snapshot::DrillSettings {
        against_cluster: args.against_cluster,
        restore_drill: args.restore_drill,
        etcd_binary: args.etcd_binary.clone(),
    };
    let bar = bar("verify", args.backup.quiet, printer);
    let verified = etcdops::snapshot::verify(&request, progress(&bar)).await?;
    warn_all(&verified.warnings);
    let drilled = match &verified.report {
        Some(_) if verified.ok() && drills.any() => {
            // The identity warnings were said by verify.
            etcdops::snapshot::drill(config, &request, verified.chain.as_ref(), &drills).await?
        }
        _ => etcdops::snapshot::Drilled::default(),
    };
    if let Some(report) = &verified.report {
        let view = VerifyView {
            report: report.clone(),
            chain: verified.chain.clone(),
            against_cluster: drilled.against_cluster.clone(),
            restore_drill: drilled.restore_drill.clone(),
        };
        printer.print(&view)?;
    }
    for failure in &verified.failures {
        note(&format!("verify failed: {failure}"));
    }
    if !verified.ok() {
        return Ok(ExitStatus::Failure);
    }
    let mut status = ExitStatus::Success;
    if let Some(drill) = &drilled.restore_drill
        && !drill.ok
    {
        note(&format!("verify failed: {}", drill.message()));
        status = ExitStatus::Failure;
    }
    use etcdops::snapshot::Verdict;
    if let Some(against) = &drilled.against_cluster {
        match against.verdict {
            Verdict::Match => {}
            Verdict::Differs { .. } => {
                note(&format!("verify failed: {}", against.message()));
                status = ExitStatus::Failure;
            }
            Verdict::CannotCompare { .. } => {
                note(&against.message());
                if status == ExitStatus::Success {
                    status = ExitStatus::Error;
                }
            }
        }
    }
    Ok(status)
}

/// `snapshot restore`: from a file, a stored object, a member's data dir or a point in time.
async fn restore(
    args: &RestoreArgs,
    printer: Printer,
    platform_root: Option<&Path>,
) -> Result<ExitStatus> {
    // etcdutl's defaults for the flags not given.
    use etcdops::snapshot::restore_defaults as defaults;
    let name = args.name.clone().unwrap_or_else(|| defaults::NAME.into());
    let peer_urls = if args.initial_advertise_peer_urls.is_empty() {
        vec![defaults::PEER_URL.to_string()]
    } else {
        args.initial_advertise_peer_urls.clone()
    };
    let request = RestoreRequest {
        snapshot: args.source.clone(),
        from_data_dir: args.from_data_dir.clone(),
        data_dir: args
            .data_dir
            .clone()
            .unwrap_or_else(|| defaults::data_dir(&name)),
        wal_dir: args.wal_dir.clone(),
        initial_cluster: args
            .initial_cluster
            .clone()
            .unwrap_or_else(|| defaults::INITIAL_CLUSTER.into()),
        initial_cluster_token: args
            .initial_cluster_token
            .clone()
            .unwrap_or_else(|| defaults::INITIAL_CLUSTER_TOKEN.into()),
        name,
        initial_advertise_peer_urls: peer_urls,
        skip_hash_check: args.skip_hash_check,
        bump_revision: args.bump_revision,
        mark_compacted: args.mark_compacted,
        v2_snapshot: args.v2_snapshot.into(),
        move_aside: args.move_aside,
        force: Force(args.force),
        replace_restored: false,
        skip_in_service: false,
        cluster: None,
        owner: args.owner.clone(),
        to_revision: args.to_revision,
        to_time: args.to_time,
        dry_run: args.dry_run,
        identity: identity_settings(&args.identity),
        store: settings(&args.store_flags),
        guards: Guards::on_host(platform_root.unwrap_or(Path::new("/"))),
    };
    let restored = etcdops::snapshot::restore(&request).await?;
    for warning in &restored.warnings {
        let text = with_hint(&warning.message(), warning.hint().as_ref(), Style::Cli);
        if warning.is_warning() {
            warn(&text);
        } else {
            note(&text);
        }
    }
    let view = RestoreView {
        restored: &restored,
        dry_run: args.dry_run,
    };
    print_restore(printer, &view)?;
    Ok(ExitStatus::Success)
}

/// `snapshot status`: a stored object when the argument has a scheme, else a local file.
async fn status(args: &StatusArgs, printer: Printer) -> Result<ExitStatus> {
    let request = StatusRequest {
        snapshot: args.source.clone(),
        skip_hash_check: args.skip_hash_check,
        identity: identity_settings(&args.identity),
        store: settings(&args.store_flags),
    };
    let result = etcdops::snapshot::status(&request).await?;
    warn_all(&result.warnings);
    match result.status.trailer {
        TrailerCheck::MismatchIgnored => eprintln!(
            "etcdops: warning: etcd's SHA-256 trailer does not match the db (--skip-hash-check)"
        ),
        TrailerCheck::NotChecked => {
            eprintln!("etcdops: note: etcd's SHA-256 trailer was not checked (--skip-hash-check)")
        }
        _ => {}
    }
    printer.print(&StatusView(result))?;
    Ok(ExitStatus::Success)
}

/// `snapshot save`: the backup, then metrics, the OpenShift pair and retention.
async fn save(
    config: &ClusterConfig,
    args: &SaveArgs,
    printer: Printer,
    platform_root: Option<&Path>,
) -> Result<ExitStatus> {
    if etcdops::snapshot::is_file_destination(&args.store, printer.is_etcdctl()) {
        return save_file(config, args, printer).await;
    }
    let request = SaveRequest {
        dest: args.store.clone(),
        endpoint: args.endpoint.clone(),
        compression: match args.compression {
            CompressionArg::Zstd => etcdops::snapshot::Compression::Zstd,
            CompressionArg::None => etcdops::snapshot::Compression::None,
        },
        compression_level: args.compression_level,
        labels: args.labels.iter().cloned().collect(),
        verify_after_upload: args.verify_after_upload,
        encrypt_to: args.encrypt_to.clone(),
        encrypt_to_file: args.encrypt_to_file.clone(),
        openshift_backup_dir: args.openshift_backup_dir.clone(),
        metrics_file: args.metrics_file.clone(),
        retention: retention(&args.retention),
        all_clusters: args.all_clusters,
        copy_to: args.copy.copy_to.clone(),
        copy_retention: copy_retention(&args.copy),
        store: settings(&args.store_flags),
        object_lock_mode: lock_mode(&args.object_lock),
        object_lock_retain: args.object_lock.object_lock_retain,
        platform_root: platform_root.map(Path::to_path_buf),
    };
    let bar = bar("save", args.quiet, printer);
    let mut saved = etcdops::snapshot::save(config, &request, progress(&bar))
        .await
        .map_err(in_flag_words)?;
    warn_all(&saved.warnings);
    if let Some(error) = saved.prune_error.take() {
        // The backup is saved: say so before the prune's failure.
        printer.print(&SaveView(&saved))?;
        return Err(anyhow::Error::from(error).context("the backup was saved; pruning failed"));
    }
    if let Some(report) = &saved.pruned {
        warn_about_prune(report);
        for line in PruneView(report.clone()).simple_lines() {
            note(&format!("pruned: {line}"));
        }
    }
    printer.print(&SaveView(&saved))?;
    Ok(ExitStatus::Success)
}

/// The store-only flags given with a file destination, as `--flag` names.
fn store_only_flags(args: &SaveArgs) -> Vec<&'static str> {
    let r = &args.retention;
    let given = [
        (!args.encrypt_to.is_empty(), "--encrypt-to"),
        (!args.encrypt_to_file.is_empty(), "--encrypt-to-file"),
        (
            args.openshift_backup_dir.is_some(),
            "--openshift-backup-dir",
        ),
        (!args.labels.is_empty(), "--label"),
        (args.verify_after_upload, "--verify-after-upload"),
        (args.metrics_file.is_some(), "--metrics-file"),
        (r.keep_last.is_some(), "--keep-last"),
        (r.keep_hourly.is_some(), "--keep-hourly"),
        (r.keep_daily.is_some(), "--keep-daily"),
        (r.keep_weekly.is_some(), "--keep-weekly"),
        (r.keep_monthly.is_some(), "--keep-monthly"),
        (r.max_age.is_some(), "--max-age"),
        (args.all_clusters, "--all-clusters"),
        (
            args.object_lock.object_lock_mode.is_some(),
            "--object-lock-mode",
        ),
        (
            args.object_lock.object_lock_retain.is_some(),
            "--object-lock-retain",
        ),
        (args.copy.copy_to.is_some(), "--copy-to"),
    ];
    given
        .into_iter()
        .filter_map(|(on, flag)| on.then_some(flag))
        .collect()
}

/// `snapshot save FILE.db` (any FILE under compat): a plain etcdctl-compatible file; under `--compat etcdctl` what
/// etcdctl prints (its log lines on stderr, `Snapshot saved at FILE` on stdout, whatever -w).
async fn save_file(
    config: &ClusterConfig,
    args: &SaveArgs,
    printer: Printer,
) -> Result<ExitStatus> {
    let refused = store_only_flags(args);
    if !refused.is_empty() {
        anyhow::bail!(
            "{} apply to a store; {} is a plain snapshot file (etcd's stream as it is): give a directory or a store URL",
            refused.join(", "),
            args.store
        );
    }
    let request = etcdops::snapshot::SaveFileRequest {
        path: args.store.clone().into(),
        endpoint: args.endpoint.clone(),
    };
    let bar = bar("save", args.quiet, printer);
    let saved = etcdops::snapshot::save_file(config, &request, progress(&bar)).await?;
    let view = etcdops_printer::views::snapshot_etcdutl::SaveFileView(saved);
    etcdops_printer::views::snapshot_etcdutl::print_saved_file(printer, &view)?;
    Ok(ExitStatus::Success)
}

/// A prune's warnings (backups dated in the future, a newest backup that failed
/// verification), one line each on stderr.
fn warn_about_prune(report: &PruneReport) {
    warn_all(&report.warnings);
}
