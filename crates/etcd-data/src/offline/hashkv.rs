//! The KV history hash of a db, as etcd computes it for `HashKV` (and etcdutl 3.6's
//! `hashkv`): CRC-32C (Castagnoli) over `key`, then each key/value of the `key` bucket up to
//! the hash revision, leaving out revisions at or below the compaction that a compaction at
//! the hash revision would remove (a key's revision is kept when it is the key's latest at
//! the hash revision and not a deletion), and a deletion exactly at the compaction revision.
//! The compaction revision is the db's (`meta/finishedCompactRev`, or a scheduled one past
//! it, as etcd takes it on start); -1 when never compacted.

use std::collections::HashMap;
use std::hash::Hasher;
use std::path::Path;

use bbolt::{BoltDb, DbFile, PageSource};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::file::SnapshotFile;
use crate::mvcc::parse_revision_key;

/// Which revision to hash.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct HashKvRequest {
    /// The hash revision; 0: the db's latest (etcdutl's `--rev`).
    #[serde(default)]
    pub revision: i64,
    /// Hash as a member compacted at this revision would (a later compaction than the db's,
    /// at or below the hash revision): what a live member that compacted after the db was
    /// taken hashes. `None`: the db's own compaction.
    #[serde(default)]
    pub compact_revision: Option<i64>,
}

/// etcd's KV hash of a db, with the revisions it covers (etcdutl's `hash`, `hashRevision`,
/// `compactRevision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HashKv {
    /// CRC-32C of the `key` bucket's history up to `hash_revision`.
    pub hash: u32,
    /// The revision hashed.
    pub hash_revision: i64,
    /// The db's compaction revision (-1: never compacted).
    pub compact_revision: i64,
    /// The keys live at `hash_revision` (their latest revision at or below it is not a
    /// deletion): the count of a range over every key read at that revision. Not in the
    /// output (etcdutl's `hashkv` has no such field).
    #[serde(skip)]
    pub live_keys: u64,
}

/// What a walk over the db can stop on.
enum Fail {
    Bolt(bbolt::BoltError),
    Data(Error),
}

