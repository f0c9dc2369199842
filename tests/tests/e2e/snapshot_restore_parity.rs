//! Parity of `etcdops snapshot restore` with etcd's own restore (`etcdctl snapshot restore` in
//! 3.4, `etcdutl snapshot restore` in 3.5): the same snapshot file restored by both, with the
//! same names, URLs and token, into different data dirs of 3 members. Real etcd started on
//! each set must report the same member IDs and cluster ID, and serve the same keys with the
//! same values and revisions.

use std::path::{Path, PathBuf};

use etcdops_tests::{Cluster, Security};

use crate::run;

/// Restores `file` as member `index` of `target` into `data_dir` with etcd's own tool.
fn etcd_restore(file: &Path, target: &Cluster, index: usize, data_dir: &Path) {
    let member = &target.members[index];
    let out = target
        .version
        .snapshot_tool()
        .args(["snapshot", "restore"])
        .arg(file)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--name", &member.name])
        .args(["--initial-cluster", &target.initial_cluster()])
        .args(["--initial-cluster-token", target.token()])
        .args(["--initial-advertise-peer-urls", &member.peer_url])
        .output()
        .expect("run etcd's restore");
    assert!(
        out.status.success(),
        "etcd's restore failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Restores `file` as member `index` of `target` into its `data_dir` with etcdops.
fn native_restore(file: &Path, target: &Cluster, index: usize) {
    crate::snapshot_restore::restore(file, target, index, &[]).expect_code(0);
}

/// What a started cluster shows: cluster ID, sorted (id, name, peer URL) per member, and every
/// key with value, create/mod revision and version.
#[derive(Debug, PartialEq)]
struct Seen {
    cluster_id: serde_json::Value,
    members: Vec<(String, String, String)>,
    kvs: Vec<serde_json::Value>,
}

fn observe(cluster: &Cluster) -> Seen {
    let listed = run(cluster, &["member", "list", "-w", "json"]);
    listed.expect_code(0);
    let doc = listed.json();
    let mut members: Vec<(String, String, String)> = doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_string(),
                m["name"].as_str().unwrap().to_string(),
                m["peer_urls"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    members.sort();
    let cluster_id = doc["cluster_id"].clone();
    assert!(!cluster_id.is_null(), "no cluster_id:\n{listed}");

    let got = run(cluster, &["get", "/", "--prefix", "-w", "json"]);
    got.expect_code(0);
    let kvs = got.json()["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| {
            serde_json::json!({
                "key": kv["key"],
                "value": kv["value"],
                "create_revision": kv["create_revision"],
                "mod_revision": kv["mod_revision"],
                "version": kv["version"],
            })
        })
        .collect();
    Seen {
        cluster_id,
        members,
        kvs,
    }
}

/// Kills every member of `cluster` (SIGKILL, waited for).
fn stop_all(cluster: &mut Cluster) {
    for i in (0..cluster.members.len()).rev() {
        cluster.kill_member_now(i);
    }
}

#[test]
fn native_restore_matches_etcds_own_restore() {
    let source = Cluster::start(3, Security::Plain);
    source.put_keys("/parity/small/", 100);
    source.put_random("/parity/big/", 10, 6000);
    for i in 0..10 {
        source.put(&format!("/parity/small/{i:04}"), format!("again-{i}"));
    }
    for i in 90..100 {
        source.delete(&format!("/parity/small/{i:04}"));
    }
    let store = source.dir().join("store");
    let saved = run(
        &source,
        &[
            "snapshot",
            "save",
            &store.display().to_string(),
            "--compression",
            "none",
            "-w",
            "json",
        ],
    );
    saved.expect_code(0);
    let file = store.join(saved.json()["manifest"]["object"].as_str().unwrap());

    // Same names, URLs and token for both restores; only the data dirs differ.
    let mut target = Cluster::plan_restore(3, "p");
    let native_dirs: Vec<PathBuf> = target.members.iter().map(|m| m.data_dir.clone()).collect();
    let etcd_dirs: Vec<PathBuf> = target
        .members
        .iter()
        .map(|m| target.dir().join(format!("etcd-{}", m.name)))
        .collect();
    for (i, dir) in etcd_dirs.iter().enumerate() {
        native_restore(&file, &target, i);
        etcd_restore(&file, &target, i, dir);
    }

    // One set at a time on the same ports.
    target.start_restored();
    let native = observe(&target);
    stop_all(&mut target);
    for (member, dir) in target.members.iter_mut().zip(&etcd_dirs) {
        member.data_dir = dir.clone();
    }
    target.start_restored();
    let theirs = observe(&target);
    stop_all(&mut target);

    assert_eq!(native.members.len(), 3, "{native:?}");
    assert_eq!(native.kvs.len(), 100, "every live key");
    assert_eq!(native.cluster_id, theirs.cluster_id, "cluster ID");
    assert_eq!(native.members, theirs.members, "member IDs");
    assert_eq!(native.kvs, theirs.kvs, "keys, values and revisions");
    assert_ne!(native_dirs, etcd_dirs);
}
