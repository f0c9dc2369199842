//! `etcdops usage`, live and offline, against etcdctl on the awkward
//! keyspaces (binary keys, empty values, a key equal to the prefix, deletions and
//! re-creations, a transaction's range deletion, a revoked lease, tombstones after a
//! compaction), the history against a hand count of every revision through `etcdctl get
//! --rev`, ties in the largest keys, Kubernetes' two-segment service prefixes, and bad input.

use std::collections::BTreeMap;

use base64::Engine;
use etcd_client::{Compare, PutOptions, Txn, TxnOp};
use etcdops_tests::{Cluster, Security, args, block_on, etcdops};

fn b64(v: &serde_json::Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str().unwrap_or_default())
        .unwrap()
}

/// Every key at revision `rev` as etcdctl reads it: key -> (value length, mod revision).
fn state_at(cluster: &Cluster, rev: i64) -> BTreeMap<Vec<u8>, (u64, i64)> {
    let url = cluster.members[0].client_url.clone();
    let rev = rev.to_string();
    let args = ["--endpoints", &url, "get", "", "--prefix", "--rev", &rev];
    let (code, got) = crate::etcdctl_json(cluster, &[&args[..], &["-w", "json"]].concat());
    assert_eq!(code, 0, "{got}");
    got["kvs"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|kv| {
            (
                b64(&kv["key"]),
                (
                    b64(&kv["value"]).len() as u64,
                    kv["mod_revision"].as_i64().unwrap(),
                ),
            )
        })
        .collect()
}

fn usage(rest: &[&str]) -> serde_json::Value {
    let run = etcdops(&args(&[&["usage", "-w", "json"][..], rest].concat()), &[]);
    run.expect_code(0);
    run.json()
}

fn live(cluster: &Cluster, rest: &[&str]) -> serde_json::Value {
    let run = crate::run(cluster, &[&["usage", "-w", "json"][..], rest].concat());
    run.expect_code(0);
    run.json()
}

