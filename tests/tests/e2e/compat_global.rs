//! The drop-in switch itself: `--compat etcdctl`, its variable and a binary called
//! `etcdctl` choose etcdctl's default format, JSON and exit codes; `ETCDCTL_WRITE_OUT` and the
//! `=BOOL` forms of switches are read as etcdctl reads them.

use std::path::Path;
use std::process::Command;

use etcdops_tests::{Cluster, Security, etcdops, etcdops_path};

use crate::run;

/// Runs `program args...` with a clean `ETCDCTL_*`/`ETCDOPS_COMPAT` environment plus `env`.
fn run_as(program: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars() {
        if key.starts_with("ETCDCTL_") || key == "ETCDOPS_COMPAT" {
            cmd.env_remove(key);
        }
    }
    let out = cmd.args(args).envs(env.iter().copied()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_binary_called_etcdctl_speaks_etcdctl() {
    let cluster = Cluster::start(1, Security::Plain);
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("etcdctl");
    std::os::unix::fs::symlink(etcdops_path(), &link).unwrap();
    let endpoints = cluster.endpoints();

    // simple by default, as etcdctl: no table borders.
    let (code, stdout, stderr) = run_as(&link, &["--endpoints", &endpoints, "member", "list"], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        !stdout.contains('+') && stdout.contains(", started, "),
        "{stdout}"
    );
    // The same command as etcdops prints our table.
    let ours = run(&cluster, &["member", "list"]);
    assert!(ours.stdout.contains("+--"), "{ours}");
    // An explicit --compat etcdops wins over the name.
    let (_, stdout, _) = run_as(
        &link,
        &[
            "--endpoints",
            &endpoints,
            "--compat",
            "etcdops",
            "member",
            "list",
        ],
        &[],
    );
    assert!(stdout.contains("+--"), "{stdout}");

    // etcdctl's exit code 1 for a bad flag (ours is 2), and for an unreachable cluster.
    let (code, _, stderr) = run_as(&link, &["member", "list", "--no-such-flag"], &[]);
    assert_eq!(code, 1, "{stderr}");
    let ours = etcdops(
        &["member".into(), "list".into(), "--no-such-flag".into()],
        &[],
    );
    assert_eq!(ours.code, 2, "{ours}");
    let (code, _, stderr) = run_as(
        &link,
        &[
            "--endpoints",
            "127.0.0.1:1",
            "--dial-timeout",
            "300ms",
            "member",
            "list",
        ],
        &[],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // A write is refused in one line, exit 1, and nothing is written.
    let (code, _, stderr) = run_as(&link, &["--endpoints", &endpoints, "put", "/w", "v"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("never writes"), "{stderr}");
    let written = cluster.etcdctl(&["--endpoints", &endpoints, "get", "/w"]);
    assert!(written.status.success(), "{written:?}");
    assert!(written.stdout.is_empty(), "/w was written: {written:?}");
    // Help is not an error.
    let (code, stdout, _) = run_as(&link, &["--help"], &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("--compat"), "{stdout}");
}

#[test]
fn write_out_comes_from_etcdctl_write_out_and_the_flag_wins() {
    let cluster = Cluster::start(1, Security::Plain);
    let endpoints = cluster.endpoints();
    let from_env = etcdops(
        &[
            "--endpoints".into(),
            endpoints.clone(),
            "member".into(),
            "list".into(),
        ],
        &[("ETCDCTL_WRITE_OUT", "json")],
    );
    from_env.expect_code(0);
    // etcdops' JSON: hex string IDs.
    assert!(
        from_env.json()["members"][0]["id"].is_string(),
        "{from_env}"
    );
    let flag_wins = etcdops(
        &[
            "--endpoints".into(),
            endpoints.clone(),
            "member".into(),
            "list".into(),
            "-w".into(),
            "simple".into(),
        ],
        &[("ETCDCTL_WRITE_OUT", "json")],
    );
    assert!(flag_wins.stdout.contains(", started, "), "{flag_wins}");
    // Under compat the variable gives etcdctl's JSON: numeric IDs, camelCase URLs.
    let theirs = etcdops(
        &[
            "--endpoints".into(),
            endpoints,
            "member".into(),
            "list".into(),
        ],
        &[("ETCDCTL_WRITE_OUT", "json"), ("ETCDOPS_COMPAT", "etcdctl")],
    );
    theirs.expect_code(0);
    let json = theirs.json();
    assert!(json["members"][0]["ID"].is_u64(), "{theirs}");
    assert!(json["members"][0]["clientURLs"].is_array(), "{theirs}");
    assert!(json["header"]["cluster_id"].is_u64(), "{theirs}");
    // A format etcdops does not have is one clear line.
    let bad = etcdops(
        &["member".into(), "list".into()],
        &[("ETCDCTL_WRITE_OUT", "yaml")],
    );
    assert_eq!(bad.code, 2, "{bad}");
}

#[test]
fn switches_take_etcdctls_bool_forms_and_keepalive_is_checked() {
    let cluster = Cluster::start(1, Security::Plain);
    let on = run(
        &cluster,
        &["endpoint", "health", "--cluster=true", "-w", "json"],
    );
    on.expect_code(0);
    let off = run(
        &cluster,
        &["endpoint", "health", "--cluster=false", "-w", "json"],
    );
    off.expect_code(0);
    let names = |run: &etcdops_tests::Run| -> Vec<serde_json::Value> {
        let json = run.json();
        json["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["endpoint"].clone())
            .collect()
    };
    // One member: --cluster asks it for the member list, and finds itself.
    assert_eq!(names(&on), names(&off), "{on}\n{off}");
    assert!(
        Command::new(etcdops_path())
            .args(["endpoint", "health", "--cluster=maybe"])
            .output()
            .unwrap()
            .status
            .code()
            == Some(2),
        "--cluster=maybe is a usage error"
    );
    let keepalive = run(
        &cluster,
        &[
            "--keepalive-time=5s",
            "--keepalive-timeout",
            "2s",
            "--debug",
            "member",
            "list",
        ],
    );
    keepalive.expect_code(0);
    let zero = run(&cluster, &["--keepalive-time=0s", "member", "list"]);
    assert_eq!(zero.code, 2, "{zero}");
    assert!(zero.stderr.contains("keepalive"), "{zero}");
}

#[test]
fn exit_codes_follow_etcdctls_for_refused_credentials_and_unreadable_files() {
    let cluster = Cluster::start(1, Security::Auth);
    let endpoints = cluster.endpoints();
    // Without a scheme, so that --cacert makes both tools read the CA file.
    let bare = endpoints.trim_start_matches("http://").to_string();
    // side_by_side adds root's good credentials first; a later --user wins in both tools.
    for args in [
        &[
            "--endpoints",
            &endpoints,
            "--user",
            "root:wrong",
            "get",
            "k",
        ][..],
        &[
            "--endpoints",
            &bare,
            "--cacert",
            "/no/such/ca.pem",
            "get",
            "k",
        ],
        &["--endpoints", &endpoints, "get", "k", "--no-such-flag"],
    ] {
        let both = etcdops_tests::side_by_side(&cluster, args, &[]);
        assert_ne!(both.etcdctl.code, 0, "{both}");
        assert_eq!(both.etcdctl.code, both.etcdops.code, "{args:?}:\n{both}");
        assert!(!both.etcdops.stderr.is_empty(), "{both}");
    }
}

/// Finding: etcdctl exits 128 when the CA file cannot be read for `endpoint status`, `endpoint
/// health` and `endpoint hashkv` too, and 2 when the credentials are refused for `endpoint
/// status` and `endpoint hashkv` (it fails building its client, before any endpoint is
/// asked; its `endpoint health` reports the endpoint unhealthy and exits 1); etcdops under `--compat etcdctl`
/// reports each endpoint as failed and exits 1, so a script that tells bad credentials (2)
/// from an unreachable cluster (1) after `etcdctl endpoint status` takes the wrong branch.
#[test]
fn endpoint_commands_exit_as_etcdctl_for_refused_credentials_and_unreadable_files() {
    let cluster = Cluster::start(1, Security::Auth);
    let endpoints = cluster.endpoints();
    // Without a scheme, so that --cacert makes both tools read the CA file.
    let bare = endpoints.trim_start_matches("http://").to_string();
    let commands: [&[&str]; 3] = [
        &["endpoint", "status"],
        &["endpoint", "health"],
        &["endpoint", "hashkv"],
    ];
    for command in commands {
        for connection in [
            vec!["--endpoints", &endpoints, "--user", "root:wrong"],
            vec!["--endpoints", &bare, "--cacert", "/no/such/ca.pem"],
        ] {
            let mut args = connection.clone();
            args.extend_from_slice(command);
            let both = etcdops_tests::side_by_side(&cluster, &args, &[]);
            assert_ne!(both.etcdctl.code, 0, "{args:?}:\n{both}");
            assert_eq!(
                both.etcdctl.code, both.etcdops.code,
                "{args:?}: exit codes differ:\n{both}"
            );
            assert!(!both.etcdops.stderr.is_empty(), "{both}");
        }
    }
}
