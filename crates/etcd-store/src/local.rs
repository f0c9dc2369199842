//! The local-directory backend (also for NFS mounts).
//!
//! Uploads go to `.NAME.partial-<random>` in the final directory, are fsynced, renamed to
//! `NAME` and the directory is fsynced, so a crash leaves either nothing or the whole object
//! under `NAME`, and the rename never crosses file systems. Directories are created 0700 and
//! files 0600: backups hold every Kubernetes Secret.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::map_io;
use crate::{ByteStream, ObjectInfo, Result, StoreError};

/// Marker in the names of uploads in progress; such files are never listed.
const PARTIAL_MARKER: &str = ".partial-";

/// Chunk size when streaming a file out.
const READ_CHUNK: usize = 256 * 1024;

/// A local directory.
#[derive(Debug, Clone)]
pub(crate) struct LocalStore {
    pub root: PathBuf,
    pub url: String,
}

/// Whether a file name is a temporary upload name.
pub(crate) fn is_partial_name(file_name: &str) -> bool {
    file_name.starts_with('.') && file_name.contains(PARTIAL_MARKER)
}

/// The file name a temporary upload file `.NAME.partial-<hex>` was to be published as
/// (`NAME`); `None` for any other name, also for `.partial-` names this crate does not write.
pub(crate) fn partial_target(file_name: &str) -> Option<&str> {
    let (target, random) = file_name.strip_prefix('.')?.rsplit_once(PARTIAL_MARKER)?;
    let ours = !target.is_empty()
        && !random.is_empty()
        && random
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    ours.then_some(target)
}

fn to_rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn info_from_metadata(name: &str, meta: &std::fs::Metadata) -> ObjectInfo {
    ObjectInfo {
        name: name.to_string(),
        size: meta.len(),
        last_modified: to_rfc3339(meta.modified().unwrap_or(UNIX_EPOCH)),
    }
}

/// A name for a temporary file next to `final_path`, unique in this process and very
/// likely across processes (pid, time, counter); creation uses `create_new` anyway.
fn temp_path(final_path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let file_name = final_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let random = format!("{:x}{:08x}{n:x}", std::process::id(), nanos);
    final_path.with_file_name(format!(".{file_name}{PARTIAL_MARKER}{random}"))
}

