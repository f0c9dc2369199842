//! Issue 21's restore role fixes against real members run by the test supervisor: a second
//! disaster recovery from a newer backup over dirs restored earlier (bug 3), a rerun with
//! nothing to restore that stops nothing and changes nothing (bug 4), and the role
//! conventions (argument specs: `ansible-doc -t role`, a misspelled or mistyped variable).

use etcdops_tests::{Collection, PlaybookRun, SupervisedCluster, block_on, role_playbook};
use serde_json::{Value, json};

fn playbook(endpoints: &[String], role: &str, vars: Value) -> String {
    role_playbook("all", endpoints, role, vars)
}

fn assert_ok(run: &PlaybookRun) {
    assert_eq!(run.code, 0, "{run}");
}

async fn client(urls: &[String]) -> etcd_client::Client {
    etcd_client::Client::connect(urls.to_vec(), None)
        .await
        .expect("connect")
}

fn put(urls: &[String], key: &str) {
    block_on(async { client(urls).await.put(key, "v", None).await.unwrap() });
}

fn exists(urls: &[String], key: &str) -> bool {
    block_on(async { client(urls).await.get(key, None).await.unwrap().count() == 1 })
}

/// The `-v` output of one task: from its `TASK [...]` header to the next.
fn task_output<'a>(run: &'a PlaybookRun, name: &str) -> &'a str {
    let header = format!(": {name}]");
    let start = run
        .stdout
        .find(&header)
        .unwrap_or_else(|| panic!("no task '{name}':\n{run}"));
    let rest = &run.stdout[start..];
    let end = rest[1..].find("\nTASK [").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

/// The recap's `changed=N` of every host.
fn changed_counts(run: &PlaybookRun) -> Vec<String> {
    run.stdout
        .lines()
        .skip_while(|l| !l.starts_with("PLAY RECAP"))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("changed=")))
        .map(str::to_string)
        .collect()
}

fn pids(cluster: &SupervisedCluster) -> Vec<String> {
    cluster
        .members
        .iter()
        .map(|m| std::fs::read_to_string(m.dir.join("etcd.pid")).expect("pid file"))
        .collect()
}

struct Dr {
    cluster: SupervisedCluster,
    collection: Collection,
    inventory: String,
    urls: Vec<String>,
    store: std::path::PathBuf,
}

impl Dr {
    fn start() -> Dr {
        let cluster = SupervisedCluster::start(3);
        let urls = cluster.client_urls();
        let store = cluster.dir().join("backups");
        let inventory = cluster.members.iter().map(|m| m.inventory_line()).collect();
        Dr {
            collection: Collection::install(),
            cluster,
            inventory,
            urls,
            store,
        }
    }

    fn backup(&self) {
        let play = playbook(
            &self.urls,
            "etcd.core.backup",
            json!({"backup_dest": self.store, "backup_keep_last": 5}),
        );
        assert_ok(&self.run(&play, &[]));
    }

    fn restore_play(&self) -> String {
        let mut vars = self.cluster.service_vars();
        vars["restore_store"] = json!(self.store);
        vars["restore_health_delay"] = json!(1);
        playbook(&self.urls, "etcd.core.restore", vars)
    }

    fn run(&self, play: &str, args: &[&str]) -> PlaybookRun {
        self.collection
            .playbook(play, &self.inventory, &json!({}), &[], args)
    }

    /// The restore play with no connection settings: the controller's `ETCDCTL_ENDPOINTS`
    /// (as an Automation Platform credential sets it) is the only way to the cluster. The
    /// targets (this machine too) see a closed port in theirs instead.
    fn run_with_controller_endpoints(&self, args: &[&str]) -> PlaybookRun {
        let mut play: Value = serde_json::from_str(&self.restore_play()).unwrap();
        let play_map = play[0].as_object_mut().unwrap();
        play_map.remove("module_defaults");
        play_map.insert(
            "environment".into(),
            json!({"ETCDCTL_ENDPOINTS": "http://127.0.0.1:9"}),
        );
        let endpoints = self.urls.join(",");
        self.collection.playbook(
            &play.to_string(),
            &self.inventory,
            &json!({}),
            &[("ETCDCTL_ENDPOINTS", endpoints.as_str())],
            args,
        )
    }
}

