//! etcdutl's offline tools on a stopped member or a snapshot: `defrag --data-dir` and
//! `hashkv FILE|--data-dir` (etcd-data's offline module).

use std::path::PathBuf;

use etcd_snapshot::{DataError, SnapshotError};
use serde::{Deserialize, Serialize};

use super::settings::{IdentitySettings, StoreSettings};
use super::status::StatusRequest;
use crate::error::Result;

pub use etcd_snapshot::{DefragRequest, DefragResult, HashKv, HashKvRequest};

/// Defragments the db of the stopped member at `request.data_dir`: rewritten compactly,
/// checked against the original, and renamed over it; refused while a member runs there.
pub fn defrag_data_dir(request: &DefragRequest) -> Result<DefragResult> {
    etcd_snapshot::defrag_data_dir(request).map_err(data_error)
}

fn data_error(e: DataError) -> crate::Error {
    SnapshotError::Data(e).into()
}

/// What to hash: a snapshot (file or stored object) or a stopped member's data dir.
#[derive(Debug, Clone, Deserialize)]
pub struct HashKvFileRequest {
    /// A snapshot file or a stored object's URL.
    #[serde(default)]
    pub snapshot: Option<String>,
    /// A stopped member's data dir.
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// The revision to hash; 0: the latest.
    #[serde(default)]
    pub revision: i64,
    /// The identities of an encrypted snapshot.
    #[serde(flatten)]
    pub identity: IdentitySettings,
    /// How a store is reached.
    #[serde(flatten)]
    pub store: StoreSettings,
}

/// etcd's KV hash of a snapshot or a stopped member's db, as `endpoint hashkv` gives it for
/// the member at that revision.
#[derive(Debug, Clone, Serialize)]
pub struct HashKvResult {
    /// The snapshot or data dir hashed.
    pub source: String,
    /// The hash and the revisions it covers.
    #[serde(flatten)]
    pub hash: HashKv,
    /// What went wrong on the side (an identity file others can read).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Hashes the snapshot or the data dir of `request` (exactly one of them).
pub async fn hash_kv(request: &HashKvFileRequest) -> Result<HashKvResult> {
    let revision = HashKvRequest {
        revision: request.revision,
        compact_revision: None,
    };
    match (&request.snapshot, &request.data_dir) {
        (None, Some(dir)) => Ok(HashKvResult {
            source: dir.display().to_string(),
            hash: etcd_snapshot::hash_kv_data_dir(dir, &revision).map_err(data_error)?,
            warnings: Vec::new(),
        }),
        (Some(snapshot), None) => {
            let open = StatusRequest {
                snapshot: snapshot.clone(),
                skip_hash_check: false,
                identity: request.identity.clone(),
                store: request.store.clone(),
            };
            let (file, warnings) = open.open().await?;
            let hash = file.hash_kv(snapshot, &revision).map_err(data_error)?;
            Ok(HashKvResult {
                source: snapshot.clone(),
                hash,
                warnings,
            })
        }
        _ => Err(SnapshotError::from(etcd_common::InvalidOption::new(
            super::SNAPSHOT,
            "give a snapshot or a data dir, not both",
        ))
        .into()),
    }
}
