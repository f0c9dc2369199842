//! Backups of a learner, and member names as etcd gives them (free text: newlines, carriage
//! returns, bells, direction marks). A learner named so joins; its name is recorded in the
//! manifest of a backup taken from it (3.5; 3.4 refuses snapshots from learners), and every
//! table and simple output that shows it keeps one line per row.

use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, EtcdVersion, Security, block_on, etcdops};

use crate::etcdctl_json;

/// A member name that would add a row, move the cursor, ring and reverse text if printed raw
/// (no `,` or `=`: etcd's `--initial-cluster` separators).
const NASTY_NAME: &str = "ev\nFAKE-ROW\r\x07\x1b[2J\u{202e}lin";

/// Table rows (lines starting with `| `), header included.
fn table_rows(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("| ")).collect()
}

fn assert_one_line_per_row(out: &str, context: &str) {
    for line in out.lines() {
        assert!(
            !line.trim_start_matches(['|', ' ']).starts_with("FAKE-ROW"),
            "a name forged a row in {context}:\n{out}"
        );
    }
    for c in out.chars() {
        assert!(
            c == '\n' || !c.is_control(),
            "raw {c:?} in {context}:\n{out}"
        );
    }
}

/// Adds a learner named [`NASTY_NAME`], starts it and waits until the member list names it.
fn cluster_with_a_started_learner() -> (Cluster, String) {
    let mut cluster = Cluster::start(1, Security::Plain);
    let (peer, client) = cluster.new_member_urls();
    block_on(async {
        let mut etcd = cluster.client().await;
        let options = etcd_client::MemberAddOptions::new().with_is_learner();
        etcd.member_add([peer.as_str()], Some(options)).await
    })
    .expect("add the learner");
    let initial = format!("{},{NASTY_NAME}={peer}", cluster.initial_cluster());
    cluster.join_member(NASTY_NAME, &peer, &client, &initial);
    let voter = cluster.members[0].client_url.clone();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, list) = etcdctl_json(
            &cluster,
            &["--endpoints", &voter, "member", "list", "-w", "json"],
        );
        let named = list["members"]
            .as_array()
            .is_some_and(|ms| ms.iter().any(|m| m["name"] == NASTY_NAME));
        if named {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the learner never started: {list}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (cluster, client)
}

fn save(endpoints: &str, endpoint: &str, store: &str) -> etcdops_tests::Run {
    etcdops(
        &[
            "--endpoints",
            endpoints,
            "snapshot",
            "save",
            store,
            "--endpoint",
            endpoint,
            "-w",
            "json",
        ]
        .map(String::from),
        &[],
    )
}

#[test]
fn a_backup_from_a_started_learner_names_it_and_its_name_stays_in_its_row() {
    let (cluster, learner) = cluster_with_a_started_learner();
    let voter = cluster.members[0].client_url.clone();
    let store = cluster.dir().join("learner-store").display().to_string();
    std::fs::create_dir_all(&store).unwrap();

    // The member list in every format: one row, one line per member.
    let both = format!("{voter},{learner}");
    for format in ["table", "simple"] {
        let listed = etcdops(
            &["--endpoints", &voter, "member", "list", "-w", format].map(String::from),
            &[],
        );
        listed.expect_code(0);
        assert_one_line_per_row(&listed.stdout, &format!("member list -w {format}"));
        if format == "table" {
            assert_eq!(table_rows(&listed.stdout).len(), 3, "{listed}");
        } else {
            assert_eq!(listed.stdout.lines().count(), 2, "{listed}");
        }
    }

    let from_learner = save(&both, &learner, &store);
    if cluster.version == EtcdVersion::V3_4 {
        // etcd 3.4 streams no snapshot from a learner: refused, in one line, nothing saved.
        assert_eq!(from_learner.code, 2, "{from_learner}");
        assert!(
            from_learner.stderr.contains("not supported for learner"),
            "{from_learner}"
        );
        return;
    }
    from_learner.expect_code(0);
    let manifest = &from_learner.json()["manifest"];
    assert_eq!(manifest["member_name"], NASTY_NAME, "{from_learner}");
    assert_eq!(manifest["endpoint"], learner.as_str());

    // With the learner alone, nobody serves the member list: saved, no name, and said so.
    let alone = save(&learner, &learner, &store);
    alone.expect_code(0);
    assert_eq!(alone.json()["manifest"]["member_name"], "", "{alone}");
    assert!(
        alone.stderr.contains("the manifest names no member")
            && alone
                .stderr
                .contains("list a voting member among the endpoints"),
        "{alone}"
    );

    // The backups listed: one row (and one simple line) per backup.
    for format in ["table", "simple"] {
        let listed = etcdops(
            &["snapshot", "list", &store, "-w", format].map(String::from),
            &[],
        );
        listed.expect_code(0);
        assert_one_line_per_row(&listed.stdout, &format!("snapshot list -w {format}"));
        if format == "table" {
            assert_eq!(table_rows(&listed.stdout).len(), 3, "{listed}");
            assert!(
                listed
                    .stdout
                    .contains("ev\\nFAKE-ROW\\r\\x07\\x1b[2J\\u{202e}lin"),
                "{listed}"
            );
        } else {
            assert_eq!(listed.stdout.lines().count(), 2, "{listed}");
        }
    }
    // The save's own table names the member on one line too.
    let table = etcdops(
        &[
            "--endpoints",
            &both,
            "snapshot",
            "save",
            &store,
            "--endpoint",
            &learner,
            "-w",
            "table",
        ]
        .map(String::from),
        &[],
    );
    table.expect_code(0);
    assert_one_line_per_row(&table.stdout, "snapshot save -w table");
    let member_row: Vec<&str> = table
        .stdout
        .lines()
        .filter(|l| l.contains("| member"))
        .collect();
    assert_eq!(member_row.len(), 1, "{table}");
    assert!(member_row[0].contains("FAKE-ROW"), "{table}");
}
