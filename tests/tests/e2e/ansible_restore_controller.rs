//! Issue 21, bug 7: store reads stay on the controller. `etcd_snapshot_copy` copies what a
//! restore reads (for a point in time: the full backup and its delta segments) into a local
//! directory, verified, idempotent, check mode copying nothing; `etcd_snapshot_restore` with
//! `remote_src: false` uploads it to the target and restores from there. The restore role does
//! both for an object store: the members' tasks get only a local path, no store option, and
//! the restored cluster serves the state at the revision asked for.

use etcdops_tests::{Cluster, Collection, S3Server, Security, SupervisedCluster, args, block_on};
use serde_json::{Value, json};

use crate::backup_run::{BackupRun, S3_ENV, assert_restored, keys_at, write_changes};

/// Puts `rounds` batches of keys under `/ctl/`; the revision after each batch.
fn put_rounds(urls: &[String], rounds: usize) -> Vec<i64> {
    block_on(async {
        let mut client = etcd_client::Client::connect(urls.to_vec(), None).await?;
        let mut after = Vec::new();
        for round in 0..rounds {
            let mut revision = 0;
            for i in 0..5 {
                let put = client
                    .put(format!("/ctl/k{i}"), format!("{round}-{i}"), None)
                    .await?;
                revision = put.header().map_or(0, |h| h.revision());
            }
            after.push(revision);
        }
        Ok::<_, etcd_client::Error>(after)
    })
    .expect("write keys")
}

/// Every key and value `urls` serve under `/ctl/` at `revision` (now when `None`).
fn ctl_keys(urls: &[String], revision: Option<i64>) -> Vec<(String, String)> {
    block_on(async {
        let mut client = etcd_client::Client::connect(urls.to_vec(), None).await?;
        let mut options = etcd_client::GetOptions::new().with_prefix();
        if let Some(revision) = revision {
            options = options.with_revision(revision);
        }
        let got = client.get("/ctl/", Some(options)).await?;
        Ok::<_, etcd_client::Error>(
            got.kvs()
                .iter()
                .map(|kv| {
                    (
                        kv.key_str().unwrap().to_string(),
                        kv.value_str().unwrap().to_string(),
                    )
                })
                .collect(),
        )
    })
    .expect("read keys")
}

/// The `module_args` of each host's result of task `name` in `-vvv` output.
fn member_args(stdout: &str, name: &str) -> Vec<Value> {
    let header = format!(": {name}]");
    let start = stdout
        .find(&header)
        .unwrap_or_else(|| panic!("no task '{name}'"));
    let rest = &stdout[start..];
    let end = rest[1..].find("\nTASK [").map_or(rest.len(), |i| i + 1);
    let mut found = Vec::new();
    let mut lines = rest[..end].lines();
    while let Some(line) = lines.next() {
        let Some(open) = line.find("] => {") else {
            continue;
        };
        if !(line.starts_with("ok: [") || line.starts_with("changed: [")) {
            continue;
        }
        // The result is one JSON object, pretty-printed over the lines up to a lone `}`.
        let mut text = line[open + 5..].to_string();
        if serde_json::from_str::<Value>(&text).is_err() {
            for more in lines.by_ref() {
                text.push('\n');
                text.push_str(more);
                if more == "}" {
                    break;
                }
            }
        }
        let result: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        found.push(result["invocation"]["module_args"].clone());
    }
    found
}

