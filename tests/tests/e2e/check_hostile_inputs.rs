//! `check` (certificates, latency/churn, backup freshness) against bad input: hostile
//! `/metrics` endpoints, nonsense thresholds, secrets in store and metrics URLs, and a store
//! with half-written, foreign, object-less and future-stamped backups.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security, etcdops, free_port};
use serde_json::Value;

use crate::assert_clear_error;
use crate::check_backup::backup_finding;
use crate::check_findings::findings;

/// What a fake metrics endpoint does with each request.
#[derive(Clone)]
enum Answer {
    /// Reads the request, then never answers (holds the connection until the test ends).
    Hang,
    /// Answers this whole HTTP response.
    Raw(Vec<u8>),
    /// Answers 200 with this many bytes of comment lines, then real-looking etcd series.
    Huge(usize),
}

/// A one-thread HTTP server answering every connection with `answer`; its URL. Hung
/// connections are released when the returned sender is dropped.
fn fake_metrics(answer: Answer) -> (String, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let (stop, stopped) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            match &answer {
                Answer::Hang => {
                    held.push(stream);
                    // Blocks until the test drops its sender: no timing involved.
                    let _ = stopped.recv();
                    return;
                }
                Answer::Raw(bytes) => {
                    let _ = stream.write_all(bytes);
                }
                Answer::Huge(size) => {
                    let _ = stream.write_all(b"HTTP/1.0 200 OK\r\n\r\n");
                    let line =
                        [b"# padding padding padding padding padding\n".as_slice(); 1024].concat();
                    let mut sent = 0;
                    while sent < *size {
                        if stream.write_all(&line).is_err() {
                            break;
                        }
                        sent += line.len();
                    }
                    let _ = stream.write_all(b"etcd_server_leader_changes_seen_total 1\n");
                }
            }
        }
    });
    (url, stop)
}

fn http(status: &str, body: &str) -> Answer {
    Answer::Raw(format!("HTTP/1.0 {status}\r\nContent-Type: text/plain\r\n\r\n{body}").into_bytes())
}

/// The metrics entry read from `url` (its shown, redacted URL starts with `shown`).
fn entry<'a>(report: &'a Value, shown: &str) -> &'a Value {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["url"].as_str().unwrap().starts_with(shown))
        .unwrap_or_else(|| panic!("no metrics entry for {shown}: {report}"))
}

