//! The `etcd.core.quorum_recover` role on real-shaped hosts (`NodeCluster`: each member on its
//! own loopback address, listening only there, client and peer TLS, its admin's env file read
//! through a unit), one cluster through every state the role meets: healthy (a run and
//! `--check` change nothing); one member down (`--check` changes nothing, a run takes one
//! verified backup into the configured store and the member rejoins keeping the admin's env
//! lines, a rerun changes nothing); two of three down and all down (`--check` exits 0, says
//! what a real run would do and changes nothing); then two data dirs lost (a run recovers the
//! quorum from the survivor, forced once, keeping every data dir it touched, and a rerun changes
//! nothing). One host leaves `etcd_name` to the role's default: the cluster-wide tasks must read
//! each host's own name.

use std::time::Duration;

use etcdops_tests::{Collection, NodeCluster, PlaybookRun, SupervisedMember, block_on};
use serde_json::json;

use crate::ansible_role_runs::{State, assert_no_change_reported};

/// The keys written before the first run, read back from every member at the end.
const KEYS: usize = 10;

struct Recover {
    cluster: NodeCluster,
    collection: Collection,
    inventory: String,
    play: String,
}

impl Recover {
    /// Three members holding [`KEYS`] keys, and the play a newcomer writes from the README:
    /// the rejoining members' settings go into the admin's own env file (`/etc/default/etcd`).
    fn start() -> Recover {
        let cluster = NodeCluster::start(3);
        block_on(async {
            let mut c = cluster.client(&cluster.client_urls()).await;
            for i in 0..KEYS {
                c.put(format!("/quorum/k{i}"), "v", None).await.unwrap();
            }
        });
        let members: Vec<&SupervisedMember> = cluster.members.iter().collect();
        // m0's name is the role's default (its inventory name): hostvars hold no etcd_name.
        let inventory = NodeCluster::inventory(&members).replace(" etcd_name=m0 ", " ");
        let mut vars = cluster.service_vars();
        vars["quorum_recover_env_file"] = json!("{{ etcd_member_dir }}/etcd.env");
        vars["quorum_recover_verify_delay"] = json!(1);
        vars["quorum_recover_promote_delay"] = json!(1);
        vars["quorum_recover_backup_store"] = json!(cluster.dir().join("quorum-before-change"));
        let play = cluster.role_playbook(
            "etcd",
            &cluster.client_urls(),
            "etcd.core.quorum_recover",
            vars,
        );
        Recover {
            cluster,
            collection: Collection::install(),
            inventory,
            play,
        }
    }

    fn run(&self, args: &[&str]) -> PlaybookRun {
        let started = std::time::Instant::now();
        let run = self
            .collection
            .playbook(&self.play, &self.inventory, &json!({}), &[], args);
        println!(
            "quorum_recover {args:?}: {:?}, {} retries",
            started.elapsed(),
            run.stdout.matches("FAILED - RETRYING").count()
        );
        run
    }

    fn urls(&self) -> Vec<String> {
        self.cluster.client_urls()
    }

    /// A run that changes nothing: passes, reports `changed=0` on every host, and leaves every
    /// file, process and the membership as they were.
    fn assert_rerun_changes_nothing(&self) {
        let before = State::capture(&self.cluster, &self.urls());
        let again = self.run(&[]);
        assert_no_change_reported(&again);
        before.assert_same(&State::capture(&self.cluster, &self.urls()), &again);
    }

    /// `--check` passes, says each of `expect`, waits for nothing and changes nothing.
    fn assert_check(&self, expect: &[&str]) {
        let before = State::capture(&self.cluster, &self.urls());
        let run = self.run(&["--check"]);
        run.assert_ok();
        for said in expect {
            assert!(run.stdout.contains(said), "no '{said}':\n{run}");
        }
        assert!(!run.stdout.contains("FAILED - RETRYING"), "{run}");
        before.assert_same(&State::capture(&self.cluster, &self.urls()), &run);
    }

    /// m0..m2 are voters, each listens on its own address only and serves the keys.
    fn assert_three_voters_on_their_addresses(&self) {
        let (_, members) = self.cluster.membership(&self.urls());
        let voters: Vec<(String, bool)> = members.into_iter().map(|(n, _, l)| (n, l)).collect();
        let want: Vec<(String, bool)> = ["m0", "m1", "m2"]
            .iter()
            .map(|n| (n.to_string(), false))
            .collect();
        assert_eq!(voters, want);
        for member in &self.cluster.members {
            self.cluster.wait_serving(member, Duration::from_secs(30));
            self.cluster.assert_listens_only_on_its_addresses(member);
            let count = block_on(async {
                let mut c = self
                    .cluster
                    .client(std::slice::from_ref(&member.client_url))
                    .await;
                let options = etcd_client::GetOptions::new()
                    .with_prefix()
                    .with_count_only()
                    .with_serializable();
                c.get("/quorum/k", Some(options)).await.unwrap().count()
            });
            assert_eq!(count, KEYS as i64, "{} serves the keys", member.name);
        }
    }
}

/// Names in `member`'s host dir starting with `prefix`.
fn entries(member: &SupervisedMember, prefix: &str) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(&member.dir)
        .expect("read member dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    found.sort();
    found
}

