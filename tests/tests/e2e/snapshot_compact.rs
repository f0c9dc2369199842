//! `snapshot compact` against real etcd: a chain written by `backup run` (puts, overwrites,
//! deletes, a txn, leased keys, a revoked lease, over several segments) compacted into one full
//! backup. Restoring that backup serves exactly what restoring the chain to its last revision
//! serves (every key, value, create and mod revision, version and lease), which is what the
//! source served at that revision; etcd's own tool (etcdutl in 3.5, etcdctl in 3.4) reads it
//! and restores it too. A compaction killed at random points leaves the chain intact and
//! restorable and nothing that lists as a complete backup; `backup run --compact-after`
//! compacts in the background while segments go on.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security, etcdops, etcdops_path};
use serde_json::Value;

use crate::backup_run::{BackupRun, keys_at, rand_u32, write_changes};
use crate::snapshot_restore::restore_from;

fn store_arg(store: &Path) -> String {
    store.display().to_string()
}

/// `snapshot list STORE -w json`.
pub(crate) fn listed(store: &Path) -> Value {
    let out = etcdops(
        &["snapshot", "list", &store_arg(store), "-w", "json"].map(String::from),
        &[],
    );
    out.expect_code(0);
    out.json()
}

/// The complete full backups of `store`: (object, manifest, chain).
fn complete_backups(store: &Path) -> Vec<(String, Value, Value)> {
    listed(store)["backups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["complete"] == true)
        .map(|b| {
            (
                b["object"].as_str().unwrap().to_string(),
                b["manifest"].clone(),
                b.get("chain").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// `snapshot compact STORE -w json` with `extra` flags.
fn compact(store: &Path, extra: &[&str]) -> etcdops_tests::Run {
    let mut args: Vec<String> = ["snapshot", "compact", &store_arg(store), "-w", "json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    etcdops(&args, &[])
}

/// Restores `source` (a backup, or the store with `point`) as one new member and starts it.
fn restore_and_start(source: &str, point: &[&str]) -> (Cluster, Value) {
    let mut restored = Cluster::plan_restore(1, "c");
    let done = restore_from(source, &restored, 0, point, &[]);
    done.expect_code(0);
    let result = done.json();
    restored.start_restored();
    (restored, result)
}

/// Restores the plain snapshot `file` with etcd's own tool (etcdutl in 3.5, etcdctl in 3.4)
/// as one new member and starts it.
fn etcd_tool_restore_and_start(file: &Path) -> Cluster {
    let mut target = Cluster::plan_restore(1, "e");
    let member = &target.members[0];
    let out = target
        .version
        .snapshot_tool()
        .args(["snapshot", "restore"])
        .arg(file)
        .arg("--data-dir")
        .arg(&member.data_dir)
        .args(["--name", &member.name])
        .args(["--initial-cluster", &target.initial_cluster()])
        .args(["--initial-cluster-token", target.token()])
        .args(["--initial-advertise-peer-urls", &member.peer_url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "etcd's restore refused the compacted backup:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.start_restored();
    target
}

/// The store revision a member serves (etcdctl's answer).
fn served_revision(cluster: &Cluster) -> i64 {
    crate::backup_run::revision_of(cluster)
}

/// The leases `cluster` holds now (IDs).
fn live_leases(cluster: &Cluster) -> Vec<i64> {
    let (code, leases) = crate::etcdctl_json(
        cluster,
        &[
            "--endpoints",
            &cluster.endpoints(),
            "lease",
            "list",
            "-w",
            "json",
        ],
    );
    assert_eq!(code, 0, "{leases}");
    leases["leases"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|l| l["id"].as_i64())
        .collect()
}

/// `got` is `want`, key for key, but for keys whose lease was revoked at once (granted and
/// revoked before `backup run` could read its TTL): restored without it, as a restore of
/// the chain does. `live` are the source's leases now.
fn assert_same_but_revoked_leases(got: &[Value], want: &[Value], live: &[i64]) {
    assert_eq!(got.len(), want.len(), "key count differs");
    for (got, want) in got.iter().zip(want) {
        let lease = want.get("lease").and_then(Value::as_i64);
        if got != want && lease.is_some_and(|l| !live.contains(&l)) {
            let mut without = want.clone();
            without.as_object_mut().unwrap().remove("lease");
            assert_eq!(got, &without);
        } else {
            assert_eq!(got, want);
        }
    }
}

/// A chain of several segments with every kind of change; returns the cluster, the store,
/// the chain's full backup and the last revision written (= the chain's last).
fn chain_of_changes(tag: &str) -> (Cluster, std::path::PathBuf, String, i64) {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 30);
    let store = cluster.dir().join(format!("compact-{tag}"));
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let first = write_changes(&cluster, tag, 3);
    backup.wait_published(*first.last().unwrap());
    let second = write_changes(&cluster, &format!("{tag}2"), 3);
    let last = *second.last().unwrap();
    backup.wait_published(last);
    let events = backup.stop_clean();
    let with_changes = events
        .iter()
        .filter(|e| e["event"] == "segment_published" && e["changes"].as_u64() > Some(0))
        .count();
    assert!(with_changes >= 2, "several segments: {events:#?}");
    let object = full["object"].as_str().unwrap().to_string();
    (cluster, store, object, last)
}

#[test]
fn a_compacted_chain_restores_exactly_as_the_chain_at_its_last_revision() {
    let (cluster, store, full, last) = chain_of_changes("cmp");
    let expected = keys_at(&cluster, Some(last));
    assert!(
        expected.iter().any(|kv| kv.get("lease").is_some()),
        "leased keys are part of the check"
    );

    // The chain restored to its last revision, before the compaction.
    let rev = last.to_string();
    let (by_chain, chain_result) = restore_and_start(&store_arg(&store), &["--to-revision", &rev]);
    assert_eq!(
        chain_result["plan"]["full"],
        full.as_str(),
        "{chain_result}"
    );

    let done = compact(&store, &[]);
    done.expect_code(0);
    let compacted = done.json();
    assert_eq!(compacted["changed"], true, "{compacted}");
    assert_eq!(compacted["source"], full.as_str(), "{compacted}");
    assert!(compacted["segments"].as_u64().unwrap() >= 2, "{compacted}");
    assert!(
        compacted["changes_applied"].as_u64().unwrap() > 0,
        "{compacted}"
    );
    assert!(compacted["verify"]["db_sha256"].is_string(), "{compacted}");
    let manifest = &compacted["manifest"];
    assert_eq!(manifest["revision"], last, "{compacted}");
    assert_eq!(manifest["verified_after_upload"], true, "{compacted}");
    assert_eq!(manifest["compacted_from"]["full_backup"], full.as_str());
    assert_eq!(manifest["compacted_from"]["to_revision"], last);
    let object = manifest["object"].as_str().unwrap().to_string();
    assert!(
        object.ends_with(".db.zst"),
        "stored as the source: {object}"
    );
    assert_ne!(object, full);

    // Listed as a complete backup beside the untouched chain.
    let backups = complete_backups(&store);
    assert_eq!(backups.len(), 2, "{backups:#?}");
    let chain = &backups.iter().find(|b| b.0 == full).unwrap().2;
    assert_eq!(chain["to_revision"], last, "the old chain is untouched");
    assert!(backups.iter().any(|b| b.0 == object));

    // `snapshot verify` passes; compacting again changes nothing.
    let url = format!("{}/{object}", store_arg(&store));
    etcdops(&["snapshot".into(), "verify".into(), url.clone()], &[]).expect_code(0);
    let again = compact(&store, &[]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false, "{again}");
    assert_eq!(again.json()["manifest"]["object"], object.as_str());
    assert_eq!(complete_backups(&store).len(), 2);

    // The compacted backup restored: the same keys, with their revisions, versions and
    // leases, as the chain restored to its last revision and as the source at it.
    let (by_copy, copy_result) = restore_and_start(&url, &[]);
    assert_eq!(copy_result["revision"], last, "{copy_result}");
    let from_chain = keys_at(&by_chain, None);
    let from_copy = keys_at(&by_copy, None);
    assert_eq!(from_copy.len(), expected.len());
    assert!(
        from_copy == from_chain,
        "compacted and chain restores differ"
    );
    let detached = chain_result["point_in_time"]["leases_detached"]
        .as_array()
        .map_or(0, Vec::len);
    if detached == 0 {
        assert!(
            from_copy == expected,
            "the source at revision {last} differs"
        );
    }
    assert_eq!(served_revision(&by_copy), last);
    assert_eq!(served_revision(&by_chain), last);

    // Planning: the last revision may use the compacted backup; a revision inside the
    // chain still uses the chain.
    let planned = Cluster::plan_restore(1, "d");
    let dry = restore_from(
        &store_arg(&store),
        &planned,
        0,
        &["--to-revision", &rev, "--dry-run"],
        &[],
    );
    dry.expect_code(0);
    assert_eq!(dry.json()["plan"]["full"], object.as_str(), "{dry}");
    let inside = (last - 5).to_string();
    let dry = restore_from(
        &store_arg(&store),
        &planned,
        0,
        &["--to-revision", &inside, "--dry-run"],
        &[],
    );
    dry.expect_code(0);
    assert_eq!(dry.json()["plan"]["full"], full.as_str(), "{dry}");

    // etcd's own tool: its status reads the compacted revision, its restore accepts the
    // trailer, and etcd started on it serves the same keys.
    let stored = std::fs::read(store.join(&object)).unwrap();
    let plain = cluster.dir().join("compacted.db");
    std::fs::write(&plain, zstd::decode_all(&stored[..]).unwrap()).unwrap();
    let status = cluster.version.snapshot_status(&plain).unwrap();
    assert_eq!(status["revision"], last, "{status}");
    let by_tool = etcd_tool_restore_and_start(&plain);
    assert!(
        keys_at(&by_tool, None) == from_copy,
        "etcd's restore differs"
    );

    // Retention, not compact, drops the old chain: --keep-last 1 keeps the compacted
    // backup (the newest) and deletes the chain, segments first.
    let pruned = etcdops(
        &[
            "snapshot",
            "prune",
            &store_arg(&store),
            "--keep-last",
            "1",
            "--orphan-grace",
            "0s",
            "-w",
            "json",
        ]
        .map(String::from),
        &[],
    );
    pruned.expect_code(0);
    let deleted = pruned.json()["deleted"].to_string();
    assert!(deleted.contains(&full), "{pruned}");
    assert!(!deleted.contains(&object), "{pruned}");
    let left = complete_backups(&store);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].0, object);
    assert!(
        listed(&store)["dangling_deltas"].is_null(),
        "no segment left behind"
    );
    // The last revision still restores (from the compacted backup); one inside the dropped
    // chain is refused, naming what can be restored.
    let dry = restore_from(
        &store_arg(&store),
        &planned,
        0,
        &["--to-revision", &rev, "--dry-run"],
        &[],
    );
    dry.expect_code(0);
    let refused = crate::backup_run::restore_refused(&store, &["--to-revision", &inside]);
    crate::assert_clear_error(&refused, "what can be restored");
}

#[test]
fn an_encrypted_chain_compacts_into_a_backup_encrypted_to_the_same_recipients() {
    let cluster = Cluster::start(1, Security::Plain);
    let keys = cluster.dir().join("key.txt");
    let made = etcdops(
        &[
            "snapshot",
            "keygen",
            "-o",
            &keys.display().to_string(),
            "-w",
            "json",
        ]
        .map(String::from),
        &[],
    );
    made.expect_code(0);
    let recipient = made.json()["recipient"].as_str().unwrap().to_string();
    let store = cluster.dir().join("compact-age");
    let backup = BackupRun::start(&cluster, &store, &["--encrypt-to", &recipient]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let last = *write_changes(&cluster, "age", 2).last().unwrap();
    backup.wait_published(last);
    backup.stop();

    // Without the identity: refused in one line, nothing written.
    let before = listed(&store);
    let refused = compact(&store, &[]);
    crate::assert_clear_error(&refused, "identity");
    assert_eq!(listed(&store)["backups"], before["backups"]);

    let identity = keys.display().to_string();
    let done = compact(&store, &["--identity", &identity]);
    done.expect_code(0);
    let manifest = done.json()["manifest"].clone();
    assert_eq!(manifest["encryption"]["recipients"][0], recipient.as_str());
    let object = manifest["object"].as_str().unwrap();
    assert!(object.ends_with(".db.zst.age"), "{object}");
    let url = format!("{}/{object}", store_arg(&store));
    let (restored, _) = restore_and_start(&url, &["--identity", &identity]);
    assert!(keys_at(&restored, None) == keys_at(&cluster, Some(last)));
}

/// Starts `snapshot compact STORE` in the background.
fn spawn_compact(store: &Path, work: &Path) -> Child {
    Command::new(etcdops_path())
        .args(["snapshot", "compact", &store_arg(store), "-q", "--work-dir"])
        .arg(work)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_compaction_leaves_the_chain_intact_and_no_backup_that_looks_complete() {
    let cluster = Cluster::start(1, Security::Plain);
    // A db of a few MiB, and a chain with a few MiB of changes, so a compaction takes long
    // enough to be killed at different points.
    cluster.put_random("/big/", 3000, 1024);
    let store = cluster.dir().join("compact-killed");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    cluster.put_random("/big/", 3000, 1024);
    let last = *write_changes(&cluster, "killed", 2).last().unwrap();
    backup.wait_published(last);
    backup.stop();
    let chain_before = complete_backups(&store);
    assert_eq!(chain_before.len(), 1);
    let work = cluster.dir().join("compact-work");
    std::fs::create_dir_all(&work).unwrap();

    // One whole compaction: how long it takes; then it is deleted to be made again.
    let started = Instant::now();
    let status = spawn_compact(&store, &work).wait().unwrap();
    assert!(status.success());
    let whole = started.elapsed();
    let copy = complete_backups(&store)
        .into_iter()
        .find(|b| b.0 != full)
        .unwrap();
    let url = format!("{}/{}", store_arg(&store), copy.0);
    etcdops(&["snapshot".into(), "delete".into(), url], &[]).expect_code(0);

    let mut whole = whole;
    let mut killed_mid_run = 0;
    let mut attempts = 0u64;
    // Six kills at random points of the run, each within its own sixth of it; a run that
    // ended before its kill (the machine got faster) sets the run's length and is tried again.
    while killed_mid_run < 6 && attempts < 12 {
        attempts += 1;
        let sixth = whole.as_millis() as u64 / 6;
        let at = sixth * killed_mid_run + u64::from(rand_u32()) % sixth.max(1);
        let started = Instant::now();
        let mut child = spawn_compact(&store, &work);
        let deadline = started + Duration::from_millis(at);
        while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(2));
        }
        if child.try_wait().unwrap().is_none() {
            killed_mid_run += 1;
        } else {
            whole = started.elapsed();
        }
        let _ = child.kill();
        let _ = child.wait();
        let attempt = attempts;

        // The chain is as it was; any other complete backup is a compacted one that
        // verifies whole (it was published only after it verified).
        let backups = complete_backups(&store);
        let chain = backups
            .iter()
            .find(|b| b.0 == full)
            .expect("the chain's full backup");
        assert_eq!(
            chain.2, chain_before[0].2,
            "attempt {attempt}: the chain changed"
        );
        for (object, manifest, _) in backups.iter().filter(|b| b.0 != full) {
            assert_eq!(manifest["compacted_from"]["full_backup"], full.as_str());
            let url = format!("{}/{object}", store_arg(&store));
            etcdops(&["snapshot".into(), "verify".into(), url.clone()], &[]).expect_code(0);
            etcdops(&["snapshot".into(), "delete".into(), url], &[]).expect_code(0);
        }
    }
    assert!(
        killed_mid_run >= 4,
        "only {killed_mid_run} of {attempts} kills landed mid-run"
    );
    let orphans = listed(&store)["orphans"].as_array().map_or(0, Vec::len);
    eprintln!(
        "a whole compaction took {whole:?}; {killed_mid_run} of {attempts} kills landed \
         mid-run; {orphans} orphan object(s) left (not listed as backups)"
    );

    // The chain verifies (every segment, every record) and restores to its last revision.
    let url = format!("{}/{full}", store_arg(&store));
    etcdops(&["snapshot".into(), "verify".into(), url], &[]).expect_code(0);
    let rev = last.to_string();
    let (restored, result) = restore_and_start(&store_arg(&store), &["--to-revision", &rev]);
    assert_eq!(result["plan"]["full"], full.as_str(), "{result}");
    assert_eq!(served_revision(&restored), last);
    assert!(keys_at(&restored, None).len() == keys_at(&cluster, Some(last)).len());
}

#[test]
fn backup_run_compacts_in_the_background_while_segments_go_on() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 20);
    let store = cluster.dir().join("compact-run");
    let work = cluster.dir().join("compact-run-work");
    std::fs::create_dir_all(&work).unwrap();
    let work_arg = work.display().to_string();
    let backup = BackupRun::start(
        &cluster,
        &store,
        &["--compact-after", "2", "--compact-work-dir", &work_arg],
    );
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    let mut written = Vec::new();
    let compacted = loop {
        written.extend(write_changes(&cluster, &format!("r{}", written.len()), 1));
        backup.wait_published(*written.last().unwrap());
        if let Some(found) = backup
            .events()
            .into_iter()
            .find(|e| e["event"] == "compacted")
        {
            break found;
        }
        assert!(written.len() < 60, "no compaction: {:#?}", backup.events());
    };
    // Segments went on after the compaction started, in the same chain.
    let more = *write_changes(&cluster, "after", 1).last().unwrap();
    backup.wait_published(more);
    let events = backup.stop();
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "failed" || e["event"] == "gap"),
        "{events:#?}"
    );
    assert_eq!(compacted["source"], full.as_str(), "{compacted}");
    let object = compacted["object"].as_str().unwrap();
    let to = compacted["to_revision"].as_i64().unwrap();
    let url = format!("{}/{object}", store_arg(&store));
    etcdops(&["snapshot".into(), "verify".into(), url.clone()], &[]).expect_code(0);
    let backups = complete_backups(&store);
    let chain = &backups.iter().find(|b| b.0 == full).unwrap().2;
    assert!(
        chain["to_revision"].as_i64().unwrap() >= more,
        "the chain went on past the compaction: {chain}"
    );
    // The compacted backup restores to its revision as the source served it then.
    let (restored, _) = restore_and_start(&url, &[]);
    assert_eq!(served_revision(&restored), to);
    assert_same_but_revoked_leases(
        &keys_at(&restored, None),
        &keys_at(&cluster, Some(to)),
        &live_leases(&cluster),
    );
    // A revision inside the chain past the compaction still restores from the chain (a
    // later compaction may hold `more` itself: a compacted backup holds its one revision).
    let inside = more - 1;
    assert!(inside > to);
    let rev = inside.to_string();
    let (from_chain, result) = restore_and_start(&store_arg(&store), &["--to-revision", &rev]);
    assert_eq!(result["plan"]["full"], full.as_str(), "{result}");
    // (A lease granted and revoked at once may be detached: the one allowed difference.)
    let expected = keys_at(&cluster, Some(inside));
    crate::backup_run::assert_restored(&from_chain, &expected, inside, &result);
}

#[test]
fn a_chain_in_s3_compacts_in_place_and_restores_from_there() {
    use crate::backup_run::S3_ENV;
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 20);
    let s3 = etcdops_tests::S3Server::start();
    s3.create_bucket("compact");
    let remote = "s3://compact/etcd";
    let s3_flags = [
        "--s3-endpoint",
        s3.endpoint.as_str(),
        "--allow-http",
        "--s3-path-style",
    ];
    let backup = BackupRun::start_at(&cluster, remote, &s3_flags, &S3_ENV);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    let last = *write_changes(&cluster, "s3c", 3).last().unwrap();
    backup.wait_published(last);
    backup.stop();

    let with_flags = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.extend(s3_flags.iter().map(|s| s.to_string()));
        etcdops(&all, &S3_ENV)
    };
    let done = with_flags(&["snapshot", "compact", remote, "-w", "json"]);
    done.expect_code(0);
    let result = done.json();
    assert_eq!(result["source"], full.as_str(), "{result}");
    assert_eq!(result["manifest"]["revision"], last, "{result}");
    let object = result["manifest"]["object"].as_str().unwrap().to_string();
    // No multipart upload left open.
    assert!(s3.multipart_uploads("compact").is_empty());

    let url = format!("{remote}/{object}");
    let mut restored = Cluster::plan_restore(1, "s");
    let mut extra: Vec<&str> = s3_flags.to_vec();
    extra.push("--dry-run");
    restore_from(&url, &restored, 0, &extra, &S3_ENV).expect_code(0);
    extra.pop();
    restore_from(&url, &restored, 0, &extra, &S3_ENV).expect_code(0);
    restored.start_restored();
    assert_eq!(served_revision(&restored), last);
    assert!(keys_at(&restored, None) == keys_at(&cluster, Some(last)));
}

