//! The backup catalog over a store: list (from manifests), verify, delete, prune.
//! A backup exists only when its manifest exists; a backup object without one is an orphan
//! (a save that crashed, or one still finishing), removed by `prune` after a grace period.
//!
//! A full backup with the delta segments published after it is a *chain*: segment 1 starts
//! after the full's revision, each next one after the previous one's end. The catalog shows
//! each full with its segments and the revision range they cover without a gap; `delete` and
//! `prune` treat a full and its segments as one unit and remove segments newest first, so an
//! interrupted removal leaves a shorter chain that is still continuous, never segments
//! without their full.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use etcd_store::{ObjectInfo, Store, UnfinishedUpload};
use futures::StreamExt;
use serde::Serialize;

use crate::crypt::Identities;
use crate::delta::{
    DELTA_SUFFIX, DELTAS_DIR, DeltaManifest, backup_stem, decode_segment, deltas_prefix,
    fetch_stored, is_delta_manifest, is_delta_object,
};
use crate::error::{Result, SnapshotError};
use crate::layout::{LayoutKind, LayoutListing, classify, list_layout};
use crate::manifest::{ENCRYPTED_SUFFIX, MANIFEST_SUFFIX, Manifest};
use crate::progress::Progress;
use crate::verify::{VerifyExpectation, VerifyReport, verify_object};

// `backup run` (delta/run.rs) prunes through this path.

/// Default age after which `prune` removes orphans.
pub const DEFAULT_ORPHAN_GRACE: Duration = Duration::from_secs(3600);

/// Manifests read at once while listing.
const MANIFEST_READS: usize = 16;

/// One backup: its manifest and whether its object is in the store, with its chain of delta
/// segments when it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackupEntry {
    /// Object name in the store.
    pub object: String,
    /// Manifest name in the store.
    pub manifest_name: String,
    /// Whether the object is present with the size the manifest records.
    pub complete: bool,
    /// The manifest.
    pub manifest: Manifest,
    /// The delta segments published after it, by sequence (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deltas: Vec<DeltaEntry>,
    /// What its segments cover; `None` when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainSummary>,
}

/// One delta segment: its manifest and whether its object is in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeltaEntry {
    /// Object name of the segment in the store.
    pub object: String,
    /// Its manifest's name.
    pub manifest_name: String,
    /// Whether the object is present with the size the manifest records.
    pub complete: bool,
    /// The manifest.
    pub manifest: DeltaManifest,
}

/// What a full backup's delta segments cover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainSummary {
    /// Segments published (every one listed, continuous or not).
    pub segments: usize,
    /// Segments of the unbroken run from the full backup (the ones a restore can replay).
    pub covered_segments: usize,
    /// Changes in all the segments.
    pub changes: u64,
    /// The full backup's revision: the chain holds changes after it.
    pub after_revision: i64,
    /// The last revision covered without a gap from the full backup (its revision when
    /// segment 1 is unusable).
    pub to_revision: i64,
    /// When the first covered segment was opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_time: Option<DateTime<Utc>>,
    /// When every change up to `to_revision` had been received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_time: Option<DateTime<Utc>>,
    /// When the newest segment was published.
    pub last_published: DateTime<Utc>,
    /// Whether every segment continues the one before without a gap.
    pub continuous: bool,
    /// What breaks the chain, one sentence each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// A manifest that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokenManifest {
    /// Its name.
    pub name: String,
    /// Why.
    pub error: String,
}

/// Everything in a store, as backups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Catalog {
    /// The store's URL.
    pub store: String,
    /// Backups, newest first.
    pub backups: Vec<BackupEntry>,
    /// Backup objects (full or delta) without a manifest.
    pub orphans: Vec<ObjectInfo>,
    /// Manifests that could not be read.
    pub broken_manifests: Vec<BrokenManifest>,
    /// Delta segments whose full backup has no manifest (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dangling_deltas: Vec<DeltaEntry>,
    /// Temporary files of uploads into the layout that never completed (a killed save),
    /// removed by `prune` after the grace period (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unfinished_uploads: Vec<UnfinishedUpload>,
}

fn is_backup_object(name: &str) -> bool {
    if is_delta_object(name) {
        return true;
    }
    let name = name.strip_suffix(ENCRYPTED_SUFFIX).unwrap_or(name);
    name.ends_with(".db") || name.ends_with(".db.zst")
}

/// The stem of the full backup a segment (or anything under its `.deltas/`) belongs to.
pub(crate) fn chain_stem(name: &str) -> Option<&str> {
    name.find(DELTAS_DIR).map(|at| &name[..at])
}

