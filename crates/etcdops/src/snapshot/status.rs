//! Open "a snapshot file or a stored object" and read its status natively.

use etcd_snapshot::{Compression, SnapshotFile, SnapshotStatus, StatusOptions};
use serde::{Deserialize, Serialize};

use super::settings::{IdentitySettings, StoreSettings};
use crate::error::Result;

/// The snapshot to read.
#[derive(Debug, Clone, Deserialize)]
pub struct StatusRequest {
    /// A local file, or a stored object's URL (`STORE/OBJECT` with a scheme).
    pub snapshot: String,
    /// Read it even when etcd's SHA-256 trailer does not match its db.
    #[serde(default)]
    pub skip_hash_check: bool,
    /// The identities of an encrypted snapshot.
    #[serde(flatten)]
    pub identity: IdentitySettings,
    /// How a store is reached.
    #[serde(flatten)]
    pub store: StoreSettings,
}

/// A snapshot's status, and how it is stored.
#[derive(Debug, Clone, Serialize)]
pub struct StatusResult {
    /// The snapshot as the request named it.
    pub source: String,
    /// Its compression.
    pub compression: Compression,
    /// Whether it is age-encrypted.
    pub encrypted: bool,
    /// Its size as stored.
    pub stored_size: u64,
    /// What the db holds.
    #[serde(flatten)]
    pub status: SnapshotStatus,
    /// What went wrong on the side (an identity file others can read).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl StatusRequest {
    /// Opens the snapshot: a zstd or age file or a stored object is decrypted and
    /// decompressed into an unnamed temporary file. A local file that a running etcd holds
    /// locked (a live member's `member/snap/db`) is read with a warning: its pages may change
    /// while they are read (etcdutl would wait for the lock; `--data-dir` refuses).
    pub async fn open(&self) -> Result<(SnapshotFile, Vec<String>)> {
        let (identities, mut warnings) = self.identity.identities()?;
        if !self.snapshot.contains("://")
            && let Err(running) =
                etcd_snapshot::refuse_locked_db(std::path::Path::new(&self.snapshot))
        {
            warnings.push(format!(
                "{running}; read anyway, but its pages may change while they are read: the answer is consistent only once the member is stopped"
            ));
        }
        let snapshot =
            etcd_snapshot::open_snapshot(&self.snapshot, &self.store.options(), &identities)
                .await?;
        Ok((snapshot, warnings))
    }
}

/// Opens the snapshot and reads its status.
pub async fn status(request: &StatusRequest) -> Result<StatusResult> {
    let (snapshot, warnings) = request.open().await?;
    let options = StatusOptions {
        skip_hash_check: request.skip_hash_check,
    };
    let status = snapshot.status(&request.snapshot, &options)?;
    Ok(StatusResult {
        source: request.snapshot.clone(),
        compression: snapshot.compression(),
        encrypted: snapshot.encrypted(),
        stored_size: snapshot.stored_size(),
        status,
        warnings,
    })
}
