//! Continuous backup (`backup run`): full backups with delta segments in between, until
//! stopped.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use etcd_core::ClusterConfig;
use etcd_snapshot::{
    CompactAfter, Compression, CopyTarget, RunEvent, RunObserver, RunRequest, SaveRequest,
    run_backups,
};

use super::save::{CopyRetention, Retention, second_store};
use super::settings::{IdentitySettings, StoreSettings, recipients};
use crate::error::Result;

/// What `backup run` does, and where.
#[derive(Debug, Clone)]
pub struct BackupRunRequest {
    /// The store.
    pub store: String,
    /// Time between full backups.
    pub full_every: Duration,
    /// Longest a change waits before it is published in a segment.
    pub delta_every: Duration,
    /// Cut a segment once it holds this many bytes of changes.
    pub segment_bytes: u64,
    /// Take full backups from this member only.
    pub endpoint: Option<String>,
    /// zstd level of the full backups.
    pub compression_level: i32,
    /// Labels recorded in each full backup's manifest.
    pub labels: BTreeMap<String, String>,
    /// Encrypt full backups and segments to these public keys.
    pub encrypt_to: Vec<String>,
    /// Encrypt to every public key of these files.
    pub encrypt_to_file: Vec<PathBuf>,
    /// Prune with these rules after each full backup.
    pub retention: Retention,
    /// Prune every cluster folder, not only the backed-up cluster's.
    pub all_clusters: bool,
    /// Keep Prometheus metrics here.
    pub metrics_file: Option<PathBuf>,
    /// Serve `/metrics`, `/healthz` and `/readyz` here while running.
    pub metrics_addr: Option<SocketAddr>,
    /// How long a full backup in progress may finish after a stop.
    pub stop_grace: Duration,
    /// How the store is reached.
    pub settings: StoreSettings,
    /// Compact the chain every this many segments, in the background; none: never.
    pub compact_after: Option<u64>,
    /// The identities that decrypt the chains for compaction (when they are encrypted).
    pub identity: IdentitySettings,
    /// Where compactions rebuild the db; default: the system's temporary directory.
    pub compact_work_dir: Option<PathBuf>,
    /// Set an S3 Object Lock retention of this mode on every full backup, segment and their
    /// manifests.
    pub object_lock_mode: Option<etcd_store::LockMode>,
    /// How long after its date each object's lock holds; the rules' `max_age` when unset.
    pub object_lock_retain: Option<Duration>,
    /// Copy every full backup and segment to this second store once published (reached
    /// with the same settings; credentials from the environment).
    pub copy_to: Option<String>,
    /// The second store's own retention; none given: `retention`'s rules.
    pub copy_retention: CopyRetention,
}

/// Runs continuous backup until `stop` resolves, telling `observer` each thing it did. Bad
/// rules, recipients or store URLs are refused before anything runs.
pub async fn backup_run(
    config: &ClusterConfig,
    request: &BackupRunRequest,
    observer: &dyn RunObserver,
    stop: impl Future<Output = ()>,
) -> Result<()> {
    let store = request.settings.open(&request.store)?;
    let compact_after = match request.compact_after {
        Some(segments) => Some(CompactAfter {
            segments,
            identities: request.identity.identities()?.0,
            work_dir: request.compact_work_dir.clone(),
        }),
        None => None,
    };
    let retention = request.retention.policy()?;
    let copy_to = match &request.copy_to {
        Some(url) => Some(CopyTarget {
            store: second_store(&request.settings, &store, url)?,
            retention: request.copy_retention.policy(&retention)?,
            orphan_grace: request.retention.orphan_grace,
        }),
        None => None,
    };
    let run = RunRequest {
        full_every: request.full_every,
        delta_every: request.delta_every,
        segment_bytes: request.segment_bytes,
        save: SaveRequest {
            endpoint: request.endpoint.clone(),
            compression: Compression::Zstd,
            level: request.compression_level,
            labels: request.labels.clone(),
            verify_after_upload: false,
            encrypt_to: recipients(&request.encrypt_to, &request.encrypt_to_file)?,
            follows: None,
            object_lock: super::save::lock_request(
                request.object_lock_mode,
                request.object_lock_retain,
                &request.retention,
            )?,
        },
        metrics_file: request.metrics_file.clone(),
        metrics_addr: request.metrics_addr,
        retention,
        orphan_grace: request.retention.orphan_grace,
        stop_grace: request.stop_grace,
        all_clusters: request.all_clusters,
        compact_after,
        copy_to,
        ..RunRequest::default()
    };
    if let Some(lock) = &run.save.object_lock {
        lock.check(&store)?;
    }
    run_backups(config, &store, &run, observer, stop).await?;
    Ok(())
}

/// What a `backup run` event says, as one sentence for a log line.
pub fn event_line(event: &RunEvent) -> String {
    match event {
        RunEvent::FullSaved { object, revision } => {
            format!("full backup {object} at revision {revision}")
        }
        RunEvent::SegmentPublished {
            object,
            changes,
            after_revision,
            to_revision,
            ..
        } if *changes == 0 || after_revision >= to_revision => {
            format!(
                "segment {object}: no changes (every change up to revision {to_revision} published)"
            )
        }
        RunEvent::SegmentPublished {
            object,
            changes,
            after_revision,
            to_revision,
            ..
        } => format!(
            "segment {object}: {changes} changes, revisions {}..={to_revision}",
            after_revision + 1
        ),
        RunEvent::LeasesRecorded { revision, leases } => {
            format!("leases at revision {revision}: {leases} recorded")
        }
        RunEvent::Gap {
            base,
            covered_revision,
            reason,
        } => format!(
            "gap: the chain of {base} ends at revision {covered_revision} ({reason}); a new full backup follows"
        ),
        RunEvent::FullBackupLost {
            base,
            covered_revision,
        } => format!(
            "full backup lost: {base} is gone from the store, so its chain (up to revision {covered_revision}) cannot be restored; a new full backup follows"
        ),
        RunEvent::Locked { lock, expires_at } => format!(
            "holding the lock {lock} (renewed while running; until {})",
            expires_at.format("%Y-%m-%dT%H:%M:%SZ")
        ),
        RunEvent::Stopping { reason } => format!("stopping: {reason}"),
        RunEvent::Reconnected { endpoint, reason } => {
            format!("watching {endpoint} now ({reason})")
        }
        RunEvent::Resumed {
            base,
            covered_revision,
        } => format!("continuing the chain of {base} after revision {covered_revision}"),
        RunEvent::Pruned { deleted } => format!("pruned {}", deleted.join(", ")),
        RunEvent::Compacted {
            object,
            source,
            segments,
            to_revision,
        } => format!(
            "compacted the chain of {source} ({segments} segments, up to revision {to_revision}) into {object}"
        ),
        RunEvent::Copied {
            destination,
            objects,
        } => format!("copied to {destination}: {}", objects.join(", ")),
        RunEvent::CopyFailed { destination, error } => {
            format!("warning: copy to {destination}: {error}")
        }
        RunEvent::CopyPruned {
            destination,
            deleted,
        } => format!("pruned in {destination}: {}", deleted.join(", ")),
        RunEvent::WatchBehind { revisions, seconds } => format!(
            "warning: the watch is {revisions} revisions behind the cluster, {seconds} s after it wrote the first of them: changes are published late (this member or host cannot keep up with the write rate)"
        ),
        RunEvent::Failed { error, .. } => format!("failed, will retry: {error}"),
    }
}
