//! Issue 37, item 2: the drills through a real ansible-playbook. `etcd.core.etcd_snapshot_info`
//! with `against_cluster` and `restore_drill` on a chain `backup run` wrote: both pass, in check
//! mode too (read-only but for the scratch dir, which is gone afterwards); a backup of another
//! cluster fails the task naming the member; an etcd that cannot serve fails the task saying
//! why. The `etcd.core.backup` role's `backup_drill` drills the backup it just took, fails the
//! role when the drill fails, and drills nothing in check mode (no backup taken).

use std::path::{Path, PathBuf};

use etcdops_tests::{Cluster, Collection, EtcdVersion, Security};
use serde_json::{Value, json};

use crate::backup_run::{BackupRun, write_changes};

/// Runs `tasks` on localhost (`TMPDIR=tmp`), each result registered under its name (failures
/// ignored, so that every task runs), and returns them.
fn play(collection: &Collection, endpoints: &str, tasks: &[(&str, Value)], dir: &Path) -> Value {
    let results = dir.join("results.json");
    let mut all: Vec<Value> = tasks
        .iter()
        .map(|(name, task)| {
            let mut task = task.clone();
            task["register"] = json!(name);
            task["ignore_errors"] = json!(true);
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
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": [endpoints]}},
        "tasks": all,
    }])
    .to_string();
    let tmp = tmp_of(dir).display().to_string();
    let played = collection.playbook(
        &playbook,
        "target ansible_connection=local\n",
        &json!({}),
        &[("TMPDIR", tmp.as_str())],
        &[],
    );
    assert_eq!(played.code, 0, "{played}");
    serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap()
}

/// The TMPDIR of the plays in `dir`.
fn tmp_of(dir: &Path) -> PathBuf {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    tmp
}

/// No drill scratch dir left in `dir`'s TMPDIR.
fn assert_no_scratch(dir: &Path) {
    let left: Vec<String> = std::fs::read_dir(tmp_of(dir))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("etcdops-drill-"))
        .collect();
    assert!(left.is_empty(), "the drill left {left:?}");
}

