//! The `etcd.core.restore` role on real-shaped hosts (`NodeCluster`: each member on its own
//! loopback address, listening only there, with client and peer TLS), as a newcomer runs it
//! from the README: a restore, then a rerun that changes nothing; with one member down a rerun
//! starts it and restores nothing (no write since the restore is lost); `--check` exits 0,
//! changes nothing and reports the plan with every member healthy, one down and all down (no
//! wait for a health that only a real run brings); a backup of the running cluster before the restore
//! (never into the store restored from), skipped with no quorum, refused when no member answers
//! although they listen (the play's connection settings missing); a second disaster recovery
//! makes a new cluster ID and new member IDs.

use std::path::{Path, PathBuf};

use etcdops_tests::{Collection, NodeCluster, PlaybookRun, block_on};
use serde_json::json;

use crate::ansible_role_runs::{State, assert_no_change_reported, kill_after_task};

struct Dr {
    cluster: NodeCluster,
    collection: Collection,
    inventory: String,
    store: PathBuf,
    before_restore: PathBuf,
}

impl Dr {
    fn start() -> Dr {
        let cluster = NodeCluster::start(3);
        let inventory = NodeCluster::inventory(&cluster.members.iter().collect::<Vec<_>>());
        Dr {
            store: cluster.dir().join("backups"),
            before_restore: cluster.dir().join("before-restore"),
            collection: Collection::install(),
            inventory,
            cluster,
        }
    }

    fn urls(&self) -> Vec<String> {
        self.cluster.client_urls()
    }

    fn put(&self, key: &str) {
        block_on(async {
            let mut c = self.cluster.client(&self.urls()).await;
            c.put(key, "v", None).await.unwrap();
        });
    }

    fn exists(&self, key: &str) -> bool {
        block_on(async {
            let mut c = self.cluster.client(&self.urls()).await;
            c.get(key, None).await.unwrap().count() == 1
        })
    }

    fn run(&self, play: &str, args: &[&str]) -> PlaybookRun {
        self.collection
            .playbook(play, &self.inventory, &json!({}), &[], args)
    }

    fn backup(&self) {
        let play = self.cluster.role_playbook(
            "etcd",
            &self.urls(),
            "etcd.core.backup",
            json!({"backup_dest": self.store}),
        );
        self.run(&play, &[]).assert_ok();
    }

    fn restore_play(&self) -> String {
        let mut vars = self.cluster.service_vars();
        vars["restore_store"] = json!(self.store);
        vars["restore_backup_store"] = json!(self.before_restore);
        vars["restore_health_delay"] = json!(1);
        self.cluster
            .role_playbook("etcd", &self.urls(), "etcd.core.restore", vars)
    }

    /// `--check` passes quickly, changes nothing, and says each of `expect`.
    fn assert_check(&self, expect: &[&str]) {
        let urls = self.urls();
        let before = State::capture(&self.cluster, &urls);
        let run = self.run(&self.restore_play(), &["--check"]);
        run.assert_ok();
        for expect in expect {
            assert!(run.stdout.contains(expect), "no '{expect}':\n{run}");
        }
        before.assert_same(&State::capture(&self.cluster, &urls), &run);
        // Check mode waits for nothing only a real run could bring about: no retried task.
        assert!(!run.stdout.contains("FAILED - RETRYING"), "{run}");
    }

    /// A real rerun (and with `check`, a check run) reports no change and touches nothing.
    fn assert_rerun_changes_nothing(&self, check: bool) {
        let urls = self.urls();
        let before = State::capture(&self.cluster, &urls);
        let again = self.run(&self.restore_play(), &[]);
        assert_no_change_reported(&again);
        before.assert_same(&State::capture(&self.cluster, &urls), &again);
        if check {
            let check = self.run(&self.restore_play(), &["--check"]);
            assert_no_change_reported(&check);
            before.assert_same(&State::capture(&self.cluster, &urls), &check);
        }
    }

    /// Every member listens on its own address only and serves TLS.
    fn assert_members_on_their_addresses(&self) {
        for member in &self.cluster.members {
            self.cluster.assert_listens_only_on_its_addresses(member);
            assert!(self.cluster.is_serving(member), "{}", member.name);
        }
    }

    fn ids(&self) -> (u64, Vec<u64>) {
        let (cluster_id, members) = self.cluster.membership(&self.urls());
        let names: Vec<&str> = members.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["m0", "m1", "m2"]);
        (
            cluster_id,
            members.into_iter().map(|(_, id, _)| id).collect(),
        )
    }
}

/// The backup files (not manifests) under `dir`.
fn backups(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(entry.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.ends_with(".db.zst") {
                found.push(name);
            }
        }
    }
    found
}

