//! Copying backups between stores, for off-site copies: each object is streamed from one store
//! to the other (bounded memory, no local copy), its SHA-256 and size checked against its
//! manifest on the way, and the manifest written last, byte for byte, so that a copy is listed
//! only when it is complete and verified. Backups the destination already holds (same object,
//! same SHA-256 in its manifest) are skipped, so a repeated copy is cheap. Encrypted backups
//! are copied as they are: no identity is needed.

use etcd_store::Store;
use futures::StreamExt;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::catalog::{BackupEntry, list_backups};
use crate::error::{Result, SnapshotError};
use crate::manifest::Manifest;
use crate::progress::Progress;

/// What to copy.
#[derive(Debug, Clone, Default)]
pub struct CopyRequest {
    /// Object names of the backups to copy; empty: every complete backup of the source.
    pub objects: Vec<String>,
    /// Say what would be copied, copy nothing.
    pub dry_run: bool,
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
}

/// Copies the complete backups of `source` (all, or those named) into `destination`.
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
                catalog
                    .backups
                    .iter()
                    .find(|b| b.object == name && b.complete)
                    .ok_or_else(|| SnapshotError::InvalidOption {
                        option: "backup",
                        reason: format!(
                            "{} holds no complete backup {name}; `snapshot list` shows what it holds",
                            source.url()
                        ),
                    })
            })
            .collect::<Result<_>>()?
    };
    chosen.sort_by_key(|b| b.manifest.created_at);
    let present = list_backups(destination).await?;
    let mut report = CopyReport {
        source: source.url().to_string(),
        destination: destination.url().to_string(),
        entries: Vec::new(),
        copied: 0,
        already_present: 0,
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
            copy_one(source, destination, backup, progress).await?;
            report.copied += 1;
            CopyAction::Copied
        };
        report.entries.push(CopyEntry {
            object: backup.object.clone(),
            action,
            bytes: manifest.object_size,
        });
    }
    Ok(report)
}

/// Streams one object across, checks it, then writes its manifest.
async fn copy_one(
    source: &Store,
    destination: &Store,
    backup: &BackupEntry,
    progress: &dyn Progress,
) -> Result<()> {
    let manifest: &Manifest = &backup.manifest;
    // The manifest as stored, so the copy's is the same bytes.
    let manifest_bytes = source.get_small(&backup.manifest_name).await?;
    let (_, mut chunks) = source.get(&backup.object).await?;
    let mut upload = destination.begin_upload(&backup.object).await?;
    progress.start(Some(manifest.object_size));
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
        Ok(()) if size != manifest.object_size => Some(format!(
            "{size} bytes read, the manifest says {}",
            manifest.object_size
        )),
        Ok(()) if sha != manifest.object_sha256 => Some(format!(
            "SHA-256 {sha}, the manifest says {}; the source copy is damaged",
            manifest.object_sha256
        )),
        _ => None,
    };
    if streamed.is_err() || mismatch.is_some() {
        // Best effort: the error that matters is the one that stopped the copy.
        let _ = upload.abort().await;
        streamed?;
        return Err(SnapshotError::VerifyFailed {
            name: format!("{}/{}", source.url(), backup.object),
            reason: mismatch.unwrap_or_default(),
        });
    }
    let info = upload.complete().await?;
    if info.size != manifest.object_size {
        let _ = destination.delete(&backup.object).await;
        return Err(SnapshotError::VerifyFailed {
            name: format!("{}/{}", destination.url(), backup.object),
            reason: format!(
                "the store holds {} bytes but {} were written",
                info.size, manifest.object_size
            ),
        });
    }
    destination
        .put_small(&backup.manifest_name, manifest_bytes)
        .await?;
    Ok(())
}
