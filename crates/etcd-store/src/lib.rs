//! Where backup bytes live, knowing nothing of etcd: a local directory, an NFS-mounted
//! directory, S3 (and compatible), GCS and Azure, chosen by URL, with streaming uploads in
//! bounded memory and publish-when-complete semantics.
//!
//! A [`Store`] is opened from a URL (`/var/backups/etcd`, `file:///mnt/nfs/etcd`,
//! `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix`) and [`StoreOptions`]
//! (flags, then environment). Names inside a store are relative, `/`-separated paths.
//!
//! | URL | backend |
//! |---|---|
//! | `/var/backups/etcd`, `file:///mnt/nfs/etcd` | local or NFS-mounted directory |
//! | `s3://bucket/prefix` | Amazon S3 or S3-compatible (endpoint from options) |
//! | `gs://bucket/prefix` | Google Cloud Storage |
//! | `az://container/prefix`, `azure://container/prefix` | Azure Blob Storage |
//!
//! Credentials never go in the URL (such URLs are refused); they come from
//! [`StoreOptions`], usually [`StoreOptions::from_env`].
//!
//! Nothing half-written ever looks complete: an [`Upload`] becomes visible under its final
//! name only in [`Upload::complete`] (local: written under a temporary name, fsynced, renamed,
//! directory fsynced; object stores: multipart upload completed). A dropped or aborted upload
//! leaves nothing under the final name.
//!
//! ```no_run
//! use etcd_store::{Store, StoreOptions};
//! use bytes::Bytes;
//!
//! # async fn example() -> Result<(), etcd_store::StoreError> {
//! let store = Store::open("s3://backups/etcd", &StoreOptions::from_env())?;
//! let mut upload = store.begin_upload("cluster-1/snapshot.db.zst").await?;
//! upload.write(Bytes::from_static(b"...")).await?;
//! let info = upload.complete().await?;
//! println!("stored {} bytes", info.size);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod error;
mod local;
mod local_fs;
mod location;
mod lock;
mod object;
mod options;
mod parse;
mod upload;

use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;
use serde::Serialize;

pub use error::{Result, StoreError, scrub};
pub use etcd_common::parse_size;
pub use local_fs::NotRegularEntry;
pub use location::Location;
pub use lock::{LockMode, ObjectLock};
pub use object::dropped_uploads_settled;
pub use options::{DEFAULT_PART_SIZE, MAX_PART_SIZE, MIN_S3_PART_SIZE, StoreOptions};
pub use parse::{StoreKind, StoreLocation, parse_store_url, split_object_url};
pub use upload::Upload;

use local::LocalStore;
use object::ObjectBackend;

/// A stream of an object's bytes, read in chunks (bounded memory).
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, StoreError>> + Send>>;

/// An object in a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectInfo {
    /// Name relative to the store's root.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time, UTC, RFC 3339 (`2024-05-01T12:00:00Z`).
    pub last_modified: String,
}

/// What an upload that never completed left behind (a killed process): on a local store the
/// temporary file `.NAME.partial-<hex>` beside the final name. Object stores list none here
/// (object_store cannot list open multipart uploads): a bucket lifecycle rule that aborts
/// incomplete multipart uploads after a day removes those.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnfinishedUpload {
    /// The temporary object as listed (its `name` is what [`Store::discard_unfinished`] takes).
    #[serde(flatten)]
    pub info: ObjectInfo,
    /// The name it was to be published as.
    pub target: String,
}

/// A backup destination opened from a URL. Cheap to clone (clones share connections).
#[derive(Debug, Clone)]
pub struct Store {
    url: String,
    kind: StoreKind,
    backend: Arc<Backend>,
}

#[derive(Debug)]
enum Backend {
    Local(LocalStore),
    Object(ObjectBackend),
}

/// Checks an object name: a relative, `/`-separated path without empty, `.` or `..`
/// segments, control characters, or the temporary-upload pattern `.NAME.partial-*`.
pub(crate) fn validate_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if name.starts_with('/') {
        return Err("names are relative to the store; remove the leading '/'".into());
    }
    if name.chars().any(|c| c.is_control() || c == '\\') {
        return Err("names may not contain control characters or '\\'".into());
    }
    for segment in name.split('/') {
        match segment {
            "" => return Err("empty path segment ('//' or a trailing '/')".into()),
            "." | ".." => return Err(format!("'{segment}' segments are not allowed")),
            s if local::is_partial_name(s) => {
                return Err("names like '.NAME.partial-*' are reserved for uploads".into());
            }
            _ => {}
        }
    }
    Ok(())
}

