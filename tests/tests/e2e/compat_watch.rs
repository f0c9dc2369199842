//! `watch` as an etcdctl drop-in beyond its output (compat_kv.rs): a stream lost with its
//! member and resumed, redacted Secrets, `--hex`, signals during `-- COMMAND`, and a
//! compacted start revision; etcdctl of the cluster's release side by side where it applies.

use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security, block_on, etcdops_path};

use crate::compat_kv::{
    Live, SECRET, SECRET_VALUE, base64_of, both, command, ends_with, kv_cluster, run_raw,
    watch_both, watch_cluster,
};

/// A watch over a Secret under compat: the value left out of etcdctl's JSON and of the
/// command's environment, the bounded watch failing at its end after printing everything.
#[test]
fn watch_of_a_secret_under_compat_fails_and_leaves_its_value_out() {
    let (cluster, _) = kv_cluster(&[]);
    let revision = block_on(async {
        let mut client = cluster.client().await;
        let reply = client.get(SECRET, None).await?;
        Ok::<_, etcd_client::Error>(reply.kvs()[0].mod_revision())
    })
    .unwrap();
    let (rev, until) = (revision.to_string(), revision.to_string());
    let endpoints = cluster.endpoints();
    let watch = |rest: &[&str]| {
        let mut args = vec!["--endpoints", &endpoints, "watch", SECRET, "--rev", &rev];
        args.extend_from_slice(&["--until-rev", &until]);
        args.extend_from_slice(rest);
        run_raw(&etcdops_path(), &args, &[])
    };
    let simple = watch(&[]);
    assert_eq!(simple.code, 1, "{simple}");
    let shown = String::from_utf8_lossy(&simple.stdout);
    assert!(
        shown.starts_with(&format!("PUT\n{SECRET}\n<redacted")),
        "{simple}"
    );
    assert!(!shown.contains(SECRET_VALUE), "{simple}");
    assert!(
        String::from_utf8_lossy(&simple.stderr).contains("ETCDOPS_SHOW_SECRETS"),
        "{simple}"
    );
    let json = watch(&["-w", "json"]);
    assert_eq!(json.code, 1, "{json}");
    let line: serde_json::Value =
        serde_json::from_slice(json.stdout.split(|b| *b == b'\n').next().unwrap())
            .unwrap_or_else(|e| panic!("{e}: {json}"));
    let kv = &line["Events"][0]["kv"];
    assert_eq!(kv["key"], base64_of(SECRET.as_bytes()), "{json}");
    assert!(kv.get("value").is_none(), "{json}");
    let hook = watch(&["--", "sh", "-c", "echo \"value=${ETCD_WATCH_VALUE-unset}\""]);
    assert_eq!(hook.code, 1, "{hook}");
    assert!(
        String::from_utf8_lossy(&hook.stdout).ends_with("value=unset\n"),
        "{hook}"
    );
}

