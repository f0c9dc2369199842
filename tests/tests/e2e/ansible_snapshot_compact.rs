//! Issue 37, item 5: `etcd.core.etcd_snapshot_compact` through a real ansible-playbook, on a
//! chain `backup run` wrote. Check mode says which chain, how many segments and up to which
//! revision, and writes nothing; a chain another compaction holds fails the task having
//! written nothing; the real run writes one verified full backup at the chain's last
//! revision, which restores what the source served then; a rerun and check mode after it
//! report no change, with the same manifest.

use std::path::{Path, PathBuf};
use std::process::Command;

use etcdops_tests::{Cluster, Collection, Security, args, etcdops};
use serde_json::{Value, json};

use crate::backup_run::{BackupRun, assert_restored, keys_at, write_changes};
use crate::snapshot_restore::restore_from;

/// Every file under `dir` (relative path, size, modification time), sorted.
fn listing(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().to_path_buf();
                out.push((relative, meta.len(), meta.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// UTC time `offset` from now, as `date` gives it (`+10 minutes`), RFC 3339.
fn utc(offset: &str) -> String {
    let out = Command::new("date")
        .args(["-u", "-d", offset, "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Runs `tasks` on localhost, each result registered under its name, and returns them
/// (`{name: result}`, written by the play's last task).
fn play(collection: &Collection, tasks: &[(&str, Value)], dir: &Path) -> Value {
    let results = dir.join("results.json");
    let mut all: Vec<Value> = tasks
        .iter()
        .map(|(name, task)| {
            let mut task = task.clone();
            task["register"] = json!(name);
            task
        })
        .collect();
    let names: Vec<String> = tasks
        .iter()
        .map(|(name, _)| format!("'{name}': {name}"))
        .collect();
    all.push(json!({"ansible.builtin.copy": {
        "content": format!("{{{{ {{{}}} | to_json }}}}", names.join(", ")),
        "dest": results,
    }}));
    let playbook = json!([{"hosts": "target", "gather_facts": false, "tasks": all}]).to_string();
    let played = collection.playbook(
        &playbook,
        "target ansible_connection=local\n",
        &json!({}),
        &[],
        &[],
    );
    assert_eq!(played.code, 0, "{played}");
    serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap()
}

#[test]
fn compact_module_previews_refuses_a_held_chain_compacts_once_and_then_changes_nothing() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("module-compact");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    let revisions = write_changes(&cluster, "mod", 3);
    let last = *revisions.last().unwrap();
    backup.wait_published(last);
    backup.stop();
    let expected = keys_at(&cluster, Some(last));
    let before = listing(&store);

    let work = tempfile::tempdir().unwrap();
    let compact = json!({"etcd.core.etcd_snapshot_compact": {
        "store": store, "work_dir": work.path(),
    }});
    let mut check = compact.clone();
    check["check_mode"] = json!(true);
    let collection = Collection::install();

    // Check mode: the chain, its segments and its last revision; nothing written.
    let first = play(&collection, &[("predicted", check.clone())], work.path());
    let predicted = &first["predicted"];
    assert_eq!(predicted["changed"], true, "{predicted:#}");
    assert_eq!(predicted["source"], full.as_str(), "{predicted:#}");
    assert_eq!(predicted["to_revision"], last, "{predicted:#}");
    assert!(
        predicted["segments"].as_u64().unwrap() >= 1,
        "{predicted:#}"
    );
    assert!(predicted.get("compacted").is_none(), "{predicted:#}");
    assert_eq!(listing(&store), before, "check mode wrote to the store");
    // The CLI's --dry-run is the same preview.
    let dry = etcdops(
        &args(&[
            "snapshot",
            "compact",
            &store.display().to_string(),
            "--dry-run",
            "-w",
            "json",
        ]),
        &[],
    );
    dry.expect_code(0);
    let dry = dry.json();
    for field in ["changed", "source", "segments", "to_revision", "to_time"] {
        assert_eq!(dry[field], predicted[field], "{field}: {dry:#}");
    }
    assert_eq!(listing(&store), before, "--dry-run wrote to the store");

    // A chain another compaction holds: the task fails, nothing is written; then the lock
    // is gone, the chain compacted, compacted again, and previewed again.
    let lock = store.join(
        full.trim_end_matches(".db.zst")
            .trim_end_matches(".db")
            .to_string()
            + ".deltas/compact.lock.json",
    );
    let held = json!({
        "format_version": 1, "holder": "elsewhere", "host": "another-host.invalid",
        "pid": 1, "full_backup": full,
        "renewed_at": utc("now"), "expires_at": utc("+10 minutes"),
    });
    std::fs::write(&lock, held.to_string()).unwrap();
    let mut busy = compact.clone();
    busy["ignore_errors"] = json!(true);
    let results = play(
        &collection,
        &[
            ("busy", busy),
            (
                "unlocked",
                json!({"ansible.builtin.file": {"path": lock, "state": "absent"}}),
            ),
            ("compacted", compact.clone()),
            ("again", compact.clone()),
            ("previewed", check),
        ],
        work.path(),
    );
    let busy = &results["busy"];
    assert_eq!(busy["failed"], true, "{busy:#}");
    assert!(
        busy["msg"]
            .as_str()
            .is_some_and(|m| m.contains("another compaction") && m.contains("another-host")),
        "{busy:#}"
    );
    assert_eq!(busy["changed"], false, "{busy:#}");

    let compacted = &results["compacted"];
    assert_eq!(compacted["changed"], true, "{compacted:#}");
    assert_eq!(compacted["source"], full.as_str(), "{compacted:#}");
    assert_eq!(
        compacted["segments"], predicted["segments"],
        "{compacted:#}"
    );
    assert!(
        compacted["changes_applied"].as_u64().unwrap() > 0,
        "{compacted:#}"
    );
    assert!(
        compacted["verify"]["db_sha256"].is_string(),
        "{compacted:#}"
    );
    assert!(compacted["duration_seconds"].is_number(), "{compacted:#}");
    let manifest = &compacted["manifest"];
    assert_eq!(manifest["revision"], last, "{compacted:#}");
    assert_eq!(manifest["compacted_from"]["full_backup"], full.as_str());
    let object = manifest["object"].as_str().unwrap().to_string();

    let again = &results["again"];
    assert_eq!(again["changed"], false, "{again:#}");
    assert_eq!(again["manifest"], *manifest, "{again:#}");
    assert!(again.get("verify").is_none(), "{again:#}");
    let previewed = &results["previewed"];
    assert_eq!(previewed["changed"], false, "{previewed:#}");
    assert_eq!(previewed["compacted"], object.as_str(), "{previewed:#}");

    // The store: what it held (the busy task wrote nothing, no lock left), the compacted
    // backup and its manifest.
    let after = listing(&store);
    let added: Vec<String> = after
        .iter()
        .filter(|f| !before.contains(f))
        .map(|f| f.0.display().to_string())
        .collect();
    let mut want = vec![
        object.clone(),
        compacted["manifest_name"].as_str().unwrap().to_string(),
    ];
    want.sort();
    assert_eq!(added, want, "{after:#?}");
    assert!(
        before.iter().all(|f| after.contains(f)),
        "the chain changed"
    );

    // Restored: what the source served at the chain's last revision.
    let url = format!("{}/{object}", store.display());
    let mut restored = Cluster::plan_restore(1, "c");
    restore_from(&url, &restored, 0, &[], &[]).expect_code(0);
    restored.start_restored();
    let detached = json!({"point_in_time": {"leases_detached": compacted["leases_detached"]}});
    assert_restored(&restored, &expected, last, &detached);
}
