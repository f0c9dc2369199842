use std::collections::BTreeMap;

use etcdops_tests::{Cluster, Security};

use crate::{etcdctl_json, hex, run};

#[test]
fn health_of_a_healthy_member_is_true_in_every_format() {
    let cluster = Cluster::start(1, Security::Plain);
    let json = run(&cluster, &["endpoint", "health", "-w", "json"]);
    json.expect_code(0);
    let report = json.json();
    assert_eq!(report["all_healthy"], true, "{json}");
    let row = &report["endpoints"][0];
    assert_eq!(row["endpoint"], cluster.members[0].client_url);
    assert_eq!(row["health"], true);
    assert!(row["took_ms"].as_f64().unwrap() > 0.0, "{json}");
    assert!(row["error"].is_null(), "{json}");

    let table = run(&cluster, &["endpoint", "health"]);
    table.expect_code(0);
    assert!(table.stdout.contains("HEALTH"), "{table}");
    assert!(
        table.stdout.contains(&cluster.members[0].client_url),
        "{table}"
    );

    let simple = run(&cluster, &["endpoint", "health", "-w", "simple"]);
    simple.expect_code(0);
    assert!(
        simple
            .stdout
            .starts_with(&format!("{} is healthy", cluster.members[0].client_url)),
        "{simple}"
    );
}

#[test]
fn health_with_one_member_stopped_gives_etcdctls_verdicts() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.kill_member(2);
    let ours = run(&cluster, &["endpoint", "health", "--cluster", "-w", "json"]);
    ours.expect_code(1);
    let ours = ours.json();
    let our_verdicts: BTreeMap<String, bool> = ours["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["endpoint"].as_str().unwrap().to_string(),
                r["health"].as_bool().unwrap(),
            )
        })
        .collect();

    let endpoints = cluster.endpoints();
    let (code, theirs) = etcdctl_json(
        &cluster,
        &[
            "--endpoints",
            &endpoints,
            "endpoint",
            "health",
            "--cluster",
            "-w",
            "json",
        ],
    );
    assert_ne!(code, 0, "etcdctl should also report an unhealthy cluster");
    let their_verdicts: BTreeMap<String, bool> = theirs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["endpoint"].as_str().unwrap().to_string(),
                r["health"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(our_verdicts, their_verdicts);
    assert_eq!(our_verdicts.len(), 3);
    assert!(!our_verdicts[&cluster.members[2].client_url]);
    assert_eq!(ours["all_healthy"], false);
    let dead = ours["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["endpoint"] == cluster.members[2].client_url.as_str())
        .unwrap();
    assert!(
        dead["error"].as_str().unwrap().contains("cannot connect"),
        "{dead}"
    );
}

#[test]
fn status_asks_exactly_the_member_named_and_agrees_with_etcdctl() {
    let cluster = Cluster::start(3, Security::Plain);
    let ours = run(&cluster, &["endpoint", "status", "-w", "json"]);
    ours.expect_code(0);
    let ours = ours.json();
    let rows = ours["endpoints"].as_array().unwrap();
    assert_eq!(rows.len(), 3);

    let endpoints = cluster.endpoints();
    let (code, theirs) = etcdctl_json(
        &cluster,
        &[
            "--endpoints",
            &endpoints,
            "endpoint",
            "status",
            "-w",
            "json",
        ],
    );
    assert_eq!(code, 0);
    for theirs in theirs.as_array().unwrap() {
        let endpoint = theirs["Endpoint"].as_str().unwrap();
        let row = rows.iter().find(|r| r["endpoint"] == endpoint).unwrap();
        let status = &theirs["Status"];
        assert_eq!(
            row["member_id"],
            hex(&status["header"]["member_id"]),
            "{endpoint}"
        );
        assert_eq!(row["leader"], hex(&status["leader"]), "{endpoint}");
        assert_eq!(row["version"], status["version"], "{endpoint}");
        assert_eq!(row["raft_term"], status["raftTerm"], "{endpoint}");
    }
    let leaders = rows.iter().filter(|r| r["is_leader"] == true).count();
    assert_eq!(leaders, 1, "exactly one leader: {ours}");
    for row in rows {
        assert_eq!(row["version"], cluster.version.version_string());
        assert!(row["db_size"].as_i64().unwrap() > 0);
        assert!(row["db_size_in_use"].as_i64().unwrap() > 0);
        assert_eq!(row["is_learner"], false);
    }

    // One endpoint given: one row, from that member and no other.
    let only = cluster.members[1].client_url.clone();
    let single = etcdops_tests::etcdops(
        &etcdops_tests::args(&["--endpoints", &only, "endpoint", "status", "-w", "json"]),
        &[],
    );
    single.expect_code(0);
    let single = single.json();
    assert_eq!(single["endpoints"].as_array().unwrap().len(), 1);
    let expected = rows
        .iter()
        .find(|r| r["endpoint"] == only.as_str())
        .unwrap();
    assert_eq!(single["endpoints"][0]["member_id"], expected["member_id"]);
}

#[test]
fn hashkv_agrees_across_members_and_with_etcdctl() {
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("/registry/configmaps/default/cm-", 50);
    let ours = run(&cluster, &["endpoint", "hashkv", "--cluster", "-w", "json"]);
    ours.expect_code(0);
    let ours = ours.json();
    assert_eq!(ours["all_agree"], true, "{ours}");
    let revision = ours["revision"].as_i64().unwrap();
    assert!(revision >= 51, "50 puts after revision 1: {ours}");

    let rev = revision.to_string();
    let endpoints = cluster.endpoints();
    let (code, theirs) = etcdctl_json(
        &cluster,
        &[
            "--endpoints",
            &endpoints,
            "endpoint",
            "hashkv",
            "--rev",
            &rev,
            "-w",
            "json",
        ],
    );
    assert_eq!(code, 0);
    for theirs in theirs.as_array().unwrap() {
        let endpoint = theirs["Endpoint"].as_str().unwrap();
        let row = ours["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["endpoint"] == endpoint)
            .unwrap();
        assert_eq!(row["hash"], theirs["HashKV"]["hash"], "{endpoint}");
        assert_eq!(row["hash_revision"].as_i64(), Some(revision));
    }

    // An explicit older revision hashes less history: a different hash, still agreed on.
    let older = run(
        &cluster,
        &["endpoint", "hashkv", "--rev", "10", "-w", "json"],
    )
    .json();
    assert_eq!(older["revision"], 10);
    assert_eq!(older["all_agree"], true);
    assert_ne!(older["endpoints"][0]["hash"], ours["endpoints"][0]["hash"]);
}

#[test]
fn hashkv_with_a_member_down_does_not_claim_agreement() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.kill_member(0);
    let ours = run(&cluster, &["endpoint", "hashkv", "-w", "json"]);
    ours.expect_code(1);
    let report = ours.json();
    assert_eq!(report["all_agree"], false);
    let errors = report["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["error"].is_null())
        .count();
    assert_eq!(errors, 1, "{report}");
}
