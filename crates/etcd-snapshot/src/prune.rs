//! Pruning a store: the retention rules applied per cluster folder, chains still being
//! written kept, and what etcdops left behind (objects without a manifest, dangling segments,
//! temporary files of killed uploads) removed after a grace period. Only the store's own
//! layout ([`crate::layout`]) is ever looked at or deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use etcd_core::MemberId;
use etcd_store::{Store, StoreError};
use serde::Serialize;

use crate::catalog::{
    BackupEntry, Catalog, DEFAULT_ORPHAN_GRACE, DeltaEntry, chain_stem, delete_backup_with,
    list_backups, remove_chain_folder, verify_backup,
};
use crate::crypt::Identities;
use crate::delta::backup_stem;
use crate::error::{Result, SnapshotError};
use crate::layout::cluster_of;
use crate::manifest::Manifest;
use crate::object_lock::{describe, holding};
use crate::progress::NoProgress;
use crate::retention::{RetentionItem, RetentionPolicy, apply_retention};
use crate::run_lock::{RUN_LOCK_FILE, RunLock, run_lock_name};

/// What to prune and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneRequest {
    /// The rules, applied within each cluster's folder separately.
    pub policy: RetentionPolicy,
    /// Only this cluster's folder (a save prunes the cluster it saved); `None`: every
    /// cluster folder of the store, each by its own rules' outcome.
    pub cluster: Option<MemberId>,
    /// Leftovers (objects without a manifest, temporary upload files) older than this are
    /// removed; a chain whose newest segment is younger is kept whatever the rules say.
    pub orphan_grace: Duration,
    /// Say what would be deleted, delete nothing.
    pub dry_run: bool,
    /// Backups (object names) kept whatever the rules say: a save passes the one it has just
    /// written.
    pub protected: Vec<String>,
    /// Before deleting anything of a cluster, verify its newest complete backup (read it
    /// whole: SHA-256, etcd's trailer, the db); when that fails, nothing of that cluster is
    /// deleted and the report says why. Off: "complete" only means the object has the
    /// recorded size.
    pub verify_newest: bool,
    /// A save's check mode: a backup of this cluster is about to be written, and the rules
    /// count it (dated now, complete) as that cluster's newest, as the real save's prune will.
    /// It is never itself in the report.
    pub planned: Option<MemberId>,
}

/// The name the rules know a planned backup by (never a real object's name).
const PLANNED: &str = "(the backup this save would write)";

/// How far in the future a backup's `created_at` may be (clocks differ a little) before it
/// counts as dated in the future.
pub const FUTURE_TOLERANCE: Duration = Duration::from_secs(300);

impl Default for PruneRequest {
    fn default() -> Self {
        PruneRequest {
            policy: RetentionPolicy::default(),
            cluster: None,
            orphan_grace: DEFAULT_ORPHAN_GRACE,
            dry_run: false,
            protected: Vec::new(),
            verify_newest: false,
            planned: None,
        }
    }
}

/// One backup's fate in a prune.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PruneEntry {
    /// The backup object.
    pub object: String,
    /// When it was taken.
    pub created_at: DateTime<Utc>,
    /// Rules that keep it; empty when deleted.
    pub kept_by: Vec<String>,
    /// Delta segments of its chain, kept or deleted with it (absent from JSON when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub deltas: usize,
    /// Those segments' object names, by sequence (each with its manifest,
    /// `<object>.manifest.json`, as the backup's) (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a prune did (or, with `dry_run`, would do). Every name deleted is in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PruneReport {
    /// The store's URL.
    pub store: String,
    /// Whether nothing was deleted because it was a dry run.
    pub dry_run: bool,
    /// The cluster folders pruned.
    pub clusters: Vec<MemberId>,
    /// Backups kept, newest first.
    pub kept: Vec<PruneEntry>,
    /// Backups deleted (or to delete), newest first, each with its chain.
    pub deleted: Vec<PruneEntry>,
    /// Backups kept because their chain is being written (a live backup-run lock names it,
    /// or its newest segment is younger than the grace), whatever the rules say (absent from
    /// JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept_live: Vec<String>,
    /// Orphan objects older than the grace period, deleted (or to delete).
    pub orphans_deleted: Vec<String>,
    /// Delta segments whose full backup has no manifest, deleted (or to delete) (absent from
    /// JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dangling_deleted: Vec<String>,
    /// Temporary files of uploads never completed, older than the grace period, deleted (or
    /// to delete) (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unfinished_deleted: Vec<String>,
    /// Backups whose `created_at` is more than [`FUTURE_TOLERANCE`] after now (a clock was
    /// wrong when they were saved): kept, and not counted by the rules, so they push no
    /// other backup out (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub future_dated: Vec<String>,
    /// Newest backups that failed the verification `verify_newest` asked for: nothing of
    /// their cluster was deleted (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub verify_failed: Vec<String>,
    /// Backups the rules would delete but whose S3 Object Lock retention (recorded in their
    /// manifest or one of their chain's segments') still holds, and segments without their
    /// full backup that their own retention holds: kept until the date, when a prune deletes
    /// them (absent from JSON when none). Never an error: the run goes on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<HeldBackup>,
    /// What the user should know, one sentence each (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A backup the rules would delete (with its chain), or a segment whose full backup is gone,
