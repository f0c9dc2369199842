//! `backup run` and point-in-time restore, for real: changes (puts, overwrites, deletes, a
//! multi-key txn, leased keys, a revoked lease) are written while `backup run` streams them;
//! then, for several revisions and one time, the restored member serves exactly what the
//! source served at that revision (`get --rev R`: every key, value, create and mod revision,
//! version and lease), and takes new writes above it. `backup run` killed at random points
//! leaves chains that restore up to their last published segment. A lost member is replaced;
//! a watch that falls behind a compaction (its member lost while history was compacted) ends
//! its chain and a new full backup follows.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use etcdops_tests::{
    Cluster, Collection, Run, S3Server, Security, SupervisedCluster, args, block_on, etcdops,
    etcdops_path,
};
use serde_json::Value;
use serde_json::json;

use crate::snapshot_restore::restore_from;
use crate::{assert_clear_error, etcdctl_json, run};

/// A `backup run` in the background, its JSON lines going to a file.
pub(crate) struct BackupRun {
    pub(crate) child: Child,
    pub(crate) out: PathBuf,
}

impl BackupRun {
    pub(crate) fn start(cluster: &Cluster, store: &Path, extra: &[&str]) -> BackupRun {
        BackupRun::start_at(cluster, &store.display().to_string(), extra, &[])
    }

