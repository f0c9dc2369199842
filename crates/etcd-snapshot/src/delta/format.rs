//! The bytes of a delta segment (before compression): a magic header, then records, then an
//! end record holding the record count, so a cut-off segment is detected even without its
//! manifest. Each change is kept exactly as etcd keeps it in the `key` bucket of its db (the
//! revision key and the `mvccpb.KeyValue` bytes), so a restore appends it as it is, with the
//! original revisions.
//!
//! Record: `tag: u8`, `len: u32 LE`, `payload: len bytes`.
//! - `1` change: `key_len: u32 LE`, the revision key (17 bytes, 18 for a tombstone), the value.
//! - `2` lease: `id: i64 LE`, `granted TTL seconds: i64 LE` (a lease a change was attached to).
//! - `3` mark: `revision: i64 LE`, `unix ms: i64 LE`: every change up to the revision was
//!   received by then (used for `--to-time`).
//! - `4` leases (format version 2): `revision: i64 LE`, then `id: i64 LE`, `granted TTL seconds:
//!   i64 LE` for each lease the cluster held when `backup run` last looked while it was at that
//!   revision (etcd's watch carries no lease grants or revocations; this is how a replay learns
//!   them). Written when the set differs from the one written before in the chain.
//! - `255` end: `records before it: u64 LE`.

use crate::mvcc::{REVISION_KEY_LEN, next_field, parse_revision_key};

/// First bytes of a segment.
pub const SEGMENT_MAGIC: &[u8; 8] = b"EOPSDLT1";

const TAG_CHANGE: u8 = 1;
const TAG_LEASE: u8 = 2;
const TAG_MARK: u8 = 3;
const TAG_LEASES: u8 = 4;
const TAG_END: u8 = 255;

/// One record of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaRecord {
    /// A change: an entry of etcd's `key` bucket.
    Change {
        /// Revision key: main revision (8 bytes BE), `_`, sub revision (8 bytes BE), and `t`
        /// for a deletion.
        key: Vec<u8>,
        /// The `mvccpb.KeyValue` bytes.
        value: Vec<u8>,
    },
    /// A lease that a change was attached to, with its granted TTL.
    Lease {
        /// Lease ID.
        id: i64,
        /// Granted TTL in seconds.
        ttl: i64,
    },
    /// Every change up to `revision` was received by `unix_ms`.
    Mark {
        /// Revision.
        revision: i64,
        /// Milliseconds since the Unix epoch.
        unix_ms: i64,
    },
    /// Every lease the cluster held at `revision` (as last seen there), with its granted TTL.
    Leases {
        /// The cluster's revision when the leases were listed.
        revision: i64,
        /// Lease ID to granted TTL in seconds, in ID order.
        leases: Vec<(i64, i64)>,
    },
}

impl DeltaRecord {
    /// The main revision of a change.
    pub fn revision(&self) -> Option<i64> {
        match self {
            DeltaRecord::Change { key, .. } => parse_revision_key(key).map(|(main, _)| main),
            _ => None,
        }
    }
}

/// The revision key etcd stores a change under.
pub fn revision_key(main: i64, sub: i64, tombstone: bool) -> Vec<u8> {
    let mut key = Vec::with_capacity(REVISION_KEY_LEN + 1);
    key.extend_from_slice(&main.to_be_bytes());
    key.push(b'_');
    key.extend_from_slice(&sub.to_be_bytes());
    if tombstone {
        key.push(b't');
    }
    key
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn int_field(out: &mut Vec<u8>, field: u64, value: i64) {
    if value != 0 {
        varint(out, field << 3);
        varint(out, value as u64);
    }
}

fn bytes_field(out: &mut Vec<u8>, field: u64, value: &[u8]) {
    if !value.is_empty() {
        varint(out, (field << 3) | 2);
        varint(out, value.len() as u64);
        out.extend_from_slice(value);
    }
}

/// A key's state after a change, as `mvccpb.KeyValue` (proto3: zero fields are left out, as
/// etcd writes them). A deletion is stored by etcd as the key alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyValueFields<'a> {
    /// The key.
    pub key: &'a [u8],
    /// Revision of the key's creation.
    pub create_revision: i64,
    /// Revision of this change.
    pub mod_revision: i64,
    /// Version after the change.
    pub version: i64,
    /// The value.
    pub value: &'a [u8],
    /// Lease ID (0: none).
    pub lease: i64,
}

impl KeyValueFields<'_> {
    /// The protobuf bytes etcd stores.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.key.len() + self.value.len() + 32);
        bytes_field(&mut out, 1, self.key);
        int_field(&mut out, 2, self.create_revision);
        int_field(&mut out, 3, self.mod_revision);
        int_field(&mut out, 4, self.version);
        bytes_field(&mut out, 5, self.value);
        int_field(&mut out, 6, self.lease);
        out
    }
}

