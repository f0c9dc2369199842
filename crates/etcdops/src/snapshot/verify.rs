//! Verify a stored backup whole (its SHA-256s, etcd's trailer, the bbolt meta pages) and
//! then its chain of delta segments: a broken chain is a failed verify, whichever front-end
//! asks.

use etcd_snapshot::{
    ChainReport, Progress, SnapshotError, VerifyReport, verify_backup, verify_chain,
};
use etcd_store::split_object_url;
use serde::{Deserialize, Serialize};

use super::settings::{IdentitySettings, StoreSettings};
use crate::error::Result;

/// The backup to verify.
#[derive(Debug, Clone, Deserialize)]
pub struct VerifyRequest {
    /// The backup's URL: the store's URL, then the object's name (a local path works too).
    pub snapshot: String,
    /// The identities of an encrypted backup.
    #[serde(flatten)]
    pub identity: IdentitySettings,
    /// How the store is reached.
    #[serde(flatten)]
    pub store: StoreSettings,
}

/// What a verify found.
#[derive(Debug, Clone, Serialize)]
pub struct Verified {
    /// The backup's check; absent when the backup itself failed it (see `failures`).
    pub report: Option<VerifyReport>,
    /// Its chain of delta segments, when it has one.
    pub chain: Option<ChainReport>,
    /// Why it failed, one line each (the backup's mismatch, or each problem of its chain);
    /// empty when it passed.
    pub failures: Vec<String>,
    /// What went wrong on the side (an identity file others can read).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Verified {
    /// Whether the backup and its chain passed.
    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Verifies the backup, then (when its manifest was checked) its chain. A backup or chain
/// that fails the check is a result with `failures`; an error is a verify that could not
/// be made (no such backup, no identity for an encrypted one).
pub async fn verify(request: &VerifyRequest, progress: &dyn Progress) -> Result<Verified> {
    let (identities, warnings) = request.identity.identities()?;
    let (store_url, name) = split_object_url(&request.snapshot);
    let store = request.store.open(&store_url)?;
    let mut verified = Verified {
        report: None,
        chain: None,
        failures: Vec::new(),
        warnings,
    };
    let report = match verify_backup(&store, &name, &identities, progress).await {
        Ok(report) => report,
        Err(e @ SnapshotError::VerifyFailed { .. }) => {
            verified.failures.push(e.to_string());
            return Ok(verified);
        }
        Err(e) => return Err(e.into()),
    };
    if report.manifest_checked {
        let chain = verify_chain(&store, &name, &identities).await?;
        verified.failures.extend(
            chain
                .problems
                .iter()
                .map(|problem| format!("the chain of {}: {problem}", report.object)),
        );
        // Not damage: said, the verify passes.
        verified
            .warnings
            .extend(chain.clock_steps.iter().map(|step| {
                format!(
                    "the chain of {}: {}; its time stamps are not monotonic, so a restore by time maps a time to the revision where this clock first reached it",
                    report.object,
                    step.describe()
                )
            }));
        if !chain.segments.is_empty() || !chain.problems.is_empty() {
            verified.chain = Some(chain);
        }
    }
    verified.report = Some(report);
    Ok(verified)
}