    pub(crate) fn start_at(
        cluster: &Cluster,
        store: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> BackupRun {
        BackupRun::start_with(cluster.client_flags(), cluster.dir(), store, extra, env)
    }

    /// Starts `backup run` with connection `flags`, its output in a file in `dir`.
    pub(crate) fn start_with(
        flags: Vec<String>,
        dir: &Path,
        store: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> BackupRun {
        let out = dir.join(format!(
            "backup-run-{}.jsonl",
            std::process::id() ^ rand_u32()
        ));
        let mut args = flags;
        args.extend(["-w", "json", "backup", "run", store].map(String::from));
        // A full backup an hour apart and a segment a second, unless `extra` says otherwise.
        for (flag, value) in [("--full-every", "1h"), ("--delta-every", "1s")] {
            if !extra.contains(&flag) {
                args.extend([flag, value].map(String::from));
            }
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let child = Command::new(etcdops_path())
            .args(&args)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::inherit())
            .envs(env.iter().copied())
            .spawn()
            .unwrap();
        BackupRun { child, out }
    }

    pub(crate) fn events(&self) -> Vec<Value> {
        let file = std::fs::File::open(&self.out).unwrap();
        std::io::BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| serde_json::from_str(&line).ok())
            .collect()
    }

    /// Waits until an event satisfies `pred`, returning it.
    pub(crate) fn wait_for(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(found) = self.events().into_iter().find(|e| pred(e)) {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "backup run never reported {what}:\n{:#?}",
                self.events()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until a segment covering `revision` is published.
    pub(crate) fn wait_published(&self, revision: i64) {
        self.wait_for(&format!("a segment up to revision {revision}"), |e| {
            e["event"] == "segment_published" && e["to_revision"].as_i64().unwrap() >= revision
        });
    }

    /// SIGTERM: it publishes the segment being filled and exits 0.
    pub(crate) fn stop(mut self) -> Vec<Value> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "backup run exited with {status}");
        self.events()
    }

    /// SIGTERM, and no gap or failure was reported on the way.
    pub(crate) fn stop_clean(self) -> Vec<Value> {
        let events = self.stop();
        assert!(
            !events
                .iter()
                .any(|e| e["event"] == "gap" || e["event"] == "failed"),
            "{events:#?}"
        );
        events
    }

    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BackupRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn rand_u32() -> u32 {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).unwrap();
    u32::from_le_bytes(bytes)
}

/// etcdctl's JSON answer from the cluster's running members.
fn ctl_json(cluster: &Cluster, args: &[&str]) -> (i32, Value) {
    let endpoints: Vec<String> = cluster
        .members
        .iter()
        .filter(|m| m.is_running())
        .map(|m| m.client_url.clone())
        .collect();
    let flag = format!("--endpoints={}", endpoints.join(","));
    let mut all = vec![flag.as_str()];
    all.extend_from_slice(args);
    etcdctl_json(cluster, &all)
}

/// Every key the cluster serves at `revision` (the current one when `None`), as etcdctl
/// prints them: key, create and mod revision, version, value, lease.
pub(crate) fn keys_at(cluster: &Cluster, revision: Option<i64>) -> Vec<Value> {
    let rev = revision.map(|r| r.to_string());
    let mut args = vec!["get", "", "--prefix", "-w", "json"];
    if let Some(rev) = &rev {
        args.extend(["--rev", rev]);
    }
    let (code, value) = ctl_json(cluster, &args);
    assert_eq!(code, 0, "{value}");
    value["kvs"].as_array().cloned().unwrap_or_default()
}

pub(crate) fn revision_of(cluster: &Cluster) -> i64 {
    let (_, value) = ctl_json(cluster, &["get", "health", "-w", "json"]);
    value["header"]["revision"].as_i64().unwrap()
}

/// Puts, overwrites, deletes, a three-key txn and leased keys, `rounds` times; one lease is
/// revoked each round (deleting its keys). Returns the revision after each round.
pub(crate) fn write_changes(cluster: &Cluster, tag: &str, rounds: usize) -> Vec<i64> {
    let running: Vec<String> = cluster
        .members
        .iter()
        .filter(|m| m.is_running())
        .map(|m| m.client_url.clone())
        .collect();
    write_changes_at(&running, tag, rounds)
}

/// Waits until the cluster takes writes again (after a member, maybe the leader, was killed).
fn wait_writable(cluster: &Cluster) {
    let urls: Vec<String> = cluster
        .members
        .iter()
        .filter(|m| m.is_running())
        .map(|m| m.client_url.clone())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let put = block_on(async {
            let mut client = etcd_client::Client::connect(urls.clone(), None).await?;
            client.put("/pitr/probe", "p", None).await
        });
        match put {
            Ok(_) => return,
            Err(e) => assert!(
                Instant::now() < deadline,
                "the cluster takes no writes: {e}"
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// [`write_changes`] through a client of `urls`.
fn write_changes_at(urls: &[String], tag: &str, rounds: usize) -> Vec<i64> {
    block_on(async {
        let mut client = etcd_client::Client::connect(urls.to_vec(), None).await?;
        let mut after = Vec::new();
        for round in 0..rounds {
            for i in 0..20 {
                client
                    .put(format!("/pitr/{tag}/k{i}"), format!("{round}-{i}"), None)
                    .await?;
            }
            client
                .delete(format!("/pitr/{tag}/k{}", round % 20), None)
                .await?;
            let txn = Txn::new()
                .when([Compare::version(
                    format!("/pitr/{tag}/none"),
                    CompareOp::Equal,
                    0,
                )])
                .and_then([
                    TxnOp::put(format!("/pitr/{tag}/t/a"), format!("a{round}"), None),
                    TxnOp::put(format!("/pitr/{tag}/t/b"), format!("b{round}"), None),
                    TxnOp::delete(format!("/pitr/{tag}/k{}", (round + 7) % 20), None),
                ]);
            client.txn(txn).await?;
            let lease = client.lease_grant(600, None).await?.id();
            for i in 0..3 {
                client
                    .put(
                        format!("/pitr/{tag}/leased/{round}/{i}"),
                        "l",
                        Some(PutOptions::new().with_lease(lease)),
                    )
                    .await?;
            }
            let short = client.lease_grant(600, None).await?.id();
            client
                .put(
                    format!("/pitr/{tag}/revoked/{round}"),
                    "r",
                    Some(PutOptions::new().with_lease(short)),
                )
                .await?;
            client.lease_revoke(short).await?;
            let revision = client
                .get("health", None)
                .await?
                .header()
                .map(|h| h.revision())
                .unwrap_or(0);
            after.push(revision);
        }
        Ok::<_, etcd_client::Error>(after)
    })
    .expect("write changes")
}

/// Restores `store` to a point (`--to-revision R` or `--to-time T`) as one new member, starts
/// it and returns it with the restore's JSON.
pub(crate) fn restore_point(store: &Path, point: &[&str]) -> (Cluster, Value) {
    restore_point_env(&store.display().to_string(), point, &[])
}

/// The restored member serves exactly `expected` (but for leases `result` reports detached),
/// and a new write lands above `revision`.
pub(crate) fn assert_restored(
    restored: &Cluster,
    expected: &[Value],
    revision: i64,
    result: &Value,
) {
    // A lease that ended before backup run could read its TTL (granted and revoked at once)
    // is taken off its keys, and the restore says so: the one allowed difference.
    let detached: Vec<i64> = result["point_in_time"]["leases_detached"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|id| i64::from_str_radix(id.as_str()?, 16).ok())
        .collect();
    let served = keys_at(restored, None);
    assert_eq!(
        served.len(),
        expected.len(),
        "key count differs at revision {revision}"
    );
    for (got, want) in served.iter().zip(expected) {
        let lease = want.get("lease").and_then(Value::as_i64);
        if lease.is_some_and(|l| detached.contains(&l)) {
            let mut without = want.clone();
            without.as_object_mut().unwrap().remove("lease");
            assert_eq!(got, &without, "a key differs at revision {revision}");
        } else {
            assert_eq!(got, want, "a key differs at revision {revision}");
        }
    }
    let written = restored.put("/pitr/after-restore", "x");
    assert_eq!(
        written,
        revision + 1,
        "new writes continue above the restore"
    );
}

#[test]
fn point_in_time_restores_serve_exactly_what_the_source_served_at_each_revision() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 30);
    let store = cluster.dir().join("pitr-store");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full_revision = full["revision"].as_i64().unwrap();

    let first = write_changes(&cluster, "a", 4);
    let phase_one = *first.last().unwrap();
    backup.wait_published(phase_one);
    // Nothing is written between here and phase two: the state at this time is phase_one's.
    let between = chrono_now();
    let second = write_changes(&cluster, "b", 4);
    let last = *second.last().unwrap();
    backup.wait_published(last);
    backup.stop_clean();

    // Several revisions: inside a round, at round ends (after a lease revoke), the last one.
    let targets = [full_revision + 7, first[1], phase_one + 25, last];
    let expected: Vec<Vec<Value>> = targets
        .iter()
        .map(|r| keys_at(&cluster, Some(*r)))
        .collect();
    assert!(
        expected[3].iter().any(|kv| kv.get("lease").is_some()),
        "leased keys are part of the check"
    );
    for (target, expected) in targets.iter().zip(&expected) {
        let rev = target.to_string();
        let (restored, result) = restore_point(&store, &["--to-revision", &rev]);
        assert_eq!(result["revision"], *target, "{result}");
        assert!(
            result["point_in_time"]["changes_applied"].as_u64().unwrap() > 0,
            "{result}"
        );
        assert_restored(&restored, expected, *target, &result);
        // Leases of the restored keys exist again (recreated with their TTL).
        let (_, leases) = ctl_json(&restored, &["lease", "list", "-w", "json"]);
        let live: Vec<i64> = leases["leases"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter_map(|l| l["id"].as_i64())
            .collect();
        for kv in expected {
            if let Some(lease) = kv.get("lease").and_then(Value::as_i64) {
                assert!(live.contains(&lease), "lease {lease:x} of {kv} is missing");
            }
        }
    }

    // A time: every change received by then, which is phase one's state exactly.
    let (restored, result) = restore_point(&store, &["--to-time", &between]);
    assert_eq!(result["revision"], phase_one, "{result}");
    assert_restored(
        &restored,
        &keys_at(&cluster, Some(phase_one)),
        phase_one,
        &result,
    );

    // The plan alone: which full, which segments, the target; nothing written.
    let planned = Cluster::plan_restore(1, "d");
    let data_dir = planned.members[0].data_dir.clone();
    let rev = first[1].to_string();
    let dry = restore_from(
        &store.display().to_string(),
        &planned,
        0,
        &["--to-revision", &rev, "--dry-run"],
        &[],
    );
    dry.expect_code(0);
    let plan = dry.json();
    assert_eq!(plan["plan"]["full_revision"], full_revision, "{plan}");
    assert!(
        !plan["plan"]["segments"].as_array().unwrap().is_empty(),
        "{plan}"
    );
    assert_eq!(plan["revision"], first[1], "{plan}");
    assert!(!data_dir.exists(), "a dry run writes nothing");

    // Past the chain, or before the full backup: refused, naming what can be restored.
    let beyond = (last + 1000).to_string();
    let refused = restore_refused(&store, &["--to-revision", &beyond]);
    assert_clear_error(&refused, "after the newest published change");
    let before = (full_revision - 1).to_string();
    let refused = restore_refused(&store, &["--to-revision", &before]);
    assert_clear_error(&refused, "what can be restored");

    // The chain verifies as a whole.
    let listed = run(
        &cluster,
        &[
            "snapshot",
            "list",
            &store.display().to_string(),
            "-w",
            "json",
        ],
    );
    listed.expect_code(0);
    let object = listed.json()["backups"][0]["object"]
        .as_str()
        .unwrap()
        .to_string();
    // A backup's own URL is no store to plan a point in time over: said so, nothing written.
    let backup_url = store.join(&object);
    let refused = restore_refused(&backup_url, &["--to-revision", &first[1].to_string()]);
    assert_clear_error(
        &refused,
        "a point-in-time restore takes the store that holds it",
    );
    let verified = etcdops(
        &[
            "snapshot".into(),
            "verify".into(),
            format!("{}/{object}", store.display()),
        ],
        &[],
    );
    verified.expect_code(0);
}

pub(crate) fn restore_refused(store: &Path, point: &[&str]) -> Run {
    let planned = Cluster::plan_restore(1, "x");
    let refused = restore_from(&store.display().to_string(), &planned, 0, point, &[]);
    assert_eq!(refused.code, 2, "{refused}");
    assert!(!planned.members[0].data_dir.exists(), "nothing written");
    refused
}

/// Now, as RFC 3339 with milliseconds.
fn chrono_now() -> String {
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S.%3NZ"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The newest chain of `store`: (full backup object, last revision its segments cover).
pub(crate) fn newest_chain(store: &Path) -> (String, i64) {
    let listed = etcdops(
        &[
            "snapshot".into(),
            "list".into(),
            store.display().to_string(),
            "-w".into(),
            "json".into(),
        ],
        &[],
    );
    listed.expect_code(0);
    let catalog = listed.json();
    let newest = &catalog["backups"][0];
    let to = newest["chain"]["to_revision"]
        .as_i64()
        .unwrap_or_else(|| newest["manifest"]["revision"].as_i64().unwrap());
    if let Some(chain) = newest.get("chain") {
        assert_eq!(chain["continuous"], true, "{catalog}");
    }
    (newest["object"].as_str().unwrap().to_string(), to)
}

#[test]
fn backup_run_killed_at_random_points_leaves_chains_that_restore_to_their_last_segment() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("killed-store");
    let mut base: Option<String> = None;
    let mut while_down: Option<i64> = None;
    for attempt in 0..2 {
        let backup = BackupRun::start(&cluster, &store, &[]);
        match &base {
            None => {
                backup.wait_for("a full backup", |e| e["event"] == "full_saved");
            }
            Some(base) => {
                // Restarted within --full-every: the chain goes on, changes made while it was
                // down included.
                let resumed = backup.wait_for("the chain resumed", |e| e["event"] == "resumed");
                assert_eq!(resumed["base"], base.as_str(), "{resumed}");
                backup.wait_published(while_down.unwrap());
            }
        }
        write_changes(&cluster, &format!("kill{attempt}"), 2);
        // Kill somewhere in the next 0.3 to 2.3 s, while changes keep coming.
        let delay = Duration::from_millis(300 + u64::from(rand_u32() % 2000));
        let deadline = Instant::now() + delay;
        let mut round = 0;
        while Instant::now() < deadline {
            write_changes(&cluster, &format!("kill{attempt}-{round}"), 1);
            round += 1;
        }
        backup.kill();
        let (object, covered) = newest_chain(&store);
        let expected = keys_at(&cluster, Some(covered));
        let rev = covered.to_string();
        let (restored, result) = restore_point(&store, &["--to-revision", &rev]);
        assert_eq!(result["point_in_time"]["full"], object.as_str(), "{result}");
        assert_restored(&restored, &expected, covered, &result);
        if base.is_none() {
            base = Some(object);
            // Written while nothing runs: the next run must pick it up.
            while_down = write_changes(&cluster, "down", 1).last().copied();
        }
    }
    // The change made while the first run was dead is in the (one) chain.
    let (object, covered) = newest_chain(&store);
    assert_eq!(Some(&object), base.as_ref());
    let down = while_down.unwrap();
    assert!(covered >= down, "{covered} < {down}");
    let expected = keys_at(&cluster, Some(down));
    let rev = down.to_string();
    let (restored, result) = restore_point(&store, &["--to-revision", &rev]);
    assert_restored(&restored, &expected, down, &result);
}

#[test]
fn a_lost_member_is_replaced_and_a_watch_behind_a_compaction_starts_a_new_chain() {
    let mut cluster = Cluster::start(5, Security::Plain);
    let store = cluster.dir().join("lost-store");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let object = full["object"].as_str().unwrap().to_string();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(store.join(format!("{object}.manifest.json"))).unwrap(),
    )
    .unwrap();
    let watched = manifest["endpoint"].as_str().unwrap().to_string();
    let index = cluster
        .members
        .iter()
        .position(|m| m.client_url == watched)
        .unwrap();
    cluster.kill_member_now(index);
    wait_writable(&cluster);
    let after_loss = write_changes(&cluster, "lost", 2);
    backup.wait_for("a reconnection", |e| e["event"] == "reconnected");
    backup.wait_published(*after_loss.last().unwrap());
    let (chain_full, covered) = newest_chain(&store);
    assert_eq!(chain_full, object, "the same chain goes on");
    let expected = keys_at(&cluster, Some(covered));

    // Freeze backup run, take its new member away too and compact history meanwhile: when
    // it resumes, the first revision it has not received is gone.
    let reconnected = backup.wait_for("a reconnection", |e| e["event"] == "reconnected");
    let now_watched = reconnected["endpoint"].as_str().unwrap().to_string();
    let pid = backup.child.id().to_string();
    Command::new("kill").args(["-STOP", &pid]).status().unwrap();
    let index = cluster
        .members
        .iter()
        .position(|m| m.client_url == now_watched)
        .unwrap();
    cluster.kill_member_now(index);
    wait_writable(&cluster);
    write_changes(&cluster, "unwatched", 1);
    let compacted = revision_of(&cluster);
    let compact = run(&cluster, &["compact", &compacted.to_string()]);
    Command::new("kill").args(["-CONT", &pid]).status().unwrap();
    compact.expect_code(0);
    let gap = backup.wait_for("a gap", |e| e["event"] == "gap");
    assert!(
        gap["reason"].as_str().unwrap().contains("compaction"),
        "{gap}"
    );
    let second = backup.wait_for("a second full backup", |e| {
        e["event"] == "full_saved" && e["object"] != object.as_str()
    });
    assert!(
        second["revision"].as_i64().unwrap() >= compacted,
        "{second}"
    );
    let after_gap = write_changes(&cluster, "after-gap", 1);
    backup.wait_published(*after_gap.last().unwrap());
    let events = backup.stop();
    assert_eq!(
        events.iter().filter(|e| e["event"] == "gap").count(),
        1,
        "{events:#?}"
    );

    // The first chain still restores to where it ended before the gap...
    let rev = covered.to_string();
    let (restored, result) = restore_point(&store, &["--to-revision", &rev]);
    assert_restored(&restored, &expected, covered, &result);
    // ...a revision in the gap is refused with the ranges that can be restored...
    let gap_end = gap["covered_revision"].as_i64().unwrap();
    let second_revision = second["revision"].as_i64().unwrap();
    if gap_end + 1 < second_revision {
        let inside = (gap_end + 1).to_string();
        let refused = restore_refused(&store, &["--to-revision", &inside]);
        assert_clear_error(&refused, "gap");
    }
    // ...and the new chain restores to the end.
    let last = *after_gap.last().unwrap();
    let expected = keys_at(&cluster, Some(last));
    let rev = last.to_string();
    let (restored, result) = restore_point(&store, &["--to-revision", &rev]);
    assert_restored(&restored, &expected, last, &result);
}

pub(crate) const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "Very-Secret-Test-Key"),
    ("AWS_REGION", "us-east-1"),
];