/// The lease ID of a stored `mvccpb.KeyValue` (field 6), 0 when none or unreadable.
pub fn key_value_lease(mut bytes: &[u8]) -> i64 {
    while let Some(field) = next_field(bytes) {
        if field.number == 6 {
            return field.varint as i64;
        }
        bytes = &bytes[field.len..];
    }
    0
}

/// A stored `mvccpb.KeyValue` without its lease (field 6); every other field is kept as it is.
/// Bytes that do not parse are returned unchanged.
pub fn without_lease(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        let Some(field) = next_field(rest) else {
            return bytes.to_vec();
        };
        if field.number != 6 {
            out.extend_from_slice(&rest[..field.len]);
        }
        rest = &rest[field.len..];
    }
    out
}

/// Builds a segment's bytes record by record.
#[derive(Debug, Default)]
pub struct SegmentEncoder {
    records: u64,
}

impl SegmentEncoder {
    /// The header.
    pub fn header() -> &'static [u8] {
        SEGMENT_MAGIC
    }

    /// Appends one record's bytes to `out`.
    pub fn record(&mut self, record: &DeltaRecord, out: &mut Vec<u8>) {
        let (tag, payload_len) = match record {
            DeltaRecord::Change { key, value } => (TAG_CHANGE, 4 + key.len() + value.len()),
            DeltaRecord::Lease { .. } => (TAG_LEASE, 16),
            DeltaRecord::Mark { .. } => (TAG_MARK, 16),
            DeltaRecord::Leases { leases, .. } => (TAG_LEASES, 8 + 16 * leases.len()),
        };
        out.push(tag);
        out.extend_from_slice(&(payload_len as u32).to_le_bytes());
        match record {
            DeltaRecord::Change { key, value } => {
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
                out.extend_from_slice(value);
            }
            DeltaRecord::Lease { id, ttl } => {
                out.extend_from_slice(&id.to_le_bytes());
                out.extend_from_slice(&ttl.to_le_bytes());
            }
            DeltaRecord::Mark { revision, unix_ms } => {
                out.extend_from_slice(&revision.to_le_bytes());
                out.extend_from_slice(&unix_ms.to_le_bytes());
            }
            DeltaRecord::Leases { revision, leases } => {
                out.extend_from_slice(&revision.to_le_bytes());
                for (id, ttl) in leases {
                    out.extend_from_slice(&id.to_le_bytes());
                    out.extend_from_slice(&ttl.to_le_bytes());
                }
            }
        }
        self.records += 1;
    }

    /// Records appended so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The end record.
    pub fn end(&self, out: &mut Vec<u8>) {
        out.push(TAG_END);
        out.extend_from_slice(&8u32.to_le_bytes());
        out.extend_from_slice(&self.records.to_le_bytes());
    }
}

/// Why a segment's bytes cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SegmentError(pub String);

/// Reads a segment's records from a reader of its (decompressed) bytes; checks the magic, each
/// record, and that the end record is there and counts them all.
pub struct SegmentReader<R> {
    reader: R,
    records: u64,
    ended: bool,
}

impl<R: std::io::Read> SegmentReader<R> {
    /// Checks the magic and starts reading.
    pub fn new(mut reader: R) -> Result<Self, SegmentError> {
        let mut magic = [0u8; 8];
        reader
            .read_exact(&mut magic)
            .map_err(|e| SegmentError(format!("no segment header: {e}")))?;
        if &magic != SEGMENT_MAGIC {
            return Err(SegmentError("not an etcdops delta segment".into()));
        }
        Ok(SegmentReader {
            reader,
            records: 0,
            ended: false,
        })
    }