/// An executable shell script `name` in `dir` that says why and exits 3; its path.
fn exiting_etcd(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("exiting-etcd");
    std::fs::write(
        &path,
        "#!/bin/sh\necho 'cannot serve: on purpose' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn snapshot_info_drills_a_chain_in_check_mode_too_and_fails_on_another_cluster_or_a_dead_etcd() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("backups");
    let backup = BackupRun::start(&cluster, &store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let url = format!("{}/{}", store.display(), full["object"].as_str().unwrap());
    let last = *write_changes(&cluster, "module", 2).last().unwrap();
    backup.wait_published(last);
    backup.stop();
    // Another cluster's backup: the same keys, another history.
    let other = Cluster::start(1, Security::Plain);
    other.put_keys("/other/", 3);
    let other_store = other.dir().join("backups");
    let saved = crate::run(
        &other,
        &[
            "snapshot",
            "save",
            &other_store.display().to_string(),
            "-w",
            "json",
        ],
    );
    saved.expect_code(0);
    let other_url = format!(
        "{}/{}",
        other_store.display(),
        saved.json()["manifest"]["object"].as_str().unwrap()
    );
    // Passed off as this cluster's (another cluster's backup is not compared at all).
    crate::snapshot_against_cluster::pass_off_as(&other_url, &cluster);

    let binary = EtcdVersion::from_env().etcd().display().to_string();
    let work = tempfile::tempdir().unwrap();
    let drill = json!({"etcd.core.etcd_snapshot_info": {
        "snapshot": url, "against_cluster": true, "restore_drill": true, "etcd_binary": binary,
    }});
    let mut checked = drill.clone();
    checked["check_mode"] = json!(true);
    let differs = json!({"etcd.core.etcd_snapshot_info": {
        "snapshot": other_url, "against_cluster": true,
    }});
    let dead = json!({"etcd.core.etcd_snapshot_info": {
        "snapshot": url, "restore_drill": true, "etcd_binary": exiting_etcd(work.path()),
    }});
    let collection = Collection::install();
    let results = play(
        &collection,
        &cluster.endpoints(),
        &[
            ("drilled", drill),
            ("checked", checked),
            ("differs", differs),
            ("dead", dead),
        ],
        work.path(),
    );

    for name in ["drilled", "checked"] {
        let result = &results[name];
        assert_eq!(result["failed"], false, "{name}: {result:#}");
        assert_eq!(result["changed"], false, "{name}: {result:#}");
        let against = &result["against_cluster"];
        assert_eq!(against["verdict"], "match", "{name}: {result:#}");
        assert_eq!(against["revision"], last, "{name}: {result:#}");
        assert!(against["segments"].as_u64().unwrap() >= 1, "{result:#}");
        let restored = &result["restore_drill"];
        assert_eq!(restored["ok"], true, "{name}: {result:#}");
        assert_eq!(restored["revision"], last, "{name}: {result:#}");
        assert_eq!(restored["etcd_hash"], against["hash"], "{name}: {result:#}");
        assert!(
            result["msg"]
                .as_str()
                .unwrap()
                .contains("the restore drill passed"),
            "{result:#}"
        );
    }
    let differs = &results["differs"];
    assert_eq!(differs["failed"], true, "{differs:#}");
    assert_eq!(
        differs["against_cluster"]["verdict"], "differs",
        "{differs:#}"
    );
    let member = differs["against_cluster"]["members"][0]["member_id"]
        .as_str()
        .unwrap();
    let msg = differs["msg"].as_str().unwrap();
    assert!(
        msg.contains("differs from the cluster") && msg.contains(&format!("member {member}")),
        "{msg}"
    );
    let dead = &results["dead"];
    assert_eq!(dead["failed"], true, "{dead:#}");
    assert_eq!(dead["restore_drill"]["ok"], false, "{dead:#}");
    let msg = dead["msg"].as_str().unwrap();
    assert!(
        msg.contains("the restore drill failed") && msg.contains("cannot serve: on purpose"),
        "{msg}"
    );
    assert_no_scratch(work.path());
}

/// The backup role on localhost with `vars`, then its `backup_drill_result` written to
/// `dir/drill.json` (in check mode too).
fn backup_role(
    collection: &Collection,
    endpoints: &str,
    vars: &Value,
    dir: &Path,
    args: &[&str],
) -> (etcdops_tests::PlaybookRun, Option<Value>) {
    let out = dir.join("drill.json");
    let _ = std::fs::remove_file(&out);
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": [endpoints]}},
        "roles": [{"role": "etcd.core.backup", "vars": vars}],
        "tasks": [{"ansible.builtin.copy": {
            "content": "{{ backup_drill_result | default({}) | to_json }}",
            "dest": out,
        }, "check_mode": false}],
    }])
    .to_string();
    let tmp = tmp_of(dir).display().to_string();
    let run = collection.playbook(
        &playbook,
        "target ansible_connection=local\n",
        &json!({}),
        &[("TMPDIR", tmp.as_str())],
        args,
    );
    let result = std::fs::read_to_string(&out)
        .ok()
        .map(|text| serde_json::from_str(&text).unwrap());
    (run, result)
}

#[test]
fn backup_role_drills_the_backup_it_took_fails_on_a_failed_drill_and_drills_none_in_check_mode() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 12);
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("backups");
    let binary = EtcdVersion::from_env().etcd().display().to_string();
    let collection = Collection::install();
    let endpoints = cluster.endpoints();
    let vars = json!({
        "backup_dest": store, "backup_drill": true, "backup_drill_etcd_binary": binary,
    });

    let (run, drilled) = backup_role(&collection, &endpoints, &vars, work.path(), &[]);
    assert_eq!(run.code, 0, "{run}");
    let drilled = drilled.unwrap_or_else(|| panic!("no drill result:\n{run}"));
    assert_eq!(
        drilled["against_cluster"]["verdict"], "match",
        "{drilled:#}"
    );
    assert_eq!(drilled["restore_drill"]["ok"], true, "{drilled:#}");
    assert_eq!(drilled["restore_drill"]["etcd_keys"], 12, "{drilled:#}");
    assert_no_scratch(work.path());

    // Check mode takes no backup: nothing to drill.
    let (run, drilled) = backup_role(&collection, &endpoints, &vars, work.path(), &["--check"]);
    assert_eq!(run.code, 0, "{run}");
    let drilled = drilled.unwrap_or_else(|| panic!("no drill result:\n{run}"));
    assert_eq!(drilled["skipped"], true, "{drilled:#}");

    // A drill that fails fails the role, saying why.
    let mut vars = vars.clone();
    vars["backup_drill_etcd_binary"] = json!(exiting_etcd(work.path()));
    let (run, _) = backup_role(&collection, &endpoints, &vars, work.path(), &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(
        run.stdout.contains("the restore drill failed")
            && run.stdout.contains("cannot serve: on purpose"),
        "{run}"
    );
    assert_no_scratch(work.path());
}
