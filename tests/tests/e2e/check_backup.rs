//! Issue #23 part 3, backups: `check --store` judges the newest complete backup of this
//! cluster (another cluster's never counts; a `backup run` chain counts to its last published
//! segment) by age and by verifying it (damaged: critical; encrypted without its identity:
//! a warning); and `etcd_cluster_info` fails on it, on latency, and refuses bad input, through
//! ansible-playbook.

use std::path::{Path, PathBuf};
use std::process::Command;

use etcdops_tests::{Cluster, Collection, Security, etcdops};
use serde_json::{Value, json};

use crate::backup_run::{BackupRun, write_changes};
use crate::check_findings::findings;
use crate::run;

/// Moves a backup's manifest time `hours` into the past (the object stays as saved, so it
/// still verifies): a backup taken that long ago.
fn age_backup(object: &Path, hours: i64) {
    let manifest = PathBuf::from(format!("{}.manifest.json", object.display()));
    let mut value: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let back = |field: &str, value: &mut Value| {
        let at = value[field].as_str().unwrap().to_string();
        let moved = Command::new("date")
            .args([
                "-u",
                "-d",
                &format!("{at} - {hours} hours"),
                "+%Y-%m-%dT%H:%M:%S.%3NZ",
            ])
            .output()
            .unwrap();
        assert!(moved.status.success());
        value[field] = json!(String::from_utf8(moved.stdout).unwrap().trim());
    };
    back("created_at", &mut value);
    back("completed_at", &mut value);
    std::fs::write(&manifest, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
}

pub(crate) fn backup_finding(
    cluster: &Cluster,
    store: &Path,
    max_age: &str,
) -> (i32, String, String, Value) {
    let store = store.display().to_string();
    let run = crate::run(
        cluster,
        &[
            "check",
            "-w",
            "json",
            "--skip-metrics",
            "--store",
            &store,
            "--max-backup-age",
            max_age,
        ],
    );
    let report = run.json();
    let (severity, message) = findings(&report)["backup"].clone();
    (run.code, severity, message, report["backup"].clone())
}

#[test]
fn check_judges_the_newest_backup_of_this_cluster_only() {
    let cluster = Cluster::start(1, Security::Plain);
    let other = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 5);
    let store = cluster.dir().join("store");
    std::fs::create_dir_all(&store).unwrap();

    // Only another cluster's backup: none of this one.
    crate::save_snapshot(&other, &store, "zstd");
    let (code, severity, message, _) = backup_finding(&cluster, &store, "1h");
    assert_eq!((code, severity.as_str()), (2, "critical"), "{message}");
    assert!(
        message.contains("no complete backup of cluster"),
        "{message}"
    );

    // A fresh one: ok, verified, this cluster's object.
    let object = crate::save_snapshot(&cluster, &store, "zstd");
    let (code, severity, message, backup) = backup_finding(&cluster, &store, "1h");
    assert_eq!((code, severity.as_str()), (0, "ok"), "{message}");
    assert_eq!(backup["verified"], true, "{backup}");
    let name = object.file_name().unwrap().to_str().unwrap();
    assert!(
        backup["object"].as_str().unwrap().ends_with(name),
        "{backup}"
    );
    let url = cluster.members[0].client_url.clone();
    let (_, status) = crate::etcdctl_json(
        &cluster,
        &["endpoint", "status", "--endpoints", &url, "-w", "json"],
    );
    assert_eq!(
        backup["revision"], status[0]["Status"]["header"]["revision"],
        "{backup} vs etcdctl {status}"
    );

    // The disk finding from a data dir given by hand, against the file system's own count
    // (`stat -f`: available blocks times their size) and the db file's size.
    let data_dir = cluster.members[0].data_dir.display().to_string();
    let disk = crate::run(
        &cluster,
        &[
            "check",
            "-w",
            "json",
            "--skip-metrics",
            "--data-dir",
            &data_dir,
        ],
    );
    let disk = disk.json()["disk"].clone();
    let stat = Command::new("stat")
        .args(["-f", "-c", "%a %S", &data_dir])
        .output()
        .unwrap();
    let stat = String::from_utf8(stat.stdout).unwrap();
    let mut parts = stat.split_whitespace().map(|p| p.parse::<u64>().unwrap());
    let free = parts.next().unwrap() * parts.next().unwrap();
    let ours = disk["free_bytes"].as_u64().unwrap();
    assert!(ours.abs_diff(free) < 256 << 20, "{ours} vs stat's {free}");
    let db = std::fs::metadata(cluster.members[0].data_dir.join("member/snap/db")).unwrap();
    assert_eq!(disk["db_bytes"].as_u64().unwrap(), db.len(), "{disk}");

    // Three hours old: a warning against 2h, critical against 1h; the other cluster's
    // fresh backup does not make it fresh.
    age_backup(&object, 3);
    crate::save_snapshot(&other, &store, "zstd");
    let (code, severity, message, backup) = backup_finding(&cluster, &store, "2h");
    assert_eq!((code, severity.as_str()), (1, "warning"), "{message}");
    assert!(message.contains("older than the 2h allowed"), "{message}");
    assert!(
        backup["age_seconds"].as_i64().unwrap() >= 3 * 3600,
        "{backup}"
    );
    let (code, severity, message, _) = backup_finding(&cluster, &store, "1h");
    assert_eq!((code, severity.as_str()), (2, "critical"), "{message}");
    assert!(message.contains("more than twice"), "{message}");

    // A damaged object of the same size: it does not verify, however fresh.
    let fresh = crate::save_snapshot(&cluster, &store, "none");
    let mut bytes = std::fs::read(&fresh).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&fresh, bytes).unwrap();
    let (code, severity, message, backup) = backup_finding(&cluster, &store, "1h");
    assert_eq!((code, severity.as_str()), (2, "critical"), "{message}");
    assert!(message.contains("does NOT verify"), "{message}");
    assert_eq!(backup["verified"], false, "{backup}");
}

