//! `backup run` at the seams where a chain could be continued with data that never existed:
//! a cluster rolled back under it (same ID, lower revision), another cluster answering on its
//! endpoint or listed beside it, its full backup's object deleted under a manifest that
//! stays, a second container on the same host name (PID 1 too) claiming its lock; and its
//! log lines (one line per failure, empty segments said as such).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security, etcdops_path, spawn_logged};
use serde_json::Value;

use crate::backup_run::{
    BackupRun, assert_restored, keys_at, rand_u32, restore_refused, revision_of, write_changes,
};
use crate::save_snapshot;
use crate::snapshot_restore::restore_from;

/// The JSON events of a file of lines.
fn events_in(path: &Path) -> Vec<Value> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .collect()
}

/// Waits until an event after the first `skip` satisfies `pred`; returns its index.
fn wait_after(backup: &BackupRun, skip: usize, what: &str, pred: impl Fn(&Value) -> bool) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(i) = backup.events().iter().skip(skip).position(&pred) {
            return skip + i;
        }
        assert!(
            Instant::now() < deadline,
            "backup run never reported {what}:\n{:#?}",
            backup.events()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process killed (and reaped) when dropped, so a failing test leaves none behind.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `child` exits; its exit code, or `None` if it still runs at the deadline.
fn exit_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Now, as RFC 3339 with milliseconds.
fn now_rfc3339() -> String {
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S.%3NZ"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Restores the DR backup `dr` into a new data dir of the single member of `cluster` (same
/// name, peer URL and token: the same cluster ID) and starts it there: the cluster is back
/// at the backup's revision.
fn roll_back(cluster: &mut Cluster, dr: &str, round: usize) {
    cluster.kill_member_now(0);
    cluster.members[0].data_dir = cluster.dir().join(format!("rolled-back-{round}"));
    restore_from(dr, cluster, 0, &[], &[]).expect_code(0);
    cluster.start_restored();
}

fn rewound(event: &Value) -> bool {
    event["event"] == "gap"
        && event["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("history rewound: cluster at revision "))
}

#[test]
fn a_cluster_rolled_back_under_the_chain_ends_it_and_the_new_history_restores() {
    let source = Cluster::start(1, Security::Plain);
    source.put_keys("/seed/", 10);
    let dr_dir = source.dir().join("dr");
    let dr = save_snapshot(&source, &dr_dir, "zstd")
        .display()
        .to_string();
    let mut cluster = Cluster::plan_restore(1, "r");
    restore_from(&dr, &cluster, 0, &[], &[]).expect_code(0);
    cluster.start_restored();
    let dr_revision = revision_of(&cluster);
    let store = cluster.dir().join("store");

    // History 1, then a rollback while backup run watches.
    let backup = BackupRun::start(&cluster, &store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let old = *write_changes(&cluster, "old", 2).last().unwrap();
    backup.wait_published(old);
    let seen = backup.events().len();
    roll_back(&mut cluster, &dr, 1);
    assert!(revision_of(&cluster) < old);
    let gap = wait_after(&backup, seen, "a gap (history rewound)", rewound);
    let reason = backup.events()[gap]["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains(&format!("chain had {old}")),
        "the gap names the chain's revision: {reason}"
    );
    let full = wait_after(&backup, gap, "a new full backup", |e| {
        e["event"] == "full_saved"
    });
    assert!(backup.events()[full]["revision"].as_i64().unwrap() < old);
    // History 2: its changes go into the new chain.
    let second = *write_changes(&cluster, "new", 1).last().unwrap();
    assert!(second < old, "history 2 stays below history 1");
    wait_after(&backup, full, "history 2 published", |e| {
        e["event"] == "segment_published" && e["to_revision"].as_i64().unwrap() >= second
    });
    let events = backup.stop();
    assert!(
        !events
            .iter()
            .skip(gap)
            .any(|e| e["event"] == "segment_published"
                && e["after_revision"].as_i64().unwrap() >= old),
        "nothing of history 2 continued history 1's chain: {events:#?}"
    );

    // A rollback while nothing runs: the restarted run does not resume the chain.
    roll_back(&mut cluster, &dr, 2);
    let backup = BackupRun::start(&cluster, &store, &[]);
    let gap = backup.wait_for("a gap (history rewound) at resume", rewound);
    assert!(
        gap["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("chain had {second}")),
        "{gap}"
    );
    backup.wait_for("a new full backup", |e| e["event"] == "full_saved");
    assert!(
        !backup.events().iter().any(|e| e["event"] == "resumed"),
        "{:#?}",
        backup.events()
    );
    let third = *write_changes(&cluster, "third", 1).last().unwrap();
    backup.wait_published(third);
    let quiet = now_rfc3339();
    let seen = backup.events().len();
    // Two more segments: the first holds the caught-up marks up to `quiet` or later.
    let next = wait_after(&backup, seen, "a segment", |e| {
        e["event"] == "segment_published"
    });
    wait_after(&backup, next + 1, "another segment", |e| {
        e["event"] == "segment_published"
    });
    let events = backup.stop();
    assert_eq!(
        events.iter().filter(|e| rewound(e)).count(),
        1,
        "{events:#?}"
    );

    // The newest history restores exactly by time; a revision two histories reached is
    // refused instead of mixing them.
    let expected = keys_at(&cluster, None);
    let revision = revision_of(&cluster);
    assert!(revision > dr_revision);
    let mut restored = Cluster::plan_restore(1, "p");
    let done = restore_from(
        &store.display().to_string(),
        &restored,
        0,
        &["--to-time", &quiet],
        &[],
    );
    done.expect_code(0);
    restored.start_restored();
    assert_restored(&restored, &expected, revision, &done.json());
    let refused = restore_refused(&store, &["--to-revision", &third.to_string()]);
    assert!(refused.stderr.contains("reached twice"), "{refused}");
}

/// Starts a one-member etcd cluster of its own (token `token`) on `client_url`/`peer_url`.
fn start_other_cluster(cluster: &Cluster, client_url: &str, peer_url: &str, token: &str) -> Reaped {
    let data = cluster.dir().join(format!("other-{token}"));
    let mut cmd = Command::new(cluster.version.etcd());
    cmd.args(["--name", "other", "--data-dir"])
        .arg(&data)
        .args(["--listen-client-urls", client_url])
        .args(["--advertise-client-urls", client_url])
        .args(["--listen-peer-urls", peer_url])
        .args(["--initial-advertise-peer-urls", peer_url])
        .args(["--initial-cluster", &format!("other={peer_url}")])
        .args(["--initial-cluster-token", token])
        .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
    let child = Reaped(spawn_logged(
        cmd,
        &cluster.dir().join(format!("other-{token}.log")),
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cluster
        .etcdctl(&["endpoint", "health", "--endpoints", client_url])
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "the other cluster did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

#[test]
fn another_cluster_on_the_endpoint_is_never_published_and_mixed_endpoints_are_refused() {
    let a = Cluster::start(1, Security::Plain);
    let b = Cluster::start(1, Security::Plain);
    // Members of two clusters given together: refused at once, one line.
    let store = a.dir().join("store");
    let err = a.dir().join("mixed.err");
    let mut mixed = Command::new(etcdops_path())
        .args([
            "--endpoints",
            &format!("{},{}", a.endpoints(), b.endpoints()),
        ])
        .args(["-w", "json", "backup", "run"])
        .arg(&store)
        .args(["--delta-every", "1s"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let code = exit_within(&mut mixed, Duration::from_secs(30));
    let _ = mixed.kill();
    let _ = mixed.wait();
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert_eq!(code, Some(2), "mixed endpoints were not refused: {stderr}");
    assert!(stderr.contains("different clusters"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    drop(b);

    // Another cluster takes over the endpoint while backup run watches it.
    let mut a = a;
    a.put_keys("/a/", 30);
    let backup = BackupRun::start(&a, &store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let last_a = revision_of(&a);
    backup.wait_published(last_a);
    let seen = backup.events().len();
    let (client_url, peer_url) = (
        a.members[0].client_url.clone(),
        a.members[0].peer_url.clone(),
    );
    a.kill_member_now(0);
    let other = start_other_cluster(&a, &client_url, &peer_url, "other-cluster");
    // More revisions than cluster A had, so no revision check could catch them.
    etcdops_tests::block_on(async {
        let mut client = etcd_client::Client::connect([client_url.clone()], None).await?;
        for i in 0..(last_a + 20) {
            client.put(format!("/b/{i}"), "b", None).await?;
        }
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    wait_after(&backup, seen, "the other cluster named", |e| {
        e["event"] == "failed"
            && e["error"]
                .as_str()
                .is_some_and(|m| m.contains(&client_url) && m.contains("answers for cluster"))
    });
    // A few more publication intervals: still nothing of the other cluster.
    let now = backup.events().len();
    wait_after(&backup, now, "a later segment", |e| {
        e["event"] == "segment_published"
    });
    let events = backup.stop();
    drop(other);
    let published: Vec<&Value> = events
        .iter()
        .skip(seen)
        .filter(|e| e["event"] == "segment_published")
        .collect();
    assert!(
        published
            .iter()
            .all(|e| e["changes"] == 0 && e["to_revision"].as_i64().unwrap() <= last_a),
        "the other cluster's changes were published into this chain: {published:#?}"
    );
    let folders: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("etcd-"))
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
}

#[test]
fn a_full_backup_whose_object_is_deleted_under_its_manifest_is_reported_lost() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 10);
    let store = cluster.dir().join("store");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let object = full["object"].as_str().unwrap().to_string();
    std::fs::remove_file(store.join(&object)).unwrap();
    assert!(
        store.join(format!("{object}.manifest.json")).exists() || {
            // The manifest's name: beside the object.
            std::fs::read_dir(store.join(&object).parent().unwrap())
                .unwrap()
                .any(|e| {
                    e.unwrap()
                        .file_name()
                        .to_string_lossy()
                        .ends_with(".manifest.json")
                })
        }
    );
    cluster.put("/k/after", "x");
    let lost = backup.wait_for("the full backup lost", |e| e["event"] == "full_backup_lost");
    assert_eq!(lost["base"], object.as_str());
    let events = backup.events();
    let at = events
        .iter()
        .position(|e| e["event"] == "full_backup_lost")
        .unwrap();
    wait_after(&backup, at, "a new full backup", |e| {
        e["event"] == "full_saved"
    });
    let events = backup.stop();
    assert!(
        !events[..at]
            .iter()
            .any(|e| e["event"] == "segment_published" && e["changes"].as_u64().unwrap() > 0),
        "a segment was published into a chain whose full backup was gone: {events:#?}"
    );
}

/// `backup run` as PID 1 of a new PID namespace (a container), JSON lines to a file.
fn start_in_pid_namespace(cluster: &Cluster, store: &Path) -> (Reaped, PathBuf, PathBuf) {
    let tag = std::process::id() ^ rand_u32();
    let out = cluster.dir().join(format!("ns-{tag}.jsonl"));
    let err = cluster.dir().join(format!("ns-{tag}.err"));
    let child = Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", "--mount-proc"])
        .arg(etcdops_path())
        .args(cluster.client_flags())
        .args(["-w", "json", "backup", "run"])
        .arg(store)
        .args(["--delta-every", "1s", "--full-every", "1h"])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    (Reaped(child), out, err)
}

#[test]
fn a_second_container_on_the_same_host_name_as_pid_1_is_refused_while_the_first_runs() {
    let can_unshare = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !can_unshare {
        eprintln!("skipped: PID namespaces need root (unshare --pid)");
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("store");
    let (mut first, first_out, _) = start_in_pid_namespace(&cluster, &store);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !events_in(&first_out)
        .iter()
        .any(|e| e["event"] == "full_saved")
    {
        assert!(Instant::now() < deadline, "{:#?}", events_in(&first_out));
        std::thread::sleep(Duration::from_millis(100));
    }
    let locked = events_in(&first_out);
    assert!(locked.iter().any(|e| e["event"] == "locked"));
    let (mut second, _, second_err) = start_in_pid_namespace(&cluster, &store);
    let code = exit_within(&mut second.0, Duration::from_secs(30));
    drop(second);
    let stderr = std::fs::read_to_string(&second_err).unwrap();
    assert_eq!(code, Some(2), "the second run was not refused: {stderr}");
    assert!(stderr.contains("another backup run writes"), "{stderr}");
    assert!(stderr.contains("pid 1,"), "{stderr}");
    // The first one still holds its lock and goes on.
    let seen = events_in(&first_out).len();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !events_in(&first_out)
        .iter()
        .skip(seen)
        .any(|e| e["event"] == "segment_published")
    {
        assert!(
            first.0.try_wait().unwrap().is_none(),
            "the first run stopped"
        );
        assert!(Instant::now() < deadline, "{:#?}", events_in(&first_out));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        first.0.try_wait().unwrap().is_none(),
        "the first run stopped"
    );
    drop(first);
}

#[test]
fn failure_lines_are_one_line_without_debug_dumps_and_empty_segments_say_no_changes() {
    let mut cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("store");
    let out = cluster.dir().join("text.out");
    let child = Reaped(
        Command::new(etcdops_path())
            .args(cluster.client_flags())
            .args(["backup", "run"])
            .arg(&store)
            .args(["--delta-every", "1s", "--full-every", "1h"])
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let text = || std::fs::read_to_string(&out).unwrap_or_default();
    let wait = |what: &str, pred: &dyn Fn(&str) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !text().lines().any(pred) {
            assert!(Instant::now() < deadline, "no line {what}:\n{}", text());
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait("of an empty segment", &|l| {
        l.starts_with("segment ") && l.contains("no changes")
    });
    cluster.kill_member_now(0);
    wait("of a failed watch", &|l| {
        l.starts_with("failed, will retry: watch on")
    });
    drop(child);
    let all = text();
    for line in all.lines() {
        assert!(!line.contains("0 changes, revisions"), "{line}");
        if line.starts_with("failed") {
            for dump in ["hyper::Error", "Error {", "kind:", "Custom {", "Some("] {
                assert!(!line.contains(dump), "a debug dump in: {line}");
            }
        }
    }
}
