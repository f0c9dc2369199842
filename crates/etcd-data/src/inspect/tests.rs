//! The WAL reader and the data dir inspection, on WALs written by the restore's writer, by
//! hand (segments, overwrites, torn tails, damage) and by etcd 3.6.14 itself (the fixtures).
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use prost::Message;
use rustix::fs::{FlockOperation, flock};

use super::pb;
use super::*;

const METADATA: i64 = 1;
const ENTRY: i64 = 2;
const STATE: i64 = 3;
const CRC: i64 = 4;
const SNAPSHOT: i64 = 5;

/// Writes WAL segments as etcd's encoder does: framed, padded, CRC chained across segments.
struct Writer {
    segments: Vec<(String, Vec<u8>)>,
    crc: u32,
    metadata: Vec<u8>,
}

impl Writer {
    /// A first segment `0000000000000000-0000000000000000.wal` with crc, metadata and an
    /// empty snapshot record, as etcd's `wal.Create` writes it.
    fn new(member: u64, cluster: u64) -> Self {
        let metadata = pb::Metadata {
            node_id: member,
            cluster_id: cluster,
        }
        .encode_to_vec();
        let mut writer = Writer {
            segments: Vec::new(),
            crc: 0,
            metadata,
        };
        writer.cut(0);
        writer.snapshot(0, 0);
        writer
    }

    fn frame(&mut self, record: &[u8]) {
        let len = record.len() as u64;
        let pad = (8 - len % 8) % 8;
        let word = if pad == 0 {
            len
        } else {
            len | ((0x80 | pad) << 56)
        };
        let out = &mut self.segments.last_mut().unwrap().1;
        out.extend_from_slice(&word.to_le_bytes());
        out.extend_from_slice(record);
        out.extend(std::iter::repeat_n(0u8, pad as usize));
    }

    fn record(&mut self, kind: i64, data: Vec<u8>) {
        if kind != CRC {
            self.crc = crc32c::crc32c_append(self.crc, &data);
        }
        let record = pb::Record {
            kind,
            crc: self.crc,
            data,
        }
        .encode_to_vec();
        self.frame(&record);
    }

    /// Starts the next segment (its first index `index`): crc record, metadata.
    fn cut(&mut self, index: u64) {
        let seq = self.segments.len();
        self.segments
            .push((format!("{seq:016x}-{index:016x}.wal"), Vec::new()));
        self.record(CRC, Vec::new());
        let metadata = self.metadata.clone();
        self.record(METADATA, metadata);
    }

    fn entries(&mut self, term: u64, indexes: std::ops::RangeInclusive<u64>) {
        for index in indexes {
            // With data, which the reader skips.
            let mut entry = pb::Entry {
                kind: 0,
                term,
                index,
            }
            .encode_to_vec();
            entry.extend_from_slice(&[0x22, 3, b'p', b'u', b't']);
            self.record(ENTRY, entry);
        }
    }

    /// A membership change at `index`: `kind` as raftpb numbers it, `context` the JSON
    /// etcd puts there (empty for a removal).
    fn conf_change(&mut self, term: u64, index: u64, kind: u64, node: u64, context: &str) {
        use crate::restore::pb as enc;
        let mut change = Vec::new();
        enc::uint(&mut change, 1, 0);
        enc::uint(&mut change, 2, kind);
        enc::uint(&mut change, 3, node);
        if !context.is_empty() {
            enc::bytes(&mut change, 4, context.as_bytes());
        }
        let mut entry = Vec::new();
        enc::uint(&mut entry, 1, 1);
        enc::uint(&mut entry, 2, term);
        enc::uint(&mut entry, 3, index);
        enc::bytes(&mut entry, 4, &change);
        self.record(ENTRY, entry);
    }

    fn state(&mut self, term: u64, vote: u64, commit: u64) {
        let data = pb::HardState { term, vote, commit }.encode_to_vec();
        self.record(STATE, data);
    }

    fn snapshot(&mut self, index: u64, term: u64) {
        let data = pb::WalSnapshot { index, term }.encode_to_vec();
        self.record(SNAPSHOT, data);
    }

