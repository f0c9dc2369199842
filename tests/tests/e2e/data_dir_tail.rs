//! `etcdops data-dir commit-tail` against real etcd: a write the leader appended to its WAL
//! but could not commit (its followers were gone) is discarded by a plain
//! `--force-new-cluster` start of that data dir, and kept, with every earlier key and the
//! revisions going on, once commit-tail raised the saved commit index; a running member is
//! refused.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Run, Security, Standalone, args, etcdops};
use serde_json::Value;

/// The index of the member that leads (from `endpoint status`).
fn leader_index(cluster: &Cluster) -> usize {
    let out = cluster.etcdctl(&[
        "--endpoints",
        &cluster.endpoints(),
        "endpoint",
        "status",
        "-w",
        "json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let statuses: Value = serde_json::from_slice(&out.stdout).unwrap();
    let statuses = statuses.as_array().unwrap();
    let leader = statuses[0]["Status"]["leader"].as_u64().unwrap();
    let endpoint = statuses
        .iter()
        .find(|s| s["Status"]["header"]["member_id"].as_u64() == Some(leader))
        .unwrap()["Endpoint"]
        .as_str()
        .unwrap()
        .to_string();
    cluster
        .members
        .iter()
        .position(|m| m.client_url == endpoint)
        .unwrap()
}

/// `etcdops --endpoints URL get KEY -w json` once the member serves linearizable reads.
fn served(url: &str, key: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = etcdops(
            &args(&[
                "--endpoints",
                url,
                "--dial-timeout",
                "1s",
                "--command-timeout",
                "2s",
                "get",
                key,
                "-w",
                "json",
            ]),
            &[],
        );
        if run.code == 0 {
            return run.json();
        }
        assert!(Instant::now() < deadline, "never served:\n{run}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn count(cluster: &Cluster, url: &str, prefix: &str) -> u64 {
    let out = cluster.etcdctl(&[
        "--endpoints",
        url,
        "get",
        prefix,
        "--prefix",
        "--keys-only",
        "-w",
        "json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["count"].as_u64().unwrap_or(0)
}

fn commit_tail(dir: &Path, dry_run: bool) -> Run {
    let dir = dir.display().to_string();
    let mut a = args(&["data-dir", "commit-tail", &dir, "-w", "json"]);
    if dry_run {
        a.push("--dry-run".into());
    }
    etcdops(&a, &[])
}

fn uncommitted(dir: &Path) -> u64 {
    let dir = dir.display().to_string();
    let run = etcdops(&args(&["data-dir", "inspect", &dir, "-w", "json"]), &[]);
    run.expect_code(0);
    run.json()["wal"]["uncommitted_entries"].as_u64().unwrap()
}

/// A stopped 3-member cluster whose last leader appended a put it could not commit (its
/// followers were gone; the client got an error): the leader's index and the revision of the
/// last acknowledged write.
fn leader_with_an_uncommitted_put() -> (Cluster, usize, i64) {
    // A long election timeout: the leader keeps leading (and appending) after its
    // followers are gone, long enough for one more proposal.
    let mut cluster = Cluster::start_with(
        3,
        Security::Plain,
        &["--heartbeat-interval", "100", "--election-timeout", "5000"],
    );
    cluster.put_keys("tail/before/", 20);
    let acked = cluster.put("tail/acked", "yes");
    let leader = leader_index(&cluster);
    for i in 0..3 {
        if i != leader {
            cluster.kill_member_now(i);
        }
    }
    let url = cluster.members[leader].client_url.clone();
    let out = cluster.etcdctl(&[
        "--endpoints",
        &url,
        "--command-timeout",
        "1s",
        "put",
        "tail/unacked",
        "appended",
    ]);
    assert!(!out.status.success(), "the put cannot commit: {out:?}");
    cluster.kill_member_now(leader);
    let dir = &cluster.members[leader].data_dir;
    assert!(uncommitted(dir) >= 1, "the put is in the leader's WAL only");
    (cluster, leader, acked)
}

#[test]
fn a_committed_tail_keeps_the_write_a_forced_start_drops() {
    let (cluster, leader, acked) = leader_with_an_uncommitted_put();
    let member = &cluster.members[leader];
    let url = member.client_url.clone();
    let dir = member.data_dir.clone();

    // Control: a copy started as etcd's force-new-cluster alone does: the write is gone.
    let copy = cluster.dir().join("control");
    let cp = Command::new("cp").arg("-a").arg(&dir).arg(&copy).status();
    assert!(cp.unwrap().success());
    {
        let _control = Standalone::start(&cluster, member, &copy, true, "control");
        let seen = served(&url, "tail/acked");
        assert_eq!(seen["kvs"][0]["value"], "yes", "{seen}");
        let seen = served(&url, "tail/unacked");
        let kvs = seen["kvs"].as_array();
        assert!(kvs.is_none_or(|k| k.is_empty()), "dropped: {seen}");
    }

    // A dry run says what it would do and writes nothing.
    let run = commit_tail(&dir, true);
    run.expect_code(0);
    assert_eq!(run.json()["changed"], true, "{run}");
    assert!(uncommitted(&dir) >= 1, "a dry run writes nothing");

    let run = commit_tail(&dir, false);
    run.expect_code(0);
    let done = run.json();
    assert_eq!(done["changed"], true, "{run}");
    assert!(done["entries_adopted"].as_u64().unwrap() >= 1, "{run}");
    assert_eq!(uncommitted(&dir), 0);
    let again = commit_tail(&dir, false);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false, "{again}");

    {
        let _forced = Standalone::start(&cluster, member, &dir, true, "forced");
        let seen = served(&url, "tail/unacked");
        assert_eq!(seen["kvs"][0]["value"], "appended", "kept: {seen}");
        let revision = seen["kvs"][0]["mod_revision"].as_i64().unwrap();
        assert!(
            revision > acked,
            "revisions go on: {revision} after {acked}"
        );
        assert_eq!(count(&cluster, &url, "tail/before/"), 20);
        assert_eq!(served(&url, "tail/acked")["kvs"][0]["value"], "yes");

        // A running member is refused, in one line.
        let run = commit_tail(&dir, false);
        assert_ne!(run.code, 0, "{run}");
        assert!(run.stderr.contains("etcd is running on"), "{run}");
        assert_eq!(run.stderr.trim().lines().count(), 1, "{run}");
    }

    // A normal start afterwards still serves it.
    let _normal = Standalone::start(&cluster, member, &dir, false, "normal");
    let seen = served(&url, "tail/unacked");
    assert_eq!(seen["kvs"][0]["value"], "appended", "{seen}");
    assert_eq!(count(&cluster, &url, "tail/before/"), 20);
}

/// The module through real ansible-playbook: check mode says it would commit and writes
/// nothing, the real run commits (a forced start then serves the write), a rerun is
/// unchanged.
#[test]
fn the_module_commits_the_tail_once_and_check_mode_writes_nothing() {
    let (cluster, leader, _) = leader_with_an_uncommitted_put();
    let member = &cluster.members[leader];
    let dir = member.data_dir.clone();
    let collection = etcdops_tests::Collection::install();
    let out = cluster.dir().join("results.json");
    let play = r#"
- hosts: target
  gather_facts: false
  tasks:
    - etcd.core.etcd_data_dir:
        data_dir: "{{ dir }}"
        state: tail_committed
      check_mode: true
      register: checked
    - etcd.core.etcd_data_dir_info:
        data_dir: "{{ dir }}"
      register: info
    - etcd.core.etcd_data_dir:
        data_dir: "{{ dir }}"
        state: tail_committed
      register: first
    - etcd.core.etcd_data_dir:
        data_dir: "{{ dir }}"
        state: tail_committed
      register: second
    - ansible.builtin.copy:
        dest: "{{ out }}"
        mode: "0600"
        content: "{{ {'checked': checked, 'info': info, 'first': first, 'second': second} | to_json }}"
"#;
    let vars = serde_json::json!({ "dir": dir, "out": out });
    let run = collection.playbook(play, "target ansible_connection=local\n", &vars, &[], &[]);
    assert_eq!(run.code, 0, "{run}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let checked = &results["checked"];
    assert_eq!(checked["changed"], true, "{checked}");
    assert!(checked["msg"].as_str().unwrap().contains("check mode"));
    let before = &results["info"]["inspection"]["wal"];
    assert!(
        before["uncommitted_entries"].as_u64().unwrap() >= 1,
        "{before}"
    );
    let first = &results["first"];
    assert_eq!(first["changed"], true, "{first}");
    assert_eq!(first["commit_after"], checked["commit_after"]);
    assert_eq!(first["commit_before"], before["hard_state"]["commit"]);
    assert_eq!(results["second"]["changed"], false, "{}", results["second"]);
    assert_eq!(uncommitted(&dir), 0);

    let _forced = Standalone::start(&cluster, member, &dir, true, "forced");
    let seen = served(&member.client_url, "tail/unacked");
    assert_eq!(seen["kvs"][0]["value"], "appended", "{seen}");
}
