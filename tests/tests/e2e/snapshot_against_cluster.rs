//! `snapshot verify --against-cluster` against real etcd: a good backup matches (also once the
//! cluster compacted after it, below its revision: the backup is hashed as a member with that
//! compaction would); a backup that differs from the cluster at its revision, with every
//! checksum good, fails naming the member (another cluster's backup is not compared, said
//! so); a cluster compacted past the backup's revision cannot be compared (exit 2, said so).

use etcdops_tests::{Cluster, Run, Security};
use serde_json::Value;

use crate::run;

/// Saves into `store` (a local dir) and returns the backup's URL and revision.
pub(crate) fn save(cluster: &Cluster, store: &std::path::Path) -> (String, i64) {
    let store_arg = store.display().to_string();
    let saved = run(cluster, &["snapshot", "save", &store_arg, "-w", "json"]);
    saved.expect_code(0);
    let manifest = saved.json()["manifest"].clone();
    let object = manifest["object"].as_str().unwrap();
    (
        format!("{store_arg}/{object}"),
        manifest["revision"].as_i64().unwrap(),
    )
}

/// Rewrites the manifest of the local backup at `url` to name `cluster`'s ID: a changed backup
/// passed off as that cluster's (no checksum covers the manifest's cluster ID).
pub(crate) fn pass_off_as(url: &str, cluster: &Cluster) {
    let (code, status) = crate::etcdctl_json(
        cluster,
        &[
            "--endpoints",
            &cluster.members[0].client_url,
            "endpoint",
            "status",
            "-w",
            "json",
        ],
    );
    assert_eq!(code, 0, "{status}");
    let id = status[0]["Status"]["header"]["cluster_id"]
        .as_u64()
        .unwrap_or_else(|| panic!("{status}"));
    let path = format!("{url}.manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["cluster_id"] = Value::from(format!("{id:016x}"));
    std::fs::write(&path, manifest.to_string()).unwrap();
}

/// Puts, an overwrite and a delete; returns the last revision.
fn write_history(cluster: &Cluster, value: &str) -> i64 {
    cluster.put_keys("/k/", 5);
    cluster.put("/k/0000", "overwritten");
    cluster.delete("/k/0001");
    cluster.put("/k/x", value);
    cluster.put("/k/y", "y")
}

/// `snapshot verify URL --against-cluster -w json` through `cluster`, expecting exit `code`:
/// the run and its JSON.
fn verify_against(cluster: &Cluster, url: &str, code: i32) -> (Run, Value) {
    let verify = run(
        cluster,
        &["snapshot", "verify", url, "--against-cluster", "-w", "json"],
    );
    verify.expect_code(code);
    let out = verify.json();
    (verify, out)
}

/// etcdctl's `compact REV --physical` on `cluster`.
fn compact_physically(cluster: &Cluster, revision: i64) {
    let revision = revision.to_string();
    let compacted = cluster.etcdctl(&[
        "--endpoints",
        &cluster.endpoints(),
        "compact",
        &revision,
        "--physical",
    ]);
    assert!(compacted.status.success(), "{compacted:?}");
}

#[test]
fn a_good_backup_matches_even_after_a_later_compaction_and_not_once_compacted_past() {
    let cluster = Cluster::start(1, Security::Plain);
    let last = write_history(&cluster, "x");
    let store = cluster.dir().join("backups");
    let (url, revision) = save(&cluster, &store);
    assert_eq!(revision, last);

    let (_, out) = verify_against(&cluster, &url, 0);
    let against = &out["against_cluster"];
    assert_eq!(against["verdict"], "match", "{out}");
    assert_eq!(against["revision"], revision);
    assert_eq!(against["compact_revision"], -1);
    assert_eq!(against["members"][0]["outcome"], "match", "{out}");
    assert_eq!(against["members"][0]["hash"], against["hash"]);

    // The cluster moves on and compacts below the backup's revision (the overwritten and
    // deleted keys' old revisions go): still the same history at the backup's revision.
    cluster.put("/k/z", "z");
    cluster.put("/k/w", "w");
    compact_physically(&cluster, revision - 1);
    let (_, out) = verify_against(&cluster, &url, 0);
    let against = &out["against_cluster"];
    assert_eq!(against["verdict"], "match", "{out}");
    assert_eq!(
        against["members"][0]["compact_revision"],
        revision - 1,
        "{out}"
    );
    assert_ne!(
        against["members"][0]["hash"], against["hash"],
        "the member hashes above its own compaction: {out}"
    );
    assert_eq!(
        against["members"][0]["backup_hash"],
        against["members"][0]["hash"]
    );

    // Compacted past the backup's revision: nothing to compare with, and said so.
    compact_physically(&cluster, revision + 1);
    let verify = run(&cluster, &["snapshot", "verify", &url, "--against-cluster"]);
    verify.expect_code(2);
    assert!(
        verify.stderr.contains(&format!(
            "the cluster compacted past revision {revision}; cannot compare"
        )),
        "{verify:?}"
    );
    // Without the flag the backup itself still verifies.
    run(&cluster, &["snapshot", "verify", &url]).expect_code(0);
}

#[test]
fn a_backup_with_other_content_at_the_same_revision_fails_naming_the_member() {
    // What a backup whose content was changed and whose checksums were all re-made looks
    // like to a verifier: a real backup (its manifest, SHA-256s and etcd trailer all good) of
    // a db that holds one other value at the same revision: here another cluster's, with
    // the same writes but one value.
    let live = Cluster::start(1, Security::Plain);
    let other = Cluster::start(1, Security::Plain);
    let at = write_history(&live, "original");
    assert_eq!(write_history(&other, "altered"), at);
    let store = other.dir().join("backups");
    let (url, revision) = save(&other, &store);
    assert_eq!(revision, at);
    // The backup alone passes.
    run(&live, &["snapshot", "verify", &url]).expect_code(0);
    // As it is, its manifest names the other cluster: not compared, said so.
    let (_, out) = verify_against(&live, &url, 2);
    let reason = out["against_cluster"]["members"][0]["reason"].as_str();
    assert!(
        reason.is_some_and(|r| r.contains("not a backup of this cluster")),
        "{out}"
    );
    pass_off_as(&url, &live);
    run(&live, &["snapshot", "verify", &url]).expect_code(0);

    let (verify, out) = verify_against(&live, &url, 1);
    let against = &out["against_cluster"];
    assert_eq!(against["verdict"], "differs", "{out}");
    assert_eq!(against["members"][0]["outcome"], "differs", "{out}");
    let endpoint = against["members"][0]["endpoint"].as_str().unwrap();
    let member = against["members"][0]["member_id"].as_str().unwrap();
    assert_eq!(against["members"].as_array().unwrap().len(), 1);
    let line = verify
        .stderr
        .lines()
        .find(|l| l.contains("differs from the cluster"))
        .unwrap_or_else(|| panic!("{verify:?}"));
    assert!(
        line.contains(&format!("member {member} ({endpoint})"))
            && line.contains(&format!("revision {revision}")),
        "{line}"
    );
}