/// The sequence number a segment's name starts with; `u64::MAX` when it has none.
fn segment_sequence(name: &str) -> u64 {
    let file = name.rsplit('/').next().unwrap_or(name);
    let file = file.strip_suffix(MANIFEST_SUFFIX).unwrap_or(file);
    file.split('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX)
}

fn sort_deltas(deltas: &mut [DeltaEntry]) {
    deltas.sort_by(|a, b| {
        a.manifest
            .sequence
            .cmp(&b.manifest.sequence)
            .then(a.object.cmp(&b.object))
    });
}

/// What [`analyse_chain`] found.
struct ChainAnalysis {
    summary: ChainSummary,
    /// How many of the sorted segments, from the first, form the unbroken run.
    run: usize,
}

/// Judges the segments (sorted by sequence) of the full backup `full`; `None` when none.
/// Segments belong to the full backup they are stored under (its `.deltas/`), whatever
/// their manifests' `base` says: names there are relative to the store they were saved to.
fn analyse_chain(full: &Manifest, deltas: &[DeltaEntry]) -> Option<ChainAnalysis> {
    let revision = full.revision;
    let last_published = deltas.iter().map(|d| d.manifest.completed_at).max()?;
    let mut problems = Vec::new();
    let mut run = 0;
    let mut broken = false;
    let mut expected = 1u64;
    let mut previous: Option<(u64, i64)> = None;
    for d in deltas {
        let m = &d.manifest;
        let seq = m.sequence;
        let before = problems.len();
        let mut gap = false;
        if seq == 0 {
            problems.push(format!(
                "segment {} has sequence 0, but sequences start at 1",
                d.object
            ));
        } else if seq < expected {
            problems.push(format!(
                "sequence {seq} is used twice (again by {})",
                d.object
            ));
        } else if seq > expected {
            gap = true;
            problems.push(if seq == expected + 1 {
                format!("segment {expected} is missing")
            } else {
                format!("segments {expected} to {} are missing", seq - 1)
            });
        }
        if m.base_revision != revision {
            problems.push(format!(
                "segment {seq} records base revision {}, but the full backup is at revision {revision}",
                m.base_revision
            ));
        }
        if !gap {
            match previous {
                None if m.after_revision != revision => problems.push(format!(
                    "segment {seq} starts after revision {}, but the full backup is at revision {revision}",
                    m.after_revision
                )),
                Some((prev_seq, prev_to)) if m.after_revision != prev_to => {
                    problems.push(format!(
                        "segment {seq} starts after revision {}, but segment {prev_seq} ends at revision {prev_to}",
                        m.after_revision
                    ))
                }
                _ => {}
            }
        }
        if m.to_revision < m.after_revision {
            problems.push(format!(
                "segment {seq} ends at revision {}, before it starts (after {})",
                m.to_revision, m.after_revision
            ));
        }
        if !d.complete {
            problems.push(format!(
                "segment {seq}'s object {} is missing or not the {} bytes its manifest records",
                d.object, m.object_size
            ));
        }
        if problems.len() > before {
            broken = true;
        } else if !broken {
            run += 1;
        }
        expected = expected.max(seq.saturating_add(1));
        previous = Some((seq, m.to_revision));
    }
    let covered = &deltas[..run];
    Some(ChainAnalysis {
        summary: ChainSummary {
            segments: deltas.len(),
            covered_segments: run,
            changes: deltas.iter().map(|d| d.manifest.changes).sum(),
            after_revision: revision,
            to_revision: covered.last().map_or(revision, |d| d.manifest.to_revision),
            from_time: covered.first().map(|d| d.manifest.from_time),
            to_time: covered.last().map(|d| d.manifest.to_time),
            last_published,
            continuous: problems.is_empty(),
            problems,
        },
        run,
    })
}

enum Loaded {
    Full(Result<Manifest>),
    Delta(Result<DeltaManifest>),
}

/// Lists the backups in a store, newest first, each with its chain of delta segments, with
/// orphans, unreadable manifests, segments whose full backup has no manifest and unfinished
/// uploads. Only the store's own layout is read ([`crate::layout`]): names outside it, nested
/// stores included, are not looked at. A local store whose directory does not exist is an
/// error ([`etcd_store::StoreError::StoreMissing`]).
pub async fn list_backups(store: &Store) -> Result<Catalog> {
    if !store.exists().await? {
        return Err(etcd_store::StoreError::StoreMissing {
            store: store.url().to_string(),
        }
        .into());
    }
    read_catalog(store).await
}

/// [`list_backups`] without the existence check: a store that does not exist yet is empty
/// (a copy's destination).
pub(crate) async fn read_catalog(store: &Store) -> Result<Catalog> {
    let LayoutListing {
        objects,
        unfinished,
    } = list_layout(store).await?;
    let by_name: HashMap<&str, &ObjectInfo> =
        objects.iter().map(|o| (o.name.as_str(), o)).collect();
    let manifest_names: Vec<&str> = objects
        .iter()
        .map(|o| o.name.as_str())
        .filter(|n| {
            matches!(
                classify(n).map(|l| l.kind),
                Some(LayoutKind::FullManifest | LayoutKind::SegmentManifest)
            )
        })
        .collect();
    let loaded: Vec<Loaded> = futures::stream::iter(manifest_names.iter().map(|name| async move {
        let bytes = store.get_small(name).await;
        if is_delta_manifest(name) {
            Loaded::Delta(
                bytes
                    .map_err(Into::into)
                    .and_then(|b| DeltaManifest::from_json(name, &b)),
            )
        } else {
            Loaded::Full(
                bytes
                    .map_err(Into::into)
                    .and_then(|b| Manifest::from_json(name, &b)),
            )
        }
    }))
    .buffered(MANIFEST_READS)
    .collect()
    .await;
    let mut backups = Vec::new();
    let mut deltas = Vec::new();
    let mut broken = Vec::new();
    let mut described: HashSet<String> = HashSet::new();
    for (name, loaded) in manifest_names.iter().zip(loaded) {
        let object = name.trim_end_matches(MANIFEST_SUFFIX).to_string();
        described.insert(object.clone());
        let present = |size: u64| by_name.get(object.as_str()).is_some_and(|o| o.size == size);
        let failure = match loaded {
            Loaded::Full(Ok(manifest)) => {
                backups.push(BackupEntry {
                    complete: present(manifest.object_size),
                    object,
                    manifest_name: name.to_string(),
                    manifest,
                    deltas: Vec::new(),
                    chain: None,
                });
                continue;
            }
            Loaded::Delta(Ok(manifest)) => {
                deltas.push(DeltaEntry {
                    complete: present(manifest.object_size),
                    object,
                    manifest_name: name.to_string(),
                    manifest,
                });
                continue;
            }
            Loaded::Full(Err(e)) | Loaded::Delta(Err(e)) => e,
        };
        broken.push(BrokenManifest {
            name: name.to_string(),
            error: failure.to_string(),
        });
    }
    backups.sort_by(|a, b| {
        b.manifest
            .created_at
            .cmp(&a.manifest.created_at)
            .then(b.object.cmp(&a.object))
    });
    // Segments join the full backup whose stem they live under.
    let mut by_stem: HashMap<&str, usize> = HashMap::new();
    for (i, b) in backups.iter().enumerate() {
        by_stem.entry(backup_stem(&b.object)).or_insert(i);
    }
    // A full backup whose manifest cannot be read keeps its segments: they are not dangling.
    let unreadable: HashSet<&str> = broken
        .iter()
        .filter(|b| !is_delta_manifest(&b.name))
        .map(|b| backup_stem(b.name.trim_end_matches(MANIFEST_SUFFIX)))
        .collect();
    let mut chains: BTreeMap<usize, Vec<DeltaEntry>> = BTreeMap::new();
    let mut dangling = Vec::new();
    for delta in deltas {
        let stem = chain_stem(&delta.object).unwrap_or_default();
        match by_stem.get(stem) {
            Some(&i) => chains.entry(i).or_default().push(delta),
            None if unreadable.contains(stem) => {}
            None => dangling.push(delta),
        }
    }
    for (i, mut chain) in chains {
        sort_deltas(&mut chain);
        let backup = &mut backups[i];
        backup.chain = analyse_chain(&backup.manifest, &chain).map(|a| a.summary);
        backup.deltas = chain;
    }
    sort_deltas(&mut dangling);
    dangling.sort_by(|a, b| chain_stem(&a.object).cmp(&chain_stem(&b.object)));
    let orphans = objects
        .iter()
        .filter(|o| {
            matches!(
                classify(&o.name).map(|l| l.kind),
                Some(LayoutKind::Full | LayoutKind::Segment)
            ) && !described.contains(&o.name)
        })
        .cloned()
        .collect();
    Ok(Catalog {
        store: store.url().to_string(),
        backups,
        orphans,
        broken_manifests: broken,
        dangling_deltas: dangling,
        unfinished_uploads: unfinished,
    })
}

/// The object a user named: an object name or its manifest's name.
pub fn object_name(name: &str) -> &str {
    name.strip_suffix(MANIFEST_SUFFIX).unwrap_or(name)
}

/// Whether a name a user gave is a delta segment (or its manifest's), also when the store
/// was opened inside a chain's `.deltas/` folder.
pub(crate) fn names_segment(object: &str) -> bool {
    let name = object.strip_suffix(ENCRYPTED_SUFFIX).unwrap_or(object);
    is_delta_object(object) || name.ends_with(DELTA_SUFFIX)
}

/// The full backup a segment belongs to: the full backup object found beside its
/// `.deltas/`, else its manifest's `base`.
async fn full_of_segment(store: &Store, segment: &str) -> Option<String> {
    if let Some(stem) = chain_stem(segment)
        && let Ok(found) = store.list(stem).await
        && let Some(full) = found.iter().find(|o| {
            !is_delta_object(&o.name) && is_backup_object(&o.name) && backup_stem(&o.name) == stem
        })
    {
        return Some(full.name.clone());
    }
    let bytes = store.get_small(&Manifest::name_for(segment)).await.ok()?;
    DeltaManifest::from_json(segment, &bytes)
        .ok()
        .map(|m| m.base)
}

/// The error for naming a single segment where a full backup is needed.
async fn segment_named(store: &Store, segment: &str, verb: &str, effect: &str) -> SnapshotError {
    let full = match full_of_segment(store, segment).await {
        Some(full) => format!("its full backup '{full}'"),
        None => "its full backup (the object beside its .deltas/ folder)".into(),
    };
    SnapshotError::InvalidOption {
        option: "backup",
        reason: format!(
            "'{segment}' is a delta segment of a chain; {verb} {full} instead, {effect}"
        ),
    }
}

/// Verifies one backup. With a manifest, everything it records is checked; a bare object
/// (no manifest) is checked for etcd's trailer and sound bbolt meta pages. An age-encrypted
/// backup is decrypted with `identities`; without one, only its stored bytes can be checked
/// and [`crate::SnapshotError::Encrypted`] says so. Its delta segments are checked by
/// [`verify_chain`]; naming a segment is refused.
pub async fn verify_backup(
    store: &Store,
    name: &str,
    identities: &Identities,
    progress: &dyn Progress,
) -> Result<VerifyReport> {
    let object = object_name(name);
    if names_segment(object) {
        return Err(segment_named(store, object, "verify", "which checks the whole chain").await);
    }
    let manifest_name = Manifest::name_for(object);
    let expectation = match store.head(&manifest_name).await? {
        Some(_) => {
            let bytes = store.get_small(&manifest_name).await?;
            VerifyExpectation::from_manifest(&Manifest::from_json(&manifest_name, &bytes)?)
        }
        None => VerifyExpectation::default(),
    };
    verify_object(store, object, &expectation, identities, progress).await
}

/// One segment's result in [`verify_chain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentCheck {
    /// Position in the chain.
    pub sequence: u64,
    /// The segment object.
    pub object: String,
    /// It holds the changes after this revision...
    pub after_revision: i64,
    /// ...up to and including this one.
    pub to_revision: i64,
    /// Changes its manifest records.
    pub changes: u64,
    /// Whether the stored bytes match the manifest's size and SHA-256.
    pub stored_ok: bool,
    /// Whether its records were read and checked (false when encrypted and no identity was
    /// given, or when the stored bytes were already wrong).
    pub records_checked: bool,
    /// What is wrong with it, when something is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The outcome of [`verify_chain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainReport {
    /// The full backup object.
    pub object: String,
    /// Whether every segment checked out and the chain has no gap.
    pub ok: bool,
    /// Each segment, by sequence.
    pub segments: Vec<SegmentCheck>,
    /// The full backup's revision.
    pub after_revision: i64,
    /// The last revision verified without a gap from the full backup.
    pub to_revision: i64,
    /// Everything wrong, one sentence each.
    pub problems: Vec<String>,
}

