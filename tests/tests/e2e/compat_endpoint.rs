//! `endpoint health|status|hashkv`, `member list`, `alarm list` and `version` side by side
//! with the etcdctl of the cluster's release: stdout byte for byte in `simple` (the `took`
//! of health masked, and health's lines sorted: etcdctl prints them as the checks finish),
//! JSON field for field, stderr emptiness and exit code alike.

use etcdops_tests::{
    Cluster, EtcdVersion, Security, SideBySide, assert_same_json, assert_same_output, etcdops,
    side_by_side,
};

/// The cluster's endpoints as a user types them for a plain cluster: `127.0.0.1:PORT`, no
/// scheme (etcdctl prints them as given).
fn bare_endpoints(cluster: &Cluster) -> String {
    let bare: Vec<String> = cluster
        .client_urls()
        .iter()
        .map(|u| u.trim_start_matches("http://").to_string())
        .collect();
    bare.join(",")
}

/// `took = 1.2ms` and `"took":"1.2ms"` with the duration replaced, lines sorted.
fn masked_sorted(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| match line.find("took = ") {
            Some(at) => format!("{}took = X", &line[..at]),
            None => line.to_string(),
        })
        .collect();
    lines.sort();
    lines
}

/// Asserts the health runs agree once `took` is masked and lines are sorted.
fn assert_same_health(both: &SideBySide) {
    assert_eq!(both.etcdctl.code, both.etcdops.code, "exit codes:\n{both}");
    assert_eq!(
        masked_sorted(&both.etcdctl.stdout),
        masked_sorted(&both.etcdops.stdout),
        "stdout:\n{both}"
    );
    assert_eq!(
        both.etcdctl.stderr.is_empty(),
        both.etcdops.stderr.is_empty(),
        "stderr:\n{both}"
    );
}

/// Health's JSON with `took` (and the error text, ours is our own) removed, sorted by
/// endpoint (etcdctl's order is the order the checks finished in).
fn health_json(text: &str, both: &SideBySide) -> Vec<serde_json::Value> {
    let parsed: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{both}"));
    let mut rows: Vec<serde_json::Value> = parsed.as_array().cloned().unwrap_or_default();
    for row in &mut rows {
        let row = row.as_object_mut().unwrap();
        row.remove("took");
        if let Some(error) = row.get_mut("error") {
            *error = "ERROR".into();
        }
    }
    rows.sort_by_key(|r| r["endpoint"].as_str().unwrap_or_default().to_string());
    rows
}

fn assert_same_health_json(both: &SideBySide) {
    assert_eq!(both.etcdctl.code, both.etcdops.code, "exit codes:\n{both}");
    assert_eq!(
        health_json(&both.etcdctl.stdout, both),
        health_json(&both.etcdops.stdout, both),
        "JSON:\n{both}"
    );
}

/// Raft indexes that may move between the two runs.
const STATUS_VOLATILE: &[&str] = &["/*/Status/raftIndex", "/*/Status/raftAppliedIndex"];

#[test]
fn every_read_command_matches_etcdctl_on_a_plain_cluster() {
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("/compat/", 5);
    let eps = bare_endpoints(&cluster);
    let eps = eps.as_str();

    for args in [
        vec!["--endpoints", eps, "endpoint", "health"],
        vec!["--endpoints", eps, "endpoint", "health", "--cluster"],
        vec!["--endpoints", eps, "endpoint", "--cluster", "health"],
    ] {
        assert_same_health(&side_by_side(&cluster, &args, &[]));
    }
    let health = side_by_side(
        &cluster,
        &["--endpoints", eps, "endpoint", "health", "-w", "json"],
        &[],
    );
    assert_same_health_json(&health);
    // The endpoint as given, no scheme added.
    assert!(health.etcdops.stdout.contains("\"127.0.0.1:"), "{health}");

    for args in [
        vec!["--endpoints", eps, "endpoint", "status"],
        vec!["--endpoints", eps, "endpoint", "status", "--cluster"],
        vec!["--endpoints", eps, "endpoint", "hashkv"],
        vec!["--endpoints", eps, "endpoint", "--cluster", "hashkv"],
        vec!["--endpoints", eps, "member", "list"],
        vec!["--endpoints", eps, "alarm", "list"],
    ] {
        let both = assert_same_output(&cluster, &args);
        assert_eq!(both.etcdops.code, 0, "{both}");
    }
    let status = side_by_side(&cluster, &["--endpoints", eps, "endpoint", "status"], &[]);
    assert!(!status.etcdops.stdout.contains("http://"), "{status}");
    assert_eq!(status.etcdops.stdout.lines().count(), 3, "{status}");

    assert_same_json(
        &cluster,
        &["--endpoints", eps, "endpoint", "status", "-w", "json"],
        STATUS_VOLATILE,
    );
    assert_same_json(
        &cluster,
        &["--endpoints", eps, "endpoint", "hashkv", "-w", "json"],
        &[],
    );
    // etcdctl's client picks any endpoint: which member answers varies.
    let answered_by = &["/header/member_id"];
    assert_same_json(
        &cluster,
        &["--endpoints", eps, "member", "list", "-w", "json"],
        answered_by,
    );
    // etcdctl 3.5's hand-written hex JSON (3.4's etcdctl ignores --hex there).
    let (_, hex) = assert_same_json(
        &cluster,
        &["--endpoints", eps, "member", "list", "-w", "json", "--hex"],
        answered_by,
    );
    if cluster.version != EtcdVersion::V3_4 {
        assert!(hex["members"][0]["ID"].is_string(), "{hex}");
    }
    assert_same_json(
        &cluster,
        &["--endpoints", eps, "alarm", "list", "-w", "json"],
        answered_by,
    );
}

