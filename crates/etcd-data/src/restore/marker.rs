//! The marker a restore leaves in `<data dir>/member/`, and the WAL's state it records.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The marker a restore leaves in `<data dir>/member/`, so that repeating the same restore is
/// a no-op.
pub const MARKER_FILE: &str = "etcdops-restore.json";

/// What `<data dir>/member/etcdops-restore.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreMarker {
    /// SHA-256 of the snapshot's db (before the rewrite), hex.
    pub db_sha256: String,
    /// The member's name.
    pub name: String,
    /// `--initial-cluster` as given.
    pub initial_cluster: String,
    /// `--initial-cluster-token`.
    pub initial_cluster_token: String,
    /// The WAL dir written.
    pub wal_dir: PathBuf,
    /// Total bytes of the WAL files at restore time.
    pub wal_size: u64,
    /// Number of WAL files at restore time.
    pub wal_files: u64,
    /// Newest modification time of the WAL files at restore time (ns since the epoch).
    #[serde(default)]
    pub wal_modified_ns: u128,
    /// `--bump-revision`.
    #[serde(default)]
    pub bump_revision: u64,
    /// The member's ID, hex.
    pub member_id: String,
    /// The new cluster's ID, hex.
    pub cluster_id: String,
    /// MVCC revision restored (after --bump-revision).
    pub revision: i64,
    /// The revision of a point-in-time restore (`--to-revision`, or the one `--to-time`
    /// resolved to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_revision: Option<i64>,
    /// When the restore was done (UTC, RFC 3339).
    pub restored_at: String,
    /// A fingerprint of the db this restore wrote (SHA-256 of its size and first bytes, both
    /// meta pages among them): while no member has run on the dir, a db replaced since does
    /// not pass for this restore. Absent in markers of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_fingerprint: Option<String>,
    /// No raft `.snap` file was written (a restore for etcd 3.7 or later that left it out).
    /// Absent (false) in markers of older versions, which always wrote one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_snap_file: bool,
}

/// Reads the restore marker of `data_dir`, if there is a readable one.
pub fn read_marker(data_dir: &Path) -> Option<RestoreMarker> {
    let bytes = fs::read(data_dir.join("member").join(MARKER_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Bytes and number of the files in `dir` (0, 0 when it is missing).
pub fn wal_usage(dir: &Path) -> (u64, u64) {
    let (size, files, _) = wal_state(dir);
    (size, files)
}

/// Bytes, number and newest modification time (ns) of the files in `dir`.
pub(super) fn wal_state(dir: &Path) -> (u64, u64, u128) {
    let mut size = 0;
    let mut files = 0;
    let mut newest = 0;
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if let Ok(meta) = entry.metadata() {
                if meta.is_file() {
                    size += meta.len();
                    files += 1;
                    let modified = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map(|d| d.as_nanos())
                        .unwrap_or(0);
                    newest = newest.max(modified);
                }
            }
        }
    }
    (size, files, newest)
}

/// Whether a member has run on a restored data dir since the restore (its WAL changed).
pub(super) fn ran_since_restore(marker: &RestoreMarker) -> bool {
    let (size, files, newest) = wal_state(&marker.wal_dir);
    size > marker.wal_size
        || files != marker.wal_files
        || (marker.wal_modified_ns > 0 && newest > marker.wal_modified_ns)
}
