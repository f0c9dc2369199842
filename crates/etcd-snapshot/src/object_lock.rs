//! S3 Object Lock on saved backups: the retention a save sets on its backup object and
//! manifest (governance or compliance, until the backup's date plus a period), and how prune
//! and delete read it back from the manifest to keep a backup S3 would not let them delete.
//!
//! The manifest records the retention because S3 cannot be trusted to refuse a delete: on a
//! bucket with Object Lock (always versioned) a DELETE without a version id succeeds and adds
//! a delete marker, hiding a backup that still exists (and is still paid for).

use std::time::Duration;

use chrono::{DateTime, Utc};
use etcd_common::InvalidOption;
use etcd_store::{LockMode, ObjectLock, Store};

use crate::catalog::BackupEntry;
use crate::error::{Result, SnapshotError};
use crate::opts::{OBJECT_LOCK_MODE, OBJECT_LOCK_RETAIN};

/// The retention a save sets: its mode, and how long after the backup's date it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockRequest {
    /// Governance or compliance.
    pub mode: LockMode,
    /// How long after the backup's `created_at` the retention holds.
    pub retain: Duration,
}

/// The longest retention taken: 100 years (S3 takes any date; a longer one is a typo).
const MAX_RETAIN: Duration = Duration::from_secs(100 * 365 * 86400);

impl LockRequest {
    /// The retention of a backup dated `created_at`: until `created_at + retain`, rounded
    /// up to the whole second (S3 dates have seconds), so it never ends before the period.
    pub fn until(&self, created_at: DateTime<Utc>) -> ObjectLock {
        let end = created_at + chrono::Duration::from_std(self.retain).unwrap_or_default();
        let whole = DateTime::from_timestamp(end.timestamp(), 0).unwrap_or(end);
        let retain_until = if whole < end {
            whole + chrono::Duration::seconds(1)
        } else {
            whole
        };
        ObjectLock {
            mode: self.mode,
            retain_until,
        }
    }

    /// Refuses a period of zero or above 100 years, and a store that cannot lock (only S3
    /// can), before anything is saved.
    pub fn check(&self, store: &Store) -> Result<()> {
        if self.retain.is_zero() || self.retain > MAX_RETAIN {
            return Err(InvalidOption::new(
                OBJECT_LOCK_RETAIN,
                "must be from 1s to 100 years (e.g. 30d)",
            )
            .into());
        }
        if !store.supports_object_lock() {
            return Err(InvalidOption::new(
                OBJECT_LOCK_MODE,
                format!(
                    "needs an S3 store: {} is not one (Object Lock is set on S3 buckets only, \
                     not on local dirs, GCS or Azure); save to an s3:// bucket created with \
                     Object Lock, or drop the lock",
                    store.url()
                ),
            )
            .into());
        }
        Ok(())
    }
}

/// The latest of `locks` that still holds at `now`.
fn latest_holding(
    locks: impl IntoIterator<Item = ObjectLock>,
    now: DateTime<Utc>,
) -> Option<ObjectLock> {
    locks
        .into_iter()
        .filter(|lock| lock.holds_at(now))
        .max_by_key(|lock| lock.retain_until)
}

/// The retention that holds a backup and its chain at `now`: the latest among its manifest's
/// and its segments' that still holds.
pub(crate) fn holding(backup: &BackupEntry, now: DateTime<Utc>) -> Option<ObjectLock> {
    latest_holding(
        std::iter::once(backup.manifest.object_lock)
            .chain(backup.deltas.iter().map(|d| d.manifest.object_lock))
            .flatten(),
        now,
    )
}

/// How a retention is said: `compliance lock until 2026-12-31T23:59:59Z`.
pub(crate) fn describe(lock: &ObjectLock) -> String {
    format!(
        "{} lock until {}",
        lock.mode,
        lock.retain_until.format("%Y-%m-%dT%H:%M:%SZ")
    )
}

/// Refuses to delete `object` when one of `locks` (its own and its chain's) still holds.
pub(crate) fn refuse_if_any_holds(
    object: &str,
    locks: impl IntoIterator<Item = ObjectLock>,
    now: DateTime<Utc>,
) -> Result<()> {
    match latest_holding(locks, now) {
        Some(lock) => Err(SnapshotError::ObjectLocked {
            object: object.to_string(),
            lock: describe(&lock),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn the_retention_ends_the_period_after_the_backup_rounded_up_to_the_second() {
        let request = LockRequest {
            mode: LockMode::Governance,
            retain: Duration::from_secs(7 * 86400),
        };
        let lock = request.until(at("2026-12-01T10:00:00.250Z"));
        assert_eq!(lock.retain_until, at("2026-12-08T10:00:01Z"));
        assert_eq!(lock.mode, LockMode::Governance);
        // Already whole: unchanged.
        let lock = request.until(at("2026-12-01T10:00:00Z"));
        assert_eq!(lock.retain_until, at("2026-12-08T10:00:00Z"));
    }

    #[test]
    fn a_zero_or_absurd_period_and_a_local_store_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let local = Store::open(
            dir.path().to_str().unwrap(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap();
        let request = |secs| LockRequest {
            mode: LockMode::Compliance,
            retain: Duration::from_secs(secs),
        };
        for (secs, option) in [
            (0, "object_lock_retain"),
            (101 * 365 * 86400, "object_lock_retain"),
            (60, "object_lock_mode"),
        ] {
            let err = request(secs).check(&local).unwrap_err();
            let hint =
                etcd_common::Hinted::hint(&err).map(|h| h.render(etcd_common::Style::Module));
            assert!(
                hint.as_deref().is_some_and(|h| h.contains(option)),
                "{secs}: {err} ({hint:?})"
            );
        }
        assert!(
            request(60)
                .check(&local)
                .unwrap_err()
                .to_string()
                .contains("needs an S3 store")
        );
    }

    #[test]
    fn a_backup_is_held_until_the_latest_date_of_its_chain_and_not_after() {
        let lock = |until: &str| ObjectLock {
            mode: LockMode::Compliance,
            retain_until: at(until),
        };
        let (early, late) = (lock("2026-12-08T10:00:00Z"), lock("2026-12-09T10:00:00Z"));
        assert_eq!(
            latest_holding([early, late], at("2026-12-01T00:00:00Z")),
            Some(late)
        );
        assert_eq!(
            latest_holding([early, late], at("2026-12-08T10:00:00Z")),
            Some(late)
        );
        assert_eq!(latest_holding([early], at("2026-12-08T10:00:00Z")), None);
        assert_eq!(latest_holding([], at("2026-12-01T00:00:00Z")), None);
        let err = refuse_if_any_holds("b", [early, late], at("2026-12-01T00:00:00Z")).unwrap_err();
        assert!(
            err.to_string()
                .contains("compliance lock until 2026-12-09T10:00:00Z"),
            "{err}"
        );
        refuse_if_any_holds("b", [early, late], at("2026-12-10T00:00:00Z")).unwrap();
    }
}