/// that an Object Lock retention holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldBackup {
    /// The backup object.
    pub object: String,
    /// The retention's mode (`governance`, `compliance`).
    pub mode: etcd_store::LockMode,
    /// Until when it is held (UTC).
    pub retain_until: DateTime<Utc>,
}

/// Deletes the backups no rule keeps, with their chains; segments whose full backup is gone;
/// orphans older than `orphan_grace`; in every cluster folder of the store, the rules applied
/// per cluster. The same as [`prune_store`] with `cluster: None`.
pub async fn prune_backups(
    store: &Store,
    policy: &RetentionPolicy,
    orphan_grace: Duration,
    dry_run: bool,
    now: DateTime<Utc>,
) -> Result<PruneReport> {
    let request = PruneRequest {
        policy: policy.clone(),
        cluster: None,
        orphan_grace,
        dry_run,
        ..PruneRequest::default()
    };
    prune_store(store, &request, now).await
}

/// Whether `time` (RFC 3339) is more than `grace` before `now`; unreadable times are young.
fn older_than(time: &str, grace: Duration, now: DateTime<Utc>) -> bool {
    DateTime::parse_from_rfc3339(time)
        .map(|t| {
            now.signed_duration_since(t.with_timezone(&Utc))
                .to_std()
                .is_ok_and(|age| age > grace)
        })
        .unwrap_or(false)
}