#[test]
fn an_encrypted_chain_in_s3_copies_off_site_and_restores_through_the_module() {
    use age::secrecy::ExposeSecret;
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let s3 = S3Server::start();
    s3.create_bucket("pitr");
    let remote = "s3://pitr/etcd";
    let s3_flags = [
        "--s3-endpoint",
        s3.endpoint.as_str(),
        "--allow-http",
        "--s3-path-style",
    ];
    let identity = age::x25519::Identity::generate();
    let secret = identity.to_string().expose_secret().to_string();
    let public = identity.to_public().to_string();
    let mut extra = vec!["--encrypt-to", public.as_str()];
    extra.extend(s3_flags);
    let backup = BackupRun::start_at(&cluster, remote, &extra, &S3_ENV);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let revisions = write_changes(&cluster, "s3", 3);
    let target = revisions[1];
    let last = *revisions.last().unwrap();
    backup.wait_published(last);
    let events = backup.stop();
    let segment = events
        .iter()
        .find(|e| e["event"] == "segment_published" && e["changes"].as_u64().unwrap() > 0)
        .unwrap();
    assert!(
        segment["object"]
            .as_str()
            .unwrap()
            .ends_with(".delta.zst.age"),
        "{segment}"
    );

    // Off-site: the chain is copied from S3 to a local dir, every segment checked.
    let local = cluster.dir().join("offsite");
    let mut copy = args(&[
        "snapshot",
        "copy",
        remote,
        &local.display().to_string(),
        "-w",
        "json",
    ]);
    copy.extend(s3_flags.iter().map(|s| s.to_string()));
    let copied = etcdops(&copy, &S3_ENV);
    copied.expect_code(0);
    assert!(
        copied.json()["segments_copied"].as_u64().unwrap() > 0,
        "{copied}"
    );

    // Straight from S3 with the CLI...
    let rev = target.to_string();
    let identity_file = cluster.dir().join("pitr-identity.txt");
    std::fs::write(&identity_file, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(
        &identity_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let identity_arg = identity_file.display().to_string();
    let mut point = vec![
        "--to-revision",
        rev.as_str(),
        "--identity",
        identity_arg.as_str(),
    ];
    point.extend(s3_flags);
    let (restored, result) = restore_point_env(remote, &point, &S3_ENV);
    assert_restored(&restored, &keys_at(&cluster, Some(target)), target, &result);
    drop(restored);

    // ...and from the off-site copy with the module (check mode first), the identity passed as
    // a secret variable.
    let planned = Cluster::plan_restore(1, "m");
    let member = &planned.members[0];
    let restore_task = |check: bool| {
        json!({
            "etcd.core.etcd_snapshot_restore": {
                "snapshot": local,
                "to_revision": last,
                "identity_content": "{{ etcd_identity }}",
                "data_dir": member.data_dir,
                "name": member.name,
                "initial_cluster": planned.initial_cluster(),
                "initial_cluster_token": planned.token(),
                "initial_advertise_peer_urls": [member.peer_url],
            },
            "check_mode": check,
            "register": if check { "planned" } else { "restored" },
        })
    };
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [
            restore_task(true),
            {"ansible.builtin.assert": {"that": [
                "planned.changed",
                "planned.plan.segments | length > 0",
                "planned.revision == {last}".replace("{last}", &last.to_string()),
            ]}},
            restore_task(false),
            {"ansible.builtin.assert": {"that": [
                "restored.changed",
                "restored.point_in_time.changes_applied > 0",
                "restored.point_in_time.leases_recreated | length > 0",
            ]}},
        ],
    }])
    .to_string();
    let collection = Collection::install();
    let vars = json!({ "etcd_identity": secret });
    let played = collection.playbook(
        &playbook,
        "target ansible_connection=local\n",
        &vars,
        &[],
        &[],
    );
    assert_eq!(played.code, 0, "{played}");
    assert!(!played.stdout.contains(&secret), "the identity was printed");
    let mut planned = planned;
    planned.start_restored();
    assert_restored(&planned, &keys_at(&cluster, Some(last)), last, &Value::Null);
}

