//! The workflow layer of etcdops: every multi-step operation that the `etcdops` CLI and the
//! Ansible collection's shim both run, as one library call with a typed request (serde and
//! schemars, so a module's arguments deserialize straight into it and its argument spec is
//! generated from it) and a serde result. The guards live here,
//! inside the operations that change things: a caller cannot forget the OpenShift operator
//! guard or the quorum checks, whichever front-end (or program) it is.
//!
//! The library types the workflows take and return are re-exported by concern (`client`,
//! `kv`, `snapshot`, `kubernetes`, ...), so a program needs this one dependency; no lower
//! crate is re-exported whole (`scripts/test` checks that the front-ends depend on nothing else).
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

pub mod access;
pub mod backup_before;
pub mod check;
pub mod downgrade;
pub mod error;
pub mod guard;
pub mod host_files;
pub mod kv;
pub mod maintenance;
pub mod member;
pub mod platform;
pub mod quorum;
pub mod snapshot;
pub mod usage;
pub mod wait;

pub use error::{Error, Result, hint_of, is_transient, kind_of};
/// What kind of failure an error is (read with [`kind_of`]).
pub use etcd_common::ErrorKind;

pub mod client {
    //! Connecting to etcd: the cluster configuration (endpoints, TLS, credentials, timeouts,
    //! `ETCDCTL_*`), the [`Client`] handle every workflow takes, and the client's errors.
    pub use etcd_core::Error as ClientError;
    pub use etcd_core::{
        Client, ClusterConfig, ConnectionOptions, PasswordSource, ResponseHeader, Secret, Targets,
        parse_duration, redact_urls,
    };
}

pub mod lease {
    //! Leases, read only: the list and each lease's time to live and keys
    //! (`client.leases()`).
    pub use etcd_core::{LeaseId, LeaseList, LeaseTimeToLive, Leases};
}

pub mod endpoint {
    //! Each endpoint's health, status, KV hash and version, as `etcdctl endpoint` reports them
    //! (`client.endpoints()`, `client.maintenance().version()`).
    pub use etcd_core::{
        EndpointHashKv, EndpointHealth, EndpointStatus, Endpoints, HashKvReport, HealthReport,
        Severity, StatusReport, VersionReport, is_3_6_or_later, is_release_3_4,
        is_release_at_least, own_version,
    };
}

pub mod pki {
    //! A cluster's certificate authority and its members' certificates.
    pub use crate::host_files::{ensure_ca, ensure_member_certificate};
    pub use etcd_host::{CaRequest, CertificateResult, MemberCertRequest, RENEW_BEFORE_DAYS};
}

pub mod server_config {
    //! etcd's own configuration file for a member (`--config-file`), the DNS SRV records the
    //! member needs, and the error of both.
    pub use crate::host_files::write_server_config;
    pub use etcd_host::Error as HostError;
    pub use etcd_host::{
        ClusterState, CompactionMode, LogLevel, ServerConfig, ServerConfigRequest,
        TransportSecurity, srv_records,
    };
}

pub mod data_dir {
    //! A member's data dir read offline (its db and WAL), and the WAL tail adoption that a
    //! forced new cluster needs.
    pub use crate::host_files::adopt_wal_tail;
    pub use etcd_data::{
        DataDirInspection, DbMember, InspectError, SnapPosition, TailAdoption, inspect_data_dir,
    };
}

pub mod kubernetes {
    //! Kubernetes and OpenShift knowledge: the platform a host runs, static pods, encryption at
    //! rest, and Kubernetes objects decoded from etcd.
    pub use crate::host_files::{encryption_config, static_pod};
    pub use etcd_k8s::{
        ConfigStep, DEFAULT_MAX_OBJECTS, DecodedValue, EncryptionConfigRequest,
        EncryptionConfigResult, EncryptionReport, EncryptionStatusRequest, K8sError, K8sGetRequest,
        KeyMaterial, KeySecret, NewKey, NewKeyRequest, PlatformInfo, PlatformRequest, PodState,
        Provider, StaticPodRequest, StaticPodResult, Storage, detect_platform, encryption_status,
        encryption_status_offline, k8s_get, new_encryption_key,
    };
}

pub mod store {
    //! Where backups live: a local dir or an object store, and how to reach it.
    pub use etcd_store::{LockMode, ObjectLock, StoreError, StoreOptions, parse_size};
}

pub mod hints {
    //! The next step an error suggests, rendered in each front-end's own words
    //! (`--move-aside` on the command line, `move_aside: true` in a module).
    pub use etcd_common::{Hint, OptionId, OptionKind, Style, options, with_hint};
}

pub mod files {
    //! Files created private from birth (0600, in the creating call), for output that can hold
    //! etcd data.
    pub use etcd_common::private::create_new_file;
}
