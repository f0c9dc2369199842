//! `backup run` when the store changes under it or the process is stopped, for real: a full
//! backup deleted (or the store emptied) under a running chain is reported (an event, the gap
//! and lost counters) and replaced at once, and revisions after the new full backup restore
//! exactly; SIGTERM at random moments (the first full backup included) exits 0 and leaves no
//! temporary upload, every listed backup verifies; a restart after a stop whose full backup
//! is already older than `--full-every` continues the chain, so the revisions made while it
//! was down restore, and one after history was compacted meanwhile reports the gap (a revision
//! inside it is refused, either side restores); a second `backup run` on the same store and
//! cluster is refused while the first runs and starts once it exits.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, S3Server, Security, args, etcdops, etcdops_path};
use serde_json::Value;

use crate::backup_run::{
    BackupRun, S3_ENV, assert_restored, keys_at, newest_chain, rand_u32, restore_point,
    revision_of, write_changes,
};

/// The value of one metric in a Prometheus text file.
fn metric(path: &Path, name: &str) -> f64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} is missing:\n{text}"))
}

/// Every file under `dir` (recursively).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// `snapshot list STORE -w json`.
fn catalog(store: &Path) -> Value {
    let listed = etcdops(
        &args(&[
            "snapshot",
            "list",
            &store.display().to_string(),
            "-w",
            "json",
        ]),
        &[],
    );
    listed.expect_code(0);
    listed.json()
}

/// No temporary upload is left, and every listed full backup verifies.
fn assert_store_clean(store: &Path, context: &str) {
    let partial: Vec<PathBuf> = files_under(store)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".partial-"))
        })
        .collect();
    assert!(partial.is_empty(), "{context}: leftovers {partial:?}");
    let listed = catalog(store);
    for backup in listed["backups"].as_array().unwrap() {
        let object = backup["object"].as_str().unwrap();
        let verified = etcdops(
            &args(&[
                "snapshot",
                "verify",
                &format!("{}/{object}", store.display()),
            ]),
            &[],
        );
        assert_eq!(
            verified.code, 0,
            "{context}: {object} does not verify:\n{verified}"
        );
    }
}