/// A previous value (`--prev-kv`) that is a redacted Secret counts as a redaction: a Secret
/// encrypted after being stored in the clear, or deleted, shows its old plaintext only as a
/// notice, and a bounded watch then fails (under compat in every form, in etcdops' simple),
/// never passing the notice off as the value with exit code 0. `-w fields`, which etcdctl's
/// watch does not print, is refused in both modes.
#[test]
fn watch_of_a_secrets_previous_value_fails_when_it_is_redacted() {
    let cluster = Cluster::start_with(1, Security::Plain, &[]);
    let (encrypted, deleted) = block_on(async {
        let mut client = cluster.client().await;
        client.put(SECRET, SECRET_VALUE, None).await?;
        let encrypted = client
            .put(SECRET, b"k8s:enc:aescbc:v1:key1:\x8f\x01".to_vec(), None)
            .await?
            .header()
            .map(|h| h.revision())
            .unwrap_or_default();
        let deleted = client
            .delete(SECRET, None)
            .await?
            .header()
            .map(|h| h.revision())
            .unwrap_or_default();
        Ok::<_, etcd_client::Error>((encrypted, deleted))
    })
    .unwrap();
    let endpoints = cluster.endpoints();
    let (from, until) = (encrypted.to_string(), deleted.to_string());
    for (compat, format, code) in [
        ("etcdctl", "simple", 1),
        ("etcdctl", "json", 1),
        ("etcdops", "simple", 1),
        ("etcdctl", "fields", 1),
        ("etcdops", "fields", 2),
    ] {
        let run = run_raw(
            &etcdops_path(),
            &[
                "--compat",
                compat,
                "--endpoints",
                &endpoints,
                "watch",
                SECRET,
                "--prev-kv",
                "--rev",
                &from,
                "--until-rev",
                &until,
                "-w",
                format,
            ],
            &[],
        );
        assert_eq!(run.code, code, "{compat} -w {format}: {run}");
        let stdout = String::from_utf8_lossy(&run.stdout);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!stdout.contains(SECRET_VALUE), "{run}");
        if format == "fields" {
            assert!(stdout.is_empty(), "{compat}: {run}");
            assert!(stderr.contains("fields"), "{compat}: {run}");
        } else {
            assert!(stderr.contains("redacted"), "{compat} -w {format}: {run}");
        }
    }
}

/// `--hex` in simple watch output: keys and values as etcdctl prints them (`\xNN`).
#[test]
fn watch_hex_simple_is_etcdctls() {
    let (cluster, first) = watch_cluster();
    let rev = first.to_string();
    let tail: String = b"/w/z".iter().map(|b| format!("\\x{b:02x}")).collect();
    let tail = format!("{tail}\n\\x65\\x6e\\x64\n");
    let (theirs, ours) = watch_both(
        &cluster,
        &["/w/", "--prefix", "--rev", &rev, "--prev-kv", "--hex"],
        &[],
        |out: &[u8]| out.ends_with(tail.as_bytes()),
    );
    assert_eq!(
        String::from_utf8_lossy(&theirs),
        String::from_utf8_lossy(&ours)
    );
    assert_eq!(theirs, ours);
}

/// SIGTERM while the command of `watch -- COMMAND` runs: passed on to the command, and the
/// watch ends at once (exit code 0) instead of waiting for the hook; the hook is gone too.
#[test]
fn watch_signalled_during_its_command_passes_the_signal_on_and_ends() {
    let (cluster, first) = watch_cluster();
    let rev = first.to_string();
    let endpoints = cluster.endpoints();
    let args = [
        "--endpoints",
        &endpoints,
        "watch",
        "/w/z",
        "--rev",
        &rev,
        "--",
        "sh",
        "-c",
        "echo started; exec sleep 120",
    ];
    let mut live = Live::start(&etcdops_path(), &args, &[]);
    live.until(ends_with("started\n"));
    let start = Instant::now();
    // `finish` also reads stdout to its end: the hook (which holds it) must be gone.
    let (code, out) = live.finish("-TERM");
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out));
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "the watch waited for its hook: {:?}",
        start.elapsed()
    );
}

/// A watch whose member is killed resumes on another endpoint from the revision after the
/// last one it printed, as etcdctl does: every event exactly once (none lost while it was
/// reconnecting, none repeated), and a warning line on stderr saying so.
#[test]
fn watch_resumes_on_another_member_without_a_gap_or_a_repeat() {
    let (code, out, warned) = watch_through_the_loss_of_a_member(false);
    assert_eq!(code, 0, "SIGINT ends it cleanly");
    assert_eq!(out, EVENTS, "each event once");
    assert_resume_warnings(&warned);
}

/// A bounded watch that lost its member resumes too, and still ends on its bound.
#[test]
fn bounded_watch_resumes_and_ends_on_its_bound() {
    let (code, out, warned) = watch_through_the_loss_of_a_member(true);
    assert_eq!(code, 0, "ended by its --until-rev: {out}\n{warned}");
    assert_eq!(out, EVENTS, "each event once");
    assert_resume_warnings(&warned);
}

