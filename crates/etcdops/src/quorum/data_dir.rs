//! Keeping a data dir before a recovery changes it: a copy beside it, or the dir itself moved
//! aside, both named `DIR.bak-<UTC time>` as the restore names what it moves aside. Nothing
//! is ever deleted, and a half-made copy never looks complete: it is written under
//! `DIR.bak-<time>.part`, every file and dir flushed, then renamed.
//!
//! A copy is compared with the data dir by the size and SHA-256 of its db and of each WAL
//! segment. Sizes alone cannot tell (etcd preallocates WAL segments to 64 MB), and mtimes
//! can lie (a copy tool that keeps them, a clock step, a second within one timestamp tick),
//! while a recovery is the one time a wrong "already copied" loses data; hashing costs one
//! read of each file, once per run.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use etcd_common::private;
use etcd_data::restore::{
    aside_source, aside_stamp, db_of, free_aside_path, lock_shared, refuse_if_running, sync_dir,
};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::Error;

/// What copying or moving a data dir aside did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataDirAside {
    /// The data dir.
    pub data_dir: PathBuf,
    /// Where the copy (or the moved dir) is: `None` when there was nothing to keep (no
    /// `DIR/member`).
    pub path: Option<PathBuf>,
    /// Whether something was (or, in a dry run, would be) copied or moved.
    pub changed: bool,
    /// A complete copy with the same db and WAL already existed: it is `path`.
    pub reused: bool,
    /// Half-made copies (`*.part`) a killed earlier run left: kept, never taken as complete.
    pub partial_copies: Vec<PathBuf>,
}

impl DataDirAside {
    fn nothing(dir: &Path) -> DataDirAside {
        DataDirAside {
            data_dir: dir.to_path_buf(),
            path: None,
            changed: false,
            reused: false,
            partial_copies: Vec::new(),
        }
    }

    /// Kept (or, in a dry run, to be kept) at `target`.
    fn kept(dir: &Path, target: PathBuf, partial_copies: Vec<PathBuf>) -> DataDirAside {
        DataDirAside {
            path: Some(target),
            changed: true,
            partial_copies,
            ..DataDirAside::nothing(dir)
        }
    }
}

/// Renames `from` to `to`, then flushes the parent so the rename survives a crash.
fn rename_durably(from: &Path, to: &Path) -> Result<(), Error> {
    fs::rename(from, to).map_err(io("rename", from))?;
    if let Some(parent) = to.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `dir` holds a member (`DIR/member`).
fn has_member(dir: &Path) -> bool {
    dir.join("member").is_dir()
}

/// Where the db and the WAL are inside what is kept: `member/` of a data dir, or the
/// `member` dir itself (a data dir that is a mount point keeps its `member` dir aside).
fn member_part(kept: &Path) -> PathBuf {
    if kept.file_name().is_some_and(|n| n == "member") {
        kept.to_path_buf()
    } else {
        kept.join("member")
    }
}

/// Size and SHA-256 of the db and of each WAL segment (by name) under the member dir
/// `member`, in name order.
fn fingerprint(member: &Path) -> Result<Vec<(String, u64, [u8; 32])>, Error> {
    let mut files = vec![("snap/db".to_string(), member.join("snap").join("db"))];
    let wal = member.join("wal");
    let mut segments: Vec<String> = match fs::read_dir(&wal) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".wal"))
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io("read", &wal)(e)),
    };
    segments.sort();
    files.extend(
        segments
            .into_iter()
            .map(|n| (format!("wal/{n}"), wal.join(n))),
    );
    files
        .into_iter()
        .map(|(name, path)| {
            let mut file = File::open(&path).map_err(io("read", &path))?;
            let mut hasher = Sha256::new();
            let size = io::copy(&mut file, &mut hasher).map_err(io("read", &path))?;
            Ok((name, size, hasher.finalize().into()))
        })
        .collect()
}