/// The reason in an error about one segment, without the name it already carries.
fn segment_problem(seq: u64, object: &str, e: &SnapshotError) -> String {
    match e {
        SnapshotError::VerifyFailed { reason, .. } => {
            format!("segment {seq} ({object}) failed verification: {reason}")
        }
        other => format!("segment {seq}: {other}"),
    }
}

/// Verifies the chain of delta segments of the full backup `name` (its object or manifest):
/// every segment's stored size and SHA-256 against its manifest and, when it is not encrypted
/// or `identities` can decrypt it, its records (see [`crate::fetch_delta_segment`]); and the
/// chain's continuity: sequences 1..n, each segment starting where the one before ends, the
/// first at the full backup's revision. The full backup itself is checked by
/// [`verify_backup`]. A full backup without segments gives an empty, `ok` report.
pub async fn verify_chain(
    store: &Store,
    name: &str,
    identities: &Identities,
) -> Result<ChainReport> {
    let object = object_name(name);
    if names_segment(object) {
        return Err(segment_named(store, object, "verify", "which checks the whole chain").await);
    }
    let manifest_name = Manifest::name_for(object);
    let full = Manifest::from_json(&manifest_name, &store.get_small(&manifest_name).await?)?;
    let listed = store.list(&deltas_prefix(object)).await?;
    let sizes: HashMap<&str, u64> = listed.iter().map(|o| (o.name.as_str(), o.size)).collect();
    let mut problems = Vec::new();
    let mut deltas = Vec::new();
    for info in listed.iter().filter(|o| is_delta_manifest(&o.name)) {
        let parsed = match store.get_small(&info.name).await {
            Ok(bytes) => DeltaManifest::from_json(&info.name, &bytes),
            Err(e) => Err(e.into()),
        };
        match parsed {
            Ok(manifest) => {
                let segment = object_name(&info.name).to_string();
                deltas.push(DeltaEntry {
                    complete: sizes.get(segment.as_str()) == Some(&manifest.object_size),
                    object: segment,
                    manifest_name: info.name.clone(),
                    manifest,
                });
            }
            Err(e) => problems.push(format!("a segment manifest cannot be read: {e}")),
        }
    }
    sort_deltas(&mut deltas);
    let (run, continuity) = match analyse_chain(&full, &deltas) {
        Some(analysis) => (analysis.run, analysis.summary.problems),
        None => (0, Vec::new()),
    };
    problems.extend(continuity);
    let mut segments = Vec::new();
    for d in &deltas {
        let m = &d.manifest;
        let mut check = SegmentCheck {
            sequence: m.sequence,
            object: d.object.clone(),
            after_revision: m.after_revision,
            to_revision: m.to_revision,
            changes: m.changes,
            stored_ok: false,
            records_checked: false,
            problem: None,
        };
        // A missing or short object is a continuity problem already.
        if d.complete {
            match fetch_stored(store, &d.object, m).await {
                Ok(stored) => {
                    check.stored_ok = true;
                    match decode_segment(&d.object, m, &stored, identities) {
                        Ok(_) => check.records_checked = true,
                        Err(SnapshotError::Encrypted { .. }) => {}
                        Err(e) => check.problem = Some(segment_problem(m.sequence, &d.object, &e)),
                    }
                }
                Err(e @ SnapshotError::Store(etcd_store::StoreError::NotFound { .. }))
                | Err(e @ SnapshotError::VerifyFailed { .. }) => {
                    check.problem = Some(segment_problem(m.sequence, &d.object, &e));
                }
                Err(e) => return Err(e),
            }
        } else {
            check.problem = Some(format!(
                "segment {}'s object {} is missing or not the size its manifest records",
                m.sequence, d.object
            ));
        }
        if let Some(problem) = &check.problem
            && d.complete
        {
            problems.push(problem.clone());
        }
        segments.push(check);
    }
    let verified = segments
        .iter()
        .take(run)
        .take_while(|s| s.problem.is_none())
        .last()
        .map_or(full.revision, |s| s.to_revision);
    Ok(ChainReport {
        object: object.to_string(),
        ok: problems.is_empty(),
        segments,
        after_revision: full.revision,
        to_revision: verified,
        problems,
    })
}

