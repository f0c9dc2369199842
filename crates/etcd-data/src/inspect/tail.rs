//! Committing a stopped member's WAL tail before it starts with `--force-new-cluster`.
//!
//! etcd's forced start (`restartAsStandaloneNode`) keeps the WAL's entries only up to the
//! saved HardState's commit index and discards the rest. A follower learns the commit index
//! one message after its leader acknowledged the client, so when the leader dies, the
//! survivor's last entries (acknowledged writes among them) sit past its saved commit. They
//! were appended by the leader of their term: in the one-member cluster built from this log,
//! committing them all is consistent. [`adopt_wal_tail`] appends one HardState record with
//! commit = the last index, so etcd replays and keeps the whole log.
//!
//! The record goes where etcd's own encoder would append after opening the WAL: right after
//! the last valid record of the last segment, CRC-chained from it. The file is first cut
//! there (a torn record and everything after the log's end go, as etcd's repair and its
//! zeroing on open do) and flushed, then the record is written and the file filled back with
//! zeros to its old length and flushed: a crash in between leaves the old log (ended by the
//! file's end, or by a record cut short, which etcd takes as the end) or the new one.
//! The db and every other file are left alone.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{FallocateFlags, FlockOperation, fallocate, fcntl_lock, flock};
use serde::{Deserialize, Serialize};

use super::data_dir::{read_wal_dir, scan_wal_dir};
use super::error::InspectError;
use super::wal_reader::WalEnd;
use crate::restore::{pb, wal};

/// What [`adopt_wal_tail`] did (or, from [`plan_wal_tail`], would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailAdoption {
    /// A HardState record was (or would be) appended.
    pub changed: bool,
    /// The saved commit index before.
    pub commit_before: u64,
    /// The saved commit index after (the last index when changed).
    pub commit_after: u64,
    /// The HardState's term (kept).
    pub term: u64,
    /// The HardState's vote (kept).
    pub vote: u64,
    /// The last WAL segment (the one appended to).
    pub segment: String,
    /// Entries past the old commit index that the new one covers.
    pub entries_adopted: u64,
}

/// Raises the saved commit index of the stopped member in `data_dir` (the dir holding
/// `member/`) to its WAL's last index, so that `--force-new-cluster` keeps every entry: one
/// HardState record (same term and vote) appended to the last segment. Refused while etcd
/// runs on it; locks the db and the last segment for the whole write so etcd cannot start
/// meanwhile. `changed: false` when nothing lies past the commit index.
pub fn adopt_wal_tail(data_dir: &Path) -> Result<TailAdoption, InspectError> {
    run(data_dir, true)
}

/// What [`adopt_wal_tail`] would do, with the same checks (locks included); writes nothing.
pub fn plan_wal_tail(data_dir: &Path) -> Result<TailAdoption, InspectError> {
    run(data_dir, false)
}

