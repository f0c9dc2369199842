//! `snapshot status`, natively: what `etcdutl snapshot status` (3.5) and `etcdctl snapshot
//! status` (3.4) print, computed the same way, plus what else an operator wants to know about
//! a snapshot before restoring it (members, consistent index, compaction, live keys, leases).
//!
//! The db is read once, page by page (see [`crate::SnapshotFile`]), checking it as bbolt's
//! `tx.Check()` does and computing the status in the same pass, while a second thread computes
//! its SHA-256. Memory stays bounded: the tree's depth times its largest page, one bit per
//! page, and 8 MiB for the live-key count (spilled to a temporary file beyond that). The hash
//! is CRC-32C (Castagnoli, as Go's `crc32.MakeTable(crc32.Castagnoli)`), with the CPU's CRC
//! instructions where it has them.

use serde::{Deserialize, Serialize};

use bbolt::{BoltDb, DbFile, Entry, FreePages, PageSource, Readahead};

use crate::error::{Error, Result};
use crate::file::{SnapshotFile, TRAILER_LEN, has_trailer, sha256_of};
use crate::live_keys::{self, LiveKeys};
use crate::mvcc::{key_value_fields, parse_revision_key};
/// How to read a snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusOptions {
    /// Do not refuse a snapshot whose SHA-256 trailer does not match its db. The db's SHA-256
    /// (the costliest part of a status) is then not computed at all and the trailer reported
    /// as not checked, unless it is known anyway (a snapshot opened for a restore, hashed on
    /// the way): then a mismatch is reported instead of refused.
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
    /// The trailer is present but was not checked (`skip_hash_check` on a plain file: the
    /// db's SHA-256, which costs more than the rest of the status, was not computed).
    NotChecked,
}

/// A member recorded in the db's `members` bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// SHA-256 of the db (what etcd's trailer holds); empty when not computed
    /// (`skip_hash_check` on a plain file).
    #[serde(skip_serializing_if = "String::is_empty")]
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

/// Splits etcd's SHA-256 trailer off a snapshot: a bbolt file is a multiple of 512 bytes, so
/// a snapshot with a trailer is 32 bytes longer than one.
pub fn split_trailer(bytes: &[u8]) -> (&[u8], Option<&[u8]>) {
    if has_trailer(bytes.len() as u64) {
        let (db, trailer) = bytes.split_at(bytes.len() - TRAILER_LEN);
        (db, Some(trailer))
    } else {
        (bytes, None)
    }
}

/// The status of the snapshot `bytes` held in memory (decompressed, trailer optional); `name`
/// is for errors. [`SnapshotFile::status`] reads a file without holding it in memory.
pub fn snapshot_status(
    name: &str,
    bytes: &[u8],
    options: &StatusOptions,
) -> Result<SnapshotStatus> {
    let (db, trailer) = split_trailer(bytes);
    let trailer = trailer.and_then(|t| <[u8; TRAILER_LEN]>::try_from(t).ok());
    scan(name, db, trailer, None, options, Scan::Full)
}

impl SnapshotFile {
    /// The status of this snapshot, read page by page: memory stays bounded whatever the
    /// db's size. `name` is for errors.
    pub fn status(&self, name: &str, options: &StatusOptions) -> Result<SnapshotStatus> {
        scan_hashing(
            name,
            self.db(),
            self.trailer(),
            self.known_sha256().map(str::to_string),
            options,
            Scan::Full,
            || sha256_of_reopened(self.db()),
        )
        .map(|(status, _)| status)
    }
}

/// How much a scan computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// Everything `snapshot status` reports.
    Full,
    /// The integrity check, the trailer and the revision only (what restore needs): no
    /// CRC-32C hash, no live-key count.
    CheckOnly,
    /// [`Scan::CheckOnly`], also listing the db's free pages (see [`scan_free_pages`]).
    CheckListingFree,
}

/// Reads the db in `source` once, checking it as bbolt's `tx.Check()` does while computing
/// the status; its SHA-256 (unless `known_sha256`) is computed at the same time on a second
/// thread.
pub fn scan<S: PageSource + Sync>(
    name: &str,
    source: S,
    trailer: Option<[u8; TRAILER_LEN]>,
    known_sha256: Option<String>,
    options: &StatusOptions,
    mode: Scan,
) -> Result<SnapshotStatus> {
    let hash = || sha256_of(&source);
    scan_hashing(name, &source, trailer, known_sha256, options, mode, hash).map(|(s, _)| s)
}

/// [`scan`] with [`Scan::CheckListingFree`]: the status and the pages of the db nothing
/// reaches, found by the same walk (for a rewrite that reuses them, as bbolt does).
pub(crate) fn scan_free_pages<S: PageSource + Sync>(
    name: &str,
    source: S,
    known_sha256: Option<String>,
) -> Result<(SnapshotStatus, FreePages)> {
    let hash = || sha256_of(&source);
    let options = StatusOptions::default();
    let mode = Scan::CheckListingFree;
    scan_hashing(name, &source, None, known_sha256, &options, mode, hash)
}

