//! A whole data dir: the WAL, the newest snap file, the db and its lock, put together.

use std::fs::File;
use std::path::Path;

use bbolt::DbFile;
use rustix::fs::{FlockOperation, flock};

use super::error::InspectError;
use super::snap_files::newest_snap;
use super::wal_reader::{WalEnd, WalScanner, parse_segment_name};
use super::{DataDirInspection, DbSummary, WalSummary};
use crate::status::{Scan, StatusOptions, scan};

/// Inspects the data dir `dir` (the one holding `member/`) offline and read-only: its WAL as
/// etcd replays it at start (CRC chain checked, a torn last record ignored as etcd's repair
/// does), its newest `.snap` file and its db's applied index, revision and membership.
///
/// A running member (its db locked by etcd) is still read, as far as it can be, and
/// reported `locked`: its figures may then be stale or cut. While a stopped member is read,
/// a shared lock on its db keeps etcd from opening it; etcd waits for the read to end.
pub fn inspect_data_dir(dir: &Path) -> Result<DataDirInspection, InspectError> {
    let shown = dir.display().to_string();
    if !dir.is_dir() {
        return Err(InspectError::NoSuchDir { path: shown });
    }
    let member = dir.join("member");
    if !member.is_dir() {
        return Err(InspectError::NotADataDir { path: shown });
    }
    let db_path = member.join("snap").join("db");
    let db_file = match File::open(&db_path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(InspectError::NoDb {
                path: db_path.display().to_string(),
            });
        }
        Err(source) => {
            return Err(InspectError::Read {
                path: db_path.display().to_string(),
                source,
            });
        }
    };
    // bbolt's own lock: a running etcd holds it exclusively. Ours (shared) lasts as long
    // as `db_file` is open, i.e. this read. A filesystem without locks cannot tell.
    let locked = matches!(
        flock(&db_file, FlockOperation::NonBlockingLockShared),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK
    );
    let wal = read_wal_dir(&member.join("wal"), locked)?;
    let (snap_file, _broken) = newest_snap(&member.join("snap"))?;
    let db = match read_db(&db_file, &db_path) {
        Ok(db) => db,
        // A running etcd rewrites pages under the reader: report what can be known.
        Err(_) if locked => DbSummary {
            size: db_file.metadata().map(|m| m.len()).unwrap_or(0),
            ..DbSummary::default()
        },
        Err(e) => return Err(e),
    };
    drop(db_file);
    let committed_entries_beyond_db = wal.hard_state.commit.saturating_sub(db.consistent_index);
    let mut inspection = DataDirInspection {
        data_dir: shown,
        locked,
        wal,
        snap_file,
        db,
        committed_entries_beyond_db,
        is_learner: false,
    };
    // Its own membership (the WAL's when the db was not written yet) says whether it is one.
    inspection.is_learner = inspection
        .membership()
        .iter()
        .any(|m| m.id == inspection.wal.member_id && m.is_learner);
    Ok(inspection)
}

/// Reads every `*.wal` segment of `wal_dir` in name order. `partial`: a live member writes
/// the WAL meanwhile; an error then ends the read with what was read before it.
pub fn read_wal_dir(wal_dir: &Path, partial: bool) -> Result<WalSummary, InspectError> {
    scan_wal_dir(wal_dir, partial).map(|(summary, _)| summary)
}

/// [`read_wal_dir`], also telling where the last segment's valid records end.
pub(crate) fn scan_wal_dir(
    wal_dir: &Path,
    partial: bool,
) -> Result<(WalSummary, WalEnd), InspectError> {
    let io = |path: &Path, source| InspectError::Read {
        path: path.display().to_string(),
        source,
    };
    let no_wal = || InspectError::NoWal {
        path: wal_dir.display().to_string(),
    };
    let entries = match std::fs::read_dir(wal_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(no_wal()),
        Err(e) => return Err(io(wal_dir, e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let name = entry
            .map_err(|e| io(wal_dir, e))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        // etcd passes over names it cannot parse (`.tmp` files, `.broken` copies).
        if let Some((seq, _)) = parse_segment_name(&name) {
            names.push((seq, name));
        }
    }
    if names.is_empty() {
        return Err(no_wal());
    }
    names.sort();
    for pair in names.windows(2) {
        if pair[1].0 != pair[0].0.wrapping_add(1) {
            return Err(InspectError::SegmentGap {
                previous: pair[0].1.clone(),
                found: pair[1].1.clone(),
            });
        }
    }
    let mut scanner = WalScanner::new();
    let count = names.len();
    for (i, (_, name)) in names.iter().enumerate() {
        let path = wal_dir.join(name);
        let read = File::open(&path)
            .and_then(|file| Ok((file.metadata()?.len(), file)))
            .map_err(|e| io(&path, e))
            .and_then(|(size, file)| scanner.segment(name, file, size, i + 1 == count));
        match read {
            Ok(()) => {}
            Err(_) if partial => break,
            Err(e) => return Err(e),
        }
    }
    if !scanner.has_metadata() && !partial {
        return Err(InspectError::Corrupt {
            segment: names[0].1.clone(),
            offset: 0,
            reason: "no metadata record (member and cluster IDs) in any segment".into(),
        });
    }
    let end = scanner.end();
    Ok((scanner.finish(), end))
}

/// Reads WAL segments given as bytes (name, contents), in order, the last one being the
/// newest: what [`read_wal_dir`] does on files, for tests and fuzzing.
pub fn read_wal_bytes(segments: &[(&str, &[u8])]) -> Result<WalSummary, InspectError> {
    let mut scanner = WalScanner::new();
    for (i, (name, bytes)) in segments.iter().enumerate() {
        scanner.segment(name, *bytes, bytes.len() as u64, i + 1 == segments.len())?;
    }
    Ok(scanner.finish())
}

/// The db's applied index, term, revision and membership (read as `snapshot status` does,
/// checking its structure; no hash).
fn read_db(file: &File, path: &Path) -> Result<DbSummary, InspectError> {
    let io = |source| InspectError::Read {
        path: path.display().to_string(),
        source,
    };
    let size = file.metadata().map_err(io)?.len();
    let reader = file.try_clone().map_err(io)?;
    let status = scan(
        &path.display().to_string(),
        DbFile::new(reader, size),
        None,
        None,
        &StatusOptions {
            skip_hash_check: true,
        },
        Scan::CheckOnly,
    )?;
    Ok(DbSummary {
        revision: status.revision,
        compact_revision: status.compact_revision,
        consistent_index: status.consistent_index.unwrap_or(0),
        term: status.term,
        members: status.members,
        size,
    })
}
