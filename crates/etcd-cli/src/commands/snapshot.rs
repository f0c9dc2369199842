//! `etcdops snapshot ...`

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use chrono::Utc;
use etcd_core::ClusterConfig;
use etcd_k8s::{OpenshiftBackupRequest, OpenshiftBackupResult, write_openshift_backup};
use etcd_snapshot::{
    Catalog, Compression, CopyAction, CopyReport, CopyRequest, Identities, NoProgress, Progress,
    PruneReport, Recipients, RestoreRequest, RestoreResult, RestoreSource, RetentionPolicy,
    SaveRequest, SaveResult, SnapshotError, SnapshotStatus, StatusOptions, TrailerCheck,
    VerifyReport, copy_backups, delete_backup, list_backups, new_identity_file,
    open_restore_source, open_snapshot_file_decrypting, open_snapshot_object_decrypting,
    prune_backups, restore_snapshot, save_snapshot, verify_backup, write_save_metrics,
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
                    print(format, &VerifyView(report))?;
                    Ok(ExitStatus::Success)
                }
                Err(e @ SnapshotError::VerifyFailed { .. }) => {
                    eprintln!("etcdops: verify failed: {e}");
                    Ok(ExitStatus::Failure)
                }
                Err(e) => Err(e.into()),
            }
        }
        SnapshotCommand::Delete(args) => {
            let (store_url, name) = split_object_url(&args.url);
            let store = open_store(&store_url, &args.store_flags)?;
            let report = delete_backup(&store, &name).await?;
            print(format, &DeletedView(report.deleted))?;
            Ok(ExitStatus::Success)
        }
        SnapshotCommand::Prune(args) => {
            let store = open_store(&args.store, &args.store_flags)?;
            let report = prune_backups(
                &store,
                &policy(&args.retention),
                args.retention.orphan_grace,
                args.dry_run,
                Utc::now(),
            )
            .await?;
            print(format, &PruneView(report))?;
            Ok(ExitStatus::Success)
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
fn recipients(args: &SaveArgs) -> Result<Recipients> {
    let mut recipients = Recipients::none();
    for recipient in &args.encrypt_to {
        recipients.add(recipient, "--encrypt-to")?;
    }
    for path in &args.encrypt_to_file {
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
        dry_run: false,
    };
    let from = match (&args.from_data_dir, &args.source) {
        (Some(dir), _) => RestoreSource::DataDir(dir),
        (None, Some(source)) => RestoreSource::Snapshot(source),
        (None, None) => anyhow::bail!("give a snapshot FILE|URL or --from-data-dir DIR"),
    };
    let identities = identities(&args.identity)?;
    let (source, snapshot) = open_restore_source(
        &mut request,
        from,
        &store_options(&args.store_flags),
        &identities,
    )
    .await?;
    let result = restore_snapshot(&source, &snapshot, &request)?;
    if result.trailer == TrailerCheck::MismatchIgnored {
        eprintln!(
            "etcdops: warning: etcd's SHA-256 trailer does not match the db (--skip-hash-check)"
        );
    }
    for aside in &result.moved_aside {
        eprintln!(
            "etcdops: moved the previous dir aside to {}",
            aside.display()
        );
    }
    print(format, &RestoreView(result))?;
    Ok(ExitStatus::Success)
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct RestoreView(RestoreResult);

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
        let r = &self.0;
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
        if !self.0.changed {
            return vec![format!(
                "already restored: {} is member {} ({}) of cluster {} at revision {}; nothing changed",
                self.0.data_dir.display(),
                self.0.name,
                self.0.member_id,
                self.0.cluster_id,
                self.0.revision
            )];
        }
        vec![format!(
            "restored {} as member {} ({}) of cluster {} at revision {}",
            self.0.data_dir.display(),
            self.0.name,
            self.0.member_id,
            self.0.cluster_id,
            self.0.revision
        )]
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
    let request = SaveRequest {
        endpoint: args.endpoint.clone(),
        compression: match args.compression {
            CompressionArg::Zstd => Compression::Zstd,
            CompressionArg::None => Compression::None,
        },
        level: args.compression_level,
        labels: args.labels.iter().cloned().collect::<BTreeMap<_, _>>(),
        verify_after_upload: args.verify_after_upload,
        encrypt_to: recipients(args)?,
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
    print(format, &SaveView { result, openshift })?;
    let policy = policy(&args.retention);
    if !policy.is_empty() {
        let report = prune_backups(
            &store,
            &policy,
            args.retention.orphan_grace,
            false,
            Utc::now(),
        )
        .await?;
        for deleted in &report.deleted {
            eprintln!("etcdops: pruned {}", deleted.object);
        }
    }
    Ok(ExitStatus::Success)
}

fn policy(flags: &RetentionFlags) -> RetentionPolicy {
    RetentionPolicy {
        keep_last: flags.keep_last,
        keep_hourly: flags.keep_hourly,
        keep_daily: flags.keep_daily,
        keep_weekly: flags.keep_weekly,
        keep_monthly: flags.keep_monthly,
        max_age: flags.max_age,
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

fn open_store(url: &str, flags: &StoreFlags) -> Result<Store> {
    Ok(Store::open(url, &store_options(flags))?)
}

#[derive(serde::Serialize)]
struct SaveView {
    #[serde(flatten)]
    result: SaveResult,
    /// The pair for OpenShift's cluster-restore.sh, with --openshift-backup-dir.
    #[serde(skip_serializing_if = "Option::is_none")]
    openshift: Option<OpenshiftBackupResult>,
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
        self.0
            .entries
            .iter()
            .map(|e| {
                vec![
                    e.object.clone(),
                    human_bytes(e.bytes as i64),
                    match e.action {
                        CopyAction::Copied => "copied",
                        CopyAction::WouldCopy => "would copy",
                        CopyAction::AlreadyPresent => "already there",
                    }
                    .into(),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![format!(
            "{} backup(s) copied from {} to {}, {} already there",
            self.0.copied, self.0.source, self.0.destination, self.0.already_present
        )]
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
        self.0
            .backups
            .iter()
            .map(|b| {
                let m = &b.manifest;
                vec![
                    m.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                    m.cluster_id.to_string(),
                    m.revision.to_string(),
                    m.member_name.clone(),
                    human_bytes(m.db_size as i64),
                    human_bytes(m.object_size as i64),
                    b.complete.to_string(),
                    b.object.clone(),
                ]
            })
            .collect()
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
        self.0
            .orphans
            .iter()
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
        self.0.orphans.iter().map(|o| o.name.clone()).collect()
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct VerifyView(VerifyReport);

impl Render for VerifyView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.0;
        vec![
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
        ]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![format!("{}: OK", self.0.object)]
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
