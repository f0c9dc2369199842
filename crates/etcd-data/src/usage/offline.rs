//! Usage read from a db file, page by page: one walk over every bucket (which also counts the
//! pages nothing reaches: the free ones), keeping a small record per revision of the keys
//! measured; the records sorted by key afterwards tell each key's latest revision (live
//! unless it is a deletion) from its history. Memory: about 40 bytes per revision measured,
//! one entry per group, and the tree's depth in pages; no key or value is kept except the
//! `top` largest, read again by revision at the end.

use std::path::Path;

use bbolt::{BoltDb, Bucket, DbFile, PageSource, Readahead};

use super::{
    DbSpace, GroupIds, KeyGrouping, KeyUsage, SpaceSource, Tally, TopN, UsageOptions, UsageReport,
    display_bytes, key_hash,
};
use crate::error::{Error, Result};
use crate::file::{SnapshotFile, TRAILER_LEN, sha256_of};
use crate::mvcc::{REVISION_KEY_LEN, key_value_parts, parse_revision_key};

const TOMBSTONE: u8 = 1;
const LEASED: u8 = 2;

/// One revision of a key measured.
#[derive(Debug, Clone, Copy)]
struct Record {
    /// A 64-bit hash of the key: its identity (a collision would merge two keys' counts).
    key: u64,
    main: i64,
    sub: u32,
    bytes: u32,
    groups: GroupIds,
    flags: u8,
}

/// What a walk over the db can stop on.
enum Fail {
    Bolt(bbolt::BoltError),
    Etcd(String),
}

impl From<bbolt::BoltError> for Fail {
    fn from(e: bbolt::BoltError) -> Self {
        Fail::Bolt(e)
    }
}