impl From<bbolt::BoltError> for Fail {
    fn from(e: bbolt::BoltError) -> Self {
        Fail::Bolt(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Data(e)
    }
}

/// A revision key: (main, sub) and whether it is a deletion.
fn revision_of(key: &[u8]) -> Option<((i64, i64), bool)> {
    let (main, tombstone) = parse_revision_key(key)?;
    let sub = key
        .get(9..17)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(i64::from_be_bytes)?;
    Some(((main, sub), tombstone))
}

/// The user key of an mvccpb.KeyValue, hashed to 64 bits (a key's identity in the keep set).
fn key_id(value: &[u8]) -> Option<u64> {
    let (key, _) = crate::mvcc::key_value_fields(value)?;
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(key);
    Some(hasher.finish())
}

fn meta_revision<S: PageSource>(
    db: &BoltDb<S>,
    key: &[u8],
) -> std::result::Result<Option<i64>, bbolt::BoltError> {
    let Some(meta) = db.bucket(&db.root(), b"meta")? else {
        return Ok(None);
    };
    Ok(db
        .get(&meta, key)?
        .and_then(|(value, _)| parse_revision_key(&value).map(|(main, _)| main)))
}

/// The hash of the db in `source` (`name` is for errors), as etcd's `HashKV` gives it for the
/// member holding that db at the request's revision.
pub fn hash_kv<S: PageSource>(name: &str, source: S, request: &HashKvRequest) -> Result<HashKv> {
    let bad_db = |source| Error::BadDb {
        name: name.to_string(),
        source,
    };
    let not_etcd = |reason: String| Error::NotEtcdData {
        name: name.to_string(),
        reason,
    };
    let db = BoltDb::open(source).map_err(bad_db)?;
    let finished = meta_revision(&db, b"finishedCompactRev").map_err(bad_db)?;
    let scheduled = meta_revision(&db, b"scheduledCompactRev").map_err(bad_db)?;
    let own_compact = match (finished, scheduled) {
        (f, Some(s)) if s != 0 && s > f.unwrap_or(-1) => s,
        (Some(f), _) => f,
        (None, _) => -1,
    };
    // A later compaction asked for: the db still holds revisions such a compaction removes.
    let later = request.compact_revision.filter(|c| *c > own_compact);
    if let Some(c) = request.compact_revision
        && c < own_compact
    {
        return Err(Error::Compacted {
            name: name.to_string(),
            revision: c,
            compacted: own_compact,
        });
    }
    let compact = later.unwrap_or(own_compact);
    let Some(keys) = db.bucket(&db.root(), b"key").map_err(bad_db)? else {
        return Err(not_etcd("it has no key bucket".into()));
    };
    // Pass 1: the latest revision and, for each key, its latest revision at or below the
    // revision asked (all of them when it is the latest) and whether that is a deletion:
    // what a compaction at the hash revision keeps.
    let mut latest = 0i64;
    let mut at_rev: HashMap<u64, ((i64, i64), bool)> = HashMap::new();
    // With a later compaction: each key's latest revision at it (what that compaction keeps
    // in the db when it is not a deletion).
    let mut at_compact: HashMap<u64, ((i64, i64), bool)> = HashMap::new();
    db.for_each(&keys, |entry| {
        let (rev, tombstone) = revision_of(entry.key).ok_or_else(|| {
            not_etcd(format!(
                "key bucket entry {} is not a revision",
                hex::encode(entry.key)
            ))
        })?;
        latest = latest.max(rev.0);
        if request.revision == 0 || rev.0 <= request.revision {
            let id = key_id(entry.value).ok_or_else(|| {
                not_etcd(format!(
                    "the value at revision {} is not an mvccpb.KeyValue",
                    rev.0
                ))
            })?;
            at_rev.insert(id, (rev, tombstone));
            if later.is_some_and(|c| rev.0 <= c) {
                at_compact.insert(id, (rev, tombstone));
            }
        }
        Ok::<(), Fail>(())
    })
    .map_err(|e| fail(name, e))?;
    let revision = if request.revision == 0 {
        latest
    } else {
        request.revision
    };
    if request.revision > 0 && request.revision < compact {
        return Err(Error::Compacted {
            name: name.to_string(),
            revision: request.revision,
            compacted: compact,
        });
    }
    if request.revision > latest {
        return Err(Error::FutureRevision {
            name: name.to_string(),
            revision: request.revision,
            latest,
        });
    }
    let keep: std::collections::HashSet<(i64, i64)> = at_rev
        .values()
        .filter(|(rev, tombstone)| !tombstone && rev.0 <= compact)
        .map(|(rev, _)| *rev)
        .collect();
    let any_kept = at_rev.values().any(|(_, tombstone)| !tombstone);
    // What a later compaction left in the member's db at or below it (etcd hashes all of it
    // when no key is live at the hash revision).
    let compacted_away: Option<std::collections::HashSet<(i64, i64)>> = later.map(|_| {
        at_compact
            .values()
            .filter(|(_, tombstone)| !tombstone)
            .map(|(rev, _)| *rev)
            .collect()
    });
    // Pass 2: the hash.
    let mut hash = crc32c::crc32c(b"key");
    db.for_each(&keys, |entry| {
        let Some((rev, tombstone)) = revision_of(entry.key) else {
            return Ok(());
        };
        if rev.0 > revision {
            return Ok(());
        }
        if rev.0 <= compact && any_kept && !keep.contains(&rev) {
            return Ok(());
        }
        if let Some(left) = &compacted_away
            && rev.0 <= compact
            && !left.contains(&rev)
        {
            return Ok(());
        }
        if rev.0 == compact && tombstone {
            return Ok(());
        }
        hash = crc32c::crc32c_append(hash, entry.key);
        hash = crc32c::crc32c_append(hash, entry.value);
        Ok::<(), Fail>(())
    })
    .map_err(|e| fail(name, e))?;
    Ok(HashKv {
        hash,
        hash_revision: revision,
        compact_revision: compact,
        live_keys: at_rev.values().filter(|(_, tombstone)| !tombstone).count() as u64,
    })
}

fn fail(name: &str, e: Fail) -> Error {
    match e {
        Fail::Bolt(source) => Error::BadDb {
            name: name.to_string(),
            source,
        },
        Fail::Data(e) => e,
    }
}

impl SnapshotFile {
    /// [`hash_kv`] of this snapshot's db.
    pub fn hash_kv(&self, name: &str, request: &HashKvRequest) -> Result<HashKv> {
        hash_kv(name, self.db(), request)
    }
}

/// [`hash_kv`] of the db of the stopped member at `data_dir` (refused while one runs there).
pub fn hash_kv_data_dir(data_dir: &Path, request: &HashKvRequest) -> Result<HashKv> {
    let (file, path) = super::open_stopped_db(data_dir, false)?;
    let len = file.metadata().map_err(|source| Error::ReadFile {
        path: path.display().to_string(),
        source,
    })?;
    hash_kv(
        &path.display().to_string(),
        DbFile::new(file, len.len()),
        request,
    )
}