/// The dirs beside `kept` named `<name>.bak-*`: complete ones and half-made (`.part`) ones.
fn copies_beside(kept: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Error> {
    let (Some(parent), Some(name)) = (kept.parent(), kept.file_name()) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let prefix = format!("{}.bak-", name.to_string_lossy());
    let mut complete = Vec::new();
    let mut partial = Vec::new();
    for entry in fs::read_dir(parent).map_err(io("read", parent))? {
        let entry = entry.map_err(io("read", parent))?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if !file_name.starts_with(&prefix) || !entry.path().is_dir() {
            continue;
        }
        if file_name.ends_with(".part") {
            partial.push(entry.path());
        } else {
            complete.push(entry.path());
        }
    }
    complete.sort();
    partial.sort();
    Ok((complete, partial))
}

/// Copies the data dir `dir` to `DIR.bak-<UTC time>` beside it (where its symlinks point;
/// for a data dir that is a mount point, its `member` dir to `DIR/member.bak-<time>`).
///
/// Refused while etcd runs on it (its db is locked); the copy holds a shared lock on the db
/// throughout, so etcd cannot start on it midway. Written as `<target>.part`, each file and
/// dir flushed, then renamed and the parent flushed: a copy killed midway stays a `.part`,
/// which is never taken as complete (and never removed). Idempotent: when a complete copy
/// with the same db and WAL segments (size and SHA-256) exists, it is returned with
/// `changed: false`. No `DIR/member`: nothing to copy, `changed: false`. With `dry_run`,
/// everything is checked and nothing written.
pub fn copy_data_dir_aside(dir: &Path, dry_run: bool) -> Result<DataDirAside, Error> {
    if !has_member(dir) {
        return Ok(DataDirAside::nothing(dir));
    }
    let kept = aside_source(dir)?;
    // Held until the copy is renamed into place.
    let db = db_of(dir);
    let _lock = match File::open(&db) {
        Ok(file) => {
            lock_shared(&file, dir)?;
            Some(file)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("open", &db)(e)),
    };
    let (complete, partial_copies) = copies_beside(&kept)?;
    if !complete.is_empty() {
        let current = fingerprint(&member_part(&kept))?;
        for copy in complete {
            if fingerprint(&member_part(&copy)).is_ok_and(|f| f == current) {
                return Ok(DataDirAside {
                    path: Some(copy),
                    reused: true,
                    partial_copies,
                    ..DataDirAside::nothing(dir)
                });
            }
        }
    }
    let (target, part) = free_copy_names(&kept, &aside_stamp())?;
    if !dry_run {
        copy_tree(&kept, &part)?;
        rename_durably(&part, &target)?;
    }
    Ok(DataDirAside::kept(dir, target, partial_copies))
}

/// A free `KEPT.bak-<stamp>` whose `.part` name is free too (a run killed within the same
/// second left one): the copy's final and temporary names.
fn free_copy_names(kept: &Path, stamp: &str) -> Result<(PathBuf, PathBuf), Error> {
    for n in 0..1000 {
        let stamp = match n {
            0 => stamp.to_string(),
            n => format!("{stamp}-{n}"),
        };
        let target = free_aside_path(kept, &stamp)?;
        let mut part = target.clone().into_os_string();
        part.push(".part");
        let part = PathBuf::from(part);
        if fs::symlink_metadata(&part).is_err() {
            return Ok((target, part));
        }
    }
    Err(Error::Io {
        action: "find a free name beside",
        path: kept.to_path_buf(),
        source: io::Error::from(io::ErrorKind::AlreadyExists),
    })
}

/// Copies the tree `from` to the new path `to`: dirs, files (contents, mode, and the owner
/// when this process may set it) and symlinks; each file flushed, each dir flushed after
/// its entries. Every file is created 0600 and every dir 0700 (a data dir holds every
/// Secret) and given its source's mode only once complete: a dir after everything in it,
/// so the top dir, the last one widened, keeps the whole copy private until it is done.
fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    let meta = fs::symlink_metadata(from).map_err(io("read", from))?;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(from).map_err(io("read", from))?;
        std::os::unix::fs::symlink(target, to).map_err(io("create", to))?;
    } else if meta.is_dir() {
        private::create_dir(to).map_err(io("create", to))?;
        for entry in fs::read_dir(from).map_err(io("read", from))? {
            let entry = entry.map_err(io("read", from))?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        fs::set_permissions(to, fs::Permissions::from_mode(meta.mode() & 0o7777))
            .map_err(io("set the mode of", to))?;
        sync_dir(to)?;
    } else {
        let mut source = File::open(from).map_err(io("read", from))?;
        let mut copy = private::create_new_file(to).map_err(io("create", to))?;
        copy_bytes(&mut source, &mut copy).map_err(io("copy", from))?;
        copy.set_permissions(fs::Permissions::from_mode(meta.mode() & 0o7777))
            .map_err(io("set the mode of", to))?;
        copy.sync_all().map_err(io("flush", to))?;
    }
    // Keep the owner (etcd's user) when running as root; elsewhere the copy is ours.
    let _ = std::os::unix::fs::lchown(to, Some(meta.uid()), Some(meta.gid()));
    Ok(())
}

fn copy_bytes(source: &mut File, copy: &mut File) -> io::Result<u64> {
    let mut reader = io::BufReader::with_capacity(1 << 20, source.by_ref());
    io::copy(&mut reader, copy)
}

/// Renames the data dir `dir` to `DIR.bak-<UTC time>` (where its symlinks point, the link
/// kept; for a data dir that is a mount point, its `member` dir to `DIR/member.bak-<time>`,
/// the mount kept), then flushes the parent. Refused while etcd runs on it. No `DIR/member`
/// (absent, or already moved): nothing to do, `changed: false`. With `dry_run`, everything
/// is checked and nothing moved.
pub fn move_data_dir_aside(dir: &Path, dry_run: bool) -> Result<DataDirAside, Error> {
    if !has_member(dir) {
        return Ok(DataDirAside::nothing(dir));
    }
    refuse_if_running(dir)?;
    let kept = aside_source(dir)?;
    let target = free_aside_path(&kept, &aside_stamp())?;
    if !dry_run {
        rename_durably(&kept, &target)?;
    }
    Ok(DataDirAside::kept(dir, target, Vec::new()))
}

