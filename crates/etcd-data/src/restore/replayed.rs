//! A snapshot's db with a replay's changes appended, written as a new snapshot db (not a
//! member's data dir): what compacting a chain of delta segments into one full backup needs.
//! The same append as a point-in-time restore's, without the membership rewrite.

use std::fs::OpenOptions;
use std::path::Path;

use bbolt::DbFile;
use serde::Serialize;

use super::db::{Rewrite, copy_db};
use super::run::settle_target;
use super::{Replay, RestoreError, io_err};
use crate::file::{SnapshotFile, sha256_of};
use crate::status::scan_free_pages;

/// The db [`replay_into_db`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayedDb {
    /// The revision the full backup's db held.
    pub base_revision: i64,
    /// The revision the new db holds (the replay's target).
    pub revision: i64,
    /// Bytes of the new db.
    pub db_size: u64,
    /// SHA-256 of the new db: the trailer etcd's tools expect after it.
    pub db_sha256: String,
}

/// Writes the db of `snapshot` (`name` is for messages; its trailer must vouch for it) into
/// the new file `to`, checks it page by page, then appends the changes of `replay` to its
/// `key` bucket with their original revisions (leases they use that the db lacks added, as
/// a point-in-time restore does). Membership, consistent index and term are left as the
/// snapshot has them: the result is the snapshot db etcd would have streamed at the replay's
/// target revision, for a new full backup. `to` is synced before this returns.
pub fn replay_into_db<R: Replay>(
    name: &str,
    snapshot: &SnapshotFile,
    to: &Path,
    replay: &mut R,
) -> Result<ReplayedDb, RestoreError> {
    let db_sha256 = copy_db(snapshot, to, name)?;
    match snapshot.trailer() {
        None => {
            return Err(RestoreError::NoTrailer {
                name: name.to_string(),
            });
        }
        Some(t) if hex::encode(t) != db_sha256 => {
            return Err(RestoreError::Snapshot(crate::Error::HashMismatch {
                name: name.to_string(),
                expected: hex::encode(t),
                actual: db_sha256,
            }));
        }
        Some(_) => {}
    }
    let db_file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(to)
        .map_err(io_err(to))?;
    let db_len = snapshot.db_size();
    let walked = DbFile::new(db_file.try_clone().map_err(io_err(to))?, db_len);
    let (status, free_pages) = scan_free_pages(name, walked, Some(db_sha256))?;
    let to_revision = settle_target(Some(&mut *replay), status.revision)?;
    let sync = db_file.try_clone().map_err(io_err(to))?;
    let rewritten = Rewrite {
        name,
        db_path: to,
        members: None,
        db_revision: status.revision,
        to_revision,
        bump_revision: 0,
        free_pages,
    }
    .apply(db_file, db_len, Some(replay))?;
    sync.sync_all().map_err(io_err(to))?;
    let written = DbFile::new(sync, rewritten.db_size);
    let db_sha256 = sha256_of(&written).map_err(io_err(to))?;
    Ok(ReplayedDb {
        base_revision: status.revision,
        revision: rewritten.revision,
        db_size: rewritten.db_size,
        db_sha256,
    })
}
