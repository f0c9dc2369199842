//! `snapshot compact`: a chain (a full backup and its delta segments) made into one new full
//! backup at the chain's last published revision, offline: the segments' changes are appended
//! to the full backup's db with the bulk bbolt append a point-in-time restore uses (no etcd is
//! started), and the db, with etcd's SHA-256 trailer, is stored like any save of the cluster
//! (same naming, compression and encryption as the source, the manifest written last, after
//! the object was read back and checked), then verified as `snapshot verify` does.
//!
//! The old chain is left alone: retention drops it by its rules, and only once the compacted
//! backup exists (its manifest is written only after it verified). The compacted backup is
//! dated at the chain's last segment's `to_time` (the state it holds is what had been received
//! by then), so point-in-time planning to the chain's last revision (or that time) may use it,
//! while a point inside the chain still uses the chain. A `backup run` writing that chain is
//! not disturbed: it never continues a compacted backup whose chain is still in the store.

use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use etcd_common::{InvalidOption, OptionId};
use etcd_data::restore::{ReplayedDb, RestoreError, replay_into_db};
use etcd_store::Store;
use serde::{Deserialize, Serialize};

use crate::catalog::{BackupEntry, DeltaEntry, list_backups, object_name, verify_backup};
use crate::consolidate_lock::{Claim, ClaimKeeper, claim};
use crate::crypt::{Identities, Recipients};
use crate::delta::{DeltaReplay, PointInTime, fetch_delta_segment_at, segment_needs_reading};
use crate::error::SnapshotError;
use crate::manifest::{CompactedFrom, Compression, Manifest, backup_object_name};
use crate::opts::{CHAIN, WORK_DIR};
use crate::progress::Progress;
use crate::restore::open_checked_object;
use crate::save::{DEFAULT_ZSTD_LEVEL, SaveRequest, publish_manifest, unique_tag};
use crate::save_stream::file_into;
use crate::verify::{VerifyExpectation, VerifyReport, verify_object};

/// What to compact.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsolidateRequest {
    /// The chain's full backup, by its object name as `snapshot list` shows it (or that of
    /// its manifest). Default: the newest chain of the store's cluster (required when the
    /// store holds several clusters' backups).
    #[serde(default)]
    pub chain: Option<String>,
    /// Where the db is rebuilt (room for the full backup's db, its segments and the result
    /// is needed); default: the system's temporary directory. Removed afterwards.
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
}

/// What a compaction did.
#[derive(Debug, Clone, Serialize)]
pub struct ConsolidateResult {
    /// Whether a new backup was written (false: this chain, up to its last revision, was
    /// compacted already, and `manifest` is that backup's).
    pub changed: bool,
    /// The store's URL.
    pub store: String,
    /// The chain's full backup.
    pub source: String,
    /// Segments in the chain that were compacted (1 to `manifest.compacted_from.last_sequence`).
    pub segments: usize,
    /// Changes appended to the full backup's db.
    pub changes_applied: u64,
    /// Leases the changes use that the full backup lacked, added (IDs in hex).
    pub leases_recreated: Vec<String>,
    /// Leases of the full backup gone by the compacted revision, removed (IDs in hex).
    pub leases_removed: Vec<String>,
    /// Leases whose TTL was never recorded, taken off the keys that used them (IDs in hex).
    pub leases_detached: Vec<String>,
    /// The compacted backup's manifest (the one written, or the one found). With `busy`,
    /// nothing was compacted by this call and it is the chain's full backup's.
    pub manifest: Manifest,
    /// Name of its manifest object.
    pub manifest_name: String,
    /// The check of the stored backup after its manifest was written (absent when nothing
    /// was written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyReport>,
    /// What the caller should know (a broken chain compacted up to its break).
    pub warnings: Vec<String>,
    /// Set when another compaction of the same chain held it: this one wrote nothing
    /// (`changed: false`), and says who.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy: Option<String>,
    /// Wall time, in seconds.
    pub duration_seconds: f64,
}

fn invalid(option: OptionId, reason: String) -> RestoreError {
    SnapshotError::from(InvalidOption::new(option, reason)).into()
}

/// Bad input that is no option (the store, a positional argument): no hint.
fn invalid_input(what: &'static str, reason: String) -> RestoreError {
    SnapshotError::from(InvalidOption::input(what, reason)).into()
}

