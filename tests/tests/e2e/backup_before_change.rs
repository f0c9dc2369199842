//! A verified backup before a change (`--backup-to`, `backup_to`): the CLI's member changes
//! and defrag and the modules `etcd_member` and `etcd_maintenance` save a backup that
//! verifies, name it, take none when nothing changes, report in check mode the one they would
//! take, and change nothing when the backup fails or no quorum serves.

use std::path::Path;

use etcdops_tests::{Cluster, Collection, Security, etcdops};
use serde_json::json;

use crate::run;

const LOCAL: &str = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";
const SECRET: &str = "before-change-secret-never-shown";

/// The manifests in a local store (one per complete backup), any cluster folder.
fn manifests(store: &Path) -> Vec<String> {
    let Ok(clusters) = std::fs::read_dir(store) else {
        return Vec::new();
    };
    let mut out: Vec<String> = clusters
        .filter_map(Result::ok)
        .filter(|c| c.path().is_dir())
        .flat_map(|c| std::fs::read_dir(c.path()).unwrap().filter_map(Result::ok))
        .map(|f| f.path().display().to_string())
        .filter(|f| f.ends_with(".manifest.json"))
        .collect();
    out.sort();
    out
}

fn member_names(cluster: &Cluster) -> Vec<String> {
    let list = run(cluster, &["member", "list", "-w", "json"]);
    list.expect_code(0);
    list.json()["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["peer_urls"][0].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_cli_backs_up_before_member_changes_and_defrag_and_stops_when_the_backup_fails() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/before/k", 50);
    let store = cluster.dir().join("before-change");
    let store_arg = store.display().to_string();
    let (peer, _client) = cluster.new_member_urls();

    let add = run(
        &cluster,
        &[
            "member",
            "add",
            "b2",
            "--peer-urls",
            &peer,
            "--learner",
            "--backup-to",
            &store_arg,
        ],
    );
    add.expect_code(0);
    let saved = manifests(&store);
    assert_eq!(saved.len(), 1, "{add}");
    assert!(add.stderr.contains("backed up to"), "{add}");
    assert!(add.stderr.contains("and verified it"), "{add}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved[0]).unwrap()).unwrap();
    assert_eq!(manifest["labels"]["reason"], json!("before-change"));
    let object = saved[0].trim_end_matches(".manifest.json");
    let object = std::fs::read_dir(Path::new(object).parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().display().to_string())
        .find(|p| p.starts_with(object) && !p.ends_with(".manifest.json"))
        .unwrap();
    assert!(
        add.stderr.contains(&object),
        "the note names {object}:\n{add}"
    );
    // It verifies (etcdops' own verify of the named backup).
    let verified = etcdops(&etcdops_tests::args(&["snapshot", "verify", &object]), &[]);
    verified.expect_code(0);

    // Nothing to change: no backup.
    let again = run(
        &cluster,
        &[
            "member",
            "add",
            "b2",
            "--peer-urls",
            &peer,
            "--learner",
            "--backup-to",
            &store_arg,
        ],
    );
    again.expect_code(0);
    assert_eq!(manifests(&store).len(), 1, "{again}");

    // A store that cannot be reached: the removal does not happen, no secret is shown.
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIABEFORECHANGE"),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
    ];
    let mut args = cluster.client_flags();
    args.extend(etcdops_tests::args(&[
        "member",
        "remove",
        &peer,
        "--backup-to",
        "s3://etcd-backups/prod",
        "--s3-endpoint",
        "http://127.0.0.1:1",
        "--allow-http",
        "--s3-path-style",
    ]));
    let failed = etcdops(&args, &env);
    assert_ne!(failed.code, 0, "{failed}");
    assert!(!failed.stderr.contains(SECRET) && !failed.stdout.contains(SECRET));
    assert!(
        member_names(&cluster).contains(&peer),
        "the member was removed:\n{failed}"
    );

    // The removal with a backup that works.
    let removed = run(
        &cluster,
        &["member", "remove", &peer, "--backup-to", &store_arg],
    );
    removed.expect_code(0);
    assert_eq!(manifests(&store).len(), 2, "{removed}");
    assert!(!member_names(&cluster).contains(&peer));

    // Defragmentation too.
    let defrag = run(&cluster, &["defrag", "--backup-to", &store_arg]);
    defrag.expect_code(0);
    assert_eq!(manifests(&store).len(), 3, "{defrag}");
}

