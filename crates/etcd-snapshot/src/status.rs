//! `snapshot status`, natively: what `etcdutl snapshot status` (3.5) and `etcdctl snapshot
//! status` (3.4) print, computed the same way, plus what else an operator wants to know about
//! a snapshot before restoring it (members, consistent index, compaction, live keys, leases).
//!
//! The whole db is held in memory while it is read: a plain file is read into memory, a zstd
//! file or a stored object is decompressed into memory. Status of a db of N bytes needs about
//! N bytes plus the distinct live keys.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::Path;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use etcd_store::Store;

use crate::bbolt::{BoltDb, Bucket};
use crate::error::{Result, SnapshotError};
use crate::manifest::Compression;
use crate::save::TRAILER_LEN;

/// zstd frames start with these bytes.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// CRC-32C, as Go's `crc32.MakeTable(crc32.Castagnoli)`.
/// CRC-32C with slice-by-16 tables: several times faster than the bytewise default on a
/// whole db.
const CASTAGNOLI: crc::Crc<u32, crc::Table<16>> =
    crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);
/// Length of an MVCC revision key: 8-byte main revision, `_`, 8-byte sub revision.
const REVISION_KEY_LEN: usize = 17;

/// How to read a snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusOptions {
    /// Report a SHA-256 trailer that does not match the db instead of refusing the file.
    pub skip_hash_check: bool,
}

/// What etcd's SHA-256 trailer said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrailerCheck {
    /// The trailer is present and matches the db.
    Verified,
    /// No trailer: a raw db file (`member/snap/db`).
    Absent,
    /// The trailer does not match the db; read anyway because of `skip_hash_check`.
    MismatchIgnored,
}

/// A member recorded in the db's `members` bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbMember {
    /// Member ID, lowercase hex.
    pub id: String,
    /// Name (empty for a member that never started).
    pub name: String,
    /// Peer URLs.
    pub peer_urls: Vec<String>,
    /// Client URLs.
    pub client_urls: Vec<String>,
    /// Whether it is a learner.
    pub is_learner: bool,
}

/// Entries of one top-level bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BucketCount {
    /// Bucket name.
    pub name: String,
    /// Its key/value pairs.
    pub keys: u64,
}

/// The status of a snapshot. The first four fields are exactly etcdutl 3.5's (and etcdctl
/// 3.4's) `hash`, `revision`, `totalKey` and `totalSize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotStatus {
    /// CRC-32C over each bucket's name, keys and values, buckets and keys in order.
    pub hash: u32,
    /// Main revision of the last key in the `key` bucket (0 when empty).
    pub revision: i64,
    /// Key/value pairs in all buckets (3.4/3.5 semantics: every revision, every bucket).
    pub total_key: u64,
    /// bbolt's size: high-water mark times page size.
    pub total_size: u64,
    /// bbolt page size.
    pub page_size: u32,
    /// db bytes read, without the trailer.
    pub db_size: u64,
    /// SHA-256 of the db (what etcd's trailer holds).
    pub db_sha256: String,
    /// What etcd's SHA-256 trailer said.
    pub trailer: TrailerCheck,
    /// `meta/storageVersion` (written by etcd 3.6).
    pub storage_version: Option<String>,
    /// `cluster/clusterVersion`.
    pub cluster_version: Option<String>,
    /// Members recorded in the `members` bucket, by ID.
    pub members: Vec<DbMember>,
    /// IDs in the `members_removed` bucket.
    pub removed_members: Vec<String>,
    /// `meta/consistent_index`: the raft index the db has applied.
    pub consistent_index: Option<u64>,
    /// `meta/term` (3.5 and later).
    pub term: Option<u64>,
    /// Revision of the last finished compaction (`meta/finishedCompactRev`).
    pub compact_revision: Option<i64>,
    /// Revision of the last scheduled compaction (`meta/scheduledCompactRev`).
    pub scheduled_compact_revision: Option<i64>,
    /// Distinct keys whose latest revision is not a deletion (3.6's `totalKey`).
    pub live_keys: u64,
    /// Leases (`lease` bucket).
    pub leases: u64,
    /// Whether auth is enabled (`auth/authEnabled`).
    pub auth_enabled: bool,
    /// Top-level buckets in order with their key counts.
    pub buckets: Vec<BucketCount>,
}