#[test]
fn hostile_metrics_endpoints_are_warnings_that_say_why_never_fine() {
    let cluster = Cluster::start(1, Security::Plain);
    let (hang, _hang_stop) = fake_metrics(Answer::Hang);
    let (unauthorized, _s1) = fake_metrics(http("401 Unauthorized", "who are you\n"));
    let (redirect, _s2) = fake_metrics(Answer::Raw(
        b"HTTP/1.0 302 Found\r\nLocation: http://127.0.0.1:1/metrics\r\n\r\n".to_vec(),
    ));
    // Another service's page: a 200 without a single etcd series.
    let (garbage, _s3) = fake_metrics(http("200 OK", "<html>\0\u{1}\u{7f}not metrics</html>\n"));
    // etcd's names, but NaN and infinite counts.
    let (nan, _s4) = fake_metrics(http(
        "200 OK",
        "etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} NaN\n\
         etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} +Inf\n\
         etcd_server_leader_changes_seen_total NaN\n",
    ));
    // 40 MiB before the first series: over the 32 MiB cap.
    let (huge, _s5) = fake_metrics(Answer::Huge(40 << 20));
    // Credentials in a metrics URL (basic auth given by hand) are never shown.
    let with_password = unauthorized.replace("http://", "http://admin:hunter2@");
    let real = format!("{}/metrics", cluster.members[0].client_url);
    let urls = [
        hang.as_str(),
        with_password.as_str(),
        redirect.as_str(),
        garbage.as_str(),
        nan.as_str(),
        huge.as_str(),
        real.as_str(),
    ]
    .join(",");
    let started = Instant::now();
    let run = crate::run(
        &cluster,
        &[
            "--command-timeout",
            "3s",
            "check",
            "-w",
            "json",
            "--metrics-urls",
            &urls,
        ],
    );
    let took = started.elapsed();
    // The hang costs one command timeout (reads run at once), not one per URL, not forever.
    assert!(took < Duration::from_secs(30), "took {took:?}: {run}");
    assert!(
        !run.stdout.contains("hunter2") && !run.stderr.contains("hunter2"),
        "{run}"
    );
    run.expect_code(1);
    let report = run.json();
    let expect = |url: &str, needle: &str| {
        let m = entry(&report, url);
        let error = m["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{url}: no error: {m}"));
        assert!(error.contains(needle), "{url}: {error}");
    };
    expect(&hang, "no answer within");
    expect(&unauthorized.replace("http://", "http://admin:***@"), "401");
    expect(&redirect, "302");
    expect(&garbage, "none of etcd's");
    expect(&nan, "none of etcd's");
    expect(&huge, "larger than");
    let ours = entry(&report, &real);
    assert!(ours["error"].is_null(), "{ours}");
    assert!(ours["leader_changes"].as_u64().is_some(), "{ours}");
    let f = findings(&report);
    assert_eq!(f["latency"].0, "warning", "{:?}", f["latency"]);
    for url in [&hang, &redirect, &garbage, &nan, &huge] {
        assert!(
            f["latency"].1.contains(url.as_str()),
            "{url}: {:?}",
            f["latency"]
        );
    }
    // Only the real member's counters are judged.
    assert!(f["churn"].1.contains("on 1 member(s)"), "{:?}", f["churn"]);
}

#[test]
fn nonsense_thresholds_and_durations_are_refused_in_one_line() {
    // Refused before anything is read: no cluster needed, nothing listens there.
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().display().to_string();
    let check = |rest: &[&str]| {
        let mut args = vec!["--endpoints".to_string(), endpoint.clone(), "check".into()];
        args.extend(rest.iter().map(|s| s.to_string()));
        etcdops(&args, &[])
    };
    let swapped = check(&["--cert-warn-days", "7", "--cert-critical-days", "30"]);
    assert_clear_error(&swapped, "below the critical one");
    assert!(swapped.stderr.contains("--cert-warn-days"), "{swapped}");
    let negative = check(&["--cert-critical-days=-1"]);
    assert_clear_error(&negative, "cannot be negative");
    let zero = check(&["--store", &store, "--max-backup-age", "0s"]);
    assert_clear_error(&zero, "--max-backup-age");
    for bad in ["1y", "abc", "-1h", ""] {
        let run = check(&["--store", &store, &format!("--max-backup-age={bad}")]);
        assert_eq!(run.code, 2, "{bad}: {run}");
        assert!(run.stderr.contains("is not a duration"), "{bad}: {run}");
        assert!(!run.stderr.contains("panicked"), "{bad}: {run}");
    }
    // Days and weeks are durations: accepted (then the dead endpoint is the error).
    let week = check(&["--store", &store, "--max-backup-age", "1w"]);
    assert!(!week.stderr.contains("duration"), "{week}");
}

