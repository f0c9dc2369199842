//! Copying backups between stores, for off-site copies: each object is streamed from one store
//! to the other (bounded memory, no local copy), its SHA-256 and size checked against its
//! manifest on the way, and the manifest written last, byte for byte, so that a copy is listed
//! only when it is complete and verified. Backups the destination already holds (same object,
//! same SHA-256 in its manifest) are skipped, so a repeated copy is cheap. Encrypted backups
//! are copied as they are: no identity is needed.
//!
//! A full backup's chain of delta segments is copied with it, after it and by sequence, each
//! segment like a backup (checked, manifest last), so the destination never holds segments
//! without their full backup or with a gap before them. Segments the destination already holds
//! are skipped: repeated copies pick up the new segments of a growing chain.
//!
//! Only the source's own layout is copied ([`crate::layout`]): a destination inside the
//! source (`copy p9 p9/dr`) is not part of it, so repeated copies never nest.

use std::collections::HashMap;

use etcd_store::{NotRegularEntry, Store, StoreError};
use futures::StreamExt;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::catalog::{BackupEntry, DeltaEntry, list_backups, names_segment, read_catalog};
use crate::error::{Result, SnapshotError};
use crate::progress::Progress;
use etcd_common::InvalidOption;

/// What to copy.
#[derive(Debug, Clone, Default)]
pub struct CopyRequest {
    /// Object names of the backups to copy, each with its chain; empty: every complete backup
    /// of the source.
    pub objects: Vec<String>,
    /// Say what would be copied, copy nothing.
    pub dry_run: bool,
    /// Read each copied object back from the destination and check its SHA-256 and size
    /// against its manifest before the manifest is written there (as a save's
    /// `verify_after_upload` does): what the destination serves, not only what was sent.
    pub read_back: bool,
}

/// What happened to one backup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyAction {
    /// Copied and verified.
    Copied,
    /// Would be copied (dry run).
    WouldCopy,
    /// The destination holds it already.
    AlreadyPresent,
}

/// One backup of a copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopyEntry {
    /// The backup object's name (the same in both stores).
    pub object: String,
    /// What was done.
    pub action: CopyAction,
    /// Bytes of the stored object.
    pub bytes: u64,
}

/// One delta segment of a copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopySegment {
    /// The full backup whose chain it belongs to.
    pub base: String,
    /// Its position in the chain.
    pub sequence: u64,
    /// The segment object's name (the same in both stores).
    pub object: String,
    /// What was done.
    pub action: CopyAction,
    /// Bytes of the stored object.
    pub bytes: u64,
}

/// The outcome of [`copy_backups`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// The source store's URL.
    pub source: String,
    /// The destination store's URL.
    pub destination: String,
    /// Each backup considered, oldest first.
    pub entries: Vec<CopyEntry>,
    /// Backups copied (or that would be, in a dry run).
    pub copied: usize,
    /// Backups the destination already held.
    pub already_present: usize,
    /// Each delta segment considered, by backup then sequence (absent from JSON when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<CopySegment>,
    /// Segments copied (or that would be).
    #[serde(skip_serializing_if = "is_zero")]
    pub segments_copied: usize,
    /// Segments the destination already held.
    #[serde(skip_serializing_if = "is_zero")]
    pub segments_already_present: usize,
    /// Segments not copied because the source's object is missing or not the size its
    /// manifest records.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub incomplete_segments: Vec<String>,
    /// Entries of the source with names of etcdops's that are not regular files (symbolic
    /// links, FIFOs, dirs named like objects): never read or copied (absent from JSON when
    /// none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub foreign_entries: Vec<NotRegularEntry>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What [`copy_object`] copies: an object and the manifest that describes it.
struct Described<'a> {
    object: &'a str,
    manifest_name: &'a str,
    size: u64,
    sha256: &'a str,
}

impl<'a> From<&'a BackupEntry> for Described<'a> {
    fn from(backup: &'a BackupEntry) -> Self {
        Described {
            object: &backup.object,
            manifest_name: &backup.manifest_name,
            size: backup.manifest.object_size,
            sha256: &backup.manifest.object_sha256,
        }
    }
}