fn run(data_dir: &Path, write: bool) -> Result<TailAdoption, InspectError> {
    let shown = data_dir.display().to_string();
    if !data_dir.is_dir() {
        return Err(InspectError::NoSuchDir { path: shown });
    }
    let member = data_dir.join("member");
    if !member.is_dir() {
        return Err(InspectError::NotADataDir { path: shown });
    }
    let running = || InspectError::Running {
        path: shown.clone(),
    };
    let db_path = member.join("snap").join("db");
    let db = File::open(&db_path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => InspectError::NoDb {
            path: db_path.display().to_string(),
        },
        _ => InspectError::Read {
            path: db_path.display().to_string(),
            source,
        },
    })?;
    // bbolt's lock: held by a running etcd, and ours keeps one from opening the db (etcd
    // opens it before it touches the WAL) until `db` is dropped at the end.
    let op = if write {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    if matches!(flock(&db, op), Err(e) if e == rustix::io::Errno::WOULDBLOCK) {
        return Err(running());
    }
    let wal_dir = member.join("wal");
    let (summary, end) = scan_wal_dir(&wal_dir, false)?;
    let segment = summary.segments.last().cloned().unwrap_or_default();
    let hs = summary.hard_state;
    let mut adoption = TailAdoption {
        changed: false,
        commit_before: hs.commit,
        commit_after: hs.commit,
        term: hs.term,
        vote: hs.vote,
        segment: segment.clone(),
        entries_adopted: 0,
    };
    let segment_path = wal_dir.join(&segment);
    // etcd locks its WAL files with fcntl (open file description) locks on Linux, which
    // conflict with the record lock taken here. Nothing else in this process opens the
    // segment until the write is done (closing another descriptor would drop the lock).
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .open(&segment_path)
        .map_err(|source| InspectError::Read {
            path: segment_path.display().to_string(),
            source,
        })?;
    let op = if write {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    if let Err(e) = fcntl_lock(&file, op)
        && (e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::ACCESS)
    {
        return Err(running());
    }
    let has_entries = !summary.term_starts.is_empty();
    if !has_entries || summary.last_index <= hs.commit {
        return Ok(adoption);
    }
    if hs.term < summary.last_term {
        return Err(InspectError::TailRefused {
            path: wal_dir.display().to_string(),
            reason: format!(
                "its last HardState's term {} is below its last entry's term {}: not a log etcd wrote; keep this dir as it is",
                hs.term, summary.last_term
            ),
        });
    }
    adoption.changed = true;
    adoption.commit_after = summary.last_index;
    adoption.entries_adopted = summary.last_index - hs.commit;
    if !write {
        return Ok(adoption);
    }
    let record = state_record(end, hs.term, hs.vote, summary.last_index);
    append_at_end(&file, end.offset, &record).map_err(|source| InspectError::Write {
        path: segment_path.display().to_string(),
        source,
    })?;
    drop(file);
    // Read back as etcd will: the new HardState is the last one, the log unchanged.
    let after = read_wal_dir(&wal_dir, false)?;
    if after.hard_state.commit != summary.last_index
        || after.last_index != summary.last_index
        || after.torn_tail
    {
        return Err(InspectError::TailRefused {
            path: wal_dir.display().to_string(),
            reason: format!(
                "the WAL read back after the write shows commit {} and last index {} (expected {} for both): keep this dir as it is and check it with `data-dir inspect`",
                after.hard_state.commit, after.last_index, summary.last_index
            ),
        });
    }
    drop(db);
    Ok(adoption)
}

/// The framed HardState record chained from `end`'s CRC.
fn state_record(end: WalEnd, term: u64, vote: u64, commit: u64) -> Vec<u8> {
    let data = pb::hard_state(term, vote, commit);
    let crc = crc32c::crc32c_append(end.crc, &data);
    let record = pb::wal_record(wal::STATE_TYPE, crc, Some(&data));
    let mut out = Vec::new();
    wal::frame(&mut out, &record);
    out
}

/// Cuts `file` at `offset` (flushed), writes `record` there, fills zeros back to the old
/// length and flushes again.
fn append_at_end(file: &File, offset: u64, record: &[u8]) -> std::io::Result<()> {
    let old_len = file.metadata()?.len();
    file.set_len(offset)?;
    file.sync_all()?;
    file.write_all_at(record, offset)?;
    let end = offset + record.len() as u64;
    if old_len > end {
        // Preallocated zeros, as etcd keeps its segments; a plain extension where the
        // filesystem cannot preallocate.
        if fallocate(file, FallocateFlags::empty(), end, old_len - end).is_err() {
            file.set_len(old_len)?;
        }
    }
    file.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report

    use std::path::Path;

    use super::*;

    /// WAL segments written as etcd's encoder writes them (the restore's framing).
    struct Log {
        segments: Vec<(String, Vec<u8>)>,
        crc: u32,
    }

    impl Log {
        /// A first segment: crc, metadata, empty snapshot.
        fn new() -> Self {
            let mut log = Log {
                segments: Vec::new(),
                crc: 0,
            };
            log.cut(0);
            log.record(5, &pb::wal_snapshot(0, 0, None));
            log
        }

        fn cut(&mut self, index: u64) {
            let seq = self.segments.len();
            self.segments
                .push((format!("{seq:016x}-{index:016x}.wal"), Vec::new()));
            let crc = pb::wal_record(4, self.crc, None);
            wal::frame(&mut self.segments.last_mut().unwrap().1, &crc);
            self.record(1, &pb::wal_metadata(0xa1, 0xc1));
        }

        fn record(&mut self, kind: i64, data: &[u8]) {
            self.crc = crc32c::crc32c_append(self.crc, data);
            let record = pb::wal_record(kind, self.crc, Some(data));
            wal::frame(&mut self.segments.last_mut().unwrap().1, &record);
        }

        fn entries(&mut self, term: u64, indexes: std::ops::RangeInclusive<u64>) {
            for index in indexes {
                let mut entry = Vec::new();
                pb::uint(&mut entry, 1, 0);
                pb::uint(&mut entry, 2, term);
                pb::uint(&mut entry, 3, index);
                pb::bytes(&mut entry, 4, b"put");
                self.record(2, &entry);
            }
        }

        fn state(&mut self, term: u64, vote: u64, commit: u64) {
            self.record(3, &pb::hard_state(term, vote, commit));
        }

        /// `DIR/member/{wal,snap/db}`; the last segment preallocated with zeros after
        /// `tail` (bytes a crash left there).
        fn write_to(&self, dir: &Path, tail: &[u8]) -> std::path::PathBuf {
            let wal_dir = dir.join("member").join("wal");
            std::fs::create_dir_all(&wal_dir).unwrap();
            std::fs::create_dir_all(dir.join("member").join("snap")).unwrap();
            std::fs::write(dir.join("member").join("snap").join("db"), b"db").unwrap();
            for (i, (name, bytes)) in self.segments.iter().enumerate() {
                let mut bytes = bytes.clone();
                if i + 1 == self.segments.len() {
                    bytes.extend_from_slice(tail);
                    bytes.resize(bytes.len() + 64 * 1024, 0);
                }
                std::fs::write(wal_dir.join(name), bytes).unwrap();
            }
            wal_dir.join(&self.segments.last().unwrap().0)
        }
    }

    fn wal_of(dir: &Path) -> crate::WalSummary {
        read_wal_dir(&dir.join("member").join("wal"), false).unwrap()
    }

    #[test]
    fn the_commit_index_is_raised_to_the_last_entry_once() {
        let mut log = Log::new();
        log.entries(2, 1..=7);
        log.state(2, 0xb2, 5);
        let dir = tempfile::tempdir().unwrap();
        let segment = log.write_to(dir.path(), &[]);
        let size = std::fs::metadata(&segment).unwrap().len();
        assert_eq!(wal_of(dir.path()).uncommitted_entries, 2);
        let db_before = std::fs::read(dir.path().join("member/snap/db")).unwrap();

        let planned = plan_wal_tail(dir.path()).unwrap();
        assert!(planned.changed);
        assert_eq!(
            wal_of(dir.path()).hard_state.commit,
            5,
            "a plan writes nothing"
        );

        let done = adopt_wal_tail(dir.path()).unwrap();
        assert_eq!(done, planned);
        assert_eq!(
            done,
            TailAdoption {
                changed: true,
                commit_before: 5,
                commit_after: 7,
                term: 2,
                vote: 0xb2,
                segment: "0000000000000000-0000000000000000.wal".into(),
                entries_adopted: 2,
            }
        );
        // The reader checks the CRC chain: the new record chains from the old last one.
        let wal = wal_of(dir.path());
        assert_eq!(
            wal.hard_state,
            crate::HardState {
                term: 2,
                vote: 0xb2,
                commit: 7
            }
        );
        assert_eq!((wal.last_index, wal.uncommitted_entries), (7, 0));
        assert!(!wal.torn_tail);
        // Byte for byte what etcd's encoder would have appended; the preallocation kept.
        log.state(2, 0xb2, 7);
        let written = std::fs::read(&segment).unwrap();
        assert_eq!(
            &written[..log.segments[0].1.len()],
            log.segments[0].1.as_slice()
        );
        assert!(written[log.segments[0].1.len()..].iter().all(|b| *b == 0));
        assert_eq!(written.len() as u64, size);
        assert_eq!(
            std::fs::read(dir.path().join("member/snap/db")).unwrap(),
            db_before
        );

        let again = adopt_wal_tail(dir.path()).unwrap();
        assert!(!again.changed);
        assert_eq!((again.commit_before, again.commit_after), (7, 7));
        assert_eq!(std::fs::read(&segment).unwrap(), written);
    }

    #[test]
    fn a_torn_tail_is_overwritten_and_reads_clean() {
        let mut log = Log::new();
        log.entries(3, 1..=4);
        log.state(3, 0xa1, 2);
        // A record etcd was writing when it crashed: a length word, some data, then a
        // sector of zeros.
        let mut torn = 600u64.to_le_bytes().to_vec();
        torn.extend_from_slice(&[0x08, 0x02, 0x10, 0x99, 0x77]);
        torn.resize(700, 0);
        torn.extend_from_slice(&[0xee; 64]);
        let dir = tempfile::tempdir().unwrap();
        let segment = log.write_to(dir.path(), &torn);
        assert!(wal_of(dir.path()).torn_tail);

        let done = adopt_wal_tail(dir.path()).unwrap();
        assert_eq!((done.commit_before, done.commit_after), (2, 4));
        let wal = wal_of(dir.path());
        assert!(!wal.torn_tail, "the torn bytes are gone");
        assert_eq!(wal.hard_state.commit, 4);
        log.state(3, 0xa1, 4);
        let written = std::fs::read(&segment).unwrap();
        let clean = log.segments[0].1.len();
        assert_eq!(&written[..clean], log.segments[0].1.as_slice());
        assert!(
            written[clean..].iter().all(|b| *b == 0),
            "nothing of the torn record remains"
        );
    }

    #[test]
    fn the_last_of_several_segments_gets_the_record() {
        let mut log = Log::new();
        log.entries(1, 1..=3);
        log.state(1, 0xa1, 3);
        log.cut(4);
        log.state(1, 0xa1, 3);
        log.entries(2, 4..=9);
        log.state(2, 0xa1, 6);
        let dir = tempfile::tempdir().unwrap();
        log.write_to(dir.path(), &[]);
        let first = dir.path().join("member/wal").join(&log.segments[0].0);
        let first_before = std::fs::read(&first).unwrap();

        let done = adopt_wal_tail(dir.path()).unwrap();
        assert_eq!(done.segment, "0000000000000001-0000000000000004.wal");
        assert_eq!(done.entries_adopted, 3);
        let wal = wal_of(dir.path());
        assert_eq!(wal.segments.len(), 2);
        assert_eq!((wal.hard_state.commit, wal.last_index), (9, 9));
        assert_eq!(std::fs::read(&first).unwrap(), first_before);
    }

    #[test]
    fn nothing_past_the_commit_index_changes_nothing() {
        let mut log = Log::new();
        log.entries(1, 1..=3);
        log.state(1, 0xa1, 3);
        let dir = tempfile::tempdir().unwrap();
        let segment = log.write_to(dir.path(), &[]);
        let before = std::fs::read(&segment).unwrap();
        let done = adopt_wal_tail(dir.path()).unwrap();
        assert!(!done.changed);
        assert_eq!(done.entries_adopted, 0);
        assert_eq!(std::fs::read(&segment).unwrap(), before);
    }

    #[test]
    fn a_locked_db_is_refused_and_nothing_is_written() {
        let mut log = Log::new();
        log.entries(1, 1..=3);
        log.state(1, 0xa1, 1);
        let dir = tempfile::tempdir().unwrap();
        let segment = log.write_to(dir.path(), &[]);
        let before = std::fs::read(&segment).unwrap();
        // What a running etcd's bbolt holds.
        let held = File::open(dir.path().join("member/snap/db")).unwrap();
        flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
        for result in [adopt_wal_tail(dir.path()), plan_wal_tail(dir.path())] {
            let err = result.unwrap_err().to_string();
            assert!(err.contains("etcd is running on"), "{err}");
            assert!(!err.contains('\n'));
        }
        assert_eq!(std::fs::read(&segment).unwrap(), before);
        drop(held);
        assert!(adopt_wal_tail(dir.path()).unwrap().changed);
    }

    /// What a crash mid-write can leave (the file cut at the old end, or within the new
    /// record, or the record whole): etcd reads the old log or the new one, never damage.
    #[test]
    fn every_crash_state_of_the_write_reads_as_the_old_or_the_new_log() {
        let mut log = Log::new();
        log.entries(2, 1..=5);
        log.state(2, 0xb2, 3);
        let old_end = log.segments[0].1.len();
        log.state(2, 0xb2, 5);
        let new = log.segments[0].1.clone();
        for cut in old_end..=new.len() {
            let summary = crate::inspect::read_wal_bytes(&[("0-0.wal", &new[..cut])]).unwrap();
            let commit = summary.hard_state.commit;
            let expected = if cut == new.len() { 5 } else { 3 };
            assert_eq!(commit, expected, "cut at {cut}");
            assert_eq!(summary.last_index, 5);
        }
    }

    #[test]
    fn a_dir_without_member_data_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = adopt_wal_tail(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not an etcd data dir"), "{err}");
    }
}