#[test]
fn secrets_in_store_urls_and_s3_keys_never_show_whatever_fails() {
    let cluster = Cluster::start(1, Security::Plain);
    let dead = free_port();
    let runs = [
        // Credentials in the store URL's authority, the store unreachable.
        crate::run(
            &cluster,
            &[
                "check",
                "-w",
                "json",
                "--skip-metrics",
                "--store",
                "s3://AKIAEXAMPLE:hunter2@bucket/etcd",
                "--s3-endpoint",
                &format!("http://127.0.0.1:{dead}"),
                "--allow-http",
                "--max-backup-age",
                "1h",
            ],
        ),
        // Credentials in the S3 endpoint, keys in the environment.
        etcdops(
            &[
                cluster.client_flags(),
                [
                    "check",
                    "-w",
                    "json",
                    "--skip-metrics",
                    "--store",
                    "s3://bucket/etcd",
                    "--s3-endpoint",
                ]
                .map(String::from)
                .to_vec(),
                vec![
                    format!("http://AKIAEXAMPLE:hunter2@127.0.0.1:{dead}"),
                    "--allow-http".into(),
                ],
            ]
            .concat(),
            &[
                ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
                ("AWS_SECRET_ACCESS_KEY", "hunter2-secret-key"),
            ],
        ),
    ];
    // The keys in the environment, the S3 endpoint down: the listing itself fails.
    let down = etcdops(
        &[
            cluster.client_flags(),
            [
                "check",
                "-w",
                "json",
                "--skip-metrics",
                "--store",
                "s3://bucket/etcd",
                "--allow-http",
                "--s3-endpoint",
            ]
            .map(String::from)
            .to_vec(),
            vec![format!("http://127.0.0.1:{dead}")],
        ]
        .concat(),
        &[
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "hunter2-secret-key"),
        ],
    );
    for (run, needle) in runs
        .iter()
        .zip([
            "credentials in the URL are refused",
            "credentials in the endpoint URL",
        ])
        .chain([(&down, "could not be listed")])
    {
        assert!(!run.stdout.contains("hunter2"), "{run}");
        assert!(!run.stderr.contains("hunter2"), "{run}");
        // Whatever failed is the backup finding's warning, never "ok", never a crash.
        run.expect_code(1);
        let report = run.json();
        let (severity, message) = &findings(&report)["backup"];
        assert_eq!(severity, "warning", "{message}");
        assert!(message.contains(needle), "{message}");
    }
}

/// Moves a backup's manifest times `hours` into the future (a writer whose clock is ahead).
fn stamp_in_the_future(object: &std::path::Path, hours: i64) {
    let manifest = format!("{}.manifest.json", object.display());
    let mut value: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    for field in ["created_at", "completed_at"] {
        let at = value[field].as_str().unwrap().to_string();
        let moved = std::process::Command::new("date")
            .args([
                "-u",
                "-d",
                &format!("{at} + {hours} hours"),
                "+%Y-%m-%dT%H:%M:%S.%3NZ",
            ])
            .output()
            .unwrap();
        assert!(moved.status.success());
        value[field] = serde_json::json!(String::from_utf8(moved.stdout).unwrap().trim());
    }
    std::fs::write(&manifest, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
}

#[test]
fn half_written_foreign_objectless_and_future_backups_are_judged_right() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 5);
    let store = cluster.dir().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let good = crate::save_snapshot(&cluster, &store, "zstd");
    let good_name = good.file_name().unwrap().to_str().unwrap().to_string();
    // Foreign files and a newer backup still being written (its object, no manifest yet).
    std::fs::write(store.join("README.txt"), "not a backup\n").unwrap();
    std::fs::create_dir_all(store.join("junk/deeper")).unwrap();
    std::fs::write(store.join("junk/deeper/x.manifest.json"), "{not json").unwrap();
    let partial = store.join(good_name.replace(".db", "-partial.db"));
    std::fs::copy(&good, &partial).unwrap();
    let (code, severity, message, backup) = backup_finding(&cluster, &store, "1h");
    assert_eq!((code, severity.as_str()), (0, "ok"), "{message}");
    assert!(
        backup["object"].as_str().unwrap().ends_with(&good_name),
        "{backup}"
    );
    assert_eq!(backup["verified"], true, "{backup}");

    // A newer backup whose object vanished (manifest left) is not complete: the older one
    // is the newest complete backup, judged by its own revision and age.
    cluster.put_keys("/k2/", 3);
    let gone = crate::save_snapshot(&cluster, &store, "zstd");
    std::fs::remove_file(&gone).unwrap();
    let (code, severity, message, gone_backup) = backup_finding(&cluster, &store, "1h");
    assert_eq!((code, severity.as_str()), (0, "ok"), "{message}");
    assert!(
        gone_backup["object"]
            .as_str()
            .unwrap()
            .ends_with(&good_name),
        "{gone_backup}"
    );
    assert_eq!(gone_backup["revision"], backup["revision"], "{gone_backup}");
    std::fs::remove_file(format!("{}.manifest.json", gone.display())).unwrap();

    // A backup stamped two days in the future: a clock warning, not "fresh".
    stamp_in_the_future(&good, 48);
    let (code, severity, message, _) = backup_finding(&cluster, &store, "1h");
    assert_eq!((code, severity.as_str()), (1, "warning"), "{message}");
    assert!(message.contains("in the future"), "{message}");
}