    fn last_len(&self) -> usize {
        self.segments.last().unwrap().1.len()
    }

    fn read(&self) -> Result<WalSummary, InspectError> {
        let segments: Vec<(&str, &[u8])> = self
            .segments
            .iter()
            .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
            .collect();
        read_wal_bytes(&segments)
    }

    /// Writes the segments into `DIR/member/wal`, the last one preallocated with zeros.
    fn write_to(&self, dir: &Path) {
        let wal = dir.join("member").join("wal");
        std::fs::create_dir_all(&wal).unwrap();
        for (i, (name, bytes)) in self.segments.iter().enumerate() {
            let mut bytes = bytes.clone();
            if i + 1 == self.segments.len() {
                bytes.resize(bytes.len() + 64 * 1024, 0);
            }
            std::fs::write(wal.join(name), bytes).unwrap();
        }
    }
}

/// A three-term log over two segments: term 2 overwrote entries 5..6 of term 1 (never
/// committed), term 3 began at 8; commit 8.
fn overwritten_log() -> Writer {
    let mut w = Writer::new(0xa1, 0xc1);
    w.entries(1, 1..=6);
    w.state(1, 0xa1, 4);
    w.cut(7);
    w.state(1, 0xa1, 4);
    w.entries(2, 5..=7);
    w.state(2, 0xb2, 6);
    w.entries(3, 8..=9);
    w.state(3, 0xa1, 8);
    w
}

#[test]
fn a_multi_segment_log_reads_as_raft_left_it_after_overwrites() {
    let w = overwritten_log();
    let wal = w.read().unwrap();
    assert_eq!(wal.segments.len(), 2);
    assert_eq!(wal.member_id, "a1");
    assert_eq!(wal.cluster_id, "c1");
    assert_eq!(
        wal.hard_state,
        HardState {
            term: 3,
            vote: 0xa1,
            commit: 8
        }
    );
    assert_eq!((wal.last_index, wal.last_term), (9, 3));
    let starts: Vec<(u64, u64)> = wal
        .term_starts
        .iter()
        .map(|t| (t.term, t.first_index))
        .collect();
    assert_eq!(starts, [(1, 1), (2, 5), (3, 8)]);
    assert_eq!(wal.commit_term, Some(3));
    assert_eq!(wal.uncommitted_entries, 1);
    assert!(!wal.torn_tail);
    // Overwritten back to index 2 by term 4: terms 2 and 3 vanish.
    let mut w = overwritten_log();
    w.entries(4, 2..=3);
    let wal = w.read().unwrap();
    let starts: Vec<(u64, u64)> = wal
        .term_starts
        .iter()
        .map(|t| (t.term, t.first_index))
        .collect();
    assert_eq!(starts, [(1, 1), (4, 2)]);
    assert_eq!((wal.last_index, wal.last_term), (3, 4));
    // The HardState still says 8: beyond the log, no snapshot there.
    assert_eq!(wal.commit_term, None);
}

#[test]
fn a_purged_log_starts_at_its_first_segment_and_a_snapshot_covers_a_gap() {
    let mut w = overwritten_log();
    // The first segment purged: the second's crc record carries a chain not checked.
    w.segments.remove(0);
    let wal = w.read().unwrap();
    assert_eq!(wal.term_starts[0].first_index, 5);
    assert_eq!(wal.commit_term, Some(3));
    // A follower sent a snapshot at 20 (term 3), then entries from 21 on.
    let mut w = overwritten_log();
    w.snapshot(20, 3);
    w.state(3, 0xa1, 20);
    w.entries(3, 21..=22);
    let wal = w.read().unwrap();
    let starts: Vec<(u64, u64)> = wal
        .term_starts
        .iter()
        .map(|t| (t.term, t.first_index))
        .collect();
    assert_eq!(starts, [(3, 20)]);
    assert_eq!(wal.snapshot, SnapPosition { index: 20, term: 3 });
    assert_eq!(wal.commit_term, Some(3));
    assert_eq!((wal.last_index, wal.uncommitted_entries), (22, 2));
}

