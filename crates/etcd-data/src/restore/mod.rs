//! Native `snapshot restore`: turns a snapshot into the data dir of a member of a new cluster,
//! as `etcdutl snapshot restore` does, without etcd's tools.
//!
//! The db (streamed once into the staging dir: a zstd, age or stored snapshot is decompressed
//! into an unnamed file there that the restore names, a plain one is copied; trailer checked
//! and stripped, then checked as bbolt page by page) gets the new membership, a consistent index equal to the number of members and term
//! 1, written copy-on-write in place: the db is never held in memory. Beside
//! it go the WAL (membership as raft conf changes, hard state, snapshot marker) and the raft
//! snap file (v2 store with the members). Everything is written to a temporary dir beside the
//! target (0700, see `staging`; those killed restores left are removed by the next), fsynced,
//! and renamed into place, the db never after the WAL (see `placement`). What differs between
//! releases follows the snapshot's storage version (see `release`). A non-empty data dir
//! or WAL dir is refused, or with `move_aside` renamed to `DIR.bak-<UTC time>` (never
//! deleted); a data dir a member runs on is refused (see `lock`). A marker,
//! `member/etcdops-restore.json`, makes repeating the same restore a no-op while the db, WAL
//! and snap file it vouches for are on disk (see `on_disk`).

mod db;
mod dirs;
mod error;
mod ids;
mod lock;
mod marker;
mod on_disk;
pub(crate) mod pb;
mod placement;
mod release;
mod replay;
mod replayed;
mod run;
mod selinux;
mod snap;
mod staging;
mod v2store;
mod validate;
pub(crate) mod wal;

use std::path::PathBuf;

use serde::Serialize;

use crate::status::TrailerCheck;

pub use db::db_revision;
pub use defaults as restore_defaults;
pub use dirs::{aside_source, aside_stamp, free_aside_path, resolve_owner, sync_dir};
pub use error::RestoreError;
pub(crate) use error::{invalid, io_err};
pub use ids::{RestoredMember, cluster_id, member_id, parse_initial_cluster};
pub use lock::{db_of, lock_shared, refuse_if_running};
pub use marker::{MARKER_FILE, RestoreMarker, read_marker, wal_usage};
pub use release::V2Snapshot;
pub use replay::{AppendChanges, Changes, KeyEntry, LeasePlan, NoReplay, Replay};
pub use replayed::{ReplayedDb, replay_into_db};
pub use run::{restore_snapshot, restore_with_replay};
pub use validate::{restore_spool_dir, validate_restore_request};

use dirs::make_dir;