/// Waits until the process catches SIGTERM (its handler is installed, `SigCgt` in
/// /proc/PID/status): before that, a process that has not done anything yet dies of it.
fn wait_catches_sigterm(backup: &BackupRun) {
    let status = format!("/proc/{}/status", backup.child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let caught = std::fs::read_to_string(&status)
            .ok()
            .and_then(|text| {
                let mask = text.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
                u64::from_str_radix(mask.trim(), 16).ok()
            })
            .is_some_and(|mask| mask & (1 << (15 - 1)) != 0);
        if caught {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "backup run never installed its SIGTERM handler"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// SIGTERM, then the exit status (with a deadline).
fn terminate(backup: &mut BackupRun) -> std::process::ExitStatus {
    let pid = backup.child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = backup.child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "backup run did not exit after SIGTERM:\n{:#?}",
            backup.events()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until a full backup other than those in `known` is stored, returning its event.
fn wait_new_full(backup: &BackupRun, known: &[String]) -> Value {
    backup.wait_for("a new full backup", |e| {
        e["event"] == "full_saved" && !known.iter().any(|k| e["object"] == k.as_str())
    })
}

/// Restores the revision `target` and compares it with what the cluster served there.
fn assert_revision_restores(cluster: &Cluster, store: &Path, target: i64) {
    let expected = keys_at(cluster, Some(target));
    let rev = target.to_string();
    let (restored, result) = restore_point(store, &["--to-revision", &rev]);
    assert_eq!(result["revision"], target, "{result}");
    assert_restored(&restored, &expected, target, &result);
}

#[test]
fn a_lost_full_backup_or_an_emptied_store_is_reported_and_a_new_full_backup_taken_at_once() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("lost-full-store");
    let metrics = cluster.dir().join("lost-full.prom");
    let backup = BackupRun::start(
        &cluster,
        &store,
        &["--metrics-file", &metrics.display().to_string()],
    );
    let first = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let first_object = first["object"].as_str().unwrap().to_string();
    let before = write_changes(&cluster, "lost-a", 1);
    backup.wait_published(before[0]);

    // Someone deletes the full backup (manifest and object) under the running chain.
    std::fs::remove_file(store.join(format!("{first_object}.manifest.json"))).unwrap();
    std::fs::remove_file(store.join(&first_object)).unwrap();
    write_changes(&cluster, "lost-b", 1);
    let lost = backup.wait_for("the lost full backup", |e| e["event"] == "full_backup_lost");
    assert_eq!(lost["base"], first_object.as_str(), "{lost}");
    let second = wait_new_full(&backup, std::slice::from_ref(&first_object));
    let second_object = second["object"].as_str().unwrap().to_string();
    assert!(metric(&metrics, "etcdops_backup_run_gaps_total") >= 1.0);
    assert!(metric(&metrics, "etcdops_backup_run_full_backups_lost_total") >= 1.0);
    let after = write_changes(&cluster, "lost-c", 2);
    backup.wait_published(*after.last().unwrap());
    assert_revision_restores(&cluster, &store, after[0]);

    // The whole store emptied (every file and folder in it removed).
    for entry in std::fs::read_dir(&store).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
    write_changes(&cluster, "lost-d", 1);
    backup.wait_for("the second lost full backup", |e| {
        e["event"] == "full_backup_lost" && e["base"] == second_object.as_str()
    });
    let third = wait_new_full(&backup, &[first_object, second_object]);
    let third_revision = third["revision"].as_i64().unwrap();
    assert!(metric(&metrics, "etcdops_backup_run_full_backups_lost_total") >= 2.0);
    assert_eq!(
        metric(&metrics, "etcdops_backup_run_last_full_revision"),
        third_revision as f64
    );
    let after = write_changes(&cluster, "lost-e", 2);
    let last = *after.last().unwrap();
    backup.wait_published(last);
    let events = backup.stop();
    assert!(
        events
            .iter()
            .filter(|e| e["event"] == "gap" || e["event"] == "full_backup_lost")
            .count()
            >= 2,
        "{events:#?}"
    );
    let (object, covered) = newest_chain(&store);
    assert_eq!(object, third["object"].as_str().unwrap());
    assert!(covered >= last, "{covered} < {last}");
    assert_revision_restores(&cluster, &store, third_revision + 1);
    assert_revision_restores(&cluster, &store, last);
}

#[test]
fn sigterm_at_random_moments_exits_0_leaves_no_temporary_upload_and_every_backup_verifies() {
    let seed = rand_u32();
    eprintln!("sigterm test seed: {seed}");
    let mut state = u64::from(seed) | 1;
    let mut next = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let cluster = Cluster::start(1, Security::Plain);
    // Some MB of incompressible keys, so the first full backup takes a moment.
    cluster.put_random("/big/", 96, 64 << 10);
    let store = cluster.dir().join("sigterm-store");
    for round in 0..3 {
        let mut backup = BackupRun::start(&cluster, &store, &[]);
        wait_catches_sigterm(&backup);
        let context = format!("seed {seed}, round {round}");
        if round == 0 {
            // During the first full backup (or before it started).
            std::thread::sleep(Duration::from_millis(next(250)));
        } else {
            backup.wait_for("the run to hold its lock", |e| e["event"] == "locked");
            let deadline = Instant::now() + Duration::from_millis(200 + next(2500));
            let mut i = 0;
            while Instant::now() < deadline {
                write_changes(&cluster, &format!("term{round}-{i}"), 1);
                i += 1;
            }
        }
        let status = terminate(&mut backup);
        assert!(status.success(), "{context}: exit {status}");
        let events = backup.events();
        if round == 0 {
            assert!(
                events.iter().any(|e| e["event"] == "full_saved"),
                "{context}: the first full backup was not finished: {events:#?}"
            );
        }
        assert_store_clean(&store, &context);
        let locks: Vec<PathBuf> = files_under(&store)
            .into_iter()
            .filter(|p| p.ends_with("backup-run.lock.json"))
            .collect();
        assert!(
            locks.is_empty(),
            "{context}: the lock was not released: {locks:?}"
        );
    }
    // The chain (one, continued by each restart) restores to where it ends.
    let (_, covered) = newest_chain(&store);
    assert_revision_restores(&cluster, &store, covered);
}

#[test]
fn a_restart_after_sigterm_with_its_full_backup_due_continues_the_chain_before_a_new_full() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("restart-store");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let first = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let first_object = first["object"].as_str().unwrap().to_string();
    let saved_at = Instant::now();
    let before = write_changes(&cluster, "rs-a", 1);
    backup.wait_published(before[0]);
    backup.stop();
    // Written while nothing runs.
    let down = write_changes(&cluster, "rs-down", 2);
    // Restarted once the full backup is older than --full-every (3 s).
    while saved_at.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let backup = BackupRun::start(&cluster, &store, &["--full-every", "3s"]);
    let resumed = backup.wait_for("the chain resumed", |e| e["event"] == "resumed");
    assert_eq!(resumed["base"], first_object.as_str(), "{resumed}");
    let second = wait_new_full(&backup, std::slice::from_ref(&first_object));
    let second_revision = second["revision"].as_i64().unwrap();
    let after = write_changes(&cluster, "rs-b", 1);
    backup.wait_published(after[0]);
    let events = backup.stop();
    assert!(!events.iter().any(|e| e["event"] == "gap"), "{events:#?}");
    // The old chain reaches the new full backup: no revision in between is left out.
    let listed = catalog(&store);
    let old_end = listed["backups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["object"] == first_object.as_str())
        .and_then(|b| b["chain"]["to_revision"].as_i64())
        .unwrap_or_else(|| panic!("no chain for {first_object}: {listed}"));
    assert!(
        old_end >= second_revision,
        "{old_end} < {second_revision}: {listed}"
    );
    for target in [
        down[0],
        *down.last().unwrap(),
        second_revision - 1,
        after[0],
    ] {
        assert_revision_restores(&cluster, &store, target);
    }
    assert!(revision_of(&cluster) >= after[0]);
}

/// `backup run` with its stderr kept, for the refusal message.
fn start_capturing(cluster: &Cluster, store: &Path) -> (std::process::Child, PathBuf, PathBuf) {
    let tag = std::process::id() ^ rand_u32();
    let out = cluster.dir().join(format!("second-{tag}.jsonl"));
    let err = cluster.dir().join(format!("second-{tag}.err"));
    let mut all = cluster.client_flags();
    all.extend(
        [
            "-w",
            "json",
            "backup",
            "run",
            &store.display().to_string(),
            "--delta-every",
            "1s",
        ]
        .map(String::from),
    );
    let child = Command::new(etcdops_path())
        .args(&all)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    (child, out, err)
}

#[test]
fn a_second_backup_run_on_the_same_store_is_refused_while_the_first_runs() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("two-writers-store");
    let first = BackupRun::start(&cluster, &store, &[]);
    let full = first.wait_for("a full backup", |e| e["event"] == "full_saved");
    let base = full["object"].as_str().unwrap().to_string();
    let (mut second, _, err) = start_capturing(&cluster, &store);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = second.kill();
            let _ = second.wait();
            panic!("a second backup run was not refused while the first runs");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("pid {}", first.child.id())),
        "{stderr}"
    );
    assert!(
        stderr.contains("host ") && stderr.contains("until "),
        "{stderr}"
    );
    let changes = write_changes(&cluster, "two-a", 1);
    first.wait_published(changes[0]);
    first.stop();
    // Once the first exits, a second run starts and continues the same chain.
    let again = BackupRun::start(&cluster, &store, &[]);
    let resumed = again.wait_for("the chain resumed", |e| e["event"] == "resumed");
    assert_eq!(resumed["base"], base.as_str(), "{resumed}");
    let more = write_changes(&cluster, "two-b", 1);
    again.wait_published(more[0]);
    again.stop();
    let (object, covered) = newest_chain(&store);
    assert_eq!(object, base);
    assert!(covered >= more[0]);
}

