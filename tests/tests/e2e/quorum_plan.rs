//! `etcdops quorum plan` and `quorum verify` against real etcd, with real inspections of the
//! members' data dirs (`etcdops data-dir inspect -w json`): a live quorum is never
//! recovered (only regrown), without a quorum the member that committed the most is the
//! survivor (not one stopped earlier, not one still running), and the survivor started once
//! with `ETCD_FORCE_NEW_CLUSTER=true` passes `quorum verify` with its data.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Member, Run, Security, Standalone, args, etcdops};
use serde_json::Value;

/// `data-dir inspect DIR -w json`, written to a file beside the cluster for `--inspection`.
fn inspect(cluster: &Cluster, member: &Member, tag: &str) -> PathBuf {
    let file = cluster.dir().join(format!("{}-{tag}.json", member.name));
    std::fs::write(&file, inspect_json(&member.data_dir)).unwrap();
    file
}

fn inspect_all(cluster: &Cluster, tag: &str) -> Vec<PathBuf> {
    cluster
        .members
        .iter()
        .map(|m| inspect(cluster, m, tag))
        .collect()
}

/// `etcdops --endpoints ENDPOINTS` with short timeouts, then `rest`, JSON out.
fn against(endpoints: &str, rest: &[String]) -> Run {
    let mut a = args(&[
        "--endpoints",
        endpoints,
        "--dial-timeout",
        "1s",
        "--command-timeout",
        "2s",
        "-w",
        "json",
    ]);
    a.extend_from_slice(rest);
    etcdops(&a, &[])
}

/// `quorum plan --force-survivor` with the inspection files: the survivor, even when a
/// majority still has its data (the default plan then is `restart`).
fn plan(endpoints: &str, files: &[PathBuf]) -> Run {
    plan_with(endpoints, files, &["--force-survivor"])
}

/// `quorum plan` with the inspection files and `extra` flags.
fn plan_with(endpoints: &str, files: &[PathBuf], extra: &[&str]) -> Run {
    let mut rest = args(&["quorum", "plan"]);
    rest.extend(args(extra));
    rest.push("--inspection".into());
    rest.extend(files.iter().map(|f| f.display().to_string()));
    against(endpoints, &rest)
}

