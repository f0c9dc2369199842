//! Creating the files and dirs that can hold etcd data (backups, copies, spools, staging
//! and work dirs): private from the `open`/`mkdir` call on. Files are created 0600 and dirs
//! 0700 in the system call itself, whatever the umask, so no other user can open one while
//! it is written (an `open` that succeeds keeps its access after a later `chmod`).
//!
//! This module is the one place in the workspace that may call the creating functions of
//! `std::fs`, `tempfile` and `rustix` (`clippy.toml`'s `disallowed-methods` points
//! everything else here). Code that keeps a mode on purpose (a restored data dir keeps the
//! old dir's, a data-dir copy its source's) creates private here and widens the finished
//! file or dir afterwards.
//!
//! It also holds the other side of the same rule for stores: opening an existing entry
//! relative to a directory descriptor without following a symbolic link ([`open_at`]).
#![allow(clippy::disallowed_methods)]

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// The mode of every file created here: read and write for the owner only.
pub const FILE_MODE: u32 = 0o600;
/// The mode of every dir created here: the owner only.
pub const DIR_MODE: u32 = 0o700;

/// `mkdir(path, 0700)`: fails when `path` exists.
pub fn create_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new().mode(DIR_MODE).create(path)
}

/// `mkdir -p` with every dir it creates 0700; dirs that exist are left as they are.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// Options that create a new file, mode 0600, open for writing: `O_CREAT|O_EXCL`, which
/// never follows a symbolic link and never opens an existing file. Add `read(true)` or
/// `custom_flags` as needed, then `open`.
pub fn new_file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(FILE_MODE);
    options
}

/// Creates the new file `path` (0600, write only); fails when anything is at `path`.
pub fn create_new_file(path: &Path) -> io::Result<File> {
    new_file_options().open(path)
}

/// An unnamed file in `dir` (0600): `O_TMPFILE` where the filesystem has it (`true`: it can
/// be given a name later with `linkat`), else a file created 0600 under a random name and
/// removed at once (`false`).
pub fn unnamed_file_in(dir: &Path) -> io::Result<(File, bool)> {
    match rustix::fs::openat(
        rustix::fs::CWD,
        dir,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(FILE_MODE),
    ) {
        Ok(fd) => Ok((File::from(fd), true)),
        // No O_TMPFILE on this filesystem (or kernel): a named file, removed at once.
        Err(_) => Ok((temp_file_in(dir, ".tmp", 6)?.into_file(), false)),
    }
}

/// A new dir `<prefix><random>` in `dir`, 0700, removed with everything in it when the
/// value is dropped.
pub fn temp_dir_in(dir: &Path, prefix: &str) -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(Permissions::from_mode(DIR_MODE))
        .tempdir_in(dir)
}

/// A new file `<prefix><random_len random characters>` in `dir`, 0600, open for reading
/// and writing, removed when dropped unless persisted.
pub fn temp_file_in(
    dir: &Path,
    prefix: &str,
    random_len: usize,
) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(prefix)
        .rand_bytes(random_len)
        .permissions(Permissions::from_mode(FILE_MODE))
        .tempfile_in(dir)
}

/// `mkdirat(dir, name, 0700)`.
pub fn create_dir_at(dir: impl AsFd, name: &Path) -> io::Result<()> {
    rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(DIR_MODE)).map_err(io::Error::from)
}

/// Creates the new file `name` in the dir `dir` (0600, write only, `O_EXCL`: never through
/// a symbolic link, never an existing file).
pub fn create_new_file_at(dir: impl AsFd, name: &Path) -> io::Result<File> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(FILE_MODE))
        .map(File::from)
        .map_err(io::Error::from)
}