fn create_dirs(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates a new temporary file (0600) next to `final_path`, creating missing directories.
fn create_temp(final_path: &Path) -> io::Result<(std::fs::File, PathBuf)> {
    if let Some(parent) = final_path.parent() {
        create_dirs(parent)?;
    }
    loop {
        let temp = temp_path(final_path);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
        {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// fsync a directory, so a rename in it is durable (matters on NFS and after power loss).
fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Renames `temp` to `final_path` and fsyncs the directory.
fn publish(temp: &Path, final_path: &Path) -> io::Result<std::fs::Metadata> {
    // The file's metadata before it is renamed (the same file after): once under its final
    // name another process may delete it, which is then the caller's to notice (a save checks
    // its object after writing the manifest), not a failed upload.
    let meta = std::fs::metadata(temp)?;
    std::fs::rename(temp, final_path)?;
    if let Some(parent) = final_path.parent() {
        sync_dir(parent)?;
    }
    Ok(meta)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)))
}

impl LocalStore {
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub async fn begin_upload(&self, name: &str) -> Result<LocalUpload> {
        let final_path = self.path_of(name);
        let fp = final_path.clone();
        let (file, temp) = blocking(move || create_temp(&fp))
            .await
            .map_err(|e| map_io(e, "upload", &self.url, name, &final_path))?;
        Ok(LocalUpload {
            file: Some(tokio::fs::File::from_std(file)),
            temp,
            final_path,
            size: 0,
            name: name.to_string(),
            store: self.url.clone(),
        })
    }

    pub async fn put_small(&self, name: &str, bytes: Bytes) -> Result<ObjectInfo> {
        let final_path = self.path_of(name);
        let fp = final_path.clone();
        let meta = blocking(move || {
            let (mut file, temp) = create_temp(&fp)?;
            let result = (|| {
                file.write_all(&bytes)?;
                file.sync_all()?;
                drop(file);
                publish(&temp, &fp)
            })();
            if result.is_err() {
                let _ = std::fs::remove_file(&temp);
            }
            result
        })
        .await
        .map_err(|e| map_io(e, "upload", &self.url, name, &final_path))?;
        Ok(info_from_metadata(name, &meta))
    }

    pub async fn get_small(&self, name: &str) -> Result<Bytes> {
        let path = self.path_of(name);
        tokio::fs::read(&path)
            .await
            .map(Bytes::from)
            .map_err(|e| map_io(e, "download", &self.url, name, &path))
    }

    pub async fn get(&self, name: &str) -> Result<(ObjectInfo, ByteStream)> {
        let path = self.path_of(name);
        let err = |e| map_io(e, "download", &self.url, name, &path);
        let file = tokio::fs::File::open(&path).await.map_err(err)?;
        let meta = file.metadata().await.map_err(err)?;
        if !meta.is_file() {
            return Err(StoreError::NotFound {
                store: self.url.clone(),
                name: name.to_string(),
            });
        }
        let info = info_from_metadata(name, &meta);
        let (store, owned_name) = (self.url.clone(), name.to_string());
        let stream = futures::stream::unfold(Some(file), move |file| {
            let (store, name, path) = (store.clone(), owned_name.clone(), path.clone());
            async move {
                let mut file = file?;
                let mut buf = BytesMut::zeroed(READ_CHUNK);
                match file.read(&mut buf).await {
                    Ok(0) => None,
                    Ok(n) => {
                        buf.truncate(n);
                        Some((Ok(buf.freeze()), Some(file)))
                    }
                    Err(e) => Some((Err(map_io(e, "download", &store, &name, &path)), None)),
                }
            }
        });
        Ok((info, stream.boxed()))
    }

    pub async fn head(&self, name: &str) -> Result<Option<ObjectInfo>> {
        let path = self.path_of(name);
        match tokio::fs::metadata(&path).await {
            Ok(meta) if meta.is_file() => Ok(Some(info_from_metadata(name, &meta))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(map_io(e, "head", &self.url, name, &path)),
        }
    }

    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let root = self.root.clone();
        let owned_prefix = prefix.to_string();
        let mut found = blocking(move || list_blocking(&root, &owned_prefix, false))
            .await
            .map_err(|e| map_io(e, "list", &self.url, prefix, &self.root))?;
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }

    /// Whether an upload could write here, writing nothing: the root, or the nearest
    /// existing directory above it, is a directory with write and search access.
    pub async fn probe(&self) -> Result<()> {
        let root = self.root.clone();
        let checked = blocking(move || {
            let mut dir = root.as_path();
            loop {
                match std::fs::metadata(dir) {
                    Ok(meta) if meta.is_dir() => {
                        let access = rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK;
                        return rustix::fs::access(dir, access).map_err(io::Error::from);
                    }
                    // What creating the directories would answer.
                    Ok(_) => return Err(io::Error::from(rustix::io::Errno::NOTDIR)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => match dir.parent() {
                        Some(parent) => dir = parent,
                        None => return Err(e),
                    },
                    Err(e) => return Err(e),
                }
            }
        })
        .await;
        checked.map_err(|e| map_io(e, "upload", &self.url, "a new backup", &self.root))
    }

    /// Whether the store's directory exists (a file there is an error).
    pub async fn exists(&self) -> Result<bool> {
        match tokio::fs::metadata(&self.root).await {
            Ok(meta) if meta.is_dir() => Ok(true),
            Ok(_) => Err(map_io(
                io::Error::other("not a directory"),
                "list",
                &self.url,
                "",
                &self.root,
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(map_io(e, "list", &self.url, "", &self.root)),
        }
    }

    /// The directories directly inside `folder` (`""`: the root), as names relative to the
    /// root, sorted. Symbolic links are not followed, as in [`LocalStore::list`].
    pub async fn list_folders(&self, folder: &str) -> Result<Vec<String>> {
        let dir = if folder.is_empty() {
            self.root.clone()
        } else {
            self.path_of(folder)
        };
        let rel = folder.to_string();
        let listed = blocking(move || {
            let mut out = Vec::new();
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
                Err(e) => return Err(e),
            };
            for entry in entries {
                let entry = entry?;
                let Ok(file_name) = entry.file_name().into_string() else {
                    continue;
                };
                if entry.file_type()?.is_dir() {
                    out.push(if rel.is_empty() {
                        file_name
                    } else {
                        format!("{rel}/{file_name}")
                    });
                }
            }
            Ok(out)
        })
        .await
        .map_err(|e| map_io(e, "list", &self.url, folder, &self.root))?;
        let mut listed = listed;
        listed.sort();
        Ok(listed)
    }

    /// The temporary files of uploads never completed whose names start with `prefix`.
    pub async fn list_unfinished(&self, prefix: &str) -> Result<Vec<crate::UnfinishedUpload>> {
        let root = self.root.clone();
        let owned_prefix = prefix.to_string();
        let found = blocking(move || list_blocking(&root, &owned_prefix, true))
            .await
            .map_err(|e| map_io(e, "list", &self.url, prefix, &self.root))?;
        let mut out: Vec<crate::UnfinishedUpload> = found
            .into_iter()
            .filter_map(|info| {
                let (dir, file) = match info.name.rsplit_once('/') {
                    Some((dir, file)) => (Some(dir), file),
                    None => (None, info.name.as_str()),
                };
                let target = partial_target(file)?;
                let target = match dir {
                    Some(dir) => format!("{dir}/{target}"),
                    None => target.to_string(),
                };
                Some(crate::UnfinishedUpload {
                    target,
                    info: info.clone(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        Ok(out)
    }

    /// Removes the temporary file of an upload never completed (`name` as listed).
    pub async fn discard_unfinished(&self, name: &str) -> Result<()> {
        self.delete(name).await
    }

    /// `rmdir`: fails (and so keeps it) when anything is in it.
    pub async fn remove_empty_folder(&self, folder: &str) -> Result<bool> {
        let path = self.path_of(folder);
        match tokio::fs::remove_dir(&path).await {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound
                        | io::ErrorKind::DirectoryNotEmpty
                        | io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(false);
            }
            Err(e) => return Err(map_io(e, "delete", &self.url, folder, &path)),
        }
        if let Some(parent) = path.parent().map(Path::to_path_buf) {
            blocking(move || sync_dir(&parent))
                .await
                .map_err(|e| map_io(e, "delete", &self.url, folder, &path))?;
        }
        Ok(true)
    }

    pub async fn delete(&self, name: &str) -> Result<()> {
        let path = self.path_of(name);
        match tokio::fs::remove_file(&path).await {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(map_io(e, "delete", &self.url, name, &path)),
        }
        if let Some(parent) = path.parent().map(Path::to_path_buf) {
            blocking(move || sync_dir(&parent))
                .await
                .map_err(|e| map_io(e, "delete", &self.url, name, &path))?;
        }
        Ok(())
    }
}

/// Every regular file under `root` whose relative name starts with `prefix`: the temporary
/// upload files when `partial`, else every other file. Only the directories that can hold
/// matches are walked.
fn list_blocking(root: &Path, prefix: &str, partial: bool) -> io::Result<Vec<ObjectInfo>> {
    let mut out = Vec::new();
    // Start at the deepest directory the prefix names completely.
    let start_rel = match prefix.rfind('/') {
        Some(i) => &prefix[..i],
        None => "",
    };
    let start = if start_rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(start_rel)
    };
    let mut stack = vec![(start, start_rel.to_string())];
    while let Some((dir, rel)) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let Ok(file_name) = entry.file_name().into_string() else {
                continue; // not UTF-8: not a name this crate wrote
            };
            let name = if rel.is_empty() {
                file_name.clone()
            } else {
                format!("{rel}/{file_name}")
            };
            let file_type = entry.file_type()?;
            if file_type.is_dir() {
                // Descend only where names can still match the prefix.
                let dir_prefix = format!("{name}/");
                if dir_prefix.starts_with(prefix) || prefix.starts_with(&dir_prefix) {
                    stack.push((entry.path(), name));
                }
                continue;
            }
            if is_partial_name(&file_name) != partial || !name.starts_with(prefix) {
                continue;
            }
            // Follows symlinks to files, like `get` does.
            match std::fs::metadata(entry.path()) {
                Ok(meta) if meta.is_file() => out.push(info_from_metadata(&name, &meta)),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {} // deleted meanwhile
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// An upload to a local directory in progress.
#[derive(Debug)]
pub(crate) struct LocalUpload {
    file: Option<tokio::fs::File>,
    temp: PathBuf,
    final_path: PathBuf,
    size: u64,
    name: String,
    store: String,
}

impl LocalUpload {
    fn err(&self, e: io::Error) -> StoreError {
        map_io(e, "upload", &self.store, &self.name, &self.final_path)
    }

    pub async fn write(&mut self, chunk: Bytes) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Err(self.err(io::Error::other("upload already finished")));
        };
        let result = file.write_all(&chunk).await;
        match result {
            Ok(()) => {
                self.size += chunk.len() as u64;
                Ok(())
            }
            Err(e) => Err(self.err(e)),
        }
    }

    pub async fn complete(mut self) -> Result<ObjectInfo> {
        let Some(mut file) = self.file.take() else {
            return Err(self.err(io::Error::other("upload already finished")));
        };
        let synced = async {
            file.flush().await?;
            file.sync_all().await
        }
        .await;
        drop(file);
        if let Err(e) = synced {
            let _ = tokio::fs::remove_file(&self.temp).await;
            return Err(self.err(e));
        }
        let (temp, final_path) = (self.temp.clone(), self.final_path.clone());
        match blocking(move || publish(&temp, &final_path)).await {
            Ok(meta) => {
                // Published: nothing left for Drop to clean.
                self.temp = PathBuf::new();
                Ok(info_from_metadata(&self.name, &meta))
            }
            Err(e) => {
                let _ = tokio::fs::remove_file(&self.temp).await;
                self.temp = PathBuf::new();
                let e = if e.kind() == io::ErrorKind::NotFound {
                    io::Error::new(
                        e.kind(),
                        "its temporary file was removed by another process before it was \
                         complete (a prune with a short orphan grace?)",
                    )
                } else {
                    e
                };
                Err(self.err(e))
            }
        }
    }

    pub async fn abort(mut self) -> Result<()> {
        drop(self.file.take());
        let temp = std::mem::take(&mut self.temp);
        match tokio::fs::remove_file(&temp).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(map_io(e, "abort", &self.store, &self.name, &temp)),
        }
    }
}

impl Drop for LocalUpload {
    fn drop(&mut self) {
        // Neither completed nor aborted: best-effort removal of the temporary file.
        drop(self.file.take());
        if !self.temp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
