//! The WAL reader (etcd-data's data dir inspection) on arbitrary bytes: as one segment, the
//! last (where a torn record ends the log), and split in two at a point the first two bytes
//! choose (the CRC chain across segments, damage before the last one); the same bytes as a
//! `.snap` file; and cut into records (`[type, length, payload...]`) framed with a valid CRC
//! chain, so that mutations get past the CRCs and reach the record decoders and the raft
//! bookkeeping. Anything may be an error; nothing may panic, hang or allocate beyond the
//! input's size.
#![no_main]

use etcd_data::inspect::{decode_snap_file, read_wal_bytes};
use libfuzzer_sys::fuzz_target;
use prost::Message;

const FIRST: &str = "0000000000000000-0000000000000000.wal";
const SECOND: &str = "0000000000000001-0000000000000001.wal";

/// `walpb.Record`.
#[derive(Clone, PartialEq, prost::Message)]
struct Record {
    #[prost(int64, tag = "1")]
    kind: i64,
    #[prost(uint32, tag = "2")]
    crc: u32,
    #[prost(bytes = "vec", tag = "3")]
    data: Vec<u8>,
}

/// `data` cut into records and framed as etcd's encoder frames them, CRCs chained.
fn framed(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut crc = 0u32;
    let mut rest = data;
    while let [kind, len, tail @ ..] = rest {
        let (payload, after) = tail.split_at(usize::from(*len).min(tail.len()));
        rest = after;
        let kind = i64::from(*kind % 6);
        if kind != 4 {
            crc = crc32c::crc32c_append(crc, payload);
        }
        let record = Record {
            kind,
            crc,
            data: payload.to_vec(),
        }
        .encode_to_vec();
        let length = record.len() as u64;
        let pad = (8 - length % 8) % 8;
        let word = if pad == 0 { length } else { length | ((0x80 | pad) << 56) };
        out.extend_from_slice(&word.to_le_bytes());
        out.extend_from_slice(&record);
        out.resize(out.len() + pad as usize, 0);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let _ = read_wal_bytes(&[(FIRST, data)]);
    if let [a, b, rest @ ..] = data {
        let at = usize::from(u16::from_le_bytes([*a, *b])) % (rest.len() + 1);
        let (first, second) = rest.split_at(at);
        let _ = read_wal_bytes(&[(FIRST, first), (SECOND, second)]);
    }
    let _ = decode_snap_file(data);
    let valid = framed(data);
    let _ = read_wal_bytes(&[(FIRST, &valid)]);
});