/// The live run lock of a cluster folder, if any. A lock that cannot be read stops the prune:
/// it may protect a chain.
async fn live_lock(
    store: &Store,
    cluster: MemberId,
    now: DateTime<Utc>,
) -> Result<Option<RunLock>> {
    let name = run_lock_name(cluster);
    let bytes = match store.get_small(&name).await {
        Ok(bytes) => bytes,
        Err(StoreError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let lock = RunLock::from_json(&name, &bytes).map_err(|e| {
        let reason = match e {
            SnapshotError::BadManifest { reason, .. } => reason,
            other => other.to_string(),
        };
        SnapshotError::BadManifest {
            name: format!("{}/{name}", store.url()),
            reason: format!(
                "{reason}; this backup-run lock may protect a chain being written, so nothing \
                 was pruned (remove the lock once no backup run holds it)"
            ),
        }
    })?;
    Ok(lock.is_live(now).then_some(lock))
}

/// Why a backup's chain counts as being written, if it does.
fn live_reason(
    backup: &BackupEntry,
    lock: Option<&RunLock>,
    grace: Duration,
    now: DateTime<Utc>,
) -> Option<String> {
    if let Some(lock) = lock
        && lock.protected_backups().any(|b| b == backup.object)
    {
        return Some(format!(
            "chain being written (backup run on {} pid {}, lock until {})",
            lock.host,
            lock.pid,
            lock.expires_at.format("%Y-%m-%dT%H:%M:%SZ")
        ));
    }
    let chain = backup.chain.as_ref()?;
    // A segment from the future (clock skew) counts as young.
    let young = match now.signed_duration_since(chain.last_published).to_std() {
        Ok(age) => age <= grace,
        Err(_) => true,
    };
    young.then(|| {
        "chain published within the orphan grace (a backup run may still write it)".to_string()
    })
}

fn entry_of(backup: &BackupEntry, kept_by: Vec<String>) -> PruneEntry {
    PruneEntry {
        object: backup.object.clone(),
        created_at: backup.manifest.created_at,
        kept_by,
        deltas: backup.deltas.len(),
        segments: backup.deltas.iter().map(|d| d.object.clone()).collect(),
    }
}

/// Applies the rules to one cluster's backups and adds the live-chain protection.
fn decide(
    cluster: MemberId,
    backups: &[&BackupEntry],
    policy: &RetentionPolicy,
    lock: Option<&RunLock>,
    request: &PruneRequest,
    now: DateTime<Utc>,
    report: &mut PruneReport,
) -> Result<()> {
    // A backup dated in the future would count as the newest for ever: it is kept, and the
    // rules judge the others without it.
    let horizon = now + chrono::Duration::from_std(FUTURE_TOLERANCE).unwrap_or_default();
    let (future, judged): (Vec<&BackupEntry>, Vec<&BackupEntry>) = backups
        .iter()
        .copied()
        .partition(|b| b.manifest.created_at > horizon);
    for &backup in &future {
        let created = backup.manifest.created_at.format("%Y-%m-%dT%H:%M:%SZ");
        report.future_dated.push(backup.object.clone());
        report.warnings.push(format!(
            "backup {} is dated {created}, in the future (the clock of the host that saved \
             it was wrong?): kept, and not counted by the retention rules; delete it when it \
             is not needed",
            backup.object
        ));
        report.kept.push(entry_of(
            backup,
            vec![format!(
                "dated in the future ({created}): not judged by the rules"
            )],
        ));
    }
    let mut items: Vec<RetentionItem> = judged
        .iter()
        .map(|b| RetentionItem {
            name: b.object.clone(),
            created_at: b.manifest.created_at,
            complete: b.complete,
            revision: b.manifest.revision,
        })
        .collect();
    if request.planned == Some(cluster) {
        items.push(RetentionItem {
            name: PLANNED.into(),
            created_at: now,
            complete: true,
            // The backup about to be taken holds the newest data.
            revision: i64::MAX,
        });
    }
    let mut decided: Vec<(&BackupEntry, Vec<String>)> = Vec::new();
    for decision in apply_retention(policy, &items, now)? {
        let Some(backup) = backups.iter().find(|b| b.object == decision.name) else {
            continue;
        };
        let mut kept_by = decision.kept_by;
        if request.protected.contains(&backup.object) {
            kept_by.push("just written by this save".into());
        }
        if let Some(reason) = live_reason(backup, lock, request.orphan_grace, now) {
            report.kept_live.push(backup.object.clone());
            kept_by.push(reason);
        }
        if let Some(held) = holding(backup, now) {
            if kept_by.is_empty() {
                report.held.push(HeldBackup {
                    object: backup.object.clone(),
                    mode: held.mode,
                    retain_until: held.retain_until,
                });
            }
            kept_by.push(format!("held by its S3 Object Lock ({})", describe(&held)));
        }
        decided.push((backup, kept_by));
    }
    keep_chains_past_their_copies(&future, &mut decided);
    for (backup, kept_by) in decided {
        let entry = entry_of(backup, kept_by);
        if entry.kept_by.is_empty() {
            report.deleted.push(entry);
        } else {
            report.kept.push(entry);
        }
    }
    Ok(())
}

/// Keeps, beside a kept compacted backup (`snapshot compact`), the chain it was made from
/// when that chain reaches past it (it grew after the compaction): the copy is dated later
/// than the chain's full backup, so the rules may prefer it, but the revisions after it are
/// only in the chain. Repeated until nothing changes (a kept chain may itself be a copy).
fn keep_chains_past_their_copies<'a>(
    future: &[&'a BackupEntry],
    decided: &mut [(&'a BackupEntry, Vec<String>)],
) {
    loop {
        let kept: Vec<&BackupEntry> = future
            .iter()
            .copied()
            .chain(
                decided
                    .iter()
                    .filter(|(_, by)| !by.is_empty())
                    .map(|(b, _)| *b),
            )
            .collect();
        let mut changed = false;
        for (backup, kept_by) in decided.iter_mut() {
            if kept_by.is_empty()
                && let Some(reason) = reaches_past_a_kept_copy(backup, &kept)
            {
                kept_by.push(reason);
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// Why `backup`'s chain must stay while `kept` holds a compacted copy of it that ends
/// earlier than the chain.
fn reaches_past_a_kept_copy(backup: &BackupEntry, kept: &[&BackupEntry]) -> Option<String> {
    let chain = backup.chain.as_ref()?;
    let (copy, copied_to) = kept
        .iter()
        .filter_map(|k| {
            let from = k.manifest.compacted_from.as_ref()?;
            (from.full_backup == backup.object).then_some((k, from.to_revision))
        })
        .max_by_key(|(_, to)| *to)?;
    (chain.to_revision > copied_to).then(|| {
        format!(
            "its chain reaches revision {}, past its kept compacted copy {} (revision {copied_to})",
            chain.to_revision, copy.object
        )
    })
}

/// Prunes a store as `request` says: per cluster folder, the newest complete backup of each
/// cluster kept whatever the rules, chains being written kept with their full backups, and
/// leftovers of etcdops's own older than the grace removed. Nothing outside the layout is
/// touched.
pub async fn prune_store(
    store: &Store,
    request: &PruneRequest,
    now: DateTime<Utc>,
) -> Result<PruneReport> {
    // The same refusals apply_retention gives (no rule, a zero rule), before anything is read.
    apply_retention(&request.policy, &[], now)?;
    let catalog = list_backups(store).await?;
    let in_scope = |name: &str| {
        let cluster = cluster_of(name);
        cluster.is_some() && (request.cluster.is_none() || cluster == request.cluster)
    };
    let mut groups: BTreeMap<MemberId, Vec<&BackupEntry>> = BTreeMap::new();
    for backup in &catalog.backups {
        if let Some(cluster) = cluster_of(&backup.object)
            && in_scope(&backup.object)
        {
            groups.entry(cluster).or_default().push(backup);
        }
    }
    if let Some(cluster) = request.cluster
        && !groups.contains_key(&cluster)
        && !store
            .list_folders("")
            .await?
            .contains(&format!("etcd-{cluster}"))
    {
        return Err(SnapshotError::NoSuchCluster {
            cluster,
            store: catalog.store.clone(),
        });
    }
    let mut clusters: BTreeSet<MemberId> = groups.keys().copied().collect();
    clusters.extend(request.cluster);
    let mut report = PruneReport {
        store: catalog.store.clone(),
        dry_run: request.dry_run,
        clusters: clusters.iter().copied().collect(),
        kept: Vec::new(),
        deleted: Vec::new(),
        kept_live: Vec::new(),
        orphans_deleted: Vec::new(),
        dangling_deleted: Vec::new(),
        unfinished_deleted: Vec::new(),
        future_dated: Vec::new(),
        verify_failed: Vec::new(),
        held: Vec::new(),
        warnings: Vec::new(),
    };
    let mut locks: BTreeMap<MemberId, RunLock> = BTreeMap::new();
    for &cluster in &clusters {
        if let Some(lock) = live_lock(store, cluster, now).await? {
            locks.insert(cluster, lock);
        }
    }
    for (cluster, backups) in &groups {
        decide(
            *cluster,
            backups,
            &request.policy,
            locks.get(cluster),
            request,
            now,
            &mut report,
        )?;
    }
    keep_what_touches_foreign_entries(&catalog, &in_scope, &mut report);
    let mut dangling = dangling_to_delete(&catalog, &locks, &in_scope);
    dangling.retain(|d| {
        catalog.foreign_entry(&d.object).is_none()
            && catalog.foreign_entry(&d.manifest_name).is_none()
    });
    // A segment whose own retention still holds stays, reported as held.
    dangling.retain(
        |d| match d.manifest.object_lock.filter(|l| l.holds_at(now)) {
            Some(lock) => {
                report.held.push(HeldBackup {
                    object: d.object.clone(),
                    mode: lock.mode,
                    retain_until: lock.retain_until,
                });
                false
            }
            None => true,
        },
    );
    report.dangling_deleted = dangling.iter().map(|d| d.object.clone()).collect();
    report.orphans_deleted = catalog
        .orphans
        .iter()
        .filter(|o| in_scope(&o.name) && older_than(&o.last_modified, request.orphan_grace, now))
        .filter(|o| {
            catalog
                .foreign_entry(&Manifest::name_for(&o.name))
                .is_none()
        })
        .map(|o| o.name.clone())
        .collect();
    report.unfinished_deleted = catalog
        .unfinished_uploads
        .iter()
        .filter(|u| {
            in_scope(&u.target) && older_than(&u.info.last_modified, request.orphan_grace, now)
        })
        .map(|u| u.info.name.clone())
        .collect();
    if request.verify_newest {
        // The layout name each deletion belongs to (an unfinished upload: its target).
        let target_of = |name: &str| {
            catalog
                .unfinished_uploads
                .iter()
                .find(|u| u.info.name == name)
                .map(|u| u.target.clone())
        };
        let pending: BTreeSet<MemberId> = report
            .deleted
            .iter()
            .map(|e| e.object.clone())
            .chain(report.dangling_deleted.iter().cloned())
            .chain(report.orphans_deleted.iter().cloned())
            .chain(
                report
                    .unfinished_deleted
                    .iter()
                    .filter_map(|n| target_of(n)),
            )
            .filter_map(|n| cluster_of(&n))
            .collect();
        let failed = verify_newest(store, &groups, &pending, &mut report).await;
        let ok = |name: &str| cluster_of(name).is_none_or(|c| !failed.contains(&c));
        dangling.retain(|d| ok(&d.object));
        report.dangling_deleted.retain(|n| ok(n));
        report.orphans_deleted.retain(|n| ok(n));
        report
            .unfinished_deleted
            .retain(|n| target_of(n).is_none_or(|t| ok(&t)));
    }
    sort_newest_first(&mut report.kept);
    sort_newest_first(&mut report.deleted);
    if !request.dry_run {
        apply(store, &mut report, &dangling).await?;
    }
    Ok(report)
}

/// Verifies the newest complete backup of each cluster in `pending` (those with deletions
/// pending); for each one that fails (or cannot be read), moves that cluster's deletions back
/// to kept, records the failure and returns the cluster, so that nothing else of it is
/// deleted either.
async fn verify_newest(
    store: &Store,
    groups: &BTreeMap<MemberId, Vec<&BackupEntry>>,
    pending: &BTreeSet<MemberId>,
    report: &mut PruneReport,
) -> BTreeSet<MemberId> {
    let mut failed = BTreeSet::new();
    for (&cluster, backups) in groups {
        let newest = backups
            .iter()
            .filter(|b| b.complete && !report.future_dated.contains(&b.object))
            .max_by(|a, b| {
                a.manifest
                    .created_at
                    .cmp(&b.manifest.created_at)
                    .then(a.object.cmp(&b.object))
            });
        let Some(newest) = newest else { continue };
        if !pending.contains(&cluster) {
            continue; // Nothing of it to delete: no need to read it.
        }
        let problem =
            match verify_backup(store, &newest.object, &Identities::none(), &NoProgress).await {
                Ok(_) => continue,
                // Encrypted, no identity here: its stored bytes matched the manifest's SHA-256.
                Err(SnapshotError::Data(etcd_data::Error::Encrypted {
                    stored_ok: true, ..
                })) => continue,
                Err(e) => e.to_string(),
            };
        failed.insert(cluster);
        report.verify_failed.push(newest.object.clone());
        report.warnings.push(format!(
            "the newest backup of cluster {cluster} failed verification, so nothing of that \
             cluster was pruned: {problem}"
        ));
        let (skipped, deleted): (Vec<PruneEntry>, Vec<PruneEntry>) =
            std::mem::take(&mut report.deleted)
                .into_iter()
                .partition(|e| cluster_of(&e.object) == Some(cluster));
        report.deleted = deleted;
        report.kept.extend(skipped.into_iter().map(|mut e| {
            e.kept_by
                .push("not pruned: the newest backup of its cluster failed verification".into());
            e
        }));
    }
    failed
}

/// Keeps every backup the rules would delete whose names (object, manifest, chain) are held
/// by a foreign entry (a symbolic link, a FIFO, a dir named like an object, in a local store):
/// etcdops deletes only what it wrote. Each foreign entry of the pruned clusters is a warning.
fn keep_what_touches_foreign_entries(
    catalog: &Catalog,
    in_scope: &dyn Fn(&str) -> bool,
    report: &mut PruneReport,
) {
    let folder_in_scope = |name: &str| {
        let folder = name.split('/').next().unwrap_or_default();
        in_scope(&format!("{folder}/{RUN_LOCK_FILE}"))
    };
    for entry in catalog
        .foreign_entries
        .iter()
        .filter(|e| folder_in_scope(&e.name))
    {
        report.warnings.push(format!(
            "{} is {}, not a file etcdops wrote: never read, copied or deleted; move it out \
             of the store if it is not meant to be there",
            entry.name, entry.kind
        ));
    }
    let (keep, delete): (Vec<PruneEntry>, Vec<PruneEntry>) = std::mem::take(&mut report.deleted)
        .into_iter()
        .partition(|e| catalog.touches_foreign(&e.object));
    report.deleted = delete;
    for mut entry in keep {
        entry
            .kept_by
            .push("holds an entry that is not a file etcdops wrote (see the warnings)".into());
        report.kept.push(entry);
    }
}

/// Deletes what `report` decided, `dangling` being its dangling segments. What is already
/// gone (a concurrent prune deleted it first) is no error. An orphan whose manifest appeared
/// since the listing (a save finished meanwhile) is a backup now: kept, and dropped from the
/// report.
async fn apply(store: &Store, report: &mut PruneReport, dangling: &[&DeltaEntry]) -> Result<()> {
    for entry in &report.deleted {
        match delete_backup_with(store, &entry.object, false).await {
            Ok(_) | Err(SnapshotError::Store(StoreError::NotFound { .. })) => {}
            Err(e) => return Err(e),
        }
    }
    let mut stems = BTreeSet::new();
    for delta in dangling {
        store.delete(&delta.manifest_name).await?;
        store.delete(&delta.object).await?;
        stems.extend(chain_stem(&delta.object));
    }
    for stem in stems {
        remove_chain_folder(store, stem).await;
    }
    let mut orphans_deleted = Vec::new();
    for orphan in std::mem::take(&mut report.orphans_deleted) {
        if store.head(&Manifest::name_for(&orphan)).await?.is_some() {
            continue;
        }
        store.delete(&orphan).await?;
        orphans_deleted.push(orphan);
    }
    report.orphans_deleted = orphans_deleted;
    for unfinished in &report.unfinished_deleted {
        store.discard_unfinished(unfinished).await?;
    }
    Ok(())
}

fn sort_newest_first(entries: &mut [PruneEntry]) {
    entries.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then(b.object.cmp(&a.object))
    });
}

/// Segments whose full backup has no manifest, newest sequence first (a chain shortens from
/// its end), except those of a chain a live lock names.
fn dangling_to_delete<'a>(
    catalog: &'a Catalog,
    locks: &BTreeMap<MemberId, RunLock>,
    in_scope: &dyn Fn(&str) -> bool,
) -> Vec<&'a DeltaEntry> {
    let protected: BTreeSet<&str> = locks
        .values()
        .flat_map(|l| l.protected_backups())
        .map(backup_stem)
        .collect();
    let mut dangling: Vec<&DeltaEntry> = catalog
        .dangling_deltas
        .iter()
        .filter(|d| in_scope(&d.object))
        .filter(|d| {
            !protected
                .iter()
                .any(|stem| d.object.starts_with(&format!("{stem}.deltas/")))
        })
        .collect();
    dangling.sort_by(|a, b| {
        b.manifest
            .sequence
            .cmp(&a.manifest.sequence)
            .then(b.object.cmp(&a.object))
    });
    dangling
}

#[cfg(test)]
#[path = "prune_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "prune_guard_tests.rs"]
mod guard_tests;
