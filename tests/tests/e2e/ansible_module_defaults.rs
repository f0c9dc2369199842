//! `module_defaults` for the group `group/etcd.core.etcd` as amazon.aws and kubernetes.core
//! users write them: store options set once (play or block level) apply to every module of
//! the group, and a module that reads no store ignores them; the same option written in such
//! a module's task, or a misspelled option in the defaults, is still refused.

use etcdops_tests::{Cluster, Collection, PlaybookRun, Security};
use serde_json::{Value, json};

const LOCAL: &str = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";

/// A play with `defaults` for the group at play level and `block_defaults` on a block
/// holding `block_tasks`, after `tasks`.
fn play(defaults: Value, tasks: Value, block_defaults: Value, block_tasks: Value) -> String {
    json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": defaults},
        "tasks": [
            {"block": tasks},
            {
                "block": block_tasks,
                "module_defaults": {"group/etcd.core.etcd": block_defaults},
            },
        ],
    }])
    .to_string()
}

fn failed_task(run: &PlaybookRun) -> &str {
    run.stdout
        .split("TASK [")
        .find(|t| t.contains("FAILED!"))
        .unwrap_or("")
}

#[test]
fn store_options_in_a_groups_module_defaults_reach_store_modules_and_no_other() {
    if etcdops_tests::skip_on_etcd_3_4(
        "tests the action plugin's and the shim's option checks; etcd only answers reads",
    ) {
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put("/defaults/k", "v");
    let collection = Collection::install();
    let store = cluster.dir().join("backups");
    std::fs::create_dir_all(&store).unwrap();
    let store_defaults = json!({
        "endpoints": cluster.client_urls(),
        "allow_http": true,
        "s3_endpoint": "http://127.0.0.1:1",
        "s3_path_style": true,
        "s3_region": "us-east-1",
    });
    let reads = json!([
        {"etcd.core.etcd_kv_info": {"etcd_key": "/defaults/k"}, "register": "kv"},
        {"etcd.core.etcd_cluster_info": {"fail_on": ["unhealthy"]}},
        {"etcd.core.etcd_lease_info": {}},
        {"etcd.core.etcd_member": {"member": "gone-member", "state": "absent"}},
        // A local store: the S3 options do not matter to it, but it takes them.
        {"etcd.core.etcd_snapshot": {"store": store}, "register": "saved"},
        {"ansible.builtin.assert": {"that": [
            "kv.kvs | length == 1",
            "saved is changed",
        ]}},
    ]);
    let playbook = play(
        store_defaults.clone(),
        reads.clone(),
        store_defaults.clone(),
        reads,
    );
    let run = collection.playbook(&playbook, LOCAL, &json!({}), &[], &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("failed=0"), "{run}");

    // A store option written in the task of a module that reads no store: refused.
    let explicit = play(
        json!({"endpoints": cluster.client_urls()}),
        json!([{"etcd.core.etcd_kv_info": {"etcd_key": "/defaults/k", "allow_http": true}}]),
        json!({}),
        json!([]),
    );
    let run = collection.playbook(&explicit, LOCAL, &json!({}), &[], &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(
        failed_task(&run)
            .contains("Unsupported parameters for (etcd.core.etcd_kv_info) module: allow_http"),
        "{run}"
    );

    // A store option in module_defaults for that very module (not its group): refused, as
    // written in its task.
    let for_the_module = json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {
            "group/etcd.core.etcd": {"endpoints": cluster.client_urls()},
            "etcd.core.etcd_kv_info": {"allow_http": true},
        },
        "tasks": [{"etcd.core.etcd_kv_info": {"etcd_key": "/defaults/k"}}],
    }])
    .to_string();
    let run = collection.playbook(&for_the_module, LOCAL, &json!({}), &[], &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(
        failed_task(&run)
            .contains("Unsupported parameters for (etcd.core.etcd_kv_info) module: allow_http"),
        "{run}"
    );

    // A misspelled store option in a block's module_defaults: refused by every module.
    let typo = play(
        json!({"endpoints": cluster.client_urls()}),
        json!([]),
        json!({"endpoints": cluster.client_urls(), "alow_http": true}),
        json!([{"etcd.core.etcd_kv_info": {"etcd_key": "/defaults/k"}}]),
    );
    let run = collection.playbook(&typo, LOCAL, &json!({}), &[], &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(failed_task(&run).contains("module: alow_http"), "{run}");
}

/// Finding: an alias of one module's option that is another module's own option name captures
/// that option from a group's `module_defaults`: `dest` (etcd_snapshot_copy's destination) is
/// also an alias of etcd_snapshot's `store`, and `prefix` (etcd_kv_info's switch) a deprecated
/// alias of etcd_encryption_info's `etcd_prefix`. With `store`, `dest` and `prefix` set once
/// for the group, etcd_snapshot fails ("dest and store name the same option (store); give
/// only one", though its task gave neither) and etcd_encryption_info scans the prefix `/True`.
/// Expected, as for any other option only a group's defaults set: the module whose own
/// option it is takes it, the others ignore it.
#[test]
fn a_groups_defaults_reach_an_option_by_its_name_not_by_another_modules_alias() {
    if etcdops_tests::skip_on_etcd_3_4(
        "tests the action plugin's option checks; etcd only answers reads",
    ) {
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    // One Secret as kube-apiserver's aescbc provider stores it, so the audit has something.
    cluster.put(
        "/registry/secrets/default/s1",
        "k8s:enc:aescbc:v1:key1:0123456789abcdef0123456789abcdef",
    );
    let collection = Collection::install();
    let store = cluster.dir().join("backups");
    let copies = cluster.dir().join("copies");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::create_dir_all(&copies).unwrap();
    let defaults = json!({
        "endpoints": cluster.client_urls(),
        "store": store,
        "dest": copies,
        "prefix": true,
    });
    let tasks = json!([
        {"etcd.core.etcd_snapshot": {}, "register": "saved", "ignore_errors": true},
        {"etcd.core.etcd_encryption_info": {}, "register": "audit", "ignore_errors": true},
        {"ansible.builtin.assert": {"that": [
            "saved is changed",
            "audit is not failed",
            "'under /registry' in audit.msg",
        ]}},
    ]);
    let playbook = play(defaults, tasks, json!({}), json!([]));
    let run = collection.playbook(&playbook, LOCAL, &json!({}), &[], &[]);
    assert_eq!(run.code, 0, "{}\n{run}", failed_task(&run));
    let saved = std::fs::read_dir(&store).unwrap().count();
    assert_eq!(saved, 1, "the backup belongs in the group's store:\n{run}");
    assert_eq!(
        std::fs::read_dir(&copies).unwrap().count(),
        0,
        "nothing was copied:\n{run}"
    );
}