#[test]
fn a_torn_last_record_ends_the_log_as_etcd_repair_does() {
    let mut w = overwritten_log();
    let before = w.last_len();
    w.entries(3, 10..=10);
    // Cut in the middle of the last record.
    let cut = (before + w.last_len()) / 2;
    w.segments.last_mut().unwrap().1.truncate(cut);
    let wal = w.read().unwrap();
    assert!(wal.torn_tail);
    assert_eq!(wal.last_index, 9);
    // Cut inside the length word.
    w.segments.last_mut().unwrap().1.truncate(before + 3);
    let wal = w.read().unwrap();
    assert!(wal.torn_tail);
    assert_eq!(wal.last_index, 9);

    // A big last record whose second sector never reached the disk (zeros).
    let mut w = overwritten_log();
    let start = w.last_len();
    let mut entry = pb::Entry {
        kind: 0,
        term: 3,
        index: 10,
    }
    .encode_to_vec();
    entry.extend_from_slice(&[0x22, 0x90, 0x0b]); // data: 1424 bytes
    entry.extend(std::iter::repeat_n(b'x', 1424));
    w.record(ENTRY, entry);
    let bytes = &mut w.segments.last_mut().unwrap().1;
    let sector = (start / 512 + 2) * 512;
    bytes[sector..sector + 512].fill(0);
    let wal = w.read().unwrap();
    assert!(wal.torn_tail);
    assert_eq!(wal.last_index, 9);
    // The same damage in a segment that is not the last is refused.
    let mut w2 = Writer {
        segments: w.segments.clone(),
        crc: 0,
        metadata: w.metadata.clone(),
    };
    w2.segments
        .push(("0000000000000002-000000000000000b.wal".into(), Vec::new()));
    let err = w2.read().unwrap_err().to_string();
    assert!(
        err.contains("0000000000000001-0000000000000007.wal") && err.contains("CRC mismatch"),
        "{err}"
    );
}

#[test]
fn a_crc_mismatch_before_the_end_is_refused_naming_segment_and_offset() {
    let mut w = overwritten_log();
    // Flip a byte inside the first entry's data (after its 8-byte frame word): the records
    // after it are intact, so this is damage, not a torn write.
    let first = &mut w.segments[0].1;
    let at = first.len() / 2;
    first[at] ^= 0x40;
    let err = w.read().unwrap_err();
    let text = err.to_string();
    match &err {
        InspectError::Corrupt {
            segment, offset, ..
        } => {
            assert_eq!(segment, "0000000000000000-0000000000000000.wal");
            assert!(*offset > 0 && *offset <= at as u64, "{offset}");
        }
        other => panic!("{other:?}"),
    }
    assert!(text.contains("damaged") && !text.contains('\n'), "{text}");
    // The same in the last segment, with no zero sector: refused too.
    let mut w = overwritten_log();
    let last = &mut w.segments[1].1;
    let at = last.len() - 12;
    last[at] ^= 0x01;
    let text = w.read().unwrap_err().to_string();
    assert!(
        text.contains("0000000000000001-0000000000000007.wal"),
        "{text}"
    );
    // A second segment whose crc record does not continue the first's chain.
    let mut w = overwritten_log();
    w.crc ^= 1;
    w.cut(10);
    let text = w.read().unwrap_err().to_string();
    assert!(text.contains("crc record"), "{text}");
}

/// The fixture releases (`tests/fixtures/etcd-<version>`), as the integration tests see them.
#[path = "../../tests/common/mod.rs"]
mod common;

use common::{ETCD_3_6, ETCD_3_7, Etcd, RELEASES};

/// etcd 3.6.14's fixture dir, for the tests that need one release's data.
fn fixture_dir() -> PathBuf {
    ETCD_3_6.dir()
}

fn unpack(name: &str) -> tempfile::TempDir {
    ETCD_3_6.unpack(name)
}

/// A value of etcdctl's `endpoint status -w json` for member a (the fixture's).
fn fixture_status(etcd: &Etcd, field: &str) -> serde_json::Value {
    let json = etcd.output("endpoint-status.json");
    let status = &json[0]["Status"];
    status
        .pointer(field)
        .cloned()
        .unwrap_or_else(|| panic!("{field}"))
}

