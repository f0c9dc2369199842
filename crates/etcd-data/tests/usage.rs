//! `usage` of etcd 3.6.14's own data (tests/fixtures/etcd-3.6.14), checked against what
//! etcdctl 3.6.14 said of the running cluster (`get --prefix /registry/ -w json`,
//! `lease list`, `endpoint status`).
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

use std::path::{Path, PathBuf};

use base64::Engine;
use etcd_data::{PrefixDepth, UsageOptions, UsageReport, usage_data_dir};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/etcd-3.6.14")
}

fn output(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(fixture_dir().join("outputs").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// etcdctl's `get --prefix /registry/ -w json`: (keys, key + value bytes).
fn registry_oracle() -> (u64, u64) {
    let got = output("get-prefix.json");
    let b64 = |v: &serde_json::Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .unwrap()
            .len() as u64
    };
    let kvs = got["kvs"].as_array().unwrap();
    let bytes = kvs
        .iter()
        .map(|kv| b64(&kv["key"]) + b64(&kv["value"]))
        .sum();
    (got["count"].as_u64().unwrap(), bytes)
}

fn options(prefix: &str) -> UsageOptions {
    UsageOptions {
        prefix: prefix.into(),
        depth: 1,
        top: 3,
    }
}

fn snapshot_usage(prefix: &str) -> UsageReport {
    let file =
        etcd_data::open_snapshot_file(&fixture_dir().join("snapshot-3.6.14.db"), None).unwrap();
    let options = options(prefix);
    file.usage("snapshot", false, &options, &PrefixDepth::new(&options))
        .unwrap()
}

#[test]
fn usage_of_the_3_6_snapshot_agrees_with_etcdctl() {
    let (keys, bytes) = registry_oracle();
    let registry = snapshot_usage("/registry/");
    assert_eq!((registry.keys, registry.live_bytes), (keys, bytes));
    assert_eq!(registry.revision, 54);
    assert_eq!(registry.compact_revision, Some(20));
    // `/registry/after-compaction` came after the compaction, `cm-40` was deleted after
    // `hot`'s eight puts: history is there, and `cm-40`'s deletion is part of it.
    assert!(registry.history_revisions.unwrap() >= 2, "{registry:?}");
    assert!(registry.history_bytes.unwrap() > 0);
    let configmaps = &registry.groups[0].groups[0];
    assert_eq!(configmaps.group, "/registry/configmaps/");
    assert_eq!(configmaps.keys, 39);
    assert_eq!(registry.largest_keys.len(), 3);
    assert!(registry.largest_keys[0].bytes >= registry.largest_keys[2].bytes);

    // Every key: the two leased ones too, and the one lease (etcdctl's `lease list`).
    let all = snapshot_usage("");
    assert_eq!(all.keys, keys + 2);
    assert_eq!(all.leased_keys, 2);
    let leases = output("lease-list.json")["leases"]
        .as_array()
        .unwrap()
        .len() as u64;
    assert_eq!(all.leases, Some(leases));
    let status = output("endpoint-status.json");
    let db_size = status[0]["Status"]["dbSize"].as_u64().unwrap();
    assert_eq!(all.db.size, db_size);
    assert!(all.db.in_use <= all.db.size && all.db.in_use > 0);
}

#[test]
fn usage_of_the_stopped_3_6_member_agrees_with_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .arg("xzf")
        .arg(fixture_dir().join("member-a-data-dir-stopped.tar.gz"))
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let options = options("/registry/");
    let member =
        usage_data_dir(&dir.path().join("a"), &options, &PrefixDepth::new(&options)).unwrap();
    let snapshot = snapshot_usage("/registry/");
    assert_eq!(
        (member.keys, member.live_bytes, member.history_bytes),
        (snapshot.keys, snapshot.live_bytes, snapshot.history_bytes)
    );
    assert_eq!(member.source, dir.path().join("a").display().to_string());
}
