//! Writing a file so that it is never seen half-written: secrets (keys, configs holding
//! keys) and configs a daemon reads at start.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A file could not be written: what was being done, to which path, and the I/O error.
#[derive(Debug, thiserror::Error)]
#[error("cannot {operation} '{}': {source}", path.display())]
pub struct FileError {
    /// What was being done ("create", "write", "rename into", "sync").
    pub operation: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

fn io(operation: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> FileError {
    let path = path.to_path_buf();
    move |source| FileError {
        operation,
        path,
        source,
    }
}

/// Writes `content` to `path` with `mode`: a temporary file beside it, created 0600 and
/// given `mode` once its content is written, fsync, rename, fsync of the directory. A
/// missing parent directory is made with mode 0700; the owner of a file being replaced is
/// kept.
pub fn write_file_atomically(
    path: &Path,
    content: &[u8],
    mode: u32,
    keep_owner_of: Option<&std::fs::Metadata>,
) -> Result<(), FileError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        crate::private::create_dir_all(&dir).map_err(io("create", &dir))?;
    }
    let file_name = path
        .file_name()
        .ok_or_else(|| {
            io("name", path)(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a file name",
            ))
        })?
        .to_string_lossy()
        .into_owned();
    // The process id keeps two writers of one file from renaming each other's temp file.
    let temp = dir.join(format!(".{file_name}.{}.etcdops-tmp", std::process::id()));
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("remove", &temp)(e)),
    }
    let mut file = crate::private::create_new_file(&temp).map_err(io("create", &temp))?;
    let written = match keep_owner_of {
        Some(meta) => std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid())),
        None => Ok(()),
    }
    .and_then(|()| file.write_all(content))
    .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(mode)))
    .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(io("write", &temp)(e));
    }
    drop(file);
    if let Err(e) = std::fs::rename(&temp, path) {
        let _ = std::fs::remove_file(&temp);
        return Err(io("rename into", path)(e));
    }
    std::fs::File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(io("sync", &dir))?;
    Ok(())
}
