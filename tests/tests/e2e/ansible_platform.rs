//! `etcd.core.etcd_platform_info` and `etcd.core.etcd_static_pod` run by real ansible-core on
//! a kubeadm host tree, its etcd run from the manifest by the kubelet stand-in. The target
//! has no Python: both modules are the shim binary.

use etcdops_tests::{Collection, EtcdVersion, PlaybookRun};
use serde_json::{Value, json};

use crate::platform::KubeadmNode;

const NO_PYTHON: &str = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";

fn assert_ok(run: &PlaybookRun) {
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("failed=0"), "{run}");
}

#[test]
fn platform_modules_detect_stop_and_start_a_kubeadm_static_pod() {
    let node = KubeadmNode::start();
    let empty = tempfile::tempdir().unwrap();
    let collection = Collection::install();
    let tasks: Vec<Value> = ["etcd_platform_info", "etcd_static_pod"]
        .iter()
        .map(|t| json!({"ansible.builtin.include_role": {"name": collection.target(t)}}))
        .collect();
    let play = json!([{ "hosts": "target", "gather_facts": false, "tasks": tasks }]).to_string();
    let vars = json!({
        "etcd_platform_root": node.root(),
        "etcd_empty_root": empty.path(),
        "etcd_expected_name": node.pod.name,
        "etcd_expected_endpoint": node.pod.client_url,
        "etcd_expected_version": EtcdVersion::from_env().version_string(),
    });
    let run = collection.playbook(&play, NO_PYTHON, &vars, &[], &[]);
    assert_ok(&run);
    // Four changes: stop and start, each in check mode and for real; etcd is back.
    assert!(run.stdout.contains("changed=4"), "{run}");
    assert!(
        node.root()
            .join("etc/kubernetes/manifests/etcd.yaml")
            .is_file()
    );
}