#[test]
fn cluster_info_refuses_nonsense_and_never_shows_store_secrets() {
    let cluster = Cluster::start(1, Security::Plain);
    let dead = free_port();
    let base = serde_json::json!({"endpoints": cluster.client_urls(), "skip_metrics": true});
    let with = |extra: Value| {
        let mut args = base.clone();
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let tasks = serde_json::json!([
        {"etcd.core.etcd_cluster_info": with(serde_json::json!({
            "cert_warn_days": 7, "cert_critical_days": 30})),
         "register": "swapped", "ignore_errors": true},
        {"etcd.core.etcd_cluster_info": with(serde_json::json!({"fail_on": ["bogus"]})),
         "register": "unknown", "ignore_errors": true},
        {"etcd.core.etcd_cluster_info": with(serde_json::json!({
            "store": cluster.dir().display().to_string(), "max_backup_age": "0s"})),
         "register": "zero", "ignore_errors": true},
        // Credentials in the store URL, the S3 endpoint down, fail_on backup: a failure
        // whose message and fields never carry the password.
        {"etcd.core.etcd_cluster_info": with(serde_json::json!({
            "store": "s3://AKIAEXAMPLE:hunter2@bucket/etcd",
            "s3_endpoint": format!("http://127.0.0.1:{dead}"), "allow_http": true,
            "max_backup_age": "1h", "fail_on": ["backup"]})),
         "register": "creds", "ignore_errors": true},
        {"ansible.builtin.debug": {"var": "creds"}},
        {"ansible.builtin.assert": {"that": [
            "swapped is failed",
            "'below the critical one' in swapped.msg",
            "'cert_warn_days' in swapped.msg",
            "'Traceback' not in (swapped | string)",
            "unknown is failed",
            "'fail_on' in unknown.msg and 'bogus' in unknown.msg",
            "zero is failed",
            "'max_backup_age' in zero.msg",
            "creds is failed",
            "'backup: ' in creds.msg",
            "'hunter2' not in (creds | to_json)",
        ]}},
    ]);
    let play =
        serde_json::json!([{"hosts": "target", "gather_facts": false, "tasks": tasks}]).to_string();
    let collection = etcdops_tests::Collection::install();
    let played = collection.playbook(
        &play,
        "target ansible_connection=local\n",
        &serde_json::json!({}),
        &[],
        &[],
    );
    assert_eq!(played.code, 0, "{played}");
    assert!(played.stdout.contains("failed=0"), "{played}");
    assert!(played.stdout.contains("ignored=4"), "{played}");
    assert!(!played.stdout.contains("hunter2"), "{played}");
}

#[test]
fn a_member_whose_serving_certificate_expired_is_a_critical_certificate_finding() {
    let cluster = crate::check_findings::TlsCluster::start_with_days(
        etcdops_tests::EtcdVersion::from_env(),
        [-3, 400, 400],
    );
    let run = cluster.check(&[]);
    let report = run.json();
    let f = findings(&report);
    // No client accepts m0: the members finding says so...
    assert_eq!(f["members"].0, "warning", "{:?}", f["members"]);
    // ...and the certificates finding says why: its certificate expired.
    let (severity, message) = &f["certificates"];
    assert_eq!(severity, "critical", "{message}");
    assert!(
        message.contains("member m0's serving certificate"),
        "{message}"
    );
    assert!(message.contains("EXPIRED"), "{message}");
    run.expect_code(2);
}
