//! Chain consolidation (the CLI's `snapshot compact`, `backup run --compact-after`): a chain
//! of a store made into one full backup (see [`etcd_snapshot::consolidate_chain`]), for both
//! front-ends. Named apart from etcd's history compaction (`etcdops::maintenance::compact`),
//! which it is not.

use std::path::PathBuf;

use etcd_snapshot::{
    ConsolidatePreview, ConsolidateResult, Progress, consolidate_chain, preview_consolidation,
};
use serde::{Deserialize, Serialize};

use super::settings::{IdentitySettings, StoreSettings};
use crate::error::Result;

/// The chain to consolidate, and where.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct ConsolidateRequest {
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

impl ConsolidateRequest {
    /// The library's request.
    fn library(&self) -> etcd_snapshot::ConsolidateRequest {
        etcd_snapshot::ConsolidateRequest {
            chain: self.chain.clone(),
            work_dir: self.work_dir.clone(),
        }
    }
}

/// What a consolidation did.
#[derive(Debug, Clone, Serialize)]
pub struct Consolidated {
    /// The library's report.
    #[serde(flatten)]
    pub result: ConsolidateResult,
    /// What went wrong on the side (an identity file others can read).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Consolidates the chain: the new full backup is written, verified, and only then
/// published; the old chain is left for retention to drop.
pub async fn consolidate(
    request: &ConsolidateRequest,
    progress: &dyn Progress,
) -> Result<Consolidated> {
    let (identities, mut warnings) = request.identity.identities()?;
    let store = request.settings.open(&request.store)?;
    let result = consolidate_chain(&store, &request.library(), &identities, progress).await?;
    warnings.extend(result.warnings.iter().cloned());
    Ok(Consolidated { result, warnings })
}

/// What [`consolidate`] would do (the CLI's `snapshot compact --dry-run`, the module's check
/// mode): which chain, how many segments, up to which revision, and whether it is compacted
/// already, from the store's catalog alone (nothing downloaded, decrypted or written; the
/// identities are not read).
pub async fn preview_consolidate(request: &ConsolidateRequest) -> Result<ConsolidatePreview> {
    let store = request.settings.open(&request.store)?;
    Ok(preview_consolidation(&store, &request.library()).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_options_deserialize_into_the_request() {
        let request: ConsolidateRequest = serde_json::from_value(serde_json::json!({
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