#[cfg(test)]
mod tests {
    use rustix::fs::{FlockOperation, flock};

    use super::*;

    /// A data dir with a db and a WAL segment.
    fn data_dir(root: &Path) -> PathBuf {
        let dir = root.join("etcd");
        fs::create_dir_all(dir.join("member/snap")).unwrap();
        fs::create_dir_all(dir.join("member/wal")).unwrap();
        fs::write(dir.join("member/snap/db"), b"db v1").unwrap();
        fs::write(
            dir.join("member/wal/0000000000000000-0000000000000000.wal"),
            b"wal 1",
        )
        .unwrap();
        dir
    }

    fn listing(root: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_copy_is_complete_then_reused_until_the_wal_changes() {
        let root = tempfile::tempdir().unwrap();
        let dir = data_dir(root.path());
        let dry = copy_data_dir_aside(&dir, true).unwrap();
        assert!(dry.changed);
        assert_eq!(listing(root.path()), ["etcd"], "a dry run writes nothing");
        let first = copy_data_dir_aside(&dir, false).unwrap();
        let path = first.path.clone().unwrap();
        assert!(first.changed && !first.reused);
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("etcd.bak-")
        );
        assert_eq!(fs::read(path.join("member/snap/db")).unwrap(), b"db v1");
        let again = copy_data_dir_aside(&dir, false).unwrap();
        assert_eq!((again.changed, again.reused), (false, true));
        assert_eq!(again.path, Some(path.clone()));
        // Same size, other bytes: a new copy, the old one kept.
        fs::write(
            dir.join("member/wal/0000000000000000-0000000000000000.wal"),
            b"wal 2",
        )
        .unwrap();
        let third = copy_data_dir_aside(&dir, false).unwrap();
        assert!(third.changed);
        assert_ne!(third.path, Some(path.clone()));
        assert!(path.join("member/snap/db").exists(), "nothing deleted");
        assert_eq!(listing(root.path()).len(), 3);
    }

    #[test]
    fn a_leftover_part_is_never_taken_for_a_complete_copy() {
        let root = tempfile::tempdir().unwrap();
        let dir = data_dir(root.path());
        // What a copy killed just before its rename leaves: every byte, still `.part`.
        let part = root.path().join("etcd.bak-20260101T000000Z.part");
        copy_tree(&dir, &part).unwrap();
        let copy = copy_data_dir_aside(&dir, false).unwrap();
        assert!(copy.changed && !copy.reused);
        assert_ne!(copy.path.as_deref(), Some(part.as_path()));
        assert_eq!(copy.partial_copies, std::slice::from_ref(&part));
        assert!(part.join("member/snap/db").exists(), "the .part is kept");
        assert!(!copy.path.unwrap().to_string_lossy().ends_with(".part"));
        // A leftover `.part` of this very second is not written into either.
        let (target, part) = free_copy_names(&dir, "20260101T000000Z").unwrap();
        assert_eq!(
            target.file_name().unwrap(),
            "etcd.bak-20260101T000000Z-1",
            "{part:?}"
        );
        assert!(!part.exists());
    }

    #[test]
    fn moving_aside_renames_once_and_deletes_nothing() {
        let root = tempfile::tempdir().unwrap();
        let dir = data_dir(root.path());
        assert!(move_data_dir_aside(&dir, true).unwrap().changed);
        assert!(
            dir.join("member/snap/db").exists(),
            "a dry run moves nothing"
        );
        let moved = move_data_dir_aside(&dir, false).unwrap();
        let path = moved.path.unwrap();
        assert!(moved.changed && !dir.exists());
        assert_eq!(fs::read(path.join("member/snap/db")).unwrap(), b"db v1");
        let again = move_data_dir_aside(&dir, false).unwrap();
        assert!(!again.changed && again.path.is_none());
        // An empty dir etcd created since: nothing to keep either.
        fs::create_dir(&dir).unwrap();
        assert!(!move_data_dir_aside(&dir, false).unwrap().changed);
        assert!(!copy_data_dir_aside(&dir, false).unwrap().changed);
    }

    #[test]
    fn a_locked_data_dir_is_neither_copied_nor_moved() {
        let root = tempfile::tempdir().unwrap();
        let dir = data_dir(root.path());
        let held = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.join("member/snap/db"))
            .unwrap();
        flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
        let err = copy_data_dir_aside(&dir, false).unwrap_err().to_string();
        assert!(err.contains("running"), "{err}");
        let err = move_data_dir_aside(&dir, false).unwrap_err().to_string();
        assert!(err.contains("running"), "{err}");
        assert_eq!(listing(root.path()), ["etcd"]);
    }
}