#[test]
fn the_stopped_member_agrees_with_its_endpoint_status() {
    for etcd in RELEASES {
        let v = etcd.version;
        let (_dir, data_dir) = etcd.stopped_member();
        let got = inspect_data_dir(&data_dir).unwrap();
        let status = |field: &str| fixture_status(&etcd, field);
        let id = |field: &str| format!("{:x}", status(field).as_u64().unwrap());
        assert_eq!(got.wal.member_id, id("/header/member_id"), "{v}");
        assert_eq!(got.wal.cluster_id, id("/header/cluster_id"), "{v}");
        let raft_index = status("/raftIndex").as_u64().unwrap();
        let raft_term = status("/raftTerm").as_u64().unwrap();
        assert!(got.wal.hard_state.commit >= raft_index, "{v}: {got:?}");
        assert_eq!(got.wal.last_term, raft_term, "{v}");
        // A vote may have started while the members were stopping (3.7's did: term 3).
        assert!(got.wal.hard_state.term >= raft_term, "{v}");
        assert_eq!(got.wal.commit_term, Some(raft_term), "{v}");
        assert_eq!(
            got.db.revision,
            status("/header/revision").as_i64().unwrap(),
            "{v}"
        );
        assert_eq!(got.db.compact_revision, Some(20), "{v}");
        assert_eq!(got.db.term, Some(raft_term), "{v}");
        assert!(got.db.consistent_index >= raft_index, "{v}");
        assert!(got.wal.last_index >= got.wal.hard_state.commit, "{v}");
        assert_eq!(got.wal.term_starts.first().map(|t| t.term), Some(1), "{v}");
        assert_eq!(got.db.members.len(), 3, "{v}");
        // etcd's own bootstrap changes name the same three members, by name, as its db.
        let from_wal = DataDirInspection {
            wal: got.wal.clone(),
            ..DataDirInspection::default()
        }
        .membership();
        let ids_names = |members: &[crate::status::DbMember]| {
            let mut out: Vec<(String, String)> = members
                .iter()
                .map(|m| (m.id.clone(), m.name.clone()))
                .collect();
            out.sort();
            out
        };
        assert_eq!(ids_names(&from_wal), ids_names(&got.db.members), "{v}");
        assert!(!got.locked && !got.is_learner && !got.wal.torn_tail, "{v}");
        // A clean stop leaves nothing committed beyond the db.
        assert_eq!(got.committed_entries_beyond_db, 0, "{v}");
    }
}

/// The raw `raftpb.Entry` records of a WAL segment.
fn raw_entries(segment: &[u8]) -> Vec<Vec<u8>> {
    common::wal_frames(segment)
        .into_iter()
        .map(|frame| pb::Record::decode(frame).unwrap())
        .filter(|record| record.kind == ENTRY)
        .map(|record| record.data)
        .collect()
}

/// etcd 3.7 writes its normal entries without raftpb.Entry's field 1 (`Type`); 3.6 writes
/// `Type = 0` in each. Both logs read the same: the normal entries as normal, the three
/// bootstrap additions as the only membership changes, up to the last index.
#[test]
fn normal_entries_with_and_without_their_type_field_read_alike() {
    for (etcd, untyped_normal) in [(ETCD_3_6, 0), (ETCD_3_7, 77)] {
        let v = etcd.version;
        let (_dir, data_dir) = etcd.stopped_member();
        let wal_dir = data_dir.join("member/wal");
        let segment = std::fs::read_dir(&wal_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "wal"))
            .unwrap();
        let entries = raw_entries(&std::fs::read(&segment).unwrap());
        // Field 1 (varint) is the tag byte 0x08.
        let untyped = entries.iter().filter(|e| e.first() != Some(&0x08)).count();
        assert_eq!(untyped, untyped_normal, "{v}");
        let wal = read_wal_dir(&wal_dir, false).unwrap();
        assert_eq!(wal.last_index, entries.len() as u64, "{v}");
        let kinds: Vec<MembershipChangeKind> =
            wal.membership_changes.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [MembershipChangeKind::Add; 3], "{v}");
        if etcd.version == ETCD_3_7.version {
            // The README's account of member a's log.
            assert_eq!((wal.last_index, wal.last_term), (80, 2));
            assert_eq!(wal.hard_state.term, 3);
        }
    }
}