/// The chain `request` names, or the newest chain in the catalog (one cluster's).
fn choose_chain<'a>(
    store: &Store,
    backups: &'a [BackupEntry],
    request: &ConsolidateRequest,
) -> Result<&'a BackupEntry, RestoreError> {
    let complete = backups.iter().filter(|b| b.complete);
    if let Some(name) = &request.chain {
        let wanted = object_name(name);
        return complete.clone().find(|b| b.object == wanted).ok_or_else(|| {
            invalid(
                CHAIN,
                format!(
                    "{} holds no complete full backup named '{wanted}'; `snapshot list` shows the names",
                    store.url()
                ),
            )
        });
    }
    let mut clusters: Vec<String> = complete
        .clone()
        .map(|b| b.manifest.cluster_id.to_string())
        .collect();
    clusters.sort();
    clusters.dedup();
    if clusters.len() > 1 {
        return Err(invalid(
            CHAIN,
            format!(
                "{} holds backups of {} clusters ({}); name the chain to compact by its full backup, as `snapshot list` shows it",
                store.url(),
                clusters.len(),
                clusters.join(", "),
            ),
        ));
    }
    complete
        .filter(|b| b.chain.as_ref().is_some_and(|c| c.covered_segments > 0))
        .max_by_key(|b| (b.manifest.created_at, b.manifest.revision))
        .ok_or_else(|| {
            invalid_input(
                "STORE",
                format!(
                    "{} holds no chain to compact (no full backup with delta segments)",
                    store.url()
                ),
            )
        })
}

/// The part of a chain that can be replayed: its covered segments, where they reach
/// (revision, time), and a warning when the chain is broken after them.
struct Reach<'a> {
    segments: &'a [DeltaEntry],
    to_revision: i64,
    to_time: DateTime<Utc>,
    warning: Option<String>,
}

fn reach(full: &BackupEntry) -> Result<Reach<'_>, RestoreError> {
    let nothing = || {
        invalid(
            CHAIN,
            format!(
                "{} has no delta segment that can be replayed: nothing to compact",
                full.object
            ),
        )
    };
    let chain = full.chain.as_ref().ok_or_else(nothing)?;
    let segments = &full.deltas[..chain.covered_segments.min(full.deltas.len())];
    let last = segments.last().ok_or_else(nothing)?;
    let warning = (!chain.continuous).then(|| {
        format!(
            "the chain of {} is broken ({}); compacted up to revision {}, where it can be replayed",
            full.object,
            chain.problems.join("; "),
            chain.to_revision
        )
    });
    Ok(Reach {
        segments,
        to_revision: chain.to_revision,
        to_time: chain.to_time.unwrap_or(last.manifest.to_time),
        warning,
    })
}

/// A compacted backup of this chain up to `to_revision` already in the store.
fn already_compacted<'a>(
    backups: &'a [BackupEntry],
    full: &BackupEntry,
    to_revision: i64,
) -> Option<&'a BackupEntry> {
    backups.iter().find(|b| {
        b.complete
            && b.manifest.compacted_from.as_ref().is_some_and(|from| {
                from.full_backup == full.object && from.to_revision == to_revision
            })
    })
}

/// What a compaction of a chain would do, read from the store's catalog alone (nothing is
/// downloaded, nothing written): [`preview_consolidation`].
#[derive(Debug, Clone, Serialize)]
pub struct ConsolidatePreview {
    /// Whether a compaction would write a new backup (false: this chain, up to its last
    /// revision, is compacted already); what [`consolidate_chain`] would report.
    pub changed: bool,
    /// The store's URL.
    pub store: String,
    /// The chain's full backup.
    pub source: String,
    /// Its revision.
    pub source_revision: i64,
    /// Segments of the chain that would be compacted.
    pub segments: usize,
    /// The revision the compacted backup would hold (the chain's last replayable one).
    pub to_revision: i64,
    /// When every change up to `to_revision` had been received (the compacted backup's date).
    pub to_time: DateTime<Utc>,
    /// The compacted backup already in the store (object name), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compacted: Option<String>,
    /// What the caller should know (a broken chain would be compacted up to its break).
    pub warnings: Vec<String>,
}

