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

use etcd_store::{NotRegularEntry, ObjectInfo, Store, UnfinishedUpload};
use futures::StreamExt;
use serde::Serialize;

use crate::crypt::Identities;
use crate::delta::{
    DELTA_SUFFIX, DELTAS_DIR, DeltaManifest, backup_stem, is_delta_manifest, is_delta_object,
};
use crate::error::{Result, SnapshotError};
use crate::layout::{LayoutKind, LayoutListing, classify, list_layout};
use crate::manifest::{ENCRYPTED_SUFFIX, MANIFEST_SUFFIX, Manifest};
use crate::progress::Progress;
use crate::verify::{VerifyExpectation, VerifyReport, verify_object};
use etcd_common::InvalidOption;

mod chain;
mod delete;

use chain::analyse_chain;
pub use chain::{ChainReport, ChainSummary, SegmentCheck, verify_chain};
pub(crate) use delete::delete_backup_with;
pub(crate) use delete::remove_chain_folder;
pub use delete::{DeleteReport, delete_backup};

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
    /// Entries of a local store with names of etcdops's (a backup's, a manifest's, the lock's,
    /// a cluster or chain folder's) that are not regular files (or dirs, for folders):
    /// symbolic links, FIFOs, devices, sockets, dirs named like objects. Foreign: never read,
    /// copied or deleted; a backup whose object is one is not complete (absent from JSON
    /// when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub foreign_entries: Vec<NotRegularEntry>,
}

impl Catalog {
    /// The foreign entry of that name, when one is.
    pub fn foreign_entry(&self, name: &str) -> Option<&NotRegularEntry> {
        self.foreign_entries.iter().find(|e| e.name == name)
    }

    /// Whether deleting the backup `backup` (its object, its manifest and its chain) would
    /// touch a foreign entry: such a backup is kept, whatever the rules.
    pub(crate) fn touches_foreign(&self, object: &str) -> bool {
        let chain = format!("{}{DELTAS_DIR}", backup_stem(object));
        self.foreign_entries.iter().any(|e| {
            e.name == object
                || e.name == Manifest::name_for(object)
                || e.name == chain.trim_end_matches('/')
                || e.name.starts_with(&chain)
        })
    }
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
        foreign,
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
    // Owned names: a closure over borrowed ones keeps this future from being `Send` for
    // every lifetime, and a `backup run` spawns a compaction that lists the store.
    let owned: Vec<String> = manifest_names.iter().map(|n| n.to_string()).collect();
    let loaded: Vec<Loaded> = futures::stream::iter(owned.into_iter().map(|name| async move {
        let name = name.as_str();
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
        // A segment whose manifest cannot be read (a newer format, damage) is missing from
        // the chain: say why beside it.
        if let Some(summary) = backup.chain.as_mut() {
            let stem = backup_stem(&backup.object);
            for unread in broken
                .iter()
                .filter(|b| is_delta_manifest(&b.name) && chain_stem(&b.name) == Some(stem))
            {
                summary.problems.push(format!(
                    "the manifest {} cannot be read: {}",
                    unread.name, unread.error
                ));
            }
        }
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
        foreign_entries: foreign,
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
    SnapshotError::from(InvalidOption::input(
        "backup",
        format!("'{segment}' is a delta segment of a chain; {verb} {full} instead, {effect}"),
    ))
}

/// Verifies one backup. With a manifest, everything it records is checked; a bare object
/// (no manifest) is checked for etcd's trailer and sound bbolt meta pages. An age-encrypted
/// backup is decrypted with `identities`; without one, only its stored bytes can be checked
/// and [`etcd_data::Error::Encrypted`] says so. Its delta segments are checked by
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

#[cfg(test)]
pub(crate) mod tests;
