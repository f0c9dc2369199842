//! A local store walked by directory descriptors: below its root (which is followed, as any
//! path a user names), no symbolic link is ever followed and only regular files are read,
//! written over or deleted. Each dir on the way to an object is opened with `O_NOFOLLOW`
//! relative to the one before it, and an object is opened with `O_NOFOLLOW|O_NONBLOCK` and
//! checked with `fstat` on the opened descriptor, so an entry swapped for a symlink, a FIFO
//! or a device between a listing and an open is refused, never read. What a listing finds
//! that is not a regular file or a dir is reported ([`NotRegularEntry`]), never read.

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use etcd_common::private;
use rustix::fs::{AtFlags, Dir, FileType, OFlags, Stat};
use rustix::io::Errno;
use serde::Serialize;

/// An entry of a local store that is not a regular file or a dir (a symbolic link, a FIFO, a
/// socket, a device): listed so that it can be reported, never read, copied or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotRegularEntry {
    /// Its name relative to the store's root.
    pub name: String,
    /// What it is: "a symbolic link", "a FIFO", ...
    pub kind: &'static str,
}

/// The error an operation on an entry that is not a regular file (or on a path through a
/// symbolic link) carries inside its `io::Error`; [`crate::error::map_io`] turns it into
/// [`crate::StoreError::NotRegular`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{}' is {}", .0.name, .0.kind)]
pub(crate) struct NotRegular(pub NotRegularEntry);

fn not_regular(name: &str, kind: &'static str) -> io::Error {
    io::Error::other(NotRegular(NotRegularEntry {
        name: name.to_string(),
        kind,
    }))
}

/// What a file type is, in words.
pub(crate) fn kind_of(file_type: FileType) -> &'static str {
    match file_type {
        FileType::RegularFile => "a file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        _ => "not a regular file",
    }
}

/// `rel` and `name` joined with `/` (`rel` may be empty).
pub(crate) fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

/// An object name split into its dirs and its file name.
pub(crate) fn split(name: &str) -> (Vec<&str>, &str) {
    match name.rsplit_once('/') {
        Some((dirs, file)) => (dirs.split('/').collect(), file),
        None => (Vec::new(), name),
    }
}

/// `lstat` of `name` in `dir`; `None` when absent.
pub(crate) fn stat_at(dir: impl AsFd, name: &str) -> io::Result<Option<Stat>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

