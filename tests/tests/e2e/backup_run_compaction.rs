//! `backup run --compact-after`: a run killed while it compacts and
//! restarted, and a run whose own retention prunes while its compactions run.

use std::path::Path;

use etcdops_tests::{Cluster, Security, etcdops};
use serde_json::Value;

use crate::backup_run::{BackupRun, keys_at, write_changes};
use crate::snapshot_compact_chains::{complete_backups, store_arg};

/// The compaction work dirs left in `work`.
fn work_dirs(work: &Path) -> Vec<String> {
    std::fs::read_dir(work)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".etcdops-compact-"))
        .collect()
}

#[test]
fn sigkill_of_a_run_while_it_compacts_then_a_restart_continues_the_chain_and_compacts_it() {
    let cluster = Cluster::start(1, Security::Plain);
    // A few MiB, so the compaction lasts long enough to be caught running.
    cluster.put_random("/big/", 3000, 1024);
    let store = cluster.dir().join("compact-killed-run");
    let work = cluster.dir().join("compact-killed-work");
    std::fs::create_dir_all(&work).unwrap();
    let work_arg = work.display().to_string();
    let flags = ["--compact-after", "1", "--compact-work-dir", &work_arg];
    let backup = BackupRun::start(&cluster, &store, &flags);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    cluster.put_random("/big/", 2000, 1024);
    let first = *write_changes(&cluster, "kr", 1).last().unwrap();
    // Killed as soon as a compaction is seen working (its work dir exists).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while work_dirs(&work).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no compaction started"
        );
        std::thread::yield_now();
    }
    backup.kill();
    let compacted_before: Vec<Value> = complete_backups(&store)
        .into_iter()
        .filter(|b| b["manifest"]["compacted_from"].is_object())
        .collect();
    // Whatever lists as complete verifies whole (nothing half-written looks complete).
    for b in complete_backups(&store) {
        let url = format!("{}/{}", store_arg(&store), b["object"].as_str().unwrap());
        etcdops(&["snapshot".into(), "verify".into(), url], &[]).expect_code(0);
    }

    // The restart continues the chain (not a copy), and compacts it again when due.
    let backup = BackupRun::start(&cluster, &store, &flags);
    let more = *write_changes(&cluster, "kr2", 1).last().unwrap();
    backup.wait_published(more);
    let compacted = backup.wait_for("a compaction", |e| e["event"] == "compacted");
    let events = backup.stop();
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "full_saved" || e["event"] == "gap" || e["event"] == "failed"),
        "{events:#?}"
    );
    assert_eq!(compacted["source"], full.as_str(), "{compacted}");
    let backups = complete_backups(&store);
    let chain = &backups
        .iter()
        .find(|b| b["object"] == full.as_str())
        .unwrap()["chain"];
    assert!(chain["to_revision"].as_i64().unwrap() >= more, "{chain}");
    assert!(first < more);
    let leftovers = work_dirs(&work);
    eprintln!(
        "compacted before the kill: {}; work dirs left after the restart: {leftovers:?}",
        compacted_before.len()
    );
    let object = compacted["object"].as_str().unwrap();
    let to = compacted["to_revision"].as_i64().unwrap();
    let url = format!("{}/{object}", store_arg(&store));
    let mut restored = Cluster::plan_restore(1, "k");
    crate::snapshot_restore::restore_from(&url, &restored, 0, &[], &[]).expect_code(0);
    restored.start_restored();
    let served = keys_at(&restored, None);
    assert_eq!(served.len(), keys_at(&cluster, Some(to)).len());
    // A kill leaves its work dir behind (SIGKILL runs no cleanup); the next compaction in
    // the same dir must not leave one of its own.
    assert!(leftovers.len() <= 1, "{leftovers:?}");
}

/// A run compacting after every segment, a full backup every 3s, `--keep-last 1` and the
/// orphan grace `grace`, until 4 full backups, 2 prunes and 2 compaction outcomes; returns the cluster, the store,
/// its events and the last revision written.
fn churn(grace: &str) -> (Cluster, std::path::PathBuf, Vec<Value>, i64) {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 3000, 1024);
    let store = cluster.dir().join("compact-churn");
    let backup = BackupRun::start(
        &cluster,
        &store,
        &[
            "--full-every",
            "3s",
            "--compact-after",
            "1",
            "--keep-last",
            "1",
            "--orphan-grace",
            grace,
        ],
    );
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let mut last = 0;
    for round in 0..200 {
        last = *write_changes(&cluster, &format!("c{round}"), 1)
            .last()
            .unwrap();
        backup.wait_published(last);
        let events = backup.events();
        let fulls = events.iter().filter(|e| e["event"] == "full_saved").count();
        let pruned = events.iter().filter(|e| e["event"] == "pruned").count();
        // A compaction's outcome is reported at the first publication after it ends, and a
        // stop abandons one in progress: go on until two outcomes are in.
        let outcomes = events
            .iter()
            .filter(|e| e["event"] == "compacted" || e["event"] == "failed")
            .count();
        if fulls >= 4 && pruned >= 2 && outcomes >= 2 {
            break;
        }
    }
    let events = backup.stop();
    let count = |what: &str| events.iter().filter(|e| e["event"] == what).count();
    eprintln!(
        "{} full backups, {} compactions, {} prunes, {} failures",
        count("full_saved"),
        count("compacted"),
        count("pruned"),
        count("failed")
    );
    (cluster, store, events, last)
}

/// With `--keep-last 1` and a 0s orphan grace, the run's own prune keeps the chain a compaction
/// reads (named in the run's lock) and the copy it uploads (younger than the compaction):
/// every compaction succeeds.
#[test]
fn a_run_compacting_every_segment_with_no_orphan_grace_prunes_neither_the_chain_nor_the_copy() {
    let (cluster, store, events, last) = churn("0s");
    let failed: Vec<&Value> = events.iter().filter(|e| e["event"] == "failed").collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let compacted = events.iter().filter(|e| e["event"] == "compacted").count();
    assert!(compacted >= 2, "{events:#?}");
    for b in complete_backups(&store) {
        let url = format!("{}/{}", store_arg(&store), b["object"].as_str().unwrap());
        etcdops(&["snapshot".into(), "verify".into(), url], &[]).expect_code(0);
    }
    let rev = last.to_string();
    let (restored, result) = crate::backup_run::restore_point(&store, &["--to-revision", &rev]);
    crate::backup_run::assert_restored(&restored, &keys_at(&cluster, Some(last)), last, &result);
}
