//! Where backup bytes live, knowing nothing of etcd: a local directory, an NFS-mounted
//! directory, S3 (and compatible), GCS and Azure, chosen by URL, with streaming put/get/list/
//! delete and publish-when-complete semantics.
//!
//! This crate is a placeholder in the workspace until the backup issue fills it; its place in
//! the dependency graph (etcd-snapshot depends on it; it depends on no etcd crate) is fixed now.
#![deny(missing_docs)]