/// A hand-made entry without field 1, whose data is a ConfChange: read as EntryNormal (the
/// proto2 default), so its data is not taken for a membership change; only an explicit
/// `Type = 1` makes one.
#[test]
fn an_entry_without_its_type_field_reads_as_a_normal_entry() {
    use crate::restore::pb as enc;
    let change = enc::conf_change_add_node(
        0xd,
        br#"{"id":13,"peerURLs":["http://10.0.0.13:2380"],"name":"d"}"#,
        enc::Zeros::Written,
    );
    let entry = |kind: Option<u64>, index: u64| {
        let mut out = Vec::new();
        if let Some(kind) = kind {
            enc::uint(&mut out, 1, kind);
        }
        enc::uint(&mut out, 2, 2);
        enc::uint(&mut out, 3, index);
        enc::bytes(&mut out, 4, &change);
        out
    };
    let mut w = Writer::new(0xa, 0xc1);
    w.record(ENTRY, entry(None, 1));
    w.record(ENTRY, entry(Some(0), 2));
    w.record(ENTRY, entry(Some(1), 3));
    w.state(2, 0xa, 3);
    assert_eq!(entry(None, 1)[0], 0x10, "no field 1 in the first");
    let wal = w.read().unwrap();
    assert_eq!(
        (wal.last_index, wal.last_term, wal.commit_term),
        (3, 2, Some(2))
    );
    let changes: Vec<(u64, MembershipChangeKind)> = wal
        .membership_changes
        .iter()
        .map(|c| (c.index, c.kind))
        .collect();
    assert_eq!(changes, [(3, MembershipChangeKind::Add)]);
}

/// `data-dir commit-tail` on each release's stopped member: what it plans agrees with the
/// inspection (3.7's untyped entries counted), and a clean stop leaves nothing to adopt.
#[test]
fn commit_tail_reads_each_releases_wal() {
    for etcd in RELEASES {
        let v = etcd.version;
        let (_dir, data_dir) = etcd.stopped_member();
        let got = inspect_data_dir(&data_dir).unwrap();
        let plan = plan_wal_tail(&data_dir).unwrap();
        assert_eq!(plan.commit_before, got.wal.hard_state.commit, "{v}");
        assert_eq!(
            (plan.term, plan.vote),
            (got.wal.hard_state.term, got.wal.hard_state.vote),
            "{v}"
        );
        assert_eq!(
            plan.entries_adopted,
            got.wal.last_index - got.wal.hard_state.commit,
            "{v}"
        );
        assert_eq!(plan.changed, plan.entries_adopted > 0, "{v}");
        let wal_dir = data_dir.join("member/wal");
        let before = std::fs::read(wal_dir.join(&plan.segment)).unwrap();
        let adopted = adopt_wal_tail(&data_dir).unwrap();
        assert_eq!(adopted.commit_after, got.wal.last_index, "{v}");
        if !adopted.changed {
            assert_eq!(
                std::fs::read(wal_dir.join(&plan.segment)).unwrap(),
                before,
                "{v}"
            );
        }
        let after = inspect_data_dir(&data_dir).unwrap();
        assert_eq!(after.wal.hard_state.commit, got.wal.last_index, "{v}");
    }
}