/// Says what [`consolidate_chain`] would do with `request` (which chain, how many segments,
/// up to which revision, whether it is compacted already), from the catalog only: the same
/// choice of chain and the same reach, so its `changed` is what a real run would report
/// (unless the store changes in between).
pub async fn preview_consolidation(
    store: &Store,
    request: &ConsolidateRequest,
) -> Result<ConsolidatePreview, RestoreError> {
    let catalog = list_backups(store).await?;
    let full = choose_chain(store, &catalog.backups, request)?;
    let reach = reach(full)?;
    let done = already_compacted(&catalog.backups, full, reach.to_revision);
    Ok(ConsolidatePreview {
        changed: done.is_none(),
        store: store.url().to_string(),
        source: full.object.clone(),
        source_revision: full.manifest.revision,
        segments: reach.segments.len(),
        to_revision: reach.to_revision,
        to_time: reach.to_time,
        compacted: done.map(|b| b.object.clone()),
        warnings: reach.warning.into_iter().collect(),
    })
}

/// The zstd levels a save takes (and so a compaction keeps): a manifest is data from the
/// store, and a crafted level (zstd clamps anything above 22 to its slowest, most
/// memory-hungry level) must not choose how much a compaction uses.
const SAVE_LEVELS: std::ops::RangeInclusive<i32> = 1..=19;

/// How the compacted backup is stored: as its source is (compression, level, recipients),
/// with the warning when its manifest's level is outside what a save takes (then the
/// default level is used).
fn save_request_like(source: &Manifest) -> Result<(SaveRequest, Option<String>), RestoreError> {
    let mut encrypt_to = Recipients::none();
    if let Some(encryption) = &source.encryption {
        for key in &encryption.recipients {
            encrypt_to.add(key, &Manifest::name_for(&source.object))?;
        }
    }
    let (level, warning) = match source.compression_level {
        Some(level) if !SAVE_LEVELS.contains(&level) => (
            DEFAULT_ZSTD_LEVEL,
            Some(format!(
                "the manifest of {} records zstd level {level}, outside {}..={}: the compacted backup is stored at level {DEFAULT_ZSTD_LEVEL}",
                source.object,
                SAVE_LEVELS.start(),
                SAVE_LEVELS.end()
            )),
        ),
        Some(level) => (level, None),
        None => (DEFAULT_ZSTD_LEVEL, None),
    };
    let request = SaveRequest {
        compression: source.compression,
        level,
        labels: source.labels.clone(),
        verify_after_upload: true,
        encrypt_to,
        ..SaveRequest::default()
    };
    Ok((request, warning))
}

/// Compacts a chain of `store` into a new full backup (see the module's doc): the chain
/// `request` names, or the newest one. `identities` decrypt an encrypted chain; the new
/// backup is encrypted to the recipients its full backup's manifest records. Nothing is
/// deleted but what this call wrote and could not verify: a failure (or a kill) at any point
/// leaves the old chain as it was, and at most an orphan object without a manifest (which
/// `snapshot list` does not show as a backup and `snapshot prune` removes after its grace).
pub async fn consolidate_chain(
    store: &Store,
    request: &ConsolidateRequest,
    identities: &Identities,
    progress: &dyn Progress,
) -> Result<ConsolidateResult, RestoreError> {
    let started = Instant::now();
    let catalog = list_backups(store).await?;
    let full = choose_chain(store, &catalog.backups, request)?;
    let reach = reach(full)?;
    let mut result = ConsolidateResult {
        changed: false,
        store: store.url().to_string(),
        source: full.object.clone(),
        segments: reach.segments.len(),
        changes_applied: 0,
        leases_recreated: Vec::new(),
        leases_removed: Vec::new(),
        leases_detached: Vec::new(),
        manifest: full.manifest.clone(),
        manifest_name: String::new(),
        verify: None,
        warnings: reach.warning.iter().cloned().collect(),
        busy: None,
        duration_seconds: 0.0,
    };
    if let Some(done) = already_compacted(&catalog.backups, full, reach.to_revision) {
        result.manifest = done.manifest.clone();
        result.manifest_name = done.manifest_name.clone();
        result.duration_seconds = started.elapsed().as_secs_f64();
        return Ok(result);
    }
    // One compaction of a chain at a time; the one that does not hold it stops, changing
    // nothing (and one that finished meanwhile is found as above).
    let claim = match claim(store, &full.object).await? {
        Claim::Held(keeper) => keeper,
        Claim::Busy(who) => return Ok(busy(result, &who, started)),
    };
    let outcome = compact_claimed(
        store, full, reach, result, request, identities, progress, started, &claim,
    )
    .await;
    claim.release().await;
    outcome
}

