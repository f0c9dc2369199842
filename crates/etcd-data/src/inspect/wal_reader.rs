//! The WAL, read as etcd reads it at start (`wal.ReadAll` after `wal.Repair`), one record at
//! a time: only (term, index) bookkeeping and the membership changes are kept, never a
//! normal entry's data, so a WAL of many 64 MB segments is streamed in bounded memory.
//!
//! Framing (etcd's `decoder.go`): an 8-byte little-endian length word, whose top byte is
//! `0x80 | pad` when `pad` zero bytes follow the record; a zero word or the end of the file
//! ends a segment. Each record's CRC is CRC-32C running over the data of every record before
//! it, across segments: a segment starts with a crc record carrying the running value of the
//! one before (not checked for the first segment read, whose predecessor may be purged).
//!
//! What etcd accepts as the end of the log: a record cut short, or one whose CRC does not
//! match or that does not decode and has a 512-byte sector of zeros in it (a torn write),
//! in the last segment only (`Repair` truncates it there). Anywhere else it refuses to start.

use std::io::{BufReader, ErrorKind, Read};

use prost::Message;

use super::error::InspectError;
use super::membership::{self, MembershipChange};
use super::pb;
use super::{HardState, SnapPosition, TermStart, WalSummary};

/// Record types (`walpb`).
const METADATA_TYPE: i64 = 1;
const ENTRY_TYPE: i64 = 2;
const STATE_TYPE: i64 = 3;
const CRC_TYPE: i64 = 4;
const SNAPSHOT_TYPE: i64 = 5;
/// `raftpb.EntryConfChange`: an entry whose data is a membership change.
const CONF_CHANGE_ENTRY: i32 = 1;

/// The length word.
const FRAME_BYTES: u64 = 8;
/// etcd's torn-write detection works on 512-byte sectors.
const SECTOR: u64 = 512;

/// A WAL segment name: `%016x-%016x.wal` (sequence, first index).
pub fn parse_segment_name(name: &str) -> Option<(u64, u64)> {
    let stem = name.strip_suffix(".wal")?;
    let (seq, index) = stem.split_once('-')?;
    if seq.len() != 16 || index.len() != 16 {
        return None;
    }
    Some((
        u64::from_str_radix(seq, 16).ok()?,
        u64::from_str_radix(index, 16).ok()?,
    ))
}

/// Reads WAL segments in order, keeping what the summary needs.
#[derive(Debug, Default)]
pub struct WalScanner {
    crc: u32,
    metadata: Option<Vec<u8>>,
    member_id: u64,
    cluster_id: u64,
    hard_state: HardState,
    snapshot: SnapPosition,
    last_entry: Option<(u64, u64)>,
    term_starts: Vec<TermStart>,
    membership_changes: Vec<MembershipChange>,
    segments: Vec<String>,
    torn_tail: bool,
    end: WalEnd,
}

/// Where the valid records of the last segment read end: the offset past the last one (a
/// torn record or the zero tail starts there) and the running CRC after it, which the next
/// record's CRC chains from (where etcd's encoder appends after opening the WAL).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalEnd {
    /// Byte offset in the segment.
    pub offset: u64,
    /// Running CRC-32C there.
    pub crc: u32,
}

/// How reading one record ended.
enum Step {
    /// A record was read: it, and its frame as it is on disk (record bytes and padding).
    Record(pb::Record, Vec<u8>),
    /// The segment ends here.
    End,
    /// The record is cut or torn (etcd's `io.ErrUnexpectedEOF`): why.
    Short(String),
}