/// Every line of the admin's `original` env file that sets none of the rejoin's keys is still
/// in `now`.
fn assert_admin_lines_kept(member: &SupervisedMember, original: &str) {
    const ROLE_KEYS: [&str; 6] = [
        "ETCD_NAME=",
        "ETCD_DATA_DIR=",
        "ETCD_INITIAL_CLUSTER=",
        "ETCD_INITIAL_CLUSTER_STATE=",
        "ETCD_INITIAL_ADVERTISE_PEER_URLS=",
        "ETCD_ADVERTISE_CLIENT_URLS=",
    ];
    let now = std::fs::read_to_string(NodeCluster::env_file(member)).expect("env file");
    for line in original.lines() {
        if ROLE_KEYS.iter().any(|k| line.starts_with(k)) {
            continue;
        }
        assert!(
            now.lines().any(|l| l == line),
            "the role removed '{line}' from {}'s env file:\n{now}",
            member.name
        );
    }
}

/// The files under `dir`, recursively.
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

#[test]
fn quorum_recover_role_on_node_address_hosts_in_every_state() {
    let recover = Recover::start();
    let [m0, m1, m2] = [0, 1, 2].map(|i| recover.cluster.members[i].clone());
    let originals: Vec<String> = recover
        .cluster
        .members
        .iter()
        .map(|m| std::fs::read_to_string(NodeCluster::env_file(m)).unwrap())
        .collect();

    // Healthy: nothing to do, and nothing done, in a real run and in check mode.
    recover.assert_rerun_changes_nothing();
    recover.assert_check(&["Nothing to do"]);

    // One member down, a quorum serves: check mode says it would back up and rejoin m2; the
    // real run takes one verified backup into the configured store (none per member), keeps
    // m2's old data dir, and writes m2's first-start settings into the admin's env file
    // without removing a line the role did not write.
    m2.stop();
    recover.assert_check(&["Would rejoin", "Would take a verified backup"]);
    let run = recover.run(&[]);
    run.assert_ok();
    let store = recover.cluster.dir().join("quorum-before-change");
    let said = "Backup before the change: ";
    assert_eq!(run.stdout.matches(said).count(), 1, "one backup:\n{run}");
    let at = run.stdout.find(said).unwrap() + said.len();
    let named = run.stdout[at..].split_whitespace().next().unwrap();
    assert!(
        named.contains(&store.display().to_string()),
        "the backup {named} is not in the configured store"
    );
    let stored = files(&store);
    assert!(
        stored.iter().any(|f| f.ends_with(".db.zst"))
            && stored.iter().any(|f| f.ends_with(".manifest.json")),
        "{stored:?}"
    );
    assert!(
        files(&recover.cluster.dir().join("before-change")).is_empty(),
        "member_replace took a backup of its own"
    );
    assert_eq!(entries(&m2, "data.bak-").len(), 1, "m2's old data dir kept");
    assert_admin_lines_kept(&m2, &originals[2]);
    recover.assert_three_voters_on_their_addresses();
    recover.assert_rerun_changes_nothing();

    // Two of three down (no quorum; m0 still runs) and all down: check mode exits 0, says
    // what a real run would do, stops and starts nothing and writes nothing.
    m1.stop();
    m2.stop();
    recover.assert_check(&["Would stop every member, then choose the survivor"]);
    m0.stop();
    // (Which members: etcd 3.5.1-3.5.19 does not write a promotion into the db, so m2, promoted
    // above, may read as a learner there; etcd-io/etcd#19557.)
    recover.assert_check(&["Would start m0, m1", "normally, nothing forced"]);

    // m1's and m2's disks are lost: the quorum comes back from m0, forced once; m0's data dir
    // is copied aside first and no dir is deleted; m0's env file is not touched.
    let lost: Vec<std::path::PathBuf> = [&m1, &m2]
        .iter()
        .map(|m| {
            let gone = m.dir.join("data.lost-by-test");
            std::fs::rename(m.data_dir(), &gone).unwrap();
            gone
        })
        .collect();
    let run = recover.run(&[]);
    run.assert_ok();
    assert!(run.stdout.contains("Recovered the quorum from m0"), "{run}");
    assert!(
        run.stdout.contains("no backup of the cluster can be taken")
            && !run.stdout.contains("Backup before the change: "),
        "the run says the kept dirs stand in for a backup, and takes none:\n{run}"
    );
    let log = std::fs::read_to_string(m0.dir.join("etcd.log")).unwrap();
    assert!(log.contains("forcing restart"), "no forced start:\n{log}");
    assert_eq!(entries(&m0, "data.bak-").len(), 1, "m0's copy");
    for dir in &lost {
        assert!(dir.exists(), "{} was deleted", dir.display());
    }
    assert_eq!(
        std::fs::read_to_string(NodeCluster::env_file(&m0)).unwrap(),
        originals[0],
        "the survivor's env file was changed"
    );
    assert_admin_lines_kept(&m1, &originals[1]);
    assert_admin_lines_kept(&m2, &originals[2]);
    recover.assert_three_voters_on_their_addresses();
    recover.assert_rerun_changes_nothing();
}