/// [`scan`], the SHA-256 (when needed) computed by `hash` on the second thread.
fn scan_hashing<S: PageSource + Sync>(
    name: &str,
    source: S,
    trailer: Option<[u8; TRAILER_LEN]>,
    known_sha256: Option<String>,
    options: &StatusOptions,
    mode: Scan,
    hash: impl FnOnce() -> std::io::Result<String> + Send,
) -> Result<(SnapshotStatus, FreePages)> {
    // The SHA-256 of a large db costs more than everything else: with skip_hash_check it is
    // not computed (unless it is known anyway, from streaming the snapshot in).
    let compute = known_sha256.is_none() && !options.skip_hash_check;
    let (sha, walked) = std::thread::scope(|scope| {
        let hashing = match known_sha256 {
            Some(known) => Ok(Ok(Some(known))),
            None if compute => Err(scope.spawn(|| hash().map(Some))),
            None => Ok(Ok(None)),
        };
        let walked = walk_status(name, &source, mode);
        let sha = match hashing {
            Ok(known) => known,
            Err(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the hashing thread panicked"))),
        };
        (sha, walked)
    });
    let db_sha256 = sha.map_err(|source| Error::ReadFile {
        path: name.to_string(),
        source,
    })?;
    let trailer = match (trailer, &db_sha256) {
        (None, _) => TrailerCheck::Absent,
        (Some(_), None) => TrailerCheck::NotChecked,
        (Some(t), Some(sha)) if hex::encode(t) == *sha => TrailerCheck::Verified,
        (Some(_), Some(_)) if options.skip_hash_check => TrailerCheck::MismatchIgnored,
        (Some(t), Some(sha)) => {
            return Err(Error::HashMismatch {
                name: name.to_string(),
                expected: hex::encode(t),
                actual: sha.clone(),
            });
        }
    };
    let (mut status, free) = walked?;
    status.db_sha256 = db_sha256.unwrap_or_default();
    status.trailer = trailer;
    Ok((status, free))
}

/// The SHA-256 of `db` read through a file description of its own (`/proc/self/fd`), told
/// it is read sequentially: the walk's page reads, on the other thread, then do not break
/// this read's readahead (the kernel keeps it per open file), which matters on a cold cache.
fn sha256_of_reopened(db: &DbFile) -> std::io::Result<String> {
    use std::os::fd::AsRawFd;
    let own = std::fs::File::open(format!("/proc/self/fd/{}", db.file().as_raw_fd()));
    match own {
        Ok(file) => {
            let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Sequential);
            sha256_of(&DbFile::new(file, db.size()))
        }
        Err(_) => sha256_of(db),
    }
}

fn walk_status<S: PageSource>(
    name: &str,
    source: S,
    mode: Scan,
) -> Result<(SnapshotStatus, FreePages)> {
    let bad_db = |source| Error::BadDb {
        name: name.to_string(),
        source,
    };
    let db_size = source.size();
    // The walk reads every page, mostly forward: through windows, not a read per page.
    let bolt = BoltDb::open(Readahead::new(source)).map_err(bad_db)?;
    let mut status = SnapshotStatus {
        hash: 0,
        revision: 0,
        total_key: 0,
        total_size: bolt.size(),
        page_size: bolt.meta().page_size,
        db_size,
        db_sha256: String::new(),
        trailer: TrailerCheck::Absent,
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
    let full = mode == Scan::Full;
    let mut hash = 0u32;
    // Distinct live keys: a 64-bit hash of each revision's key, in revision order, counted
    // once the walk is done, in bounded memory (`live_keys`). A hash set kept up to date
    // instead cost a fifth of the walk's time, in cache misses.
    let mut live = LiveKeys::new();
    let mut in_key_bucket = false;
    let visit = |depth, entry: Entry<'_>| -> std::result::Result<(), Extra> {
        if depth == 0 {
            let bucket_name = String::from_utf8_lossy(entry.key).into_owned();
            if !entry.is_bucket {
                return Err(Extra::Etcd(format!(
                    "the top level holds key {bucket_name:?}, which is not a bucket"
                )));
            }
            if full {
                hash = crc32c::crc32c_append(hash, entry.key);
            }
            in_key_bucket = entry.key == b"key";
            status.buckets.push(BucketCount {
                name: bucket_name,
                keys: 0,
            });
            return Ok(());
        }
        if depth > 1 {
            // Inside a nested bucket: bbolt's ForEach over a top-level bucket does not go there.
            return Ok(());
        }
        if full {
            hash = crc32c::crc32c_append(hash, entry.key);
            // bbolt's ForEach passes a nil value for a nested bucket.
            if !entry.is_bucket {
                hash = crc32c::crc32c_append(hash, entry.value);
            }
        }
        if let Some(bucket) = status.buckets.last_mut() {
            bucket.keys += 1;
        }
        status.total_key += 1;
        if in_key_bucket {
            let (revision, tombstone) = parse_revision_key(entry.key).ok_or_else(|| {
                Extra::Etcd(format!(
                    "key bucket entry {} is not a revision",
                    hex::encode(entry.key)
                ))
            })?;
            status.revision = revision;
            if full {
                let user_key = key_value_fields(entry.value)
                    .map(|(key, _)| key)
                    .ok_or_else(|| {
                        Extra::Etcd(format!(
                            "the value at revision {revision} is not an mvccpb.KeyValue"
                        ))
                    })?;
                live.push(live_keys::entry(user_key, tombstone));
            }
        }
        Ok(())
    };
    let walked = if mode == Scan::CheckListingFree {
        bolt.walk_free_pages(visit).map(|(_, free)| free)
    } else {
        bolt.walk(visit).map(|()| FreePages::default())
    };
    let not_etcd = |reason: String| Error::NotEtcdData {
        name: name.to_string(),
        reason,
    };
    let map = |e: Extra| match e {
        Extra::Bolt(source) => bad_db(source),
        Extra::Etcd(reason) => not_etcd(reason),
    };
    let free = walked.map_err(map)?;
    status.hash = hash;
    status.live_keys = live.count().map_err(|source| Error::WriteFile {
        path: format!(
            "{} (a temporary file counting live keys)",
            std::env::temp_dir().display()
        ),
        source,
    })?;
    read_extras(&bolt, &mut status).map_err(map)?;
    Ok((status, free))
}