impl WalScanner {
    /// A scanner that has read nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the segment `name` (`size` bytes, `last`: the newest segment) from `reader`.
    /// A torn record in the last segment ends the log (and sets `torn_tail`); any other
    /// damage is an error naming the segment and the offset.
    pub fn segment<R: Read>(
        &mut self,
        name: &str,
        reader: R,
        size: u64,
        last: bool,
    ) -> Result<(), InspectError> {
        self.segments.push(name.to_string());
        let mut reader = BufReader::with_capacity(1 << 16, reader);
        let mut offset = 0u64;
        loop {
            self.end = WalEnd {
                offset,
                crc: self.crc,
            };
            let (record, frame) = match read_record(&mut reader, name, offset, size, last)? {
                Step::Record(record, frame) => (record, frame),
                Step::End => return Ok(()),
                Step::Short(_) if last => {
                    self.torn_tail = true;
                    return Ok(());
                }
                Step::Short(reason) => {
                    return Err(corrupt(
                        name,
                        offset,
                        format!("{reason}, in a segment that is not the last"),
                    ));
                }
            };
            if record.kind != CRC_TYPE {
                let crc = crc32c::crc32c_append(self.crc, &record.data);
                if record.crc != crc {
                    if last && is_torn(offset + FRAME_BYTES, &frame) {
                        self.torn_tail = true;
                        return Ok(());
                    }
                    return Err(corrupt(
                        name,
                        offset,
                        format!(
                            "CRC mismatch (the record says {:08x}, its data and the records before give {:08x})",
                            record.crc, crc
                        ),
                    ));
                }
                self.crc = crc;
            }
            self.apply(&record, name, offset)?;
            offset += FRAME_BYTES + frame.len() as u64;
        }
    }

    /// Applies one valid record.
    fn apply(&mut self, record: &pb::Record, name: &str, offset: u64) -> Result<(), InspectError> {
        let bad = |what: &str, e: prost::DecodeError| {
            corrupt(
                name,
                offset,
                format!("a {what} record that does not decode ({e})"),
            )
        };
        match record.kind {
            ENTRY_TYPE => {
                let entry =
                    pb::Entry::decode(record.data.as_slice()).map_err(|e| bad("entry", e))?;
                self.entry(entry.index, entry.term);
                if entry.kind == CONF_CHANGE_ENTRY
                    && let Some(change) =
                        membership::decode_change(entry.index, record.data.as_slice())
                {
                    self.membership_changes.push(change);
                }
            }
            STATE_TYPE => {
                let state =
                    pb::HardState::decode(record.data.as_slice()).map_err(|e| bad("state", e))?;
                self.hard_state = HardState {
                    term: state.term,
                    vote: state.vote,
                    commit: state.commit,
                };
            }
            METADATA_TYPE => {
                if let Some(seen) = &self.metadata
                    && *seen != record.data
                {
                    return Err(corrupt(
                        name,
                        offset,
                        "its metadata (member and cluster IDs) differs from the earlier segments'"
                            .into(),
                    ));
                }
                let metadata =
                    pb::Metadata::decode(record.data.as_slice()).map_err(|e| bad("metadata", e))?;
                self.member_id = metadata.node_id;
                self.cluster_id = metadata.cluster_id;
                self.metadata = Some(record.data.clone());
            }
            CRC_TYPE => {
                // A fresh chain (the first segment read) has nothing to compare.
                if self.crc != 0 && record.crc != self.crc {
                    return Err(corrupt(
                        name,
                        offset,
                        format!(
                            "the segment's crc record says {:08x}, the segments before end at {:08x}",
                            record.crc, self.crc
                        ),
                    ));
                }
                self.crc = record.crc;
            }
            SNAPSHOT_TYPE => {
                let snap = pb::WalSnapshot::decode(record.data.as_slice())
                    .map_err(|e| bad("snapshot", e))?;
                self.snapshot = SnapPosition {
                    index: snap.index,
                    term: snap.term,
                };
            }
            other => {
                return Err(corrupt(
                    name,
                    offset,
                    format!("unknown record type {other}"),
                ));
            }
        }
        Ok(())
    }

    /// Books an entry: a later entry at or below the last index replaces the tail from its
    /// index on (raft's log truncation, as `ReadAll` does); one past a gap starts the log
    /// anew (entries below a snapshot a leader sent).
    fn entry(&mut self, index: u64, term: u64) {
        match self.last_entry {
            Some((last, _)) if index <= last => {
                self.term_starts.retain(|t| t.first_index < index);
                self.membership_changes.retain(|c| c.index < index);
            }
            Some((last, _)) if index > last + 1 => {
                self.term_starts.clear();
                self.membership_changes.clear();
                if self.snapshot.index.checked_add(1) == Some(index) && self.snapshot.term != 0 {
                    self.term_starts.push(TermStart {
                        term: self.snapshot.term,
                        first_index: self.snapshot.index,
                    });
                }
            }
            _ => {}
        }
        if self.term_starts.last().map(|t| t.term) != Some(term) {
            self.term_starts.push(TermStart {
                term,
                first_index: index,
            });
        }
        self.last_entry = Some((index, term));
    }

