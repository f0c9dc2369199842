//! The local-directory backend (also for NFS mounts).
//!
//! Uploads go to `.NAME.partial-<random>` in the final directory, are fsynced, renamed to
//! `NAME` and the directory is fsynced, so a crash leaves either nothing or the whole object
//! under `NAME`, and the rename never crosses file systems. Directories are created 0700 and
//! files 0600 in the `mkdir`/`open` call itself: backups hold every Kubernetes Secret.
//!
//! Below the root, nothing is followed ([`crate::local_fs`]): an object, a manifest or a
//! lock that is a symbolic link, a FIFO, a device or a socket, or that lies under a linked
//! dir, is never read, written through or deleted; listings report such entries
//! ([`LocalStore::list_not_regular`]).

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use etcd_common::private;
use rustix::fs::FileType;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::map_io;
use crate::local_fs::{self, NotRegularEntry, join, split};
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

/// `dir` with symlinks and `..` resolved: its longest existing ancestor canonicalized, the
/// rest joined with `.` and `..` applied as written.
pub(crate) fn resolved(dir: &Path) -> PathBuf {
    let mut existing = dir.to_path_buf();
    let mut rest = Vec::new();
    let base = loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            break real;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => {
                // Nothing of it exists (or `..` ends it): resolve what is written.
                rest.clear();
                break PathBuf::new();
            }
        }
    };
    let mut out = base;
    let tail: PathBuf = rest.iter().rev().collect();
    let path = if out.as_os_str().is_empty() {
        dir.to_path_buf()
    } else {
        tail
    };
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
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

