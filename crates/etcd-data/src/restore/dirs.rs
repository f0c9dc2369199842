//! Data and WAL dirs: where they really are, their owner, and writing into them.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{RestoreError, invalid, io_err, opts};

/// The id of `name` (or a number) in an `/etc/passwd`-like file (`name:x:id:...`).
fn lookup_id(file: &str, name: &str) -> Option<u32> {
    if let Ok(id) = name.parse::<u32>() {
        return Some(id);
    }
    let text = fs::read_to_string(file).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next()? == name)
            .then(|| fields.nth(1)?.parse().ok())
            .flatten()
    })
}

/// Resolves `USER[:GROUP]` to ids via /etc/passwd and /etc/group (numbers accepted).
pub fn resolve_owner(spec: &str) -> Result<(u32, Option<u32>), RestoreError> {
    let (user, group) = match spec.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (spec, None),
    };
    if user.is_empty() {
        return Err(invalid(opts::OWNER)("USER must not be empty".into()));
    }
    let uid = lookup_id("/etc/passwd", user)
        .ok_or_else(|| invalid(opts::OWNER)(format!("no user {user:?}")))?;
    let gid = match group.filter(|g| !g.is_empty()) {
        Some(g) => Some(
            lookup_id("/etc/group", g)
                .ok_or_else(|| invalid(opts::OWNER)(format!("no group {g:?}")))?,
        ),
        None => None,
    };
    Ok((uid, gid))
}

/// Changes the owner of `path` and everything under it.
pub(super) fn chown_tree(path: &Path, uid: u32, gid: Option<u32>) -> Result<(), RestoreError> {
    std::os::unix::fs::lchown(path, Some(uid), gid).map_err(io_err(path))?;
    let meta = fs::symlink_metadata(path).map_err(io_err(path))?;
    if meta.is_dir() {
        for entry in fs::read_dir(path).map_err(io_err(path))? {
            let entry = entry.map_err(io_err(path))?;
            chown_tree(&entry.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// Whether `dir` exists and holds something.
pub(super) fn non_empty(dir: &Path) -> bool {
    fs::read_dir(dir)
        .map(|mut e| e.next().is_some())
        .unwrap_or(false)
}

/// Where a data or WAL dir really is, and whether it is a mount point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DirLayout {
    /// The dir itself, its symlinks followed (it may not exist yet).
    pub(super) real: PathBuf,
    /// It is the root of a mounted filesystem (its own disk): it cannot be renamed, only
    /// what is in it.
    pub(super) mount_point: bool,
}

impl DirLayout {
    pub(super) fn of(dir: &Path) -> Result<DirLayout, RestoreError> {
        let mut real = dir.to_path_buf();
        // Follow a chain of symlinks by hand, so that a link to a dir not created yet works.
        for _ in 0..40 {
            match fs::symlink_metadata(&real) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = fs::read_link(&real).map_err(io_err(&real))?;
                    real = match real.parent() {
                        Some(parent) if target.is_relative() => parent.join(target),
                        _ => target,
                    };
                }
                _ => {
                    let mount_point = is_mount_point(&real);
                    return Ok(DirLayout { real, mount_point });
                }
            }
        }
        Err(invalid(opts::DATA_DIR)(format!(
            "{}: too many levels of symbolic links",
            dir.display()
        )))
    }
}

/// Whether `dir` is the root of a filesystem mounted on its parent's.
pub(super) fn is_mount_point(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // A relative `dir` (say `data`) has the empty path as its parent: made absolute first.
    let Ok(dir) = std::path::absolute(dir) else {
        return false;
    };
    let Some(parent) = dir.parent() else {
        return false;
    };
    match (fs::metadata(&dir), fs::metadata(parent)) {
        (Ok(d), Ok(p)) => d.is_dir() && d.dev() != p.dev(),
        _ => false,
    }
}

/// The owner (user and group) of an existing data dir, to give the restored one, when this
/// process may give files away (runs as root) and the dir belongs to someone else.
pub(super) fn inherited_owner(data_dir: &Path) -> Option<(u32, Option<u32>)> {
    use std::os::unix::fs::MetadataExt;
    let existing = fs::metadata(data_dir).ok()?;
    (current_uid() == 0 && (existing.uid(), existing.gid()) != (0, 0))
        .then_some((existing.uid(), Some(existing.gid())))
}

/// This process's effective user id, from `/proc/self` (owned by it).
fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX)
}

