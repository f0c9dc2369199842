//! The first WAL segment of a restored member: what etcd's own restore writes.
//!
//! Framing: an 8-byte little-endian length word per record; when the record is not a multiple
//! of 8 bytes, the word's top byte is `0x80 | pad` and `pad` zero bytes follow it. A zero word
//! ends the log. Each record's CRC is CRC-32C chained over the data of every record before it
//! in the segment (a crc record carries the running value).

use super::ids::RestoredMember;
use super::pb;

/// Name of the first segment.
pub const FIRST_SEGMENT: &str = "0000000000000000-0000000000000000.wal";
/// etcd preallocates each segment to this size.
pub const SEGMENT_SIZE: u64 = 64 * 1000 * 1000;

const METADATA_TYPE: i64 = 1;
const ENTRY_TYPE: i64 = 2;
/// A HardState record.
pub(crate) const STATE_TYPE: i64 = 3;
const CRC_TYPE: i64 = 4;
const SNAPSHOT_TYPE: i64 = 5;

struct Encoder {
    out: Vec<u8>,
    data_seen: Vec<u8>,
}

impl Encoder {
    fn crc(&self) -> u32 {
        crc32c::crc32c(&self.data_seen)
    }

    fn frame(&mut self, record: &[u8]) {
        frame(&mut self.out, record);
    }

    fn record(&mut self, kind: i64, data: &[u8]) {
        self.data_seen.extend_from_slice(data);
        let record = pb::wal_record(kind, self.crc(), Some(data));
        self.frame(&record);
    }
}

/// Appends `record` to `out` framed as etcd's encoder frames it: the length word, the
/// record, the padding to 8 bytes.
pub(crate) fn frame(out: &mut Vec<u8>, record: &[u8]) {
    let len = record.len() as u64;
    let pad = (8 - len % 8) % 8;
    let word = if pad == 0 {
        len
    } else {
        len | ((0x80 | pad) << 56)
    };
    out.extend_from_slice(&word.to_le_bytes());
    out.extend_from_slice(record);
    out.extend(std::iter::repeat_n(0u8, pad as usize));
}

/// The member JSON etcd stores in `members` and in each ConfChange's context.
pub fn member_json(member: &RestoredMember) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Json<'a> {
        id: u64,
        #[serde(rename = "peerURLs")]
        peer_urls: &'a [String],
        name: &'a str,
    }
    serde_json::to_vec(&Json {
        id: member.id,
        peer_urls: &member.peer_urls,
        name: &member.name,
    })
    .unwrap_or_default()
}

/// The bytes of the first WAL segment (without preallocation) for the member `node_id` of a
/// cluster of `members` (sorted by ID) whose ID is `cluster_id`.
/// `zeros`: how the release's raftpb writes zero fields.
pub fn first_segment(
    members: &[RestoredMember],
    node_id: u64,
    cluster_id: u64,
    zeros: pb::Zeros,
) -> Vec<u8> {
    let mut enc = Encoder {
        out: Vec::new(),
        data_seen: Vec::new(),
    };
    // The crc record carries the CRC before it (0 for the first segment) and no data.
    let crc_record = pb::wal_record(CRC_TYPE, 0, None);
    enc.frame(&crc_record);
    enc.record(METADATA_TYPE, &pb::wal_metadata(node_id, cluster_id));
    enc.record(SNAPSHOT_TYPE, &pb::wal_snapshot(0, 0, None));
    let term = 1;
    for (i, member) in members.iter().enumerate() {
        let change = pb::conf_change_add_node(member.id, &member_json(member), zeros);
        enc.record(
            ENTRY_TYPE,
            &pb::conf_change_entry(term, i as u64 + 1, &change),
        );
    }
    let commit = members.len() as u64;
    let vote = members.first().map_or(0, |m| m.id);
    enc.record(STATE_TYPE, &pb::hard_state(term, vote, commit));
    let voters: Vec<u64> = members.iter().map(|m| m.id).collect();
    enc.record(
        SNAPSHOT_TYPE,
        &pb::wal_snapshot(commit, term, Some((&voters, zeros))),
    );
    enc.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_framed_padded_and_chained() {
        let members = vec![RestoredMember {
            id: 7,
            name: "a".into(),
            peer_urls: vec!["http://127.0.0.1:1".into()],
        }];
        let wal = first_segment(&members, 7, 9, pb::Zeros::Written);
        assert_eq!(wal.len() % 8, 0);
        // Walk the frames: every one parses, the CRCs chain.
        let mut at = 0;
        let mut frames = 0;
        while at < wal.len() {
            let word = u64::from_le_bytes(wal[at..at + 8].try_into().unwrap());
            let len = (word & 0x00FF_FFFF_FFFF_FFFF) as usize;
            let pad = if word >> 63 == 1 {
                ((word >> 56) & 0x7) as usize
            } else {
                0
            };
            assert_eq!((len + pad) % 8, 0);
            at += 8 + len + pad;
            frames += 1;
        }
        assert_eq!(at, wal.len());
        // crc, metadata, empty snapshot, one entry, hard state, snapshot.
        assert_eq!(frames, 6);
        assert_eq!(
            String::from_utf8(member_json(&members[0])).unwrap(),
            r#"{"id":7,"peerURLs":["http://127.0.0.1:1"],"name":"a"}"#
        );
    }
}
