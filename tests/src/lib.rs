//! The end-to-end test harness: real etcd clusters (3.4.23 or 3.5.1, chosen by
//! `ETCDOPS_TEST_ETCD`), generated certificates, a real DNS server for SRV discovery, and a
//! runner for the `etcdops` binary. The tests themselves live in `tests/e2e/`.
//!
//! ```no_run
//! use etcdops_tests::{Cluster, Security, etcdops};
//!
//! let cluster = Cluster::start(3, Security::Tls);
//! let mut args = cluster.client_flags();
//! args.extend(["endpoint".into(), "health".into(), "-w".into(), "json".into()]);
//! let run = etcdops(&args, &[]);
//! assert_eq!(run.code, 0, "{run}");
//! ```
#![deny(missing_docs)]
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

mod ansible;
mod certs;
mod cli;
mod compat;
mod dns;
mod etcd;
mod kubelet;
mod nodes;
mod ports;
mod resolver;
mod standalone;
mod stores;
mod supervised;
mod versions;

pub use ansible::{
    Collection, PlaybookRun, SpawnedPlaybook, ansible_venv, role_playbook, shim_path,
};
pub use certs::{Certs, HostCert, jwt_auth_token};
pub use cli::{Run, args, etcdops, etcdops_path};
pub use compat::{SideBySide, assert_same_json, assert_same_output, remove_pointer, side_by_side};
pub use dns::{DnsServer, SrvRecord};
pub use etcd::{
    Cluster, EtcdVersion, Member, ROOT_PASSWORD, Security, Standalone, block_on, spawn_logged,
};
pub use kubelet::{
    Kubelet, PodSpec, install_kubeadm_pki, kubeadm_image, kubeadm_manifest, under,
    write_kubeadm_manifest, write_openshift_tree,
};
pub use nodes::{Membership, NodeCluster};
pub use ports::free_port;
pub use resolver::SystemDns;
pub use standalone::{StandaloneHost, StandaloneHosts};
pub use stores::{
    AZURITE_ACCOUNT, AZURITE_KEY, AzuriteServer, FakeGcsServer, HttpResponse, S3Server,
    azurite_blob_path, fake_gcs_server_path, http_request, moto_server_path, xml_values,
};
pub use supervised::{SupervisedCluster, SupervisedMember, supervisor_path};
pub use versions::{in_slow_tier, skip_on_etcd_3_4};