fn verify(endpoints: &str, member_id: &str, min_revision: i64) -> Run {
    let min_revision = min_revision.to_string();
    let rest = args(&[
        "quorum",
        "verify",
        "--member-id",
        member_id,
        "--min-revision",
        &min_revision,
    ]);
    against(endpoints, &rest)
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
    let mut voters = names(&json["healthy_voters"]);
    voters.sort_unstable();
    assert_eq!(voters, ["m0", "m1", "m2"], "{run}");

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
    // Every data dir is intact: by default nothing needs forcing, they just start again.
    let restart = plan_with(&endpoints, &files, &[]);
    restart.expect_code(0);
    assert_eq!(restart.json()["action"], "restart", "{restart}");
    assert_eq!(names(&restart.json()["restart"]), ["m0", "m1", "m2"]);
    assert_eq!(restart.json()["survivor"], Value::Null);
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
    let _forced = Standalone::start(&cluster, member, &member.data_dir, true, "forced");
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

/// The modules as a role runs them, through real ansible-playbook: each member's registered
/// `etcd_data_dir_info` result goes into `etcd_quorum_recovery` (check mode too: it only
/// reads), and `etcd_data_dir` keeps the survivor's data dir once, then finds it kept.
#[test]
fn the_modules_plan_from_registered_inspections_and_keep_the_survivor_once() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("quorum/ansible/", 10);
    cluster.kill_member(0);
    cluster.put_keys("quorum/ansible-after/", 10);
    cluster.kill_member_now(1);
    cluster.kill_member_now(2);
    let collection = etcdops_tests::Collection::install();
    let out = cluster.dir().join("results.json");
    let members: Vec<Value> = cluster
        .members
        .iter()
        .map(|m| serde_json::json!({"name": m.name, "data_dir": m.data_dir}))
        .collect();
    let play = r#"
- hosts: target
  gather_facts: false
  tasks:
    - etcd.core.etcd_data_dir_info:
        data_dir: "{{ item.data_dir }}"
      loop: "{{ cluster_members }}"
      register: infos
    - ansible.builtin.set_fact:
        recovery_members: "{{ recovery_members | default([]) + [{'name': item.item.name, 'info': item}] }}"
      loop: "{{ infos.results }}"
    - etcd.core.etcd_quorum_recovery:
        endpoints: "{{ endpoints }}"
        dial_timeout: 1s
        command_timeout: 2s
        members: "{{ recovery_members }}"
      register: restart
    - etcd.core.etcd_quorum_recovery:
        endpoints: "{{ endpoints }}"
        dial_timeout: 1s
        command_timeout: 2s
        members: "{{ recovery_members }}"
        restart_intact: false
      check_mode: true
      register: checked
    - etcd.core.etcd_quorum_recovery:
        endpoints: "{{ endpoints }}"
        dial_timeout: 1s
        command_timeout: 2s
        members: "{{ recovery_members }}"
        restart_intact: false
      register: plan
    - etcd.core.etcd_data_dir:
        data_dir: "{{ plan.data_dir }}"
        state: copied
      register: first
    - etcd.core.etcd_data_dir:
        data_dir: "{{ plan.data_dir }}"
        state: copied
      register: second
    - etcd.core.etcd_data_dir:
        data_dir: "{{ plan.data_dir }}"
        state: moved_aside
      check_mode: true
      register: move_checked
    - ansible.builtin.copy:
        dest: "{{ out }}"
        mode: "0600"
        content: "{{ {'restart': restart, 'checked': checked, 'plan': plan, 'first': first, 'second': second, 'move_checked': move_checked} | to_json }}"
"#;
    let vars = serde_json::json!({
        "cluster_members": members,
        "endpoints": cluster.client_urls(),
        "out": out,
    });
    let run = collection.playbook(play, "target ansible_connection=local\n", &vars, &[], &[]);
    assert_eq!(run.code, 0, "{run}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // Every data dir intact: start them again, nothing forced.
    assert_eq!(
        results["restart"]["action"], "restart",
        "{}",
        results["restart"]
    );
    let plan = &results["plan"];
    assert_eq!(plan["action"], "recover", "{plan}");
    assert_eq!(plan["changed"], false);
    assert_ne!(plan["survivor"], "m0", "{plan}");
    assert_eq!(results["checked"]["survivor"], plan["survivor"]);
    assert_eq!(plan["candidates"].as_array().unwrap().len(), 3);
    let survivor_dir = PathBuf::from(plan["data_dir"].as_str().unwrap());

    let first = &results["first"];
    assert_eq!(first["changed"], true, "{first}");
    let copy = PathBuf::from(first["path"].as_str().unwrap());
    assert!(copy.join("member/snap/db").is_file(), "{first}");
    let second = &results["second"];
    assert_eq!(second["changed"], false, "{second}");
    assert_eq!(second["path"], first["path"]);
    assert_eq!(results["move_checked"]["changed"], true);
    assert!(
        survivor_dir.join("member/snap/db").is_file(),
        "check mode moved nothing"
    );
}

/// Forcing the wrong (older) member and writing to it splits the history: the members that
/// went on without it hold other entries at the same indexes. A plan over both is refused,
/// naming the member to keep and a backup restore as the call when unsure.
#[test]
fn a_history_split_by_an_earlier_force_new_cluster_is_refused() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("quorum/split-before/", 10);
    cluster.kill_member(0);
    cluster.put_keys("quorum/split-after/", 20);
    cluster.kill_member_now(1);
    cluster.kill_member_now(2);

    let m0 = &cluster.members[0];
    let inspection: Value =
        serde_json::from_str(&std::fs::read_to_string(inspect(&cluster, m0, "old")).unwrap())
            .unwrap();
    let member_id = inspection["wal"]["member_id"].as_str().unwrap().to_string();
    let forced = Standalone::start(&cluster, m0, &m0.data_dir, true, "forced");
    verified(&m0.client_url, &member_id, 0, Duration::from_secs(30));
    etcdops_tests::block_on(async {
        let mut client = cluster
            .client_for(std::slice::from_ref(&m0.client_url))
            .await;
        for i in 0..10 {
            client
                .put(format!("quorum/split-forced/{i}"), "x", None)
                .await
                .unwrap();
        }
    });
    drop(forced);

    let files = inspect_all(&cluster, "split");
    let run = plan(&cluster.endpoints(), &files);
    assert_eq!(run.code, 1, "{run}");
    let refused = run.json();
    assert_eq!(refused["kind"], "split_history", "{run}");
    assert!(run.stderr.contains("split history"), "{run}");
    assert!(
        run.stderr
            .contains("restore the cluster from a backup if unsure"),
        "{run}"
    );
    let keep = refused["keep"].as_str().unwrap();
    assert!(run.stderr.contains(&format!("keep {keep}")), "{run}");
}