impl<'a> From<&'a DeltaEntry> for Described<'a> {
    fn from(segment: &'a DeltaEntry) -> Self {
        Described {
            object: &segment.object,
            manifest_name: &segment.manifest_name,
            size: segment.manifest.object_size,
            sha256: &segment.manifest.object_sha256,
        }
    }
}

/// Copies the complete backups of `source` (all, or those named) into `destination`, each
/// with its chain of delta segments.
pub async fn copy_backups(
    source: &Store,
    destination: &Store,
    request: &CopyRequest,
    progress: &dyn Progress,
) -> Result<CopyReport> {
    let catalog = list_backups(source).await?;
    let mut chosen: Vec<&BackupEntry> = if request.objects.is_empty() {
        catalog.backups.iter().filter(|b| b.complete).collect()
    } else {
        request
            .objects
            .iter()
            .map(|name| {
                let name = name.trim_start_matches('/');
                if names_segment(name) {
                    let full = catalog
                        .backups
                        .iter()
                        .find(|b| b.deltas.iter().any(|d| d.object == name))
                        .map_or("its full backup".to_string(), |b| format!("'{}'", b.object));
                    let reason = format!(
                        "{name} is a delta segment; name its full backup {full} instead, whose chain is copied with it"
                    );
                    return Err(InvalidOption::input("backup", reason).into());
                }
                if let Some(foreign) = catalog
                    .foreign_entry(name)
                    .or_else(|| catalog.foreign_entry(&crate::Manifest::name_for(name)))
                {
                    return Err(StoreError::NotRegular {
                        store: source.url().to_string(),
                        name: foreign.name.clone(),
                        kind: foreign.kind,
                    }
                    .into());
                }
                catalog
                    .backups
                    .iter()
                    .find(|b| b.object == name && b.complete)
                    .ok_or_else(|| {
                        let reason = format!(
                            "{} holds no complete backup {name}; `snapshot list` shows what it holds",
                            source.url()
                        );
                        InvalidOption::input("backup", reason).into()
                    })
            })
            .collect::<Result<_>>()?
    };
    chosen.sort_by_key(|b| b.manifest.created_at);
    // A destination that does not exist yet is empty.
    let present = read_catalog(destination).await?;
    // Segments the destination holds complete, with the SHA-256 their manifests record.
    let held_segments: HashMap<&str, &str> = present
        .backups
        .iter()
        .flat_map(|b| b.deltas.iter())
        .chain(present.dangling_deltas.iter())
        .filter(|d| d.complete)
        .map(|d| (d.object.as_str(), d.manifest.object_sha256.as_str()))
        .collect();
    let mut report = CopyReport {
        source: source.url().to_string(),
        destination: destination.url().to_string(),
        entries: Vec::new(),
        copied: 0,
        already_present: 0,
        segments: Vec::new(),
        segments_copied: 0,
        segments_already_present: 0,
        incomplete_segments: Vec::new(),
        foreign_entries: catalog.foreign_entries.clone(),
    };
    for backup in chosen {
        let manifest = &backup.manifest;
        let held = present.backups.iter().any(|b| {
            b.complete
                && b.object == backup.object
                && b.manifest.object_sha256 == manifest.object_sha256
        });
        let action = if held {
            report.already_present += 1;
            CopyAction::AlreadyPresent
        } else if request.dry_run {
            report.copied += 1;
            CopyAction::WouldCopy
        } else {
            copy_object(
                source,
                destination,
                backup.into(),
                request.read_back,
                progress,
            )
            .await?;
            report.copied += 1;
            CopyAction::Copied
        };
        report.entries.push(CopyEntry {
            object: backup.object.clone(),
            action,
            bytes: manifest.object_size,
        });
        // `deltas` is sorted by sequence: the chain grows at the destination without a gap.
        for segment in &backup.deltas {
            if !segment.complete {
                report.incomplete_segments.push(segment.object.clone());
                continue;
            }
            let held = held_segments.get(segment.object.as_str())
                == Some(&segment.manifest.object_sha256.as_str());
            let action = if held {
                report.segments_already_present += 1;
                CopyAction::AlreadyPresent
            } else if request.dry_run {
                report.segments_copied += 1;
                CopyAction::WouldCopy
            } else {
                copy_object(
                    source,
                    destination,
                    segment.into(),
                    request.read_back,
                    progress,
                )
                .await?;
                report.segments_copied += 1;
                CopyAction::Copied
            };
            report.segments.push(CopySegment {
                base: backup.object.clone(),
                sequence: segment.manifest.sequence,
                object: segment.object.clone(),
                action,
                bytes: segment.manifest.object_size,
            });
        }
    }
    Ok(report)
}