#[test]
fn a_restored_member_reads_back_what_the_restore_wrote() {
    for etcd in RELEASES {
        let v = etcd.version;
        let root = tempfile::tempdir().unwrap();
        let data_dir = root.path().join("restored");
        let request = etcd.restore_request_a(&data_dir);
        let restored =
            crate::restore_snapshot("snapshot", &etcd.snapshot(), &request, &crate::Unguarded)
                .unwrap();
        let got = inspect_data_dir(&data_dir).unwrap();
        assert_eq!(got.wal.member_id, restored.member_id, "{v}");
        assert_eq!(got.wal.cluster_id, restored.cluster_id, "{v}");
        let lowest = restored.members.iter().map(|m| m.id).min().unwrap();
        assert_eq!(
            got.wal.hard_state,
            HardState {
                term: 1,
                vote: lowest,
                commit: 3
            },
            "{v}"
        );
        assert_eq!(got.wal.snapshot, SnapPosition { index: 3, term: 1 }, "{v}");
        assert_eq!(
            got.snap_file,
            Some(SnapPosition { index: 3, term: 1 }),
            "{v}"
        );
        assert_eq!((got.wal.last_index, got.wal.last_term), (3, 1), "{v}");
        assert_eq!(got.wal.commit_term, Some(1), "{v}");
        assert_eq!(got.wal.uncommitted_entries, 0, "{v}");
        assert_eq!(got.db.consistent_index, 3, "{v}");
        assert_eq!(got.db.term, Some(1), "{v}");
        assert_eq!(got.db.revision, restored.revision, "{v}");
        assert_eq!(got.committed_entries_beyond_db, 0, "{v}");
        // etcdutl's restore of the same request reads the same.
        let theirs = etcd.unpack("etcdutl-restored-a.tar.gz");
        let etcdutl = inspect_data_dir(&theirs.path().join("restored-a")).unwrap();
        assert_eq!(etcdutl.wal, got.wal, "{v}");
        assert_eq!(etcdutl.snap_file, got.snap_file, "{v}");
        assert_eq!(etcdutl.db.consistent_index, got.db.consistent_index, "{v}");
    }
}

#[test]
fn a_broken_newest_snap_file_is_passed_over_for_an_older_one() {
    let root = tempfile::tempdir().unwrap();
    let data_dir = root.path().join("restored");
    let snapshot =
        crate::open_snapshot_file(&fixture_dir().join("snapshot-3.6.14.db"), None).unwrap();
    let request = crate::RestoreRequest {
        name: "a".into(),
        initial_cluster: "a=http://127.0.0.1:45111".into(),
        initial_cluster_token: "t".into(),
        initial_advertise_peer_urls: vec!["http://127.0.0.1:45111".into()],
        data_dir: data_dir.clone(),
        ..crate::RestoreRequest::default()
    };
    crate::restore_snapshot("snapshot", &snapshot, &request, &crate::Unguarded).unwrap();
    let snap_dir = data_dir.join("member").join("snap");
    let newer = snap_dir.join(format!("{:016x}-{:016x}.snap", 5, 900));
    std::fs::write(&newer, b"\x08\x01\x12\x03abc").unwrap();
    let (found, broken) = newest_snap(&snap_dir).unwrap();
    assert_eq!(found, Some(SnapPosition { index: 1, term: 1 }));
    assert_eq!(broken, [newer.file_name().unwrap().to_string_lossy()]);
}

#[test]
fn a_running_member_is_reported_locked_and_still_read() {
    let dir = unpack("member-a-data-dir-stopped.tar.gz");
    let data_dir = dir.path().join("a");
    let db = data_dir.join("member/snap/db");
    // What etcd's bbolt holds while it runs.
    let held = common::hold_db_lock(&db);
    let got = inspect_data_dir(&data_dir).unwrap();
    assert!(got.locked);
    assert_eq!(got.db.revision, 54);
    assert!(got.wal.last_index > 0);
    drop(held);
    // And a stopped one's read does not keep etcd from starting afterwards.
    let got = inspect_data_dir(&data_dir).unwrap();
    assert!(!got.locked);
    let again = std::fs::File::open(&db).unwrap();
    flock(&again, FlockOperation::NonBlockingLockExclusive).unwrap();
}

