//! `etcdops snapshot status` against the release's own tool (etcdutl 3.5, etcdctl 3.4) on the
//! same files: snapshots saved by etcdops (plain and zstd, from a file and a store URL), by
//! etcdctl, and a raw `member/snap/db` copy. Hash, revision, total keys and total size must be
//! equal; the extras are checked against what the test wrote.

use std::path::Path;

use etcd_client::{CompactionOptions, PutOptions};
use etcdops_tests::{Cluster, Security, args, block_on, etcdops};

use crate::{assert_clear_error, etcdctl_json, hex};

/// What `write_history` left in the cluster.
struct History {
    /// Revision of the last write.
    last_revision: i64,
    /// Revision compacted to.
    compacted: i64,
    /// Keys alive at the end.
    live_keys: u64,
    /// Leases granted.
    leases: u64,
}

/// Values larger than a page (overflow pages) and enough keys for branch pages, then puts,
/// overwrites, deletes (tombstones), a physical compaction, and two leases, one with keys
/// attached.
fn write_history(cluster: &Cluster) -> History {
    cluster.put_random("/status/big/", 300, 6000);
    block_on(async {
        let mut client = cluster.client().await;
        for i in 0..40 {
            client
                .put(format!("/status/k{i:03}"), format!("v{i}"), None)
                .await?;
        }
        for i in 0..10 {
            client
                .put(format!("/status/k{i:03}"), "overwritten", None)
                .await?;
        }
        let mut compacted = 0;
        for i in 30..40 {
            let deleted = client.delete(format!("/status/k{i:03}"), None).await?;
            assert_eq!(deleted.deleted(), 1);
            compacted = deleted.header().unwrap().revision();
        }
        client
            .compact(compacted, Some(CompactionOptions::new().with_physical()))
            .await?;
        let lease = client.lease_grant(600, None).await?.id();
        client.lease_grant(900, None).await?;
        for name in ["a", "b"] {
            client
                .put(
                    format!("/status/leased/{name}"),
                    "x",
                    Some(PutOptions::new().with_lease(lease)),
                )
                .await?;
        }
        let last = client.put("/status/last", "y", None).await?;
        Ok::<_, etcd_client::Error>(History {
            last_revision: last.header().unwrap().revision(),
            compacted,
            live_keys: 300 + 30 + 2 + 1,
            leases: 2,
        })
    })
    .unwrap()
}

/// Runs `etcdops snapshot status ARG -w json`, runs the release's own status on
/// `oracle_file`, asserts etcdutl's four numbers agree and returns our JSON.
fn status_agrees(cluster: &Cluster, arg: &str, oracle_file: &Path) -> serde_json::Value {
    let ours = etcdops(&args(&["snapshot", "status", arg, "-w", "json"]), &[]);
    ours.expect_code(0);
    let ours = ours.json();
    let theirs = cluster
        .version
        .snapshot_status(oracle_file)
        .unwrap_or_else(|e| panic!("etcd's status failed on {}: {e}", oracle_file.display()));
    for (our_name, their_name) in [
        ("hash", "hash"),
        ("revision", "revision"),
        ("total_key", "totalKey"),
        ("total_size", "totalSize"),
    ] {
        assert_eq!(
            ours[our_name], theirs[their_name],
            "{our_name} of {arg}: ours {ours}\netcd's {theirs}"
        );
    }
    println!(
        "etcd {} {}: hash={} revision={} totalKey={} totalSize={} (equal)",
        cluster.version.version_string(),
        Path::new(arg)
            .file_name()
            .map_or(arg.into(), |n| n.to_string_lossy()),
        theirs["hash"],
        theirs["revision"],
        theirs["totalKey"],
        theirs["totalSize"]
    );
    ours
}