/// Restores `store` (a path or URL) to a point as one new member with `env` (store
/// credentials), starts it and returns it with the restore's JSON.
pub(crate) fn restore_point_env(
    store: &str,
    point: &[&str],
    env: &[(&str, &str)],
) -> (Cluster, Value) {
    let mut restored = Cluster::plan_restore(1, "p");
    let done = restore_from(store, &restored, 0, point, env);
    done.expect_code(0);
    let result = done.json();
    restored.start_restored();
    (restored, result)
}

/// One key as a client sees it: key, value, create and mod revision, version, lease.
type KeyState = (Vec<u8>, Vec<u8>, i64, i64, i64, i64);

/// Every key `urls` serve at `revision` (the current one when `None`).
fn key_values_at(urls: &[String], revision: Option<i64>) -> Vec<KeyState> {
    block_on(async {
        let mut client = etcd_client::Client::connect(urls.to_vec(), None).await?;
        let mut options = etcd_client::GetOptions::new().with_all_keys();
        if let Some(revision) = revision {
            options = options.with_revision(revision);
        }
        let response = client.get("", Some(options)).await?;
        Ok::<_, etcd_client::Error>(
            response
                .kvs()
                .iter()
                .map(|kv| {
                    (
                        kv.key().to_vec(),
                        kv.value().to_vec(),
                        kv.create_revision(),
                        kv.mod_revision(),
                        kv.version(),
                        kv.lease(),
                    )
                })
                .collect(),
        )
    })
    .expect("read every key")
}