fn info_from_stat(name: &str, stat: &rustix::fs::Stat) -> ObjectInfo {
    let modified = u64::try_from(stat.st_mtime)
        .map(|secs| UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap_or(UNIX_EPOCH);
    ObjectInfo {
        name: name.to_string(),
        size: u64::try_from(stat.st_size).unwrap_or_default(),
        last_modified: to_rfc3339(modified),
    }
}

/// A name for a temporary file beside the file `file_name`, unique in this process and very
/// likely across processes (pid, time, counter); creation uses `O_EXCL` anyway.
fn temp_name(file_name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let random = format!("{:x}{:08x}{n:x}", std::process::id(), nanos);
    format!(".{file_name}{PARTIAL_MARKER}{random}")
}

/// A new temporary file (0600) beside `name`'s place, its dirs created (0700) where missing:
/// the dir it is in (held, so the publication renames in that very dir), the file and its
/// name.
fn create_temp(root: &Path, name: &str) -> io::Result<(Arc<OwnedFd>, std::fs::File, String)> {
    let (dirs, file) = split(name);
    let dir = local_fs::open_dir(root, &dirs, true)?
        .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
    loop {
        let temp = temp_name(file);
        match private::create_new_file_at(&dir, Path::new(&temp)) {
            Ok(created) => return Ok((Arc::new(dir), created, temp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Renames the temporary file `temp` to `file` in `dir` and fsyncs the dir.
fn publish(dir: &OwnedFd, temp: &str, file: &str) -> io::Result<()> {
    rustix::fs::renameat(dir, temp, dir, file)?;
    rustix::fs::fsync(dir)?;
    Ok(())
}

/// Removes the temporary file `temp` in `dir`, best effort.
fn remove_temp(dir: &OwnedFd, temp: &str) {
    let _ = rustix::fs::unlinkat(dir, temp, rustix::fs::AtFlags::empty());
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)))
}

/// Opens the object `name` below `root` for reading, following nothing; `None` when absent.
fn open_object(root: &Path, name: &str) -> io::Result<Option<std::fs::File>> {
    let (dirs, file) = split(name);
    match local_fs::open_dir(root, &dirs, false)? {
        Some(dir) => local_fs::open_file(&dir, file, name),
        None => Ok(None),
    }
}

impl LocalStore {
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub async fn begin_upload(&self, name: &str) -> Result<LocalUpload> {
        let final_path = self.path_of(name);
        let (root, owned, store) = (self.root.clone(), name.to_string(), self.url.clone());
        let path = final_path.clone();
        // The upload is made whole on the blocking thread: when the caller is cancelled
        // meanwhile (a stop that abandons a save), the finished task's output is dropped
        // there, and the upload's `Drop` removes its temporary file; a bare file and name
        // handed back would be left behind.
        blocking(move || {
            let (dir, file, temp) = create_temp(&root, &owned)?;
            Ok(LocalUpload {
                file: Some(tokio::fs::File::from_std(file)),
                dir,
                temp,
                final_path: path,
                size: 0,
                name: owned,
                store,
            })
        })
        .await
        .map_err(|e| map_io(e, "upload", &self.url, name, &final_path))
    }

    pub async fn put_small(&self, name: &str, bytes: Bytes) -> Result<ObjectInfo> {
        let final_path = self.path_of(name);
        let (root, owned) = (self.root.clone(), name.to_string());
        let meta = blocking(move || {
            let (dir, mut file, temp) = create_temp(&root, &owned)?;
            let result = (|| {
                file.write_all(&bytes)?;
                file.sync_all()?;
                let meta = file.metadata()?;
                drop(file);
                publish(&dir, &temp, split(&owned).1)?;
                Ok(meta)
            })();
            if result.is_err() {
                remove_temp(&dir, &temp);
            }
            result
        })
        .await
        .map_err(|e| map_io(e, "upload", &self.url, name, &final_path))?;
        Ok(info_from_metadata(name, &meta))
    }

    pub async fn get_small(&self, name: &str) -> Result<Bytes> {
        let path = self.path_of(name);
        let (root, owned) = (self.root.clone(), name.to_string());
        blocking(move || {
            let mut file = open_object(&root, &owned)?
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            Ok(Bytes::from(bytes))
        })
        .await
        .map_err(|e| map_io(e, "download", &self.url, name, &path))
    }

    pub async fn get(&self, name: &str) -> Result<(ObjectInfo, ByteStream)> {
        let path = self.path_of(name);
        let err = |e| map_io(e, "download", &self.url, name, &path);
        let (root, owned) = (self.root.clone(), name.to_string());
        let opened = blocking(move || {
            let file = open_object(&root, &owned)?;
            file.map(|f| f.metadata().map(|meta| (f, meta))).transpose()
        })
        .await
        .map_err(err)?;
        let Some((file, meta)) = opened else {
            return Err(StoreError::NotFound {
                store: self.url.clone(),
                name: name.to_string(),
            });
        };
        let info = info_from_metadata(name, &meta);
        let file = tokio::fs::File::from_std(file);
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

    /// The object's metadata; `None` when absent. An entry that is not a regular file (or a
    /// path through a symbolic link) is an error ([`StoreError::NotRegular`]), not an absence:
    /// a caller must not take the name as free, nor the entry as an object.
    pub async fn head(&self, name: &str) -> Result<Option<ObjectInfo>> {
        let path = self.path_of(name);
        let (root, owned) = (self.root.clone(), name.to_string());
        blocking(move || {
            let (dirs, file) = split(&owned);
            let Some(dir) = local_fs::open_dir(&root, &dirs, false)? else {
                return Ok(None);
            };
            match local_fs::stat_at(&dir, file)? {
                None => Ok(None),
                Some(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
                    Ok(Some(info_from_stat(&owned, &stat)))
                }
                Some(_) => local_fs::open_file(&dir, file, &owned).map(|_| None),
            }
        })
        .await
        .map_err(|e| map_io(e, "head", &self.url, name, &path))
    }

    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let mut found = self.scan(prefix).await?.objects;
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }

    /// The entries directly inside `folder` (`""`: the root) that are neither regular files
    /// nor dirs (symbolic links, FIFOs, sockets, devices), in name order: never read, only
    /// reported.
    pub async fn list_not_regular(&self, folder: &str) -> Result<Vec<NotRegularEntry>> {
        let (root, rel) = (self.root.clone(), folder.to_string());
        let mut found = blocking(move || {
            let steps: Vec<&str> = rel.split('/').filter(|s| !s.is_empty()).collect();
            let Some(dir) = local_fs::open_dir(&root, &steps, false)? else {
                return Ok(Vec::new());
            };
            Ok(local_fs::entries(dir)?
                .into_iter()
                .filter(|e| !matches!(e.file_type, FileType::Directory | FileType::RegularFile))
                .map(|e| NotRegularEntry {
                    name: join(&rel, &e.name),
                    kind: local_fs::kind_of(e.file_type),
                })
                .collect::<Vec<_>>())
        })
        .await
        .map_err(|e| map_io(e, "list", &self.url, folder, &self.root))?;
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }

    async fn scan(&self, prefix: &str) -> Result<Scan> {
        let root = self.root.clone();
        let owned_prefix = prefix.to_string();
        blocking(move || scan(&root, &owned_prefix))
            .await
            .map_err(|e| map_io(e, "list", &self.url, prefix, &self.root))
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
    /// root, sorted. Symbolic links are not followed (nor listed), as in [`LocalStore::list`].
    pub async fn list_folders(&self, folder: &str) -> Result<Vec<String>> {
        let (root, rel) = (self.root.clone(), folder.to_string());
        let listed = blocking(move || {
            let steps: Vec<&str> = rel.split('/').filter(|s| !s.is_empty()).collect();
            let Some(dir) = local_fs::open_dir(&root, &steps, false)? else {
                return Ok(Vec::new());
            };
            Ok(local_fs::entries(dir)?
                .into_iter()
                .filter(|e| e.file_type == FileType::Directory)
                .map(|e| join(&rel, &e.name))
                .collect::<Vec<_>>())
        })
        .await
        .map_err(|e| map_io(e, "list", &self.url, folder, &self.root))?;
        let mut listed = listed;
        listed.sort();
        Ok(listed)
    }

    /// The temporary files of uploads never completed whose names start with `prefix`.
    pub async fn list_unfinished(&self, prefix: &str) -> Result<Vec<crate::UnfinishedUpload>> {
        let found = self.scan(prefix).await?.partial;
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

    /// `rmdir`: fails (and so keeps it) when anything is in it; a link is never removed.
    pub async fn remove_empty_folder(&self, folder: &str) -> Result<bool> {
        let path = self.path_of(folder);
        let (root, owned) = (self.root.clone(), folder.to_string());
        blocking(move || {
            let (dirs, last) = split(&owned);
            let parent = match local_fs::open_dir(&root, &dirs, false) {
                Ok(Some(parent)) => parent,
                Ok(None) => return Ok(false),
                Err(e) if is_not_regular(&e) => return Ok(false),
                Err(e) => return Err(e),
            };
            match rustix::fs::unlinkat(&parent, last, rustix::fs::AtFlags::REMOVEDIR) {
                Ok(()) => {}
                Err(
                    rustix::io::Errno::NOENT
                    | rustix::io::Errno::NOTEMPTY
                    | rustix::io::Errno::EXIST
                    | rustix::io::Errno::NOTDIR,
                ) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
            rustix::fs::fsync(&parent)?;
            Ok(true)
        })
        .await
        .map_err(|e| map_io(e, "delete", &self.url, folder, &path))
    }

    /// Deletes the regular file `name`; an absent one is no error. Anything else under that
    /// name (a symbolic link, a FIFO, a dir), or a path through a linked dir, is refused and
    /// kept: etcdops deletes only what it wrote.
    pub async fn delete(&self, name: &str) -> Result<()> {
        let path = self.path_of(name);
        let (root, owned) = (self.root.clone(), name.to_string());
        blocking(move || {
            let (dirs, file) = split(&owned);
            let Some(dir) = local_fs::open_dir(&root, &dirs, false)? else {
                return Ok(());
            };
            if local_fs::delete_file(&dir, file, &owned)? {
                rustix::fs::fsync(&dir)?;
            }
            Ok(())
        })
        .await
        .map_err(|e| map_io(e, "delete", &self.url, name, &path))
    }
}

fn is_not_regular(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.is::<local_fs::NotRegular>())
}

/// What a walk below a prefix found.
#[derive(Default)]
struct Scan {
    /// Regular files with names that are not temporary upload names.
    objects: Vec<ObjectInfo>,
    /// Regular files with temporary upload names.
    partial: Vec<ObjectInfo>,
}

/// Every regular file under `root` whose relative name starts with `prefix`. Only the
/// directories that can hold matches are walked, and no link is followed: anything that is
/// not a regular file or a dir is left out ([`LocalStore::list_not_regular`] reports it).
fn scan(root: &Path, prefix: &str) -> io::Result<Scan> {
    let mut out = Scan::default();
    // Start at the deepest directory the prefix names completely.
    let start_rel = match prefix.rfind('/') {
        Some(i) => &prefix[..i],
        None => "",
    };
    let steps: Vec<&str> = start_rel.split('/').filter(|s| !s.is_empty()).collect();
    let Some(start) = local_fs::open_dir(root, &steps, false)? else {
        return Ok(out);
    };
    let mut stack = vec![(start, start_rel.to_string())];
    while let Some((dir, rel)) = stack.pop() {
        let held = dir.as_fd().try_clone_to_owned()?;
        for entry in local_fs::entries(dir)? {
            let name = join(&rel, &entry.name);
            match entry.file_type {
                FileType::Directory => {
                    // Descend only where names can still match the prefix.
                    let dir_prefix = format!("{name}/");
                    if (dir_prefix.starts_with(prefix) || prefix.starts_with(&dir_prefix))
                        && let Some(sub) = local_fs::open_child_dir(&held, &entry.name)?
                    {
                        stack.push((sub, name));
                    }
                }
                _ if !name.starts_with(prefix) => {}
                FileType::RegularFile => {
                    let Some(stat) = entry.stat else { continue };
                    let info = info_from_stat(&name, &stat);
                    if is_partial_name(&entry.name) {
                        out.partial.push(info);
                    } else {
                        out.objects.push(info);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// An upload to a local directory in progress.
#[derive(Debug)]
pub(crate) struct LocalUpload {
    file: Option<tokio::fs::File>,
    /// The dir the temporary file is in: the publication renames in it.
    dir: Arc<OwnedFd>,
    /// The temporary file's name in `dir`; empty once published or removed.
    temp: String,
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
            file.sync_all().await?;
            // The file's metadata before it is renamed (the same file after): once under its
            // final name another process may delete it, which is then the caller's to notice
            // (a save checks its object after writing the manifest), not a failed upload.
            file.metadata().await
        }
        .await;
        drop(file);
        let meta = match synced {
            Ok(meta) => meta,
            Err(e) => {
                remove_temp(&self.dir, &self.temp);
                self.temp = String::new();
                return Err(self.err(e));
            }
        };
        let (dir, temp) = (self.dir.clone(), self.temp.clone());
        let file_name = split(&self.name).1.to_string();
        match blocking(move || publish(&dir, &temp, &file_name)).await {
            Ok(()) => {
                // Published: nothing left for Drop to clean.
                self.temp = String::new();
                Ok(info_from_metadata(&self.name, &meta))
            }
            Err(e) => {
                remove_temp(&self.dir, &self.temp);
                self.temp = String::new();
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
        match rustix::fs::unlinkat(&*self.dir, temp.as_str(), rustix::fs::AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(map_io(
                e.into(),
                "abort",
                &self.store,
                &self.name,
                &self.final_path.with_file_name(&temp),
            )),
        }
    }
}

impl Drop for LocalUpload {
    fn drop(&mut self) {
        // Neither completed nor aborted: best-effort removal of the temporary file.
        drop(self.file.take());
        if !self.temp.is_empty() {
            remove_temp(&self.dir, &self.temp);
        }
    }
}
