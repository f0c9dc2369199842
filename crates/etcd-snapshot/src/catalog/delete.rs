//! Deleting a backup with its chain: segments newest first, each manifest before its
//! object, so an interrupted removal leaves a shorter chain that is still continuous.

use std::collections::BTreeMap;

use etcd_store::{ObjectInfo, Store};
use serde::Serialize;

use super::{names_segment, object_name, segment_named, segment_sequence};
use crate::delta::{DELTAS_DIR, backup_stem, deltas_prefix};
use crate::error::{Result, SnapshotError};
use crate::layout::{LayoutKind, classify};
use crate::manifest::{MANIFEST_SUFFIX, Manifest};
use etcd_common::InvalidOption;

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
                Some(
                    LayoutKind::Segment | LayoutKind::SegmentManifest | LayoutKind::ConsolidateLock
                )
            )
        })
        .collect())
}

/// Deletes a backup with its chain: the segments newest first (each manifest, then object),
/// then the backup's manifest (so it stops counting as a backup at once), then its object.
/// Interrupted, it leaves a shorter chain that is still continuous. Naming something that is
/// not there is an error; naming a single segment is refused (delete its full backup), and so
/// is a backup whose S3 Object Lock retention (recorded in its manifest) still holds
/// ([`SnapshotError::ObjectLocked`]).
pub async fn delete_backup(store: &Store, name: &str) -> Result<DeleteReport> {
    delete_backup_with(store, name, true).await
}

/// [`delete_backup`]; `check_locks: false` for a prune, which decided from the catalog's
/// manifests that no retention holds the backup or its chain.
pub(crate) async fn delete_backup_with(
    store: &Store,
    name: &str,
    check_locks: bool,
) -> Result<DeleteReport> {
    let object = object_name(name);
    if names_segment(object) {
        return Err(segment_named(store, object, "delete", "which removes the whole chain").await);
    }
    if classify(object).map(|l| l.kind) != Some(LayoutKind::Full) {
        return Err(SnapshotError::from(InvalidOption::input(
            "backup",
            format!(
                "'{object}' is not a backup etcdops wrote (etcd-<cluster>/<time>-rev<N>-<tag>.db\
                 [.zst][.age] in the store): only those are deleted"
            ),
        )));
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
    if check_locks {
        refuse_held(store, object, manifest.is_some(), &chain).await?;
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

/// Refuses when a retention recorded in the backup's manifest or in one of its chain's segment
/// manifests still holds: S3 would only hide them behind delete markers. An unreadable
/// manifest records no retention to honour.
async fn refuse_held(
    store: &Store,
    object: &str,
    has_manifest: bool,
    chain: &[ObjectInfo],
) -> Result<()> {
    let mut locks = Vec::new();
    if has_manifest
        && let Ok(bytes) = store.get_small(&Manifest::name_for(object)).await
        && let Ok(read) = Manifest::from_json(object, &bytes)
    {
        locks.extend(read.object_lock);
    }
    for info in chain.iter().filter(|i| i.name.ends_with(MANIFEST_SUFFIX)) {
        if let Ok(bytes) = store.get_small(&info.name).await
            && let Ok(read) = crate::delta::DeltaManifest::from_json(&info.name, &bytes)
        {
            locks.extend(read.object_lock);
        }
    }
    crate::object_lock::refuse_if_any_holds(object, locks, chrono::Utc::now())
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