impl Store {
    /// Opens the store a URL names. Fails on an unknown scheme, credentials in the URL, or
    /// bad options (e.g. a part size below 5 MiB for S3). No network access happens here:
    /// a missing bucket or refused credentials show on the first operation.
    pub fn open(url: &str, options: &StoreOptions) -> Result<Store> {
        if let Some((option, reason)) = options.env_errors.first() {
            return Err(error::invalid_setting(option, reason.clone()));
        }
        let location = parse_store_url(url)?;
        let canonical = location.canonical_url();
        let kind = location.kind();
        let backend = match location {
            StoreLocation::Local { dir } => Backend::Local(LocalStore {
                root: dir,
                url: canonical.clone(),
            }),
            StoreLocation::Object {
                kind,
                bucket,
                prefix,
            } => Backend::Object(ObjectBackend::open(
                kind, &bucket, &prefix, &canonical, options,
            )?),
        };
        Ok(Store {
            url: canonical,
            kind,
            backend: Arc::new(backend),
        })
    }

    /// The store's URL, without credentials, for messages and manifests: the absolute
    /// directory for local stores, `s3://bucket/prefix` (`gs://`, `az://`) otherwise.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The backend.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// Whether `other` is this same store under another name: for local dirs, the same
    /// directory once symlinks and `..` are resolved (`/b/../a`, a link to `a`); otherwise the
    /// same URL. Two names for one store must never be used as two stores (the second's
    /// retention would delete the first's backups).
    pub fn same_place_as(&self, other: &Store) -> bool {
        match (&*self.backend, &*other.backend) {
            (Backend::Local(a), Backend::Local(b)) => {
                local::resolved(&a.root) == local::resolved(&b.root)
            }
            _ => self.url.trim_end_matches('/') == other.url.trim_end_matches('/'),
        }
    }

    fn check(&self, name: &str) -> Result<()> {
        validate_name(name).map_err(|reason| StoreError::InvalidName {
            name: name.to_string(),
            reason,
        })
    }

    /// Starts a streaming upload to `name`; nothing is visible under `name` until
    /// [`Upload::complete`]. Local: creates missing directories (0700) and a temporary
    /// file (0600) beside the final one. Object stores: starts a multipart upload, so a
    /// missing bucket or refused credentials show here.
    pub async fn begin_upload(&self, name: &str) -> Result<Upload> {
        self.check(name)?;
        match &*self.backend {
            Backend::Local(s) => s.begin_upload(name).await.map(Upload::local),
            Backend::Object(s) => s.begin_upload(name).await.map(Upload::object),
        }
    }

    /// Writes a small object (a manifest) atomically: it is either absent or complete.
    /// Local: temporary file, fsync, rename, directory fsync. Object stores: a single PUT.
    /// An existing object of that name is replaced.
    pub async fn put_small(&self, name: &str, bytes: Bytes) -> Result<ObjectInfo> {
        self.check(name)?;
        match &*self.backend {
            Backend::Local(s) => s.put_small(name, bytes).await,
            Backend::Object(s) => s.put_small(name, bytes).await,
        }
    }

    /// Reads a whole small object (a manifest) into memory.
    pub async fn get_small(&self, name: &str) -> Result<Bytes> {
        self.check(name)?;
        match &*self.backend {
            Backend::Local(s) => s.get_small(name).await,
            Backend::Object(s) => s.get_small(name).await,
        }
    }

    /// Streams an object's bytes. A local store reads only a regular file below its root,
    /// reached without following a symbolic link ([`StoreError::NotRegular`] otherwise).
    pub async fn get(&self, name: &str) -> Result<(ObjectInfo, ByteStream)> {
        self.check(name)?;
        match &*self.backend {
            Backend::Local(s) => s.get(name).await,
            Backend::Object(s) => s.get(name).await,
        }
    }

