//! The restored db: copied beside the target, checked, and rewritten for the new cluster
//! (membership, consistent index, term; with a replay, its leases and changes).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use bbolt::{
    Append, BoltDb, BoltError, BucketContents, DbFile, FreePages, PageSource, append_sorted,
    last_key, replace_buckets, verify_rewrite,
};

use super::{Replay, RestoreError, RestoredMember, invalid, io_err, opts, wal};
use crate::file::{SnapshotFile, sha256_of};

/// The staged db, rewritten: its revision (after a bump) and its size.
pub(super) struct Rewritten {
    /// MVCC revision restored.
    pub revision: i64,
    /// Bytes of the db.
    pub db_size: u64,
}

/// What to write into the staged db.
pub(super) struct Rewrite<'a> {
    /// The snapshot, for messages.
    pub name: &'a str,
    /// The staged db's path, for messages.
    pub db_path: &'a Path,
    /// The members of the new cluster; `None` keeps the db's membership, consistent index
    /// and term (a compacted chain: a snapshot db, not a restored member's).
    pub members: Option<&'a [RestoredMember]>,
    /// The revision the snapshot's db holds.
    pub db_revision: i64,
    /// A point-in-time restore's target.
    pub to_revision: Option<i64>,
    /// Raise the latest revision by this much (0: not).
    pub bump_revision: u64,
    /// The staged db's free pages (from the walk that checked it): the rewrite's new pages
    /// go there first, as bbolt's own transaction would put them.
    pub free_pages: FreePages,
}

impl Rewrite<'_> {
    fn failed(&self) -> impl Fn(BoltError) -> RestoreError + '_ {
        |source| RestoreError::Rewrite {
            name: self.name.to_string(),
            source,
        }
    }

    /// Rewrites the db in `db_file` (`db_len` bytes): membership, consistent index and
    /// term, a revision bump, and the replay's leases and changes.
    pub(super) fn apply<R: Replay>(
        &self,
        db_file: File,
        db_len: u64,
        mut replay: Option<&mut R>,
    ) -> Result<Rewritten, RestoreError> {
        let failed = self.failed();
        let bolt = BoltDb::open(DbFile::new(db_file, db_len)).map_err(&failed)?;
        let mut replace = BTreeMap::new();
        let mut meta = current_bucket(&bolt, b"meta").map_err(&failed)?;
        if let Some(members) = self.members {
            let commit = members.len() as u64;
            replace = membership(members);
            meta.insert(b"consistent_index".to_vec(), commit.to_be_bytes().to_vec());
            meta.insert(b"term".to_vec(), 1u64.to_be_bytes().to_vec());
        }
        // A point-in-time restore: leases its changes use that the db lacks are added (or,
        // when their TTL is unknown, taken off those changes).
        let mut detach = BTreeSet::new();
        if let Some(replay) = replay.as_deref_mut() {
            let mut leases = current_bucket(&bolt, b"lease").map_err(&failed)?;
            let existing: BTreeSet<i64> = leases
                .keys()
                .filter_map(|k| k.as_slice().try_into().ok().map(i64::from_be_bytes))
                .collect();
            let plan = replay
                .plan_leases(self.db_revision, &existing)
                .map_err(&failed)?;
            if !plan.add.is_empty() || !plan.remove.is_empty() {
                for id in &plan.remove {
                    leases.remove(id.to_be_bytes().as_slice());
                }
                leases.extend(plan.add);
                replace.insert(b"lease".to_vec(), leases);
            }
            detach = plan.detach;
        }
        let mut revision = self.db_revision.max(self.to_revision.unwrap_or(0));
        let append = self.bump(&mut revision, &mut meta)?;
        if self.members.is_some() || append.is_some() {
            replace.insert(b"meta".to_vec(), meta);
        }
        // With a replay, the bump key goes after the replayed changes, in the bulk append.
        let single_append = if replay.is_some() {
            None
        } else {
            append.as_ref()
        };
        // Nothing to rewrite (a compaction whose changes need no lease): the db as it is.
        let patch = if replace.is_empty() && single_append.is_none() {
            None
        } else {
            Some(
                replace_buckets(&bolt, &replace, single_append, &self.free_pages)
                    .map_err(&failed)?,
            )
        };
        let db_file = bolt.into_source();
        let reopen = |size| -> Result<BoltDb<DbFile>, RestoreError> {
            let file = db_file.file().try_clone().map_err(io_err(self.db_path))?;
            BoltDb::open(DbFile::new(file, size)).map_err(&failed)
        };
        let mut db_size = db_len;
        if let Some(patch) = &patch {
            patch
                .apply_to_file(db_file.file())
                .map_err(io_err(self.db_path))?;
            db_size = patch.new_size();
        }
        let written = reopen(db_size)?;
        verify_rewrite(&written, &replace, single_append).map_err(&failed)?;
        if let Some(replay) = replay {
            let bump = append.map(|a| Ok((a.key, a.value)));
            let report = replay
                .replay_into(self.db_revision, &detach, &mut |changes| {
                    append_sorted(
                        &written,
                        db_file.file(),
                        b"key",
                        changes.chain(bump.clone()),
                    )
                })
                .map_err(&failed)?;
            db_size = report.new_size;
            // Read the result back: the bucket must end with the last key appended.
            let reread = reopen(db_size)?;
            if report.last_key.is_some()
                && last_key(&reread, b"key").map_err(&failed)? != report.last_key
            {
                return Err(failed(BoltError::Check {
                    problems: vec!["the replayed changes do not read back".into()],
                }));
            }
        }
        Ok(Rewritten { revision, db_size })
    }

    /// With a revision bump: `revision` raised, the compaction scheduled in `meta`, and the
    /// key (with an empty value) to put at the new revision.
    fn bump(
        &self,
        revision: &mut i64,
        meta: &mut BucketContents,
    ) -> Result<Option<Append>, RestoreError> {
        if self.bump_revision == 0 {
            return Ok(None);
        }
        let bumped = i64::try_from(self.bump_revision)
            .ok()
            .and_then(|n| revision.checked_add(n))
            .ok_or_else(|| {
                invalid(opts::BUMP_REVISION)(format!(
                    "{} overflows the revision {revision}",
                    self.bump_revision
                ))
            })?;
        *revision = bumped;
        let mut key = bumped.to_be_bytes().to_vec();
        key.push(b'_');
        key.extend_from_slice(&0i64.to_be_bytes());
        meta.insert(b"scheduledCompactRev".to_vec(), key.clone());
        Ok(Some(Append {
            bucket: b"key".to_vec(),
            key,
            value: Vec::new(),
        }))
    }
}

