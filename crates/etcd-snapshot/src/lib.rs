//! etcd snapshot streams and files: the save pipeline, the manifest type, the backup catalog
//! over `etcd-store`, the bbolt reader, snapshot status and the native restore.
//!
//! This crate is a placeholder in the workspace until the backup and restore issues fill it;
//! it already depends on `etcd-core` (connections) and `etcd-store` (destinations), as the
//! architecture requires.
#![deny(missing_docs)]

pub use etcd_core;
pub use etcd_store;
