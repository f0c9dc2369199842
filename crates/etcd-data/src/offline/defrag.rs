//! etcdutl's `defrag --data-dir`, natively: the db of a stopped member rewritten compactly
//! (every bucket's keys in full pages, no free pages) beside it, fsynced, checked page by page
//! and key by key against the original, and renamed over it, the directory fsynced; the
//! original's mode and owner are kept. The member's db stays locked throughout, so etcd cannot
//! start on it meanwhile; a member running there is refused.
//!
//! A defragmentation killed midway leaves its copy behind (`member/snap/db.defrag-XXXXXX`,
//! [`LEFTOVER_PREFIX`] and six random letters or digits). The next one removes such files
//! first, under the same lock, and reports them: only regular files named exactly so, never
//! a symlink, a directory, or any other name.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use bbolt::{BoltDb, DbFile, PageSource, compact_into};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The name of a defragmentation's copy in `member/snap/`: this, then
/// [`LEFTOVER_RANDOM_LEN`] random ASCII letters or digits.
pub const LEFTOVER_PREFIX: &str = "db.defrag-";
/// How many random characters follow [`LEFTOVER_PREFIX`].
pub const LEFTOVER_RANDOM_LEN: usize = 6;

/// Whether `name` is exactly what a defragmentation names its copy.
fn is_leftover_name(name: &str) -> bool {
    name.strip_prefix(LEFTOVER_PREFIX).is_some_and(|rest| {
        rest.len() == LEFTOVER_RANDOM_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Removes the copies earlier defragmentations left in `dir` (regular files named as ours
/// only) and returns their paths.
fn remove_leftovers(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let ours = entry.file_name().to_str().is_some_and(is_leftover_name);
        // file_type() does not follow a symlink: a link is never ours.
        if ours && entry.file_type().map_err(io(&entry.path()))?.is_file() {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(io(&path))?;
            removed.push(path);
        }
    }
    removed.sort();
    Ok(removed)
}

/// The member to defragment.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DefragRequest {
    /// The stopped member's data dir (its db is `member/snap/db`).
    pub data_dir: PathBuf,
}

/// What a defragmentation did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DefragResult {
    /// The db rewritten.
    pub db: PathBuf,
    /// Its size before.
    pub size_before: u64,
    /// Its size after.
    pub size_after: u64,
    /// Top-level buckets copied.
    pub buckets: u64,
    /// Key/value pairs copied.
    pub keys: u64,
    /// Copies left by earlier, interrupted defragmentations, removed first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_leftovers: Vec<PathBuf>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::WriteFile {
        path: path.display().to_string(),
        source,
    }
}

/// Every key/value pair of every top-level bucket, in order, as one CRC-32C per bucket and a
/// count: what must be the same before and after.
fn contents_digest<S: PageSource>(
    db: &BoltDb<S>,
) -> std::result::Result<Vec<(Vec<u8>, u32, u64)>, bbolt::BoltError> {
    let root = db.root();
    let mut names = Vec::new();
    db.for_each(&root, |entry| {
        names.push(entry.key.to_vec());
        Ok::<(), bbolt::BoltError>(())
    })?;
    let mut digest = Vec::new();
    for name in names {
        let (mut crc, mut count) = (0u32, 0u64);
        if let Some(bucket) = db.bucket(&root, &name)? {
            db.for_each(&bucket, |entry| {
                crc = crc32c::crc32c_append(crc, &(entry.key.len() as u64).to_le_bytes());
                crc = crc32c::crc32c_append(crc, entry.key);
                crc = crc32c::crc32c_append(crc, &(entry.value.len() as u64).to_le_bytes());
                crc = crc32c::crc32c_append(crc, entry.value);
                count += 1;
                Ok::<(), bbolt::BoltError>(())
            })?;
        }
        digest.push((name, crc, count));
    }
    Ok(digest)
}

/// Defragments the db of the stopped member at `request.data_dir` (see the module's doc).
pub fn defrag_data_dir(request: &DefragRequest) -> Result<DefragResult> {
    let (file, path) = super::open_stopped_db(&request.data_dir, true)?;
    let name = path.display().to_string();
    let bad_db = |source| Error::BadDb {
        name: name.clone(),
        source,
    };
    let meta = file.metadata().map_err(|source| Error::ReadFile {
        path: name.clone(),
        source,
    })?;
    let size_before = meta.len();
    let reader = file.try_clone().map_err(io(&path))?;
    let old = BoltDb::open(DbFile::new(reader, size_before)).map_err(bad_db)?;
    old.check().map_err(bad_db)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let removed_leftovers = remove_leftovers(dir)?;
    let temp = etcd_common::private::temp_file_in(dir, LEFTOVER_PREFIX, LEFTOVER_RANDOM_LEN)
        .map_err(io(dir))?;
    let report = compact_into(&old, temp.as_file()).map_err(bad_db)?;
    temp.as_file().sync_all().map_err(io(temp.path()))?;
    // Read it back: sound bbolt, and the same keys and values in every bucket.
    let check = File::open(temp.path()).map_err(io(temp.path()))?;
    let new = BoltDb::open(DbFile::new(check, report.size)).map_err(bad_db)?;
    new.check().map_err(bad_db)?;
    if contents_digest(&old).map_err(bad_db)? != contents_digest(&new).map_err(bad_db)? {
        return Err(Error::NotEtcdData {
            name,
            reason: "the compacted copy does not hold the same keys; the db is left as it was"
                .into(),
        });
    }
    let owner = (meta.uid(), meta.gid());
    std::os::unix::fs::fchown(temp.as_file(), Some(owner.0), Some(owner.1))
        .or_else(|e| {
            // Not root: the file is ours already, which is what etcd's user needs then.
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                Ok(())
            } else {
                Err(e)
            }
        })
        .map_err(io(temp.path()))?;
    std::fs::set_permissions(temp.path(), meta.permissions()).map_err(io(temp.path()))?;
    temp.persist(&path).map_err(|e| io(&path)(e.error))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    drop(file);
    Ok(DefragResult {
        db: path,
        size_before,
        size_after: report.size,
        buckets: report.buckets,
        keys: report.keys,
        removed_leftovers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_exact_names_are_leftovers() {
        assert!(is_leftover_name("db.defrag-aB3xY9"));
        for other in [
            "db",
            "db.defrag-",
            "db.defrag-abc",
            "db.defrag-abcdefg",
            "db.defrag-ab.def",
            "xdb.defrag-abcdef",
            "db.defrag-abcdef.bak",
        ] {
            assert!(!is_leftover_name(other), "{other}");
        }
    }

    #[test]
    fn leftovers_are_removed_but_not_links_dirs_or_other_names() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("db.defrag-Ab12Cd"), b"x").unwrap();
        std::fs::write(d.join("db.defrag-keep-me"), b"x").unwrap();
        std::fs::write(d.join("db"), b"x").unwrap();
        std::fs::create_dir(d.join("db.defrag-dir123")).unwrap();
        let target = d.join("target");
        std::fs::write(&target, b"x").unwrap();
        std::os::unix::fs::symlink(&target, d.join("db.defrag-link12")).unwrap();
        let removed = remove_leftovers(d).unwrap();
        assert_eq!(removed, vec![d.join("db.defrag-Ab12Cd")]);
        assert!(!d.join("db.defrag-Ab12Cd").exists());
        for kept in ["db.defrag-keep-me", "db", "db.defrag-dir123", "target"] {
            assert!(d.join(kept).exists(), "{kept}");
        }
        assert!(std::fs::symlink_metadata(d.join("db.defrag-link12")).is_ok());
    }
}