/// A full backup's manifest without its `object_lock` record; any other bytes as they are.
fn without_object_lock(name: &str, bytes: bytes::Bytes) -> bytes::Bytes {
    match crate::Manifest::from_json(name, &bytes) {
        Ok(mut manifest) if manifest.object_lock.is_some() => {
            manifest.object_lock = None;
            bytes::Bytes::from(manifest.to_json())
        }
        _ => bytes,
    }
}

/// `snapshot save --copy-to`: copies the backup `saved` just stored in `source` to
/// `destination`, read back there, after the backups of its cluster that are newer than the
/// newest one `destination` holds of it (those an earlier save could not copy, its second
/// store down), oldest first. A destination that holds no backup of that cluster gets only
/// `saved`: a second site starts with the backups taken once it was set.
pub async fn copy_saved(
    source: &Store,
    destination: &Store,
    saved: &crate::Manifest,
) -> Result<CopyReport> {
    let present = read_catalog(destination).await?;
    let cluster = saved.cluster_id;
    let newest_held = present
        .backups
        .iter()
        .filter(|b| b.complete && b.manifest.cluster_id == cluster)
        .map(|b| b.manifest.created_at)
        .max();
    let mut objects = match newest_held {
        Some(newest) => list_backups(source)
            .await?
            .backups
            .into_iter()
            .filter(|b| {
                b.complete
                    && b.manifest.cluster_id == cluster
                    && b.manifest.created_at > newest
                    && b.object != saved.object
            })
            .map(|b| b.object)
            .collect(),
        None => Vec::new(),
    };
    objects.push(saved.object.clone());
    let request = CopyRequest {
        objects,
        dry_run: false,
        read_back: true,
    };
    copy_backups(source, destination, &request, &crate::NoProgress).await
}

/// Streams one object across, checks it against its manifest (with `read_back`, also as the
/// destination serves it), then writes the manifest.
async fn copy_object(
    source: &Store,
    destination: &Store,
    item: Described<'_>,
    read_back: bool,
    progress: &dyn Progress,
) -> Result<()> {
    // The manifest as stored, so the copy's is the same bytes; but for an Object Lock record:
    // the copy is not locked, and its manifest must not say it is.
    let manifest_bytes = without_object_lock(
        item.manifest_name,
        source.get_small(item.manifest_name).await?,
    );
    let (_, mut chunks) = source.get(item.object).await?;
    let mut upload = destination.begin_upload(item.object).await?;
    progress.start(Some(item.size));
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let streamed: Result<()> = async {
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            hasher.update(&chunk);
            size += chunk.len() as u64;
            progress.advance(chunk.len() as u64);
            upload.write(chunk).await?;
        }
        Ok(())
    }
    .await;
    progress.finish();
    let sha = hex::encode(hasher.finalize());
    let mismatch = match &streamed {
        Ok(()) if size != item.size => Some(format!(
            "{size} bytes read, the manifest says {}",
            item.size
        )),
        Ok(()) if sha != item.sha256 => Some(format!(
            "SHA-256 {sha}, the manifest says {}; the source copy is damaged",
            item.sha256
        )),
        _ => None,
    };
    if streamed.is_err() || mismatch.is_some() {
        // Best effort: the error that matters is the one that stopped the copy.
        let _ = upload.abort().await;
        streamed?;
        return Err(SnapshotError::VerifyFailed {
            name: format!("{}/{}", source.url(), item.object),
            reason: mismatch.unwrap_or_default(),
        });
    }
    let info = upload.complete().await?;
    if info.size != item.size {
        let _ = destination.delete(item.object).await;
        return Err(SnapshotError::VerifyFailed {
            name: format!("{}/{}", destination.url(), item.object),
            reason: format!(
                "the store holds {} bytes but {} were written",
                info.size, item.size
            ),
        });
    }
    if read_back && let Err(e) = check_stored(destination, &item).await {
        let _ = destination.delete(item.object).await;
        return Err(e);
    }
    destination
        .put_small(item.manifest_name, manifest_bytes)
        .await?;
    Ok(())
}

