//! `etcd_usage_info` through the collection, on a target without Python: its integration
//! target (live against etcdctl's sizes, check mode, offline from a snapshot, a bad option).

use base64::Engine;
use etcdops_tests::{Cluster, Collection, Security};
use serde_json::json;

const NO_PYTHON: &str = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";

#[test]
fn usage_info_module_live_in_check_mode_and_offline() {
    let cluster = Cluster::start(1, Security::Plain);
    for (key, size) in [
        ("/usage/a/k0", 100),
        ("/usage/a/k0", 4000),
        ("/usage/a/k1", 200),
        ("/usage/a/k2", 300),
        ("/usage/b/k0", 50),
        ("/usage/b/k1", 60),
    ] {
        cluster.put(key, vec![b'v'; size]);
    }
    cluster.put("/elsewhere/x", "not counted");
    // etcdctl's sizes of the keys under /usage/: the oracle.
    let endpoints = cluster.endpoints();
    let (_, got) = crate::etcdctl_json(
        &cluster,
        &[
            "--endpoints",
            &endpoints,
            "get",
            "/usage/",
            "--prefix",
            "-w",
            "json",
        ],
    );
    let len = |v: &serde_json::Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap()
            .len()
    };
    let live_bytes: usize = got["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| len(&kv["key"]) + len(&kv["value"]))
        .sum();
    let snapshot = cluster.dir().join("usage.db");
    let out = cluster.etcdctl(&[
        "--endpoints",
        &endpoints,
        "snapshot",
        "save",
        &snapshot.display().to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let collection = Collection::install();
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": cluster.client_urls()}},
        "tasks": [{"ansible.builtin.include_role": {
            "name": collection.target("etcd_usage_info")
        }}],
    }])
    .to_string();
    let vars = json!({
        "etcd_usage_snapshot": snapshot,
        "etcd_usage_live_bytes": live_bytes,
    });
    let run = collection.playbook(&playbook, NO_PYTHON, &vars, &[], &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("failed=0"), "{run}");
    assert!(run.stdout.contains("ok="), "{run}");
}