#[test]
fn the_restore_role_brings_a_three_member_cluster_back_to_a_revision() {
    let cluster = SupervisedCluster::start(3);
    let urls = cluster.client_urls();
    let store = cluster.dir().join("pitr-role-store");
    let backup = BackupRun::start_with(
        args(&["--endpoints", &urls.join(",")]),
        cluster.dir(),
        &store.display().to_string(),
        &[],
        &[],
    );
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let revisions = write_changes_at(&urls, "role", 3);
    let target = revisions[1];
    let last = *revisions.last().unwrap();
    backup.wait_published(last);
    backup.stop();
    let expected = key_values_at(&urls, Some(target));

    let collection = Collection::install();
    let inventory: String = cluster.members.iter().map(|m| m.inventory_line()).collect();
    let mut vars = cluster.service_vars();
    vars["restore_store"] = json!(store);
    vars["restore_to_revision"] = json!(target);
    vars["restore_cluster_token"] = json!("pitr-by-role");
    let playbook = json!([{
        "hosts": "all",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": urls}},
        "roles": [{"role": "etcd.core.restore", "vars": vars}],
    }])
    .to_string();
    let played = collection.playbook(&playbook, &inventory, &json!({}), &[], &[]);
    assert_eq!(played.code, 0, "{played}");

    assert_eq!(
        key_values_at(&urls, None),
        expected,
        "the state at revision {target}"
    );
    let written = block_on(async {
        let mut client = etcd_client::Client::connect(urls.clone(), None).await?;
        let put = client.put("/pitr/role/after", "x", None).await?;
        Ok::<_, etcd_client::Error>(put.header().map(|h| h.revision()).unwrap_or(0))
    })
    .unwrap();
    assert_eq!(
        written,
        target + 1,
        "new writes continue above the restored revision"
    );
}