/// The store's root dir (symbolic links in its path followed: the user named it); `None`
/// when it does not exist. With `create`, a missing root is created (0700, its missing
/// parents too).
pub(crate) fn open_root(root: &Path, create: bool) -> io::Result<Option<OwnedFd>> {
    match File::open(root) {
        Ok(dir) if dir.metadata()?.is_dir() => Ok(Some(dir.into())),
        Ok(_) => Err(Errno::NOTDIR.into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            private::create_dir_all(root)?;
            open_root(root, false)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Opens the dir `rel` (dirs separated by `/`, `""` for the root) below `root`, each step
/// with `O_NOFOLLOW`: `None` when one is missing (with `create`, missing ones are created,
/// 0700); a step that is a symbolic link or anything but a dir is an error naming it.
pub(crate) fn open_dir(root: &Path, rel: &[&str], create: bool) -> io::Result<Option<OwnedFd>> {
    let Some(mut dir) = open_root(root, create)? else {
        return Ok(None);
    };
    let mut walked = String::new();
    for &step in rel {
        walked = join(&walked, step);
        dir = match open_subdir(&dir, step) {
            Ok(sub) => sub,
            Err(Errno::NOENT) if create => {
                match private::create_dir_at(&dir, Path::new(step)) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                open_subdir(&dir, step).map_err(|e| refused(&dir, step, &walked, e))?
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(refused(&dir, step, &walked, e)),
        };
    }
    Ok(Some(dir))
}

fn open_subdir(dir: &OwnedFd, step: &str) -> Result<OwnedFd, Errno> {
    private::open_at(dir, Path::new(step), OFlags::RDONLY | OFlags::DIRECTORY)
        .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))
}

/// The error for a dir step that could not be opened: what is there when it is not a dir
/// (`ELOOP`: a symbolic link; `ENOTDIR`: a file, a FIFO, ...).
fn refused(dir: &OwnedFd, step: &str, walked: &str, e: Errno) -> io::Error {
    if matches!(e, Errno::LOOP | Errno::NOTDIR)
        && let Ok(Some(stat)) = stat_at(dir, step)
    {
        return not_regular(walked, kind_of(file_type(&stat)));
    }
    e.into()
}

/// Opens the regular file `file` in `dir` for reading (`name`: its name in the store, for
/// errors); `None` when absent. Anything else there (a symbolic link, a FIFO, a device, a
/// dir) is refused without being read: looked at with `lstat` first, so a FIFO or a device
/// is not even opened, then opened with `O_NOFOLLOW|O_NONBLOCK` and checked again on the
/// descriptor, which is what is read.
pub(crate) fn open_file(dir: impl AsFd, file: &str, name: &str) -> io::Result<Option<File>> {
    let dir = dir.as_fd();
    match stat_at(dir, file)? {
        None => return Ok(None),
        Some(stat) if file_type(&stat) != FileType::RegularFile => {
            return Err(not_regular(name, kind_of(file_type(&stat))));
        }
        Some(_) => {}
    }
    let fd = match private::open_at(dir, Path::new(file), OFlags::RDONLY | OFlags::NONBLOCK) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if Errno::from_io_error(&e) == Some(Errno::LOOP) => {
            return Err(not_regular(name, "a symbolic link"));
        }
        Err(e) => return Err(e),
    };
    let stat = rustix::fs::fstat(&fd)?;
    if file_type(&stat) != FileType::RegularFile {
        return Err(not_regular(name, kind_of(file_type(&stat))));
    }
    Ok(Some(File::from(fd)))
}

/// An entry of a dir being listed.
pub(crate) struct Entry {
    /// Its file name (UTF-8; other names are not names this crate writes and are skipped).
    pub name: String,
    /// Its type, from `lstat` where the dir entry did not say.
    pub file_type: FileType,
    /// Its `lstat`, for regular files.
    pub stat: Option<Stat>,
}

/// The entries of the dir `dir` (`.` and `..` left out), each with its own type: nothing is
/// followed. Regular files come with their `lstat`; an entry removed meanwhile is left out.
pub(crate) fn entries(dir: OwnedFd) -> io::Result<Vec<Entry>> {
    let mut listing = Dir::new(dir)?;
    let mut out = Vec::new();
    while let Some(entry) = listing.next() {
        let entry = entry?;
        let Some(name) = utf8(entry.file_name()) else {
            continue;
        };
        if name == "." || name == ".." {
            continue;
        }
        let mut file_type = entry.file_type();
        let mut stat = None;
        if matches!(file_type, FileType::RegularFile | FileType::Unknown) {
            let Some(found) = stat_at(listing.fd()?, &name)? else {
                continue; // removed meanwhile
            };
            file_type = self::file_type(&found);
            stat = Some(found);
        }
        out.push(Entry {
            name,
            file_type,
            stat,
        });
    }
    Ok(out)
}

fn utf8(name: &CStr) -> Option<String> {
    name.to_str().ok().map(str::to_string)
}

/// Opens the dir `name` inside `dir` without following a link; `None` when it is not a dir
/// any more (removed, or swapped for something else meanwhile).
pub(crate) fn open_child_dir(dir: impl AsFd, name: &str) -> io::Result<Option<OwnedFd>> {
    match private::open_at(dir, Path::new(name), OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => Ok(Some(fd)),
        Err(e)
            if matches!(
                Errno::from_io_error(&e),
                Some(Errno::NOENT | Errno::LOOP | Errno::NOTDIR)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Deletes the regular file `file` in `dir` (`name`: its name in the store); an absent one
/// is no error, anything else there is refused and kept.
pub(crate) fn delete_file(dir: impl AsFd, file: &str, name: &str) -> io::Result<bool> {
    let dir = dir.as_fd();
    match stat_at(dir, file)? {
        None => Ok(false),
        Some(stat) if file_type(&stat) == FileType::RegularFile => {
            match rustix::fs::unlinkat(dir, file, AtFlags::empty()) {
                Ok(()) => Ok(true),
                Err(Errno::NOENT) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
        Some(stat) => Err(not_regular(name, kind_of(file_type(&stat)))),
    }
}
