//! `etcdops data-dir inspect` and `etcd_data_dir_info` on real members' data dirs: a member
//! stopped cleanly reads as etcdctl's `endpoint status` last saw it (raft index and term,
//! revision, member and cluster IDs), a running member's dir is reported locked, and a member
//! SIGKILLed under write load (its WAL possibly cut mid-record) inspects without error.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use etcdops_tests::{Collection, SupervisedCluster, SupervisedMember, args, block_on, etcdops};
use serde_json::{Value, json};

/// `etcdctl endpoint status -w json` of one member: its `Status` object.
fn endpoint_status(cluster: &SupervisedCluster, member: &SupervisedMember) -> Value {
    let out = std::process::Command::new(cluster.version.etcdctl())
        .env("ETCDCTL_API", "3")
        .args([
            "endpoint",
            "status",
            "-w",
            "json",
            "--endpoints",
            &member.client_url,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json[0]["Status"].clone()
}

/// `etcdops data-dir inspect -w json DIR`.
fn inspect(dir: &std::path::Path) -> Value {
    let run = etcdops(
        &args(&[
            "data-dir",
            "inspect",
            "-w",
            "json",
            &dir.display().to_string(),
        ]),
        &[],
    );
    run.expect_code(0);
    run.json()
}

/// An etcd ID (a JSON number) as the inspection writes it: lowercase hex.
fn hex(id: &Value) -> String {
    format!("{:x}", id.as_u64().unwrap())
}

/// Puts `count` keys through etcdctl (each acknowledged).
fn put_keys(cluster: &SupervisedCluster, count: usize) {
    let endpoints = cluster.client_urls().join(",");
    for i in 0..count {
        let out = std::process::Command::new(cluster.version.etcdctl())
            .env("ETCDCTL_API", "3")
            .args([
                "put",
                "--endpoints",
                &endpoints,
                &format!("/inspect/k{i}"),
                "v",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

#[test]
fn a_stopped_member_reads_as_etcdctl_last_saw_it_and_a_running_one_is_locked() {
    let cluster = SupervisedCluster::start(3);
    put_keys(&cluster, 20);
    // A follower: stopping the leader would hand leadership over, a new term in its WAL.
    let statuses: Vec<Value> = cluster
        .members
        .iter()
        .map(|m| endpoint_status(&cluster, m))
        .collect();
    let follower = statuses
        .iter()
        .position(|s| s["header"]["member_id"] != s["leader"])
        .unwrap();
    let member = &cluster.members[follower];
    let status = endpoint_status(&cluster, member);
    member.stop();
    let got = inspect(&member.data_dir());
    let wal = &got["wal"];
    assert_eq!(got["locked"], false, "{got}");
    assert_eq!(
        wal["member_id"],
        hex(&status["header"]["member_id"]),
        "{got}"
    );
    assert_eq!(
        wal["cluster_id"],
        hex(&status["header"]["cluster_id"]),
        "{got}"
    );
    let raft_index = status["raftIndex"].as_u64().unwrap();
    assert!(
        wal["hard_state"]["commit"].as_u64().unwrap() >= raft_index,
        "{got}\n{status}"
    );
    assert_eq!(wal["last_term"], status["raftTerm"], "{got}\n{status}");
    assert_eq!(wal["commit_term"], status["raftTerm"], "{got}\n{status}");
    assert_eq!(got["db"]["revision"], status["header"]["revision"], "{got}");
    assert_eq!(wal["torn_tail"], false, "{got}");
    let commit = wal["hard_state"]["commit"].as_u64().unwrap();
    let applied = got["db"]["consistent_index"].as_u64().unwrap();
    assert_eq!(
        got["committed_entries_beyond_db"].as_u64().unwrap(),
        commit.saturating_sub(applied)
    );
    assert_eq!(got["is_learner"], false);
    assert_eq!(got["db"]["members"].as_array().unwrap().len(), 3);

    // A running member: read, and reported locked (with a warning).
    let running = &cluster.members[(follower + 1) % 3];
    let run = etcdops(
        &args(&[
            "data-dir",
            "inspect",
            "-w",
            "json",
            &running.data_dir().display().to_string(),
        ]),
        &[],
    );
    run.expect_code(0);
    assert_eq!(run.json()["locked"], true, "{run}");
    assert!(run.stderr.contains("is running"), "{run}");
    // Not a data dir: one line, non-zero.
    let run = etcdops(
        &args(&["data-dir", "inspect", &cluster.dir().display().to_string()]),
        &[],
    );
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("not an etcd data dir") && run.stderr.lines().count() == 1);

    // The module agrees, in check mode too; a dir without data is `exists: false`.
    let collection = Collection::install();
    let out = cluster.dir().join("info.json");
    let playbook = r#"
- hosts: target
  gather_facts: false
  tasks:
    - etcd.core.etcd_data_dir_info:
        data_dir: "{{ stopped }}"
      check_mode: true
      register: stopped_info
    - etcd.core.etcd_data_dir_info:
        data_dir: "{{ running }}"
      register: running_info
    - etcd.core.etcd_data_dir_info:
        data_dir: "{{ absent }}"
      register: absent_info
    - ansible.builtin.copy:
        dest: "{{ out }}"
        mode: "0600"
        content: "{{ {'stopped': stopped_info, 'running': running_info, 'absent': absent_info} | to_json }}"
"#;
    let vars = json!({
        "stopped": member.data_dir(),
        "running": running.data_dir(),
        "absent": cluster.dir().join("nothing-here"),
        "out": out,
    });
    let run = collection.playbook(
        playbook,
        "target ansible_connection=local\n",
        &vars,
        &[],
        &[],
    );
    assert_eq!(run.code, 0, "{run}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let stopped = &results["stopped"];
    assert_eq!(stopped["changed"], false, "{stopped}");
    assert_eq!(stopped["exists"], true, "{stopped}");
    assert_eq!(stopped["inspection"]["wal"], got["wal"], "{stopped}");
    assert_eq!(
        stopped["inspection"]["db"]["revision"],
        got["db"]["revision"]
    );
    let running = &results["running"];
    assert_eq!(running["inspection"]["locked"], true, "{running}");
    assert!(
        running["warnings"].to_string().contains("is running"),
        "{running}"
    );
    assert_eq!(results["absent"]["exists"], false, "{results}");
    assert_eq!(results["absent"]["inspection"], Value::Null, "{results}");
}

#[test]
fn a_member_killed_under_write_load_inspects_without_error() {
    let cluster = SupervisedCluster::start(3);
    let victim = cluster.members[2].clone();
    let victim_id = endpoint_status(&cluster, &victim)["header"]["member_id"].clone();
    // Writes through the other two members, as fast as they are acknowledged.
    let endpoints: Vec<String> = cluster.client_urls()[..2].to_vec();
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, acked) = (stop.clone(), acked.clone());
        std::thread::spawn(move || {
            block_on(async {
                let mut client = etcd_client::Client::connect(endpoints, None).await.unwrap();
                let value = vec![b'x'; 4096];
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if client
                        .put(format!("/load/{i}"), value.clone(), None)
                        .await
                        .is_ok()
                    {
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
            })
        })
    };
    // Kill the victim while writes stream in (after some have landed).
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked.load(Ordering::Relaxed) < 200 {
        assert!(Instant::now() < deadline, "the write load did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = std::fs::read_to_string(victim.dir.join("etcd.pid")).unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    // Its lock goes with it; then inspect, while the others keep taking writes.
    let got = loop {
        let run = etcdops(
            &args(&[
                "data-dir",
                "inspect",
                "-w",
                "json",
                &victim.data_dir().display().to_string(),
            ]),
            &[],
        );
        run.expect_code(0);
        let json = run.json();
        if json["locked"] == false {
            break json;
        }
        assert!(Instant::now() < deadline, "the killed member's lock stayed");
        std::thread::sleep(Duration::from_millis(50));
    };
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let wal = &got["wal"];
    assert_eq!(wal["member_id"], hex(&victim_id), "{got}");
    let commit = wal["hard_state"]["commit"].as_u64().unwrap();
    // It took part: well past the few entries of the cluster's start.
    assert!(commit > 100, "{got}");
    assert!(wal["last_index"].as_u64().unwrap() >= commit, "{got}");
    assert!(wal["commit_term"].is_u64(), "{got}");
    // etcd may apply an entry before it saves the HardState naming it committed: the db
    // can be ahead; what the WAL holds beyond the db is never negative.
    let applied = got["db"]["consistent_index"].as_u64().unwrap();
    assert_eq!(
        got["committed_entries_beyond_db"].as_u64().unwrap(),
        commit.saturating_sub(applied)
    );
}