    /// The next record; `Ok(None)` after a well-formed end record.
    pub fn next_record(&mut self) -> Result<Option<DeltaRecord>, SegmentError> {
        if self.ended {
            return Ok(None);
        }
        let cut = |e: std::io::Error| SegmentError(format!("the segment is cut off: {e}"));
        let mut head = [0u8; 5];
        self.reader.read_exact(&mut head).map_err(cut)?;
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if len > 64 << 20 {
            return Err(SegmentError(format!("a record claims {len} bytes")));
        }
        let mut payload = vec![0u8; len];
        self.reader.read_exact(&mut payload).map_err(cut)?;
        let i64_at = |at: usize| -> Result<i64, SegmentError> {
            payload
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(i64::from_le_bytes)
                .ok_or_else(|| SegmentError("a record is too short".into()))
        };
        let record = match head[0] {
            TAG_CHANGE => {
                let key_len = payload
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .map(u32::from_le_bytes)
                    .ok_or_else(|| SegmentError("a change record is too short".into()))?
                    as usize;
                let key = payload
                    .get(4..4 + key_len)
                    .ok_or_else(|| SegmentError("a change record is too short".into()))?
                    .to_vec();
                if parse_revision_key(&key).is_none() {
                    return Err(SegmentError("a change has no revision key".into()));
                }
                let value = payload[4 + key_len..].to_vec();
                DeltaRecord::Change { key, value }
            }
            TAG_LEASE => DeltaRecord::Lease {
                id: i64_at(0)?,
                ttl: i64_at(8)?,
            },
            TAG_MARK => DeltaRecord::Mark {
                revision: i64_at(0)?,
                unix_ms: i64_at(8)?,
            },
            TAG_LEASES => {
                if len < 8 || (len - 8) % 16 != 0 {
                    return Err(SegmentError(format!(
                        "a leases record of {len} bytes is not a revision and whole leases"
                    )));
                }
                let leases = (8..len)
                    .step_by(16)
                    .map(|at| Ok((i64_at(at)?, i64_at(at + 8)?)))
                    .collect::<Result<Vec<_>, SegmentError>>()?;
                DeltaRecord::Leases {
                    revision: i64_at(0)?,
                    leases,
                }
            }
            TAG_END => {
                let count = i64_at(0)? as u64;
                if count != self.records {
                    return Err(SegmentError(format!(
                        "the end record counts {count} records, {} were read",
                        self.records
                    )));
                }
                self.ended = true;
                return Ok(None);
            }
            tag => return Err(SegmentError(format!("unknown record type {tag}"))),
        };
        self.records += 1;
        Ok(Some(record))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A whole segment's (uncompressed) bytes holding `records`.
    pub(crate) fn encode(records: &[DeltaRecord]) -> Vec<u8> {
        let mut out = SegmentEncoder::header().to_vec();
        let mut encoder = SegmentEncoder::default();
        for r in records {
            encoder.record(r, &mut out);
        }
        encoder.end(&mut out);
        out
    }

    fn decode(bytes: &[u8]) -> Result<Vec<DeltaRecord>, SegmentError> {
        let mut reader = SegmentReader::new(bytes)?;
        let mut out = Vec::new();
        while let Some(r) = reader.next_record()? {
            out.push(r);
        }
        Ok(out)
    }

    #[test]
    fn records_round_trip_and_a_cut_segment_is_refused() {
        let kv = KeyValueFields {
            key: b"/a",
            create_revision: 5,
            mod_revision: 7,
            version: 2,
            value: b"v",
            lease: 0x1234,
        };
        let records = vec![
            DeltaRecord::Lease {
                id: 0x1234,
                ttl: 60,
            },
            DeltaRecord::Change {
                key: revision_key(7, 0, false),
                value: kv.encode(),
            },
            DeltaRecord::Change {
                key: revision_key(8, 1, true),
                value: KeyValueFields {
                    key: b"/a",
                    ..Default::default()
                }
                .encode(),
            },
            DeltaRecord::Mark {
                revision: 8,
                unix_ms: 1_700_000_000_000,
            },
            DeltaRecord::Leases {
                revision: 8,
                leases: vec![(0x1234, 60), (i64::MAX, 1)],
            },
            DeltaRecord::Leases {
                revision: 9,
                leases: Vec::new(),
            },
        ];
        let bytes = encode(&records);
        assert_eq!(decode(&bytes).unwrap(), records);
        assert_eq!(records[1].revision(), Some(7));
        assert_eq!(records[2].revision(), Some(8));
        assert!(decode(&bytes[..bytes.len() - 3]).is_err());
        // Dropping a whole record is caught by the count in the end record.
        let mut short = encode(&records[..3]);
        let end = short.split_off(short.len() - 13);
        let mut wrong = encode(&records[..2]);
        wrong.truncate(wrong.len() - 13);
        wrong.extend_from_slice(&end);
        assert!(decode(&wrong).is_err());
        assert!(decode(b"NOTDELTA").is_err());
    }

    #[test]
    fn key_values_encode_as_etcd_does() {
        let kv = KeyValueFields {
            key: b"k",
            create_revision: 2,
            mod_revision: 3,
            version: 1,
            value: b"v",
            lease: 0,
        };
        // proto3: 0a 01 'k' 10 02 18 03 20 01 2a 01 'v'; no lease field.
        assert_eq!(
            kv.encode(),
            [0x0a, 1, b'k', 0x10, 2, 0x18, 3, 0x20, 1, 0x2a, 1, b'v']
        );
        let encoded = kv.encode();
        let (key, value) = crate::mvcc::key_value_fields(&encoded).unwrap();
        assert_eq!((key, value), (&b"k"[..], &b"v"[..]));
        let leased = KeyValueFields {
            lease: 0x7fff_0000_1234,
            ..kv
        };
        assert_eq!(key_value_lease(&leased.encode()), 0x7fff_0000_1234);
        assert_eq!(key_value_lease(&kv.encode()), 0);
        assert_eq!(without_lease(&leased.encode()), kv.encode());
    }

    #[test]
    fn a_leases_record_that_is_not_whole_leases_is_refused() {
        let mut bytes = SegmentEncoder::header().to_vec();
        bytes.push(TAG_LEASES);
        bytes.extend_from_slice(&12u32.to_le_bytes());
        bytes.extend_from_slice(&[0u8; 12]);
        let error = decode(&bytes).unwrap_err();
        assert!(
            error.0.contains("not a revision and whole leases"),
            "{error}"
        );
    }
}
