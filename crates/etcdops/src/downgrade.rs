//! etcd's cluster downgrade (`downgrade validate|enable|cancel`), guarded: a downgrade is
//! enabled only when a verified backup of this very cluster, newer than a maximum age, is in
//! the store named (or when forced, with a warning), and only where no OpenShift
//! cluster-etcd-operator owns etcd's version. Validate changes nothing and cancel goes back
//! to where the cluster was, so neither is guarded.
//!
//! The backup guard reads the store's catalog (the same listing as `snapshot list`), takes
//! the complete backups whose manifest names this cluster's ID and that were taken within
//! the maximum age, newest first, and verifies them whole (as `snapshot verify` does) until
//! one passes.
//!
//! A backup does not count when it is dated in the future beyond
//! [`etcd_snapshot::FUTURE_TOLERANCE`] (as prune treats it: a wrong clock would make it
//! fresh for ever), or when it cannot be of this cluster's history although its cluster ID
//! matches (default restores share cluster IDs): its revision is above the cluster's current
//! one, or the member it was streamed from (the manifest's `member_id`) is no current member.
//! The limit: a manifest names one member only, so a backup streamed from a member removed
//! since does not count (take a new one), and a cluster restored with the same names and
//! peer URLs has the same member IDs too, so a backup of such a twin at a lower revision
//! still passes; the guard cannot tell them apart without the data of both.

use std::time::Duration;

use chrono::{DateTime, Utc};
use etcd_common::{Hint, options::FORCE};
use etcd_core::{Client, MemberId};
use etcd_snapshot::{
    BackupEntry, FUTURE_TOLERANCE, NoProgress, SnapshotError, list_backups, verify_backup,
};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::guard::{Force, Guards, Operation};
use crate::snapshot::{IdentitySettings, StoreSettings};

pub use etcd_core::DowngradeRequest as DowngradeCall;
/// What a downgrade call returns.
pub use etcd_core::{DowngradeAction, DowngradeInfo, DowngradeResult};

pub use etcd_common::options::{MAX_BACKUP_AGE, STORE};
/// How old the newest verified backup may be by default: one hour.
pub const DEFAULT_MAX_BACKUP_AGE: Duration = Duration::from_secs(3600);

/// A downgrade request and what its guard needs.
#[derive(Debug, Clone)]
pub struct DowngradeRequest {
    /// The action and its target version.
    pub call: DowngradeCall,
    /// Go past the guards (no verified backup, OpenShift's operator), with a warning.
    pub force: Force,
    /// The store that holds this cluster's backups (a URL or a directory), for `enable`.
    pub store: Option<String>,
    /// How old the newest verified backup may be.
    pub max_backup_age: Duration,
    /// How the store is reached.
    pub store_settings: StoreSettings,
    /// The identities that decrypt an encrypted backup.
    pub identity: IdentitySettings,
    /// `enable`: once etcd has validated the target version, save a verified backup into this
    /// store first ([`crate::backup_before`]); it is then the backup the guard finds (the
    /// store defaults to it).
    pub backup_to: Option<String>,
}

impl DowngradeRequest {
    /// The request `call`, unforced, with no store and the default maximum backup age.
    pub fn new(call: DowngradeCall) -> DowngradeRequest {
        DowngradeRequest {
            call,
            force: Force::default(),
            store: None,
            max_backup_age: DEFAULT_MAX_BACKUP_AGE,
            store_settings: StoreSettings::default(),
            identity: IdentitySettings::default(),
            backup_to: None,
        }
    }

    /// The store that holds this cluster's backups.
    pub fn store(mut self, store: impl Into<String>) -> DowngradeRequest {
        self.store = Some(store.into());
        self
    }

    /// How old the newest verified backup may be.
    pub fn max_backup_age(mut self, age: Duration) -> DowngradeRequest {
        self.max_backup_age = age;
        self
    }

    /// Go past the guards (`true`), with a warning.
    pub fn force(mut self, force: bool) -> DowngradeRequest {
        self.force = Force(force);
        self
    }
}