#[test]
fn chains_overlap_at_each_full_backup_so_revisions_around_it_restore() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/seed/", 200, 2000);
    let store = cluster.dir().join("overlap-store");
    let backup = BackupRun::start(&cluster, &store, &["--full-every", "2s"]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    // Changes keep coming while the next full backups are taken.
    let urls = cluster.client_urls();
    let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let writer = {
        let writing = writing.clone();
        let urls = urls.clone();
        std::thread::spawn(move || {
            let mut round = 0;
            let mut last = 0;
            while writing.load(std::sync::atomic::Ordering::Relaxed) {
                last = write_changes_at(&urls, &format!("ov{round}"), 1)[0];
                round += 1;
            }
            last
        })
    };
    let fulls = |events: &[Value]| -> Vec<i64> {
        events
            .iter()
            .filter(|e| e["event"] == "full_saved")
            .map(|e| e["revision"].as_i64().unwrap())
            .collect()
    };
    backup.wait_for("a third full backup", |_| {
        fulls(&backup.events()).len() >= 3
    });
    writing.store(false, std::sync::atomic::Ordering::Relaxed);
    let last = writer.join().unwrap();
    backup.wait_published(last);
    let events = backup.stop();
    let second = fulls(&events)[1];

    // The first chain went on past the second full backup's start.
    let listed = etcdops(
        &args(&[
            "snapshot",
            "list",
            &store.display().to_string(),
            "-w",
            "json",
        ]),
        &[],
    );
    listed.expect_code(0);
    let catalog = listed.json();
    let first_chain_end = catalog["backups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["manifest"]["revision"].as_i64().unwrap() < second)
        .and_then(|b| b["chain"]["to_revision"].as_i64())
        .unwrap();
    assert!(first_chain_end >= second, "{catalog}");

    // The revisions around the switch all restore exactly.
    for target in [second, second + 1, first_chain_end] {
        let expected = keys_at(&cluster, Some(target));
        let rev = target.to_string();
        let (restored, result) = restore_point(&store, &["--to-revision", &rev]);
        assert_eq!(result["revision"], target, "{result}");
        assert_restored(&restored, &expected, target, &result);
    }
}

#[test]
fn a_store_that_fails_for_a_while_delays_segments_without_ending_the_chain() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("flaky-store");
    let metrics = cluster.dir().join("backup-run.prom");
    let backup = BackupRun::start(
        &cluster,
        &store,
        &["--metrics-file", &metrics.display().to_string()],
    );
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let before = write_changes(&cluster, "flaky-a", 1);
    backup.wait_published(before[0]);
    // The store goes away: its directory is replaced by a file, so nothing can be written.
    let away = cluster.dir().join("flaky-store.away");
    std::fs::rename(&store, &away).unwrap();
    std::fs::write(&store, b"not a directory").unwrap();
    let during = write_changes(&cluster, "flaky-b", 2);
    backup.wait_for("a failed publication", |e| {
        e["event"] == "failed" && e["error"].as_str().unwrap().contains("publishing segment")
    });
    // It comes back: the same segment is published, and the chain goes on.
    std::fs::remove_file(&store).unwrap();
    std::fs::rename(&away, &store).unwrap();
    let last = *during.last().unwrap();
    backup.wait_published(last);
    let events = backup.stop();
    assert!(!events.iter().any(|e| e["event"] == "gap"), "{events:#?}");
    assert_eq!(
        events.iter().filter(|e| e["event"] == "full_saved").count(),
        1,
        "no new full backup was needed: {events:#?}"
    );
    let (object, covered) = newest_chain(&store);
    assert_eq!(object, full["object"].as_str().unwrap());
    assert!(covered >= last);
    // The metrics file tells the same story: the failures, no gap, everything published.
    let text = std::fs::read_to_string(&metrics).unwrap();
    let gauge = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} is missing:\n{text}"))
            .parse()
            .unwrap()
    };
    // Counted by reason: the store's outage under "segment".
    assert!(
        gauge("etcdops_backup_run_failures_total{reason=\"segment\"}") >= 1.0,
        "{text}"
    );
    assert_eq!(gauge("etcdops_backup_run_gaps_total"), 0.0, "{text}");
    assert_eq!(
        gauge("etcdops_backup_run_last_delta_revision"),
        covered as f64,
        "{text}"
    );
    assert_eq!(
        gauge("etcdops_backup_run_last_full_revision"),
        full["revision"].as_f64().unwrap(),
        "{text}"
    );
    assert!(
        gauge("etcdops_backup_run_last_full_timestamp_seconds") > 0.0,
        "{text}"
    );
    let expected = keys_at(&cluster, Some(last));
    let rev = last.to_string();
    let (restored, result) = restore_point(&store, &["--to-revision", &rev]);
    assert_restored(&restored, &expected, last, &result);
}