#[test]
fn a_killed_member_is_reported_on_stderr_with_exit_code_1_as_etcdctl() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.kill_member(2);
    let eps = bare_endpoints(&cluster);
    let eps = eps.as_str();
    let fast = ["--command-timeout", "2s", "--dial-timeout", "1s"];

    let health = side_by_side(
        &cluster,
        &[&fast[..], &["--endpoints", eps, "endpoint", "health"]].concat(),
        &[],
    );
    assert_same_health(&health);
    assert_eq!(health.etcdops.code, 1, "{health}");
    assert!(!health.etcdops.stderr.is_empty(), "{health}");
    let dead = cluster.members[2].client_url.trim_start_matches("http://");
    assert!(
        !health.etcdops.stdout.contains(dead),
        "the dead member's line belongs on stderr:\n{health}"
    );
    let json = side_by_side(
        &cluster,
        &[
            &fast[..],
            &["--endpoints", eps, "endpoint", "health", "-w", "json"],
        ]
        .concat(),
        &[],
    );
    assert_same_health_json(&json);

    for command in ["status", "hashkv"] {
        let both = side_by_side(
            &cluster,
            &[&fast[..], &["--endpoints", eps, "endpoint", command]].concat(),
            &[],
        );
        assert_eq!(both.etcdctl.code, 1, "{both}");
        assert_eq!(both.etcdops.code, 1, "{both}");
        assert_eq!(both.etcdctl.stdout, both.etcdops.stdout, "{both}");
        assert_eq!(both.etcdops.stdout.lines().count(), 2, "{both}");
        assert!(
            both.etcdops.stderr.contains(dead),
            "the failure names the endpoint on stderr:\n{both}"
        );
    }
}

#[test]
fn member_list_reads_as_etcdctl_without_a_quorum_unless_asked_to_be_linearizable() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.kill_member(1);
    cluster.kill_member(2);
    let eps = cluster.members[0].client_url.clone();
    let fast = ["--command-timeout", "2s"];
    // etcdctl 3.4 reads the list serializably, so it answers without a quorum; 3.5's asks
    // for a linearizable list, which fails.
    let both = assert_same_output(
        &cluster,
        &[&fast[..], &["--endpoints", &eps, "member", "list"]].concat(),
    );
    let serves = cluster.version == EtcdVersion::V3_4;
    assert_eq!(both.etcdops.code, if serves { 0 } else { 1 }, "{both}");

    let mut args = cluster.client_flags();
    args.splice(0..2, ["--endpoints".to_string(), eps.clone()]);
    let with = |extra: &[&str]| {
        let mut all = args.clone();
        all.extend(fast.iter().chain(extra).map(|s| s.to_string()));
        etcdops(&all, &[("ETCDOPS_COMPAT", "etcdctl")])
    };
    let serializable = with(&["member", "list", "--consistency", "s"]);
    assert_eq!(serializable.code, 0, "{serializable}");
    assert_eq!(serializable.stdout.lines().count(), 3, "{serializable}");
    if serves {
        assert_eq!(serializable.stdout, both.etcdops.stdout, "{serializable}");
    }
    let linearizable = with(&["member", "list", "--consistency", "l"]);
    assert_eq!(
        linearizable.code, 1,
        "no quorum, no linearizable list:\n{linearizable}"
    );
    assert!(linearizable.stdout.is_empty(), "{linearizable}");
    let bad = with(&["member", "list", "--consistency", "x"]);
    assert_ne!(bad.code, 0, "{bad}");
}