enum Extra {
    Bolt(bbolt::BoltError),
    Etcd(String),
}

impl From<bbolt::BoltError> for Extra {
    fn from(e: bbolt::BoltError) -> Self {
        Extra::Bolt(e)
    }
}

/// The value of the top-level `bucket/key`, when both exist.
fn value<S: PageSource>(
    db: &BoltDb<S>,
    bucket: &[u8],
    key: &[u8],
) -> std::result::Result<Option<Vec<u8>>, Extra> {
    let Some(bucket) = db.bucket(&db.root(), bucket)? else {
        return Ok(None);
    };
    Ok(db
        .get(&bucket, key)?
        .filter(|(_, is_bucket)| !is_bucket)
        .map(|(value, _)| value))
}

/// The storage version of a db (meta bucket `storageVersion`, written from etcd 3.6 on;
/// `None`: 3.5 or older), read without walking the db; `Err` when the db cannot be read.
pub(crate) fn storage_version<S: PageSource>(source: S) -> std::result::Result<Option<String>, ()> {
    let db = BoltDb::open(source).map_err(|_| ())?;
    value(&db, b"meta", b"storageVersion")
        .map(|v| v.map(|bytes| text_value(&bytes)))
        .map_err(|_| ())
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

fn read_extras<S: PageSource>(
    db: &BoltDb<S>,
    status: &mut SnapshotStatus,
) -> std::result::Result<(), Extra> {
    let text = |v: Vec<u8>| text_value(&v);
    status.storage_version = value(db, b"meta", b"storageVersion")?.map(text);
    status.cluster_version = value(db, b"cluster", b"clusterVersion")?.map(text);
    status.consistent_index = value(db, b"meta", b"consistent_index")?
        .map(|v| u64_value(&v, "meta/consistent_index"))
        .transpose()?;
    status.term = value(db, b"meta", b"term")?
        .map(|v| u64_value(&v, "meta/term"))
        .transpose()?;
    let compact = |key: &str| -> std::result::Result<Option<i64>, Extra> {
        value(db, b"meta", key.as_bytes())?
            .map(|v| {
                parse_revision_key(&v)
                    .map(|(main, _)| main)
                    .ok_or_else(|| Extra::Etcd(format!("meta/{key} is not a revision")))
            })
            .transpose()
    };
    status.compact_revision = compact("finishedCompactRev")?;
    status.scheduled_compact_revision = compact("scheduledCompactRev")?;
    status.auth_enabled = value(db, b"auth", b"authEnabled")?.is_some_and(|v| v == [1]);
    status.leases = status
        .buckets
        .iter()
        .find(|b| b.name == "lease")
        .map_or(0, |b| b.keys);
    let root = db.root();
    if let Some(members) = db.bucket(&root, b"members")? {
        db.for_each(&members, |entry| {
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
            Ok::<(), Extra>(())
        })?;
    }
    if let Some(removed) = db.bucket(&root, b"members_removed")? {
        db.for_each(&removed, |entry| {
            status.removed_members.push(text_value(entry.key));
            Ok::<(), Extra>(())
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_go_castagnoli() {
        // crc32.Checksum([]byte("123456789"), crc32.MakeTable(crc32.Castagnoli)).
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        // Fed in pieces, as the status hash is.
        let mut crc = crc32c::crc32c_append(0, b"1234");
        crc = crc32c::crc32c_append(crc, b"");
        crc = crc32c::crc32c_append(crc, b"56789");
        assert_eq!(crc, 0xE306_9283);
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
        assert!(matches!(err, Error::HashMismatch { .. }), "{err:?}");
        // Skipped, the next problem is that it is not a db at all.
        let err = snapshot_status(
            "x.db",
            &bytes,
            &StatusOptions {
                skip_hash_check: true,
            },
        )
        .unwrap_err();
        assert!(matches!(err, Error::BadDb { .. }), "{err:?}");
    }
}
