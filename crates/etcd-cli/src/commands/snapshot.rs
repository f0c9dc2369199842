//! `etcdops snapshot ...`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use chrono::Utc;
use etcd_core::ClusterConfig;
use etcd_k8s::{OpenshiftBackupRequest, OpenshiftBackupResult, write_openshift_backup};
use etcd_snapshot::{
    Catalog, Compression, CopyAction, CopyReport, CopyRequest, Identities, NoProgress, PitrPlan,
    PointInTime, Progress, PruneReport, PruneRequest, Recipients, RestoreError, RestoreRequest,
    RestoreResult, RestoreSource, RetentionPolicy, SaveRequest, SaveResult, SnapshotError,
    SnapshotStatus, StatusOptions, TrailerCheck, VerifyReport, copy_backups, delete_backup,
    list_backups, new_identity_file, open_restore_source, open_snapshot_file_decrypting,
    open_snapshot_object_decrypting, prune_store, restore_snapshot, restore_to_point,
    save_snapshot, split_backup_url, verify_backup, write_save_metrics,
};
use etcd_store::{Store, StoreOptions, split_object_url};

use super::ExitStatus;
use crate::flags::{
    CompressionArg, IdentityFlags, OutputFormat, RestoreArgs, RetentionFlags, SaveArgs,
    SnapshotCommand, StatusArgs, StoreFlags,
};
use crate::output::{Render, cell, human_bytes, print};
use crate::progress::BarProgress;