/// The verified backup that let a downgrade through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackupEvidence {
    /// The store it is in.
    pub store: String,
    /// Its object name in the store.
    pub object: String,
    /// When its snapshot was taken.
    pub created_at: DateTime<Utc>,
    /// Its age when checked, in seconds.
    pub age_seconds: u64,
    /// The revision it holds (at least).
    pub revision: i64,
}

/// What a downgrade request did.
#[derive(Debug, Clone, Serialize)]
pub struct Downgraded {
    /// etcd's answer.
    #[serde(flatten)]
    pub result: DowngradeResult,
    /// The verified backup the guard found (enable only, unless forced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupEvidence>,
    /// The backup saved before the change, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_taken: Option<crate::backup_before::BackupBeforeChange>,
    /// What was forced through, one line each.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Runs a downgrade request; `enable` only after its guards let it through (see the module).
pub async fn downgrade(
    client: &Client,
    guards: &Guards,
    request: &DowngradeRequest,
) -> Result<Downgraded> {
    let mut warnings = Vec::new();
    let mut backup = None;
    let mut taken = None;
    let mut request = request.clone();
    // The guards first: nothing is asked or written (not even the backup before the change)
    // for an enable they refuse.
    let passed = match request.call.action {
        DowngradeAction::Enable => Some(
            guards
                .check(Operation::Downgrade, request.force, Some(client.config()))
                .await?,
        ),
        _ => None,
    };
    if request.call.action == DowngradeAction::Enable && request.backup_to.is_some() {
        // etcd says first whether it would take the target (3.4 has no downgrades at all):
        // no backup for a downgrade that cannot happen.
        let mut validate = request.call.clone();
        validate.action = DowngradeAction::Validate;
        client.downgrade(&validate, &etcd_core::Unguarded).await?;
        let before = crate::backup_before::BackupBefore {
            backup_to: request.backup_to.clone(),
            store: request.store_settings.clone(),
        };
        taken = crate::backup_before::backup_before_change(client.config(), &before, false).await?;
        if request.store.is_none() {
            request.store.clone_from(&request.backup_to);
        }
    }
    let request = &request;
    if let Some(passed) = &passed {
        warnings.extend(passed.warning());
        if request.force.0 {
            warnings.push(format!(
                "forced: downgrade enable without checking for a verified backup newer than {}",
                words(request.max_backup_age)
            ));
        } else {
            backup = Some(verified_backup(client, request).await?);
        }
    }
    let result = match &passed {
        Some(passed) => client.downgrade(&request.call, passed).await?,
        // Validate and cancel change no version: not guarded.
        None => {
            client
                .downgrade(&request.call, &etcd_core::Unguarded)
                .await?
        }
    };
    Ok(Downgraded {
        result,
        backup,
        backup_taken: taken,
        warnings,
    })
}

/// The newest complete backup of this cluster in the request's store, taken within the
/// maximum age, that verifies; refuses when there is none.
async fn verified_backup(client: &Client, request: &DowngradeRequest) -> Result<BackupEvidence> {
    let max_age = request.max_backup_age;
    let Some(store_url) = request.store.as_deref() else {
        return Err(refused(
            format!(
                "a downgrade is enabled only with a verified backup of this cluster newer than {}: name the store that holds one, or force it",
                words(max_age)
            ),
            Hint::any_of(&[STORE, FORCE]),
        ));
    };
    let members = client.members().list().await?;
    let cluster = CurrentCluster {
        id: members.cluster_id,
        members: members.members.iter().map(|m| m.id).collect(),
        revision: current_revision(client).await?,
    };
    let store = request.store_settings.open(store_url)?;
    let catalog = list_backups(&store).await?;
    let now = Utc::now();
    let mut skipped = Vec::new();
    let mut ours: Vec<_> = catalog
        .backups
        .iter()
        .filter(|b| b.complete && b.manifest.cluster_id == cluster.id)
        .filter(|b| match cluster.excludes(b, now) {
            Some(why) => {
                skipped.push(format!("{}: {why}", b.object));
                false
            }
            None => true,
        })
        .collect();
    ours.sort_by_key(|b| std::cmp::Reverse(b.manifest.created_at));
    let cluster_id = cluster.id;
    let Some(newest) = ours.first() else {
        return Err(refused(
            format!(
                "{} holds no complete backup of cluster {cluster_id}{}: take a backup first (a downgrade is enabled only with a verified backup newer than {}), or force it",
                store.url(),
                not_counted(&skipped),
                words(max_age)
            ),
            Hint::option(FORCE),
        ));
    };
    let age_of = |at: DateTime<Utc>| (now - at).to_std().unwrap_or_default();
    let fresh: Vec<_> = ours
        .iter()
        .filter(|b| age_of(b.manifest.created_at) <= max_age)
        .collect();
    if fresh.is_empty() {
        let err = stale(
            store.url(),
            cluster_id,
            &newest.object,
            age_of(newest.manifest.created_at),
            max_age,
        );
        return Err(with_skipped(err, &skipped));
    }
    let cluster = cluster_id;
    let (identities, _) = request.identity.identities()?;
    let mut failures = Vec::new();
    for backup in fresh {
        match verify_backup(&store, &backup.object, &identities, &NoProgress).await {
            Ok(_) => {
                return Ok(BackupEvidence {
                    store: store.url().to_string(),
                    object: backup.object.clone(),
                    created_at: backup.manifest.created_at,
                    age_seconds: age_of(backup.manifest.created_at).as_secs(),
                    revision: backup.manifest.revision,
                });
            }
            Err(SnapshotError::VerifyFailed { reason, .. }) => {
                failures.push(format!("{}: {reason}", backup.object));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(refused(
        format!(
            "no backup of cluster {cluster} newer than {} in {} verifies ({}): take a new backup, or force it",
            words(max_age),
            store.url(),
            failures.join("; ")
        ),
        Hint::option(FORCE),
    ))
}

/// What a backup is checked against: the cluster as it is now.
struct CurrentCluster {
    id: MemberId,
    members: Vec<MemberId>,
    revision: i64,
}

impl CurrentCluster {
    /// Why `backup` (of this cluster ID) does not count, if it does not.
    fn excludes(&self, backup: &BackupEntry, now: DateTime<Utc>) -> Option<String> {
        let m = &backup.manifest;
        if m.created_at > now + FUTURE_TOLERANCE {
            return Some(format!(
                "dated {}, in the future (more than {} ahead of this host's clock): it does not count as fresh; fix the clock of the host that saved it and take a new backup",
                m.created_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                words(FUTURE_TOLERANCE)
            ));
        }
        if m.revision > self.revision {
            return Some(format!(
                "its revision {} is above the cluster's current {}: a backup of another cluster with the same ID (a default restore shares it)",
                m.revision, self.revision
            ));
        }
        if !self.members.contains(&m.member_id) {
            return Some(format!(
                "streamed from member {}, which is no current member: a backup of another cluster with the same ID, or of a member removed since",
                m.member_id
            ));
        }
        None
    }
}

/// The cluster's current revision: the header of a count-only read.
async fn current_revision(client: &Client) -> Result<i64> {
    let request = etcd_core::GetRequest {
        key: b"health".to_vec(),
        count_only: true,
        ..etcd_core::GetRequest::default()
    };
    let summary = client.kv().get_pages(&request, |_| Ok(())).await?;
    Ok(summary.revision)
}

/// ` (not counted: WHY; WHY)` for the backups of this cluster ID left out, or nothing.
fn not_counted(skipped: &[String]) -> String {
    if skipped.is_empty() {
        String::new()
    } else {
        format!(" that counts (not counted: {})", skipped.join("; "))
    }
}

/// A refusal with the backups left out appended to its reason.
fn with_skipped(err: Error, skipped: &[String]) -> Error {
    match err {
        Error::Refused { reason, hint } if !skipped.is_empty() => Error::Refused {
            reason: format!("{reason} (not counted: {})", skipped.join("; ")),
            hint,
        },
        other => other,
    }
}

fn stale(store: &str, cluster: MemberId, object: &str, age: Duration, max: Duration) -> Error {
    refused(
        format!(
            "the newest backup of cluster {cluster} in {store} ({object}) is {} old, older than the {} allowed: take a new backup first, allow an older one, or force it",
            words(age),
            words(max)
        ),
        Hint::any_of(&[MAX_BACKUP_AGE, FORCE]),
    )
}

fn refused(reason: String, hint: Hint) -> Error {
    Error::Refused { reason, hint }
}

/// A duration in words as the duration options take it: `1h30m`, `45m`, `20s`.
fn words(duration: Duration) -> String {
    let total = duration.as_secs();
    let (d, h, m, s) = (
        total / 86400,
        total % 86400 / 3600,
        total % 3600 / 60,
        total % 60,
    );
    let mut out = String::new();
    for (value, unit) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
        if value > 0 {
            out.push_str(&format!("{value}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_options_take_them() {
        assert_eq!(words(Duration::from_secs(3600)), "1h");
        assert_eq!(words(Duration::from_secs(5400)), "1h30m");
        assert_eq!(words(Duration::from_secs(86400 + 61)), "1d1m1s");
        assert_eq!(words(Duration::ZERO), "0s");
        for d in [5400, 61, 86400 + 7] {
            let text = words(Duration::from_secs(d));
            assert_eq!(
                etcd_common::parse_duration(&text).unwrap(),
                Duration::from_secs(d),
                "{text}"
            );
        }
    }

    fn entry(created_at: &str, revision: i64, member: &str) -> BackupEntry {
        let manifest = serde_json::from_value(serde_json::json!({
            "format_version": 1, "tool": "etcdops", "tool_version": "0",
            "created_at": created_at, "completed_at": created_at,
            "cluster_id": "abc", "member_id": member, "member_name": "m",
            "endpoint": "http://e", "etcd_version": "3.5.1", "revision": revision,
            "raft_term": 2, "raft_index": 9, "db_size": 1, "db_size_in_use": 1,
            "db_sha256": "00", "object": "x.db", "object_sha256": "00", "object_size": 1,
            "compression": "none", "compression_level": null, "verified_after_upload": false,
            "labels": {}
        }))
        .unwrap();
        BackupEntry {
            object: "x.db".into(),
            manifest_name: "x.db.manifest.json".into(),
            complete: true,
            manifest,
            deltas: Vec::new(),
            chain: None,
        }
    }

    #[test]
    fn a_backup_dated_in_the_future_or_of_another_history_does_not_count() {
        let cluster = CurrentCluster {
            id: MemberId(0xabc),
            members: vec![MemberId(0x1), MemberId(0x2)],
            revision: 100,
        };
        let now: DateTime<Utc> = "2026-12-01T12:00:00Z".parse().unwrap();
        let fine = entry("2026-12-01T11:59:00Z", 100, "2");
        assert_eq!(cluster.excludes(&fine, now), None);
        // Within the clock skew prune allows: fine.
        let skewed = entry("2026-12-01T12:04:00Z", 50, "1");
        assert_eq!(cluster.excludes(&skewed, now), None);
        let future = cluster
            .excludes(&entry("2031-01-01T00:00:00Z", 50, "1"), now)
            .unwrap();
        assert!(future.contains("in the future"), "{future}");
        assert!(future.contains("does not count as fresh"), "{future}");
        let ahead = cluster
            .excludes(&entry("2026-12-01T11:00:00Z", 101, "1"), now)
            .unwrap();
        assert!(ahead.contains("revision 101 is above"), "{ahead}");
        let stranger = cluster
            .excludes(&entry("2026-12-01T11:00:00Z", 10, "7"), now)
            .unwrap();
        assert!(stranger.contains("no current member"), "{stranger}");
    }

    #[test]
    fn a_stale_backup_names_its_age_and_what_gets_past_it() {
        let err = stale(
            "file:///b",
            MemberId(0xabc),
            "etcd-abc/x.db",
            Duration::from_secs(7200),
            DEFAULT_MAX_BACKUP_AGE,
        );
        let text = err.to_string();
        assert!(text.contains("2h old, older than the 1h allowed"), "{text}");
        assert!(
            !text.contains("--"),
            "no CLI spelling in a library message: {text}"
        );
        let hint = crate::hint_of(&err).unwrap();
        assert_eq!(hint.options, vec![MAX_BACKUP_AGE, FORCE]);
    }
}
