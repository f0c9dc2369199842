//! A chain's delta segments as the changes etcd-data's restore replays, and this crate's
//! errors as a restore's.

use std::collections::BTreeSet;

use bbolt::{AppendReport, BoltError};
use etcd_common::OptionId;
use etcd_data::restore::{AppendChanges, LeasePlan, Replay, RestoreError, opts};

use crate::delta::{DeltaReplay, ReplaySummary, lease_entry};
use crate::error::SnapshotError;

/// One change read from the segments (or the error that ended the reading).
type ChangeItem = Result<(Vec<u8>, Vec<u8>), BoltError>;
/// Changes per batch handed from the reading thread to the writing one, at most.
const BATCH: usize = 1024;
/// Bytes (keys and values) per batch: a batch ends at [`BATCH`] changes or once it holds
/// this many bytes, so large values do not multiply the memory by [`BATCH`].
const BATCH_BYTES: usize = 1 << 20;
/// Batches the reading thread may be ahead (at most about 8 MiB, plus one change each).
const BATCHES_AHEAD: usize = 8;

/// Sends `changes` through `send` in batches of at most [`BATCH`] changes and about
/// [`BATCH_BYTES`] bytes (a batch ends with the change that reaches it). Stops early when the
/// receiving side is gone (the writer stopped on an error).
fn send_in_batches(
    changes: impl Iterator<Item = ChangeItem>,
    send: &std::sync::mpsc::SyncSender<Vec<ChangeItem>>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut bytes = 0;
    for item in changes {
        if let Ok((key, value)) = &item {
            bytes += key.len() + value.len();
        }
        batch.push(item);
        if batch.len() == BATCH || bytes >= BATCH_BYTES {
            bytes = 0;
            // A closed channel: the writer stopped (an error); so does the reader.
            if send
                .send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                .is_err()
            {
                return;
            }
        }
    }
    if !batch.is_empty() {
        let _ = send.send(batch);
    }
}

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

    /// The segments are read and decoded on a second thread while this one writes the
    /// pages (a million changes are about a second of each): batches of changes pass
    /// through a bounded channel, so memory stays at a few batches.
    fn replay_into(
        &mut self,
        db_revision: i64,
        detach: &BTreeSet<i64>,
        write: &mut AppendChanges<'_>,
    ) -> Result<AppendReport, BoltError> {
        let mut summary = self.summary.clone();
        let replay = &*self;
        let (report, counted) = std::thread::scope(|scope| {
            let (send, receive) = std::sync::mpsc::sync_channel::<Vec<ChangeItem>>(BATCHES_AHEAD);
            let reader = scope.spawn(move || {
                let mut changes = replay.changes(db_revision, detach);
                send_in_batches(changes.by_ref(), &send);
                drop(send);
                let mut counted = ReplaySummary::default();
                changes.record_in(&mut counted);
                counted
            });
            let mut received = receive.into_iter().flatten();
            let report = write(&mut received);
            drop(received);
            let counted = reader.join().map_err(|_| BoltError::Check {
                problems: vec!["the thread reading the delta segments panicked".into()],
            });
            (report, counted)
        });
        let report = report?;
        let counted = counted?;
        summary.changes_applied = counted.changes_applied;
        summary.changes_detached = counted.changes_detached;
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
    fn large_changes_pass_to_the_writer_in_batches_of_about_a_mebibyte() {
        // 64 changes of 256 KiB: one batch of them all would hold 16 MiB.
        let value = vec![7u8; 256 << 10];
        let changes = (0..64u64).map(|i| Ok((i.to_be_bytes().to_vec(), value.clone())));
        let (send, receive) = std::sync::mpsc::sync_channel(64);
        send_in_batches(changes, &send);
        drop(send);
        let batches: Vec<Vec<ChangeItem>> = receive.into_iter().collect();
        let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 64);
        for batch in &batches {
            let bytes: usize = batch
                .iter()
                .map(|c| c.as_ref().map_or(0, |(k, v)| k.len() + v.len()))
                .sum();
            assert!(bytes <= BATCH_BYTES + value.len() + 8, "{sizes:?}");
        }
        // Small changes still go 1024 at a time, in order, the last batch holding the rest.
        let changes = (0..2500u64).map(|i| Ok((i.to_be_bytes().to_vec(), vec![1u8; 10])));
        let (send, receive) = std::sync::mpsc::sync_channel(8);
        std::thread::scope(|scope| {
            scope.spawn(move || send_in_batches(changes, &send));
            let batches: Vec<Vec<ChangeItem>> = receive.into_iter().collect();
            assert_eq!(
                batches.iter().map(Vec::len).collect::<Vec<_>>(),
                [1024, 1024, 452]
            );
            let keys: Vec<u64> = batches
                .into_iter()
                .flatten()
                .map(|c| u64::from_be_bytes(c.unwrap().0.try_into().unwrap()))
                .collect();
            assert_eq!(keys, (0..2500).collect::<Vec<_>>());
        });
    }

    #[test]
    fn the_reader_stops_once_the_writer_is_gone() {
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        drop(receive);
        let mut read = 0;
        let changes = (0..1_000_000u64).map(|i| {
            read += 1;
            Ok((i.to_be_bytes().to_vec(), Vec::new()))
        });
        send_in_batches(changes, &send);
        assert_eq!(read, BATCH);
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