#[test]
fn a_restart_with_the_full_backup_due_after_history_was_compacted_reports_the_gap() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("compacted-store");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let first = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let saved_at = Instant::now();
    let before = write_changes(&cluster, "cp-a", 1);
    backup.wait_published(before[0]);
    backup.stop();
    let (_, old_end) = newest_chain(&store);
    let served_at_old_end = keys_at(&cluster, Some(old_end));
    // Written while nothing runs, then compacted away.
    let down = write_changes(&cluster, "cp-down", 2);
    let compacted = revision_of(&cluster);
    crate::run(&cluster, &["compact", &compacted.to_string()]).expect_code(0);
    // Restarted with its full backup older than --full-every, too.
    while saved_at.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let backup = BackupRun::start(&cluster, &store, &["--full-every", "3s"]);
    let gap = backup.wait_for("a gap", |e| e["event"] == "gap");
    assert_eq!(gap["base"], first["object"], "{gap}");
    assert_eq!(gap["covered_revision"].as_i64().unwrap(), old_end, "{gap}");
    assert!(
        gap["reason"].as_str().unwrap().contains("compaction"),
        "{gap}"
    );
    let second = wait_new_full(&backup, &[first["object"].as_str().unwrap().to_string()]);
    assert!(
        second["revision"].as_i64().unwrap() >= compacted,
        "{second}"
    );
    let after = write_changes(&cluster, "cp-b", 1);
    backup.wait_published(after[0]);
    backup.stop();
    // Inside the reported gap: refused. Either side of it: exact.
    crate::backup_run::restore_refused(&store, &["--to-revision", &down[0].to_string()]);
    let (restored, result) = restore_point(&store, &["--to-revision", &old_end.to_string()]);
    assert_restored(&restored, &served_at_old_end, old_end, &result);
    assert_revision_restores(&cluster, &store, after[0]);
}