/// What moving the data dir `dir` aside renames: the dir its symlinks point to (the link
/// is kept), or its `member` dir when it is a mount point (the mount is kept).
pub fn aside_source(dir: &Path) -> Result<PathBuf, RestoreError> {
    let layout = DirLayout::of(dir)?;
    Ok(if layout.mount_point {
        layout.real.join("member")
    } else {
        layout.real
    })
}

/// The UTC time in the names of moved-aside dirs (`20261201T203000Z`).
pub fn aside_stamp() -> String {
    chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string()
}

/// The first free `DIR.bak-<stamp>` (then `-1`, `-2`, ...) beside `dir`: a name already
/// taken (two moves in one second) is never overwritten.
pub fn free_aside_path(dir: &Path, stamp: &str) -> Result<PathBuf, RestoreError> {
    (0..1000)
        .map(|n| {
            if n == 0 {
                aside_path(dir, stamp)
            } else {
                aside_path(dir, &format!("{stamp}-{n}"))
            }
        })
        .find(|candidate| fs::symlink_metadata(candidate).is_err())
        .ok_or_else(|| RestoreError::NotEmpty {
            path: aside_path(dir, stamp),
        })
}

/// `DIR.bak-<UTC time>` beside `dir`.
pub(super) fn aside_path(dir: &Path, stamp: &str) -> PathBuf {
    let mut name = dir.as_os_str().to_os_string();
    name.push(format!(".bak-{stamp}"));
    PathBuf::from(name)
}

/// Whether `dir` is absent or an empty directory.
pub(super) fn ensure_empty(dir: &Path) -> Result<(), RestoreError> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(RestoreError::NotEmpty {
                    path: dir.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Err(RestoreError::NotEmpty {
            path: dir.to_path_buf(),
        }),
        Err(e) => Err(io_err(dir)(e)),
    }
}

pub(super) fn make_dir(path: &Path) -> Result<(), RestoreError> {
    etcd_common::private::create_dir_all(path).map_err(io_err(path))
}

pub(super) fn write_file(path: &Path, bytes: &[u8], size: Option<u64>) -> Result<(), RestoreError> {
    let err = io_err(path);
    let mut file = etcd_common::private::create_new_file(path).map_err(&err)?;
    file.write_all(bytes).map_err(&err)?;
    if let Some(size) = size {
        file.set_len(size.max(bytes.len() as u64)).map_err(&err)?;
    }
    file.sync_all().map_err(&err)
}

/// Flushes the directory `path` itself (its entries: a rename or a new file in it) to disk.
pub fn sync_dir(path: &Path) -> Result<(), RestoreError> {
    File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_dir_resolves_to_its_target_even_before_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("other disk");
        fs::create_dir_all(&disk).unwrap();
        // data -> relative link -> link2 -> "other disk/etcd" (not created yet)
        std::os::unix::fs::symlink(disk.join("etcd"), dir.path().join("link2")).unwrap();
        std::os::unix::fs::symlink("link2", dir.path().join("data")).unwrap();
        let layout = DirLayout::of(&dir.path().join("data")).unwrap();
        assert_eq!(layout.real, disk.join("etcd"));
        assert!(!layout.mount_point);
        let plain = DirLayout::of(&disk).unwrap();
        assert_eq!(plain.real, disk);
        assert!(!plain.mount_point);
    }

    #[test]
    fn a_symlink_loop_is_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let err = DirLayout::of(&dir.path().join("a"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("too many levels of symbolic links"), "{err}");
    }

    #[test]
    fn proc_is_a_mount_point_and_a_plain_dir_is_not() {
        assert!(is_mount_point(Path::new("/proc")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_mount_point(dir.path()));
        // Relative: its parent is not the empty path (found by the #24 red team).
        assert!(is_mount_point(Path::new(
            "../../../../../../../../../../../../../../../../proc"
        )));
    }
}
