//! `snapshot compact` on chains that go on: a compaction taken while `backup run` keeps
//! publishing, the chain growing past its compacted copy, then retention and restarts on that
//! store; odd `--chain` values, work dirs, leases, broken chains (`backup run
//! --compact-after` itself: backup_run_compaction.rs).

use std::path::Path;

use etcdops_tests::{Cluster, Security, etcdops};
use serde_json::Value;

use crate::backup_run::{BackupRun, keys_at, write_changes};

pub(crate) fn store_arg(store: &Path) -> String {
    store.display().to_string()
}

/// `etcdops snapshot <args> -w json`.
pub(crate) fn snapshot_json(args: &[&str]) -> etcdops_tests::Run {
    let mut all: Vec<String> = vec!["snapshot".into()];
    all.extend(args.iter().map(|s| s.to_string()));
    all.extend(["-w".to_string(), "json".to_string()]);
    etcdops(&all, &[])
}

/// The complete full backups of `store` as `snapshot list` shows them.
pub(crate) fn complete_backups(store: &Path) -> Vec<Value> {
    let listed = snapshot_json(&["list", &store_arg(store)]);
    listed.expect_code(0);
    listed.json()["backups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["complete"] == true)
        .cloned()
        .collect()
}

/// A chain compacted while its `backup run` goes on, which then grows past the compacted
/// copy before the run stops: (cluster, store, the chain's full backup, the compacted
/// backup, its revision, the chain's last revision).
fn chain_grown_past_its_copy(tag: &str) -> (Cluster, std::path::PathBuf, String, String, i64, i64) {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 20);
    let store = cluster.dir().join(format!("compact-{tag}"));
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    let first = *write_changes(&cluster, tag, 2).last().unwrap();
    backup.wait_published(first);
    // Compacted while the run holds its lock and keeps publishing.
    let done = snapshot_json(&["compact", &store_arg(&store)]);
    done.expect_code(0);
    let copy = done.json()["manifest"].clone();
    let copy_revision = copy["revision"].as_i64().unwrap();
    assert!(copy_revision >= first, "{copy}");
    let object = copy["object"].as_str().unwrap().to_string();
    let last = *write_changes(&cluster, &format!("{tag}2"), 2)
        .last()
        .unwrap();
    backup.wait_published(last);
    backup.stop_clean();
    assert!(last > copy_revision);
    (cluster, store, full, object, copy_revision, last)
}

#[test]
fn prune_keep_last_one_keeps_a_chain_that_reaches_past_its_compacted_copy() {
    let (cluster, store, full, object, copy_revision, last) = chain_grown_past_its_copy("keep");
    let backups = complete_backups(&store);
    let chain = &backups
        .iter()
        .find(|b| b["object"] == full.as_str())
        .unwrap()["chain"];
    assert_eq!(chain["to_revision"], last, "{chain}");

    // The run is stopped: only the rules decide. The compacted copy is dated later than the
    // chain's full backup, but the chain holds newer revisions than the copy.
    let pruned = snapshot_json(&[
        "prune",
        &store_arg(&store),
        "--keep-last",
        "1",
        "--orphan-grace",
        "0s",
    ]);
    pruned.expect_code(0);
    let left: Vec<String> = complete_backups(&store)
        .iter()
        .map(|b| b["object"].as_str().unwrap().to_string())
        .collect();
    assert!(
        left.contains(&full),
        "the only backup reaching revisions {}..={last} was deleted: {pruned}",
        copy_revision + 1
    );
    // The newest published revision still restores, as the source served it.
    let rev = last.to_string();
    let (restored, result) = crate::backup_run::restore_point(&store, &["--to-revision", &rev]);
    crate::backup_run::assert_restored(&restored, &keys_at(&cluster, Some(last)), last, &result);

    // Compacted again, to the chain's end: now the new copy holds everything the chain
    // reaches, and --keep-last 1 leaves only it (the fix keeps nothing for ever).
    let again = snapshot_json(&["compact", &store_arg(&store)]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], true, "{again}");
    assert_eq!(again.json()["manifest"]["revision"], last, "{again}");
    let newest = again.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    let pruned = snapshot_json(&[
        "prune",
        &store_arg(&store),
        "--keep-last",
        "1",
        "--orphan-grace",
        "0s",
    ]);
    pruned.expect_code(0);
    let deleted = pruned.json()["deleted"].to_string();
    assert!(
        deleted.contains(&full) && deleted.contains(&object),
        "{pruned}"
    );
    let left: Vec<Value> = complete_backups(&store);
    assert_eq!(left.len(), 1, "{left:#?}");
    assert_eq!(left[0]["object"], newest.as_str());
    let (restored, result) = crate::backup_run::restore_point(&store, &["--to-revision", &rev]);
    assert_eq!(result["plan"]["full"], newest.as_str(), "{result}");
    crate::backup_run::assert_restored(&restored, &keys_at(&cluster, Some(last)), last, &result);
}