#[test]
fn a_tls_cluster_matches_etcdctl() {
    let cluster = Cluster::start(3, Security::Tls);
    let eps = cluster.endpoints();
    let eps = eps.as_str();
    assert_same_health(&side_by_side(
        &cluster,
        &["--endpoints", eps, "endpoint", "health"],
        &[],
    ));
    for args in [
        vec!["--endpoints", eps, "endpoint", "status"],
        vec!["--endpoints", eps, "endpoint", "hashkv", "--cluster"],
        vec!["--endpoints", eps, "member", "list"],
    ] {
        let both = assert_same_output(&cluster, &args);
        assert!(both.etcdops.stdout.contains("https://"), "{both}");
    }
    assert_same_json(
        &cluster,
        &["--endpoints", eps, "endpoint", "status", "-w", "json"],
        STATUS_VOLATILE,
    );
}

#[test]
fn a_nospace_alarm_lists_and_shows_in_status_as_etcdctl() {
    let cluster = Cluster::start_with(1, Security::Plain, &["--quota-backend-bytes=1048576"]);
    let mut filled = false;
    for _ in 0..100 {
        if cluster.try_put_random("/fill/", 4, 50_000).is_err() {
            filled = true;
            break;
        }
    }
    assert!(filled, "the 1 MiB quota never filled");
    let eps = bare_endpoints(&cluster);
    let eps = eps.as_str();
    let list = assert_same_output(&cluster, &["--endpoints", eps, "alarm", "list"]);
    assert!(list.etcdops.stdout.contains("alarm:NOSPACE"), "{list}");
    assert_same_json(
        &cluster,
        &["--endpoints", eps, "alarm", "list", "-w", "json"],
        &[],
    );
    // The member's errors column carries the alarm. The db file may still grow between the
    // two runs (the last writes reach it within the backend's batch interval): its size
    // column is masked.
    let status = side_by_side(&cluster, &["--endpoints", eps, "endpoint", "status"], &[]);
    let without_size = |text: &str| -> Vec<String> {
        text.lines()
            .map(|line| {
                let mut columns: Vec<&str> = line.split(", ").collect();
                if columns.len() > 3 {
                    columns[3] = "SIZE";
                }
                columns.join(", ")
            })
            .collect()
    };
    assert_eq!(status.etcdctl.code, status.etcdops.code, "{status}");
    assert_eq!(
        without_size(&status.etcdctl.stdout),
        without_size(&status.etcdops.stdout),
        "{status}"
    );
    assert!(
        status.etcdops.stdout.ends_with("alarm:NOSPACE \n"),
        "{status}"
    );
}

#[test]
fn version_needs_no_cluster() {
    let nobody = "127.0.0.1:1";
    for format in ["simple", "table", "json"] {
        let run = etcdops(
            &[
                "--endpoints",
                nobody,
                "--dial-timeout",
                "500ms",
                "version",
                "-w",
                format,
            ]
            .map(String::from),
            &[("ETCDOPS_COMPAT", "etcdctl")],
        );
        assert_eq!(run.code, 0, "{run}");
        assert!(run.stderr.is_empty(), "{run}");
        if format == "simple" {
            assert_eq!(
                run.stdout,
                format!(
                    "etcdops version: {}\nAPI version: 3.6\n",
                    env!("CARGO_PKG_VERSION")
                ),
                "{run}"
            );
        }
    }
}

/// Finding: with an endpoint down, etcdctl's `endpoint health -w json` prints the JSON on
/// stdout and `Error: unhealthy cluster` on stderr; etcdops under `--compat etcdctl` writes
/// nothing to stderr (its health view has stderr lines in `simple` only), so the "stderr
/// emptiness alike" promise of the compat suite does not hold for the JSON form (a script
/// that checks `2>err; [ -s err ]` sees a healthy run).
#[test]
fn unhealthy_json_health_writes_to_stderr_as_etcdctl() {
    let cluster = Cluster::start(1, Security::Plain);
    let dead = format!("127.0.0.1:{}", etcdops_tests::free_port());
    let eps = format!("{},{dead}", bare_endpoints(&cluster));
    let both = side_by_side(
        &cluster,
        &[
            "--command-timeout",
            "2s",
            "--dial-timeout",
            "1s",
            "--endpoints",
            &eps,
            "endpoint",
            "health",
            "-w",
            "json",
        ],
        &[],
    );
    assert_same_health_json(&both);
    assert!(!both.etcdctl.stderr.is_empty(), "{both}");
    assert!(
        !both.etcdops.stderr.is_empty(),
        "etcdctl wrote to stderr, etcdops did not:\n{both}"
    );
}