#[test]
fn restore_role_runs_a_second_disaster_recovery_from_a_newer_backup() {
    let dr = Dr::start();
    put(&dr.urls, "/dr/first");
    dr.backup();
    let first = dr.run(&dr.restore_play(), &[]);
    assert_ok(&first);
    // The restored cluster runs and takes writes; a newer backup holds them.
    put(&dr.urls, "/dr/second");
    dr.backup();
    put(&dr.urls, "/dr/after-second-backup");
    let second = dr.run(&dr.restore_play(), &[]);
    assert_ok(&second);
    assert!(
        !second.stdout.contains("--force") && !second.stderr.contains("--force"),
        "{second}"
    );
    assert!(exists(&dr.urls, "/dr/first"), "{second}");
    assert!(
        exists(&dr.urls, "/dr/second"),
        "the newer backup was restored"
    );
    assert!(
        !exists(&dr.urls, "/dr/after-second-backup"),
        "a key written after the newer backup survived the second restore"
    );
    // Both earlier data dirs were moved aside, never deleted.
    for member in &dr.cluster.members {
        let aside = std::fs::read_dir(&member.dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("data.bak-"))
            .count();
        assert_eq!(aside, 2, "{}: {second}", member.name);
    }
}

#[test]
fn restore_role_rerun_with_nothing_to_restore_stops_nothing_and_changes_nothing() {
    let dr = Dr::start();
    put(&dr.urls, "/dr/first");
    dr.backup();
    let first = dr.run(&dr.restore_play(), &[]);
    assert_ok(&first);
    let check = task_output(
        &first,
        "Check the restore on every member before anything is stopped",
    );
    assert!(
        !check.contains("changed: ["),
        "the read-only pre-check reported changed in a real run:\n{check}"
    );
    // Written after the restore: a restore would take it away.
    put(&dr.urls, "/dr/after-restore");
    let before = pids(&dr.cluster);
    // Check mode predicts it, the real rerun does it: nothing. The cluster is found over the
    // controller's connection settings.
    for args in [&["--check"][..], &[][..]] {
        let rerun = dr.run_with_controller_endpoints(args);
        assert_ok(&rerun);
        assert_eq!(
            changed_counts(&rerun),
            ["changed=0"; 3],
            "{args:?}: {rerun}"
        );
        let stop = task_output(&rerun, "Restore this member");
        assert!(stop.contains("skipping: [m0]"), "{args:?}: {stop}");
    }
    assert_eq!(pids(&dr.cluster), before, "a member was restarted");
    assert!(exists(&dr.urls, "/dr/after-restore"));
}

#[test]
fn role_variables_are_documented_and_validated() {
    if etcdops_tests::skip_on_etcd_3_4(
        "ansible-doc and the role's argument spec check; fails before any task, starts no etcd",
    ) {
        return;
    }
    let collection = Collection::install();
    let doc = std::process::Command::new(etcdops_tests::ansible_venv().join("bin/ansible-doc"))
        .args(["-t", "role", "etcd.core.restore"])
        .env("ANSIBLE_COLLECTIONS_PATH", collection.path())
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .expect("run ansible-doc");
    let text = String::from_utf8_lossy(&doc.stdout);
    assert!(doc.status.success(), "{text}");
    for option in ["restore_store", "restore_force", "restore_s3_endpoint"] {
        assert!(text.contains(option), "ansible-doc lacks {option}:\n{text}");
    }
    // A misspelled role parameter and a mistyped one fail before any task runs.
    for (params, expect) in [
        (json!({"restore_stor": "/backups"}), "restore_stor"),
        (
            json!({"restore_store": "/b", "restore_verify": "maybe"}),
            "restore_verify",
        ),
    ] {
        let mut role = json!({"role": "etcd.core.restore"});
        role.as_object_mut()
            .unwrap()
            .extend(params.as_object().unwrap().clone());
        let play = json!([{"hosts": "all", "gather_facts": false, "roles": [role]}]).to_string();
        let run = collection.playbook(&play, "m0 ansible_connection=local\n", &json!({}), &[], &[]);
        assert_ne!(run.code, 0, "{run}");
        assert!(
            run.stdout.contains("Validating arguments against arg spec")
                && run.stdout.contains(expect),
            "{run}"
        );
    }
}