/// Whether the run said it abandoned a full backup on stop.
fn abandoned(events: &[Value]) -> bool {
    events.iter().any(|e| {
        e["event"] == "stopping" && e["reason"].as_str().unwrap_or("").contains("abandoned")
    })
}

#[test]
fn sigterm_during_the_first_full_backup_finishes_it_or_past_the_grace_abandons_it() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 96, 64 << 10);
    // Local: abandoned at once (a grace of 0 s): nothing left but the empty cluster folder.
    let store = cluster.dir().join("abandon-store");
    let mut backup = BackupRun::start(&cluster, &store, &["--stop-grace", "0s"]);
    wait_catches_sigterm(&backup);
    let status = terminate(&mut backup);
    assert!(status.success(), "exit {status}");
    let events = backup.events();
    assert!(
        !events.iter().any(|e| e["event"] == "full_saved"),
        "{events:#?}"
    );
    assert!(abandoned(&events), "{events:#?}");
    assert!(files_under(&store).is_empty(), "{:?}", files_under(&store));

    // S3 (moto), stopped while the upload is open: finished within the grace, no multipart
    // upload left. (Abandoning one on an object store is best effort: the store layer aborts
    // a dropped upload in the background.)
    let s3 = S3Server::start();
    s3.create_bucket("stop");
    let flags = [
        "--s3-endpoint",
        s3.endpoint.as_str(),
        "--allow-http",
        "--s3-path-style",
    ];
    {
        let grace = "60s";
        let mut extra = vec!["--stop-grace", grace];
        extra.extend(flags);
        let url = format!("s3://stop/grace-{grace}");
        let mut backup = BackupRun::start_at(&cluster, &url, &extra, &S3_ENV);
        // Stopped while the full backup's multipart upload is open.
        let deadline = Instant::now() + Duration::from_secs(30);
        while s3.multipart_uploads("stop").is_empty() {
            assert!(
                backup.child.try_wait().unwrap().is_none() && Instant::now() < deadline,
                "grace {grace}: no multipart upload was seen open: {:#?}",
                backup.events()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let status = terminate(&mut backup);
        assert!(status.success(), "grace {grace}: exit {status}");
        let events = backup.events();
        let saved = events.iter().any(|e| e["event"] == "full_saved");
        assert!(saved && !abandoned(&events), "grace {grace}: {events:#?}");
        let open = s3.multipart_uploads("stop");
        assert!(
            open.is_empty(),
            "grace {grace}: open multipart uploads {open:?}"
        );
    }
}
