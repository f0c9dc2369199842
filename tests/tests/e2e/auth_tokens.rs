//! Long-lived clients outlive etcd's auth tokens. With `--auth-token jwt,...,ttl=2s` every
//! token expires two seconds after it was issued, and any change of users or roles makes
//! every older token stale at once: `backup run` (a watch, a revision check every second, the
//! lease lookups) and `watch --until-rev` (a revision check every poll) run across several
//! token lifetimes and an auth change without a failure, a reconnection or a gap; every
//! change written meanwhile is in the chain (a point-in-time restore serves exactly what the
//! cluster served). When the password itself stops working, the run says so in clear words.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, ROOT_PASSWORD, Security, etcdops_path, jwt_auth_token};
use serde_json::Value;

use crate::backup_run::{BackupRun, keys_at, revision_of};
use crate::snapshot_restore::restore_from;

/// Changes written while the clients run, one every [`PACE`] (and a put): several token
/// lifetimes.
const WRITES: i64 = 30;
/// The time between two writes. Pacing, not synchronization: the writes must span several
/// token lifetimes for the tokens to expire under the clients.
const PACE: Duration = Duration::from_millis(100);

#[test]
fn backup_run_and_watch_renew_expired_and_stale_jwt_tokens_without_a_failure() {
    let keys = tempfile::tempdir().unwrap();
    let token = jwt_auth_token(keys.path(), "2s");
    let cluster = Cluster::start_with(1, Security::Auth, &["--auth-token", &token]);
    cluster.put_keys("/seed/", 5);
    let store = cluster.dir().join("jwt-store");
    let backup = BackupRun::start(&cluster, &store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");

    let start = revision_of(&cluster);
    let last = start + WRITES;
    let watched = cluster.dir().join("watch.jsonl");
    let mut watch = Command::new(etcdops_path())
        .args(cluster.client_flags())
        .args(["watch", "/jwt/", "--prefix", "-w", "json"])
        .args(["--rev", &(start + 1).to_string()])
        .args(["--until-rev", &last.to_string()])
        .stdout(std::fs::File::create(&watched).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    for i in 0..WRITES {
        cluster.put(&format!("/jwt/k{i:03}"), format!("v{i}"));
        if i == WRITES / 2 {
            // A change of users: every token issued before it is stale from now on.
            let endpoints = cluster.endpoints();
            let added = cluster.etcdctl(&["--endpoints", &endpoints, "user", "add", "other:pw"]);
            assert!(added.status.success(), "{added:?}");
        }
        std::thread::sleep(PACE);
    }
    assert_eq!(revision_of(&cluster), last, "one revision per write");
    backup.wait_published(last);

    // The watch delivered every change and ended at its bound.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = watch.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the watch never ended");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "watch failed ({status}): {stderr}");
    assert!(
        !stderr.contains("resuming"),
        "the watch lost its stream: {stderr}"
    );
    let printed: Value = serde_json::from_str(&std::fs::read_to_string(&watched).unwrap())
        .unwrap_or_else(|e| panic!("watch printed no JSON document ({e}): {stderr}"));
    assert_eq!(
        printed["summary"]["ended_by"], "until_revision",
        "{printed}"
    );
    let delivered: Vec<i64> = printed["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|event| event["revision"].as_i64())
        .collect();
    assert_eq!(
        delivered,
        (start + 1..=last).collect::<Vec<_>>(),
        "every change, once, in order"
    );

    // backup run never failed, reconnected or left a gap: the tokens were renewed quietly.
    let events = backup.events();
    let trouble: Vec<&Value> = events
        .iter()
        .filter(|e| {
            ["failed", "gap", "reconnected", "resumed"].contains(&e["event"].as_str().unwrap_or(""))
        })
        .collect();
    assert!(trouble.is_empty(), "{trouble:#?}");
    let fulls = events.iter().filter(|e| e["event"] == "full_saved").count();
    assert_eq!(fulls, 1, "one chain: {events:#?}");

    // Every change is in the chain: restored to the last revision, the keys are the cluster's.
    let mut restored = Cluster::plan_restore(1, "j");
    // The restored db keeps the cluster's users: its members are read as root.
    restored.security = Security::Auth;
    restore_from(
        &store.display().to_string(),
        &restored,
        0,
        &["--to-revision", &last.to_string()],
        &[],
    )
    .expect_code(0);
    restored.start_restored();
    let expected = keys_at(&cluster, Some(last));
    assert_eq!(expected.len(), 5 + WRITES as usize, "{expected:#?}");
    assert_eq!(keys_at(&restored, None), expected);

    // The password changed under the run: the next renewal is refused, and the run says so
    // (once per attempt, backing off), naming the user and never the password.
    let mut passwd = Command::new(cluster.version.etcdctl())
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &cluster.endpoints()])
        .args(cluster.security_flags())
        .args(["user", "passwd", "root", "--interactive=false"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut passwd.stdin.take().unwrap(), b"n3w-r00t-pw\n").unwrap();
    assert!(passwd.wait().unwrap().success());
    let refused = backup.wait_for("the refused renewal", |e| {
        e["event"] == "failed"
            && e["error"]
                .as_str()
                .is_some_and(|m| m.contains("wrong user name or password"))
    });
    let message = refused["error"].as_str().unwrap();
    assert!(message.contains("'root'"), "{message}");
    assert!(!message.contains(ROOT_PASSWORD), "{message}");
    let events = backup.stop();
    let failures = events.iter().filter(|e| e["event"] == "failed").count();
    assert!(
        failures < 10,
        "a refused password is retried with growing waits, not in a loop: {events:#?}"
    );
}

/// A JWT etcd issued, given as etcdctl 3.7's `--auth-jwt-token` (or its variable) instead of a
/// user: every request carries it, no password is sent, and it never shows in any output.
#[test]
fn a_jwt_given_instead_of_a_user_authenticates_every_request_and_never_shows() {
    let keys = tempfile::tempdir().unwrap();
    let auth_token = jwt_auth_token(keys.path(), "5m");
    let cluster = Cluster::start_with(1, Security::Auth, &["--auth-token", &auth_token]);
    cluster.put_keys("/seed/", 5);
    let jwt = etcdops_tests::block_on(async {
        let client = cluster.client().await;
        let mut auth = client.auth_client();
        let answer = auth
            .authenticate("root".to_string(), ROOT_PASSWORD.to_string())
            .await?;
        Ok::<_, etcd_client::Error>(answer.token().to_string())
    })
    .expect("a token from etcd");
    let endpoints = cluster.endpoints();
    // Security::Auth's flags carry the user: only the endpoints here (the cluster is plain).
    let run = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["--endpoints".to_string(), endpoints.clone()];
        args.extend(extra.iter().map(|s| s.to_string()));
        etcdops_tests::etcdops(&args, env)
    };
    let got = run(
        &[
            "--auth-jwt-token",
            &jwt,
            "get",
            "/seed/",
            "--prefix",
            "-w",
            "json",
        ],
        &[],
    );
    got.expect_code(0);
    assert_eq!(got.json()["count"], 5, "{got}");
    // etcdctl's variable, under its personality.
    let compat = [
        ("ETCDOPS_COMPAT", "etcdctl"),
        ("ETCDCTL_AUTH_JWT_TOKEN", jwt.as_str()),
    ];
    let status = run(&["auth", "status"], &compat);
    assert_eq!(status.code, 0, "{status}");
    // etcd 3.4 has no AuthStatus request, so no revision to tell.
    let first = match cluster.version {
        etcdops_tests::EtcdVersion::V3_4 => "Authentication Status: true\n",
        _ => "Authentication Status: true\nAuthRevision: ",
    };
    assert!(status.stdout.starts_with(first), "{status}");
    let counted = run(&["get", "/seed/", "--prefix", "--keys-only"], &compat);
    assert_eq!(counted.code, 0, "{counted}");
    assert_eq!(
        counted.stdout.lines().filter(|l| !l.is_empty()).count(),
        5,
        "{counted}"
    );
    // Without it the reads are refused: the token is what let them through.
    let refused = run(&["get", "/seed/", "--prefix"], &[]);
    assert_ne!(refused.code, 0, "{refused}");
    // A forged token, and one given with a user: refused, neither ever printed.
    // One character of the signed payload changed (a change of the signature's last
    // character may only touch its padding bits).
    let at = jwt.find('.').unwrap() + 5;
    let swapped = if &jwt[at..=at] == "A" { "B" } else { "A" };
    let forged = format!("{}{swapped}{}", &jwt[..at], &jwt[at + 1..]);
    assert_ne!(forged, jwt);
    let bad = run(&["--auth-jwt-token", &forged, "get", "/seed/"], &[]);
    assert_ne!(bad.code, 0, "{bad}");
    let both = run(
        &["--auth-jwt-token", &jwt, "--user", "root", "get", "/seed/"],
        &[],
    );
    assert_ne!(both.code, 0, "{both}");
    for shown in [&got, &status, &counted, &refused, &bad, &both] {
        assert!(
            !shown.stdout.contains(&jwt[10..]) && !shown.stderr.contains(&jwt[10..]),
            "the token was printed: {shown}"
        );
        assert!(!shown.stderr.contains(&forged[10..]), "{shown}");
    }
}