/// What `delete` removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeleteReport {
    /// Names removed, in order: the chain's segments newest first (each manifest, then
    /// object), then the backup's manifest, then its object.
    pub deleted: Vec<String>,
}

/// Deletes everything listed under a chain's `.deltas/`: segment by segment, newest sequence
/// first, each manifest before its object.
async fn delete_segments(
    store: &Store,
    listed: &[ObjectInfo],
    deleted: &mut Vec<String>,
) -> Result<()> {
    let mut segments: BTreeMap<(std::cmp::Reverse<u64>, std::cmp::Reverse<&str>), Vec<&str>> =
        BTreeMap::new();
    for info in listed {
        let segment = object_name(&info.name);
        segments
            .entry((
                std::cmp::Reverse(segment_sequence(segment)),
                std::cmp::Reverse(segment),
            ))
            .or_default()
            .push(&info.name);
    }
    for mut names in segments.into_values() {
        // The manifest first: the segment stops counting at once.
        names.sort_by_key(|n| !n.ends_with(MANIFEST_SUFFIX));
        for name in names {
            store.delete(name).await?;
            deleted.push(name.to_string());
        }
    }
    Ok(())
}

/// The segments and segment manifests under a chain's `.deltas/` prefix (nothing foreign).
async fn chain_objects(store: &Store, prefix: &str) -> Result<Vec<ObjectInfo>> {
    Ok(store
        .list(prefix)
        .await?
        .into_iter()
        .filter(|o| {
            matches!(
                classify(&o.name).map(|l| l.kind),
                Some(LayoutKind::Segment | LayoutKind::SegmentManifest)
            )
        })
        .collect())
}

