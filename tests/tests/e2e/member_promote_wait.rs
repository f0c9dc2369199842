//! Waiting instead of looping with `until`: `etcdops member promote --wait` and `etcd_member`'s
//! `wait` promote a learner once it has started and caught up, and fail, saying what was
//! missing, when it never starts (a zero timeout looks once); check mode waits for nothing and
//! says what a real run would wait for; `etcd_cluster_info`'s `wait` returns how it went.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Collection, Security, etcdops_path};
use serde_json::{Value, json};

use crate::{assert_clear_error, run};

const LOCAL: &str = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";

/// Adds a learner `name` with fresh URLs: (its ID, peer URL, client URL, initial cluster).
fn add_learner(cluster: &Cluster, name: &str) -> (String, String, String, String) {
    let (peer, client) = cluster.new_member_urls();
    let add = run(
        cluster,
        &[
            "member",
            "add",
            name,
            "--peer-urls",
            &peer,
            "--learner",
            "-w",
            "json",
        ],
    );
    add.expect_code(0);
    let added = add.json();
    let id = added["member"]["id"].as_str().unwrap().to_string();
    let initial = added["env"]["ETCD_INITIAL_CLUSTER"]
        .as_str()
        .unwrap()
        .to_string();
    (id, peer, client, initial)
}

fn voters(cluster: &Cluster) -> Vec<String> {
    let list = run(cluster, &["member", "list", "-w", "json"]);
    list.expect_code(0);
    list.json()["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["is_learner"] == json!(false))
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect()
}

/// The module tasks that must fail or report, on a learner that never starts, and the health
/// gate's wait on a healthy cluster; each registered and asserted in the play.
fn refusals_play(cluster: &Cluster, learner: &str) -> String {
    let connection = json!({"endpoints": cluster.client_urls()});
    let promote = |extra: Value| {
        let mut task = json!({"member": learner, "state": "promoted", "wait": true});
        for (k, v) in extra.as_object().unwrap() {
            task[k] = v.clone();
        }
        task
    };
    json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": connection},
        "tasks": [
            {"etcd.core.etcd_member": promote(json!({"wait_timeout": 0})),
             "register": "zero", "ignore_errors": true},
            {"etcd.core.etcd_member": promote(json!({"wait_timeout": 2})),
             "register": "short", "ignore_errors": true},
            {"etcd.core.etcd_member": promote(json!({"wait_timeout": 60})),
             "register": "checked", "check_mode": true},
            {"etcd.core.etcd_member": {"name": "x", "peer_urls": ["http://127.0.0.1:9"], "wait": true},
             "register": "wrong_state", "ignore_errors": true},
            // The unstarted learner is an unhealthy member: an alarm gate passes at the first
            // look, an unhealthy gate times out with the last findings.
            {"etcd.core.etcd_cluster_info": {"wait": true, "wait_timeout": 30, "fail_on": ["alarm"]},
             "register": "gate"},
            {"etcd.core.etcd_cluster_info": {"wait": true, "wait_timeout": 1},
             "register": "gate_timeout", "ignore_errors": true},
            {"etcd.core.etcd_cluster_info": {"wait": true}, "register": "gate_checked",
             "check_mode": true},
            {"ansible.builtin.assert": {"that": [
                "zero is failed and 'has not started' in zero.msg and 'waited 0s' in zero.msg",
                "short is failed and 'waited 2s' in short.msg and 'has not started' in short.msg",
                "checked is changed and checked is not failed",
                "'would wait up to 60s' in checked.msg and 'not waited' in checked.msg",
                "wrong_state is failed and 'only state promoted waits' in wrong_state.msg",
                "gate is not failed and gate.waited.attempts == 1 and not gate.waited.timed_out",
                "gate_timeout is failed and gate_timeout.waited.timed_out",
                "'still failing after waiting' in gate_timeout.msg and 'has not started' in gate_timeout.msg",
                "gate_timeout.members | length == 2",
                "'check mode: not waited' in gate_checked.msg and gate_checked is not failed",
                "gate_checked.warnings | select('search', 'a real run waits up to 120s') | list | length == 1",
                "gate_checked.waited is not defined",
            ]}},
        ],
    }])
    .to_string()
}

#[test]
fn a_learner_is_promoted_once_it_catches_up_and_a_wait_for_one_that_never_starts_times_out() {
    let mut cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/wait/k", 200);
    let (id, peer, client, initial) = add_learner(&cluster, "w2");

    // The CLI, on a learner that has not started: a zero timeout looks once; a short one
    // waits that long; both say what was missing.
    let zero = run(&cluster, &["member", "promote", &id, "--wait=0s"]);
    assert_clear_error(&zero, "has not started");
    assert!(zero.stderr.contains("waited 0s"), "{zero}");
    let start = Instant::now();
    let short = run(&cluster, &["member", "promote", &id, "--wait=2s"]);
    assert_clear_error(&short, "has not started");
    assert!(short.stderr.contains("waited 2s"), "{short}");
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(20),
        "{took:?}"
    );

    // The modules, on the same learner, in one play (its assertions are in the play).
    let collection = Collection::install();
    let run_play = collection.playbook(&refusals_play(&cluster, &id), LOCAL, &json!({}), &[], &[]);
    assert_eq!(run_play.code, 0, "{run_play}");
    assert_eq!(voters(&cluster).len(), 1, "nothing was promoted");

    // The module waits while the learner is started: promoted once it has caught up.
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [{
            "etcd.core.etcd_member": {
                "endpoints": cluster.client_urls(),
                "member": peer, "state": "promoted", "wait": true, "wait_timeout": 90,
            },
            "register": "promoted",
        }, {
            "ansible.builtin.assert": {"that": [
                "promoted is changed",
                "not promoted.waited.timed_out",
            ]},
        }],
    }])
    .to_string();
    let mut waiting = collection.spawn_playbook(&playbook, LOCAL);
    cluster.join_member("w2", &peer, &client, &initial);
    let status = waiting.child.wait().unwrap();
    let mut out = String::new();
    waiting.stdout.read_to_string(&mut out).unwrap();
    assert!(status.success(), "{out}");
    assert!(voters(&cluster).contains(&"w2".to_string()), "{out}");

    // The CLI waits the same way for a second learner, started after the command.
    let (id3, peer3, client3, initial3) = add_learner(&cluster, "w3");
    let mut args = cluster.client_flags();
    args.extend(
        ["member", "promote", &id3, "--wait=90s", "-w", "json"]
            .iter()
            .map(|s| s.to_string()),
    );
    let child = Command::new(etcdops_path())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    cluster.join_member("w3", &peer3, &client3, &initial3);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let promoted: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(promoted["changed"], json!(true), "{stdout}");
    assert_eq!(promoted["waited"]["timed_out"], json!(false), "{stdout}");
    assert!(voters(&cluster).contains(&"w3".to_string()));
}
