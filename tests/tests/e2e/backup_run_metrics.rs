//! `backup run --metrics-addr`, scraped for real: `/metrics` shows what the run did (the same
//! series as its textfile), `/readyz` turns 503 when the store stops accepting writes and 200
//! again once it recovers, `/healthz` answers throughout. The names the alert rules, their
//! tests and the dashboard under `deploy/monitoring/` use are checked against what the binary
//! serves and writes, so no rule watches a series that does not exist.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security, args, block_on, etcdops, free_port};

use crate::backup_run::{BackupRun, write_changes};

/// A plain HTTP/1.1 GET: the status code and the body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    if path == "/metrics" {
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/plain; version=0.0.4"),
            "{head}"
        );
    }
    (status, body.to_string())
}

/// Polls `path` until its status is `status` (60 s at most), returning the body.
fn wait_status(addr: &str, path: &str, status: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (got, body) = http_get(addr, path);
        if got == status {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} stayed {got} ({body}), expected {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of `series` (a name with its labels, as printed) in a metrics text.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{series} ")))
        .unwrap_or_else(|| panic!("{series} is missing:\n{text}"))
        .parse()
        .unwrap()
}

/// The metric names of a metrics text (`# TYPE` lines: a histogram by its base name).
fn metric_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// `promtool check metrics` (the linter of Prometheus' exposition format) on `text`.
fn promtool_check_metrics(text: &str) {
    use std::process::{Command, Stdio};
    let promtool = std::env::var("ETCDOPS_PROMTOOL").unwrap_or_else(|_| {
        let deps = std::env::var("ETCDOPS_DEPS_DIR").unwrap_or("/opt/etcdops-deps".into());
        format!("{deps}/promtool/promtool")
    });
    let mut child = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{promtool}: {e} (run scripts/install-deps)"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A `backup run` serving its metrics on a free port and keeping its textfile, its store in
/// the cluster's dir.
struct MetricsRun {
    backup: BackupRun,
    store: std::path::PathBuf,
    textfile: std::path::PathBuf,
    addr: String,
}

impl MetricsRun {
    fn start(cluster: &Cluster, name: &str) -> MetricsRun {
        let store = cluster.dir().join(format!("{name}-store"));
        let textfile = cluster.dir().join(format!("{name}.prom"));
        let addr = format!("127.0.0.1:{}", free_port());
        let metrics_file = textfile.display().to_string();
        let backup = BackupRun::start(
            cluster,
            &store,
            &["--metrics-addr", &addr, "--metrics-file", &metrics_file],
        );
        MetricsRun {
            backup,
            store,
            textfile,
            addr,
        }
    }
}

fn monitoring_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/monitoring")
}

#[test]
fn the_metrics_endpoint_shows_the_run_and_readyz_follows_the_store() {
    let cluster = Cluster::start(1, Security::Plain);
    let MetricsRun {
        backup,
        store,
        textfile,
        addr,
    } = MetricsRun::start(&cluster, "metrics");
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let ready = wait_status(&addr, "/readyz", 200);
    assert!(ready.starts_with("ready: the chain is current"), "{ready}");
    let written = write_changes(&cluster, "metrics-a", 2);
    let last = *written.last().unwrap();
    backup.wait_published(last);
    // The cluster's revision is read at each check (every second); a segment can be
    // published before the check that follows the writes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let text = loop {
        let (status, text) = http_get(&addr, "/metrics");
        assert_eq!(status, 200);
        if sample(&text, "etcdops_backup_run_cluster_revision") >= last as f64 {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cluster revision never reached {last}:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(
        sample(&text, "etcdops_backup_run_last_full_revision"),
        full["revision"].as_f64().unwrap(),
        "{text}"
    );
    assert!(sample(&text, "etcdops_backup_run_last_delta_revision") >= last as f64);
    assert!(sample(&text, "etcdops_backup_run_changes_total") >= written.len() as f64);
    assert!(sample(&text, "etcdops_backup_run_segments_total") >= 1.0);
    assert_eq!(sample(&text, "etcdops_backup_run_full_backups_total"), 1.0);
    assert!(
        sample(
            &text,
            "etcdops_backup_run_stored_bytes_total{kind=\"full\"}"
        ) > 0.0
    );
    assert!(
        sample(
            &text,
            "etcdops_backup_run_stored_bytes_total{kind=\"delta\"}"
        ) > 0.0
    );
    assert!(sample(&text, "etcdops_backup_run_last_full_bytes") > 0.0);
    assert!(
        sample(
            &text,
            "etcdops_backup_run_segment_publish_duration_seconds_count"
        ) >= 1.0
    );
    assert_eq!(sample(&text, "etcdops_backup_run_lock_held"), 1.0);
    assert_eq!(
        sample(&text, "etcdops_backup_run_delta_interval_seconds"),
        1.0
    );
    assert_eq!(
        sample(&text, "etcdops_backup_run_full_interval_seconds"),
        3600.0
    );
    assert_eq!(sample(&text, "etcdops_backup_run_gaps_total"), 0.0);
    // The textfile holds the same series.
    let file = std::fs::read_to_string(&textfile).unwrap();
    assert_eq!(metric_names(&file), metric_names(&text));

    // The store stops accepting writes: its directory is replaced by a file.
    let away = cluster.dir().join("metrics-store.away");
    std::fs::rename(&store, &away).unwrap();
    std::fs::write(&store, b"not a directory").unwrap();
    let not_ready = wait_status(&addr, "/readyz", 503);
    assert!(
        not_ready.starts_with("not ready: nothing published for"),
        "{not_ready}"
    );
    let (healthy, _) = http_get(&addr, "/healthz");
    assert_eq!(healthy, 200, "the process still answers");
    let (_, failing) = http_get(&addr, "/metrics");
    assert!(
        sample(
            &failing,
            "etcdops_backup_run_failures_total{reason=\"segment\"}"
        ) >= 1.0,
        "{failing}"
    );
    assert_eq!(sample(&failing, "etcdops_backup_run_ready"), 0.0);

    // It recovers: the held-back segment is published and the run is ready again.
    std::fs::remove_file(&store).unwrap();
    std::fs::rename(&away, &store).unwrap();
    let again = wait_status(&addr, "/readyz", 200);
    assert!(again.starts_with("ready:"), "{again}");
    let (_, recovered) = http_get(&addr, "/metrics");
    assert_eq!(sample(&recovered, "etcdops_backup_run_ready"), 1.0);
    assert_eq!(sample(&recovered, "etcdops_backup_run_gaps_total"), 0.0);
    let events = backup.stop();
    assert!(!events.iter().any(|e| e["event"] == "gap"), "{events:#?}");
    let failed = events
        .iter()
        .find(|e| e["event"] == "failed")
        .expect("the outage was reported");
    assert_eq!(failed["reason"], "segment", "{failed}");

    // Every name deploy/monitoring relies on is one the binary serves or writes: the run's
    // series as scraped, snapshot save's from its textfile.
    let save_file = cluster.dir().join("save.prom");
    let mut save = cluster.client_flags();
    save.extend(args(&[
        "snapshot",
        "save",
        &cluster.dir().join("saves").display().to_string(),
        "--metrics-file",
        &save_file.display().to_string(),
        "--quiet",
    ]));
    etcdops(&save, &[]).expect_code(0);
    let saved = std::fs::read_to_string(&save_file).unwrap();
    // Prometheus' own linter accepts both expositions.
    for exposition in [&text, &saved] {
        promtool_check_metrics(exposition);
    }
    let mut served = metric_names(&text);
    served.extend(metric_names(&saved));
    let listed: BTreeSet<String> = std::fs::read_to_string(monitoring_dir().join("metrics.txt"))
        .expect("deploy/monitoring/metrics.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    assert_eq!(
        listed, served,
        "deploy/monitoring/metrics.txt must list exactly the metrics etcdops emits"
    );
}

#[test]
fn the_textfile_left_by_a_stopped_run_shows_the_lock_released_and_not_ready() {
    let cluster = Cluster::start(1, Security::Plain);
    let MetricsRun {
        backup,
        textfile,
        addr,
        ..
    } = MetricsRun::start(&cluster, "stopped");
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    wait_status(&addr, "/readyz", 200);
    let written = write_changes(&cluster, "stopped", 1);
    backup.wait_published(*written.last().unwrap());
    let running = std::fs::read_to_string(&textfile).unwrap();
    assert_eq!(sample(&running, "etcdops_backup_run_lock_held"), 1.0);
    backup.stop();
    // node_exporter keeps serving the file after the run exits: it must not claim the lock
    // or readiness the run no longer has.
    let left = std::fs::read_to_string(&textfile).unwrap();
    assert_eq!(sample(&left, "etcdops_backup_run_lock_held"), 0.0, "{left}");
    assert_eq!(sample(&left, "etcdops_backup_run_ready"), 0.0, "{left}");
    // The server stopped with the run.
    assert!(TcpStream::connect(&addr).is_err(), "{addr} still answers");
}

/// Polls `/readyz` for `span`: the answers that were not 200.
fn not_ready_during(addr: &str, span: Duration) -> Vec<String> {
    let deadline = Instant::now() + span;
    let mut not_ready = Vec::new();
    while Instant::now() < deadline {
        let (status, body) = http_get(addr, "/readyz");
        if status != 200 {
            not_ready.push(body);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    not_ready
}

#[test]
fn an_idle_cluster_publishes_every_delta_interval_and_stays_ready() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("idle-store");
    let addr = format!("127.0.0.1:{}", free_port());
    // --delta-every equal to --check-every (1 s both): a segment of time marks each second,
    // not at the check after it was due (every 2 s, at the edge of what /readyz allows).
    let backup = BackupRun::start(&cluster, &store, &["--metrics-addr", &addr]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    wait_status(&addr, "/readyz", 200);
    let not_ready = not_ready_during(&addr, Duration::from_secs(12));
    let events = backup.stop();
    assert!(not_ready.is_empty(), "{not_ready:#?}");
    let segments = events
        .iter()
        .filter(|e| e["event"] == "segment_published")
        .count();
    assert!(
        segments >= 9,
        "{segments} segments in about 12 s:\n{events:#?}"
    );
}

/// Fills the cluster with `megabytes` of values that do not compress.
fn fill(cluster: &Cluster, megabytes: usize) {
    let urls = cluster.client_urls();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    block_on(async {
        let mut client = etcd_client::Client::connect(urls, None).await?;
        for i in 0..megabytes {
            let value: Vec<u8> = (0..(1 << 20) / 8)
                .flat_map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed.to_le_bytes()
                })
                .collect();
            client.put(format!("/fill/{i}"), value, None).await?;
        }
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
}

#[test]
#[ignore = "a full backup is taken inside the watch loop's check: no segment is published \
            until it is stored, so /readyz turns 503 whenever a full backup lasts longer than \
            about twice --delta-every (not fixed: the full backup must run beside the loop)"]
fn readiness_holds_while_a_full_backup_is_taken_beside_the_chain() {
    let cluster = Cluster::start(1, Security::Plain);
    // Large enough that a full backup takes a few seconds, more than twice --delta-every.
    fill(&cluster, 400);
    let store = cluster.dir().join("busy-store");
    let addr = format!("127.0.0.1:{}", free_port());
    let backup = BackupRun::start(
        &cluster,
        &store,
        &["--metrics-addr", &addr, "--full-every", "8s"],
    );
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    wait_status(&addr, "/readyz", 200);
    // The next full backup is due within 8 s; it is taken while the chain goes on.
    let not_ready = not_ready_during(&addr, Duration::from_secs(20));
    let events = backup.stop();
    assert!(
        events.iter().filter(|e| e["event"] == "full_saved").count() >= 2,
        "{events:#?}"
    );
    assert!(not_ready.is_empty(), "{not_ready:#?}");
}