#[test]
fn a_hand_written_data_dir_inspects_with_its_preallocated_tail() {
    let dir = unpack("member-a-data-dir-stopped.tar.gz");
    let data_dir = dir.path().join("a");
    let wal_dir = data_dir.join("member/wal");
    std::fs::remove_dir_all(&wal_dir).unwrap();
    overwritten_log().write_to(&data_dir);
    std::fs::write(wal_dir.join("0.tmp"), b"ignored").unwrap();
    let got = inspect_data_dir(&data_dir).unwrap();
    assert_eq!(got.wal.last_index, 9);
    assert!(!got.wal.torn_tail);
    // commit 8, the db applied 70 already: nothing beyond it.
    assert_eq!(got.committed_entries_beyond_db, 0);
    // A segment missing in the middle of the sequence.
    let mut w = overwritten_log();
    w.cut(10);
    std::fs::remove_dir_all(&wal_dir).unwrap();
    w.write_to(&data_dir);
    std::fs::remove_file(wal_dir.join("0000000000000001-0000000000000007.wal")).unwrap();
    let err = inspect_data_dir(&data_dir).unwrap_err().to_string();
    assert!(err.contains("segment is missing"), "{err}");
}

#[test]
fn a_missing_wal_or_member_dir_is_a_clear_one_line_error() {
    let dir = unpack("member-a-data-dir-stopped.tar.gz");
    let data_dir = dir.path().join("a");
    std::fs::remove_dir_all(data_dir.join("member/wal")).unwrap();
    let err = inspect_data_dir(&data_dir).unwrap_err();
    assert!(matches!(err, InspectError::NoWal { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("member/wal") && !text.contains('\n'),
        "{text}"
    );
    let err = inspect_data_dir(dir.path()).unwrap_err();
    assert!(matches!(err, InspectError::NotADataDir { .. }), "{err:?}");
    let err = inspect_data_dir(&dir.path().join("absent")).unwrap_err();
    assert!(matches!(err, InspectError::NoSuchDir { .. }), "{err:?}");
}

/// The fuzz target's seeds (`fuzz/seeds/wal_reader`) and cheap mutations of them: each
/// gives a summary or a one-line error, never a panic.
#[test]
fn fuzz_seeds_and_their_mutations_read_without_panicking() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/wal_reader");
    let mut inputs: Vec<Vec<u8>> = std::fs::read_dir(&seeds)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(!inputs.is_empty(), "no seeds in {}", seeds.display());
    inputs.push(overwritten_log().segments.concat_bytes());
    for input in inputs {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..400 {
            let mut data = input.clone();
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            if !data.is_empty() {
                let at = (rng % data.len() as u64) as usize;
                match round % 3 {
                    0 => data[at] ^= (rng >> 32) as u8 | 1,
                    1 => data.truncate(at),
                    _ => data[at..].fill(0),
                }
            }
            for result in [
                read_wal_bytes(&[("seg.wal", &data)]),
                read_wal_bytes(&[("a.wal", &data), ("b.wal", &[])]),
            ] {
                if let Err(e) = result {
                    let text = e.to_string();
                    assert!(!text.is_empty() && !text.contains('\n'), "{text}");
                }
            }
        }
    }
}

/// Random records with a valid CRC chain (what the fuzz target's framing makes): they reach
/// the record decoders and the raft bookkeeping; each log gives a summary or a one-line
/// error, never a panic (no overflow at u64::MAX indexes either).
#[test]
fn random_records_with_valid_crcs_read_without_panicking() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..300 {
        let mut w = Writer::new(next(), next());
        for _ in 0..(next() % 40) {
            let value = match next() % 4 {
                0 => u64::MAX,
                1 => next() % 10,
                _ => next(),
            };
            match next() % 6 {
                0 => w.entries(next() % 5, value..=value),
                1 => w.state(next() % 5, next(), value),
                2 => w.snapshot(value, next() % 5),
                3 => w.cut(value),
                4 => {
                    let junk: Vec<u8> = (0..next() % 24).map(|_| next() as u8).collect();
                    w.record((next() % 7) as i64, junk);
                }
                _ => {
                    let data = pb::Metadata {
                        node_id: next(),
                        cluster_id: 1,
                    }
                    .encode_to_vec();
                    w.record(METADATA, data);
                }
            }
        }
        match w.read() {
            Ok(wal) => assert!(wal.last_index >= wal.snapshot.index),
            Err(e) => {
                let text = e.to_string();
                assert!(!text.is_empty() && !text.contains('\n'), "{text}");
            }
        }
    }
}