#[test]
fn restore_role_on_node_address_hosts_converges_and_makes_a_new_cluster_each_time() {
    let dr = Dr::start();
    let (original_id, _) = dr.ids();
    dr.put("/dr/first");
    dr.backup();
    dr.put("/dr/after-backup");

    // One member's host cannot be reached: nothing is stopped or changed anywhere.
    let urls = dr.urls();
    let before = State::capture(&dr.cluster, &urls);
    let unreachable = format!(
        "{}m9 ansible_host=127.0.0.1 ansible_port=9 ansible_connection=ssh ansible_user=nobody etcd_peer_url=https://127.0.0.1:9\n",
        dr.inventory
    );
    let run = dr
        .collection
        .playbook(&dr.restore_play(), &unreachable, &json!({}), &[], &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(
        run.stdout.contains("nothing was stopped or restored"),
        "{run}"
    );
    before.assert_same(&State::capture(&dr.cluster, &urls), &run);

    // The play without its connection settings (the collection README's example had none):
    // no member answers on the default endpoint although each listens on its own address.
    // That is no proof that no quorum serves: refused before anything is stopped, never a
    // restore of the running cluster without the backup taken first.
    let mut vars = dr.cluster.service_vars();
    vars["restore_store"] = json!(dr.store);
    vars["restore_backup_store"] = json!(dr.before_restore);
    let unconnected = json!([{
        "hosts": "etcd",
        "gather_facts": false,
        "roles": [{"role": "etcd.core.restore", "vars": vars}],
    }])
    .to_string();
    let before = State::capture(&dr.cluster, &urls);
    let run = dr.run(&unconnected, &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(
        run.stdout
            .contains("etcd listens on the client address of m0")
            && run.stdout.contains("Nothing was stopped or restored"),
        "{run}"
    );
    before.assert_same(&State::capture(&dr.cluster, &urls), &run);

    // Every member healthy, never restored: the plan, a backup first, nothing done.
    dr.assert_check(&["Would: stop etcd", "Would back up the running cluster"]);

    let first = dr.run(&dr.restore_play(), &[]);
    first.assert_ok();
    assert!(
        dr.exists("/dr/first") && !dr.exists("/dr/after-backup"),
        "{first}"
    );
    dr.assert_members_on_their_addresses();
    let (first_id, first_members) = dr.ids();
    assert_ne!(first_id, original_id, "{first}");
    // The backup of the cluster as it ran went elsewhere; the store holds only its backup.
    assert_eq!(backups(&dr.before_restore).len(), 1, "{first}");
    assert_eq!(backups(&dr.store).len(), 1, "{first}");
    assert!(
        first.stdout.contains("Backup before the restore: "),
        "{first}"
    );

    // Nothing to do: a rerun and a check change nothing.
    dr.assert_rerun_changes_nothing(true);

    // One member down: the cluster still runs from the restore (a quorum serves it). A check
    // plans no restore and changes nothing; a real rerun starts the member and restores
    // nothing (a write made since the restore survives); the next rerun changes nothing.
    dr.put("/dr/after-restore");
    dr.cluster.members[0].stop();
    dr.assert_check(&["Nothing restored: the cluster already runs from this restore"]);
    let rerun = dr.run(&dr.restore_play(), &[]);
    rerun.assert_ok();
    assert!(rerun.stdout.contains("Nothing restored"), "{rerun}");
    assert!(
        dr.exists("/dr/after-restore"),
        "the rerun restored again: {rerun}"
    );
    dr.assert_members_on_their_addresses();
    assert_eq!(dr.ids().0, first_id, "{rerun}");
    dr.assert_rerun_changes_nothing(false);

    // Every member down: no wait for health, no backup (no quorum), nothing changed.
    for member in &dr.cluster.members {
        member.stop();
    }
    dr.assert_check(&["Would: stop etcd", "No backup before the restore"]);

    // The second disaster recovery, with every member down, stopped (Ctrl-C) once the
    // members are restored and run again: a new cluster, new member IDs.
    let killed = kill_after_task(
        &dr.collection,
        &dr.restore_play(),
        &dr.inventory,
        "Start etcd on every member",
    );
    assert!(killed.contains("No backup before the restore"), "{killed}");
    let second = dr.run(&dr.restore_play(), &[]);
    second.assert_ok();
    dr.assert_members_on_their_addresses();
    let (second_id, second_members) = dr.ids();
    assert_ne!(
        second_id, first_id,
        "the second restore made the same cluster ID"
    );
    for id in &second_members {
        assert!(!first_members.contains(id), "member ID {id:x} again");
    }
    assert!(dr.exists("/dr/first"));
    dr.assert_rerun_changes_nothing(false);
}
