//! What a stopped member's data dir holds, read offline without etcd: the WAL (last entry,
//! HardState, raft snapshots, the terms it saw), the newest `.snap` file and the db's applied
//! index. This is what choosing the survivor of a quorum loss needs: which member committed
//! the most, and whether its WAL holds committed writes its db does not have yet.
//!
//! The types below are the contract the survivor choice (`etcdops::quorum`) and the module
//! `etcd_data_dir_info` build on.

mod data_dir;
mod error;
mod membership;
mod pb;
mod snap_files;
mod tail;
#[cfg(test)]
mod tests;
mod wal_reader;

use serde::{Deserialize, Serialize};

use crate::status::DbMember;

pub use data_dir::{inspect_data_dir, read_wal_bytes, read_wal_dir};
pub use error::InspectError;
pub use membership::{MembershipChange, MembershipChangeKind};
pub use snap_files::{decode_snap_file, newest_snap, parse_snap_name};
pub use tail::{TailAdoption, adopt_wal_tail, plan_wal_tail};
pub use wal_reader::{WalEnd, WalScanner, parse_segment_name};

/// The raft state etcd persists in the WAL after every Ready: term, vote and commit index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardState {
    /// Current term.
    pub term: u64,
    /// Member voted for in that term (0: none).
    pub vote: u64,
    /// Highest log index this member knows is committed.
    pub commit: u64,
}

/// A raft snapshot position (a WAL snapshot record or a `.snap` file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapPosition {
    /// Raft index the snapshot covers.
    pub index: u64,
    /// Term of that index.
    pub term: u64,
}

/// The first index of the log at which a term begins (the WAL's entries, after raft's
/// overwrites): two members' logs agree at index `i` when the same term covers `i` in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermStart {
    /// Term.
    pub term: u64,
    /// First index carrying it.
    pub first_index: u64,
}

/// What the WAL says, read as etcd reads it at start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalSummary {
    /// Segment files read, in order.
    pub segments: Vec<String>,
    /// Member ID from the metadata record, lowercase hex.
    pub member_id: String,
    /// Cluster ID from the metadata record, lowercase hex.
    pub cluster_id: String,
    /// The last HardState record.
    pub hard_state: HardState,
    /// Index of the last entry in the log (after overwrites); the snapshot's index when the
    /// WAL holds no entry after it.
    pub last_index: u64,
    /// Term of that entry.
    pub last_term: u64,
    /// Term of the entry at `hard_state.commit` (what "highest committed (term, index)"
    /// compares); `None` when that entry is not in the WAL (covered by a snapshot older
    /// than the WAL's first entry: then the snapshot's term when it is exactly that index).
    pub commit_term: Option<u64>,
    /// The newest snapshot record in the WAL.
    pub snapshot: SnapPosition,
    /// Where each term begins among the WAL's entries, oldest first.
    pub term_starts: Vec<TermStart>,
    /// Entries after `hard_state.commit` (appended, not known to be committed: etcd's
    /// `--force-new-cluster` discards them).
    pub uncommitted_entries: u64,
    /// A torn last record (a write cut by a crash) was ignored, as etcd's repair does.
    pub torn_tail: bool,
    /// The membership changes among the WAL's entries (after raft's overwrites), oldest
    /// first: what tells the members when the db has not been written yet. A WAL that
    /// starts after a snapshot holds only the changes since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub membership_changes: Vec<MembershipChange>,
}

/// What the db says (its `meta`, `key` and `members` buckets).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbSummary {
    /// Main revision of the newest key revision (0 when empty).
    pub revision: i64,
    /// Last finished compaction.
    pub compact_revision: Option<i64>,
    /// `meta/consistent_index`: the raft index the db has applied.
    pub consistent_index: u64,
    /// `meta/term` (3.5 and later).
    pub term: Option<u64>,
    /// Members in the `members` bucket.
    pub members: Vec<DbMember>,
    /// db file size in bytes.
    pub size: u64,
}

/// A stopped member's data dir, inspected offline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataDirInspection {
    /// The data dir (the one holding `member/`).
    pub data_dir: String,
    /// A running etcd holds the db's lock: the figures below may be stale; a survivor is
    /// never chosen from a locked dir.
    pub locked: bool,
    /// The WAL.
    pub wal: WalSummary,
    /// The newest `member/snap/*.snap` file's position (`None`: no snap file).
    pub snap_file: Option<SnapPosition>,
    /// The db.
    pub db: DbSummary,
    /// Committed entries in the WAL beyond what the db applied
    /// (`hard_state.commit - db.consistent_index`, 0 when not ahead): what a recovery from the
    /// db alone would lose and one through etcd's WAL replay keeps.
    pub committed_entries_beyond_db: u64,
    /// Whether the member is a learner in its own db's membership.
    pub is_learner: bool,
}

impl DataDirInspection {
    /// The cluster's members as far as this dir knows: the db's `members` bucket when it
    /// names any, else the committed membership changes of the WAL (a db not written yet,
    /// as when etcd was killed right after its start). Guards read this, never the db's
    /// bucket alone: an empty bucket does not mean a cluster without other members.
    pub fn membership(&self) -> Vec<DbMember> {
        if self.db.members.is_empty() {
            membership::members_after(&self.wal.membership_changes, self.wal.hard_state.commit)
        } else {
            self.db.members.clone()
        }
    }
}