/// [`consolidate_chain`] once the chain is claimed (`claim`): the compacted backup built,
/// stored, published while the claim is still ours, and verified.
#[allow(clippy::too_many_arguments)]
async fn compact_claimed(
    store: &Store,
    full: &BackupEntry,
    reach: Reach<'_>,
    mut result: ConsolidateResult,
    request: &ConsolidateRequest,
    identities: &Identities,
    progress: &dyn Progress,
    started: Instant,
    claim: &ClaimKeeper,
) -> Result<ConsolidateResult, RestoreError> {
    // A compaction that finished between the listing and the claim.
    if let Some(done) =
        already_compacted(&list_backups(store).await?.backups, full, reach.to_revision)
    {
        result.manifest = done.manifest.clone();
        result.manifest_name = done.manifest_name.clone();
        result.duration_seconds = started.elapsed().as_secs_f64();
        return Ok(result);
    }
    let (save, level_warning) = save_request_like(&full.manifest)?;
    result.warnings.extend(level_warning);
    let work_root = request.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    let work =
        etcd_common::private::temp_dir_in(&work_root, ".etcdops-compact-").map_err(|source| {
            RestoreError::Io {
                path: work_root.clone(),
                source,
            }
        })?;
    let (db_path, replayed, replay) = build_db(store, full, &reach, work.path(), identities)
        .await
        .map_err(|e| out_of_room(e, &work_root))?;
    result.changes_applied = replay.summary.changes_applied;
    result.leases_recreated = replay.summary.leases_recreated.clone();
    result.leases_removed = replay.summary.leases_removed.clone();
    result.leases_detached = replay.summary.leases_detached.clone();
    let from = CompactedFrom {
        full_backup: full.object.clone(),
        full_revision: full.manifest.revision,
        last_sequence: reach.segments.last().map_or(0, |d| d.manifest.sequence),
        to_revision: reach.to_revision,
        to_time: reach.to_time,
        highest_stamp: Some(CompactedFrom::highest_of(
            &full.manifest,
            reach.segments.iter().map(|d| &d.manifest),
        ))
        .filter(|h| h.time > reach.to_time),
    };
    let manifest = store_db(
        store,
        &full.manifest,
        from,
        &db_path,
        &replayed,
        &save,
        identities,
        progress,
    )
    .await?;
    drop(work);
    // Still ours: else another compaction took the chain over (its lock expired under a
    // store too slow to renew it), and this copy is dropped rather than published twice.
    if let Some(who) = claim.lost_to().await? {
        let _ = store.delete(&manifest.object).await;
        return Ok(busy(result, &who, started));
    }
    let manifest_name = publish_manifest(store, &manifest).await?;
    // Checked as `snapshot verify` checks it, from its manifest; a failure removes what
    // this call wrote (manifest first), never anything else.
    match verify_backup(store, &manifest.object, identities, progress).await {
        Ok(report) => result.verify = Some(report),
        Err(e) => {
            let _ = store.delete(&manifest_name).await;
            let _ = store.delete(&manifest.object).await;
            return Err(e.into());
        }
    }
    result.changed = true;
    result.manifest = manifest;
    result.manifest_name = manifest_name;
    result.duration_seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// The result of a compaction that stopped because another one holds the chain (`who`):
/// nothing written, `busy` says who.
fn busy(mut result: ConsolidateResult, who: &str, started: Instant) -> ConsolidateResult {
    let text = format!(
        "another compaction of the chain of {} is in progress ({who}); nothing was written: it publishes the compacted backup",
        result.source
    );
    result.warnings.push(text.clone());
    result.busy = Some(text);
    result.duration_seconds = started.elapsed().as_secs_f64();
    result
}

/// Whether `error` (or one of its causes) is a filesystem out of space.
fn is_out_of_space(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        let io = e.downcast_ref::<std::io::Error>();
        if io.is_some_and(|io| io.kind() == std::io::ErrorKind::StorageFull)
            || e.to_string().contains("(os error 28)")
        {
            return true;
        }
        cause = e.source();
    }
    false
}

/// A work dir that ran out of space, said as such with what to do (the bare error names
/// only the object being written).
fn out_of_room(error: RestoreError, work_root: &Path) -> RestoreError {
    if !is_out_of_space(&error) {
        return error;
    }
    invalid(
        WORK_DIR,
        format!(
            "{} ran out of space rebuilding the db ({error}); a compaction needs room for the full backup's db, its segments and the new db: give a work dir on a filesystem with more room",
            work_root.display()
        ),
    )
}

