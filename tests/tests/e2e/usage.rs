//! `etcdops usage`: what fills the db, live and offline (a snapshot, a stopped member's data
//! dir), checked against etcdctl (`get -w json` counts and sizes, `lease list`, `endpoint
//! status` dbSize and dbSizeInUse) on a member with overwrites, deletions and leases.

use base64::Engine;
use etcdops_tests::{Cluster, Run, Security, Standalone, args, etcdops};

/// etcdctl against the cluster's endpoints, parsed as JSON.
fn ctl_json(cluster: &Cluster, rest: &[&str]) -> serde_json::Value {
    let mut full = vec!["--endpoints", &cluster.members[0].client_url];
    full.extend_from_slice(rest);
    crate::etcdctl_json(cluster, &full).1
}

fn ctl_ok(cluster: &Cluster, rest: &[&str]) -> String {
    let endpoints = cluster.endpoints();
    let mut full = vec!["--endpoints", endpoints.as_str()];
    full.extend_from_slice(rest);
    let out = cluster.etcdctl(&full);
    assert!(
        out.status.success(),
        "etcdctl {rest:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// etcdctl's view of the keys under `prefix`: (count, key + value bytes, keys with a lease).
fn oracle(cluster: &Cluster, prefix: &str) -> (u64, u64, u64) {
    let got = ctl_json(cluster, &["get", prefix, "--prefix", "-w", "json"]);
    let len = |v: &serde_json::Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .unwrap()
            .len() as u64
    };
    let kvs = got["kvs"].as_array().cloned().unwrap_or_default();
    let bytes = kvs
        .iter()
        .map(|kv| len(&kv["key"]) + len(&kv["value"]))
        .sum();
    let leased = kvs
        .iter()
        .filter(|kv| kv["lease"].as_i64().unwrap_or(0) != 0)
        .count() as u64;
    (kvs.len() as u64, bytes, leased)
}

fn usage(cluster: &Cluster, rest: &[&str]) -> serde_json::Value {
    let run = crate::run(cluster, &[&["usage", "-w", "json"][..], rest].concat());
    run.expect_code(0);
    run.json()
}

fn offline(rest: &[&str]) -> serde_json::Value {
    let run: Run = etcdops(&args(&[&["usage", "-w", "json"][..], rest].concat()), &[]);
    run.expect_code(0);
    run.json()
}

/// The group `name` of grouping `by`.
fn group<'a>(report: &'a serde_json::Value, by: &str, name: &str) -> &'a serde_json::Value {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["by"] == by)
        .and_then(|t| {
            t["groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["group"] == name)
        })
        .unwrap_or_else(|| panic!("no {by} group {name} in {report:#}"))
}

fn keys_and_bytes(report: &serde_json::Value) -> (u64, u64, u64) {
    (
        report["keys"].as_u64().unwrap(),
        report["live_bytes"].as_u64().unwrap(),
        report["leased_keys"].as_u64().unwrap(),
    )
}

/// Keys under several prefixes and namespaces, a large key overwritten five times, a
/// deletion, and two keys on one lease.
fn fill(cluster: &Cluster) {
    for (i, ns) in ["ns-a", "ns-a", "ns-a", "ns-b", "ns-b"].iter().enumerate() {
        cluster.put(&format!("/registry/pods/{ns}/p{i}"), vec![b'p'; 300 + i]);
    }
    cluster.put("/registry/secrets/ns-a/s1", vec![b's'; 120]);
    cluster.put(
        "/registry/apiregistration.k8s.io/apiservices/v1.apps",
        vec![b'a'; 80],
    );
    cluster.put_keys("/app/config/k", 10);
    for round in 0..5u8 {
        cluster.put("/app/big", vec![b'0' + round; 20_000]);
    }
    cluster.delete("/registry/pods/ns-b/p4");
    let granted = ctl_ok(cluster, &["lease", "grant", "600"]);
    let id = granted.split_whitespace().nth(1).unwrap().to_string();
    ctl_ok(cluster, &["put", "--lease", &id, "/app/leased/k1", "v1"]);
    ctl_ok(cluster, &["put", "--lease", &id, "/app/leased/k2", "v2"]);
}

