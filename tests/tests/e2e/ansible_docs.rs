//! The modules' documentation against what real runs return, and their messages for bad
//! input in Ansible's words, through real ansible-playbook and real etcd: every key a module
//! returns (nested ones too, in `contains`) is documented, and a task with a wrong choice, a
//! wrong type, an unknown option or a refusal the library hints at names the option as a
//! task writes it, never a Rust type or a command-line flag.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use etcdops_tests::{Cluster, Collection, Security, block_on, free_port};
use serde_json::{Value, json};

use crate::backup_run::{BackupRun, write_changes};
use crate::platform::KubeadmNode;

const LOCAL: &str = "target ansible_connection=local\n";

/// Keys Ansible (or the action plugin) adds to every result: not module return values.
const COMMON: &[&str] = &[
    "changed",
    "failed",
    "msg",
    "invocation",
    "warnings",
    "deprecations",
    "diff",
    "skipped",
    "_ansible_no_log",
    // A loop's result of each item.
    "item",
    "ansible_loop_var",
];

/// Return values documented as free-form mappings (their keys are data, not fields).
const FREE_FORM: &[&str] = &["labels", "env", "extra"];

fn collection_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ansible_collections/etcd/core")
}

/// The RETURN block of a module's sidecar docs.
fn documented_returns(module: &str) -> serde_yaml_ng::Value {
    let path = collection_root().join(format!("plugins/modules/{module}.yml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let docs: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    docs["RETURN"].clone()
}

/// Every key path in `value` missing from `docs` (a RETURN mapping or a `contains`).
fn undocumented(prefix: &str, value: &Value, docs: &serde_yaml_ng::Value, out: &mut Vec<String>) {
    let Value::Object(map) = value else { return };
    for (key, inner) in map {
        if prefix.is_empty() && COMMON.contains(&key.as_str()) {
            continue;
        }
        let path = format!("{prefix}{key}");
        let Some(doc) = docs.get(key.as_str()) else {
            out.push(path);
            continue;
        };
        if FREE_FORM.contains(&key.as_str()) {
            continue;
        }
        let elements: Vec<&Value> = match inner {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for element in elements {
            if let Value::Object(fields) = element
                && !fields.is_empty()
            {
                match doc.get("contains") {
                    Some(contains) => undocumented(&format!("{path}."), element, contains, out),
                    None => out.push(format!("{path} (fields without `contains`)")),
                }
            }
        }
    }
}

/// Python's dict methods: a return value so named is the method in Jinja (`{{ r.keys }}`).
const DICT_METHODS: &[&str] = &[
    "clear",
    "copy",
    "fromkeys",
    "get",
    "items",
    "keys",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "values",
];

/// Every key path in `value` named like a dict method that its docs do not mark as a
/// deprecated old name (kept one minor version beside its new name).
fn shadowing(prefix: &str, value: &Value, docs: &serde_yaml_ng::Value, out: &mut Vec<String>) {
    let Value::Object(map) = value else { return };
    for (key, inner) in map {
        let path = format!("{prefix}{key}");
        let doc = docs.get(key.as_str());
        if DICT_METHODS.contains(&key.as_str()) {
            let deprecated = doc
                .and_then(|d| d["description"].as_str())
                .is_some_and(|d| d.starts_with("Deprecated, removed in"));
            if !deprecated {
                out.push(path.clone());
            }
        }
        if prefix.is_empty() && COMMON.contains(&key.as_str()) || FREE_FORM.contains(&key.as_str())
        {
            continue;
        }
        let Some(contains) = doc.and_then(|d| d.get("contains")) else {
            continue;
        };
        let elements: Vec<&Value> = match inner {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for element in elements {
            shadowing(&format!("{path}."), element, contains, out);
        }
    }
}

/// One real run of every module (read-only ones and changes in a scratch cluster and dirs),
/// each result registered and written to `results.json` as `{module: [result, ...]}`.
fn run_every_module(cluster: &Cluster, node: &KubeadmNode, dir: &Path) -> Value {
    // A chain for etcd_snapshot_compact: a full backup and a segment of changes.
    let chain_store = dir.join("chain");
    let backup = BackupRun::start(cluster, &chain_store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let revisions = write_changes(cluster, "docs-chain", 1);
    backup.wait_published(*revisions.last().unwrap());
    backup.stop();
    let collection = Collection::install();
    let peer = format!("http://127.0.0.1:{}", free_port());
    let (new_peer, _) = cluster.new_member_urls();
    let vars = json!({
        "endpoints": cluster.client_urls(),
        "dir": dir,
        "peer": peer,
        "new_peer": new_peer,
        "node_root": node.root(),
        "chain_store": chain_store,
    });
    let playbook = include_str!("ansible_docs_play.yml");
    let run = collection.playbook(playbook, LOCAL, &vars, &[], &[]);
    run.assert_ok();
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    // To refresh the docs' samples from a real run.
    if let Some(copy) = std::env::var_os("ETCDOPS_DOCS_RESULTS") {
        std::fs::write(copy, &text).unwrap();
    }
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_key_a_real_run_returns_is_documented_with_its_nested_fields() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/docs/k", 3);
    cluster.put("/registry/secrets/default/s1", "plain");
    block_on(async {
        let mut client = cluster.client().await;
        let lease = client.lease_grant(600, None).await.unwrap();
        let options = etcd_client::PutOptions::new().with_lease(lease.id());
        client
            .put("/docs/leased", "x", Some(options))
            .await
            .unwrap();
    });
    let node = KubeadmNode::start();
    let dir = tempfile::tempdir().unwrap();
    let results = run_every_module(&cluster, &node, dir.path());
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for (module, runs) in results.as_object().unwrap() {
        seen.insert(module.clone());
        let docs = documented_returns(module);
        let mut out = Vec::new();
        for run in runs.as_array().unwrap() {
            assert_eq!(run["failed"], json!(false), "{module}: {run}");
            undocumented("", run, &docs, &mut out);
            let mut shadows = Vec::new();
            shadowing("", run, &docs, &mut shadows);
            out.extend(
                shadows
                    .into_iter()
                    .map(|p| format!("{p} (shadows a dict method)")),
            );
            // What the docs say every successful run returns, it returns.
            for (key, doc) in docs.as_mapping().unwrap() {
                let key = key.as_str().unwrap();
                let always = matches!(doc["returned"].as_str(), Some("success" | "always"));
                if always && run.get(key).is_none() {
                    out.push(format!("{key} (documented as returned on success, absent)"));
                }
            }
        }
        out.sort();
        out.dedup();
        if !out.is_empty() {
            missing.insert(module.clone(), out);
        }
    }
    assert!(
        missing.is_empty(),
        "return values out of step with the docs: {missing:#?}"
    );
    // Every module ran.
    let modules: BTreeSet<String> = std::fs::read_dir(collection_root().join("plugins/modules"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".yml").map(str::to_string)
        })
        .collect();
    assert_eq!(seen, modules);
}

/// Runs one task that must fail, and returns its message.
fn failure_message(collection: &Collection, task: Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result.json");
    let play = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [
            {"name": "bad", "register": "bad", "ignore_errors": true, "action": task},
            {"ansible.builtin.copy": {"content": "{{ bad | to_json }}", "dest": out}},
        ],
    }])
    .to_string();
    let run = collection.playbook(&play, LOCAL, &json!({}), &[], &[]);
    assert_eq!(run.code, 0, "{run}");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(result["failed"], json!(true), "{result}");
    result["msg"].as_str().unwrap().to_string()
}

#[test]
fn bad_input_is_refused_in_ansible_words() {
    if etcdops_tests::skip_on_etcd_3_4(
        "argument checks and the wording of a refusal; etcd only stands in as a target",
    ) {
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    let collection = Collection::install();
    let endpoints = json!(cluster.client_urls());
    let message = |task: Value| failure_message(&collection, task);

    // The options are checked by ansible-core's own validator, in its words: a wrong choice,
    // in a list and in a string.
    let msg = message(json!({"module": "etcd.core.etcd_cluster_info",
        "endpoints": endpoints, "fail_on": ["alarm", "sick"]}));
    assert_eq!(
        msg,
        "value of fail_on must be one or more of: unhealthy, alarm, inconsistent, certificates, \
         backup, latency. Got no match for: sick"
    );
    let msg = message(json!({"module": "etcd.core.etcd_maintenance",
        "endpoints": endpoints, "action": "defragment"}));
    assert_eq!(
        msg,
        "value of action must be one of: defrag, compact, alarm_disarm, move_leader, got: defragment"
    );
    // A wrong type, and (the shim's own check) an integer out of the option's range.
    let msg = message(json!({"module": "etcd.core.etcd_kv_info",
        "endpoints": endpoints, "etcd_key": "/", "limit": "x"}));
    assert!(
        msg.starts_with("argument 'limit' is of type str and we were unable to convert to int"),
        "{msg}"
    );
    let dir = tempfile::tempdir().unwrap();
    let msg = message(json!({"module": "etcd.core.etcd_certificate", "kind": "ca",
        "ca_cert": dir.path().join("ca.crt"), "ca_key": dir.path().join("ca.key"),
        "validity_days": -1}));
    assert_eq!(
        msg,
        "validity_days: expected an integer from 0 to 4294967295, got -1"
    );
    // An unknown option names the supported ones, aliases with them.
    let msg = message(json!({"module": "etcd.core.etcd_snapshot",
        "endpoints": endpoints, "store": "/tmp/x", "destination": "/tmp/x"}));
    assert!(
        msg.starts_with(
            "Unsupported parameters for (etcd.core.etcd_snapshot) module: destination. \
             Supported parameters include: "
        ),
        "{msg}"
    );
    assert!(
        msg.contains(", store, ") && msg.ends_with(" (dest, root)."),
        "{msg}"
    );
    // A required option.
    let msg = message(json!({"module": "etcd.core.etcd_snapshot", "endpoints": endpoints}));
    assert_eq!(msg, "missing required arguments: store");
    // Aliases: a deprecated one works and says so in Ansible's deprecation warning; a current
    // one (`root`, the old name of `platform_root`) works without.
    let dump = dir.path().join("aliases.json");
    let play = json!([{"hosts": "target", "gather_facts": false, "tasks": [
        {"etcd.core.etcd_lease_info": {"endpoints": endpoints, "keys": true}, "register": "old"},
        {"etcd.core.etcd_platform_info": {"root": dir.path()}, "register": "rooted"},
        {"ansible.builtin.copy": {"content": "{{ rooted | to_json }}", "dest": dump}},
    ]}])
    .to_string();
    let warn = [("ANSIBLE_DEPRECATION_WARNINGS", "true")];
    let run = collection.playbook(&play, LOCAL, &json!({}), &warn, &[]);
    run.assert_ok();
    let shown = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(
        shown.matches("Alias 'keys' is deprecated").count(),
        1,
        "{run}"
    );
    let rooted: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_eq!(rooted["platform"], json!("none"), "{rooted}");
    assert_eq!(rooted["root"], json!(dir.path()), "{rooted}");
    // A required option given as null is missing, not an empty string; an option and its
    // alias that disagree are refused.
    let msg = message(json!({"module": "etcd.core.etcd_data_dir_info", "data_dir": null}));
    assert_eq!(msg, "missing required arguments: data_dir");
    let msg = message(
        json!({"module": "etcd.core.etcd_snapshot", "endpoints": endpoints,
        "store": "/tmp/a", "dest": "/tmp/b"}),
    );
    assert_eq!(
        msg,
        "dest and store name the same option (store); give only one"
    );
    // YAML's own types in a mapping of strings (a date, a number) are taken as their text.
    let labels = dir.path().join("labels.json");
    let play = format!(
        "- hosts: target\n  gather_facts: false\n  tasks:\n    - etcd.core.etcd_snapshot:\n        \
         endpoints: {endpoints}\n        store: {store}\n        labels: {{release: 2024-01-01, n: 2}}\n      \
         register: saved\n    - ansible.builtin.copy: {{content: '{{{{ saved.manifest.labels | to_json }}}}', dest: {labels}}}\n",
        store = dir.path().join("labelled").display(),
        labels = labels.display(),
    );
    collection
        .playbook(&play, LOCAL, &json!({}), &[], &[])
        .assert_ok();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&labels).unwrap()).unwrap();
    assert_eq!(saved["release"], json!("2024-01-01"), "{saved}");
    assert_eq!(saved["n"], json!("2"), "{saved}");
    // A secret is never echoed, even in a refusal of its type.
    let msg = message(
        json!({"module": "etcd.core.etcd_kv_info", "endpoints": endpoints,
        "etcd_key": "/", "password": "hunter2-secret", "limit": "hunter2-secret"}),
    );
    assert!(!msg.contains("hunter2"), "{msg}");

    // A refusal the library hints at: moving aside a restored data dir a member has run on
    // since. The hint is the module option, never `--force`.
    let restored = dir.path().join("restored");
    let peer = format!("http://127.0.0.1:{}", free_port());
    let dump = dir.path().join("ok.json");
    let restore = json!({"module": "etcd.core.etcd_snapshot_restore",
        "snapshot": "{{ saved.object_url }}", "data_dir": restored, "name": "r0",
        "initial_cluster": format!("r0={peer}"), "initial_advertise_peer_urls": [peer]});
    let play = json!([{"hosts": "target", "gather_facts": false, "tasks": [
        {"action": {"module": "etcd.core.etcd_snapshot", "endpoints": endpoints,
            "store": dir.path().join("backups")}, "register": "saved"},
        {"action": restore, "register": "r"},
        {"ansible.builtin.copy": {"content": "{{ saved | to_json }}", "dest": dump}},
    ]}])
    .to_string();
    let run = collection.playbook(&play, LOCAL, &json!({}), &[], &[]);
    assert_eq!(run.code, 0, "{run}");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    // A member ran on it: its WAL grew.
    let wal = std::fs::read_dir(restored.join("member/wal"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().extension().is_some_and(|x| x == "wal"))
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&wal).unwrap();
    bytes.extend_from_slice(&[0u8; 8]);
    std::fs::write(&wal, bytes).unwrap();
    let mut restore = restore;
    restore["snapshot"] = saved["object_url"].clone();
    let mut again = restore.clone();
    again["move_aside"] = json!(true);
    again["initial_cluster_token"] = json!("another");
    let msg = message(again);
    assert!(!msg.contains("--"), "{msg}");
    assert!(msg.ends_with("(force: true)"), "{msg}");
}
