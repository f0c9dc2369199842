//! Connecting to etcd and every cluster operation, for the `etcdops` CLI, the `etcd.core`
//! Ansible modules and any Rust tool that operates etcd.
//!
//! Connection settings are one type, [`ClusterConfig`], built in one place from
//! [`ConnectionOptions`] (flags, module arguments) with etcdctl's `ETCDCTL_*` environment
//! variables as the fallback. A [`Client`] built from it is the one entry: a handle on the
//! cluster that dials each endpoint once, on first use, and reuses that connection for every
//! later call on it (and on its clones). Each operation is one async method that takes a typed
//! request and returns a serde-serializable result, so every front-end prints the same data:
//! `client.check(..)` and `client.cluster_view()` on the client itself, the rest grouped by
//! concern in sub-clients that borrow it: [`Client::kv`], [`Client::leases`],
//! [`Client::members`], [`Client::endpoints`], [`Client::maintenance`], [`Client::auth`],
//! [`Client::users`], [`Client::roles`] (`client.members().list()`,
//! `client.maintenance().defrag(..)`). A multi-step operation such as `check` or a rolling
//! defrag runs all its steps over one `Client`, so it connects once per member; operations
//! aimed at a member connect to exactly that member ([`EndpointClient`]). Options are typed
//! requests with builders ([`CompactRequest::new(target).physical(true)`](CompactRequest)),
//! never positional booleans.
//!
//! Long reads are streams the caller drives: [`Kv::get_stream`]'s pages and
//! [`Kv::watch_batches`]' batches are `futures::Stream`s (dropping one cancels the read),
//! their summary read from the stream once it ended.
//!
//! ```no_run
//! use etcd_core::{Client, ConnectionOptions, Targets};
//!
//! # async fn example() -> Result<(), etcd_core::Error> {
//! let config = ConnectionOptions {
//!     endpoints: Some(vec!["https://10.0.0.1:2379".into()]),
//!     cacert: Some("/etc/kubernetes/pki/etcd/ca.crt".into()),
//!     ..Default::default()
//! }
//! .or_env()?
//! .build()?;
//! let client = Client::new(config);
//! let report = client.endpoints().health(Targets::Cluster).await?;
//! for row in &report.endpoints {
//!     println!("{} healthy={}", row.endpoint, row.health);
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod address;
mod auth;
mod check;
mod client;
#[cfg(test)]
mod client_tests;
mod cluster;
mod config;
mod connect;
#[cfg(test)]
mod connect_tests;
mod discovery;
mod downgrade;
mod endpoint;
mod error;
mod guard;
mod header;
mod history;
mod id;
mod kv;
mod lease;
mod maintenance;
mod member;
mod membership;
mod produced;
mod snapshot;
mod tls;
mod watch;
mod watch_stream;

pub use auth::{
    Auth, AuthChange, AuthStatus, KUBERNETES_PREFIXES, KeyRange, PasswordSource, PermissionGrant,
    PermissionInfo, PermissionKind, RoleInfo, RoleList, Roles, UserInfo, UserList, Users,
};
pub use check::{
    CertificateRole, CertificateStatus, CheckOptions, CheckReport, DEFAULT_QUOTA_BYTES, Finding,
    Latency, MemberMetrics, Severity, certificates_finding, churn_finding, latency_finding,
    parse_metrics,
};
pub use client::Client;
pub use cluster::{ClusterView, MemberState, MemberStatus};
pub use config::{
    ClientIdentity, ClusterConfig, ConnectionOptions, Credentials, DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_DIAL_TIMEOUT, DEFAULT_ENDPOINT, ENV_VARS, PemSource, Secret, SrvDiscovery, TlsSettings,
    split_list,
};
pub use connect::EndpointClient;
pub use discovery::{discover_endpoints, srv_record_names};
pub use downgrade::{DowngradeAction, DowngradeRequest, DowngradeResult};
pub use endpoint::{
    EndpointHashKv, EndpointHealth, EndpointStatus, Endpoints, HashKvReport, HealthReport,
    StatusReport,
};
pub use error::{Error, Result};
pub use etcd_common::parse_duration;
pub use etcd_common::write_file_atomically;
pub use etcd_common::{redact_endpoint, redact_urls};
pub use guard::{Change, ChangeGuard, Unguarded};
pub use header::ResponseHeader;
pub use history::KeyHistory;
pub use id::MemberId;
pub use kv::{
    Encoding, GetPage, GetRequest, GetStream, GetSummary, KeyValueView, Kv, KvBytes,
    RevisionBounds, SECRET_PREFIXES, SortBy, encode_bytes, is_kubernetes_secret, prefix_end,
    show_value,
};
pub use lease::{LeaseId, LeaseInfo, LeaseList, LeaseTimeToLive, Leases};
pub use maintenance::{
    Alarm, AlarmDisarmRequest, AlarmDisarmResult, CompactRequest, CompactResult, CompactTarget,
    DefragReport, DefragStep, Maintenance, MemberVersion, MoveLeaderRequest, MoveLeaderResult,
    VersionReport, versions,
};
pub use member::{Member, MemberList, Members, Targets};
// etcdctl compatibility of the endpoint, member list, alarm list and version commands.
pub use endpoint::{DowngradeInfo, is_3_6_or_later, is_release_3_4, is_release_at_least};
pub use maintenance::{API_VERSION, AlarmList, own_version};
pub use member::{Consistency, MemberListOptions};
pub use membership::{
    LEARNER_READY_PERCENT, MemberAddRequest, MemberAddResult, MemberChangeResult, MemberQuery,
    find_member, match_listed, match_member,
};
pub use snapshot::{SnapshotChunk, SnapshotStream};
pub use watch::{
    EventKind, KeyEvent, WatchBatch, WatchBatchStream, WatchBound, WatchRequest, WatchSummary,
};
pub use watch_stream::WatchStream;