/// Opens the existing entry `name` in the dir `dir` with `flags` and `O_NOFOLLOW`: a
/// symbolic link there fails with `ELOOP` instead of being followed. Creating flags
/// (`O_CREAT`, `O_TMPFILE`) are refused: files are created by the functions above.
pub fn open_at(dir: impl AsFd, name: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    // O_TMPFILE holds O_DIRECTORY's bit: only all of its bits mean a temporary file.
    if flags.contains(OFlags::CREATE) || flags.contains(OFlags::TMPFILE) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "open_at does not create files",
        ));
    }
    rustix::fs::openat(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::sync::Mutex;

    /// The umask is the process's: tests that change it run one at a time.
    static UMASK: Mutex<()> = Mutex::new(());

    /// Runs `f` with the umask 000, the umask under which a default `open` or `mkdir` makes
    /// a file anyone may read and write.
    fn with_umask_000<T>(f: impl FnOnce() -> T) -> T {
        let _one = UMASK.lock().unwrap_or_else(|e| e.into_inner());
        let old = rustix::process::umask(Mode::empty());
        let result = f();
        rustix::process::umask(old);
        result
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn every_helper_creates_private_under_umask_000() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        with_umask_000(|| {
            // Each result is looked at right after its call, before anything else runs.
            create_dir(&r.join("d")).unwrap();
            assert_eq!(mode(&r.join("d")), 0o700, "create_dir");
            create_dir_all(&r.join("a/b/c")).unwrap();
            for dir in ["a", "a/b", "a/b/c"] {
                assert_eq!(mode(&r.join(dir)), 0o700, "create_dir_all: {dir}");
            }
            create_new_file(&r.join("f")).unwrap();
            assert_eq!(mode(&r.join("f")), 0o600, "create_new_file");
            new_file_options().read(true).open(r.join("g")).unwrap();
            assert_eq!(mode(&r.join("g")), 0o600, "new_file_options");
            let (file, _) = unnamed_file_in(r).unwrap();
            assert_eq!(file.metadata().unwrap().mode() & 0o7777, 0o600, "unnamed");
            let temp = temp_dir_in(r, ".work-").unwrap();
            assert_eq!(mode(temp.path()), 0o700, "temp_dir_in");
            let named = temp_file_in(r, ".part-", 6).unwrap();
            assert_eq!(mode(named.path()), 0o600, "temp_file_in");
            let dir = File::open(r).unwrap();
            create_dir_at(&dir, Path::new("at")).unwrap();
            assert_eq!(mode(&r.join("at")), 0o700, "create_dir_at");
            create_new_file_at(&dir, Path::new("at-file")).unwrap();
            assert_eq!(mode(&r.join("at-file")), 0o600, "create_new_file_at");
        });
    }

    #[test]
    fn nothing_existing_is_opened_for_creation_and_no_link_is_followed() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::write(r.join("secret"), b"secret").unwrap();
        std::os::unix::fs::symlink(r.join("secret"), r.join("link")).unwrap();
        let dir = File::open(r).unwrap();
        for name in ["secret", "link"] {
            let err = create_new_file(&r.join(name)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{name}");
            let err = create_new_file_at(&dir, Path::new(name)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{name}");
        }
        assert_eq!(std::fs::read(r.join("secret")).unwrap(), b"secret");
        open_at(&dir, Path::new("secret"), OFlags::RDONLY).unwrap();
        let err = open_at(&dir, Path::new("link"), OFlags::RDONLY).unwrap_err();
        assert_eq!(
            err.raw_os_error(),
            Some(rustix::io::Errno::LOOP.raw_os_error())
        );
        for flags in [
            OFlags::WRONLY | OFlags::CREATE,
            OFlags::RDWR | OFlags::TMPFILE,
        ] {
            let err = open_at(&dir, Path::new("new"), flags).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{flags:?}");
        }
        assert!(!r.join("new").exists());
        std::fs::create_dir(r.join("sub")).unwrap();
        open_at(&dir, Path::new("sub"), OFlags::RDONLY | OFlags::DIRECTORY).unwrap();
    }
}