/// A snapshot read into memory, decompressed, trailer included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSnapshot {
    /// The bytes: a db, possibly followed by etcd's 32-byte SHA-256 trailer.
    pub bytes: Vec<u8>,
    /// Compression found.
    pub compression: Compression,
    /// Size as stored (compressed).
    pub stored_size: u64,
}

/// Reads a snapshot file (plain or zstd, detected from its first bytes) into memory.
pub fn read_snapshot_file(path: &Path) -> Result<LoadedSnapshot> {
    let failed = |source: std::io::Error| SnapshotError::ReadFile {
        path: path.display().to_string(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(failed)?;
    let stored_size = file.metadata().map_err(failed)?.len();
    let mut head = Vec::with_capacity(ZSTD_MAGIC.len());
    (&mut file)
        .take(ZSTD_MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(failed)?;
    let chained = std::io::Cursor::new(head.clone()).chain(file);
    let mut bytes = Vec::new();
    let compression = if head == ZSTD_MAGIC {
        zstd::stream::read::Decoder::new(chained)
            .and_then(|mut d| d.read_to_end(&mut bytes))
            .map_err(|e| SnapshotError::Codec {
                operation: "decompress",
                reason: format!("{}: {e}", path.display()),
            })?;
        Compression::Zstd
    } else {
        bytes.reserve(usize::try_from(stored_size).unwrap_or(0));
        let mut chained = chained;
        chained.read_to_end(&mut bytes).map_err(failed)?;
        Compression::None
    };
    Ok(LoadedSnapshot {
        bytes,
        compression,
        stored_size,
    })
}

/// Downloads the object `name` from `store` into memory, decompressing zstd (detected from
/// its first bytes) as it arrives.
pub async fn read_snapshot_object(store: &Store, name: &str) -> Result<LoadedSnapshot> {
    let codec = |e: std::io::Error| SnapshotError::Codec {
        operation: "decompress",
        reason: format!("{name}: {e}"),
    };
    let (_, mut chunks) = store.get(name).await?;
    let mut head = Vec::new();
    let mut zstd: Option<zstd::stream::write::Decoder<'static, Vec<u8>>> = None;
    let mut plain: Option<Vec<u8>> = None;
    let mut stored_size = 0u64;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        stored_size += chunk.len() as u64;
        let mut data: &[u8] = &chunk;
        if zstd.is_none() && plain.is_none() {
            head.extend_from_slice(data);
            if head.len() < ZSTD_MAGIC.len() {
                continue;
            }
            if head.starts_with(&ZSTD_MAGIC) {
                zstd = Some(zstd::stream::write::Decoder::new(Vec::new()).map_err(codec)?);
            } else {
                plain = Some(Vec::new());
            }
            data = &head;
        }
        if let Some(decoder) = zstd.as_mut() {
            decoder.write_all(data).map_err(codec)?;
        } else if let Some(buffer) = plain.as_mut() {
            buffer.extend_from_slice(data);
        }
        head = Vec::new();
    }
    let (bytes, compression) = match (zstd, plain) {
        (Some(mut decoder), _) => {
            decoder.flush().map_err(codec)?;
            (decoder.into_inner(), Compression::Zstd)
        }
        (None, Some(buffer)) => (buffer, Compression::None),
        (None, None) => (head, Compression::None),
    };
    Ok(LoadedSnapshot {
        bytes,
        compression,
        stored_size,
    })
}

/// Splits etcd's SHA-256 trailer off a snapshot: a bbolt file is a multiple of 512 bytes, so
/// a snapshot with a trailer is 32 bytes longer than one.
pub fn split_trailer(bytes: &[u8]) -> (&[u8], Option<&[u8]>) {
    if bytes.len() % 512 == TRAILER_LEN && bytes.len() > TRAILER_LEN {
        let (db, trailer) = bytes.split_at(bytes.len() - TRAILER_LEN);
        (db, Some(trailer))
    } else {
        (bytes, None)
    }
}

/// The status of the snapshot `bytes` (decompressed, trailer optional); `name` is for errors.
pub fn snapshot_status(
    name: &str,
    bytes: &[u8],
    options: &StatusOptions,
) -> Result<SnapshotStatus> {
    let (db, trailer) = split_trailer(bytes);
    let db_sha256 = hex::encode(Sha256::digest(db));
    let trailer = match trailer {
        None => TrailerCheck::Absent,
        Some(t) if hex::encode(t) == db_sha256 => TrailerCheck::Verified,
        Some(_) if options.skip_hash_check => TrailerCheck::MismatchIgnored,
        Some(t) => {
            return Err(SnapshotError::HashMismatch {
                name: name.to_string(),
                expected: hex::encode(t),
                actual: db_sha256,
            });
        }
    };
    let bad_db = |source| SnapshotError::BadDb {
        name: name.to_string(),
        source,
    };
    let not_etcd = |reason: String| SnapshotError::NotEtcdData {
        name: name.to_string(),
        reason,
    };
    let bolt = BoltDb::new(db).map_err(bad_db)?;
    bolt.check().map_err(bad_db)?;

    let mut hash = CASTAGNOLI.digest();
    let mut status = SnapshotStatus {
        hash: 0,
        revision: 0,
        total_key: 0,
        total_size: bolt.size(),
        page_size: bolt.meta().page_size,
        db_size: db.len() as u64,
        db_sha256,
        trailer,
        storage_version: None,
        cluster_version: None,
        members: Vec::new(),
        removed_members: Vec::new(),
        consistent_index: None,
        term: None,
        compact_revision: None,
        scheduled_compact_revision: None,
        live_keys: 0,
        leases: 0,
        auth_enabled: false,
        buckets: Vec::new(),
    };
    let root = bolt.root();
    let mut live: HashSet<&[u8]> = HashSet::new();
    for top in root.iter() {
        let top = top.map_err(bad_db)?;
        let bucket_name = String::from_utf8_lossy(top.key).into_owned();
        if !top.is_bucket {
            return Err(not_etcd(format!(
                "the top level holds key {bucket_name:?}, which is not a bucket"
            )));
        }
        let bucket = root.open(&top).map_err(bad_db)?;
        hash.update(top.key);
        let is_key_bucket = top.key == b"key";
        let mut keys = 0u64;
        for entry in bucket.iter() {
            let entry = entry.map_err(bad_db)?;
            hash.update(entry.key);
            // bbolt's ForEach passes a nil value for a nested bucket.
            if !entry.is_bucket {
                hash.update(entry.value);
            }
            keys += 1;
            if is_key_bucket {
                let (revision, tombstone) = parse_revision_key(entry.key).ok_or_else(|| {
                    not_etcd(format!(
                        "key bucket entry {} is not a revision",
                        hex::encode(entry.key)
                    ))
                })?;
                status.revision = revision;
                let user_key = kv_key(entry.value).ok_or_else(|| {
                    not_etcd(format!(
                        "the value at revision {revision} is not an mvccpb.KeyValue"
                    ))
                })?;
                if tombstone {
                    live.remove(user_key);
                } else {
                    live.insert(user_key);
                }
            }
        }
        status.total_key += keys;
        status.buckets.push(BucketCount {
            name: bucket_name,
            keys,
        });
    }
    status.hash = hash.finalize();
    status.live_keys = live.len() as u64;
    read_extras(&root, &mut status).map_err(|e| match e {
        Extra::Bolt(source) => bad_db(source),
        Extra::Etcd(reason) => not_etcd(reason),
    })?;
    Ok(status)
}

enum Extra {
    Bolt(crate::bbolt::BoltError),
    Etcd(String),
}

impl From<crate::bbolt::BoltError> for Extra {
    fn from(e: crate::bbolt::BoltError) -> Self {
        Extra::Bolt(e)
    }
}

/// The value of `bucket/key`, when both exist.
fn value<'a>(
    root: &Bucket<'a>,
    bucket: &[u8],
    key: &[u8],
) -> std::result::Result<Option<&'a [u8]>, Extra> {
    let Some(bucket) = root.bucket(bucket)? else {
        return Ok(None);
    };
    Ok(bucket
        .get(key)?
        .filter(|e| !e.is_bucket)
        .map(|entry| entry.value))
}