    /// Metadata of an object, or `None` when absent. In a local store, an entry of that name
    /// that is not a regular file (a symbolic link, a FIFO, a dir), or a path through a linked
    /// dir, is [`StoreError::NotRegular`]: neither an object nor a free name.
    pub async fn head(&self, name: &str) -> Result<Option<ObjectInfo>> {
        self.check(name)?;
        match &*self.backend {
            Backend::Local(s) => s.head(name).await,
            Backend::Object(s) => s.head(name).await,
        }
    }

    /// Every complete object whose name starts with `prefix` (`""` for all), in name order.
    /// Uploads still in progress (temporary names) are not listed. The prefix is a string
    /// prefix: `"cluster-1/snap"` matches `cluster-1/snapshot.db`.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        match &*self.backend {
            Backend::Local(s) => s.list(prefix).await,
            Backend::Object(s) => s.list(prefix).await,
        }
    }

    /// Whether the store exists: a local store's directory (an error when something else is
    /// there); object stores always say yes (a prefix cannot be told apart from an empty one,
    /// and a missing bucket shows on the first operation).
    pub async fn exists(&self) -> Result<bool> {
        match &*self.backend {
            Backend::Local(s) => s.exists().await,
            Backend::Object(_) => Ok(true),
        }
    }

    /// Checks, writing nothing, that an upload could be made here, for a dry run to fail as
    /// the upload would: a local store's directory, or the nearest directory above it (an
    /// upload creates what is missing), is a directory this process may write in; an object
    /// store's bucket or container answers a listing (it exists, is reachable and takes the
    /// credentials). What only a write tells (credentials that may read but not write, a full
    /// disk) shows on the write.
    pub async fn probe(&self) -> Result<()> {
        match &*self.backend {
            Backend::Local(s) => s.probe().await,
            Backend::Object(s) => s.list_folders("").await.map(|_| ()),
        }
    }

    /// The folders directly inside `folder` (`""` for the store's root), as names relative to
    /// the store (`"etcd-abc"`, `"etcd-abc/x.deltas"`), in name order. Nothing below them is
    /// read, so nested stores cost nothing.
    pub async fn list_folders(&self, folder: &str) -> Result<Vec<String>> {
        if !folder.is_empty() {
            self.check(folder)?;
        }
        match &*self.backend {
            Backend::Local(s) => s.list_folders(folder).await,
            Backend::Object(s) => s.list_folders(folder).await,
        }
    }

    /// The entries directly inside `folder` (`""` for the store's root) of a local store that
    /// are neither regular files nor dirs (symbolic links, FIFOs, sockets, devices), in name
    /// order: never read, copied or deleted, listed only to be reported. Object stores have
    /// none.
    pub async fn list_not_regular(&self, folder: &str) -> Result<Vec<NotRegularEntry>> {
        if !folder.is_empty() {
            self.check(folder)?;
        }
        match &*self.backend {
            Backend::Local(s) => s.list_not_regular(folder).await,
            Backend::Object(_) => Ok(Vec::new()),
        }
    }

    /// The name a temporary upload file `.NAME.partial-<hex>` (a file name) was to be
    /// published as (`NAME`); `None` for any other name.
    pub fn upload_target(file_name: &str) -> Option<&str> {
        local::partial_target(file_name)
    }

    /// Uploads never completed (their process was killed) whose temporary names start with
    /// `prefix`, in name order: local temporary files only (see [`UnfinishedUpload`]).
    pub async fn list_unfinished(&self, prefix: &str) -> Result<Vec<UnfinishedUpload>> {
        match &*self.backend {
            Backend::Local(s) => s.list_unfinished(prefix).await,
            Backend::Object(_) => Ok(Vec::new()),
        }
    }

    /// Removes what an upload never completed left (`name`: an [`UnfinishedUpload`]'s
    /// `info.name`). Only temporary names this crate writes are accepted.
    pub async fn discard_unfinished(&self, name: &str) -> Result<()> {
        let (dir, file) = match name.rsplit_once('/') {
            Some((dir, file)) => (Some(dir), file),
            None => (None, name),
        };
        let bad = |reason: &str| StoreError::InvalidName {
            name: name.to_string(),
            reason: reason.to_string(),
        };
        if local::partial_target(file).is_none() {
            return Err(bad("not the temporary name of an upload"));
        }
        if let Some(dir) = dir {
            self.check(dir)?;
        }
        if name.chars().any(|c| c.is_control() || c == '\\') || name.starts_with('/') {
            return Err(bad("not a relative name"));
        }
        match &*self.backend {
            Backend::Local(s) => s.discard_unfinished(name).await,
            Backend::Object(_) => Ok(()),
        }
    }

    /// Removes `folder` (a name relative to the store) when it is an empty directory of a
    /// local store, as deleting its last object leaves it; returns whether it did. A folder
    /// that holds anything (a file written meanwhile included), or is absent, stays and is no
    /// error. Object stores have no folders: nothing to do. The caller decides which folders
    /// are its own to remove.
    pub async fn remove_empty_folder(&self, folder: &str) -> Result<bool> {
        let folder = folder.trim_end_matches('/');
        self.check(folder)?;
        match &*self.backend {
            Backend::Local(s) => s.remove_empty_folder(folder).await,
            Backend::Object(_) => Ok(false),
        }
    }

    /// Whether [`Store::lock`] can set a retention here: S3 stores only (a bucket created
    /// with Object Lock enabled takes it; others refuse it on the first lock).
    pub fn supports_object_lock(&self) -> bool {
        match &*self.backend {
            Backend::Local(_) => false,
            Backend::Object(s) => s.supports_object_lock(),
        }
    }

    /// Sets an S3 Object Lock retention on the current version of `name` (PutObjectRetention):
    /// until `lock.retain_until` that version cannot be deleted (compliance), or only by an
    /// identity allowed to bypass governance. A DELETE without a version id still succeeds on
    /// such a bucket (a delete marker hides the object, the locked version stays): a caller
    /// that locks must remember the date and not delete before it. Other stores refuse it
    /// ([`StoreError::InvalidOption`] naming `object_lock_mode`), as does a bucket without
    /// Object Lock.
    pub async fn lock(&self, name: &str, lock: &ObjectLock) -> Result<()> {
        self.check(name)?;
        match &*self.backend {
            Backend::Local(_) => Err(error::lock_unsupported(&self.url)),
            Backend::Object(s) => s.lock(name, lock).await,
        }
    }

    /// Deletes an object; deleting an absent object is not an error. A local store deletes
    /// only a regular file: anything else of that name is refused ([`StoreError::NotRegular`])
    /// and kept.
    pub async fn delete(&self, name: &str) -> Result<()> {
        self.check(name)?;
        match &*self.backend {
            Backend::Local(s) => s.delete(name).await,
            Backend::Object(s) => s.delete(name).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_dir_named_through_dot_dot_or_a_symlink_is_the_same_store() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("a")).unwrap();
        std::os::unix::fs::symlink(real.join("a"), real.join("link")).unwrap();
        let open = |path: std::path::PathBuf| {
            Store::open(&path.display().to_string(), &StoreOptions::default()).unwrap()
        };
        let first = open(real.join("a"));
        for same in [real.join("b/../a"), real.join("link"), real.join("a/./")] {
            assert!(
                first.same_place_as(&open(same.clone())),
                "{}",
                same.display()
            );
        }
        for other in [real.join("a/sub"), real.join("b"), real.join("link/new/x")] {
            assert!(
                !first.same_place_as(&open(other.clone())),
                "{}",
                other.display()
            );
        }
        assert_eq!(
            local::resolved(&real.join("new/../a/./y")),
            real.join("a/y"),
            "a path not there yet"
        );
    }

    #[test]
    fn names_are_validated() {
        for good in [
            "a",
            "cluster-1/snapshot.db.zst",
            "a/b/c.json",
            ".hidden",
            "x.partial-1",
        ] {
            assert_eq!(validate_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "/abs",
            "a//b",
            "a/",
            "./a",
            "a/../b",
            "a\\b",
            "a\nb",
            "d/.snap.db.partial-1a2b",
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn open_refuses_small_s3_parts_and_env_errors() {
        let options = StoreOptions {
            part_size: 1024 * 1024,
            ..StoreOptions::default()
        };
        let err = Store::open("s3://bucket/x", &options).unwrap_err();
        assert!(
            matches!(&err, StoreError::InvalidOption(e) if e.is_about(error::PART_SIZE)),
            "{err:?}"
        );
        assert!(err.to_string().contains("5 MiB"), "{err}");
        // Azure has no minimum part size.
        let store = Store::open(
            "az://container/x",
            &StoreOptions {
                azure_use_emulator: true,
                ..options
            },
        )
        .unwrap();
        assert_eq!(store.kind(), StoreKind::Azure);

        let options =
            StoreOptions::from_lookup(|v| (v == "ETCDOPS_PART_SIZE").then(|| "big".into()));
        let err = Store::open("/tmp/x", &options).unwrap_err();
        let StoreError::InvalidOption(invalid) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(invalid.subject, "store option ETCDOPS_PART_SIZE");
    }

    #[test]
    fn open_refuses_plain_http_endpoints_unless_allowed() {
        let mut options = StoreOptions {
            s3_endpoint: Some("http://127.0.0.1:9000".into()),
            s3_path_style: true,
            ..StoreOptions::default()
        };
        let err = Store::open("s3://b", &options).unwrap_err();
        assert!(err.to_string().contains("is plain http"), "{err}");
        assert_eq!(
            etcd_common::Hinted::hint(&err).map(|h| h.render(etcd_common::Style::Cli)),
            Some("--allow-http".to_string())
        );
        options.allow_http = true;
        let store = Store::open("s3://b/p/", &options).unwrap();
        assert_eq!(store.url(), "s3://b/p");
    }

    #[test]
    fn store_debug_shows_no_credentials() {
        let options = StoreOptions {
            extra: vec![
                ("aws_access_key_id".into(), "AKIADEBUGTEST".into()),
                ("aws_secret_access_key".into(), "debug-secret-value".into()),
            ],
            ..StoreOptions::default()
        };
        let store = Store::open("s3://bucket/p", &options).unwrap();
        let debug = format!("{store:?}");
        assert!(!debug.contains("debug-secret-value"), "{debug}");
        assert!(!debug.contains("AKIADEBUGTEST"), "{debug}");
        assert!(debug.contains("s3://bucket/p"), "{debug}");
    }

    #[test]
    fn store_futures_are_send() {
        fn assert_send<T: Send>(_: &T) {}
        let store = Store::open("/tmp/etcd-store-send-check", &StoreOptions::default()).unwrap();
        assert_send(&store.begin_upload("a"));
        assert_send(&store.put_small("a", Bytes::new()));
        assert_send(&store.get_small("a"));
        assert_send(&store.get("a"));
        assert_send(&store.head("a"));
        assert_send(&store.list(""));
        assert_send(&store.delete("a"));
    }

    #[tokio::test]
    async fn a_probe_refuses_what_an_upload_would_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let open = |path: std::path::PathBuf| {
            Store::open(path.to_str().unwrap(), &StoreOptions::default()).unwrap()
        };
        // Missing directories are what an upload creates: fine, and still missing after.
        let missing = dir.path().join("a/b/c");
        open(missing.clone()).probe().await.unwrap();
        assert!(!dir.path().join("a").exists());
        // A file where a directory must be: refused, as the upload is.
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        for store in [open(file.clone()), open(file.join("below"))] {
            let probed = store.probe().await.unwrap_err().to_string();
            assert!(probed.contains("Not a directory"), "{probed}");
            let upload = store.begin_upload("x/y").await.map(|_| ()).unwrap_err();
            assert!(upload.to_string().contains("Not a directory"), "{upload}");
        }
    }

    #[tokio::test]
    async fn upload_futures_are_send() {
        fn assert_send<T: Send>(_: &T) {}
        let dir = std::env::temp_dir().join(format!("etcd-store-send-{}", std::process::id()));
        let store = Store::open(dir.to_str().unwrap(), &StoreOptions::default()).unwrap();
        let mut upload = store.begin_upload("x").await.unwrap();
        assert_send(&upload.write(Bytes::new()));
        upload.abort().await.unwrap();
        let _ = std::fs::remove_dir_all(dir);
    }
}
