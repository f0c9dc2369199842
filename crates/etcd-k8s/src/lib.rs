//! Kubernetes knowledge for etcd operations: where kube-apiserver keeps its objects, how a
//! stored value is encrypted (provider and key name) or not, the encryption-at-rest audit
//! (live, paged; or offline from a snapshot, with no etcd started), kube-apiserver's
//! `EncryptionConfiguration` (generate, and key rotation one step at a time), decoding of
//! stored values for diagnostics, and what fills the db per resource and namespace (live
//! [`usage_live`]; offline through [`KubernetesGrouping`] and etcd-data's usage).
//!
//! Each operation is one function with a typed request (deserializable from Ansible module
//! arguments) and a serde-serializable result, shared by the `etcdops` CLI and the `etcd.core`
//! Ansible modules. No result, diff or error carries key material or Secret data, except
//! [`new_encryption_key`], whose purpose is to hand out a new key once.
//!
//! ```no_run
//! use etcd_core::ConnectionOptions;
//! use etcd_k8s::{EncryptionStatusRequest, encryption_status};
//! use etcd_snapshot::Identities;
//! use etcd_store::StoreOptions;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ConnectionOptions::default().or_env()?.build()?;
//! let request = EncryptionStatusRequest {
//!     resources: vec!["secrets".into(), "configmaps".into()],
//!     ..Default::default()
//! };
//! let report = encryption_status(&config, &StoreOptions::from_env(), &request, &Identities::none())
//!     .await?;
//! println!("{} of {} objects encrypted", report.encrypted, report.total);
//! for object in &report.objects {
//!     println!("plaintext: {:?}/{}", object.namespace, object.name);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Classifying a value needs no cluster:
//!
//! ```
//! use etcd_k8s::{Storage, classify};
//!
//! assert_eq!(
//!     classify(b"k8s:enc:aescbc:v1:key1:..."),
//!     Storage::Encrypted { provider: "aescbc".into(), key_name: "key1".into() },
//! );
//! assert!(!classify(b"k8s\0\x0a\x04...").is_encrypted());
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod config;
mod decode;
mod error;
mod force_new_cluster;
mod guard;
mod openshift_backup;
mod platform;
mod prefix;
mod scan;
mod static_pod;
mod usage;
mod value;

pub use config::{
    API_VERSION, ConfigDiff, ConfigStep, EncryptionConfigRequest, EncryptionConfigResult,
    FILE_MODE, KEY_BYTES, KIND, KeyMaterial, KeySecret, NewKey, NewKeyRequest, Provider,
    encryption_config, new_encryption_key,
};
pub use decode::{DecodedValue, K8sGetRequest, decode_value, k8s_get};
pub use error::{K8sError, Result};
pub use force_new_cluster::{FORCE_NEW_CLUSTER_FLAG, set_force_new_cluster};
pub use guard::{OPENSHIFT_ETCD_OPERATOR_KEYS, OperatorCheck, check_operator, openshift_procedure};
pub use openshift_backup::{
    OPENSHIFT_BACKUP_PODS, OpenshiftBackupRequest, OpenshiftBackupResult, STATIC_POD_RESOURCES_DIR,
    latest_static_pod_resources, write_openshift_backup,
};
pub use platform::{
    DEFAULT_PARKING_DIR, KUBEADM_MANIFEST, MANIFESTS_DIR, OPENSHIFT_MANIFEST, Platform,
    PlatformInfo, PlatformRequest, binary_version, detect_platform, parse_pod_manifest, rooted,
    version_from_image,
};
pub use prefix::{
    KNOWN_PREFIXES, ObjectRef, choose_prefix, normalize_prefix, normalize_resource, object_ref,
    resource_prefix,
};
pub use scan::{
    DEFAULT_MAX_OBJECTS, EncryptionReport, EncryptionStatusRequest, ObjectStatus, ResourceSummary,
    StorageCount, detect_prefix, encryption_status, encryption_status_offline, open_snapshot,
    scan_db, scan_live, scan_snapshot, scan_snapshot_bytes,
};
pub use static_pod::{PodState, StaticPodRequest, StaticPodResult, static_pod};
pub use usage::{KubernetesGrouping, usage_live};
pub use value::{ENCRYPTED_PREFIX, PROTOBUF_MAGIC, PlainFormat, Storage, classify};