/// The segments' bytes, one after the other (one segment whose chain continues).
trait ConcatBytes {
    fn concat_bytes(&self) -> Vec<u8>;
}

impl ConcatBytes for Vec<(String, Vec<u8>)> {
    fn concat_bytes(&self) -> Vec<u8> {
        self.iter().flat_map(|(_, b)| b.clone()).collect()
    }
}

/// A member killed before its db was first written: the WAL alone names the cluster's
/// members (bootstrap additions with their names, a learner added then promoted, a removal),
/// and a change appended but overwritten by a new leader, or not committed, counts for
/// nothing.
#[test]
fn the_wal_names_the_members_when_the_db_names_none() {
    let member = |id: u64, name: &str| {
        format!(r#"{{"id":{id},"peerURLs":["http://10.0.0.{id}:2380"],"name":"{name}"}}"#)
    };
    let mut w = Writer::new(0xa, 0xc1);
    w.conf_change(1, 1, 0, 0xa, &member(0xa, "m0"));
    w.conf_change(1, 2, 0, 0xb, &member(0xb, "m1"));
    w.conf_change(1, 3, 0, 0xc, &member(0xc, "m2"));
    w.entries(2, 4..=5);
    // `member add --learner`, then its promotion (3.5's ConfigChangeContext), then m1 removed.
    w.conf_change(
        2,
        6,
        3,
        0xd,
        r#"{"id":13,"peerURLs":["http://10.0.0.13:2380"],"isLearner":true}"#,
    );
    w.conf_change(2, 7, 0, 0xd, r#"{"id":13,"isPromote":true}"#);
    w.conf_change(2, 8, 1, 0xb, "");
    // Term 2's leader appended a removal of m2 nobody committed; term 3 overwrote it.
    w.conf_change(2, 9, 1, 0xc, "");
    w.entries(3, 9..=9);
    // Appended, not committed: a learner that may never exist.
    w.conf_change(
        3,
        10,
        3,
        0xe,
        r#"{"id":14,"peerURLs":["http://10.0.0.14:2380"]}"#,
    );
    w.state(3, 0xa, 9);
    let wal = w.read().unwrap();
    let kinds: Vec<(u64, MembershipChangeKind)> = wal
        .membership_changes
        .iter()
        .map(|c| (c.index, c.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (1, MembershipChangeKind::Add),
            (2, MembershipChangeKind::Add),
            (3, MembershipChangeKind::Add),
            (6, MembershipChangeKind::AddLearner),
            (7, MembershipChangeKind::Promote),
            (8, MembershipChangeKind::Remove),
            (10, MembershipChangeKind::AddLearner),
        ]
    );
    let inspection = DataDirInspection {
        wal,
        ..DataDirInspection::default()
    };
    let members: Vec<(String, String, bool)> = inspection
        .membership()
        .into_iter()
        .map(|m| (m.id, m.name, m.is_learner))
        .collect();
    assert_eq!(
        members,
        vec![
            ("a".to_string(), "m0".to_string(), false),
            ("c".to_string(), "m2".to_string(), false),
            ("d".to_string(), String::new(), false),
        ]
    );
    // Once the db names members, they are the membership (the WAL after a snapshot holds
    // only the changes since).
    let mut with_db = inspection.clone();
    with_db.db.members = vec![crate::status::DbMember {
        id: "a".into(),
        name: "m0".into(),
        peer_urls: Vec::new(),
        client_urls: Vec::new(),
        is_learner: false,
    }];
    assert_eq!(with_db.membership().len(), 1);
    // Older JSON (no membership_changes) still reads.
    let mut json = serde_json::to_value(&inspection).unwrap();
    json["wal"]
        .as_object_mut()
        .unwrap()
        .remove("membership_changes");
    let old: DataDirInspection = serde_json::from_value(json).unwrap();
    assert!(old.membership().is_empty());
}
