//! A verified backup before a change: member changes, defragmentation, compaction, a
//! downgrade. [`backup_before_change`] saves the cluster into a store through the save
//! workflow, then reads it back through the verify workflow; [`change_with_backup`] runs a
//! change's dry run first (every guard, and whether anything would change), takes the backup
//! only when something will change, then makes the change. A failed backup stops the change
//! before it starts.
//!
//! Without a quorum the backup is refused rather than skipped: a change to a cluster that has
//! lost its quorum is rare and dangerous, and the operator who asked for a backup must decide
//! to go on without one (by leaving out the backup destination).

use std::collections::BTreeMap;
use std::future::Future;

use etcd_core::{Client, ClusterConfig};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::snapshot::{
    IdentitySettings, SaveRequest, StoreSettings, VerifyRequest, preview_save, save, verify,
};
use etcd_snapshot::NoProgress;

/// Where a backup before a change goes: none without `backup_to`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
pub struct BackupBefore {
    /// The store URL (a directory, `s3://`, `gs://`, `az://`); none: no backup.
    #[serde(default)]
    pub backup_to: Option<String>,
    /// How the store is reached.
    #[serde(flatten)]
    pub store: StoreSettings,
}

/// The backup taken before a change (or, in a dry run, the one that would be).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackupBeforeChange {
    /// Whether it was taken (false in a dry run).
    pub taken: bool,
    /// The store (credentials removed).
    pub store: String,
    /// The member it streams from.
    pub endpoint: String,
    /// The backup object's name in the store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The backup's URL (credentials removed): what a restore is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_url: Option<String>,
    /// The revision it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// Whether it was read back from the store and verified whole (the verify workflow).
    pub verified: bool,
}

/// Whether a change's result (or its dry run's) changes the cluster.
pub trait Changes {
    /// True when the cluster changes (or would, in a dry run).
    fn changes(&self) -> bool;
}

/// The label every backup before a change carries.
pub const LABEL: (&str, &str) = ("reason", "before-change");

/// Saves a backup of the cluster into `request.backup_to` and verifies it (in a dry run:
/// checks that a member can stream one and the store answers, and says so). `None` without
/// `backup_to`. Refused when no quorum serves.
pub async fn backup_before_change(
    config: &ClusterConfig,
    request: &BackupBefore,
    dry_run: bool,
) -> Result<Option<BackupBeforeChange>> {
    let Some(store) = request.backup_to.clone() else {
        return Ok(None);
    };
    require_quorum(config).await?;
    // The save workflow's defaults (zstd, no retention), read back before its manifest.
    let mut save_request: SaveRequest =
        serde_json::from_value(serde_json::json!({ "store": store }))
            .map_err(|e| Error::invalid(format!("backup destination: {e}"), None))?;
    save_request.verify_after_upload = true;
    save_request.labels = BTreeMap::from([(LABEL.0.to_string(), LABEL.1.to_string())]);
    save_request.store = request.store.clone();
    if dry_run {
        let preview = preview_save(config, &save_request).await?;
        return Ok(Some(BackupBeforeChange {
            taken: false,
            store: etcd_store::scrub(&preview.store),
            endpoint: preview.endpoint,
            object: None,
            object_url: None,
            revision: None,
            verified: false,
        }));
    }
    let saved = save(config, &save_request, &NoProgress).await?;
    let object_url = saved.object_url();
    let verified = verify(
        &VerifyRequest {
            snapshot: object_url.clone(),
            identity: IdentitySettings::default(),
            store: request.store.clone(),
        },
        &NoProgress,
    )
    .await?;
    if !verified.failures.is_empty() {
        return Err(Error::invalid(
            format!(
                "the backup before the change, {}, does not verify: {}; nothing was changed",
                etcd_store::scrub(&object_url),
                verified.failures.join("; ")
            ),
            None,
        ));
    }
    Ok(Some(BackupBeforeChange {
        taken: true,
        store: etcd_store::scrub(&saved.result.store),
        endpoint: saved.result.manifest.endpoint.clone(),
        object: Some(saved.result.manifest.object.clone()),
        object_url: Some(etcd_store::scrub(&object_url)),
        revision: Some(saved.result.manifest.revision),
        verified: true,
    }))
}

/// Refuses when no quorum of voting members is healthy.
async fn require_quorum(config: &ClusterConfig) -> Result<()> {
    let view = Client::new(config.clone()).cluster_view().await?;
    let (healthy, quorum) = (view.healthy_voters(), view.quorum());
    if healthy >= quorum {
        return Ok(());
    }
    Err(Error::invalid(
        format!(
            "no quorum serves ({healthy} of {} voting members healthy, {quorum} needed): no \
             backup can be taken before the change, so nothing was changed; leave out the \
             backup destination to go ahead without one (a data dir backup of each member \
             keeps what it holds)",
            view.voters().count()
        ),
        None,
    ))
}

/// Runs `change` with a backup before it: its dry run first (every guard, and whether it
/// would change anything); when it would, the backup ([`backup_before_change`]), then the
/// change itself. Without `backup_to`, just the change. In a dry run, the change's dry run
/// and the backup it would take. Nothing would change: no backup.
pub async fn change_with_backup<T, F, Fut>(
    config: &ClusterConfig,
    backup: &BackupBefore,
    dry_run: bool,
    change: F,
) -> Result<(T, Option<BackupBeforeChange>)>
where
    T: Changes,
    F: Fn(bool) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    if backup.backup_to.is_none() {
        return Ok((change(dry_run).await?, None));
    }
    let preview = change(true).await?;
    if !preview.changes() {
        let done = if dry_run {
            preview
        } else {
            change(false).await?
        };
        return Ok((done, None));
    }
    let taken = backup_before_change(config, backup, dry_run).await?;
    if dry_run {
        return Ok((preview, taken));
    }
    Ok((change(false).await?, taken))
}

impl Changes for crate::member::MemberOutcome {
    fn changes(&self) -> bool {
        self.changed
    }
}

impl Changes for crate::member::Guarded<etcd_core::MemberChangeResult> {
    fn changes(&self) -> bool {
        self.result.changed
    }
}

impl Changes for crate::member::Guarded<etcd_core::MemberAddResult> {
    fn changes(&self) -> bool {
        self.result.changed
    }
}

/// A defragmentation rewrites every addressed member's db.
impl Changes for crate::maintenance::DefragOutcome {
    fn changes(&self) -> bool {
        !self.endpoints.is_empty()
    }
}

impl Changes for etcd_core::CompactResult {
    fn changes(&self) -> bool {
        self.changed
    }
}
