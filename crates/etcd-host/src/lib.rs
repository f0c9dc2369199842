//! The files an etcd host holds, for members of standalone clusters: etcd's own config file
//! ([`write_server_config`], with the DNS SRV records a member needs, [`srv_records`]) and a
//! small PKI, one CA and a certificate per member ([`ensure_ca`],
//! [`ensure_member_certificate`]). Every writer is idempotent (a file changes only when its
//! content would), writes through a temporary file and a rename, keeps keys and the config
//! file mode 0600, and has a check mode that only reports. No network, no etcd client: these
//! are files on the host that runs etcd.
//!
//! ```no_run
//! use etcd_host::{
//!     CaRequest, ClusterState, MemberCertRequest, ServerConfig, ServerConfigRequest, ensure_ca,
//!     ensure_member_certificate, write_server_config,
//! };
//!
//! # fn example() -> Result<(), etcd_host::Error> {
//! let ca = CaRequest::new("/etc/etcd/pki/ca.crt", "/etc/etcd/pki/ca.key");
//! ensure_ca(&ca)?;
//! let member = MemberCertRequest {
//!     ip_addresses: vec!["10.0.0.1".parse().unwrap()],
//!     ..MemberCertRequest::new(&ca, "etcd-1", "/etc/etcd/pki/etcd-1.crt", "/etc/etcd/pki/etcd-1.key")
//! };
//! ensure_member_certificate(&member)?;
//! let config = ServerConfig {
//!     name: "etcd-1".into(),
//!     data_dir: "/var/lib/etcd".into(),
//!     listen_client_urls: vec!["http://10.0.0.1:2379".into()],
//!     listen_peer_urls: vec!["http://10.0.0.1:2380".into()],
//!     initial_cluster: vec!["etcd-1=http://10.0.0.1:2380".into()],
//!     initial_cluster_state: Some(ClusterState::New),
//!     ..Default::default()
//! };
//! let done = write_server_config(&ServerConfigRequest {
//!     path: "/etc/etcd/etcd.conf.yml".into(),
//!     config,
//!     check_mode: false,
//! })?;
//! println!("changed: {}", done.changed);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod error;
mod pki;
mod server_config;

pub use error::{Error, Result};
pub use pki::{
    CaRequest, CertificateResult, MemberCertRequest, RENEW_BEFORE_DAYS, certificate_names,
    ensure_ca, ensure_member_certificate,
};
pub use server_config::{
    ClusterState, CompactionMode, LogLevel, SERVER_CONFIG_MODE, ServerConfig, ServerConfigRequest,
    ServerConfigResult, SrvRecordSpec, TransportSecurity, srv_records, write_server_config,
};