/// Fetches the full backup and the segments with changes (each checked against its
/// manifest, the chain checked for holes) into `work`, and writes the full backup's db with their changes appended.
async fn build_db(
    store: &Store,
    full: &BackupEntry,
    reach: &Reach<'_>,
    work: &Path,
    identities: &Identities,
) -> Result<(PathBuf, ReplayedDb, DeltaReplay), RestoreError> {
    let snapshot = open_checked_object(store, &full.object, Some(work), identities).await?;
    let mut replay = DeltaReplay::new(
        &full.object,
        PointInTime::Revision(reach.to_revision),
        full.manifest.revision,
    );
    // Every covered segment, in order: the replay checks that they follow each other
    // without a hole; one without changes is not downloaded.
    for delta in reach.segments {
        let bytes = if segment_needs_reading(&delta.manifest) {
            Some(fetch_delta_segment_at(store, &delta.object, &delta.manifest, identities).await?)
        } else {
            None
        };
        replay.add_segment(&delta.manifest, &delta.object, bytes.as_deref(), Some(work))?;
    }
    replay.check_reach()?;
    let db_path = work.join("compacted.db");
    let name = full.object.clone();
    let to = db_path.clone();
    // Page-by-page file work: off the async workers (a `backup run` compacting in the
    // background keeps publishing segments meanwhile).
    let (replayed, replay) = tokio::task::spawn_blocking(move || {
        let replayed = replay_into_db(&name, &snapshot, &to, &mut replay);
        replayed.map(|r| (r, replay))
    })
    .await
    .map_err(|e| RestoreError::Fetch(Box::new(std::io::Error::other(e.to_string()))))??;
    Ok((db_path, replayed, replay))
}

/// Uploads the db at `db_path` with its trailer as a new full backup of `source`'s cluster,
/// reads it back and checks it, and returns its manifest (not yet written).
#[allow(clippy::too_many_arguments)]
async fn store_db(
    store: &Store,
    source: &Manifest,
    from: CompactedFrom,
    db_path: &Path,
    replayed: &ReplayedDb,
    save: &SaveRequest,
    identities: &Identities,
    progress: &dyn Progress,
) -> Result<Manifest, RestoreError> {
    let object = backup_object_name(
        source.cluster_id,
        from.to_time,
        from.to_revision,
        save.compression,
        !save.encrypt_to.is_empty(),
        unique_tag(),
    );
    let mut upload = store
        .begin_upload(&object)
        .await
        .map_err(SnapshotError::from)?;
    let streamed = file_into(
        db_path,
        replayed.db_size,
        &replayed.db_sha256,
        &mut upload,
        save,
        progress,
    )
    .await;
    progress.finish();
    let streamed = match streamed {
        Ok(s) => s,
        Err(e) => {
            let _ = upload.abort().await;
            return Err(e.into());
        }
    };
    let info = upload.complete().await.map_err(SnapshotError::from)?;
    let mut manifest = Manifest {
        created_at: from.to_time,
        completed_at: from.to_time,
        revision: from.to_revision,
        db_size: streamed.db_size,
        db_size_in_use: streamed.db_size,
        db_sha256: streamed.db_sha256,
        object: object.clone(),
        object_sha256: streamed.object_sha256,
        object_size: streamed.object_size,
        compression: save.compression,
        compression_level: (save.compression == Compression::Zstd).then_some(save.level),
        verified_after_upload: false,
        tool: "etcdops".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        compacted_from: Some(from),
        follows: None,
        // The compacted copy is not locked (its source's retention stays on the source).
        object_lock: None,
        ..source.clone()
    };
    let checked = if info.size != manifest.object_size {
        Err(SnapshotError::VerifyFailed {
            name: object.clone(),
            reason: format!(
                "the store holds {} bytes but {} were written",
                info.size, manifest.object_size
            ),
        })
    } else {
        let expect = VerifyExpectation::from_manifest(&manifest);
        verify_object(store, &object, &expect, identities, progress).await
    };
    if let Err(e) = checked {
        let _ = store.delete(&object).await;
        return Err(e.into());
    }
    manifest.verified_after_upload = true;
    manifest.completed_at = Utc::now();
    Ok(manifest)
}

#[cfg(test)]
#[path = "consolidate_tests.rs"]
mod tests;
