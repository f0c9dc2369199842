//! `usage` of etcd's own data for each release in `tests/fixtures` (3.6.14, 3.7.1), checked
//! against what etcdctl said of the running cluster (`get --prefix /registry/ -w json`,
//! `lease list`, `endpoint status`).
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

mod common;

use base64::Engine;
use common::{Etcd, RELEASES};
use etcd_data::{PrefixDepth, UsageOptions, UsageReport, usage_data_dir};

/// etcdctl's `get --prefix /registry/ -w json`: (keys, key + value bytes).
fn registry_oracle(etcd: &Etcd) -> (u64, u64) {
    let got = etcd.output("get-prefix.json");
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

fn snapshot_usage(etcd: &Etcd, prefix: &str) -> UsageReport {
    let options = options(prefix);
    etcd.snapshot()
        .usage("snapshot", false, &options, &PrefixDepth::new(&options))
        .unwrap()
}

#[test]
fn usage_of_the_snapshot_agrees_with_etcdctl() {
    for etcd in RELEASES {
        let v = etcd.version;
        let (keys, bytes) = registry_oracle(&etcd);
        let registry = snapshot_usage(&etcd, "/registry/");
        assert_eq!((registry.keys, registry.live_bytes), (keys, bytes), "{v}");
        assert_eq!(registry.revision, 54, "{v}");
        assert_eq!(registry.compact_revision, Some(20), "{v}");
        // `/registry/after-compaction` came after the compaction, `cm-40` was deleted after
        // `hot`'s eight puts: history is there, and `cm-40`'s deletion is part of it.
        assert!(
            registry.history_revisions.unwrap() >= 2,
            "{v}: {registry:?}"
        );
        assert!(registry.history_bytes.unwrap() > 0, "{v}");
        let configmaps = &registry.groups[0].groups[0];
        assert_eq!(configmaps.group, "/registry/configmaps/", "{v}");
        assert_eq!(configmaps.keys, 39, "{v}");
        assert_eq!(registry.largest_keys.len(), 3, "{v}");
        assert!(registry.largest_keys[0].bytes >= registry.largest_keys[2].bytes);

        // Every key: the two leased ones too, and the one lease (etcdctl's `lease list`).
        let all = snapshot_usage(&etcd, "");
        assert_eq!(all.keys, keys + 2, "{v}");
        assert_eq!(all.leased_keys, 2, "{v}");
        let leases = etcd.output("lease-list.json")["leases"]
            .as_array()
            .unwrap()
            .len() as u64;
        assert_eq!(all.leases, Some(leases), "{v}");
        let status = etcd.output("endpoint-status.json");
        let db_size = status[0]["Status"]["dbSize"].as_u64().unwrap();
        assert_eq!(all.db.size, db_size, "{v}");
        assert!(all.db.in_use <= all.db.size && all.db.in_use > 0, "{v}");
    }
}

#[test]
fn usage_of_the_stopped_member_agrees_with_its_snapshot() {
    for etcd in RELEASES {
        let v = etcd.version;
        let (_dir, data_dir) = etcd.stopped_member();
        let options = options("/registry/");
        let member = usage_data_dir(&data_dir, &options, &PrefixDepth::new(&options)).unwrap();
        let snapshot = snapshot_usage(&etcd, "/registry/");
        assert_eq!(
            (member.keys, member.live_bytes, member.history_bytes),
            (snapshot.keys, snapshot.live_bytes, snapshot.history_bytes),
            "{v}"
        );
        assert_eq!(member.source, data_dir.display().to_string());
    }
}
