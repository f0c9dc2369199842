//! One module per command family: the view of each result (a wrapper that says how it is
//! shown) and the lines etcdctl or etcdutl would print for it.

pub mod access;
pub mod data_dir;
pub mod downgrade;
pub mod endpoint;
pub mod k8s;
pub mod kv;
pub mod maintenance;
pub mod member;
pub mod offline;
pub mod pki;
pub mod platform;
pub mod quorum;
pub mod snapshot;
pub mod snapshot_etcdutl;
pub mod usage;
pub mod watch;
