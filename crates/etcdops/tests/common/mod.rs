//! What the guard tests share: a fake OpenShift host and a cluster nobody listens on.

use std::time::Duration;

use etcd_core::{ClusterConfig, ConnectionOptions};

/// A host tree holding OpenShift's etcd pod manifest, as a control-plane node has it.
pub fn openshift_host() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let manifests = root.path().join("etc/kubernetes/manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("etcd-pod.yaml"), "kind: Pod\n").unwrap();
    root
}

/// A cluster nobody listens on: a guard must refuse before any connection is tried.
pub fn unreachable_cluster() -> ClusterConfig {
    ConnectionOptions {
        endpoints: Some(vec!["http://127.0.0.1:1".into()]),
        dial_timeout: Some(Duration::from_millis(200)),
        command_timeout: Some(Duration::from_millis(500)),
        ..Default::default()
    }
    .build()
    .unwrap()
}
