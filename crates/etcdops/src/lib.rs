//! The workflow layer of etcdops: every multi-step operation that the `etcdops` CLI and the
//! Ansible collection's shim both run, as one library call with a typed request (serde, so a
//! module's arguments deserialize straight into it) and a serde result. The guards live here,
//! inside the operations that change things: a caller cannot forget the OpenShift operator
//! guard or the quorum checks, whichever front-end (or program) it is.
//!
//! The crates below are re-exported, so a program needs this one dependency.
//!
//! ```no_run
//! use etcdops::guard::{Force, Guards, Operation};
//!
//! # async fn example() -> Result<(), etcdops::Error> {
//! // Refused on a host where OpenShift's cluster-etcd-operator manages etcd, unless forced.
//! let guards = Guards::on_host("/");
//! let passed = guards.check(Operation::Defrag, Force::default(), None).await?;
//! assert!(passed.warning().is_none());
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod check;
pub mod downgrade;
pub mod error;
pub mod guard;
pub mod kv;
pub mod maintenance;
pub mod member;
pub mod platform;
pub mod quorum;
pub mod snapshot;
pub mod usage;

pub use error::{Error, Result, hint_of, is_transient};

/// What every crate shares: hints, sizes, durations.
pub use etcd_common as common;
/// Connecting to etcd and every cluster operation.
pub use etcd_core as core;
/// etcd's files offline: snapshots, data dirs, the WAL.
pub use etcd_data as data;
/// Kubernetes and OpenShift knowledge.
pub use etcd_k8s as k8s;
/// Where backups live.
pub use etcd_store as store;
