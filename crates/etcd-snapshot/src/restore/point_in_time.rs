//! A chain's delta segments as the changes etcd-data's restore replays, and this crate's
//! errors as a restore's.

use std::collections::BTreeSet;

use bbolt::{AppendReport, BoltError};
use etcd_common::OptionId;
use etcd_data::restore::{AppendChanges, LeasePlan, Replay, RestoreError, opts};

use crate::delta::{DeltaReplay, ReplaySummary, lease_entry};
use crate::error::SnapshotError;

impl Replay for DeltaReplay {
    type Summary = ReplaySummary;

    fn target_revision(&self) -> i64 {
        DeltaReplay::target_revision(self)
    }

    fn target_option(&self) -> OptionId {
        if self.summary.target_time.is_some() {
            opts::TO_TIME
        } else {
            opts::TO_REVISION
        }
    }

    fn base_name(&self) -> &str {
        &self.summary.full
    }

    fn plan_leases(
        &mut self,
        db_revision: i64,
        existing: &BTreeSet<i64>,
    ) -> Result<LeasePlan, BoltError> {
        let planned = DeltaReplay::plan_leases(self, db_revision, existing)?;
        Ok(LeasePlan {
            add: planned
                .recreate
                .into_iter()
                .map(|(id, ttl)| lease_entry(id, ttl))
                .collect(),
            remove: planned.remove,
            detach: planned.detach,
        })
    }

    fn replay_into(
        &mut self,
        db_revision: i64,
        detach: &BTreeSet<i64>,
        write: &mut AppendChanges<'_>,
    ) -> Result<AppendReport, BoltError> {
        let mut summary = self.summary.clone();
        let mut changes = self.changes(db_revision, detach);
        let report = write(&mut changes)?;
        changes.record_in(&mut summary);
        self.summary = summary;
        Ok(report)
    }

    fn summary(&self) -> ReplaySummary {
        self.summary.clone()
    }
}

/// This crate's errors in a restore: etcd-data's own as they are, the others (a store, a
/// manifest, a plan) kept as the source of [`RestoreError::Fetch`].
impl From<SnapshotError> for RestoreError {
    fn from(e: SnapshotError) -> Self {
        match e {
            SnapshotError::Data(e) => RestoreError::Snapshot(e),
            other => RestoreError::Fetch(Box::new(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcd_common::{Hint, Hinted, options};

    #[test]
    fn a_restore_keeps_this_crates_errors_as_sources_and_etcd_datas_as_its_own() {
        let damaged = SnapshotError::Data(etcd_data::Error::HashMismatch {
            name: "b.db".into(),
            expected: "aa".into(),
            actual: "bb".into(),
        });
        let restore = RestoreError::from(damaged);
        assert!(matches!(
            restore,
            RestoreError::Snapshot(etcd_data::Error::HashMismatch { .. })
        ));
        assert_eq!(restore.hint(), Some(Hint::option(options::SKIP_HASH_CHECK)));
        assert!(!restore.to_string().contains("--"), "{restore}");

        let refused = RestoreError::from(SnapshotError::VerifyFailed {
            name: "b.db".into(),
            reason: "replaced".into(),
        });
        let text = refused.to_string();
        assert!(text.contains("backup 'b.db' failed verification"), "{text}");
        let source = std::error::Error::source(&refused).expect("the store's error is kept");
        assert!(matches!(
            source.downcast_ref::<SnapshotError>(),
            Some(SnapshotError::VerifyFailed { .. })
        ));
    }

    #[test]
    fn a_point_in_time_target_names_the_option_that_set_it() {
        use crate::delta::PointInTime;
        let by_revision = DeltaReplay::new("full", PointInTime::Revision(9), 5);
        assert_eq!(Replay::target_option(&by_revision), opts::TO_REVISION);
        assert_eq!(Replay::target_revision(&by_revision), 9);
        assert_eq!(Replay::base_name(&by_revision), "full");
        let by_time = DeltaReplay::new("full", PointInTime::Time(chrono::Utc::now()), 5);
        assert_eq!(Replay::target_option(&by_time), opts::TO_TIME);
    }
}