#[test]
fn restore_role_reads_an_object_store_only_on_the_controller() {
    let cluster = SupervisedCluster::start(3);
    let urls = cluster.client_urls();
    let s3 = S3Server::start();
    s3.create_bucket("dr-store");
    let store = "s3://dr-store/etcd";
    let s3_flags = [
        "--s3-endpoint",
        &s3.endpoint,
        "--allow-http",
        "--s3-path-style",
    ];
    let backup = BackupRun::start_with(
        args(&["--endpoints", &urls.join(",")]),
        cluster.dir(),
        store,
        &s3_flags,
        &S3_ENV,
    );
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let revisions = put_rounds(&urls, 3);
    let target = revisions[1];
    backup.wait_published(*revisions.last().unwrap());
    backup.stop();
    let expected = ctl_keys(&urls, Some(target));

    let collection = Collection::install();
    let inventory: String = cluster.members.iter().map(|m| m.inventory_line()).collect();
    let mut vars = cluster.service_vars();
    vars["restore_store"] = json!(store);
    vars["restore_to_revision"] = json!(target);
    vars["restore_s3_endpoint"] = json!(s3.endpoint);
    vars["restore_s3_path_style"] = json!(true);
    vars["restore_allow_http"] = json!(true);
    vars["restore_health_delay"] = json!(1);
    // Each member restored from its upload (a path in the task's remote tmp dir).
    let that: Vec<String> = ["restore_planned", "restore_result"]
        .iter()
        .map(|r| format!("{r}.plan.store is search('/ansible-tmp-')"))
        .collect();
    let playbook = json!([{
        "hosts": "all",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": urls}},
        "roles": [{"role": "etcd.core.restore", "vars": vars}],
        "post_tasks": [
            {"ansible.builtin.assert": {"that": that}},
            {"ansible.builtin.stat": {"path": "{{ restore_controller_tmp.path }}"},
             "delegate_to": "localhost", "run_once": true, "register": "copy_dir"},
            {"ansible.builtin.assert": {"that": ["not copy_dir.stat.exists"]}, "run_once": true},
        ],
    }])
    .to_string();
    // The store's credentials are in the controller's environment only.
    let played = collection.playbook(&playbook, &inventory, &json!({}), &S3_ENV, &["-vvv"]);
    assert_eq!(played.code, 0, "{played}");
    // The plan and the result name the store and the revision asked for, not the
    // controller's temporary copy (gone when the run ends).
    for said in [
        format!("restore every member from {store} at revision {target}"),
        format!("from {store} at revision {target}, revision "),
    ] {
        assert!(played.stdout.contains(&said), "no '{said}':\n{played}");
    }
    // What each member's tasks were given: only a path (uploaded by the action plugin), no
    // store URL, no store option.
    for task in [
        "Check the restore on every member before anything is stopped",
        "Restore this member",
    ] {
        let args = member_args(&played.stdout, task);
        assert_eq!(args.len(), 3, "{task}: {played}");
        for args in args {
            let snapshot = args["snapshot"].as_str().unwrap();
            assert!(snapshot.contains("/ansible-tmp-"), "{task}: {args}");
            for option in ["s3_endpoint", "s3_region", "allow_http", "s3_path_style"] {
                assert!(args[option].is_null(), "{task}: {option} sent: {args}");
            }
        }
    }
    assert!(!played.stdout.contains("Very-Secret-Test-Key"), "{played}");
    assert_eq!(
        ctl_keys(&urls, None),
        expected,
        "the state at revision {target}"
    );

    // The newest complete backup (the full one taken before the writes), copied into a
    // directory given, which stays. The store options are set once in the group's
    // module_defaults, as the collection README shows (one play header for the backup and the
    // restore), with no restore_s3_* variable: the role's own defaults must not override them.
    let kept = tempfile::tempdir().unwrap();
    for var in [
        "restore_to_revision",
        "restore_s3_endpoint",
        "restore_s3_path_style",
        "restore_allow_http",
    ] {
        vars.as_object_mut().unwrap().remove(var);
    }
    vars["restore_controller_dir"] = json!(kept.path());
    let playbook = json!([{
        "hosts": "all",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {
            "endpoints": urls,
            "s3_endpoint": s3.endpoint,
            "s3_path_style": true,
            "allow_http": true,
        }},
        "roles": [{"role": "etcd.core.restore", "vars": vars}],
    }])
    .to_string();
    let newest = collection.playbook(&playbook, &inventory, &json!({}), &S3_ENV, &["-vvv"]);
    assert_eq!(newest.code, 0, "{newest}");
    assert!(
        newest
            .stdout
            .contains(&format!("restore every member from {store}/etcd-")),
        "the plan names the backup in the store:\n{newest}"
    );
    for args in member_args(&newest.stdout, "Restore this member") {
        assert!(
            args["snapshot"].as_str().unwrap().contains("/ansible-tmp-"),
            "{args}"
        );
    }
    assert!(!expected.is_empty());
    assert_eq!(
        ctl_keys(&urls, None),
        [],
        "the full backup taken before the writes"
    );
    // The backup with its manifest (and its chain, as etcdops snapshot copy copies it).
    let copied: Vec<String> = walk(kept.path());
    let full = copied
        .iter()
        .find(|f| f.ends_with(".db.zst"))
        .unwrap_or_else(|| panic!("{copied:?}"));
    assert!(
        copied.contains(&format!("{full}.manifest.json")),
        "{copied:?}"
    );
}