/// `data-dir backup` and `data-dir move-aside` on a real member: refused while it runs; once
/// stopped, a dry run writes nothing, the copy is complete (etcd starts from it and serves
/// the data), a second backup reuses it, and the move-aside keeps the dir under its new name.
#[test]
fn data_dir_backup_and_move_aside_keep_a_stopped_member_and_refuse_a_running_one() {
    let mut cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("quorum/kept/", 5);
    let member = &cluster.members[0];
    let dir = member.data_dir.display().to_string();
    let data_dir = |verb: &str, extra: &[&str]| {
        let mut a = args(&["data-dir", verb, &dir, "-w", "json"]);
        a.extend(args(extra));
        etcdops(&a, &[])
    };
    for verb in ["backup", "move-aside"] {
        let run = data_dir(verb, &[]);
        assert_ne!(run.code, 0, "{run}");
        assert!(run.stderr.contains("is running"), "{run}");
    }
    let root = cluster.dir().to_path_buf();
    let entries = || {
        let mut names: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("m0.bak-"))
            .collect();
        names.sort();
        names
    };
    assert!(entries().is_empty(), "a refusal writes nothing");

    cluster.kill_member_now(0);
    let member = &cluster.members[0];
    let dry = data_dir("backup", &["--dry-run"]);
    dry.expect_code(0);
    assert_eq!(dry.json()["changed"], true, "{dry}");
    assert!(entries().is_empty(), "a dry run writes nothing");
    let first = data_dir("backup", &[]);
    first.expect_code(0);
    let copy = PathBuf::from(first.json()["path"].as_str().unwrap());
    let second = data_dir("backup", &[]);
    second.expect_code(0);
    assert_eq!(second.json()["reused"], true, "{second}");
    assert_eq!(second.json()["path"], first.json()["path"]);
    assert_eq!(entries().len(), 1, "{:?}", entries());

    let moved = data_dir("move-aside", &[]);
    moved.expect_code(0);
    let aside = PathBuf::from(moved.json()["path"].as_str().unwrap());
    assert!(!member.data_dir.exists() && aside.join("member/snap/db").is_file());
    let again = data_dir("move-aside", &[]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false, "{again}");

    // The copy is a whole data dir: etcd starts from it with the data.
    let _etcd = Standalone::start(&cluster, member, &copy, true, "forced");
    let id: Value = serde_json::from_str(&inspect_json(&copy)).unwrap();
    verified(
        &member.client_url,
        id["wal"]["member_id"].as_str().unwrap(),
        1,
        Duration::from_secs(30),
    );
    let kept = get(&member.client_url, "quorum/kept/0004");
    assert_eq!(kept["kvs"][0]["value"], "value-4", "{kept}");
}

fn inspect_json(dir: &Path) -> String {
    let run = etcdops(
        &args(&[
            "data-dir",
            "inspect",
            &dir.display().to_string(),
            "-w",
            "json",
        ]),
        &[],
    );
    run.expect_code(0);
    run.stdout
}