#[test]
fn an_encrypted_backup_verifies_with_its_identity_and_is_a_warning_without() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/enc/", 5);
    let key_file = cluster.dir().join("backup-key.txt");
    let key_arg = key_file.display().to_string();
    let made = etcdops(
        &etcdops_tests::args(&["snapshot", "keygen", "-o", &key_arg, "-w", "json"]),
        &[],
    );
    made.expect_code(0);
    let recipient = made.json()["recipient"].as_str().unwrap().to_string();
    let store = cluster.dir().join("store").display().to_string();
    run(
        &cluster,
        &["snapshot", "save", &store, "--encrypt-to", &recipient],
    )
    .expect_code(0);
    let check = |extra: &[&str]| {
        let mut args = vec!["check", "-w", "json", "--skip-metrics", "--store", &store];
        args.extend(extra);
        let run = run(&cluster, &args);
        let report = run.json();
        (
            run.code,
            findings(&report)["backup"].clone(),
            report["backup"].clone(),
        )
    };
    // Without the identity it cannot be checked: neither verified nor damaged.
    let (code, (severity, message), backup) = check(&[]);
    assert_eq!((code, severity.as_str()), (1, "warning"), "{message}");
    assert!(message.contains("could not be verified"), "{message}");
    assert!(backup["verified"].is_null(), "{backup}");
    // With it, it verifies.
    let (code, (severity, message), backup) = check(&["--identity", &key_arg]);
    assert_eq!((code, severity.as_str()), (0, "ok"), "{message}");
    assert_eq!(backup["verified"], true, "{backup}");
    let secret = std::fs::read_to_string(&key_file).unwrap();
    let secret = secret
        .lines()
        .find(|l| l.starts_with("AGE-SECRET"))
        .unwrap();
    assert!(!message.contains(secret) && !message.contains("AGE-SECRET"));
}

#[test]
fn check_counts_the_last_segment_a_backup_run_published() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 5);
    let store = cluster.dir().join("run-store");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full_revision = full["revision"].as_i64().unwrap();
    let last = *write_changes(&cluster, "chain", 3).last().unwrap();
    backup.wait_published(last);
    backup.stop();
    assert!(last > full_revision);
    let (code, severity, message, found) = backup_finding(&cluster, &store, "1h");
    assert_eq!((code, severity.as_str()), (0, "ok"), "{message}");
    assert_eq!(
        found["revision"], last,
        "the chain's last revision: {found}"
    );
    assert_eq!(
        found["verified"], true,
        "the full backup and its chain: {found}"
    );
    assert!(message.contains(&format!("(revision {last})")), "{message}");
}

#[test]
fn cluster_info_fails_on_a_stale_backup_and_passes_the_same_options_through() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let object = crate::save_snapshot(&cluster, &store, "zstd");
    age_backup(&object, 5);
    let base = json!({"endpoints": cluster.client_urls(), "store": store.display().to_string()});
    let with = |extra: Value| {
        let mut args = base.clone();
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let tasks = json!([
        {"etcd.core.etcd_cluster_info": with(json!({
            "max_backup_age": "1h", "fail_on": ["backup", "certificates", "latency"]})),
         "register": "stale", "ignore_errors": true},
        {"etcd.core.etcd_cluster_info": with(json!({
            "max_backup_age": "1d", "fail_on": ["backup", "certificates"],
            "data_dir": cluster.members[0].data_dir.display().to_string()})),
         "register": "fresh"},
        {"etcd.core.etcd_cluster_info": with(json!({"max_backup_age": "soon"})),
         "register": "bad_age", "ignore_errors": true},
        // The latency threshold reaches the check: 0 ms over 1 sample fails fail_on latency.
        {"etcd.core.etcd_cluster_info": {"endpoints": cluster.client_urls(),
            "fsync_p99_warn_ms": 0, "latency_min_samples": 1, "fail_on": ["latency"]},
         "register": "slow", "ignore_errors": true},
        {"ansible.builtin.assert": {"that": [
            "bad_age is failed",
            "slow is failed",
            "'latency: ' in slow.msg and 'WAL fsync p99 is' in slow.msg",
            "slow.metrics[0].wal_fsync.count >= 1",
            "'max_backup_age' in bad_age.msg",
            "stale is failed",
            "'backup: the newest backup of the cluster' in stale.msg",
            "'more than twice' in stale.msg",
            "stale.backup.verified",
            "stale.backup.age_seconds >= 5 * 3600",
            "fresh is not failed and fresh is not changed",
            "(fresh.findings | selectattr('check', 'equalto', 'backup') | first).severity == 'ok'",
            "(fresh.findings | selectattr('check', 'equalto', 'certificates') | first).severity == 'ok'",
            "fresh.metrics[0].leader_changes >= 1",
            "fresh.disk.db_bytes > 0",
            "fresh.disk.free_bytes > 0",
        ]}},
    ]);
    let play = json!([{"hosts": "target", "gather_facts": false, "tasks": tasks}]).to_string();
    let collection = Collection::install();
    let played = collection.playbook(
        &play,
        "target ansible_connection=local\n",
        &json!({}),
        &[],
        &[],
    );
    assert_eq!(played.code, 0, "{played}");
    assert!(played.stdout.contains("failed=0"), "{played}");
    assert!(played.stdout.contains("ignored=3"), "{played}");
}