/// `snapshot compact STORE -w json` started in the background, its output captured.
fn spawn_compact_json(store: &Path) -> Child {
    Command::new(etcdops_path())
        .args(["snapshot", "compact", &store_arg(store), "-w", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn two_compactions_of_one_chain_at_once_publish_one_copy() {
    if etcdops_tests::skip_on_etcd_3_4("the compaction lock is the store's, not etcd's") {
        return;
    }
    let (_cluster, store, full, last) = chain_of_changes("twice");
    for trial in 0..3 {
        let (a, b) = (spawn_compact_json(&store), spawn_compact_json(&store));
        let outputs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        let results: Vec<Value> = outputs
            .iter()
            .map(|out| {
                assert!(out.status.success(), "trial {trial}: {out:?}");
                serde_json::from_slice(&out.stdout).unwrap()
            })
            .collect();
        let changed: Vec<bool> = results.iter().map(|r| r["changed"] == true).collect();
        assert_eq!(
            changed.iter().filter(|c| **c).count(),
            1,
            "trial {trial}: exactly one publishes: {results:#?}"
        );
        let published = &results[changed.iter().position(|c| *c).unwrap()];
        let loser = changed.iter().position(|c| !*c).unwrap();
        let other = &results[loser];
        // The other says the chain is being compacted, or finds the copy the first made.
        let stderr = String::from_utf8_lossy(&outputs[loser].stderr);
        assert!(
            (other["busy"]
                .as_str()
                .is_some_and(|b| b.contains("another compaction"))
                && stderr.contains("another compaction of the chain"))
                || other["manifest"]["object"] == published["manifest"]["object"],
            "trial {trial}: {other:#}\n{stderr}"
        );
        let copies: Vec<(String, Value, Value)> = complete_backups(&store)
            .into_iter()
            .filter(|(_, m, _)| m["compacted_from"]["full_backup"] == full.as_str())
            .collect();
        assert_eq!(copies.len(), 1, "trial {trial}: one copy: {copies:#?}");
        assert_eq!(copies[0].1["revision"], last);
        // No claim is left behind.
        let lock = store.join(
            full.trim_end_matches(".db.zst")
                .trim_end_matches(".db")
                .to_string()
                + ".deltas/compact.lock.json",
        );
        assert!(!lock.exists(), "trial {trial}: {} left", lock.display());
        // The next trial starts from the chain alone.
        let url = format!("{}/{}", store.display(), copies[0].0);
        etcdops(&["snapshot".into(), "delete".into(), url], &[]).expect_code(0);
    }
}