#[test]
fn a_restarted_run_continues_the_chain_not_its_compacted_copy() {
    let (cluster, store, full, object, _, last) = chain_grown_past_its_copy("resume");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let more = *write_changes(&cluster, "resume3", 1).last().unwrap();
    backup.wait_published(more);
    let events = backup.stop();
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "full_saved" || e["event"] == "gap" || e["event"] == "failed"),
        "the chain was continued: {events:#?}"
    );
    let backups = complete_backups(&store);
    let chain = &backups
        .iter()
        .find(|b| b["object"] == full.as_str())
        .unwrap()["chain"];
    assert!(chain["to_revision"].as_i64().unwrap() >= more, "{chain}");
    assert_eq!(chain["continuous"], true, "{chain}");
    let copy = backups
        .iter()
        .find(|b| b["object"] == object.as_str())
        .unwrap();
    assert!(copy.get("chain").is_none_or(Value::is_null), "{copy}");
    // Every revision of the restart restores from the chain.
    let rev = more.to_string();
    let (restored, result) = crate::backup_run::restore_point(&store, &["--to-revision", &rev]);
    assert_eq!(result["plan"]["full"], full.as_str(), "{result}");
    crate::backup_run::assert_restored(&restored, &keys_at(&cluster, Some(more)), more, &result);
    assert!(more > last);
}

#[test]
fn chain_naming_a_segment_a_missing_backup_or_a_plain_full_backup_is_refused_in_one_line() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("compact-flags");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    let last = *write_changes(&cluster, "flags", 1).last().unwrap();
    backup.wait_published(last);
    backup.stop();
    let listed = snapshot_json(&["list", &store_arg(&store)]);
    let catalog = listed.json();
    let segment = catalog["backups"][0]["deltas"][0]["object"]
        .as_str()
        .unwrap_or_else(|| panic!("a segment: {catalog}"))
        .to_string();
    let before = catalog["backups"].clone();
    for chain in [
        segment.as_str(),
        "etcd-0000/nothing.db.zst",
        "../../etc/passwd",
    ] {
        let refused = snapshot_json(&["compact", &store_arg(&store), "--chain", chain]);
        crate::assert_clear_error(&refused, "chain");
        assert_eq!(
            snapshot_json(&["list", &store_arg(&store)]).json()["backups"],
            before,
            "nothing written for --chain {chain}"
        );
    }
    // The full backup by name, and by its manifest's name, both compact it.
    let done = snapshot_json(&[
        "compact",
        &store_arg(&store),
        "--chain",
        &format!("{full}.manifest.json"),
    ]);
    done.expect_code(0);
    assert_eq!(done.json()["source"], full.as_str(), "{done}");
    assert_eq!(done.json()["manifest"]["revision"], last, "{done}");
    // The compacted backup has no segments: naming it is refused, not a silent no-op.
    let object = done.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    let refused = snapshot_json(&["compact", &store_arg(&store), "--chain", &object]);
    crate::assert_clear_error(&refused, "nothing to compact");
}

/// The restore's leases detached, as `assert_restored` reads them, from a compaction's result.
fn detached_by(compacted: &Value) -> Value {
    serde_json::json!({"point_in_time": {"leases_detached": compacted["leases_detached"]}})
}