    /// The term of `index`: from the entries, or the snapshot's at exactly its index.
    fn term_at(&self, index: u64) -> Option<u64> {
        if let (Some((last, _)), Some(first)) = (self.last_entry, self.term_starts.first())
            && first.first_index <= index
            && index <= last
        {
            return self
                .term_starts
                .iter()
                .rev()
                .find(|t| t.first_index <= index)
                .map(|t| t.term);
        }
        (index == self.snapshot.index).then_some(self.snapshot.term)
    }

    /// Where the valid records of the last segment read end (see [`WalEnd`]).
    pub fn end(&self) -> WalEnd {
        self.end
    }

    /// Whether any metadata record was read.
    pub fn has_metadata(&self) -> bool {
        self.metadata.is_some()
    }

    /// The summary of what was read.
    pub fn finish(self) -> WalSummary {
        let (last_index, last_term) = match self.last_entry {
            Some((index, term)) if index >= self.snapshot.index => (index, term),
            _ => (self.snapshot.index, self.snapshot.term),
        };
        let commit = self.hard_state.commit;
        WalSummary {
            commit_term: self.term_at(commit),
            segments: self.segments,
            member_id: format!("{:x}", self.member_id),
            cluster_id: format!("{:x}", self.cluster_id),
            hard_state: self.hard_state,
            last_index,
            last_term,
            snapshot: self.snapshot,
            term_starts: self.term_starts,
            uncommitted_entries: last_index.saturating_sub(commit),
            torn_tail: self.torn_tail,
            membership_changes: self.membership_changes,
        }
    }
}

fn corrupt(segment: &str, offset: u64, reason: String) -> InspectError {
    InspectError::Corrupt {
        segment: segment.to_string(),
        offset,
        reason,
    }
}

/// Reads the record at `offset` of a segment of `size` bytes.
fn read_record<R: Read>(
    reader: &mut R,
    name: &str,
    offset: u64,
    size: u64,
    last: bool,
) -> Result<Step, InspectError> {
    let io = |source| InspectError::Read {
        path: name.to_string(),
        source,
    };
    let mut word = [0u8; 8];
    match read_full(reader, &mut word).map_err(io)? {
        0 => return Ok(Step::End),
        8 => {}
        _ => return Ok(Step::Short("a cut length word".into())),
    }
    let word = u64::from_le_bytes(word);
    if word == 0 {
        // The preallocated zero tail.
        return Ok(Step::End);
    }
    let length = word & 0x00FF_FFFF_FFFF_FFFF;
    let pad = if word >> 63 == 1 {
        (word >> 56) & 0x7
    } else {
        0
    };
    // The record must fit in what is left of the segment (bounding what is read).
    let room = size.saturating_sub(offset).saturating_sub(pad);
    if length > room {
        return Ok(Step::Short(format!(
            "a record of {length} bytes past the segment's end"
        )));
    }
    let mut frame = vec![0u8; (length + pad) as usize];
    if read_full(reader, &mut frame).map_err(io)? < frame.len() {
        return Ok(Step::Short("a record cut short".into()));
    }
    match pb::Record::decode(&frame[..length as usize]) {
        Ok(record) => Ok(Step::Record(record, frame)),
        Err(_) if last && is_torn(offset + FRAME_BYTES, &frame) => {
            Ok(Step::Short("a torn record".into()))
        }
        Err(e) => Err(corrupt(name, offset, format!("not a WAL record ({e})"))),
    }
}

/// Reads into `buf` until it is full or the input ends; the bytes read.
fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Whether `data` (a record and its padding, starting at file offset `at`) has a whole
/// 512-byte sector chunk of zeros: a write the crash cut (etcd's `isTornEntry`).
fn is_torn(at: u64, data: &[u8]) -> bool {
    let mut position = at;
    let mut rest = data;
    while !rest.is_empty() {
        let room = (SECTOR - position % SECTOR) as usize;
        let (chunk, after) = rest.split_at(room.min(rest.len()));
        if chunk.iter().all(|b| *b == 0) {
            return true;
        }
        position += chunk.len() as u64;
        rest = after;
    }
    false
}