/// Runs a snapshot command.
pub async fn run(
    config: &ClusterConfig,
    command: &SnapshotCommand,
    format: OutputFormat,
    platform_root: Option<&Path>,
) -> Result<ExitStatus> {
    match command {
        SnapshotCommand::Save(args) => save(config, args, format, platform_root).await,
        SnapshotCommand::List(args) => {
            let store = open_store(&args.store, &args.store_flags)?;
            let catalog = list_backups(&store).await?;
            warn_about_chains(&catalog);
            let folder = store.url().rsplit('/').next().unwrap_or_default();
            if catalog.backups.is_empty() && etcd_snapshot::cluster_folder_id(folder).is_some() {
                eprintln!(
                    "etcdops: warning: {} is a cluster folder, not a store: list the store that holds it",
                    store.url()
                );
            }
            if args.orphans {
                print(format, &OrphansView(catalog))?;
            } else {
                print(format, &CatalogView(catalog))?;
            }
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Verify(verify) => {
            let args = &verify.backup;
            let identities = identities(&verify.identity)?;
            let (store_url, name) = split_object_url(&args.url);
            let store = open_store(&store_url, &args.store_flags)?;
            let bar = bar("verify", args.quiet, format);
            let progress: &dyn Progress = match &bar {
                Some(b) => b,
                None => &NoProgress,
            };
            match verify_backup(&store, &name, &identities, progress).await {
                Ok(report) => {
                    // Then its chain of delta segments, when it has one.
                    let chain = if report.manifest_checked {
                        let chain = etcd_snapshot::verify_chain(&store, &name, &identities).await?;
                        (!chain.segments.is_empty() || !chain.problems.is_empty()).then_some(chain)
                    } else {
                        None
                    };
                    let problems = chain
                        .as_ref()
                        .map(|c| c.problems.clone())
                        .unwrap_or_default();
                    let object = report.object.clone();
                    print(format, &VerifyView { report, chain })?;
                    if problems.is_empty() {
                        return Ok(ExitStatus::Success);
                    }
                    for problem in &problems {
                        eprintln!("etcdops: verify failed: the chain of {object}: {problem}");
                    }
                    Ok(ExitStatus::Failure)
                }
                Err(e @ SnapshotError::VerifyFailed { .. }) => {
                    eprintln!("etcdops: verify failed: {e}");
                    Ok(ExitStatus::Failure)
                }
                Err(e) => Err(e.into()),
            }
        }
        SnapshotCommand::Delete(args) => {
            // STORE/etcd-<cluster>/OBJECT: the store is the one holding the cluster folder.
            let (store_url, name) =
                split_backup_url(&args.url).unwrap_or_else(|| split_object_url(&args.url));
            let store = open_store(&store_url, &args.store_flags)?;
            let report = delete_backup(&store, &name).await?;
            print(format, &DeletedView(report.deleted))?;
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Prune(args) => {
            let store = open_store(&args.store, &args.store_flags)?;
            let request = PruneRequest {
                policy: policy(&args.retention)?,
                cluster: args.cluster,
                orphan_grace: args.retention.orphan_grace,
                dry_run: args.dry_run,
                verify_newest: args.verify_newest,
                ..PruneRequest::default()
            };
            let report = match prune_store(&store, &request, Utc::now()).await {
                Ok(report) => report,
                Err(SnapshotError::NoSuchCluster { cluster, store }) => anyhow::bail!(
                    "no backups of cluster {cluster} in {store}; `snapshot list` shows the clusters it holds"
                ),
                Err(e) => return Err(e.into()),
            };
            warn_about_prune(&report);
            let failed = !report.verify_failed.is_empty();
            print(format, &PruneView(report))?;
            Ok(ExitStatus::from_ok(!failed))
        }
        SnapshotCommand::Copy(args) => {
            let source = open_store(&args.source, &args.store_flags)?;
            let destination = open_store(&args.destination, &args.store_flags)?;
            let bar = bar("copy", args.quiet, format);
            let progress: &dyn Progress = match &bar {
                Some(b) => b,
                None => &NoProgress,
            };
            let request = CopyRequest {
                objects: args.backups.clone(),
                dry_run: args.dry_run,
            };
            let report = copy_backups(&source, &destination, &request, progress).await?;
            for segment in &report.incomplete_segments {
                eprintln!(
                    "etcdops: warning: delta segment {segment} not copied: its object is missing or incomplete in {}",
                    report.source
                );
            }
            print(format, &CopyView(report))?;
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Status(args) => status(args, format).await,
        SnapshotCommand::Keygen(args) => {
            let recipient = new_identity_file(&args.out)?;
            print(
                format,
                &KeygenView {
                    identity_file: args.out.display().to_string(),
                    recipient,
                },
            )?;
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Restore(args) => restore(args, format).await,
    }
}

/// The identities of `--identity` files; a warning on stderr for each file others can read.
pub(crate) fn identities(flags: &IdentityFlags) -> Result<Identities> {
    let mut identities = Identities::none();
    for path in &flags.identity {
        if let Some(warning) = identities.add_file(path)? {
            eprintln!("etcdops: warning: {warning}");
        }
    }
    Ok(identities)
}

/// The recipients of `--encrypt-to` and `--encrypt-to-file`.
pub(crate) fn recipients(encrypt_to: &[String], encrypt_to_file: &[PathBuf]) -> Result<Recipients> {
    let mut recipients = Recipients::none();
    for recipient in encrypt_to {
        recipients.add(recipient, "--encrypt-to")?;
    }
    for path in encrypt_to_file {
        recipients.add_file(path)?;
    }
    Ok(recipients)
}

/// `snapshot restore`: a backup URL when the argument has a scheme, else a local file.
async fn restore(args: &RestoreArgs, format: OutputFormat) -> Result<ExitStatus> {
    let mut request = RestoreRequest {
        name: args.name.clone(),
        initial_cluster: args.initial_cluster.clone(),
        initial_cluster_token: args.initial_cluster_token.clone(),
        initial_advertise_peer_urls: args.initial_advertise_peer_urls.clone(),
        data_dir: args.data_dir.clone(),
        wal_dir: args.wal_dir.clone(),
        skip_hash_check: args.skip_hash_check,
        bump_revision: args.bump_revision,
        mark_compacted: args.mark_compacted,
        move_aside: args.move_aside,
        force: args.force,
        owner: args.owner.clone(),
        dry_run: args.dry_run,
    };
    let identities = identities(&args.identity)?;
    let point = match (args.to_revision, args.to_time) {
        (Some(revision), _) => Some(PointInTime::Revision(revision)),
        (None, Some(time)) => Some(PointInTime::Time(time)),
        (None, None) => None,
    };
    let (result, plan) = match (point, &args.source) {
        (Some(point), Some(store_url)) => {
            let (result, plan) = restore_to_point(
                &mut request,
                store_url,
                point,
                &store_options(&args.store_flags),
                &identities,
            )
            .await
            .map_err(restore_hint)?;
            (result, Some(plan))
        }
        _ => {
            let from = match (&args.from_data_dir, &args.source) {
                (Some(dir), _) => RestoreSource::DataDir(dir),
                (None, Some(source)) => RestoreSource::Snapshot(source),
                (None, None) => anyhow::bail!("give a snapshot FILE|URL or --from-data-dir DIR"),
            };
            let (source, snapshot) = open_restore_source(
                &mut request,
                from,
                &store_options(&args.store_flags),
                &identities,
            )
            .await?;
            (
                restore_snapshot(&source, &snapshot, &request).map_err(restore_hint)?,
                None,
            )
        }
    };
    if result.trailer == TrailerCheck::MismatchIgnored {
        eprintln!(
            "etcdops: warning: etcd's SHA-256 trailer does not match the db (--skip-hash-check)"
        );
    }
    for leftover in &result.leftovers_removed {
        eprintln!(
            "etcdops: removed {}, the staging dir of a restore that was killed",
            leftover.display()
        );
    }
    for aside in &result.moved_aside {
        eprintln!(
            "etcdops: moved the previous dir aside to {}",
            aside.display()
        );
    }
    if let Some(pitr) = &result.point_in_time
        && !pitr.leases_detached.is_empty()
    {
        eprintln!(
            "etcdops: warning: {} changes were restored without their lease ({}): the lease ended before backup run learned its TTL, so those keys will not expire",
            pitr.changes_detached,
            pitr.leases_detached.join(", ")
        );
    }
    print(
        format,
        &RestoreView {
            result,
            plan,
            dry_run: args.dry_run,
        },
    )?;
    Ok(ExitStatus::Success)
}

/// A restore refusal with the flag that gets past it, where there is one.
fn restore_hint(error: RestoreError) -> anyhow::Error {
    match &error {
        RestoreError::NoTrailer { .. } => anyhow::anyhow!("{error} (--skip-hash-check)"),
        RestoreError::Incomplete { .. } | RestoreError::HoldsOtherRestore { .. } => {
            anyhow::anyhow!("{error} (--move-aside)")
        }
        _ => error.into(),
    }
}

#[derive(serde::Serialize)]
struct RestoreView {
    #[serde(flatten)]
    result: RestoreResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<PitrPlan>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dry_run: bool,
}

impl Render for RestoreView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "DATA DIR",
            "NAME",
            "MEMBER ID",
            "CLUSTER ID",
            "MEMBERS",
            "REVISION",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.result;
        vec![vec![
            r.data_dir.display().to_string(),
            r.name.clone(),
            r.member_id.clone(),
            r.cluster_id.clone(),
            r.members
                .iter()
                .map(|m| m.name.clone())
                .collect::<Vec<_>>()
                .join(","),
            r.revision.to_string(),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        let r = &self.result;
        let mut lines = Vec::new();
        if let Some(plan) = &self.plan {
            let target = match &r.point_in_time {
                Some(pitr) => match pitr.target_time {
                    Some(at) => format!(
                        "revision {} (every change received by {at})",
                        pitr.target_revision
                    ),
                    None => format!("revision {}", pitr.target_revision),
                },
                None => String::new(),
            };
            lines.push(format!(
                "point in time: full backup {} (revision {}, {}) + {} delta segment(s), to {target}",
                plan.full,
                plan.full_revision,
                plan.full_created_at.format("%Y-%m-%dT%H:%M:%SZ"),
                plan.segments.len()
            ));
            for segment in &plan.segments {
                lines.push(format!("  {segment}"));
            }
        }
        if self.dry_run {
            lines.push(format!(
                "would restore {} as member {} ({}) of cluster {} at revision {}; nothing written (dry run)",
                r.data_dir.display(),
                r.name,
                r.member_id,
                r.cluster_id,
                r.revision
            ));
            return lines;
        }
        if !r.changed {
            lines.push(format!(
                "already restored: {} is member {} ({}) of cluster {} at revision {}; nothing changed",
                r.data_dir.display(),
                r.name,
                r.member_id,
                r.cluster_id,
                r.revision
            ));
            return lines;
        }
        lines.push(format!(
            "restored {} as member {} ({}) of cluster {} at revision {}",
            r.data_dir.display(),
            r.name,
            r.member_id,
            r.cluster_id,
            r.revision
        ));
        if let Some(pitr) = &r.point_in_time {
            lines.push(format!(
                "replayed {} changes; leases recreated: {}; detached: {}",
                pitr.changes_applied,
                pitr.leases_recreated.len(),
                pitr.leases_detached.len()
            ));
        }
        lines
    }
}

/// `snapshot status`: a backup URL when the argument has a scheme, else a local file.
async fn status(args: &StatusArgs, format: OutputFormat) -> Result<ExitStatus> {
    // A zstd or age file or a stored object is decrypted and decompressed into an unnamed
    // temporary file.
    let identities = identities(&args.identity)?;
    let snapshot = if args.source.contains("://") {
        let (store_url, name) = split_object_url(&args.source);
        let store = open_store(&store_url, &args.store_flags)?;
        open_snapshot_object_decrypting(&store, &name, None, &identities).await?
    } else {
        open_snapshot_file_decrypting(std::path::Path::new(&args.source), None, &identities)?
    };
    let options = StatusOptions {
        skip_hash_check: args.skip_hash_check,
    };
    let status = snapshot.status(&args.source, &options)?;
    match status.trailer {
        TrailerCheck::MismatchIgnored => eprintln!(
            "etcdops: warning: etcd's SHA-256 trailer does not match the db (--skip-hash-check)"
        ),
        TrailerCheck::NotChecked => {
            eprintln!("etcdops: note: etcd's SHA-256 trailer was not checked (--skip-hash-check)")
        }
        _ => {}
    }
    print(
        format,
        &StatusView {
            source: args.source.clone(),
            compression: snapshot.compression(),
            encrypted: snapshot.encrypted(),
            stored_size: snapshot.stored_size(),
            status,
        },
    )?;
    Ok(ExitStatus::Success)
}

fn bar(what: &'static str, quiet: bool, format: OutputFormat) -> Option<BarProgress> {
    BarProgress::for_terminal(what, quiet || format == OutputFormat::Json)
}

async fn save(
    config: &ClusterConfig,
    args: &SaveArgs,
    format: OutputFormat,
    platform_root: Option<&Path>,
) -> Result<ExitStatus> {
    let store = open_store(&args.store, &args.store_flags)?;
    let openshift = args
        .openshift_backup_dir
        .as_ref()
        .map(|dir| OpenshiftBackupRequest {
            dir: dir.clone(),
            root: platform_root.map(Path::to_path_buf),
        });
    if let Some(request) = &openshift {
        request.check(!args.encrypt_to.is_empty() || !args.encrypt_to_file.is_empty())?;
    }
    // Bad rules are refused before anything is saved.
    let policy = policy(&args.retention)?;
    let request = SaveRequest {
        endpoint: args.endpoint.clone(),
        compression: match args.compression {
            CompressionArg::Zstd => Compression::Zstd,
            CompressionArg::None => Compression::None,
        },
        level: args.compression_level,
        labels: args.labels.iter().cloned().collect::<BTreeMap<_, _>>(),
        verify_after_upload: args.verify_after_upload,
        encrypt_to: recipients(&args.encrypt_to, &args.encrypt_to_file)?,
    };
    let bar = bar("save", args.quiet, format);
    let progress: &dyn Progress = match &bar {
        Some(b) => b,
        None => &NoProgress,
    };
    let outcome = save_snapshot(config, &store, &request, progress).await;
    if let Some(path) = &args.metrics_file {
        let written = match &outcome {
            Ok(result) => write_save_metrics(path, Ok(result), Utc::now()),
            Err(e) => write_save_metrics(path, Err(&e.to_string()), Utc::now()),
        };
        if let Err(e) = written {
            eprintln!("etcdops: warning: {e}");
        }
    }
    let result = outcome?;
    let openshift = match &openshift {
        Some(request) => Some(write_openshift_backup(&store, &result.manifest, request).await?),
        None => None,
    };
    let pruned = if policy.is_empty() {
        None
    } else {
        // The saved cluster's folder only, unless told otherwise; never the backup just saved.
        let request = result.prune_request(policy, args.all_clusters, args.retention.orphan_grace);
        match prune_store(&store, &request, Utc::now()).await {
            Ok(report) => Some(report),
            Err(e) => {
                // The backup is saved: say so before the prune's failure.
                print(
                    format,
                    &SaveView {
                        result,
                        openshift,
                        pruned: None,
                    },
                )?;
                return Err(anyhow::Error::from(e).context("the backup was saved; pruning failed"));
            }
        }
    };
    if let Some(report) = &pruned {
        warn_about_prune(report);
        for line in PruneView(report.clone()).simple_lines() {
            eprintln!("etcdops: pruned: {line}");
        }
    }
    print(
        format,
        &SaveView {
            result,
            openshift,
            pruned,
        },
    )?;
    Ok(ExitStatus::Success)
}

/// The rules of the flags; a rule set to zero is refused, named as its flag.
pub(crate) fn policy(flags: &RetentionFlags) -> Result<RetentionPolicy> {
    let policy = RetentionPolicy {
        keep_last: flags.keep_last,
        keep_hourly: flags.keep_hourly,
        keep_daily: flags.keep_daily,
        keep_weekly: flags.keep_weekly,
        keep_monthly: flags.keep_monthly,
        max_age: flags.max_age,
    };
    match policy.validate() {
        Ok(()) => Ok(policy),
        Err(SnapshotError::InvalidOption { option, reason }) => {
            anyhow::bail!("--{} {reason}", option.replace('_', "-"))
        }
        Err(e) => Err(e.into()),
    }
}

/// A prune's warnings (backups dated in the future, a newest backup that failed
/// verification), one line each on stderr.
fn warn_about_prune(report: &PruneReport) {
    for warning in &report.warnings {
        eprintln!("etcdops: warning: {warning}");
    }
}

/// The store options of the flags, over the environment's.
pub(crate) fn store_options(flags: &StoreFlags) -> StoreOptions {
    let mut options = StoreOptions::from_env();
    if let Some(endpoint) = &flags.s3_endpoint {
        options.s3_endpoint = Some(endpoint.clone());
    }
    if let Some(region) = &flags.s3_region {
        options.s3_region = Some(region.clone());
    }
    options.s3_path_style |= flags.s3_path_style;
    options.allow_http |= flags.allow_http;
    options.azure_use_emulator |= flags.azure_emulator;
    if let Some(endpoint) = &flags.store_endpoint {
        options.endpoint_override = Some(endpoint.clone());
    }
    if let Some(size) = flags.part_size {
        options.part_size = size;
    }
    options
}

pub(crate) fn open_store(url: &str, flags: &StoreFlags) -> Result<Store> {
    Ok(Store::open(url, &store_options(flags))?)
}

#[derive(serde::Serialize)]
struct SaveView {
    #[serde(flatten)]
    result: SaveResult,
    /// The pair for OpenShift's cluster-restore.sh, with --openshift-backup-dir.
    #[serde(skip_serializing_if = "Option::is_none")]
    openshift: Option<OpenshiftBackupResult>,
    /// What the prune after the save deleted and kept, with --keep-*.
    #[serde(skip_serializing_if = "Option::is_none")]
    pruned: Option<PruneReport>,
}

impl Render for SaveView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let m = &self.result.manifest;
        let mut rows = vec![
            vec![
                "object".into(),
                format!("{}/{}", self.result.store, m.object),
            ],
            vec!["manifest".into(), self.result.manifest_name.clone()],
            vec!["cluster id".into(), m.cluster_id.to_string()],
            vec![
                "member".into(),
                format!("{} ({}) at {}", m.member_id, m.member_name, m.endpoint),
            ],
            vec!["etcd version".into(), m.etcd_version.clone()],
            vec!["revision".into(), m.revision.to_string()],
            vec!["db size".into(), human_bytes(m.db_size as i64)],
            vec!["stored size".into(), human_bytes(m.object_size as i64)],
            vec!["db sha256".into(), m.db_sha256.clone()],
            vec!["object sha256".into(), m.object_sha256.clone()],
            vec![
                "encrypted to".into(),
                m.encryption
                    .as_ref()
                    .map(|e| format!("{} ({})", e.recipients.join(", "), e.scheme))
                    .unwrap_or_else(|| "not encrypted".into()),
            ],
            vec![
                "verified after upload".into(),
                m.verified_after_upload.to_string(),
            ],
            vec![
                "took".into(),
                format!("{:.1}s", self.result.duration_seconds),
            ],
        ];
        if let Some(pair) = &self.openshift {
            rows.push(vec![
                "openshift snapshot".into(),
                pair.snapshot.display().to_string(),
            ]);
            rows.push(vec![
                "openshift static resources".into(),
                pair.static_kuberesources.display().to_string(),
            ]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "Snapshot saved at {}/{}",
            self.result.store, self.result.manifest.object
        )];
        if let Some(pair) = &self.openshift {
            lines.push(format!(
                "OpenShift backup written: {} and {}",
                pair.snapshot.display(),
                pair.static_kuberesources.display()
            ));
        }
        lines
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct CopyView(CopyReport);

impl Render for CopyView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["OBJECT", "STORED", "ACTION"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let action = |action: CopyAction| -> String {
            match action {
                CopyAction::Copied => "copied",
                CopyAction::WouldCopy => "would copy",
                CopyAction::AlreadyPresent => "already there",
            }
            .into()
        };
        let mut rows = Vec::new();
        for e in &self.0.entries {
            rows.push(vec![
                e.object.clone(),
                human_bytes(e.bytes as i64),
                action(e.action),
            ]);
            // Its chain's segments, by sequence, under it.
            for s in self.0.segments.iter().filter(|s| s.base == e.object) {
                rows.push(vec![
                    format!("  {}", s.object),
                    human_bytes(s.bytes as i64),
                    action(s.action),
                ]);
            }
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "{} backup(s) copied from {} to {}, {} already there",
            self.0.copied, self.0.source, self.0.destination, self.0.already_present
        )];
        if !self.0.segments.is_empty() {
            lines.push(format!(
                "{} delta segment(s) copied, {} already there",
                self.0.segments_copied, self.0.segments_already_present
            ));
        }
        lines
    }
}

/// A chain as `snapshot list` shows it under its full backup:
/// `+N deltas to rev X (time), last published <age> ago`, and what breaks it.
fn chain_line(chain: &etcd_snapshot::ChainSummary, now: chrono::DateTime<Utc>) -> String {
    let to_time = chain
        .to_time
        .map(|t| format!(" ({})", t.format("%Y-%m-%d %H:%M:%S")))
        .unwrap_or_default();
    let covered = if chain.covered_segments == chain.segments {
        String::new()
    } else {
        format!(", {} continuous", chain.covered_segments)
    };
    let mut line = format!(
        "+{} delta{}{covered} to rev {}{to_time}, last published {} ago",
        chain.segments,
        if chain.segments == 1 { "" } else { "s" },
        chain.to_revision,
        ago(now.signed_duration_since(chain.last_published))
    );
    if let Some(first) = chain.problems.first() {
        line.push_str(&format!("; BROKEN CHAIN: {first}"));
        if chain.problems.len() > 1 {
            line.push_str(&format!(" (+{} more)", chain.problems.len() - 1));
        }
    }
    line
}

/// A duration as `45s`, `12m`, `3h`, `2d`.
fn ago(elapsed: chrono::TimeDelta) -> String {
    let secs = elapsed.num_seconds().max(0);
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// Warnings on stderr about broken chains and segments without their full backup.
fn warn_about_chains(catalog: &Catalog) {
    for backup in &catalog.backups {
        if let Some(first) = backup.chain.as_ref().and_then(|c| c.problems.first()) {
            eprintln!(
                "etcdops: warning: the chain of delta segments of {} is broken: {first}",
                backup.object
            );
        }
    }
    if !catalog.dangling_deltas.is_empty() {
        eprintln!(
            "etcdops: warning: {} delta segment(s) have no full backup; `snapshot prune` deletes them",
            catalog.dangling_deltas.len()
        );
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct CatalogView(Catalog);

impl Render for CatalogView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "CREATED (UTC)",
            "CLUSTER",
            "REVISION",
            "MEMBER",
            "DB SIZE",
            "STORED",
            "COMPLETE",
            "OBJECT",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let now = Utc::now();
        let mut rows = Vec::new();
        for b in &self.0.backups {
            let m = &b.manifest;
            rows.push(vec![
                m.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                m.cluster_id.to_string(),
                m.revision.to_string(),
                m.member_name.clone(),
                human_bytes(m.db_size as i64),
                human_bytes(m.object_size as i64),
                b.complete.to_string(),
                b.object.clone(),
            ]);
            // A second line for its chain: what it covers, and whether it is broken.
            if let Some(chain) = &b.chain {
                let stored: u64 = b.deltas.iter().map(|d| d.manifest.object_size).sum();
                rows.push(vec![
                    String::new(),
                    String::new(),
                    format!("..{}", chain.to_revision),
                    String::new(),
                    String::new(),
                    human_bytes(stored as i64),
                    if chain.continuous { "true" } else { "BROKEN" }.into(),
                    chain_line(chain, now),
                ]);
            }
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        self.0.backups.iter().map(|b| b.object.clone()).collect()
    }
}

#[derive(serde::Serialize)]
struct OrphansView(Catalog);

impl Render for OrphansView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["LAST MODIFIED", "SIZE", "OBJECT WITHOUT MANIFEST"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        // Objects without a manifest, then temporary files of uploads never completed.
        self.0
            .orphans
            .iter()
            .chain(self.0.unfinished_uploads.iter().map(|u| &u.info))
            .map(|o| {
                vec![
                    o.last_modified.clone(),
                    human_bytes(o.size as i64),
                    o.name.clone(),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().map(|r| r[2].clone()).collect()
    }
}

/// A verified backup and, when it has delta segments, its chain.
#[derive(serde::Serialize)]
struct VerifyView {
    #[serde(flatten)]
    report: VerifyReport,
    /// Absent for a backup without segments, so its output is as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    chain: Option<etcd_snapshot::ChainReport>,
}

impl Render for VerifyView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.report;
        let mut rows = vec![
            vec!["object".into(), r.object.clone()],
            vec!["result".into(), "OK".into()],
            vec![
                "checked against manifest".into(),
                r.manifest_checked.to_string(),
            ],
            vec!["stored size".into(), r.object_size.to_string()],
            vec!["stored sha256".into(), r.object_sha256.clone()],
            vec!["encrypted (age)".into(), r.encrypted.to_string()],
            vec!["db size".into(), r.db_size.to_string()],
            vec!["db sha256 (= etcd trailer)".into(), r.db_sha256.clone()],
            vec!["bbolt page size".into(), r.bbolt.page_size.to_string()],
            vec!["bbolt txid".into(), r.bbolt.txid.to_string()],
        ];
        if let Some(chain) = &self.chain {
            let checked = chain.segments.iter().filter(|s| s.records_checked).count();
            rows.push(vec![
                "chain".into(),
                if chain.ok {
                    "OK".into()
                } else {
                    format!("BROKEN ({} problem(s))", chain.problems.len())
                },
            ]);
            rows.push(vec![
                "chain segments".into(),
                chain.segments.len().to_string(),
            ]);
            rows.push(vec![
                "chain verified revisions".into(),
                format!("{}..{}", chain.after_revision, chain.to_revision),
            ]);
            // Stored bytes fine but records unread: encrypted, and no --identity.
            let locked = chain
                .segments
                .iter()
                .filter(|s| s.stored_ok && !s.records_checked && s.problem.is_none())
                .count();
            rows.push(vec![
                "chain records checked".into(),
                if locked > 0 {
                    format!(
                        "{checked} of {} ({locked} encrypted: pass --identity to check them)",
                        chain.segments.len()
                    )
                } else {
                    format!("{checked} of {}", chain.segments.len())
                },
            ]);
            for problem in &chain.problems {
                rows.push(vec!["chain problem".into(), problem.clone()]);
            }
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("{}: OK", self.report.object)];
        if let Some(chain) = &self.chain {
            if chain.ok {
                lines.push(format!(
                    "{}: chain of {} delta segment(s) OK to revision {}",
                    self.report.object,
                    chain.segments.len(),
                    chain.to_revision
                ));
            } else {
                lines.push(format!(
                    "{}: chain BROKEN, verified to revision {}",
                    self.report.object, chain.to_revision
                ));
            }
        }
        lines
    }
}

#[derive(serde::Serialize)]
struct StatusView {
    source: String,
    compression: Compression,
    encrypted: bool,
    stored_size: u64,
    #[serde(flatten)]
    status: SnapshotStatus,
}

impl Render for StatusView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "HASH",
            "REVISION",
            "TOTAL KEYS",
            "TOTAL SIZE",
            "LIVE KEYS",
            "COMPACTED",
            "LEASES",
            "CONSISTENT INDEX",
            "TERM",
            "MEMBERS",
            "AUTH",
            "STORAGE VERSION",
            "TRAILER",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let s = &self.status;
        let members = s
            .members
            .iter()
            .map(|m| {
                if m.name.is_empty() {
                    m.id.clone()
                } else {
                    m.name.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(",");
        let trailer = match s.trailer {
            TrailerCheck::Verified => "sha256 ok",
            TrailerCheck::Absent => "none (raw db)",
            TrailerCheck::MismatchIgnored => "MISMATCH (ignored)",
            TrailerCheck::NotChecked => "not checked",
        };
        vec![vec![
            format!("{:x}", s.hash),
            s.revision.to_string(),
            s.total_key.to_string(),
            human_bytes(s.total_size as i64),
            s.live_keys.to_string(),
            cell(&s.compact_revision),
            s.leases.to_string(),
            cell(&s.consistent_index),
            cell(&s.term),
            members,
            if s.auth_enabled {
                "enabled"
            } else {
                "disabled"
            }
            .to_string(),
            cell(&s.storage_version),
            trailer.to_string(),
        ]]
    }

    /// etcdutl's `-w simple`: `hash, revision, total keys, total size`.
    fn simple_lines(&self) -> Vec<String> {
        let s = &self.status;
        vec![format!(
            "{:x}, {}, {}, {}",
            s.hash,
            s.revision,
            s.total_key,
            human_bytes(s.total_size as i64)
        )]
    }
}

/// What `snapshot keygen` made: where the identity is, and its public key (never the identity).
#[derive(serde::Serialize)]
struct KeygenView {
    identity_file: String,
    recipient: String,
}

impl Render for KeygenView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["IDENTITY FILE", "RECIPIENT"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![self.identity_file.clone(), self.recipient.clone()]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![self.recipient.clone()]
    }
}

#[derive(serde::Serialize)]
struct DeletedView(Vec<String>);

impl Render for DeletedView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["DELETED"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0.iter().map(|n| vec![n.clone()]).collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.0.iter().map(|n| format!("deleted {n}")).collect()
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct PruneView(PruneReport);

impl Render for PruneView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["ACTION", "CREATED (UTC)", "OBJECT", "KEPT BY"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let delete = if self.0.dry_run {
            "would delete"
        } else {
            "deleted"
        };
        let mut rows: Vec<Vec<String>> = Vec::new();
        for entry in &self.0.kept {
            rows.push(vec![
                "keep".into(),
                entry.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                entry.object.clone(),
                entry.kept_by.join("; "),
            ]);
        }
        for entry in &self.0.deleted {
            rows.push(vec![
                delete.into(),
                entry.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                entry.object.clone(),
                if entry.deltas > 0 {
                    format!("with its {} delta segment(s)", entry.deltas)
                } else {
                    String::new()
                },
            ]);
        }
        for segment in &self.0.dangling_deleted {
            rows.push(vec![
                format!("{delete} (delta without its full backup)"),
                String::new(),
                segment.clone(),
                String::new(),
            ]);
        }
        for orphan in &self.0.orphans_deleted {
            rows.push(vec![
                format!("{delete} (orphan)"),
                String::new(),
                orphan.clone(),
                String::new(),
            ]);
        }
        for unfinished in &self.0.unfinished_deleted {
            rows.push(vec![
                format!("{delete} (unfinished upload)"),
                String::new(),
                unfinished.clone(),
                String::new(),
            ]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows()
            .into_iter()
            .filter(|r| r[0] != "keep")
            .map(|r| format!("{} {}", r[0], r[2]))
            .collect()
    }
}