#[test]
fn a_chain_on_a_compacted_backup_compacts_again_and_restores_key_for_key() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 20);
    let store = cluster.dir().join("compact-nested");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    let first = *write_changes(&cluster, "n1", 2).last().unwrap();
    backup.wait_published(first);
    backup.stop();
    let done = snapshot_json(&["compact", &store_arg(&store)]);
    done.expect_code(0);
    let copy = done.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    // Retention drops the chain (its copy reaches its end): the copy is all that is left.
    let pruned = snapshot_json(&[
        "prune",
        &store_arg(&store),
        "--keep-last",
        "1",
        "--orphan-grace",
        "0s",
    ]);
    pruned.expect_code(0);
    assert!(
        pruned.json()["deleted"].to_string().contains(&full),
        "{pruned}"
    );

    // A restarted run continues the copy as a full backup like any other.
    let backup = BackupRun::start(&cluster, &store, &[]);
    let second = *write_changes(&cluster, "n2", 2).last().unwrap();
    backup.wait_published(second);
    let events = backup.stop();
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "full_saved" || e["event"] == "gap" || e["event"] == "failed"),
        "{events:#?}"
    );
    let backups = complete_backups(&store);
    assert_eq!(backups.len(), 1, "{backups:#?}");
    assert_eq!(backups[0]["object"], copy.as_str());
    assert_eq!(backups[0]["chain"]["to_revision"], second, "{backups:#?}");

    // That chain restored to its end, then compacted and the copy of the copy restored:
    // both serve what the source served at that revision.
    let rev = second.to_string();
    let (by_chain, chain_result) =
        crate::backup_run::restore_point(&store, &["--to-revision", &rev]);
    assert_eq!(
        chain_result["plan"]["full"],
        copy.as_str(),
        "{chain_result}"
    );
    let expected = keys_at(&cluster, Some(second));
    crate::backup_run::assert_restored(&by_chain, &expected, second, &chain_result);
    let again = snapshot_json(&["compact", &store_arg(&store)]);
    again.expect_code(0);
    let compacted = again.json();
    assert_eq!(compacted["source"], copy.as_str(), "{compacted}");
    assert_eq!(
        compacted["manifest"]["compacted_from"]["full_backup"],
        copy.as_str()
    );
    assert_eq!(compacted["manifest"]["revision"], second, "{compacted}");
    let object = compacted["manifest"]["object"].as_str().unwrap();
    let url = format!("{}/{object}", store_arg(&store));
    let mut restored = Cluster::plan_restore(1, "n");
    crate::snapshot_restore::restore_from(&url, &restored, 0, &[], &[]).expect_code(0);
    restored.start_restored();
    crate::backup_run::assert_restored(&restored, &expected, second, &detached_by(&compacted));
    assert!(
        keys_at(&restored, None) == keys_at(&by_chain, None),
        "the copy of the copy and the chain restore differ"
    );
}