/// Deletes a backup with its chain: the segments newest first (each manifest, then object),
/// then the backup's manifest (so it stops counting as a backup at once), then its object.
/// Interrupted, it leaves a shorter chain that is still continuous. Naming something that is
/// not there is an error; naming a single segment is refused (delete its full backup).
pub async fn delete_backup(store: &Store, name: &str) -> Result<DeleteReport> {
    let object = object_name(name);
    if names_segment(object) {
        return Err(segment_named(store, object, "delete", "which removes the whole chain").await);
    }
    if classify(object).map(|l| l.kind) != Some(LayoutKind::Full) {
        return Err(SnapshotError::InvalidOption {
            option: "backup",
            reason: format!(
                "'{object}' is not a backup etcdops wrote (etcd-<cluster>/<time>-rev<N>-<tag>.db\
                 [.zst][.age] in the store): only those are deleted"
            ),
        });
    }
    let manifest_name = Manifest::name_for(object);
    let manifest = store.head(&manifest_name).await?;
    let data = store.head(object).await?;
    let prefix = deltas_prefix(object);
    let chain = chain_objects(store, &prefix).await?;
    if manifest.is_none() && data.is_none() && chain.is_empty() {
        return Err(etcd_store::StoreError::NotFound {
            store: store.url().to_string(),
            name: object.to_string(),
        }
        .into());
    }
    let mut deleted = Vec::new();
    delete_segments(store, &chain, &mut deleted).await?;
    if manifest.is_some() {
        store.delete(&manifest_name).await?;
        deleted.push(manifest_name);
    }
    if data.is_some() {
        store.delete(object).await?;
        deleted.push(object.to_string());
    }
    // A segment published while this ran would be left without its full backup.
    let late = chain_objects(store, &prefix).await?;
    delete_segments(store, &late, &mut deleted).await?;
    remove_chain_folder(store, backup_stem(object)).await;
    Ok(DeleteReport { deleted })
}

