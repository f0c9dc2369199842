//! Changes replayed into a restored db (a point-in-time restore): what the restore asks of
//! whoever holds them.

use std::collections::BTreeSet;

use bbolt::{AppendReport, BoltError};
use etcd_common::OptionId;
use serde::Serialize;

/// One entry of etcd's `key` bucket: revision key and `mvccpb.KeyValue` bytes.
pub type KeyEntry = (Vec<u8>, Vec<u8>);

/// The changes of a replay, in revision order.
pub type Changes<'a> = dyn Iterator<Item = Result<KeyEntry, BoltError>> + 'a;

/// What appends a replay's changes to the db (see [`Replay::replay_into`]).
pub type AppendChanges<'a> = dyn FnMut(&mut Changes<'_>) -> Result<AppendReport, BoltError> + 'a;

/// What a replay changes in the restored db's `lease` bucket: a point-in-time restore holds
/// the leases of its target revision, not of the snapshot's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeasePlan {
    /// Entries to add (leases granted after the snapshot that the target holds), in etcd's
    /// `leasepb.Lease` form, keyed by the ID's 8 big-endian bytes.
    pub add: Vec<KeyEntry>,
    /// IDs of the snapshot's leases that were gone at the target.
    pub remove: BTreeSet<i64>,
    /// IDs to take off the changes (their TTL is unknown).
    pub detach: BTreeSet<i64>,
}

/// Changes after a snapshot's revision, appended to the restored db's `key` bucket up to a
/// target revision, with the leases they use (see [`super::restore_with_replay`]).
pub trait Replay {
    /// What the replay reports in [`super::RestoreResult::point_in_time`].
    type Summary: Clone + std::fmt::Debug + PartialEq + Eq + Serialize;

    /// The revision the restore stops at.
    fn target_revision(&self) -> i64;

    /// The option that set the target (for the error when the snapshot is past it).
    fn target_option(&self) -> OptionId;

    /// The snapshot the changes continue, for messages.
    fn base_name(&self) -> &str;

    /// How the db's `lease` bucket becomes the target's: entries to add, IDs to take out,
    /// and IDs to take off the changes. `existing` are the IDs the db's `lease` bucket holds.
    fn plan_leases(
        &mut self,
        db_revision: i64,
        existing: &BTreeSet<i64>,
    ) -> Result<LeasePlan, BoltError>;

    /// Hands `write` the changes after `db_revision` up to the target, in revision order,
    /// leases in `detach` taken off; records what was applied for [`Replay::summary`].
    fn replay_into(
        &mut self,
        db_revision: i64,
        detach: &BTreeSet<i64>,
        write: &mut AppendChanges<'_>,
    ) -> Result<AppendReport, BoltError>;

    /// What was (or, before the restore, will be) applied.
    fn summary(&self) -> Self::Summary;
}

/// No replay: a plain restore of the snapshot. Has no values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum NoReplay {}

impl Replay for NoReplay {
    type Summary = NoReplay;

    fn target_revision(&self) -> i64 {
        match *self {}
    }

    fn target_option(&self) -> OptionId {
        match *self {}
    }

    fn base_name(&self) -> &str {
        match *self {}
    }

    fn plan_leases(&mut self, _: i64, _: &BTreeSet<i64>) -> Result<LeasePlan, BoltError> {
        match *self {}
    }

    fn replay_into(
        &mut self,
        _: i64,
        _: &BTreeSet<i64>,
        _: &mut AppendChanges<'_>,
    ) -> Result<AppendReport, BoltError> {
        match *self {}
    }

    fn summary(&self) -> NoReplay {
        match *self {}
    }
}