#[test]
fn status_equals_etcds_own_on_etcdops_and_etcdctl_snapshots() {
    let cluster = Cluster::start(3, Security::Plain);
    let history = write_history(&cluster);
    let store = cluster.dir().join("backups");

    // etcdops, uncompressed: the file is what etcd streamed, trailer included.
    let plain = crate::save_snapshot(&cluster, &store, "none");
    let ours = status_agrees(&cluster, &plain.display().to_string(), &plain);
    assert_eq!(ours["revision"], history.last_revision);
    assert_eq!(ours["compact_revision"], history.compacted);
    assert_eq!(ours["live_keys"], history.live_keys);
    assert_eq!(ours["leases"], history.leases);
    assert_eq!(ours["auth_enabled"], false);
    assert_eq!(ours["trailer"], "verified");
    assert_eq!(ours["compression"], "none");
    assert!(ours["consistent_index"].as_u64().unwrap() > 0, "{ours}");
    let buckets = ours["buckets"].as_array().unwrap();
    let names: Vec<&str> = buckets
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "buckets in key order");
    let per_bucket: u64 = buckets.iter().map(|b| b["keys"].as_u64().unwrap()).sum();
    assert_eq!(per_bucket, ours["total_key"].as_u64().unwrap());

    // Members: the cluster's, with etcdctl's IDs.
    let (code, list) = etcdctl_json(
        &cluster,
        &[
            "--endpoints",
            &cluster.endpoints(),
            "member",
            "list",
            "-w",
            "json",
        ],
    );
    assert_eq!(code, 0);
    let mut expected: Vec<(String, String, String)> = list["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                hex(&m["ID"]),
                m["name"].as_str().unwrap().to_string(),
                m["peerURLs"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    expected.sort();
    let mut recorded: Vec<(String, String, String)> = ours["members"]
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
    recorded.sort();
    assert_eq!(recorded, expected);
    assert_eq!(recorded.len(), 3);

    // etcdops, zstd: read from the file and from a store URL; etcd's tool gets the
    // decompressed bytes.
    let packed = crate::save_snapshot(&cluster, &store, "zstd");
    let unpacked = cluster.dir().join("unpacked.db");
    std::fs::write(
        &unpacked,
        zstd::decode_all(&std::fs::read(&packed).unwrap()[..]).unwrap(),
    )
    .unwrap();
    let from_file = status_agrees(&cluster, &packed.display().to_string(), &unpacked);
    assert_eq!(from_file["compression"], "zstd");
    let url = format!("file://{}", packed.display());
    let from_store = status_agrees(&cluster, &url, &unpacked);
    assert_eq!(from_store["hash"], from_file["hash"]);
    assert_eq!(from_store["db_sha256"], from_file["db_sha256"]);

    // etcdctl's own snapshot file.
    let by_etcdctl = cluster.dir().join("etcdctl.db");
    let out = cluster.etcdctl(&[
        "--endpoints",
        &cluster.members[0].client_url,
        "snapshot",
        "save",
        &by_etcdctl.display().to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let theirs = status_agrees(&cluster, &by_etcdctl.display().to_string(), &by_etcdctl);
    assert_eq!(theirs["live_keys"], history.live_keys);
    assert_eq!(theirs["revision"], history.last_revision);

    // The table view leads with etcdutl's columns.
    let table = etcdops(
        &args(&["snapshot", "status", &by_etcdctl.display().to_string()]),
        &[],
    );
    table.expect_code(0);
    let header = table.stdout.lines().nth(1).unwrap();
    assert!(
        header.starts_with("| HASH ") && header.contains("| TOTAL SIZE |"),
        "{table}"
    );
    assert!(
        table
            .stdout
            .contains(&format!("{:x}", theirs["hash"].as_u64().unwrap())),
        "{table}"
    );
}

#[test]
fn raw_db_copies_damaged_trailers_and_truncated_files() {
    let mut cluster = Cluster::start(1, Security::Auth);
    let history = write_history(&cluster);
    let store = cluster.dir().join("backups");
    let saved = crate::save_snapshot(&cluster, &store, "none");
    let ours = status_agrees(&cluster, &saved.display().to_string(), &saved);
    assert_eq!(ours["auth_enabled"], true);
    assert_eq!(ours["live_keys"], history.live_keys);

    // A flipped byte in etcd's trailer: refused, unless --skip-hash-check.
    let mut bytes = std::fs::read(&saved).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    let damaged = cluster.dir().join("damaged.db");
    std::fs::write(&damaged, &bytes).unwrap();
    let damaged_arg = damaged.display().to_string();
    let refused = etcdops(&args(&["snapshot", "status", &damaged_arg]), &[]);
    assert_clear_error(&refused, "--skip-hash-check");
    let skipped = etcdops(
        &args(&[
            "snapshot",
            "status",
            &damaged_arg,
            "--skip-hash-check",
            "-w",
            "json",
        ]),
        &[],
    );
    skipped.expect_code(0);
    // A plain file: the db's SHA-256 is not even computed (the costliest part of a status).
    assert!(skipped.stderr.contains("not checked"), "{skipped}");
    assert_eq!(skipped.json()["trailer"], "not_checked");
    assert!(skipped.json().get("db_sha256").is_none(), "{skipped}");
    assert_eq!(skipped.json()["hash"], ours["hash"]);
    // A zstd file is refused too; with the check skipped its db is not hashed either (only
    // decompressed): the trailer is reported as not checked, as for a plain file.
    let damaged_zst = cluster.dir().join("damaged.db.zst");
    std::fs::write(&damaged_zst, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
    let damaged_zst_arg = damaged_zst.display().to_string();
    let refused = etcdops(&args(&["snapshot", "status", &damaged_zst_arg]), &[]);
    assert_clear_error(&refused, "--skip-hash-check");
    let skipped = etcdops(
        &args(&[
            "snapshot",
            "status",
            &damaged_zst_arg,
            "--skip-hash-check",
            "-w",
            "json",
        ]),
        &[],
    );
    skipped.expect_code(0);
    assert!(skipped.stderr.contains("not checked"), "{skipped}");
    assert_eq!(skipped.json()["trailer"], "not_checked");
    assert!(skipped.json().get("db_sha256").is_none(), "{skipped}");
    assert_eq!(skipped.json()["hash"], ours["hash"]);

    // A truncated snapshot: a clear error, no panic.
    let truncated = cluster.dir().join("truncated.db");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2 - 32]).unwrap();
    let cut = etcdops(
        &args(&["snapshot", "status", &truncated.display().to_string()]),
        &[],
    );
    assert_clear_error(&cut, "not a readable etcd db");

    // A raw member/snap/db (no trailer) from the stopped member.
    let data_dir = cluster.members[0].data_dir.clone();
    cluster.kill_member(0);
    let raw = cluster.dir().join("raw.db");
    std::fs::copy(data_dir.join("member/snap/db"), &raw).unwrap();
    let raw_status = status_agrees(&cluster, &raw.display().to_string(), &raw);
    assert_eq!(raw_status["trailer"], "absent");
    assert_eq!(raw_status["members"][0]["name"], "m0");
}