/// Removes the `.deltas/` folder of the full backup `stem` once it is empty, as deleting its
/// segments leaves it in a local store. Only a folder named as etcdops names a chain's
/// (`etcd-<cluster>/<full backup stem>.deltas`) is touched, and only when nothing is in it;
/// best effort: the segments are gone either way.
pub(crate) async fn remove_chain_folder(store: &Store, stem: &str) {
    if classify(&format!("{stem}.db")).map(|l| l.kind) == Some(LayoutKind::Full) {
        let _ = store
            .remove_empty_folder(&format!("{stem}{DELTAS_DIR}"))
            .await;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::delta::publish_segment;
    use crate::manifest::{Compression, backup_object_name};
    use bytes::Bytes;
    use chrono::TimeZone;
    use etcd_core::MemberId;
    use sha2::{Digest, Sha256};

    pub(crate) fn local_store(dir: &tempfile::TempDir) -> Store {
        Store::open(
            &dir.path().display().to_string(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap()
    }

    /// Publishes a full backup taken at `hour` o'clock at `revision`: object, then manifest.
    pub(crate) async fn publish_full(store: &Store, hour: u32, revision: i64) -> String {
        publish_full_of(store, MemberId(0xabc), hour, revision).await
    }

    /// [`publish_full`] of a backup of `cluster`.
    pub(crate) async fn publish_full_of(
        store: &Store,
        cluster: MemberId,
        hour: u32,
        revision: i64,
    ) -> String {
        let at = Utc.with_ymd_and_hms(2026, 11, 30, hour, 0, 0).unwrap();
        let object = backup_object_name(cluster, at, revision, Compression::Zstd, false, hour);
        let bytes = format!("full backup at revision {revision}").into_bytes();
        let mut manifest = crate::manifest::tests::sample();
        manifest.cluster_id = cluster;
        manifest.created_at = at;
        manifest.completed_at = at;
        manifest.revision = revision;
        manifest.object = object.clone();
        manifest.object_sha256 = hex::encode(Sha256::digest(&bytes));
        manifest.object_size = bytes.len() as u64;
        store.put_small(&object, Bytes::from(bytes)).await.unwrap();
        store
            .put_small(
                &Manifest::name_for(&object),
                Bytes::from(manifest.to_json()),
            )
            .await
            .unwrap();
        object
    }

    pub(crate) async fn names(store: &Store) -> Vec<String> {
        store
            .list("")
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.name)
            .collect()
    }

    #[test]
    fn encrypted_objects_are_backup_objects_too() {
        for name in ["a.db", "a.db.zst", "a.db.age", "a.db.zst.age"] {
            assert!(is_backup_object(name), "{name}");
        }
        for name in ["a.db.zst.manifest.json", "a.age", "a.txt"] {
            assert!(!is_backup_object(name), "{name}");
        }
        assert!(is_backup_object("a.deltas/000001-rev2-3.delta.zst"));
        assert!(!is_backup_object(
            "a.deltas/000001-rev2-3.delta.zst.manifest.json"
        ));
    }

    #[tokio::test]
    async fn list_shows_each_full_backup_with_the_range_its_chain_covers() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let plain = publish_full(&store, 1, 5).await;
        let full = publish_full(&store, 2, 10).await;
        publish_segment(&store, &full, 10, 1, (10, 15), &[11, 15]).await;
        publish_segment(&store, &full, 10, 2, (15, 20), &[16]).await;
        publish_segment(&store, &full, 10, 3, (20, 30), &[21, 22, 30]).await;
        let catalog = list_backups(&store).await.unwrap();
        assert!(catalog.orphans.is_empty() && catalog.broken_manifests.is_empty());
        assert_eq!(catalog.backups.len(), 2, "segments are not backups");
        let chained = &catalog.backups[0];
        assert_eq!(chained.object, full);
        let sequences: Vec<u64> = chained.deltas.iter().map(|d| d.manifest.sequence).collect();
        assert_eq!(sequences, [1, 2, 3]);
        assert!(chained.deltas.iter().all(|d| d.complete));
        let chain = chained.chain.as_ref().unwrap();
        assert_eq!(
            (chain.segments, chain.covered_segments, chain.changes),
            (3, 3, 6)
        );
        assert_eq!((chain.after_revision, chain.to_revision), (10, 30));
        assert!(chain.continuous && chain.problems.is_empty(), "{chain:?}");
        assert!(chain.to_time.is_some() && chain.from_time.is_some());
        // A backup without a chain serializes as before.
        let other = &catalog.backups[1];
        assert_eq!(other.object, plain);
        assert!(other.chain.is_none());
        let json = serde_json::to_value(other).unwrap();
        assert!(json.get("deltas").is_none() && json.get("chain").is_none());
        let json = serde_json::to_value(&catalog).unwrap();
        assert!(json.get("dangling_deltas").is_none());
        assert_eq!(json["backups"][0]["chain"]["to_revision"], 30);
    }

    #[tokio::test]
    async fn a_missing_segment_or_a_wrong_start_breaks_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let gap = publish_full(&store, 1, 10).await;
        publish_segment(&store, &gap, 10, 1, (10, 15), &[11]).await;
        publish_segment(&store, &gap, 10, 3, (20, 25), &[21]).await;
        let shifted = publish_full(&store, 2, 40).await;
        publish_segment(&store, &shifted, 40, 1, (40, 45), &[41]).await;
        publish_segment(&store, &shifted, 40, 2, (46, 50), &[47]).await;
        let wrong_base = publish_full(&store, 3, 60).await;
        publish_segment(&store, &wrong_base, 59, 1, (60, 65), &[61]).await;
        let catalog = list_backups(&store).await.unwrap();
        let chain_of = |object: &str| {
            catalog
                .backups
                .iter()
                .find(|b| b.object == object)
                .and_then(|b| b.chain.clone())
                .unwrap()
        };
        let chain = chain_of(&gap);
        assert!(!chain.continuous);
        assert_eq!(chain.problems, ["segment 2 is missing"]);
        assert_eq!(
            (chain.to_revision, chain.covered_segments, chain.segments),
            (15, 1, 2)
        );
        let chain = chain_of(&shifted);
        assert!(!chain.continuous);
        assert_eq!(
            chain.problems,
            ["segment 2 starts after revision 46, but segment 1 ends at revision 45"]
        );
        assert_eq!(chain.to_revision, 45);
        let chain = chain_of(&wrong_base);
        assert_eq!(
            chain.problems,
            ["segment 1 records base revision 59, but the full backup is at revision 60"]
        );
        assert_eq!(chain.to_revision, 60);
        // An incomplete segment object breaks it too.
        let segment = catalog.backups[2].deltas[0].object.clone();
        std::fs::write(dir.path().join(&segment), b"short").unwrap();
        let catalog = list_backups(&store).await.unwrap();
        let chain = catalog.backups[2].chain.clone().unwrap();
        assert!(!catalog.backups[2].deltas[0].complete);
        assert!(
            chain.problems[0].contains("is missing or not the"),
            "{:?}",
            chain.problems
        );
        assert_eq!(chain.to_revision, 10);
    }

    #[tokio::test]
    async fn segments_without_their_full_backup_are_dangling_and_unpublished_ones_orphans() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let full = publish_full(&store, 1, 10).await;
        publish_segment(&store, &full, 10, 1, (10, 15), &[11]).await;
        store.delete(&Manifest::name_for(&full)).await.unwrap();
        let kept = publish_full(&store, 2, 20).await;
        let unpublished = crate::delta::delta_object_name(&kept, 1, 20, 25, false);
        store
            .put_small(&unpublished, Bytes::from_static(b"x"))
            .await
            .unwrap();
        let catalog = list_backups(&store).await.unwrap();
        assert_eq!(catalog.backups.len(), 1);
        assert!(catalog.backups[0].deltas.is_empty());
        assert_eq!(catalog.dangling_deltas.len(), 1);
        assert!(
            catalog.dangling_deltas[0]
                .object
                .starts_with(&deltas_prefix(&full))
        );
        let orphans: Vec<&str> = catalog.orphans.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(orphans, [full.as_str(), unpublished.as_str()]);
        // A broken delta manifest is reported like any other.
        store
            .put_small(
                &Manifest::name_for(&unpublished),
                Bytes::from_static(b"{\"format_version\": 1}"),
            )
            .await
            .unwrap();
        let catalog = list_backups(&store).await.unwrap();
        assert_eq!(catalog.broken_manifests.len(), 1);
        assert!(
            catalog.broken_manifests[0]
                .error
                .contains("not a delta manifest"),
            "{:?}",
            catalog.broken_manifests
        );
    }

    #[tokio::test]
    async fn deleting_a_full_backup_removes_its_chain_newest_first_and_a_lone_segment_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let other = publish_full(&store, 1, 5).await;
        let full = publish_full(&store, 2, 10).await;
        let s1 = publish_segment(&store, &full, 10, 1, (10, 15), &[11]).await;
        let s2 = publish_segment(&store, &full, 10, 2, (15, 20), &[16]).await;
        let err = delete_backup(&store, &s2.object)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("delete its full backup '{full}'")),
            "{err}"
        );
        assert!(!err.contains('\n'));
        let err = delete_backup(&store, &Manifest::name_for(&s1.object))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("removes the whole chain"), "{err}");
        // Also when the store is opened inside the chain's folder (a URL naming the segment).
        let (folder, file) = s2.object.rsplit_once('/').unwrap();
        let inner = Store::open(
            &dir.path().join(folder).display().to_string(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap();
        let err = delete_backup(&inner, file).await.unwrap_err().to_string();
        assert!(
            err.contains("is a delta segment") && err.contains(&full),
            "{err}"
        );
        let report = delete_backup(&store, &full).await.unwrap();
        assert_eq!(
            report.deleted,
            [
                Manifest::name_for(&s2.object),
                s2.object.clone(),
                Manifest::name_for(&s1.object),
                s1.object.clone(),
                Manifest::name_for(&full),
                full.clone(),
            ]
        );
        assert_eq!(
            names(&store).await,
            [other.clone(), Manifest::name_for(&other)]
        );
        assert!(delete_backup(&store, &full).await.is_err(), "gone now");
    }

    #[tokio::test]
    async fn verify_chain_catches_a_changed_byte_and_a_gap() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let full = publish_full(&store, 1, 10).await;
        let ids = Identities::none();
        let empty = verify_chain(&store, &full, &ids).await.unwrap();
        assert!(empty.ok && empty.segments.is_empty());
        publish_segment(&store, &full, 10, 1, (10, 15), &[11, 12]).await;
        let s2 = publish_segment(&store, &full, 10, 2, (15, 20), &[16]).await;
        publish_segment(&store, &full, 10, 3, (20, 25), &[21]).await;
        let report = verify_chain(&store, &Manifest::name_for(&full), &ids)
            .await
            .unwrap();
        assert!(report.ok, "{:?}", report.problems);
        assert_eq!((report.after_revision, report.to_revision), (10, 25));
        assert!(
            report
                .segments
                .iter()
                .all(|s| s.stored_ok && s.records_checked)
        );

        let path = dir.path().join(&s2.object);
        let mut stored = std::fs::read(&path).unwrap();
        let at = stored.len() / 2;
        stored[at] ^= 0x40;
        std::fs::write(&path, stored).unwrap();
        let report = verify_chain(&store, &full, &ids).await.unwrap();
        assert!(!report.ok);
        assert_eq!(report.to_revision, 15, "verified up to segment 1");
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(
            report.problems[0].contains("segment 2") && report.problems[0].contains("SHA-256"),
            "{:?}",
            report.problems
        );
        assert!(!report.segments[1].stored_ok);

        store.delete(&Manifest::name_for(&s2.object)).await.unwrap();
        store.delete(&s2.object).await.unwrap();
        let report = verify_chain(&store, &full, &ids).await.unwrap();
        assert!(!report.ok);
        assert_eq!(report.problems, ["segment 2 is missing"]);
        assert_eq!(report.to_revision, 15);
        let err = verify_chain(
            &store,
            &crate::delta::delta_object_name(&full, 1, 10, 15, false),
            &ids,
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("verify its full backup"), "{err}");
    }
}