#[test]
fn two_compactions_of_one_chain_at_once_publish_one_verified_copy() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 1500, 1024);
    let store = cluster.dir().join("compact-twice");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    cluster.put_random("/big/", 1500, 1024);
    let last = *write_changes(&cluster, "tw", 2).last().unwrap();
    backup.wait_published(last);
    backup.stop();
    let spawn = || {
        std::process::Command::new(etcdops_tests::etcdops_path())
            .args(["snapshot", "compact", &store_arg(&store), "-w", "json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        // The one that found the chain claimed by the other wrote nothing and says so.
        if result["busy"].is_null() {
            assert_eq!(result["manifest"]["revision"], last, "{result}");
        }
    }
    let copies: Vec<Value> = complete_backups(&store)
        .into_iter()
        .filter(|b| b["manifest"]["compacted_from"]["full_backup"] == full.as_str())
        .collect();
    // The compaction lock: one copy, never two.
    assert_eq!(copies.len(), 1, "{copies:#?}");
    for copy in &copies {
        let url = format!("{}/{}", store_arg(&store), copy["object"].as_str().unwrap());
        etcdops(&["snapshot".into(), "verify".into(), url], &[]).expect_code(0);
    }
    let again = snapshot_json(&["compact", &store_arg(&store)]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false, "{again}");
}

#[test]
fn an_encrypted_chain_with_the_wrong_identity_is_refused_and_writes_nothing() {
    let cluster = Cluster::start(1, Security::Plain);
    let keygen = |name: &str| {
        let path = cluster.dir().join(name);
        let made = snapshot_json(&["keygen", "-o", &path.display().to_string()]);
        made.expect_code(0);
        (path, made.json()["recipient"].as_str().unwrap().to_string())
    };
    let (_, recipient) = keygen("right.txt");
    let (wrong, _) = keygen("wrong.txt");
    let store = cluster.dir().join("compact-wrong-identity");
    let backup = BackupRun::start(&cluster, &store, &["--encrypt-to", &recipient]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let last = *write_changes(&cluster, "wi", 1).last().unwrap();
    backup.wait_published(last);
    backup.stop();
    let before = snapshot_json(&["list", &store_arg(&store)]).json();
    let refused = snapshot_json(&[
        "compact",
        &store_arg(&store),
        "--identity",
        &wrong.display().to_string(),
    ]);
    crate::assert_clear_error(&refused, "identity");
    let secret = std::fs::read_to_string(&wrong).unwrap();
    let secret = secret
        .lines()
        .find(|l| l.starts_with("AGE-SECRET-KEY"))
        .unwrap();
    assert!(!refused.stderr.contains(secret) && !refused.stdout.contains(secret));
    let after = snapshot_json(&["list", &store_arg(&store)]).json();
    assert_eq!(after["backups"], before["backups"]);
    assert_eq!(after["orphans"], before["orphans"], "no object left behind");
    // A --compact-after run refuses the wrong identity at start.
    let out = etcdops(
        &[
            cluster.client_flags(),
            [
                "backup",
                "run",
                &store_arg(&store),
                "--encrypt-to",
                &recipient,
                "--compact-after",
                "2",
                "--identity",
                &wrong.display().to_string(),
            ]
            .map(String::from)
            .to_vec(),
        ]
        .concat(),
        &[],
    );
    crate::assert_clear_error(&out, "identity");
}

/// The leases `cluster` holds, each with its granted TTL, sorted (etcdctl's answers).
fn leases_with_ttl(cluster: &Cluster) -> Vec<(i64, i64)> {
    crate::backup_run_leases::lease_state(cluster)
        .into_iter()
        .map(|(id, ttl, _)| (id, ttl))
        .collect()
}

#[test]
fn leases_revoked_granted_moved_and_unused_inside_the_chain_compact_as_the_chain_restores() {
    use etcd_client::PutOptions;
    let cluster = Cluster::start(1, Security::Plain);
    let leased = |lease: i64| Some(PutOptions::new().with_lease(lease));
    // Before the full backup: a lease revoked inside the chain, one that lives on.
    let (l1, l5) = etcdops_tests::block_on(async {
        let mut c = cluster.client().await;
        let l1 = c.lease_grant(600, None).await?.id();
        let l5 = c.lease_grant(900, None).await?.id();
        c.put("/l1/a", "a", leased(l1)).await?;
        c.put("/l1/b", "b", leased(l1)).await?;
        c.put("/l5/a", "a", leased(l5)).await?;
        c.put("/l5/b", "b", leased(l5)).await?;
        c.put("/re/k", "0", None).await?;
        Ok::<_, etcd_client::Error>((l1, l5))
    })
    .unwrap();
    let store = cluster.dir().join("compact-leases");
    let backup = BackupRun::start(&cluster, &store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let last = etcdops_tests::block_on(async {
        let mut c = cluster.client().await;
        c.lease_revoke(l1).await?;
        let l2 = c.lease_grant(700, None).await?.id();
        let l3 = c.lease_grant(800, None).await?.id();
        c.put("/l2/a", "a", leased(l2)).await?;
        c.put("/l3/a", "a", leased(l3)).await?;
        c.delete("/l3/a", None).await?;
        // A key moved from a lease of the full backup to one of the chain, one taken off.
        c.put("/l5/b", "moved", leased(l2)).await?;
        c.put("/l5/a", "plain", None).await?;
        // Deleted and re-created: a new create revision and version 1.
        c.delete("/re/k", None).await?;
        let put = c.put("/re/k", "1", None).await?;
        Ok::<_, etcd_client::Error>(put.header().unwrap().revision())
    })
    .unwrap();
    backup.wait_published(last);
    backup.stop();
    let expected = keys_at(&cluster, Some(last));
    let rev = last.to_string();
    let (by_chain, chain_result) =
        crate::backup_run::restore_point(&store, &["--to-revision", &rev]);
    crate::backup_run::assert_restored(&by_chain, &expected, last, &chain_result);
    let done = snapshot_json(&["compact", &store_arg(&store)]);
    done.expect_code(0);
    let compacted = done.json();
    let object = compacted["manifest"]["object"].as_str().unwrap();
    let url = format!("{}/{object}", store_arg(&store));
    let mut by_copy = Cluster::plan_restore(1, "l");
    crate::snapshot_restore::restore_from(&url, &by_copy, 0, &[], &[]).expect_code(0);
    by_copy.start_restored();
    crate::backup_run::assert_restored(&by_copy, &expected, last, &detached_by(&compacted));
    let re = keys_at(&by_copy, None)
        .into_iter()
        .find(|kv| kv["key"] == "/re/k" || kv["key"] == "L3JlL2s=")
        .unwrap();
    assert_eq!(re["version"], 1, "{re}");
    // The leases: the same IDs and granted TTLs in both restores.
    let from_chain = leases_with_ttl(&by_chain);
    let from_copy = leases_with_ttl(&by_copy);
    let source = leases_with_ttl(&cluster);
    eprintln!("leases: source {source:?}, chain restore {from_chain:?}, compacted {from_copy:?}");
    assert_eq!(
        from_copy, from_chain,
        "compacted and chain restores hold other leases"
    );
    assert!(from_copy.iter().any(|(id, ttl)| *id == l5 && *ttl == 900));
    // etcd's own hash of every revision up to the last (keys, values, revisions, versions,
    // leases, tombstones): the same in the source, the chain restore and the compacted one.
    let hash = hash_kv(&cluster, last);
    assert_ne!(
        hash,
        hash_kv(&cluster, last - 1),
        "the hash sees the last change"
    );
    assert_eq!(
        hash_kv(&by_chain, last),
        hash,
        "the chain restore's history differs"
    );
    assert_eq!(
        hash_kv(&by_copy, last),
        hash,
        "the compacted backup's history differs"
    );
}

/// `etcdctl endpoint hashkv --rev REV` of `cluster`'s first member.
fn hash_kv(cluster: &Cluster, rev: i64) -> i64 {
    let rev = rev.to_string();
    let (code, out) = crate::etcdctl_json(
        cluster,
        &[
            "--endpoints",
            &cluster.members[0].client_url,
            "endpoint",
            "hashkv",
            "--rev",
            &rev,
            "-w",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out}");
    out[0]["HashKV"]["hash"]
        .as_i64()
        .unwrap_or_else(|| panic!("{out}"))
}

#[test]
fn a_lease_revoked_inside_the_chain_is_not_in_the_compacted_backup() {
    use etcd_client::PutOptions;
    let cluster = Cluster::start(1, Security::Plain);
    let revoked = etcdops_tests::block_on(async {
        let mut c = cluster.client().await;
        let lease = c.lease_grant(600, None).await?.id();
        c.put("/l/a", "a", Some(PutOptions::new().with_lease(lease)))
            .await?;
        Ok::<_, etcd_client::Error>(lease)
    })
    .unwrap();
    let store = cluster.dir().join("compact-revoked");
    let backup = BackupRun::start(&cluster, &store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let last = etcdops_tests::block_on(async {
        let mut c = cluster.client().await;
        c.lease_revoke(revoked).await?;
        let put = c.put("/after", "x", None).await?;
        Ok::<_, etcd_client::Error>(put.header().unwrap().revision())
    })
    .unwrap();
    backup.wait_published(last);
    // The run lists the leases at each check: the revocation is in once it has looked.
    backup.wait_for("the revocation recorded", |e| {
        e["event"] == "leases_recorded" && e["leases"] == 0
    });
    backup.stop();
    let done = snapshot_json(&["compact", &store_arg(&store)]);
    done.expect_code(0);
    assert_eq!(
        done.json()["leases_removed"],
        serde_json::json!([format!("{revoked:016x}")])
    );
    let object = done.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    let url = format!("{}/{object}", store_arg(&store));
    let mut restored = Cluster::plan_restore(1, "v");
    crate::snapshot_restore::restore_from(&url, &restored, 0, &[], &[]).expect_code(0);
    restored.start_restored();
    assert_eq!(leases_with_ttl(&restored), leases_with_ttl(&cluster));
}

/// Whether this process may mount a tmpfs.
fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

#[test]
fn a_work_dir_missing_a_file_read_only_or_full_fails_in_one_line_and_leaves_nothing() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 1500, 1024);
    let store = cluster.dir().join("compact-workdir");
    let backup = BackupRun::start(&cluster, &store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    cluster.put_random("/big/", 1500, 1024);
    let last = *write_changes(&cluster, "wd", 1).last().unwrap();
    backup.wait_published(last);
    backup.stop();
    let before = snapshot_json(&["list", &store_arg(&store)]).json();
    let unchanged = || {
        let now = snapshot_json(&["list", &store_arg(&store)]).json();
        assert_eq!(now["backups"], before["backups"]);
        assert_eq!(now["orphans"], before["orphans"], "no object left behind");
    };
    let file = cluster.dir().join("compact-a-file");
    std::fs::write(&file, "x").unwrap();
    let missing = cluster.dir().join("compact-missing");
    for dir in [&missing, &file] {
        let refused = snapshot_json(&[
            "compact",
            &store_arg(&store),
            "--work-dir",
            &dir.display().to_string(),
        ]);
        crate::assert_clear_error(&refused, &dir.display().to_string());
        unchanged();
    }
    if !is_root() {
        eprintln!("the read-only and full cases skipped: they need root to mount a tmpfs");
        return;
    }
    // Read-only, then from far too small to just short of the room a compaction needs.
    for (n, size) in ["1m,ro", "64k", "1m", "3m", "5m", "64m"].iter().enumerate() {
        let dir = cluster.dir().join(format!("compact-tmpfs-{n}"));
        let _mounted = crate::snapshot_failures::Tmpfs::mount(&dir, size);
        let out = snapshot_json(&[
            "compact",
            &store_arg(&store),
            "--work-dir",
            &dir.display().to_string(),
        ]);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(left.is_empty(), "{size}: the work dir keeps {left:?}");
        if out.code == 0 {
            eprintln!("a compaction fits in {size}");
            assert_eq!(out.json()["manifest"]["revision"], last);
            assert!(n > 4, "{size}: the compaction should not fit");
            break;
        }
        assert!(n < 5, "64m is room enough: {out}");
        let needle = if size.ends_with(",ro") {
            "read-only"
        } else {
            "ran out of space"
        };
        crate::assert_clear_error(&out, needle);
        eprintln!("{size}: {}", out.stderr.trim());
        unchanged();
    }
}

#[test]
fn a_chain_broken_in_the_middle_by_a_replaced_or_missing_segment_compacts_to_its_break() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("compact-broken");
    let backup = BackupRun::start(&cluster, &store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    for round in 0..3 {
        let last = *write_changes(&cluster, &format!("b{round}"), round + 1)
            .last()
            .unwrap();
        backup.wait_published(last);
    }
    backup.stop();
    let catalog = snapshot_json(&["list", &store_arg(&store)]).json();
    let deltas: Vec<Value> = catalog["backups"][0]["deltas"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["manifest"]["changes"].as_u64() > Some(0))
        .cloned()
        .collect();
    assert!(deltas.len() >= 3, "{catalog:#}");
    let first_to = deltas[0]["manifest"]["to_revision"].as_i64().unwrap();
    let segment = |d: &Value| store.join(d["object"].as_str().unwrap());
    let manifest_of = |d: &Value| {
        let mut name = segment(d).into_os_string();
        name.push(".manifest.json");
        std::path::PathBuf::from(name)
    };

    // A segment's bytes replaced by another valid segment's of another size (its manifest
    // left): the chain is broken there, and compacted up to that segment, with a warning
    // naming it. (The catalog tells a replaced segment by its size; one of the very same size
    // fails the compaction's check of its SHA-256 instead.)
    let original = std::fs::read(segment(&deltas[1])).unwrap();
    let size = |d: &Value| std::fs::metadata(segment(d)).unwrap().len();
    let other = deltas[2..]
        .iter()
        .find(|d| size(d) != size(&deltas[1]))
        .expect("a segment of another size: rounds write more changes each");
    std::fs::copy(segment(other), segment(&deltas[1])).unwrap();
    let done = snapshot_json(&["compact", &store_arg(&store)]);
    done.expect_code(0);
    let result = done.json();
    assert_eq!(result["manifest"]["revision"], first_to, "{result}");
    assert!(
        result["warnings"]
            .to_string()
            .contains(deltas[1]["object"].as_str().unwrap()),
        "{result}"
    );
    std::fs::write(segment(&deltas[1]), original).unwrap();

    // The second segment gone: the same break, compacted already (nothing new written).
    std::fs::remove_file(manifest_of(&deltas[1])).unwrap();
    std::fs::remove_file(segment(&deltas[1])).unwrap();
    let again = snapshot_json(&["compact", &store_arg(&store)]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false, "{again}");
    assert_eq!(again.json()["manifest"], result["manifest"], "{again}");
    assert!(
        again.json()["warnings"].to_string().contains("broken"),
        "{again}"
    );
    let object = result["manifest"]["object"].as_str().unwrap();
    let url = format!("{}/{object}", store_arg(&store));
    let mut restored = Cluster::plan_restore(1, "b");
    crate::snapshot_restore::restore_from(&url, &restored, 0, &[], &[]).expect_code(0);
    restored.start_restored();
    crate::backup_run::assert_restored(
        &restored,
        &keys_at(&cluster, Some(first_to)),
        first_to,
        &detached_by(&result),
    );
}
