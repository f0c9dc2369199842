//! etcd's data on disk, offline: snapshot files (plain, zstd or age-encrypted, with etcd's
//! SHA-256 trailer), their status as `etcdutl snapshot status` computes it, the mvcc key and
//! value formats, and a native restore of a snapshot into the data dir of a member of a new
//! cluster (db rewritten for the new membership, WAL, snap file), as `etcdutl snapshot restore`
//! does, without etcd's tools, etcdutl's offline tools on a stopped member or a snapshot
//! ([`offline`]: `hashkv`, `defrag --data-dir`), and what fills a db ([`usage`]: live bytes,
//! history a compaction frees, free pages, per group of keys). No network, no etcd client, no store: the db
//! is read page by page through the `bbolt` crate, so memory stays bounded whatever its size.
//!
//! ```no_run
//! use etcd_data::{RestoreRequest, StatusOptions, Unguarded, open_snapshot_file, restore_snapshot};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let snapshot = open_snapshot_file("backup.db.zst".as_ref(), None)?;
//! let status = snapshot.status("backup.db.zst", &StatusOptions::default())?;
//! println!("revision {}, {} keys", status.revision, status.total_key);
//! let request = RestoreRequest {
//!     name: "m1".into(),
//!     initial_cluster: "m1=https://10.0.0.1:2380".into(),
//!     initial_cluster_token: "new-cluster".into(),
//!     initial_advertise_peer_urls: vec!["https://10.0.0.1:2380".into()],
//!     data_dir: "/var/lib/etcd".into(),
//!     ..RestoreRequest::default()
//! };
//! // No guard: this program took the decision itself (etcdops' `Guards` is the real one).
//! let restored = restore_snapshot("backup.db.zst", &snapshot, &request, &Unguarded)?;
//! println!("member {} of cluster {}", restored.member_id, restored.cluster_id);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

// The fixture table of the integration tests (`tests/common`), shared with the unit tests,
// names this crate as they do.
#[cfg(test)]
extern crate self as etcd_data;

pub mod crypt;
mod error;
pub mod file;
pub mod inspect;
pub mod limit;
mod live_keys;
pub mod mvcc;
pub mod offline;
pub mod restore;
pub mod spool;
pub mod status;
pub mod usage;

pub use crypt::{
    AGE_MAGIC, DecryptFailure, Identities, decrypting_reader, is_age, new_identity_file,
};
pub use error::{Error, Result, encrypted_message, recipients_text, wrong_identity_message};
pub use file::{
    CHUNK, Compression, SnapshotFile, TRAILER_LEN, TrailerHasher, Unpack, has_trailer,
    open_regular, open_snapshot_file, open_snapshot_file_decrypting, open_snapshot_file_with,
    read_small_regular, sha256_of, spool_error, unpack_error,
};
pub use inspect::{
    DataDirInspection, DbSummary, HardState, InspectError, MembershipChange, MembershipChangeKind,
    SnapPosition, TailAdoption, TermStart, WalSummary, adopt_wal_tail, inspect_data_dir,
    plan_wal_tail,
};
pub use limit::{
    BadMaxDbSize, DEFAULT_MAX_DB_SIZE, LimitExceeded, MAX_DB_SIZE_VAR, UnpackLimit, limit_exceeded,
    max_db_size, unpack_limit,
};
pub use mvcc::{
    KeyValueParts, REVISION_KEY_LEN, key_value_fields, key_value_parts, parse_revision_key,
};
pub use offline::{
    DefragRequest, DefragResult, HashKv, HashKvRequest, defrag_data_dir, hash_kv, hash_kv_data_dir,
};
pub use restore::{
    KeyEntry, MARKER_FILE, NoReplay, Replay, RestoreError, RestoreGuard, RestoreMarker,
    RestoreRequest, RestoreResult, RestoredMember, Unguarded, V2Snapshot, cluster_id, db_revision,
    member_id, parse_initial_cluster, read_marker, resolve_owner, restore_defaults,
    restore_snapshot, restore_spool_dir, restore_with_replay, validate_restore_request, wal_usage,
};
pub use spool::{Spool, SpoolOptions, StoredTap};
pub use status::{
    BucketCount, DbMember, Scan, SnapshotStatus, StatusOptions, TrailerCheck, scan,
    snapshot_status, split_trailer,
};
pub use usage::{
    DbSpace, GroupTable, GroupUsage, KeyGrouping, KeyUsage, PrefixDepth, SpaceSource, Tally,
    TieBreak, TopN, UsageOptions, UsageReport, display_bytes, key_hash, prefix_group,
    usage_data_dir, usage_db,
};