/// The `members` and (empty) `members_removed` buckets of the new cluster.
fn membership(members: &[RestoredMember]) -> BTreeMap<Vec<u8>, BucketContents> {
    let mut replace = BTreeMap::new();
    let mut members_bucket = BucketContents::new();
    for member in members {
        members_bucket.insert(
            format!("{:x}", member.id).into_bytes(),
            wal::member_json(member),
        );
    }
    replace.insert(b"members".to_vec(), members_bucket);
    replace.insert(b"members_removed".to_vec(), BucketContents::new());
    replace
}

/// The revision of a snapshot's db: the main revision of the last key of its `key` bucket
/// (0 when it has none).
pub fn db_revision(snapshot: &SnapshotFile) -> Result<i64, BoltError> {
    let bolt = BoltDb::open(snapshot.db())?;
    Ok(last_key(&bolt, b"key")?
        .and_then(|key| crate::mvcc::parse_revision_key(&key))
        .map_or(0, |(main, _)| main))
}

/// Puts the db of `snapshot` (without its trailer) in a new file `to` and returns its
/// SHA-256. A db spooled on `to`'s filesystem (a zstd, age or stored snapshot) is given the
/// name `to`: its bytes were written once, there. Else the kernel copies (`copy_file_range`)
/// while a second thread hashes, unless the hash is known already.
pub(super) fn copy_db(
    snapshot: &SnapshotFile,
    to: &Path,
    name: &str,
) -> Result<String, RestoreError> {
    if snapshot.take_into(to).map_err(io_err(to))? {
        return match snapshot.known_sha256() {
            Some(known) => Ok(known.to_string()),
            // Not rewritten yet: still the snapshot's db.
            None => sha256_of(snapshot.db()).map_err(|source| {
                RestoreError::Snapshot(crate::Error::ReadFile {
                    path: name.to_string(),
                    source,
                })
            }),
        };
    }
    let mut out = etcd_common::private::create_new_file(to).map_err(io_err(to))?;
    let db = snapshot.db();
    let mut source = db.file().try_clone().map_err(io_err(to))?;
    let mut copy = |out: &mut File| -> std::io::Result<u64> {
        source.seek(SeekFrom::Start(0))?;
        std::io::copy(&mut (&mut source).take(db.size()), out)
    };
    let (copied, sha) = std::thread::scope(|scope| {
        let hashing = match snapshot.known_sha256() {
            Some(known) => Ok(Ok(known.to_string())),
            None => Err(scope.spawn(|| sha256_of(db))),
        };
        let copied = copy(&mut out);
        let sha = match hashing {
            Ok(known) => known,
            Err(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the hashing thread panicked"))),
        };
        (copied, sha)
    });
    let copied = copied.map_err(io_err(to))?;
    if copied != db.size() {
        return Err(io_err(to)(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("copied {copied} of the db's {} bytes", db.size()),
        )));
    }
    sha.map_err(|source| {
        RestoreError::Snapshot(crate::Error::ReadFile {
            path: name.to_string(),
            source,
        })
    })
}

/// The key/value pairs of the top-level bucket `name` (empty when it is missing).
fn current_bucket<S: PageSource>(
    bolt: &BoltDb<S>,
    name: &[u8],
) -> Result<BucketContents, BoltError> {
    let mut contents = BucketContents::new();
    if let Some(bucket) = bolt.bucket(&bolt.root(), name)? {
        bolt.for_each(&bucket, |entry| {
            if entry.is_bucket {
                return Err(BoltError::Page {
                    pgid: 0,
                    reason: format!(
                        "bucket {:?} holds a nested bucket",
                        String::from_utf8_lossy(name)
                    ),
                });
            }
            contents.insert(entry.key.to_vec(), entry.value.to_vec());
            Ok(())
        })?;
    }
    Ok(contents)
}