#[test]
fn without_a_quorum_the_backup_is_refused_and_nothing_changes() {
    let mut cluster = Cluster::start(3, Security::Plain);
    let store = cluster.dir().join("no-quorum");
    let store_arg = store.display().to_string();
    cluster.kill_member(1);
    cluster.kill_member(2);
    let mut args = vec![
        "--endpoints".to_string(),
        cluster.members[0].client_url.clone(),
    ];
    args.extend(etcdops_tests::args(&[
        "--command-timeout",
        "2s",
        "defrag",
        "--backup-to",
        &store_arg,
    ]));
    let refused = etcdops(&args, &[]);
    assert_ne!(refused.code, 0, "{refused}");
    assert!(refused.stderr.contains("no quorum serves"), "{refused}");
    assert!(
        refused.stderr.contains("leave out the backup destination"),
        "{refused}"
    );
    assert!(manifests(&store).is_empty());
}

#[test]
fn the_modules_back_up_before_a_change_report_it_in_check_mode_and_stop_on_a_failed_backup() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/before/m", 50);
    let collection = Collection::install();
    let store = cluster.dir().join("module-before");
    let (peer, _client) = cluster.new_member_urls();
    let add = json!({"name": "bm2", "peer_urls": [peer], "learner": true, "backup_to": store});
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": cluster.client_urls()}},
        "tasks": [
            {"etcd.core.etcd_member": add, "register": "checked", "check_mode": true},
            {"etcd.core.etcd_member": add, "register": "added"},
            {"etcd.core.etcd_member": add, "register": "again"},
            {"etcd.core.etcd_maintenance": {"action": "compact", "keep_revisions": 5, "backup_to": store},
             "register": "compacted"},
            {"etcd.core.etcd_member": {
                "member": peer, "state": "absent", "backup_to": "s3://etcd-backups/prod",
                "s3_endpoint": "http://127.0.0.1:1", "allow_http": true, "s3_path_style": true},
             "register": "unreachable", "ignore_errors": true,
             "environment": {"AWS_ACCESS_KEY_ID": "AKIABEFORECHANGE", "AWS_SECRET_ACCESS_KEY": SECRET}},
            {"etcd.core.etcd_maintenance": {"action": "move_leader", "leader": "m0", "backup_to": store},
             "register": "pointless", "ignore_errors": true},
            {"ansible.builtin.assert": {"that": [
                "checked is changed and not checked.backup.taken and checked.backup.endpoint | length > 0",
                "added is changed and added.backup.taken and added.backup.verified",
                "added.backup.object_url is search(added.backup.object)",
                "added.backup.revision > 0",
                "again is not changed and again.backup is not defined",
                "compacted is changed and compacted.backup.verified",
                "unreachable is failed",
                "pointless is failed and 'only action defrag and compact' in pointless.msg",
            ]}},
        ],
    }])
    .to_string();
    let run_play = collection.playbook(&playbook, LOCAL, &json!({}), &[], &["-v"]);
    assert_eq!(run_play.code, 0, "{run_play}");
    assert!(
        !run_play.stdout.contains(SECRET) && !run_play.stderr.contains(SECRET),
        "{run_play}"
    );
    // The add's and the compaction's: none from check mode, the rerun or the failed removal.
    assert_eq!(manifests(&store).len(), 2, "{run_play}");
    // The failed backup stopped the removal.
    assert!(member_names(&cluster).contains(&peer), "{run_play}");
}