#[test]
fn usage_live_from_a_snapshot_and_from_a_stopped_data_dir_agrees_with_etcdctl() {
    let mut cluster = Cluster::start(1, Security::Plain);
    fill(&cluster);
    let dir = tempfile::tempdir().unwrap();

    // Live: keys, bytes and leased keys as etcdctl counts them; leases as `lease list`; the
    // db's space as `endpoint status`; no history (etcd's API does not show it).
    let every = oracle(&cluster, "");
    let size_of = |status: &serde_json::Value| status[0]["Status"]["dbSize"].as_u64().unwrap();
    let before = size_of(&ctl_json(&cluster, &["endpoint", "status", "-w", "json"]));
    let live = usage(&cluster, &["--top", "3"]);
    assert_eq!(keys_and_bytes(&live), every, "{live:#}");
    assert_eq!(every.2, 2);
    let leases = ctl_json(&cluster, &["lease", "list", "-w", "json"])["leases"]
        .as_array()
        .unwrap()
        .len() as u64;
    assert_eq!(live["leases"].as_u64(), Some(leases));
    assert!(live["history_bytes"].is_null());
    // etcd's backend commits in batches (every 100 ms), so dbSize may still grow right after
    // the last write, and dbSizeInUse moves as read transactions release freed pages: ours
    // lies between etcdctl's readings before and after.
    let after = size_of(&ctl_json(&cluster, &["endpoint", "status", "-w", "json"]));
    let size = live["db"]["size"].as_u64().unwrap();
    assert!(
        before <= size && size <= after,
        "{before} <= {size} <= {after}"
    );
    let in_use = live["db"]["in_use"].as_u64().unwrap();
    assert!(in_use > 0 && in_use <= size);
    assert_eq!(live["db"]["free"].as_u64(), Some(size - in_use));
    // Over every key, the estimate of the history is named one: in use minus live bytes.
    assert_eq!(
        live["history_bytes_estimate"].as_u64(),
        Some(in_use - every.1)
    );
    assert_eq!(live["largest_keys"][0]["key"], "/app/big");
    assert_eq!(live["largest_keys"][0]["value_bytes"], 20_000);
    // Per resource and namespace, as etcdctl counts the same ranges.
    let pods = oracle(&cluster, "/registry/pods/");
    let pods_group = group(&live, "resource", "pods");
    assert_eq!(pods_group["keys"].as_u64(), Some(pods.0));
    assert_eq!(pods_group["live_bytes"].as_u64(), Some(pods.1));
    let ns_a =
        oracle(&cluster, "/registry/pods/ns-a/").0 + oracle(&cluster, "/registry/secrets/ns-a/").0;
    assert_eq!(
        group(&live, "namespace", "ns-a")["keys"].as_u64(),
        Some(ns_a)
    );
    assert_eq!(
        group(&live, "resource", "apiregistration.k8s.io/apiservices")["keys"],
        1
    );
    // A prefix: only its keys, grouped one segment under it.
    let app = oracle(&cluster, "/app/");
    let under = usage(&cluster, &["--prefix", "/app/", "--depth", "1"]);
    assert_eq!(keys_and_bytes(&under), app);
    assert_eq!(group(&under, "prefix", "/app/leased/")["leased_keys"], 2);
    assert!(under["history_bytes_estimate"].is_null());

    // A snapshot: the same keys and bytes, and the history the overwrites and the deletion
    // left (four old 20 kB values of /app/big at least).
    let before = dir.path().join("before.db");
    ctl_ok(
        &cluster,
        &["snapshot", "save", &before.display().to_string()],
    );
    let snap = offline(&["--snapshot", &before.display().to_string()]);
    assert_eq!(keys_and_bytes(&snap), every, "{snap:#}");
    assert_eq!(snap["leases"].as_u64(), Some(leases));
    assert!(
        snap["history_revisions"].as_u64().unwrap() >= 4 + 2,
        "{snap:#}"
    );
    assert!(
        snap["history_bytes"].as_u64().unwrap() >= 4 * 20_000,
        "{snap:#}"
    );
    assert!(
        group(&snap, "namespace", "ns-b")["history_revisions"]
            .as_u64()
            .unwrap()
            >= 2
    );

    // Compacted at the head: the history is gone from the next snapshot, the keys are not.
    let head = ctl_json(&cluster, &["get", "/app/big", "-w", "json"])["header"]["revision"]
        .as_i64()
        .unwrap();
    ctl_ok(&cluster, &["compaction", &head.to_string(), "--physical"]);
    let after = dir.path().join("after.db");
    ctl_ok(
        &cluster,
        &["snapshot", "save", &after.display().to_string()],
    );
    let compacted = offline(&["--snapshot", &after.display().to_string()]);
    assert_eq!(keys_and_bytes(&compacted), every);
    assert_eq!(compacted["history_revisions"], 0, "{compacted:#}");
    assert_eq!(compacted["history_bytes"], 0);
    assert_eq!(compacted["compact_revision"].as_i64(), Some(head));

    // The running member's data dir is refused (its pages change under the reader).
    let data_dir = cluster.members[0].data_dir.display().to_string();
    let running = etcdops(&args(&["usage", "--data-dir", &data_dir]), &[]);
    crate::assert_clear_error(&running, "running");
    let status = &ctl_json(&cluster, &["endpoint", "status", "-w", "json"])[0]["Status"];
    let (size, in_use) = (
        status["dbSize"].as_u64().unwrap(),
        status["dbSizeInUse"].as_u64().unwrap(),
    );
    cluster.kill_member(0);
    let stopped = offline(&["--data-dir", &data_dir]);
    assert_eq!(keys_and_bytes(&stopped), every, "{stopped:#}");
    assert_eq!(stopped["history_revisions"], 0);
    // The compaction freed the old values' pages. etcd counts pages still held by open
    // read transactions as in use, which a reopened db does not: ours frees at least as
    // much, of the same db size.
    let db = &stopped["db"];
    assert_eq!(db["size"].as_u64(), Some(size), "{stopped:#}");
    assert!(
        db["free"].as_u64().unwrap() >= size - in_use,
        "{stopped:#} vs {status}"
    );
    assert!(
        db["free_pages"].as_u64().unwrap() * 4096 >= 4 * 20_000,
        "{stopped:#}"
    );
    let share = db["free_share"].as_f64().unwrap();
    assert!(share > 0.0 && share < 1.0, "{share}");

    // etcd reopening the db rebuilds its free list from the same unreachable pages: its
    // dbSizeInUse right after a restart is ours, give or take the pages its start-up commits
    // move.
    let member = &cluster.members[0];
    let _restarted = Standalone::start(&cluster, member, &member.data_dir, false, "usage");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !cluster
        .etcdctl(&["--endpoints", &member.client_url, "endpoint", "health"])
        .status
        .success()
    {
        assert!(std::time::Instant::now() < deadline, "etcd did not restart");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let status = &ctl_json(&cluster, &["endpoint", "status", "-w", "json"])[0]["Status"];
    assert_eq!(db["size"], status["dbSize"], "{status} vs ours {db}");
    let theirs = status["dbSizeInUse"].as_i64().unwrap();
    let ours = db["in_use"].as_i64().unwrap();
    assert!(
        (theirs - ours).abs() <= 2 * 4096,
        "dbSizeInUse {theirs} after a restart, ours {ours}"
    );
}

#[test]
fn usage_of_a_missing_or_foreign_file_fails_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.db").display().to_string();
    let run = etcdops(&args(&["usage", "--snapshot", &missing]), &[]);
    crate::assert_clear_error(&run, "absent.db");
    let foreign = dir.path().join("notes.txt");
    std::fs::write(&foreign, vec![b'x'; 10_000]).unwrap();
    let run = etcdops(
        &args(&["usage", "--snapshot", &foreign.display().to_string()]),
        &[],
    );
    crate::assert_clear_error(&run, "not a readable etcd db");
    let run = etcdops(
        &args(&["usage", "--data-dir", &dir.path().display().to_string()]),
        &[],
    );
    crate::assert_clear_error(&run, "member/snap/db");
    let run = etcdops(&args(&["usage", "--snapshot", &missing, "--top", "0"]), &[]);
    crate::assert_clear_error(&run, "--top");
}
