//! A chain's delta segments as the changes etcd-data's restore replays, and this crate's
//! errors as a restore's.

use std::collections::BTreeSet;

use bbolt::{AppendReport, BoltError};
use etcd_common::OptionId;
use etcd_data::restore::{KeyEntry, Replay, RestoreError, opts};

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
    ) -> Result<(Vec<KeyEntry>, BTreeSet<i64>), BoltError> {
        let (recreate, detach) = DeltaReplay::plan_leases(self, db_revision, existing)?;
        let entries = recreate
            .into_iter()
            .map(|(id, ttl)| lease_entry(id, ttl))
            .collect();
        Ok((entries, detach))
    }

    fn replay_into(
        &mut self,
        db_revision: i64,
        detach: &BTreeSet<i64>,
        write: &mut dyn FnMut(
            &mut dyn Iterator<Item = Result<KeyEntry, BoltError>>,
        ) -> Result<AppendReport, BoltError>,
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
