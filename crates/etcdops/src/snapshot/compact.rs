//! `snapshot compact`: a chain of a store made into one full backup (see
//! [`etcd_snapshot::compact_chain`]), for both front-ends.

use std::path::PathBuf;

use etcd_snapshot::{CompactResult, Progress, compact_chain};
use serde::{Deserialize, Serialize};

use super::settings::{IdentitySettings, StoreSettings};
use crate::error::Result;

/// The chain to compact, and where.
#[derive(Debug, Clone, Deserialize)]
pub struct CompactRequest {
    /// The store (`backup run`'s STORE).
    pub store: String,
    /// The chain's full backup (object name as `snapshot list` shows it); default: the
    /// newest chain (required when the store holds several clusters' backups).
    #[serde(default)]
    pub chain: Option<String>,
    /// Where the db is rebuilt; default: the system's temporary directory.
    #[serde(default)]
    pub work_dir: Option<PathBuf>,
    /// The identities of an encrypted chain.
    #[serde(flatten)]
    pub identity: IdentitySettings,
    /// How the store is reached.
    #[serde(flatten)]
    pub settings: StoreSettings,
}

/// What a compaction did.
#[derive(Debug, Clone, Serialize)]
pub struct Compacted {
    /// The library's report.
    #[serde(flatten)]
    pub result: CompactResult,
    /// What went wrong on the side (an identity file others can read).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Compacts the chain: the new full backup is written, verified, and only then published;
/// the old chain is left for retention to drop.
pub async fn compact(request: &CompactRequest, progress: &dyn Progress) -> Result<Compacted> {
    let (identities, mut warnings) = request.identity.identities()?;
    let store = request.settings.open(&request.store)?;
    let library = etcd_snapshot::CompactRequest {
        chain: request.chain.clone(),
        work_dir: request.work_dir.clone(),
    };
    let result = compact_chain(&store, &library, &identities, progress).await?;
    warnings.extend(result.warnings.iter().cloned());
    Ok(Compacted { result, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_options_deserialize_into_the_request() {
        let request: CompactRequest = serde_json::from_value(serde_json::json!({
            "store": "s3://b/etcd", "chain": "etcd-abc/x.db.zst",
            "identity_file": "/k", "s3_path_style": true
        }))
        .unwrap();
        assert_eq!(request.chain.as_deref(), Some("etcd-abc/x.db.zst"));
        assert_eq!(request.identity.identity_file, [PathBuf::from("/k")]);
        assert!(request.settings.s3_path_style);
        assert!(request.work_dir.is_none());
    }
}