/// The guard decision every restore into a data dir asks before it reads or writes
/// anything (also in a dry run): the OpenShift operator guard (cluster-etcd-operator owns
/// restores there). `etcdops::guard::Guards::check` for a snapshot restore hands out one
/// that is the real decision; [`Unguarded`] is the explicit "no guard" of tests and of tools
/// that took the decision themselves.
pub trait RestoreGuard {
    /// Lets the restore through, or refuses it (the restore's error then carries the
    /// refusal as its source, with the refusal's hint).
    fn check_restore(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// No guard at all: every restore passes. For tests, and for a tool that took the guard
/// decision itself; a program on an OpenShift host passes `etcdops::guard::Guards` instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unguarded;

impl RestoreGuard for Unguarded {
    fn check_restore(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Ok(())
    }
}

impl<G: RestoreGuard + ?Sized> RestoreGuard for &G {
    fn check_restore(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        (**self).check_restore()
    }
}

/// The options of a restore its errors name (by their neutral ids; a front-end spells them).
pub mod opts {
    pub use etcd_common::options::{
        BUMP_REVISION, DATA_DIR, INITIAL_ADVERTISE_PEER_URLS, INITIAL_CLUSTER,
        INITIAL_CLUSTER_TOKEN, MARK_COMPACTED, NAME, OWNER, TO_REVISION, TO_TIME, WAL_DIR,
    };
}

/// etcdutl's defaults for a restore's flags when they are absent (etcdutl 3.5 and 3.6 alike).
pub mod defaults {
    /// `--name`.
    pub const NAME: &str = "default";
    /// `--initial-advertise-peer-urls`.
    pub const PEER_URL: &str = "http://localhost:2380";
    /// `--initial-cluster-token`.
    pub const INITIAL_CLUSTER_TOKEN: &str = "etcd-cluster";
    /// `--initial-cluster`: the default member at the default peer URL, whatever `--name` is
    /// (etcdutl derives it from the default name, not from the name given).
    pub const INITIAL_CLUSTER: &str = "default=http://localhost:2380";

    /// `--data-dir`: `<name>.etcd`, in the current directory.
    pub fn data_dir(name: &str) -> std::path::PathBuf {
        format!("{name}.etcd").into()
    }
}

/// What to restore, and as which member of which new cluster.
#[derive(Debug, Clone, Default)]
pub struct RestoreRequest {
    /// This member's name; must appear in `initial_cluster`.
    pub name: String,
    /// `name=peer-url,...` for every member of the new cluster.
    pub initial_cluster: String,
    /// The new cluster's token (member IDs derive from it).
    pub initial_cluster_token: String,
    /// This member's peer URLs; must equal its URLs in `initial_cluster`.
    pub initial_advertise_peer_urls: Vec<String>,
    /// The data dir to create (absent or empty).
    pub data_dir: PathBuf,
    /// A separate WAL dir (absent or empty); default `<data dir>/member/wal`.
    pub wal_dir: Option<PathBuf>,
    /// Restore even when etcd's SHA-256 trailer does not match the db.
    pub skip_hash_check: bool,
    /// Raise the latest revision by this much (etcdutl's `--bump-revision`): a key with an
    /// empty value is put at (latest + N, 0). Needs `mark_compacted`.
    pub bump_revision: u64,
    /// Mark the (bumped) latest revision as scheduled for compaction, so clients watching
    /// older revisions are told to resync (etcdutl's `--mark-compacted`).
    pub mark_compacted: bool,
    /// Rename a non-empty data dir (and WAL dir) to `DIR.bak-<UTC time>` instead of refusing
    /// it; nothing is ever deleted.
    pub move_aside: bool,
    /// With `move_aside`: move it aside even when a member has run on a restored dir since.
    pub force: bool,
    /// With `move_aside`, for a whole-cluster restore that has stopped every member: a
    /// restored dir a member has run on since is moved aside and restored anew, also when it
    /// holds this very restore (its members went on without the others); no `force` needed.
    pub replace_ran: bool,
    /// `USER[:GROUP]` (names or numeric ids) to own the restored tree.
    pub owner: Option<String>,
    /// Run every check (source, options, target dirs) and report what would be written, but
    /// write nothing (check mode).
    pub dry_run: bool,
    /// Whether the raft `.snap` file (the v2 store with the members) is written beside the
    /// db and the WAL: by default as the snapshot's release's etcdutl does (see
    /// [`V2Snapshot`]).
    pub v2_snapshot: V2Snapshot,
}

/// What a restore wrote; `P` is what a replay (see [`Replay`]) reports of a point-in-time
/// restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoreResult<P = NoReplay> {
    /// The data dir written.
    pub data_dir: PathBuf,
    /// The WAL dir written.
    pub wal_dir: PathBuf,
    /// This member's name.
    pub name: String,
    /// This member's ID, hex.
    pub member_id: String,
    /// The new cluster's ID, hex.
    pub cluster_id: String,
    /// Members of the new cluster, by ID.
    pub members: Vec<RestoredMember>,
    /// MVCC revision of the snapshot (after --bump-revision).
    pub revision: i64,
    /// Consistent index and raft commit index written (the number of members).
    pub consistent_index: u64,
    /// Bytes of the db written.
    pub db_size: u64,
    /// What etcd's SHA-256 trailer said.
    pub trailer: TrailerCheck,
    /// SHA-256 of the snapshot's db (before the rewrite), hex.
    pub db_sha256: String,
    /// False when the data dir already held this very restore (nothing was touched).
    pub changed: bool,
    /// Where the previous data dir (and WAL dir) were moved with `move_aside`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved_aside: Vec<PathBuf>,
    /// A point-in-time restore: what its replay reports (for etcd-snapshot's chains: the
    /// full backup, the segments replayed, the revision reached and what happened to leases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point_in_time: Option<P>,
    /// Staging dirs of earlier restores of this target that were killed (each could hold a
    /// plaintext db), removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub leftovers_removed: Vec<PathBuf>,
}