fn u64_value(bytes: &[u8], what: &str) -> std::result::Result<u64, Extra> {
    let array: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Extra::Etcd(format!("{what} has {} bytes, not 8", bytes.len())))?;
    Ok(u64::from_be_bytes(array))
}

fn text_value(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[derive(Deserialize)]
struct RawMember {
    id: u64,
    #[serde(rename = "peerURLs", default)]
    peer_urls: Vec<String>,
    #[serde(rename = "isLearner", default)]
    is_learner: bool,
    #[serde(default)]
    name: String,
    #[serde(rename = "clientURLs", default)]
    client_urls: Vec<String>,
}

fn read_extras(root: &Bucket<'_>, status: &mut SnapshotStatus) -> std::result::Result<(), Extra> {
    status.storage_version = value(root, b"meta", b"storageVersion")?.map(text_value);
    status.cluster_version = value(root, b"cluster", b"clusterVersion")?.map(text_value);
    status.consistent_index = value(root, b"meta", b"consistent_index")?
        .map(|v| u64_value(v, "meta/consistent_index"))
        .transpose()?;
    status.term = value(root, b"meta", b"term")?
        .map(|v| u64_value(v, "meta/term"))
        .transpose()?;
    let compact = |key: &str| -> std::result::Result<Option<i64>, Extra> {
        value(root, b"meta", key.as_bytes())?
            .map(|v| {
                parse_revision_key(v)
                    .map(|(main, _)| main)
                    .ok_or_else(|| Extra::Etcd(format!("meta/{key} is not a revision")))
            })
            .transpose()
    };
    status.compact_revision = compact("finishedCompactRev")?;
    status.scheduled_compact_revision = compact("scheduledCompactRev")?;
    status.auth_enabled = value(root, b"auth", b"authEnabled")?.is_some_and(|v| v == [1]);
    status.leases = status
        .buckets
        .iter()
        .find(|b| b.name == "lease")
        .map_or(0, |b| b.keys);
    if let Some(members) = root.bucket(b"members")? {
        for entry in members.iter() {
            let entry = entry?;
            let raw: RawMember = serde_json::from_slice(entry.value).map_err(|e| {
                Extra::Etcd(format!(
                    "members/{} is not a member record: {e}",
                    text_value(entry.key)
                ))
            })?;
            status.members.push(DbMember {
                id: format!("{:x}", raw.id),
                name: raw.name,
                peer_urls: raw.peer_urls,
                client_urls: raw.client_urls,
                is_learner: raw.is_learner,
            });
        }
    }
    if let Some(removed) = root.bucket(b"members_removed")? {
        for entry in removed.iter() {
            status.removed_members.push(text_value(entry?.key));
        }
    }
    Ok(())
}

/// Main revision and tombstone mark of an MVCC key: 8-byte big-endian main revision, `_`,
/// 8-byte sub revision, and `t` for a deletion.
fn parse_revision_key(key: &[u8]) -> Option<(i64, bool)> {
    if key.len() < REVISION_KEY_LEN {
        return None;
    }
    let main = i64::from_be_bytes(key.get(..8)?.try_into().ok()?);
    let tombstone = key.len() == REVISION_KEY_LEN + 1 && key[REVISION_KEY_LEN] == b't';
    Some((main, tombstone))
}

fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// Field 1 (`key`) of a protobuf `mvccpb.KeyValue`; empty when absent.
fn kv_key(mut bytes: &[u8]) -> Option<&[u8]> {
    while !bytes.is_empty() {
        let (tag, rest) = varint(bytes)?;
        bytes = match tag & 7 {
            0 => varint(rest)?.1,
            1 => rest.get(8..)?,
            2 => {
                let (len, rest) = varint(rest)?;
                let len = usize::try_from(len).ok()?;
                let data = rest.get(..len)?;
                if tag >> 3 == 1 {
                    return Some(data);
                }
                &rest[len..]
            }
            5 => rest.get(4..)?,
            _ => return None,
        };
    }
    Some(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_go_castagnoli() {
        // crc32.Checksum([]byte("123456789"), crc32.MakeTable(crc32.Castagnoli)).
        assert_eq!(CASTAGNOLI.checksum(b"123456789"), 0xE306_9283);
        // Fed in pieces, as the status hash is.
        let mut digest = CASTAGNOLI.digest();
        digest.update(b"1234");
        digest.update(b"");
        digest.update(b"56789");
        assert_eq!(digest.finalize(), 0xE306_9283);
    }

    #[test]
    fn revision_keys_and_tombstones() {
        let mut key = 42i64.to_be_bytes().to_vec();
        key.push(b'_');
        key.extend_from_slice(&3i64.to_be_bytes());
        assert_eq!(parse_revision_key(&key), Some((42, false)));
        key.push(b't');
        assert_eq!(parse_revision_key(&key), Some((42, true)));
        assert_eq!(parse_revision_key(&key[..9]), None);
    }

    #[test]
    fn keyvalue_key_is_found_past_other_fields() {
        // KeyValue{create_revision: 2 (field 2), key: "foo" (field 1), value: "bar"}.
        let kv = [
            0x10, 0x02, 0x0a, 3, b'f', b'o', b'o', 0x2a, 3, b'b', b'a', b'r',
        ];
        assert_eq!(kv_key(&kv), Some(&b"foo"[..]));
        assert_eq!(kv_key(&[0x10]), None, "truncated varint");
        assert_eq!(kv_key(&[0x0a, 9, b'x']), None, "length past the end");
        assert_eq!(kv_key(&[0x0b]), None, "wire type 3");
        assert_eq!(kv_key(&[]), Some(&b""[..]));
    }

    #[test]
    fn trailer_is_split_only_at_512_plus_32() {
        let plain = vec![0u8; 4096];
        assert_eq!(split_trailer(&plain).1, None);
        let mut with = plain.clone();
        with.extend_from_slice(&[1u8; 32]);
        let (db, trailer) = split_trailer(&with);
        assert_eq!((db.len(), trailer.map(<[u8]>::len)), (4096, Some(32)));
    }

    #[test]
    fn a_wrong_trailer_is_refused_unless_skipped() {
        let mut bytes = vec![0u8; 4096];
        bytes.extend_from_slice(&[0u8; 32]);
        let err = snapshot_status("x.db", &bytes, &StatusOptions::default()).unwrap_err();
        assert!(matches!(err, SnapshotError::HashMismatch { .. }), "{err:?}");
        // Skipped, the next problem is that it is not a db at all.
        let err = snapshot_status(
            "x.db",
            &bytes,
            &StatusOptions {
                skip_hash_check: true,
            },
        )
        .unwrap_err();
        assert!(matches!(err, SnapshotError::BadDb { .. }), "{err:?}");
    }

    #[test]
    fn files_are_read_plain_or_zstd() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..10_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let plain = dir.path().join("plain.db");
        std::fs::write(&plain, &payload).unwrap();
        let loaded = read_snapshot_file(&plain).unwrap();
        assert_eq!(
            (loaded.bytes == payload, loaded.compression),
            (true, Compression::None)
        );
        let packed = dir.path().join("packed.db.zst");
        std::fs::write(&packed, zstd::encode_all(&payload[..], 3).unwrap()).unwrap();
        let loaded = read_snapshot_file(&packed).unwrap();
        assert_eq!(
            (loaded.bytes == payload, loaded.compression),
            (true, Compression::Zstd)
        );
        let tiny = dir.path().join("tiny");
        std::fs::write(&tiny, b"ab").unwrap();
        assert_eq!(read_snapshot_file(&tiny).unwrap().bytes, b"ab");
        assert!(matches!(
            read_snapshot_file(&dir.path().join("missing")),
            Err(SnapshotError::ReadFile { .. })
        ));
        // A damaged zstd frame is a decompression error.
        let mut broken = zstd::encode_all(&payload[..], 3).unwrap();
        broken.truncate(broken.len() / 2);
        std::fs::write(&packed, broken).unwrap();
        assert!(matches!(
            read_snapshot_file(&packed),
            Err(SnapshotError::Codec { .. })
        ));
    }
}