/// The usage of the db in `source` (`name` is for messages and the report): see the module
/// doc. etcd's SHA-256 `trailer`, when given and not `skip_hash_check`, is checked (computed
/// on a second thread during the walk unless `known_sha256` gives it) before anything is
/// reported.
pub fn usage_db<S: PageSource + Sync>(
    name: &str,
    source: S,
    trailer: Option<[u8; TRAILER_LEN]>,
    known_sha256: Option<String>,
    skip_hash_check: bool,
    options: &UsageOptions,
    grouping: &dyn KeyGrouping,
) -> Result<UsageReport> {
    let check = trailer.is_some() && !skip_hash_check;
    let (sha, report) = std::thread::scope(|scope| {
        let hashing = match (known_sha256, check) {
            (_, false) => None,
            (Some(known), true) => Some(Ok(Ok(known))),
            (None, true) => Some(Err(scope.spawn(|| sha256_of(&source)))),
        };
        let report = walk(name, &source, options, grouping);
        let sha = hashing.map(|h| match h {
            Ok(known) => known,
            Err(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the hashing thread panicked"))),
        });
        (sha, report)
    });
    if let (Some(sha), Some(trailer)) = (sha, trailer) {
        let actual = sha.map_err(|source| Error::ReadFile {
            path: name.to_string(),
            source,
        })?;
        if hex::encode(trailer) != actual {
            return Err(Error::HashMismatch {
                name: name.to_string(),
                expected: hex::encode(trailer),
                actual,
            });
        }
    }
    report
}

impl SnapshotFile {
    /// [`usage_db`] of this snapshot's db, its trailer checked unless `skip_hash_check`.
    pub fn usage(
        &self,
        name: &str,
        skip_hash_check: bool,
        options: &UsageOptions,
        grouping: &dyn KeyGrouping,
    ) -> Result<UsageReport> {
        usage_db(
            name,
            self.db(),
            self.trailer(),
            self.known_sha256().map(str::to_string),
            skip_hash_check,
            options,
            grouping,
        )
    }
}

/// [`usage_db`] of the db of the stopped member at `data_dir` (refused while one runs there:
/// its pages would change under the reader).
pub fn usage_data_dir(
    data_dir: &Path,
    options: &UsageOptions,
    grouping: &dyn KeyGrouping,
) -> Result<UsageReport> {
    let (file, path) = crate::offline::open_stopped_db(data_dir, false)?;
    let len = file.metadata().map_err(|source| Error::ReadFile {
        path: path.display().to_string(),
        source,
    })?;
    let mut report = usage_db(
        &path.display().to_string(),
        DbFile::new(file, len.len()),
        None,
        None,
        true,
        options,
        grouping,
    )?;
    report.source = data_dir.display().to_string();
    Ok(report)
}

/// What the walk gathers.
struct Walked {
    records: Vec<Record>,
    tally: Tally,
    revision: i64,
    leases: u64,
    saw_key_bucket: bool,
}

fn walk<S: PageSource>(
    name: &str,
    source: &S,
    options: &UsageOptions,
    grouping: &dyn KeyGrouping,
) -> Result<UsageReport> {
    let bad_db = |source| Error::BadDb {
        name: name.to_string(),
        source,
    };
    let not_etcd = |reason: String| Error::NotEtcdData {
        name: name.to_string(),
        reason,
    };
    // The walk reads every page, mostly forward: through windows, not a read per page.
    let bolt = BoltDb::open(Readahead::new(source)).map_err(bad_db)?;
    let prefix = options.prefix.as_bytes();
    let mut walked = Walked {
        records: Vec::new(),
        tally: Tally::new(grouping),
        revision: 0,
        leases: 0,
        saw_key_bucket: false,
    };
    #[derive(PartialEq)]
    enum In {
        Key,
        Lease,
        Other,
    }
    let mut bucket = In::Other;
    let pages = bolt
        .walk_pages(|depth, entry| -> std::result::Result<(), Fail> {
            if depth == 0 {
                bucket = match entry.key {
                    b"key" => In::Key,
                    b"lease" => In::Lease,
                    _ => In::Other,
                };
                walked.saw_key_bucket |= bucket == In::Key;
                return Ok(());
            }
            if depth > 1 || bucket == In::Other {
                return Ok(());
            }
            if bucket == In::Lease {
                walked.leases += 1;
                return Ok(());
            }
            let (main, tombstone) = parse_revision_key(entry.key).ok_or_else(|| {
                Fail::Etcd(format!(
                    "key bucket entry {} is not a revision",
                    hex::encode(entry.key)
                ))
            })?;
            walked.revision = main;
            let kv = key_value_parts(entry.value).ok_or_else(|| {
                Fail::Etcd(format!(
                    "the value at revision {main} is not an mvccpb.KeyValue"
                ))
            })?;
            if !kv.key.starts_with(prefix) {
                return Ok(());
            }
            let sub = entry
                .key
                .get(9..REVISION_KEY_LEN)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_be_bytes)
                .unwrap_or_default();
            let bytes = kv.key.len() + kv.value.len();
            walked.records.push(Record {
                key: key_hash(kv.key),
                main,
                sub: u32::try_from(sub).unwrap_or(u32::MAX),
                bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
                groups: walked.tally.groups_of(grouping, kv.key),
                flags: if tombstone { TOMBSTONE } else { 0 }
                    | if kv.lease != 0 { LEASED } else { 0 },
            });
            Ok(())
        })
        .map_err(|e| match e {
            Fail::Bolt(source) => bad_db(source),
            Fail::Etcd(reason) => not_etcd(reason),
        })?;
    if !walked.saw_key_bucket {
        return Err(not_etcd("it has no `key` bucket".into()));
    }
    let Walked {
        records,
        mut tally,
        revision,
        leases,
        ..
    } = walked;
    let top = settle(records, &mut tally, options.top);
    let key_bucket = bolt
        .bucket(&bolt.root(), b"key")
        .map_err(bad_db)?
        .ok_or_else(|| not_etcd("it has no `key` bucket".into()))?;
    let largest_keys = largest(&bolt, &key_bucket, top).map_err(|e| match e {
        Fail::Bolt(source) => bad_db(source),
        Fail::Etcd(reason) => not_etcd(reason),
    })?;
    let compact_revision = compact_revision(&bolt).map_err(bad_db)?;
    // A compaction may have removed every revision up to it (all keys deleted): etcd then
    // takes the compaction revision as its current one, and so do we.
    let revision = revision.max(compact_revision);
    let page_size = u64::from(pages.page_size);
    let mut db = DbSpace::new(
        SpaceSource::Pages,
        pages.high_water * page_size,
        (pages.high_water - pages.free) * page_size,
    );
    db.page_size = Some(pages.page_size);
    db.free_pages = Some(pages.free);
    let (history_revisions, history_bytes) = tally.history_totals();
    Ok(UsageReport {
        source: name.to_string(),
        offline: true,
        revision,
        compact_revision: Some(compact_revision),
        prefix: options.prefix.clone(),
        depth: options.depth,
        keys: tally.keys(),
        live_bytes: tally.live_bytes(),
        history_revisions: Some(history_revisions),
        history_bytes: Some(history_bytes),
        history_bytes_estimate: None,
        leased_keys: tally.leased_keys(),
        leases: Some(leases),
        db,
        groups: tally.tables(options.top, true),
        largest_keys,
    })
}