/// Reads `item` back from `store` and checks its size and SHA-256 against its manifest.
async fn check_stored(store: &Store, item: &Described<'_>) -> Result<()> {
    let (_, mut chunks) = store.get(item.object).await?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        hasher.update(&chunk);
        size += chunk.len() as u64;
    }
    let sha = hex::encode(hasher.finalize());
    if size == item.size && sha == item.sha256 {
        return Ok(());
    }
    Err(SnapshotError::VerifyFailed {
        name: format!("{}/{}", store.url(), item.object),
        reason: format!(
            "read back: {size} bytes with SHA-256 {sha}, the manifest says {} bytes with {}",
            item.size, item.sha256
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoProgress;
    use crate::catalog::tests::{local_store, publish_full};
    use crate::delta::publish_segment;
    use crate::manifest::Manifest;

    #[tokio::test]
    async fn a_chain_is_copied_with_its_full_backup_and_again_only_its_new_segments() {
        let (src_dir, dst_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (source, destination) = (local_store(&src_dir), local_store(&dst_dir));
        let plain = publish_full(&source, 1, 5).await;
        let full = publish_full(&source, 2, 10).await;
        let s1 = publish_segment(&source, &full, 10, 1, (10, 15), &[11]).await;
        publish_segment(&source, &full, 10, 2, (15, 20), &[16, 17]).await;

        let dry = CopyRequest {
            objects: vec![full.clone()],
            dry_run: true,
            read_back: false,
        };
        let report = copy_backups(&source, &destination, &dry, &NoProgress)
            .await
            .unwrap();
        assert_eq!((report.copied, report.segments_copied), (1, 2));
        assert!(destination.list("").await.unwrap().is_empty(), "dry run");

        let all = CopyRequest {
            read_back: true,
            ..CopyRequest::default()
        };
        let report = copy_backups(&source, &destination, &all, &NoProgress)
            .await
            .unwrap();
        assert_eq!((report.copied, report.already_present), (2, 0));
        assert_eq!(report.segments_copied, 2);
        let sequences: Vec<(u64, CopyAction)> = report
            .segments
            .iter()
            .map(|s| (s.sequence, s.action))
            .collect();
        assert_eq!(
            sequences,
            [(1, CopyAction::Copied), (2, CopyAction::Copied)]
        );
        let copied = list_backups(&destination).await.unwrap();
        let chain = copied.backups[0].chain.as_ref().unwrap();
        assert_eq!((chain.to_revision, chain.continuous), (20, true));
        let name = Manifest::name_for(&s1.object);
        assert_eq!(
            destination.get_small(&name).await.unwrap(),
            source.get_small(&name).await.unwrap(),
            "manifests are copied byte for byte"
        );

        // The chain grows; the next copy takes only the new segment.
        publish_segment(&source, &full, 10, 3, (20, 30), &[25]).await;
        let report = copy_backups(&source, &destination, &all, &NoProgress)
            .await
            .unwrap();
        assert_eq!((report.copied, report.already_present), (0, 2));
        assert_eq!(
            (report.segments_copied, report.segments_already_present),
            (1, 2)
        );
        let copied: Vec<&str> = report
            .segments
            .iter()
            .filter(|s| s.action == CopyAction::Copied)
            .map(|s| s.object.as_str())
            .collect();
        assert_eq!(copied.len(), 1);
        assert!(copied[0].contains("000003-rev21-30"), "{copied:?}");
        let chain = list_backups(&destination).await.unwrap().backups[0]
            .chain
            .clone()
            .unwrap();
        assert_eq!(chain.to_revision, 30);

        // A backup without a chain reports as before.
        let only = CopyRequest {
            objects: vec![plain.clone()],
            ..CopyRequest::default()
        };
        let report = copy_backups(&source, &destination, &only, &NoProgress)
            .await
            .unwrap();
        let json = serde_json::to_value(&report).unwrap();
        for key in ["segments", "segments_copied", "incomplete_segments"] {
            assert!(json.get(key).is_none(), "{key}: {json}");
        }
        // Naming a segment points at its full backup.
        let one = CopyRequest {
            objects: vec![s1.object.clone()],
            ..CopyRequest::default()
        };
        let err = copy_backups(&source, &destination, &one, &NoProgress)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("name its full backup '{full}'")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_damaged_segment_is_not_published_at_the_destination() {
        let (src_dir, dst_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (source, destination) = (local_store(&src_dir), local_store(&dst_dir));
        let full = publish_full(&source, 2, 10).await;
        let s1 = publish_segment(&source, &full, 10, 1, (10, 15), &[11]).await;
        let path = src_dir.path().join(&s1.object);
        let mut stored = std::fs::read(&path).unwrap();
        stored[4] ^= 1;
        std::fs::write(&path, stored).unwrap();
        let err = copy_backups(&source, &destination, &CopyRequest::default(), &NoProgress)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("SHA-256"), "{err}");
        let copied = list_backups(&destination).await.unwrap();
        assert_eq!(copied.backups.len(), 1, "the full backup was copied");
        assert!(copied.backups[0].deltas.is_empty() && copied.orphans.is_empty());
    }
    #[tokio::test]
    async fn a_copy_into_a_folder_of_its_source_never_nests() {
        let dir = tempfile::tempdir().unwrap();
        let source = local_store(&dir);
        let full = publish_full(&source, 1, 5).await;
        publish_segment(&source, &full, 5, 1, (5, 9), &[6]).await;
        let inner = Store::open(
            &dir.path().join("dr").display().to_string(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap();
        let listed = |store: &Store| {
            let store = store.clone();
            async move {
                let c = list_backups(&store).await.unwrap();
                (c.backups, c.orphans, c.dangling_deltas)
            }
        };
        let before = listed(&source).await;
        for run in 0..2 {
            let report = copy_backups(&source, &inner, &CopyRequest::default(), &NoProgress)
                .await
                .unwrap();
            assert_eq!(report.entries.len(), 1, "run {run}: {report:?}");
            assert_eq!(
                listed(&source).await,
                before,
                "run {run}: the source changed"
            );
        }
        let all = source.list("").await.unwrap();
        assert!(
            all.iter().all(|o| !o.name.starts_with("dr/dr/")),
            "nested: {all:?}"
        );
        assert_eq!(list_backups(&inner).await.unwrap().backups.len(), 1);
    }

    #[test]
    fn a_copied_manifest_drops_its_object_lock_and_keeps_everything_else() {
        let mut manifest = crate::manifest::tests::sample();
        let plain = bytes::Bytes::from(manifest.to_json());
        assert_eq!(without_object_lock("m", plain.clone()), plain);
        manifest.object_lock = Some(etcd_store::ObjectLock {
            mode: etcd_store::LockMode::Compliance,
            retain_until: manifest.created_at,
        });
        let copied = without_object_lock("m", bytes::Bytes::from(manifest.to_json()));
        manifest.object_lock = None;
        assert_eq!(Manifest::from_json("m", &copied).unwrap(), manifest);
        let other = bytes::Bytes::from_static(b"{\"kind\": \"delta\"}");
        assert_eq!(without_object_lock("m", other.clone()), other);
    }
}