/// The files under `dir`, relative paths.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(
                walk(&path)
                    .into_iter()
                    .map(|f| format!("{}/{f}", entry.file_name().to_string_lossy())),
            );
        } else {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn a_copied_chain_restores_exactly_its_revision_from_the_controller() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("ctl-store");
    let backup = BackupRun::start(&cluster, &store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let revisions = write_changes(&cluster, "ctl", 3);
    let target = revisions[1];
    backup.wait_published(*revisions.last().unwrap());
    backup.stop();
    let expected = keys_at(&cluster, Some(target));

    let copy_dir = tempfile::tempdir().unwrap();
    let dest = copy_dir.path().join("copy");
    let result_file = copy_dir.path().join("restored.json");
    let planned = Cluster::plan_restore(1, "c");
    let member = &planned.members[0];
    let copy = |register: &str| {
        json!({
            "etcd.core.etcd_snapshot_copy": {
                "store": store, "to_revision": target, "dest": dest,
            },
            "register": register,
        })
    };
    let mut check = copy("predicted");
    check["check_mode"] = json!(true);
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [
            check,
            {"ansible.builtin.stat": {"path": dest}, "register": "after_check"},
            copy("copied"),
            copy("again"),
            {"ansible.builtin.assert": {"that": [
                "predicted.changed",
                "predicted.report.copied == 1",
                "predicted.report.segments_copied > 0",
                "not after_check.stat.exists",
                "copied.changed",
                "copied.report.segments_copied == predicted.report.segments_copied",
                "copied.snapshot == '{dest}'".replace("{dest}", &dest.display().to_string()),
                "not again.changed",
                "again.report.already_present == 1",
            ]}},
            {
                "etcd.core.etcd_snapshot_restore": {
                    "snapshot": "{{ copied.snapshot }}",
                    "remote_src": false,
                    "to_revision": target,
                    "data_dir": member.data_dir,
                    "name": member.name,
                    "initial_cluster": planned.initial_cluster(),
                    "initial_cluster_token": planned.token(),
                    "initial_advertise_peer_urls": [member.peer_url],
                },
                "register": "restored",
            },
            {"ansible.builtin.stat": {"path": "{{ restored.plan.store }}"},
             "register": "uploaded"},
            {"ansible.builtin.assert": {"that": [
                "restored.changed",
                "restored.revision == {target}".replace("{target}", &target.to_string()),
                // The restore read the upload, which the task removed when it ended.
                "restored.plan.store != copied.snapshot",
                "restored.plan.store is search('/ansible-tmp-')",
                "not uploaded.stat.exists",
            ]}},
            {"ansible.builtin.copy": {"content": "{{ restored | to_json }}", "dest": result_file}},
        ],
    }])
    .to_string();
    let collection = Collection::install();
    let played = collection.playbook(
        &playbook,
        "target ansible_connection=local\n",
        &json!({}),
        &[],
        &[],
    );
    assert_eq!(played.code, 0, "{played}");
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(&result_file).unwrap()).unwrap();
    let mut planned = planned;
    planned.start_restored();
    assert_restored(&planned, &expected, target, &result);
}