fn group(report: &serde_json::Value, by: &str) -> Vec<(String, u64)> {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["by"] == by)
        .flat_map(|t| t["groups"].as_array().unwrap().iter())
        .map(|g| {
            (
                g["group"].as_str().unwrap().to_string(),
                g["keys"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn largest(report: &serde_json::Value) -> Vec<(String, u64, i64)> {
    report["largest_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap().to_string(),
                k["bytes"].as_u64().unwrap(),
                k["mod_revision"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Returns the compaction revision.
fn fill(cluster: &Cluster) -> i64 {
    block_on(async {
        let mut c = cluster.client().await;
        // Ties: three keys of one size in one transaction, then four more one by one, in
        // reverse key order.
        let ops = ["/txn/b", "/txn/a", "/txn/c"]
            .map(|k| TxnOp::put(k, vec![b't'; 100], None))
            .to_vec();
        c.txn(Txn::new().and_then(ops)).await?;
        for k in ["/tie/4", "/tie/3", "/tie/2", "/tie/1"] {
            c.put(k, vec![b't'; 100], None).await?;
        }
        c.put("/app", "", None).await?;
        c.put("/apple", "v", None).await?;
        c.put("/app/x", "xx", None).await?;
        for i in 0..6 {
            c.put("/hist/k", vec![b'h'; 10 + i], None).await?;
        }
        c.put("/hist/re", "one", None).await?;
        c.delete("/hist/re", None).await?;
        c.put("/hist/re", "three", None).await?;
        for k in ["/rng/1", "/rng/2", "/rng/3"] {
            c.put(k, "r", None).await?;
        }
        let del = TxnOp::delete(
            "/rng/",
            Some(etcd_client::DeleteOptions::new().with_prefix()),
        );
        c.txn(
            Txn::new()
                .when([Compare::version(
                    "/rng/1",
                    etcd_client::CompareOp::Greater,
                    0,
                )])
                .and_then([del]),
        )
        .await?;
        let lease = c.lease_grant(600, None).await?.id();
        for k in ["/lease/a", "/lease/b"] {
            c.put(k, "l", Some(PutOptions::new().with_lease(lease)))
                .await?;
        }
        c.lease_revoke(lease).await?;
        let kept = c.lease_grant(600, None).await?.id();
        c.put("/lease/kept", "k", Some(PutOptions::new().with_lease(kept)))
            .await?;
        c.put(b"/bin/\xff\xfe/a".to_vec(), "v1", None).await?;
        c.put(b"/bin/\xff\xfd/b".to_vec(), "v22", None).await?;
        c.put(b"/bin/\xff".to_vec(), "", None).await?;
        for (k, n) in [
            ("/registry/services/specs/default/kubernetes", 60),
            ("/registry/services/endpoints/default/kubernetes", 50),
            ("/registry/namespaces/default", 10),
        ] {
            c.put(k, vec![b's'; n], None).await?;
        }
        let compact = c
            .put("/gone", "g", None)
            .await?
            .header()
            .unwrap()
            .revision();
        c.compact(
            compact,
            Some(etcd_client::CompactionOptions::new().with_physical()),
        )
        .await?;
        // After the compaction: tombstones and old revisions it did not see.
        c.delete("/gone", None).await?;
        c.delete("/app/x", None).await?;
        c.put("/hist/k", vec![b'h'; 40], None).await?;
        c.put("/hist/k", vec![b'h'; 41], None).await?;
        c.put(b"/bin/\xff".to_vec(), "now", None).await?;
        Ok::<_, etcd_client::Error>(compact)
    })
    .expect("fill")
}

#[test]
fn usage_history_live_and_offline_agree_with_etcdctl_revision_by_revision() {
    let cluster = Cluster::start(1, Security::Plain);
    let compact = fill(&cluster);
    let head = state_at(&cluster, 0);
    let head_rev = {
        let url = cluster.members[0].client_url.clone();
        let (_, got) =
            crate::etcdctl_json(&cluster, &["--endpoints", &url, "get", "x", "-w", "json"]);
        got["header"]["revision"].as_i64().unwrap()
    };
    // The hand count: the key bucket after the compaction holds each key's latest revision
    // at the compaction, then every put (key + value) and deletion (key) since.
    let base = state_at(&cluster, compact);
    let mut revisions: u64 = base.len() as u64;
    let mut bytes: u64 = base.iter().map(|(k, (v, _))| k.len() as u64 + v).sum();
    let mut before = base;
    for rev in compact + 1..=head_rev {
        let now = state_at(&cluster, rev);
        for (k, (v, m)) in &now {
            if *m == rev {
                revisions += 1;
                bytes += k.len() as u64 + v;
            }
        }
        for k in before.keys().filter(|k| !now.contains_key(*k)) {
            revisions += 1;
            bytes += k.len() as u64;
        }
        before = now;
    }
    let live_bytes: u64 = head.iter().map(|(k, (v, _))| k.len() as u64 + v).sum();
    let history = (revisions - head.len() as u64, bytes - live_bytes);
    assert!(history.0 >= 5, "the fill left history: {history:?}");

    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("s.db").display().to_string();
    let url = cluster.members[0].client_url.clone();
    let out = cluster.etcdctl(&["--endpoints", &url, "snapshot", "save", &snap]);
    assert!(out.status.success());
    let now = live(&cluster, &["--top", "5"]);
    let off = usage(&["--snapshot", &snap, "--top", "5"]);
    for r in [&now, &off] {
        assert_eq!(r["keys"].as_u64(), Some(head.len() as u64), "{r:#}");
        assert_eq!(r["live_bytes"].as_u64(), Some(live_bytes), "{r:#}");
        assert_eq!(r["leased_keys"], 1, "{r:#}");
        assert_eq!(r["leases"], 1, "{r:#}");
    }
    assert_eq!(off["compact_revision"].as_i64(), Some(compact));
    assert_eq!(
        (
            off["history_revisions"].as_u64().unwrap(),
            off["history_bytes"].as_u64().unwrap()
        ),
        history,
        "{off:#}"
    );

    // Ties: the same keys live and offline, the earliest revision first.
    let (a, b) = (largest(&now), largest(&off));
    assert_eq!(a, b, "live {now:#}\noffline {off:#}");
    assert!(
        a.windows(2).all(|w| w[0].1 > w[1].1 || w[0].2 <= w[1].2),
        "{a:?}"
    );
    assert!(a[..3].iter().all(|k| k.0.starts_with("/txn/")), "{a:?}");
    assert_eq!((a[3].0.as_str(), a[4].0.as_str()), ("/tie/4", "/tie/3"));
    let two = (
        largest(&live(&cluster, &["--top", "2"])),
        largest(&usage(&["--snapshot", &snap, "--top", "2"])),
    );
    assert_eq!(two.0, two.1);

    // A prefix as etcdctl's `get --prefix` reads it: `/app` takes `/apple` and itself.
    for prefix in ["/app", "/bin/", "/hist/"] {
        let theirs: Vec<_> = head
            .iter()
            .filter(|(k, _)| k.starts_with(prefix.as_bytes()))
            .collect();
        let sum: u64 = theirs.iter().map(|(k, (v, _))| k.len() as u64 + v).sum();
        for r in [
            live(&cluster, &["--prefix", prefix]),
            usage(&["--snapshot", &snap, "--prefix", prefix]),
        ] {
            assert_eq!(
                r["keys"].as_u64(),
                Some(theirs.len() as u64),
                "{prefix}: {r:#}"
            );
            assert_eq!(r["live_bytes"].as_u64(), Some(sum), "{prefix}: {r:#}");
        }
    }

    // Services and endpoints live under two segments: no namespace named specs/endpoints.
    for r in [&now, &off] {
        let namespaces = group(r, "namespace");
        assert!(
            namespaces
                .iter()
                .all(|(n, _)| n != "specs" && n != "endpoints"),
            "{namespaces:?}"
        );
        assert!(
            namespaces.contains(&("default".to_string(), 2)),
            "{namespaces:?}"
        );
        let resources = group(r, "resource");
        assert!(
            resources.contains(&("services/specs".to_string(), 1)),
            "{resources:?}"
        );
        assert!(
            resources.contains(&("services/endpoints".to_string(), 1)),
            "{resources:?}"
        );
    }
}

#[test]
fn usage_binary_groups_stay_distinct() {
    let cluster = Cluster::start(1, Security::Plain);
    block_on(async {
        let mut c = cluster.client().await;
        c.put(b"/bin/\xff\xfe/a".to_vec(), "v1", None).await?;
        c.put(b"/bin/\xff\xfd/b".to_vec(), "v22", None).await?;
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    let r = live(&cluster, &["--prefix", "/bin/", "--depth", "1"]);
    let mut names = group(&r, "prefix");
    names.sort();
    assert_eq!(
        names,
        [
            ("/bin/\\xff\\xfd/".to_string(), 1),
            ("/bin/\\xff\\xfe/".to_string(), 1)
        ]
    );
    let keys: Vec<_> = largest(&r).into_iter().map(|k| k.0).collect();
    assert!(keys.contains(&"/bin/\\xff\\xfd/b".to_string()), "{keys:?}");
    // Offline, the same names.
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("s.db").display().to_string();
    let url = cluster.members[0].client_url.clone();
    assert!(
        cluster
            .etcdctl(&["--endpoints", &url, "snapshot", "save", &snap])
            .status
            .success()
    );
    let off = usage(&["--snapshot", &snap, "--prefix", "/bin/", "--depth", "1"]);
    let mut offline_names = group(&off, "prefix");
    offline_names.sort();
    assert_eq!(offline_names, names);
    assert_eq!(largest(&off), largest(&r));
}

#[test]
fn usage_bad_files_and_options_fail_in_one_line_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let (_, fixture) = crate::compat_snapshot::fixture_of("3.6.14");
    let db = std::fs::read(&fixture).expect("the etcd 3.6.14 fixture");
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    };
    // A page-aligned truncation (no trailer left to notice it): the meta says more pages.
    let cut = write("cut.db", &db[..4096 * 3]);
    crate::assert_clear_error(
        &etcdops(&args(&["usage", "--snapshot", &cut]), &[]),
        "pages",
    );
    // One flipped byte in the trailer: refused unless the check is skipped.
    let mut flipped = db.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let bad = write("bad.db", &flipped);
    let run = etcdops(&args(&["usage", "--snapshot", &bad]), &[]);
    crate::assert_clear_error(&run, "--skip-hash-check");
    let skipped = usage(&["--snapshot", &bad, "--skip-hash-check"]);
    assert_eq!(skipped["keys"], 44);
    // A URL with credentials: refused, never echoed.
    for url in [
        "https://alice:hunter2-url@127.0.0.1:1/x.db",
        "s3://AKIAEXAMPLE:hunter2-key@bucket/etcd/x.db",
        "az://container/etcd/x.db?sv=1&sig=hunter2-sas",
    ] {
        let run = etcdops(&args(&["usage", "--snapshot", url]), &[]);
        crate::assert_clear_error(&run, "");
        assert!(
            !run.stderr.contains("hunter2") && !run.stdout.contains("hunter2"),
            "{run}"
        );
    }
    for bad in [
        ["--depth", "0"],
        ["--depth", "65"],
        ["--top", "0"],
        ["--top", "10001"],
    ] {
        let run = etcdops(
            &args(&[&["usage", "--snapshot", &cut][..], &bad].concat()),
            &[],
        );
        crate::assert_clear_error(&run, bad[0]);
    }
    // etcd 3.6's and 3.7's data, against their etcdutl's own count of live keys.
    for release in ["3.6.14", "3.7.1"] {
        let (dir, snapshot) = crate::compat_snapshot::fixture_of(release);
        let status: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("outputs/etcdutl-snapshot-status.json")).unwrap(),
        )
        .unwrap();
        let r = usage(&["--snapshot", &snapshot.display().to_string()]);
        assert_eq!(r["keys"], status["totalKey"], "{release}: {r:#}");
        assert_eq!(r["revision"], status["revision"], "{release}: {r:#}");
        assert_eq!(r["compact_revision"], 20);
        // 7 old `/registry/hot` values and cm-40's put and deletion.
        assert_eq!(r["history_revisions"], 9);
    }
}

#[test]
fn usage_live_pages_through_megabyte_values_after_tiny_keys() {
    let cluster = Cluster::start(1, Security::Plain);
    // Tiny keys first grow the page to many keys; then values of 1 MiB each: a page of
    // that many keys would be far over any message limit unless the page shrinks again.
    cluster.put_keys("/a/tiny/", 300);
    block_on(async {
        let mut c = cluster.client().await;
        for i in 0..24 {
            c.put(format!("/b/huge/{i:02}"), vec![b'x'; 1 << 20], None)
                .await?;
        }
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    let head = state_at(&cluster, 0);
    let bytes: u64 = head.iter().map(|(k, (v, _))| k.len() as u64 + v).sum();
    let r = live(&cluster, &["--top", "3"]);
    assert_eq!(r["keys"].as_u64(), Some(head.len() as u64), "{r:#}");
    assert_eq!(r["live_bytes"].as_u64(), Some(bytes));
    let top = largest(&r);
    assert_eq!(top[0].0, "/b/huge/00", "{top:?}");
    assert_eq!(top[0].1, (1 << 20) + 10);
}

#[test]
fn usage_offline_revision_after_a_compaction_that_left_no_key() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put("/a", "1");
    cluster.put("/b", "2");
    cluster.delete("/a");
    let head = cluster.delete("/b");
    let url = cluster.members[0].client_url.clone();
    let rev = head.to_string();
    let out = cluster.etcdctl(&["--endpoints", &url, "compaction", "--physical", &rev]);
    assert!(out.status.success(), "{out:?}");
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("s.db").display().to_string();
    assert!(
        cluster
            .etcdctl(&["--endpoints", &url, "snapshot", "save", &snap])
            .status
            .success()
    );
    // etcd's own revision, as `get` shows it: the key bucket is empty, the compaction is not.
    let r = usage(&["--snapshot", &snap]);
    assert_eq!(r["keys"], 0, "{r:#}");
    assert_eq!(r["compact_revision"].as_i64(), Some(head), "{r:#}");
    assert_eq!(r["revision"].as_i64(), Some(head), "{r:#}");
    assert_eq!(live(&cluster, &[])["revision"].as_i64(), Some(head));
}
