//! Member changes and maintenance against real three-member clusters, guards included.

use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security};

use crate::{assert_clear_error, run};

fn leader(cluster: &Cluster) -> String {
    let status = run(cluster, &["endpoint", "status", "--cluster", "-w", "json"]).json();
    status["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["is_leader"] == true)
        .map(|e| e["member_id"].as_str().unwrap().to_string())
        .expect("a leader")
}

fn member_ids(cluster: &Cluster) -> Vec<(String, String, bool)> {
    let list = run(cluster, &["member", "list", "-w", "json"]).json();
    list["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_string(),
                m["name"].as_str().unwrap().to_string(),
                m["is_learner"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_learner_is_added_started_promoted_and_removed_idempotently() {
    let mut cluster = Cluster::start(3, Security::Plain);
    let (peer, client) = cluster.new_member_urls();
    let add = run(
        &cluster,
        &[
            "member",
            "add",
            "m3",
            "--peer-urls",
            &peer,
            "--learner",
            "-w",
            "json",
        ],
    );
    add.expect_code(0);
    let added = add.json();
    assert_eq!(added["changed"], true);
    assert_eq!(added["member"]["is_learner"], true);
    let env = &added["env"];
    assert_eq!(env["ETCD_NAME"], "m3");
    assert_eq!(env["ETCD_INITIAL_CLUSTER_STATE"], "existing");
    let initial_cluster = env["ETCD_INITIAL_CLUSTER"].as_str().unwrap().to_string();
    assert!(
        initial_cluster.contains(&format!("m3={peer}")),
        "{initial_cluster}"
    );
    for m in &cluster.members {
        assert!(
            initial_cluster.contains(&format!("{}={}", m.name, m.peer_url)),
            "{initial_cluster}"
        );
    }
    let id = added["member"]["id"].as_str().unwrap().to_string();

    // Again: nothing changes, same answer. Shell variables for -w simple.
    let again = run(
        &cluster,
        &[
            "member",
            "add",
            "m3",
            "--peer-urls",
            &peer,
            "--learner",
            "-w",
            "json",
        ],
    );
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false);
    let shell = run(
        &cluster,
        &[
            "member",
            "add",
            "m3",
            "--peer-urls",
            &peer,
            "--learner",
            "-w",
            "simple",
        ],
    );
    assert!(
        shell
            .stdout
            .contains("ETCD_INITIAL_CLUSTER_STATE='existing'"),
        "{shell}"
    );

    // A learner that has not started is not in sync: promotion is refused.
    let early = run(&cluster, &["member", "promote", &id]);
    assert_clear_error(&early, "is waiting for its etcd to start");

    cluster.join_member("m3", &peer, &client, &initial_cluster);
    // Promote once it has caught up (etcd and our guard both check).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let promote = run(&cluster, &["member", "promote", "m3", "-w", "json"]);
        if promote.code == 0 {
            assert_eq!(promote.json()["changed"], true);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "learner never promoted:\n{promote}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(member_ids(&cluster).iter().all(|(_, _, learner)| !learner));
    let again = run(&cluster, &["member", "promote", &peer, "-w", "json"]);
    assert_eq!(again.json()["changed"], false, "{again}");

    let remove = run(&cluster, &["member", "remove", &peer, "-w", "json"]);
    remove.expect_code(0);
    assert_eq!(remove.json()["changed"], true);
    assert_eq!(member_ids(&cluster).len(), 3);
    let gone = run(&cluster, &["member", "remove", &peer, "-w", "json"]);
    gone.expect_code(0);
    assert_eq!(gone.json()["changed"], false);
}

#[test]
fn guards_refuse_to_break_quorum_or_add_a_voter_to_a_sick_cluster() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.kill_member(2);
    let (peer, _) = cluster.new_member_urls();
    let voter = run(&cluster, &["member", "add", "m9", "--peer-urls", &peer]);
    assert_clear_error(&voter, "--learner");

    // Removing a healthy member now would leave one healthy voter of two.
    let risky = run(&cluster, &["member", "remove", "m1"]);
    assert_clear_error(&risky, "below the quorum");
    assert_eq!(member_ids(&cluster).len(), 3, "nothing was removed");

    // Removing the dead one is safe.
    let safe = run(&cluster, &["member", "remove", "m2", "-w", "json"]);
    safe.expect_code(0);
    assert_eq!(safe.json()["changed"], true);
    assert_eq!(member_ids(&cluster).len(), 2);
}

#[test]
fn removing_the_leader_hands_leadership_over_first() {
    let cluster = Cluster::start(3, Security::Plain);
    let old_leader = leader(&cluster);
    let remove = run(&cluster, &["member", "remove", &old_leader, "-w", "json"]);
    remove.expect_code(0);
    let result = remove.json();
    assert_eq!(result["changed"], true);
    let successor = result["leadership_moved_to"].as_str().unwrap().to_string();
    assert_ne!(successor, old_leader);
    let left: Vec<String> = member_ids(&cluster)
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(left.len(), 2);
    assert!(!left.contains(&old_leader));
    assert!(left.contains(&successor));
}

#[test]
fn move_leader_moves_and_then_changes_nothing() {
    let cluster = Cluster::start(3, Security::Plain);
    let old = leader(&cluster);
    let target = member_ids(&cluster)
        .into_iter()
        .find(|(id, _, _)| *id != old)
        .unwrap();
    let moved = run(&cluster, &["move-leader", &target.1, "-w", "json"]);
    moved.expect_code(0);
    assert_eq!(moved.json()["changed"], true);
    assert_eq!(leader(&cluster), target.0);
    let again = run(&cluster, &["move-leader", &target.0, "-w", "json"]);
    assert_eq!(again.json()["changed"], false);

    // etcdctl's rule under its personality: leadership moves only through a given endpoint
    // that leads; given a follower alone, it refuses as etcdctl does and nothing moves.
    let status = run(&cluster, &["endpoint", "status", "--cluster", "-w", "json"]).json();
    let follower = status["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["is_leader"] == false)
        .and_then(|e| e["endpoint"].as_str())
        .unwrap()
        .to_string();
    let refused = etcdops_tests::etcdops(
        &[
            "--endpoints".into(),
            follower.clone(),
            "move-leader".into(),
            old.clone(),
        ],
        &[("ETCDOPS_COMPAT", "etcdctl")],
    );
    refused.expect_code(1);
    assert!(refused.stderr.starts_with("Error: "), "{refused}");
    assert!(
        refused
            .stderr
            .contains(&format!("no leader endpoint given at [{follower}]")),
        "{refused}"
    );
    assert_eq!(leader(&cluster), target.0, "nothing moved");
}

#[test]
fn rolling_defrag_does_the_leader_last() {
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("/k/", 50);
    let current_leader = leader(&cluster);
    let defrag = run(&cluster, &["defrag", "--cluster", "-w", "json"]);
    defrag.expect_code(0);
    let report = defrag.json();
    assert_eq!(report["completed"], true);
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    for step in &steps[..2] {
        assert_eq!(step["was_leader"], false, "{report}");
        assert!(step["error"].is_null());
    }
    assert_eq!(steps[2]["was_leader"], true);
    assert_eq!(steps[2]["member_id"], current_leader.as_str());
}

#[test]
fn nospace_alarm_is_raised_then_cleared_by_compact_defrag_and_disarm() {
    let cluster = Cluster::start_with(1, Security::Plain, &["--quota-backend-bytes", "4194304"]);
    // Rewrite one key until the db passes its 4 MiB quota. etcd measures the db as of its
    // last backend commit (every 100 ms), so on a loaded machine more than 4 MiB of puts can
    // pass before the size it checks grows: up to 200 rounds (80 MB) before giving up.
    let refusal = (0..200)
        .find_map(|round| {
            cluster
                .try_put_random(&format!("/fill/{round}/"), 1, 400_000)
                .err()
        })
        .expect("the quota was never reached");
    assert!(refusal.contains("space exceeded"), "{refusal}");
    let alarms = run(&cluster, &["alarm", "list", "-w", "json"]).json();
    assert_eq!(alarms[0]["alarm"], "NOSPACE", "{alarms}");
    let health = run(&cluster, &["endpoint", "health", "-w", "json"]);
    health.expect_code(1);
    assert!(health.stdout.contains("NOSPACE"), "{health}");
    let report = run(&cluster, &["check", "-w", "json"]);
    report.expect_code(2);
    assert_eq!(findings(&report.json())["alarms"], "critical");

    // Disarming before space is freed does not stick... so free it first.
    run(
        &cluster,
        &["compact", "--keep-revisions", "0", "--physical"],
    )
    .expect_code(0);
    run(&cluster, &["defrag", "-w", "json"]).expect_code(0);
    let disarm = run(&cluster, &["alarm", "disarm", "-w", "json"]);
    disarm.expect_code(0);
    let disarmed = disarm.json();
    assert_eq!(disarmed["changed"], true);
    assert_eq!(disarmed["still_active"].as_array().unwrap().len(), 0);
    run(&cluster, &["endpoint", "health"]).expect_code(0);
    let again = run(&cluster, &["alarm", "disarm", "-w", "json"]);
    assert_eq!(again.json()["changed"], false);
}

#[test]
fn compact_by_revision_or_keep_count_and_refuse_the_future() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 20);
    let first = run(
        &cluster,
        &["compact", "--keep-revisions", "5", "-w", "json"],
    );
    first.expect_code(0);
    let result = first.json();
    assert_eq!(result["changed"], true);
    let current = result["current_revision"].as_i64().unwrap();
    assert_eq!(result["revision"].as_i64().unwrap(), current - 5);
    let rev = (current - 5).to_string();
    let again = run(&cluster, &["compact", &rev, "-w", "json"]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false);
    let future = (current + 100).to_string();
    assert_clear_error(&run(&cluster, &["compact", &future]), "in the future");
    let version = run(&cluster, &["version", "-w", "json"]).json();
    assert_eq!(
        version["members"][0]["version"],
        cluster.version.version_string()
    );
}

fn findings(report: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn check_says_ok_then_warning_then_critical_as_members_die() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("/k/", 10);
    let healthy = run(&cluster, &["check", "-w", "json"]);
    healthy.expect_code(0);
    let report = healthy.json();
    assert_eq!(report["verdict"], "ok", "{report}");
    let all = findings(&report);
    for check in [
        "quorum",
        "leader",
        "members",
        "alarms",
        "hashkv",
        "db_quota",
        "fragmentation",
        "versions",
        "learners",
    ] {
        assert_eq!(all[check], "ok", "{check}: {report}");
    }

    cluster.kill_member(2);
    let degraded = run(&cluster, &["check", "-w", "json"]);
    degraded.expect_code(1);
    let report = degraded.json();
    assert_eq!(report["verdict"], "warning");
    assert_eq!(findings(&report)["members"], "warning");
    assert_eq!(findings(&report)["quorum"], "ok");

    cluster.kill_member_now(1);
    let down = run(&cluster, &["check", "-w", "json"]);
    down.expect_code(2);
    let report = down.json();
    assert_eq!(report["verdict"], "critical");
    assert_eq!(findings(&report)["quorum"], "critical");

    // A tiny quota turns the db size into a finding.
    let table = run(&cluster, &["check", "--quota-bytes", "16KiB"]);
    assert!(table.stdout.contains("db_quota"), "{table}");
    assert!(table.stdout.contains("CRITICAL"), "{table}");
}