/// The events of [`watch_through_the_loss_of_a_member`], as etcdctl prints them.
const EVENTS: &str = "PUT\n/r/1\n1\nPUT\n/r/2\n2\nPUT\n/r/3\n3\n";

fn assert_resume_warnings(warned: &str) {
    assert!(!warned.is_empty(), "a warning says the watch resumed");
    assert!(
        warned
            .lines()
            .all(|line| line.contains("lost its stream") && line.contains("resuming on")),
        "{warned}"
    );
}

/// Watches `/r/` on a 3-member cluster from its first event, kills the member the watch is
/// connected to, writes two more events through the others. Bounded: `--until-rev` the last
/// one, and the watch must end by itself; else it is interrupted (SIGINT) after the last.
/// Returns the exit code, stdout and stderr.
fn watch_through_the_loss_of_a_member(bounded: bool) -> (i32, String, String) {
    let mut cluster = Cluster::start(3, Security::Plain);
    let first = cluster.put("/r/1", "1");
    let endpoints = cluster.client_urls().join(",");
    let (rev, until) = (first.to_string(), (first + 2).to_string());
    let errors = cluster.dir().join("watch.stderr");
    let mut args = vec![
        "--endpoints",
        &endpoints,
        "watch",
        "/r/",
        "--prefix",
        "--rev",
        &rev,
    ];
    if bounded {
        args.extend_from_slice(&["--until-rev", &until]);
    }
    let mut watch = command(&etcdops_path(), &args, &[]);
    watch.stderr(std::fs::File::create(&errors).expect("stderr file"));
    let mut live = Live::spawn(watch);
    // Established (on the first endpoint, member 0) once it replayed the first event.
    live.until(ends_with("PUT\n/r/1\n1\n"));
    cluster.kill_member_now(0);
    block_on(async {
        let mut client = cluster.client().await;
        for (key, value) in [("/r/2", "2"), ("/r/3", "3")] {
            // The survivors may be electing a leader: a bounded retry of the write.
            let deadline = Instant::now() + Duration::from_secs(20);
            while let Err(e) = client.put(key, value, None).await {
                assert!(Instant::now() < deadline, "put {key}: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });
    let (code, out) = if bounded {
        live.ended()
    } else {
        live.until(ends_with("PUT\n/r/3\n3\n"));
        live.finish("-INT")
    };
    let warned = std::fs::read_to_string(&errors).unwrap();
    (code, String::from_utf8_lossy(&out).into_owned(), warned)
}

/// A watch from a compacted revision: etcdctl's JSON prints etcd's cancel response (with
/// CompactRevision) and fails; simple prints nothing and fails.
#[test]
fn watch_of_a_compacted_revision_prints_etcdctls_cancel_response() {
    let (cluster, first) = watch_cluster();
    let compacted = block_on(async {
        let mut client = cluster.client().await;
        let reply = client.put("/w/y", "x", None).await?;
        let revision = reply.header().unwrap().revision();
        client.compact(revision, None).await?;
        Ok::<_, etcd_client::Error>(revision)
    })
    .unwrap();
    let rev = first.to_string();
    let (theirs, ours) = both(&cluster, &["watch", "/w/a", "--rev", &rev, "-w", "json"]);
    assert_eq!(
        String::from_utf8_lossy(&theirs.stdout),
        String::from_utf8_lossy(&ours.stdout),
        "{theirs}\n{ours}"
    );
    assert!(
        String::from_utf8_lossy(&ours.stdout).contains(&format!("\"CompactRevision\":{compacted}")),
        "{ours}"
    );
    assert!(theirs.code != 0 && ours.code != 0, "{theirs}\n{ours}");
    let (theirs, ours) = both(&cluster, &["watch", "/w/a", "--rev", &rev]);
    assert_eq!(
        (theirs.stdout.len(), ours.stdout.len()),
        (0, 0),
        "{theirs}\n{ours}"
    );
    assert!(theirs.code != 0 && ours.code != 0, "{theirs}\n{ours}");
}
