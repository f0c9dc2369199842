//! What the role tests on real-shaped hosts (`etcdops_tests::NodeCluster`) assert about a run:
//! its recap, one task's output, and that a run changed nothing on disk or in the cluster.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use etcdops_tests::{Collection, Membership, NodeCluster, PlaybookRun};

/// The recap's `changed=N` of every host.
pub fn changed_counts(run: &PlaybookRun) -> Vec<String> {
    run.stdout
        .lines()
        .skip_while(|l| !l.starts_with("PLAY RECAP"))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("changed=")))
        .map(str::to_string)
        .collect()
}

/// The run passed and reported no change on any host.
pub fn assert_no_change_reported(run: &PlaybookRun) {
    run.assert_ok();
    let counts = changed_counts(run);
    assert!(
        !counts.is_empty() && counts.iter().all(|c| c == "changed=0"),
        "{counts:?}\n{run}"
    );
}

/// What a run must leave as it was: every file of the hosts (data dirs, env files, drop-ins),
/// the etcd processes, and the cluster's ID and members (read from `urls` when any member
/// serves).
#[derive(Debug, PartialEq)]
pub struct State {
    disk: BTreeMap<String, String>,
    pids: Vec<Option<String>>,
    membership: Option<Membership>,
}

impl State {
    pub fn capture(cluster: &NodeCluster, urls: &[String]) -> State {
        let serving: Vec<String> = cluster
            .members
            .iter()
            .filter(|m| urls.contains(&m.client_url) && m.pid().is_some())
            .map(|m| m.client_url.clone())
            .collect();
        State {
            disk: cluster.disk_state(),
            pids: cluster.pids(),
            membership: (!serving.is_empty()).then(|| cluster.membership(&serving)),
        }
    }

    /// Panics, naming what differs, unless `self` and `after` are the same.
    pub fn assert_same(&self, after: &State, run: &PlaybookRun) {
        let changed: Vec<String> = self
            .disk
            .iter()
            .filter(|(path, was)| after.disk.get(*path) != Some(*was))
            .map(|(path, was)| format!("{path}: {was} -> {:?}", after.disk.get(path)))
            .chain(
                after
                    .disk
                    .keys()
                    .filter(|p| !self.disk.contains_key(*p))
                    .map(|p| format!("{p}: new")),
            )
            .collect();
        assert!(changed.is_empty(), "files changed: {changed:#?}\n{run}");
        assert_eq!(self.pids, after.pids, "etcd was stopped or started\n{run}");
        assert_eq!(
            self.membership, after.membership,
            "the cluster changed\n{run}"
        );
    }
}

/// Runs `play` and kills ansible-playbook (as Ctrl-C would stop it) once a task whose name
/// contains `task` begins; returns what it printed.
pub fn kill_after_task(collection: &Collection, play: &str, inventory: &str, task: &str) -> String {
    let mut spawned = collection.spawn_playbook(play, inventory);
    let mut seen = String::new();
    let mut reader = BufReader::new(&mut spawned.stdout);
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        seen.push_str(&line);
        if line.starts_with("TASK [") && line.contains(task) {
            break;
        }
        line.clear();
    }
    assert!(
        seen.contains(task),
        "the run ended before '{task}':\n{seen}"
    );
    let _ = spawned.child.kill();
    let _ = spawned.child.wait();
    seen
}