/// Tells each key's latest revision from its history, into `tally`; returns the `top`
/// largest live keys by revision.
fn settle(mut records: Vec<Record>, tally: &mut Tally, top: usize) -> TopN<(i64, u32)> {
    // Each key's revisions together, in revision order: the last one is the latest.
    records.sort_unstable_by_key(|r| (r.key, r.main, r.sub));
    let mut largest: TopN<(i64, u32)> = TopN::new(top);
    for revisions in records.chunk_by(|a, b| a.key == b.key) {
        let Some((latest, older)) = revisions.split_last() else {
            continue;
        };
        for r in older {
            tally.history(&r.groups, u64::from(r.bytes));
        }
        if latest.flags & TOMBSTONE != 0 {
            tally.history(&latest.groups, u64::from(latest.bytes));
        } else {
            tally.live(
                &latest.groups,
                u64::from(latest.bytes),
                latest.flags & LEASED != 0,
            );
            largest.offer(
                u64::from(latest.bytes),
                (latest.main, latest.key),
                (latest.main, latest.sub),
            );
        }
    }
    largest
}

/// The largest keys, read again by their revisions.
fn largest<S: PageSource>(
    bolt: &BoltDb<S>,
    bucket: &Bucket,
    top: TopN<(i64, u32)>,
) -> std::result::Result<Vec<KeyUsage>, Fail> {
    let mut out = Vec::new();
    for (main, sub) in top.into_sorted() {
        let mut key = main.to_be_bytes().to_vec();
        key.push(b'_');
        key.extend_from_slice(&u64::from(sub).to_be_bytes());
        let Some((value, _)) = bolt.get(bucket, &key)? else {
            return Err(Fail::Etcd(format!(
                "revision {main} is gone from the key bucket on a second read"
            )));
        };
        let kv = key_value_parts(&value).ok_or_else(|| {
            Fail::Etcd(format!(
                "the value at revision {main} is not an mvccpb.KeyValue"
            ))
        })?;
        out.push(KeyUsage {
            key: display_bytes(kv.key),
            bytes: (kv.key.len() + kv.value.len()) as u64,
            value_bytes: kv.value.len() as u64,
            mod_revision: kv.mod_revision,
            lease: (kv.lease != 0).then(|| format!("{:x}", kv.lease)),
        });
    }
    Ok(out)
}

/// The db's compaction revision, as etcd takes it on start: a scheduled one past the
/// finished one, else the finished one; -1 when never compacted.
fn compact_revision<S: PageSource>(bolt: &BoltDb<S>) -> std::result::Result<i64, bbolt::BoltError> {
    let Some(meta) = bolt.bucket(&bolt.root(), b"meta")? else {
        return Ok(-1);
    };
    let read = |key: &[u8]| -> std::result::Result<Option<i64>, bbolt::BoltError> {
        Ok(bolt
            .get(&meta, key)?
            .and_then(|(value, _)| parse_revision_key(&value).map(|(main, _)| main)))
    };
    let finished = read(b"finishedCompactRev")?;
    let scheduled = read(b"scheduledCompactRev")?;
    Ok(match (finished, scheduled) {
        (f, Some(s)) if s != 0 && s > f.unwrap_or(-1) => s,
        (Some(f), _) => f,
        (None, _) => -1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::{NO_GROUP, PrefixDepth};

    #[test]
    fn the_latest_revision_is_live_unless_deleted_and_the_rest_is_history() {
        let grouping = PrefixDepth::new(&UsageOptions::default());
        let mut tally = Tally::new(&grouping);
        let rec = |key, main, bytes, flags| Record {
            key,
            main,
            sub: 0,
            bytes,
            groups: [NO_GROUP; 3],
            flags,
        };
        // Key 1: two puts; key 2: a put then its deletion; key 3: one put on a lease. In
        // revision order, as the key bucket holds them.
        let records = vec![
            rec(1, 2, 10, 0),
            rec(2, 3, 20, 0),
            rec(1, 4, 30, 0),
            rec(3, 5, 5, LEASED),
            rec(2, 6, 4, TOMBSTONE),
        ];
        let top = settle(records, &mut tally, 1);
        assert_eq!((tally.keys(), tally.live_bytes()), (2, 35));
        assert_eq!(tally.leased_keys(), 1);
        assert_eq!(tally.history_totals(), (3, 10 + 20 + 4));
        assert_eq!(top.into_sorted(), [(4, 0)]);
    }
}
