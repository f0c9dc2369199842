use std::collections::BTreeSet;

use etcdops_tests::{Cluster, Security};

use crate::{etcdctl_json, hex, run};

#[test]
fn member_list_matches_etcdctl() {
    let cluster = Cluster::start(3, Security::Plain);
    let ours = run(&cluster, &["member", "list", "-w", "json"]);
    ours.expect_code(0);
    let ours = ours.json();
    let endpoints = cluster.endpoints();
    let (code, theirs) = etcdctl_json(
        &cluster,
        &["--endpoints", &endpoints, "member", "list", "-w", "json"],
    );
    assert_eq!(code, 0);
    assert_eq!(ours["cluster_id"], hex(&theirs["header"]["cluster_id"]));
    let our_members: BTreeSet<String> = ours["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["started"], true);
            assert_eq!(m["is_learner"], false);
            format!(
                "{} {} {} {}",
                m["id"].as_str().unwrap(),
                m["name"],
                m["peer_urls"],
                m["client_urls"]
            )
        })
        .collect();
    let their_members: BTreeSet<String> = theirs["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{} {} {} {}",
                hex(&m["ID"]),
                m["name"],
                m["peerURLs"],
                m["clientURLs"]
            )
        })
        .collect();
    assert_eq!(our_members, their_members);
    assert_eq!(our_members.len(), 3);

    let table = run(&cluster, &["member", "list"]);
    table.expect_code(0);
    for member in &cluster.members {
        assert!(table.stdout.contains(&member.peer_url), "{table}");
    }
    let simple = run(&cluster, &["member", "list", "-w", "simple"]);
    assert_eq!(simple.stdout.lines().count(), 3, "{simple}");
    assert!(simple.stdout.contains(", started, m"), "{simple}");
}

#[test]
fn member_list_uses_the_next_endpoint_when_the_first_is_down() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.kill_member(0);
    let ours = run(&cluster, &["member", "list", "-w", "json"]);
    ours.expect_code(0);
    assert_eq!(ours.json()["members"].as_array().unwrap().len(), 3);
}
