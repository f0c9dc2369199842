//! Native `snapshot restore`: etcd-data's restore of a snapshot into the data dir of a member
//! of a new cluster (see [`etcd_data::restore`]), plus what needs a store: opening the source
//! (a file, a stored backup checked against its manifest, a surviving member's data dir) and
//! the point-in-time restore of a chain (a full backup and its delta segments replayed).

mod point_in_time;
mod source;

use crate::delta::{DeltaReplay, ReplaySummary};
use crate::input::SnapshotFile;

pub use etcd_data::restore::{
    MARKER_FILE, RestoreError, RestoreGuard, RestoreMarker, RestoreRequest, RestoredMember,
    Unguarded, V2Snapshot, cluster_id, db_revision, member_id, parse_initial_cluster, read_marker,
    restore_spool_dir, validate_restore_request, wal_usage,
};
pub(crate) use source::open_checked_object;

/// The largest manifest read beside a local backup file (etcdops writes a few KiB).
pub(crate) const MAX_MANIFEST_BYTES: u64 = 1 << 20;
pub use source::{
    PointInTimeSource, RestoreSource, open_chain_point, open_point_in_time, open_restore_source,
    restore_to_point,
};

/// What a restore wrote; a point-in-time restore's [`ReplaySummary`] in `point_in_time`.
pub type RestoreResult = etcd_data::RestoreResult<ReplaySummary>;

/// Restores `snapshot` (`name` is for messages) into a new data dir. The db is copied as a
/// stream into a temporary dir beside the target (its SHA-256 computed on the way), checked
/// there page by page, and rewritten in place with copy-on-write pages: memory stays small
/// whatever the db's size. `guard` is asked first (see [`RestoreGuard`]): its refusal
/// writes nothing.
pub fn restore_snapshot(
    name: &str,
    snapshot: &SnapshotFile,
    request: &RestoreRequest,
    guard: &dyn RestoreGuard,
) -> Result<RestoreResult, RestoreError> {
    restore_point_in_time(name, snapshot, request, None, guard)
}

/// [`restore_snapshot`], then the changes of `replay` (a chain's delta segments) appended to
/// the restored db's `key` bucket up to the replay's target revision, with their original
/// revisions; leases granted after the full backup are recreated (or detached, see
/// [`ReplaySummary`]). The db is rewritten before the WAL and snap files are made, so the
/// result is a plain restore of the state at the target revision. `guard` is asked first.
pub fn restore_point_in_time(
    name: &str,
    snapshot: &SnapshotFile,
    request: &RestoreRequest,
    replay: Option<&mut DeltaReplay>,
    guard: &dyn RestoreGuard,
) -> Result<RestoreResult, RestoreError> {
    etcd_data::restore_with_replay(name, snapshot, request, replay, guard)
}
