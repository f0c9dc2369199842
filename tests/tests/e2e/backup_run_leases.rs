//! Leases in a chain, for real: leases granted and revoked with no key change (which etcd's
//! watch never reports), revoked with their keys, granted and attached inside the chain. At
//! the end of each revision the test records what etcdctl says the cluster holds (`lease
//! list`, `lease timetolive --keys`: ID, granted TTL, attached keys), after `backup run` has
//! looked; a point-in-time restore at each of those revisions, and the chain compacted into a
//! full backup, must hold exactly those leases, and the keys `get --rev` served.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use etcd_client::PutOptions;
use etcdops_tests::{Cluster, Security, block_on};
use serde_json::Value;

use crate::backup_run::{BackupRun, assert_restored, keys_at, restore_point};

/// One lease as etcdctl reports it: ID, granted TTL, attached keys (etcdctl's base64).
pub(crate) type LeaseState = (i64, i64, Vec<String>);

/// Every lease `cluster` holds, from etcdctl: `lease list`, then `lease timetolive --keys`.
pub(crate) fn lease_state(cluster: &Cluster) -> Vec<LeaseState> {
    let endpoints = cluster.endpoints();
    let (code, listed) = crate::etcdctl_json(
        cluster,
        &["--endpoints", &endpoints, "lease", "list", "-w", "json"],
    );
    assert_eq!(code, 0, "{listed}");
    let mut out: Vec<LeaseState> = listed["leases"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|l| {
            let id = l["id"].as_i64().unwrap();
            let hex = format!("{id:x}");
            let (code, ttl) = crate::etcdctl_json(
                cluster,
                &[
                    "--endpoints",
                    &endpoints,
                    "lease",
                    "timetolive",
                    &hex,
                    "--keys",
                    "-w",
                    "json",
                ],
            );
            assert_eq!(code, 0, "{ttl}");
            let granted = ttl["granted-ttl"]
                .as_i64()
                .unwrap_or_else(|| panic!("{hex}: {ttl}"));
            let mut keys: Vec<String> = ttl["keys"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect();
            keys.sort();
            (id, granted, keys)
        })
        .collect();
    out.sort();
    out
}

fn revision(cluster: &Cluster) -> i64 {
    block_on(async {
        let mut c = cluster.client().await;
        let got = c.get("/", None).await?;
        Ok::<_, etcd_client::Error>(got.header().unwrap().revision())
    })
    .unwrap()
}

/// Waits until `backup run` has written a lease set of `count` leases at `revision` (an
/// event after the first `after` ones), and returns how many events there are now.
fn wait_recorded(backup: &BackupRun, after: usize, revision: i64, count: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let events = backup.events();
        let found = events.iter().skip(after).any(|e| {
            e["event"] == "leases_recorded"
                && e["revision"] == revision
                && e["leases"] == count as u64
        });
        if found {
            return events.len();
        }
        assert!(
            Instant::now() < deadline,
            "backup run never recorded {count} leases at revision {revision}:\n{events:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_point_in_time_restore_holds_exactly_the_leases_of_each_revision() {
    let cluster = Cluster::start(1, Security::Plain);
    let leased = |lease: i64| Some(PutOptions::new().with_lease(lease));
    let grant = |ttl: i64| {
        block_on(async {
            let mut c = cluster.client().await;
            Ok::<_, etcd_client::Error>(c.lease_grant(ttl, None).await?.id())
        })
        .unwrap()
    };
    let revoke = |id: i64| {
        block_on(async {
            let mut c = cluster.client().await;
            c.lease_revoke(id).await?;
            Ok::<_, etcd_client::Error>(())
        })
        .unwrap()
    };
    let put = |key: &str, lease: Option<i64>| {
        block_on(async {
            let mut c = cluster.client().await;
            let done = c.put(key, "v", lease.and_then(leased)).await?;
            Ok::<_, etcd_client::Error>(done.header().unwrap().revision())
        })
        .unwrap()
    };
    // Before the full backup: a lease with a key, one without.
    let l0 = grant(600);
    put("/l0/a", Some(l0));
    let unused = grant(300);
    put("/seed", None);

    let store = cluster.dir().join("lease-chain");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full_revision = full["revision"].as_i64().unwrap();
    // The first look of the chain is always written.
    let mut seen = wait_recorded(&backup, 0, full_revision, 2);
    let mut expected: BTreeMap<i64, Vec<LeaseState>> = BTreeMap::new();

    // At the full backup's revision, with no key change: one lease revoked, two granted.
    revoke(unused);
    let l1 = grant(700);
    let l2 = grant(800);
    seen = wait_recorded(&backup, seen, full_revision, 3);
    expected.insert(full_revision, lease_state(&cluster));

    // A key attached to a lease of the chain: the set is the same.
    let attached = put("/l1/k", Some(l1));
    backup.wait_published(attached);
    expected.insert(attached, lease_state(&cluster));

    // A lease of the full backup revoked with its key, then one revoked with none.
    revoke(l0);
    let revoked = revision(&cluster);
    assert_eq!(revoked, attached + 1, "the revocation deleted /l0/a");
    seen = wait_recorded(&backup, seen, revoked, 2);
    revoke(l2);
    seen = wait_recorded(&backup, seen, revoked, 1);
    // Granted, seen, then used by a key at the next revision.
    let l3 = grant(900);
    wait_recorded(&backup, seen, revoked, 2);
    expected.insert(revoked, lease_state(&cluster));
    let used = put("/l3/k", Some(l3));
    expected.insert(used, lease_state(&cluster));
    let last = put("/plain", None);
    backup.wait_published(last);
    expected.insert(last, lease_state(&cluster));
    backup.stop_clean();
    assert!(
        expected[&full_revision]
            .iter()
            .all(|(id, ..)| *id != unused),
        "the oracle saw the revocation"
    );

    for (&at, leases) in &expected {
        let rev = at.to_string();
        let (restored, result) = restore_point(&store, &["--to-revision", &rev]);
        assert_eq!(
            &lease_state(&restored),
            leases,
            "leases at revision {at}: {result:#}"
        );
        assert_restored(&restored, &keys_at(&cluster, Some(at)), at, &result);
    }

    // The chain compacted into one full backup holds the leases of its last revision.
    let done = crate::snapshot_compact_chains::snapshot_json(&[
        "compact",
        &crate::snapshot_compact_chains::store_arg(&store),
    ]);
    done.expect_code(0);
    let compacted: Value = done.json();
    assert_eq!(compacted["manifest"]["revision"], last, "{compacted:#}");
    let removed = compacted["leases_removed"].as_array().unwrap();
    assert!(
        removed.contains(&Value::from(format!("{l0:016x}"))),
        "{compacted:#}"
    );
    let object = compacted["manifest"]["object"].as_str().unwrap();
    let url = format!(
        "{}/{object}",
        crate::snapshot_compact_chains::store_arg(&store)
    );
    let mut by_copy = Cluster::plan_restore(1, "c");
    crate::snapshot_restore::restore_from(&url, &by_copy, 0, &[], &[]).expect_code(0);
    by_copy.start_restored();
    assert_eq!(lease_state(&by_copy), expected[&last]);
}

/// How many segments the run published.
fn segments(events: &[Value]) -> usize {
    events
        .iter()
        .filter(|e| e["event"] == "segment_published")
        .count()
}

#[test]
fn lease_sets_under_steady_writes_stay_in_order_within_the_segment_size_and_follow_a_reused_id() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("lease-storm");
    // Segments are published only when full (an hour apart otherwise).
    let backup = BackupRun::start(
        &cluster,
        &store,
        &["--delta-every", "1h", "--segment-bytes", "4096"],
    );
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let grant_and_wait = |rounds: i64| {
        block_on(async {
            let mut c = cluster.client().await;
            for round in 0..rounds {
                for _ in 0..50 {
                    c.lease_grant(600 + round, None).await?;
                }
                let count = c.leases().await?.leases().len();
                let deadline = Instant::now() + Duration::from_secs(60);
                while !backup
                    .events()
                    .iter()
                    .any(|e| e["event"] == "leases_recorded" && e["leases"] == count as u64)
                {
                    assert!(Instant::now() < deadline, "{count} leases never recorded");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            Ok::<_, etcd_client::Error>(())
        })
        .unwrap()
    };
    // Lease sets alone (800 to 4,800 bytes each, no change at all) fill segments: cut after
    // the sets of 150 and 250 leases at least (an hour before --delta-every would).
    grant_and_wait(6);
    assert!(
        segments(&backup.events()) >= 2,
        "lease sets never filled a segment: {:#?}",
        backup.events()
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    let urls: Vec<String> = cluster
        .members
        .iter()
        .map(|m| m.client_url.clone())
        .collect();
    std::thread::scope(|scope| {
        // Puts all along, so lease sets wait for their revision between changes.
        scope.spawn(|| {
            block_on(async {
                let mut c = etcd_client::Client::connect(urls.clone(), None).await?;
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    c.put(format!("/storm/{}", i % 50), i.to_string(), None)
                        .await?;
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Ok::<_, etcd_client::Error>(())
            })
            .unwrap();
        });
        grant_and_wait(4);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    // A lease ID granted again with another TTL, and a key on it.
    let reused = 0x1234;
    block_on(async {
        let mut c = cluster.client().await;
        c.lease_grant(
            30,
            Some(etcd_client::LeaseGrantOptions::new().with_id(reused)),
        )
        .await?;
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    let count = lease_state(&cluster).len();
    backup.wait_for("the lease of TTL 30 recorded", |e| {
        e["event"] == "leases_recorded" && e["leases"] == count as u64
    });
    let seen = backup.events().len();
    let last = block_on(async {
        let mut c = cluster.client().await;
        c.lease_revoke(reused).await?;
        c.lease_grant(
            1000,
            Some(etcd_client::LeaseGrantOptions::new().with_id(reused)),
        )
        .await?;
        let put = c
            .put("/reused", "v", Some(PutOptions::new().with_lease(reused)))
            .await?;
        Ok::<_, etcd_client::Error>(put.header().unwrap().revision())
    })
    .unwrap();
    // Asked again in turn: the new TTL makes a new set.
    wait_recorded(&backup, seen, last, count);
    let events = backup.stop();
    // Every segment verifies: sets in revision order beside the changes, sizes bounded.
    let full = events.iter().find(|e| e["event"] == "full_saved").unwrap()["object"]
        .as_str()
        .unwrap()
        .to_string();
    let verified = crate::snapshot_compact_chains::snapshot_json(&[
        "verify",
        &format!("{}/{full}", store.display()),
    ]);
    verified.expect_code(0);
    let report = verified.json();
    assert!(
        report.to_string().contains("segment"),
        "the chain's segments are checked: {report:#}"
    );
    let (restored, result) = restore_point(&store, &["--to-revision", &last.to_string()]);
    assert_eq!(lease_state(&restored), lease_state(&cluster), "{result:#}");
    assert!(
        lease_state(&restored)
            .iter()
            .any(|(id, ttl, keys)| *id == reused && *ttl == 1000 && keys.len() == 1)
    );
}
