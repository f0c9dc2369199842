//! `etcdops quorum plan` and `quorum verify` against real etcd, with real inspections of the
//! members' data dirs (`etcdops data-dir inspect -w json`): a live quorum is never
//! recovered (only regrown), without a quorum the member that committed the most is the
//! survivor (not one stopped earlier, not one still running), and the survivor started once
//! with `ETCD_FORCE_NEW_CLUSTER=true` passes `quorum verify` with its data.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Member, Run, Security, args, etcdops, spawn_logged};
use serde_json::Value;

/// `data-dir inspect DIR -w json`, written to a file beside the cluster for `--inspection`.
fn inspect(cluster: &Cluster, member: &Member, tag: &str) -> PathBuf {
    let dir = member.data_dir.display().to_string();
    let run = etcdops(&args(&["data-dir", "inspect", &dir, "-w", "json"]), &[]);
    run.expect_code(0);
    let file = cluster.dir().join(format!("{}-{tag}.json", member.name));
    std::fs::write(&file, &run.stdout).unwrap();
    file
}

fn inspect_all(cluster: &Cluster, tag: &str) -> Vec<PathBuf> {
    cluster
        .members
        .iter()
        .map(|m| inspect(cluster, m, tag))
        .collect()
}

/// `quorum plan` over `endpoints` with the inspection files, short timeouts.
fn plan(endpoints: &str, files: &[PathBuf]) -> Run {
    let mut a = args(&[
        "--endpoints",
        endpoints,
        "--dial-timeout",
        "1s",
        "--command-timeout",
        "2s",
        "quorum",
        "plan",
        "-w",
        "json",
        "--inspection",
    ]);
    a.extend(files.iter().map(|f| f.display().to_string()));
    etcdops(&a, &[])
}

fn verify(endpoints: &str, member_id: &str, min_revision: i64) -> Run {
    etcdops(
        &args(&[
            "--endpoints",
            endpoints,
            "--dial-timeout",
            "1s",
            "--command-timeout",
            "2s",
            "quorum",
            "verify",
            "--member-id",
            member_id,
            "--min-revision",
            &min_revision.to_string(),
            "-w",
            "json",
        ]),
        &[],
    )
}

fn names(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn a_live_quorum_is_never_recovered_only_regrown() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("quorum/live/", 5);
    let endpoints = cluster.endpoints();
    let files = inspect_all(&cluster, "live");
    let run = plan(&endpoints, &files);
    run.expect_code(0);
    let json = run.json();
    assert_eq!(json["action"], "none", "{run}");
    assert_eq!(json["quorum"], true);
    assert!(json["survivor"].is_null(), "{run}");
    assert_eq!(names(&json["healthy_voters"]), ["m0", "m1", "m2"]);

    // One member down, two of three still a quorum: regrow it, force nothing.
    cluster.kill_member(2);
    let files = inspect_all(&cluster, "one-down");
    let run = plan(&endpoints, &files);
    run.expect_code(0);
    let json = run.json();
    assert_eq!(json["action"], "regrow", "{run}");
    assert_eq!(names(&json["rejoin"]), ["m2"], "{run}");
    assert!(json["survivor"].is_null() && json["candidates"] == Value::Array(vec![]));

    // A three-member cluster is not a survivor running alone.
    let m0: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let run = verify(&endpoints, m0["wal"]["member_id"].as_str().unwrap(), 0);
    assert_ne!(run.code, 0, "{run}");
    assert!(run.stderr.contains("the cluster has 3 members"), "{run}");
}

/// An etcd started on `member`'s data dir with its own URLs, once with
/// `ETCD_FORCE_NEW_CLUSTER=true`; killed on drop.
struct Forced(Child);

impl Forced {
    fn start(cluster: &Cluster, member: &Member) -> Forced {
        let mut cmd = Command::new(cluster.version.etcd());
        cmd.env("ETCD_FORCE_NEW_CLUSTER", "true")
            .args(["--name", &member.name, "--data-dir"])
            .arg(&member.data_dir)
            .args(["--listen-client-urls", &member.client_url])
            .args(["--advertise-client-urls", &member.client_url])
            .args(["--listen-peer-urls", &member.peer_url])
            .args(["--initial-advertise-peer-urls", &member.peer_url])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
        let log = cluster.dir().join(format!("{}-forced.log", member.name));
        Forced(spawn_logged(cmd, &log))
    }
}

