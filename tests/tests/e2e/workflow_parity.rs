//! The CLI and the Ansible shim run the same workflows from the workflow layer (`etcdops`
//! crate), so they agree by construction. Here: verifying a `backup run` backup whose chain
//! of delta segments is broken fails in both, naming the same problem, while the intact
//! copy of the same store passes in both.

use std::path::Path;
use std::process::Command;

use etcdops_tests::{Cluster, Collection, Security, etcdops};
use serde_json::json;

use crate::backup_run::{BackupRun, newest_chain};

const LOCAL: &str = "target ansible_connection=local\n";

/// The largest delta segment object of `store` (not its manifest): one holding changes.
fn a_segment(store: &Path) -> std::path::PathBuf {
    let mut found = Vec::new();
    let mut dirs = vec![store.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().ends_with(".delta.zst") {
                found.push(path);
            }
        }
    }
    found
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .expect("no delta segment in the store")
}

/// `etcdops -w json snapshot verify URL`.
fn cli_verify(url: &str) -> etcdops_tests::Run {
    let args = ["-w", "json", "snapshot", "verify", url];
    etcdops(&args.map(String::from), &[])
}

#[test]
fn a_broken_chain_fails_verify_in_the_cli_and_the_shim_alike() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("backups");
    std::fs::create_dir_all(&store).unwrap();
    cluster.put_keys("/parity/before", 5);
    let run = BackupRun::start(&cluster, &store, &[]);
    run.wait_for("the full backup", |e| e["event"] == "full_saved");
    cluster.put_keys("/parity/after", 20);
    run.wait_for("a segment with changes", |e| {
        e["event"] == "segment_published" && e["changes"].as_u64().unwrap() > 0
    });
    run.stop();
    let (full, _) = newest_chain(&store);

    // An intact copy of the store, then one byte of a segment changed (same size).
    let intact = cluster.dir().join("intact");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(&store)
        .arg(&intact)
        .status()
        .unwrap();
    assert!(copied.success());
    let segment = a_segment(&store);
    let mut bytes = std::fs::read(&segment).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&segment, &bytes).unwrap();
    let broken_url = format!("{}/{full}", store.display());
    let intact_url = format!("{}/{full}", intact.display());

    // The CLI: the intact backup passes with its chain; the broken one exits 1 naming it.
    let ok = cli_verify(&intact_url);
    ok.expect_code(0);
    assert_eq!(ok.json()["chain"]["ok"], true, "{ok}");
    let failed = cli_verify(&broken_url);
    failed.expect_code(1);
    let problem = failed
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("etcdops: verify failed: "))
        .unwrap_or_else(|| panic!("no verify failure line:\n{failed}"))
        .to_string();
    assert!(problem.starts_with("the chain of "), "{failed}");
    assert!(problem.contains("failed verification"), "{failed}");

    // The shim: the same backups, the same verdicts, the same problem in its message.
    let collection = Collection::install();
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [
            {"etcd.core.etcd_snapshot_info": {"snapshot": intact_url, "verify": true},
             "register": "intact"},
            {"etcd.core.etcd_snapshot_info": {"snapshot": broken_url, "verify": true},
             "register": "broken", "ignore_errors": true},
            {"ansible.builtin.assert": {"that": [
                "not intact.failed",
                "intact.chain.ok",
                "intact.chain.segments | length > 0",
                "broken.failed",
                "'verify failed: ' ~ cli_problem in broken.msg",
                "not broken.chain.ok",
            ]}},
        ],
    }]);
    let played = collection.playbook(
        &playbook.to_string(),
        LOCAL,
        &json!({"cli_problem": problem}),
        &[],
        &[],
    );
    assert_eq!(played.code, 0, "{played}");
    assert!(played.stdout.contains("failed=0"), "{played}");
    assert!(played.stdout.contains("ignored=1"), "{played}");
}

#[test]
fn check_mode_previews_the_backups_the_saves_retention_then_deletes() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("backups");
    std::fs::create_dir_all(&store).unwrap();
    let store_arg = store.display().to_string();
    for _ in 0..2 {
        let saved = crate::run(&cluster, &["snapshot", "save", &store_arg, "-q"]);
        saved.expect_code(0);
    }
    // keep_last 2 and two backups: a save keeps its new one and the newer old one.
    let collection = Collection::install();
    let save = json!({"endpoints": cluster.client_urls(), "dest": store_arg, "keep_last": 2});
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [
            {"etcd.core.etcd_snapshot": save, "check_mode": true, "register": "preview"},
            {"etcd.core.etcd_snapshot": save, "register": "real"},
            {"ansible.builtin.assert": {"that": [
                "preview.changed",
                "preview.pruned | length == 1",
                "real.pruned | length == 1",
                "(preview.pruned | map(attribute='object') | list) == (real.pruned | map(attribute='object') | list)",
            ]}},
        ],
    }]);
    let played = collection.playbook(&playbook.to_string(), LOCAL, &json!({}), &[], &[]);
    assert_eq!(played.code, 0, "{played}");
    assert!(played.stdout.contains("failed=0"), "{played}");
}

#[test]
fn a_learner_that_has_not_started_is_removed_by_name_and_peer_url_as_present_found_it() {
    let cluster = Cluster::start(1, Security::Plain);
    let (peer, _) = cluster.new_member_urls();
    let collection = Collection::install();
    let member = |state: &str| {
        json!({"endpoints": cluster.client_urls(), "name": "m4", "peer_urls": [peer],
               "learner": true, "state": state})
    };
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [
            {"etcd.core.etcd_member": member("present"), "register": "added"},
            {"etcd.core.etcd_member": member("present"), "register": "again"},
            {"etcd.core.etcd_member": member("absent"), "register": "removed"},
            {"etcd.core.etcd_member": member("absent"), "register": "gone"},
            {"ansible.builtin.assert": {"that": [
                "added.changed",
                "not again.changed",
                "removed.changed",
                "not gone.changed",
            ]}},
        ],
    }]);
    let played = collection.playbook(&playbook.to_string(), LOCAL, &json!({}), &[], &[]);
    assert_eq!(played.code, 0, "{played}");
    assert!(played.stdout.contains("failed=0"), "{played}");
    let list = crate::run(&cluster, &["member", "list", "-w", "json"]);
    list.expect_code(0);
    assert!(!list.stdout.contains(&peer), "the learner is gone: {list}");
}
