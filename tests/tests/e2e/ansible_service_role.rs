//! The `etcd.core.service` role on real-shaped hosts (`NodeCluster`: each member listens
//! only on its own loopback address, with TLS): a stop is confirmed on the member's own
//! addresses (a stop command that leaves etcd running fails the stop, where a probe of
//! 127.0.0.1 passed), a start by the member's health on its own client URL; stopping a
//! stopped member or starting a running one changes nothing; `--check` exits 0, changes
//! nothing and says what a real run would do, with every member healthy, one down and all down.

use std::time::Duration;

use etcdops_tests::{Collection, NodeCluster, PlaybookRun};
use serde_json::{Value, json};

use crate::ansible_role_runs::{State, assert_no_change_reported, changed_counts};

struct Service {
    cluster: NodeCluster,
    collection: Collection,
    inventory: String,
}

impl Service {
    fn play(&self, hosts: &str, action: &str, extra: Value) -> String {
        let mut vars = self.cluster.service_vars();
        for (k, v) in extra.as_object().unwrap() {
            vars[k] = v.clone();
        }
        json!([{
            "hosts": hosts,
            "gather_facts": false,
            "module_defaults": {
                "group/etcd.core.etcd": self.cluster.connection(&self.cluster.client_urls()),
            },
            "vars": vars,
            "tasks": [{
                "name": format!("{action} etcd"),
                "ansible.builtin.include_role": {"name": "etcd.core.service", "tasks_from": action},
            }],
        }])
        .to_string()
    }

    fn run(&self, hosts: &str, action: &str, args: &[&str]) -> PlaybookRun {
        let play = self.play(hosts, action, json!({}));
        self.collection
            .playbook(&play, &self.inventory, &json!({}), &[], args)
    }

    /// `--check` passes, changes nothing, and says `expect` (when given).
    fn assert_check(&self, hosts: &str, action: &str, expect: Option<&str>) {
        let urls = self.cluster.client_urls();
        let before = State::capture(&self.cluster, &urls);
        let run = self.run(hosts, action, &["--check"]);
        run.assert_ok();
        if let Some(expect) = expect {
            assert!(run.stdout.contains(expect), "no '{expect}':\n{run}");
        } else {
            assert_no_change_reported(&run);
        }
        before.assert_same(&State::capture(&self.cluster, &urls), &run);
    }
}

#[test]
fn service_role_stops_and_starts_members_on_their_own_addresses() {
    if etcdops_tests::skip_on_etcd_3_4(
        "the role's stop and start logic against its own addresses; etcd is only the target it \
         stops and starts (the roles that restore and replace members run on both releases)",
    ) {
        return;
    }
    let cluster = NodeCluster::start(3);
    let inventory = NodeCluster::inventory(&cluster.members.iter().collect::<Vec<_>>());
    let service = Service {
        cluster,
        collection: Collection::install(),
        inventory,
    };
    let m0 = service.cluster.members[0].clone();

    // A stop command that leaves etcd running: the stop fails, naming the member's address.
    let broken = service.play(
        "m0",
        "stop",
        json!({"etcd_stop_command": "/bin/true", "etcd_stop_timeout": 3}),
    );
    let run = service
        .collection
        .playbook(&broken, &service.inventory, &json!({}), &[], &[]);
    assert_ne!(run.code, 0, "a stop that left etcd running passed:\n{run}");
    let address = m0.client_url.trim_start_matches("https://").to_string();
    assert!(run.stdout.contains(&address), "{run}");
    assert!(service.cluster.is_serving(&m0));

    // Every member healthy: a check of a stop says what it would do; a check of a start
    // changes nothing.
    service.assert_check("m0", "stop", Some("Would stop etcd on m0"));
    service.assert_check("etcd", "start", None);

    let stopped = service.run("m0", "stop", &[]);
    stopped.assert_ok();
    assert_eq!(changed_counts(&stopped), ["changed=1"], "{stopped}");
    assert!(m0.pid().is_none() && service.cluster.listening(&m0).is_empty());
    let urls = service.cluster.client_urls();
    let before = State::capture(&service.cluster, &urls);
    let again = service.run("m0", "stop", &[]);
    assert_no_change_reported(&again);
    before.assert_same(&State::capture(&service.cluster, &urls), &again);

    // One member down.
    service.assert_check("m0", "start", Some("Would start etcd on m0"));
    service.assert_check("etcd", "stop", Some("Would stop etcd on m1"));
    let started = service.run("m0", "start", &[]);
    started.assert_ok();
    assert!(service.cluster.is_serving(&m0), "{started}");
    let before = State::capture(&service.cluster, &urls);
    let again = service.run("m0", "start", &[]);
    assert_no_change_reported(&again);
    before.assert_same(&State::capture(&service.cluster, &urls), &again);

    // Every member down: a check says what it would start; the start waits until each
    // answers health on its own URL (they form their quorum together).
    let stopped = service.run("etcd", "stop", &[]);
    stopped.assert_ok();
    assert!(service.cluster.pids().iter().all(Option::is_none));
    service.assert_check("etcd", "start", Some("Would start etcd on m2"));
    service.assert_check("etcd", "stop", None);
    let started = service.run("etcd", "start", &[]);
    started.assert_ok();
    for member in &service.cluster.members {
        service.cluster.wait_serving(member, Duration::from_secs(1));
    }
}