impl Drop for Forced {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `quorum verify` until it passes (etcd replaying its WAL and electing itself), or
/// panics with the last run after `limit`.
fn verified(endpoint: &str, member_id: &str, min_revision: i64, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let run = verify(endpoint, member_id, min_revision);
        if run.code == 0 {
            return run.json();
        }
        assert!(Instant::now() < deadline, "never verified:\n{run}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn get(endpoint: &str, key: &str) -> Value {
    let run = etcdops(
        &args(&["--endpoints", endpoint, "get", key, "-w", "json"]),
        &[],
    );
    run.expect_code(0);
    run.json()
}

fn data_dir_of<'a>(cluster: &'a Cluster, name: &str) -> &'a Path {
    &cluster
        .members
        .iter()
        .find(|m| m.name == name)
        .unwrap()
        .data_dir
}

#[test]
fn without_quorum_the_member_that_committed_most_survives_and_verifies() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("quorum/before/", 20);
    // m0 stops first; writes go on with m1 and m2, so m0 is behind both.
    cluster.kill_member(0);
    cluster.put_keys("quorum/after/", 30);
    cluster.kill_member_now(1);
    let endpoints = cluster.endpoints();

    // m2 still runs (alone, no quorum): never chosen, and the plan is refused until stopped.
    let files = inspect_all(&cluster, "m2-running");
    let run = plan(&endpoints, &files);
    assert_eq!(run.code, 1, "{run}");
    let refused = run.json();
    assert_eq!(refused["kind"], "locked", "{run}");
    assert_eq!(names(&refused["names"]), ["m2"]);
    assert!(run.stderr.contains("stop etcd on m2 first"), "{run}");

    cluster.kill_member_now(2);
    let files = inspect_all(&cluster, "all-stopped");
    let run = plan(&endpoints, &files);
    run.expect_code(0);
    let json = run.json();
    assert_eq!(json["action"], "recover", "{run}");
    assert_eq!(json["quorum"], false);
    let survivor = json["survivor"].as_str().unwrap().to_string();
    assert_ne!(survivor, "m0", "m0 stopped before the last writes: {run}");
    let candidates = json["candidates"].as_array().unwrap();
    let index = |name: &str| {
        candidates.iter().find(|c| c["name"] == name).unwrap()["committed_index"]
            .as_u64()
            .unwrap()
    };
    let best = index(&survivor);
    for other in ["m0", "m1", "m2"] {
        assert!(
            index(other) <= best,
            "{other} committed more than {survivor}: {run}"
        );
    }
    assert!(index("m0") < best, "{run}");
    let m0 = candidates.iter().find(|c| c["name"] == "m0").unwrap();
    assert!(
        m0["why_not_chosen"].as_str().unwrap().contains("behind"),
        "{run}"
    );
    let mut rejoin = names(&json["rejoin"]);
    rejoin.sort_unstable();
    let mut others: Vec<&str> = ["m0", "m1", "m2"]
        .into_iter()
        .filter(|n| *n != survivor)
        .collect();
    others.sort_unstable();
    assert_eq!(rejoin, others);
    assert_eq!(
        json["data_dir"].as_str().map(Path::new),
        Some(data_dir_of(&cluster, &survivor))
    );

    // The survivor, started once with force-new-cluster, runs alone with its member ID and
    // at least its db's revision, and serves the last acknowledged write.
    let member_id = json["member_id"].as_str().unwrap().to_string();
    let min_revision = json["min_revision"].as_i64().unwrap();
    assert!(min_revision > 0, "{run}");
    let member = cluster.members.iter().find(|m| m.name == survivor).unwrap();
    let _forced = Forced::start(&cluster, member);
    let endpoint = member.client_url.clone();
    let seen = verified(&endpoint, &member_id, min_revision, Duration::from_secs(30));
    assert_eq!(seen["member_id"], member_id.as_str());
    assert!(seen["revision"].as_i64().unwrap() >= min_revision, "{seen}");
    let last = get(&endpoint, "quorum/after/0029");
    assert_eq!(last["kvs"][0]["value"], "value-29", "{last}");

    // Another member ID, or a revision the survivor does not have, is refused.
    let run = verify(&endpoint, "1234abcd", 0);
    assert_ne!(run.code, 0, "{run}");
    assert!(run.stderr.contains("not the survivor 1234abcd"), "{run}");
    let run = verify(&endpoint, &member_id, i64::MAX);
    assert_ne!(run.code, 0, "{run}");
    assert!(run.stderr.contains("data is missing"), "{run}");
}
