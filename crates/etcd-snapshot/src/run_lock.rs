//! The writer lock of `backup run`: one small JSON object per cluster folder of a store,
//! `etcd-<cluster>/backup-run.lock.json`, that says which process is writing that cluster's
//! chain, which full backup the chain continues, and until when the claim holds.
//!
//! Two readers depend on it: a second `backup run` on the same store and cluster refuses to
//! start while another holder's lock is live (two writers would reuse sequence numbers and
//! break the chain), and retention never deletes the full backup (nor its segments) named by
//! a live lock. The holder renews the lock well before it expires; a killed holder's lock
//! simply expires, so nothing has to clean it up for the next run to start.

use chrono::{DateTime, Utc};
use etcd_core::MemberId;
use serde::{Deserialize, Serialize};

use crate::error::{Result, SnapshotError};

/// The lock format this build writes.
pub const RUN_LOCK_FORMAT_VERSION: u32 = 1;

/// File name of the lock inside a cluster's folder.
pub const RUN_LOCK_FILE: &str = "backup-run.lock.json";

/// Name of the lock object of one cluster in a store: `etcd-<cluster>/backup-run.lock.json`.
pub fn run_lock_name(cluster_id: MemberId) -> String {
    format!("etcd-{cluster_id}/{RUN_LOCK_FILE}")
}

/// Whether an object name is a run lock (of any cluster folder).
pub fn is_run_lock(name: &str) -> bool {
    name.strip_prefix("etcd-")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(_, file)| file == RUN_LOCK_FILE)
}

/// One holder's claim on a cluster's chain in a store. Field names are part of the
/// documented schema (`docs/MANIFEST.md`); add fields, never rename them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunLock {
    /// Schema version ([`RUN_LOCK_FORMAT_VERSION`]).
    pub format_version: u32,
    /// A random token chosen by the holder at start: two processes never share one.
    pub holder: String,
    /// Host name of the holder, for the refusal message.
    pub host: String,
    /// Process ID of the holder, for the refusal message.
    pub pid: u32,
    /// Cluster the chain belongs to.
    pub cluster_id: MemberId,
    /// Object name of the full backup whose chain the holder is writing (absent while the
    /// first full backup is still being taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_backup: Option<String>,
    /// The previous full backup whose chain is still being finished while the next one
    /// overlaps it (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_full_backup: Option<String>,
    /// When the holder last wrote the lock.
    pub renewed_at: DateTime<Utc>,
    /// Until when the claim holds without another renewal.
    pub expires_at: DateTime<Utc>,
}

impl RunLock {
    /// Whether the claim still holds at `now`.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        now < self.expires_at
    }

    /// The full backups this lock protects from retention: the chain being written and the
    /// one it is still finishing.
    pub fn protected_backups(&self) -> impl Iterator<Item = &str> {
        self.full_backup
            .iter()
            .chain(self.previous_full_backup.iter())
            .map(String::as_str)
    }

    /// Serializes the lock for the store.
    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Parses a stored lock; `name` is used in the error.
    pub fn from_json(name: &str, bytes: &[u8]) -> Result<RunLock> {
        let lock: RunLock =
            serde_json::from_slice(bytes).map_err(|e| SnapshotError::BadManifest {
                name: name.to_string(),
                reason: e.to_string(),
            })?;
        if lock.format_version > RUN_LOCK_FORMAT_VERSION {
            return Err(SnapshotError::BadManifest {
                name: name.to_string(),
                reason: format!(
                    "lock format {} is newer than this etcdops understands ({}); upgrade etcdops",
                    lock.format_version, RUN_LOCK_FORMAT_VERSION
                ),
            });
        }
        Ok(lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn lock(expires_in: i64) -> RunLock {
        let now = Utc::now();
        RunLock {
            format_version: RUN_LOCK_FORMAT_VERSION,
            holder: "a1b2".into(),
            host: "h".into(),
            pid: 7,
            cluster_id: MemberId(0xabc),
            full_backup: Some("etcd-0000000000000abc/x.db.zst".into()),
            previous_full_backup: None,
            renewed_at: now,
            expires_at: now + Duration::seconds(expires_in),
        }
    }

    #[test]
    fn round_trips_and_expires() {
        let l = lock(60);
        let back = RunLock::from_json("n", &l.to_json()).expect("parses");
        assert_eq!(back, l);
        assert!(l.is_live(Utc::now()));
        assert!(!lock(-1).is_live(Utc::now()));
        assert_eq!(l.protected_backups().count(), 1);
    }

    #[test]
    fn names_only_the_lock_in_a_cluster_folder() {
        let name = run_lock_name(MemberId(0xabc));
        assert!(is_run_lock(&name));
        assert!(!is_run_lock("backup-run.lock.json"));
        assert!(!is_run_lock("etcd-1/x/backup-run.lock.json"));
    }
}
