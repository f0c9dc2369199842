//! Where backup bytes live, knowing nothing of etcd: a local directory, an NFS-mounted
//! directory, S3 (and compatible), GCS and Azure, chosen by URL, with streaming uploads in
//! bounded memory and publish-when-complete semantics.
//!
//! A [`Store`] is opened from a URL (`/var/backups/etcd`, `file:///mnt/nfs/etcd`,
//! `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix`) and [`StoreOptions`]
//! (flags, then environment). Names inside a store are relative, `/`-separated paths.
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

// The helper implementing this crate fills in the modules; the public API below is the
// contract etcd-snapshot codes against. Keep signatures stable; add, don't change.

use std::pin::Pin;

use bytes::Bytes;
use futures::Stream;
use serde::Serialize;

/// A stream of an object's bytes, read in chunks (bounded memory).
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, StoreError>> + Send>>;

/// Everything that can go wrong with a store. Messages never contain credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The URL could not be understood.
    #[error("invalid store URL '{url}': {reason}")]
    InvalidUrl {
        /// The URL (credentials removed).
        url: String,
        /// What was wrong and what to do.
        reason: String,
    },
    /// An option is missing or has a bad value.
    #[error("invalid store option {option}: {reason}")]
    InvalidOption {
        /// The flag or variable.
        option: &'static str,
        /// What was wrong and what to do.
        reason: String,
    },
    /// No object of that name.
    #[error("no object '{name}' in {store}")]
    NotFound {
        /// The store URL.
        store: String,
        /// The object name.
        name: String,
    },
    /// The bucket or container does not exist.
    #[error("bucket or container '{bucket}' does not exist at {store}; create it first")]
    MissingBucket {
        /// The store URL.
        store: String,
        /// Bucket or container name.
        bucket: String,
    },
    /// The store refused the credentials.
    #[error("{store} refused the credentials: {reason}")]
    Auth {
        /// The store URL.
        store: String,
        /// What the store said (credentials removed).
        reason: String,
    },
    /// The store could not be reached.
    #[error("cannot reach {store}: {reason}")]
    Unreachable {
        /// The store URL.
        store: String,
        /// The cause.
        reason: String,
    },
    /// The local disk is full.
    #[error("no space left on the device holding '{path}'; free space or choose another destination")]
    NoSpace {
        /// The file being written.
        path: String,
    },
    /// Any other failure of an operation.
    #[error("{operation} '{name}' in {store} failed: {reason}")]
    Operation {
        /// "upload", "download", "list", "delete", ...
        operation: &'static str,
        /// The store URL.
        store: String,
        /// The object name.
        name: String,
        /// The cause.
        reason: String,
    },
}

/// Result with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Settings for opening stores: credentials and endpoints per backend, and upload tuning.
/// `Debug` never shows secrets.
#[derive(Clone, Default)]
pub struct StoreOptions {
    /// S3 endpoint URL for S3-compatible servers (MinIO, Ceph, moto); AWS when unset.
    pub s3_endpoint: Option<String>,
    /// S3 region.
    pub s3_region: Option<String>,
    /// Allow plain-http endpoints.
    pub allow_http: bool,
    /// Use path-style requests (`endpoint/bucket/key`) instead of virtual-hosted style.
    pub s3_path_style: bool,
    /// Azure: use the Azurite emulator's well-known account.
    pub azure_use_emulator: bool,
    /// Azure/GCS endpoint override (emulators).
    pub endpoint_override: Option<String>,
    /// Multipart part size in bytes (object stores); at least 5 MiB for S3.
    pub part_size: usize,
    /// Credentials and other settings as `(key, value)` pairs in object_store's config-key
    /// spelling (e.g. `aws_access_key_id`, `azure_storage_account_key`), from flags or env.
    pub extra: Vec<(String, String)>,
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("s3_endpoint", &self.s3_endpoint)
            .field("s3_region", &self.s3_region)
            .field("allow_http", &self.allow_http)
            .field("part_size", &self.part_size)
            .finish_non_exhaustive()
    }
}

impl StoreOptions {
    /// Options from the standard environment variables of each backend (AWS_*, AZURE_*,
    /// GOOGLE_*) and `ETCDOPS_*` overrides.
    pub fn from_env() -> StoreOptions {
        todo!("etcd-store helper implements")
    }
}

/// An object in a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectInfo {
    /// Name relative to the store's root.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time, UTC, RFC 3339.
    pub last_modified: String,
}

/// A backup destination opened from a URL.
#[derive(Debug, Clone)]
pub struct Store {
    _private: (),
}

impl Store {
    /// Opens the store a URL names. Fails on an unknown scheme or a backend compiled out.
    pub fn open(url: &str, options: &StoreOptions) -> Result<Store> {
        let _ = (url, options);
        todo!("etcd-store helper implements")
    }

    /// The store's URL, without credentials, for messages and manifests.
    pub fn url(&self) -> &str {
        todo!("etcd-store helper implements")
    }

    /// Starts a streaming upload to `name`; nothing is visible under `name` until
    /// [`Upload::complete`].
    pub async fn begin_upload(&self, name: &str) -> Result<Upload> {
        let _ = name;
        todo!("etcd-store helper implements")
    }

    /// Writes a small object (a manifest) atomically: it is either absent or complete.
    pub async fn put_small(&self, name: &str, bytes: Bytes) -> Result<ObjectInfo> {
        let _ = (name, bytes);
        todo!("etcd-store helper implements")
    }

    /// Reads a whole small object (a manifest) into memory.
    pub async fn get_small(&self, name: &str) -> Result<Bytes> {
        let _ = name;
        todo!("etcd-store helper implements")
    }

    /// Streams an object's bytes.
    pub async fn get(&self, name: &str) -> Result<(ObjectInfo, ByteStream)> {
        let _ = name;
        todo!("etcd-store helper implements")
    }

    /// Metadata of an object, or `None` when absent.
    pub async fn head(&self, name: &str) -> Result<Option<ObjectInfo>> {
        let _ = name;
        todo!("etcd-store helper implements")
    }

    /// Every complete object whose name starts with `prefix` (`""` for all), in name order.
    /// Uploads still in progress (temporary names) are not listed.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let _ = prefix;
        todo!("etcd-store helper implements")
    }

    /// Deletes an object; deleting an absent object is not an error.
    pub async fn delete(&self, name: &str) -> Result<()> {
        let _ = name;
        todo!("etcd-store helper implements")
    }
}

/// A streaming upload in progress. Memory is bounded by a few part sizes.
#[derive(Debug)]
pub struct Upload {
    _private: (),
}

impl Upload {
    /// Appends bytes.
    pub async fn write(&mut self, chunk: Bytes) -> Result<()> {
        let _ = chunk;
        todo!("etcd-store helper implements")
    }

    /// Makes the object visible under its final name, durably (local: fsync file, rename,
    /// fsync directory; object stores: complete the multipart upload).
    pub async fn complete(self) -> Result<ObjectInfo> {
        todo!("etcd-store helper implements")
    }

    /// Abandons the upload, removing what was written (local temp file, multipart parts).
    pub async fn abort(self) -> Result<()> {
        todo!("etcd-store helper implements")
    }
}
