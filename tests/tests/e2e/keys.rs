//! Read-only key access: paged get, history, watch; Secrets redacted by default.

use etcdops_tests::{Cluster, Security};

use crate::{assert_clear_error, etcdctl_json, run};

#[test]
fn get_pages_through_a_prefix_at_one_revision_and_agrees_with_etcdctl() {
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("/registry/configmaps/ns/cm-", 2500);
    cluster.put("/other", "x");

    let all = run(
        &cluster,
        &[
            "get",
            "/registry/configmaps/",
            "--prefix",
            "--keys-only",
            "-w",
            "json",
        ],
    );
    all.expect_code(0);
    let doc = all.json();
    let kvs = doc["kvs"].as_array().unwrap();
    assert_eq!(kvs.len(), 2500, "every key, across pages");
    assert_eq!(doc["returned"], 2500);
    assert_eq!(doc["count"], 2500);
    assert_eq!(doc["more"], false);
    let keys: Vec<&str> = kvs.iter().map(|k| k["key"].as_str().unwrap()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "key order");
    assert!(kvs.iter().all(|k| k["value"].is_null()));

    let endpoints = cluster.endpoints();
    let (_, theirs) = etcdctl_json(
        &cluster,
        &[
            "--endpoints",
            &endpoints,
            "get",
            "/registry/configmaps/",
            "--prefix",
            "--keys-only",
            "-w",
            "json",
        ],
    );
    let count = run(
        &cluster,
        &[
            "get",
            "/registry/configmaps/",
            "--prefix",
            "--count-only",
            "-w",
            "json",
        ],
    )
    .json();
    assert_eq!(count["count"], theirs["count"]);

    let limited = run(
        &cluster,
        &[
            "get",
            "/registry/configmaps/",
            "--prefix",
            "--limit",
            "10",
            "-w",
            "json",
        ],
    )
    .json();
    assert_eq!(limited["kvs"].as_array().unwrap().len(), 10);
    assert_eq!(limited["more"], true);
    assert_eq!(limited["kvs"][0]["value"], "value-0");

    // An older revision sees fewer keys; sorting by modification, newest first.
    let early = doc["revision"].as_i64().unwrap() - 2000;
    let old = run(
        &cluster,
        &[
            "get",
            "/registry/configmaps/",
            "--prefix",
            "--count-only",
            "--rev",
            &early.to_string(),
            "-w",
            "json",
        ],
    )
    .json();
    assert!(old["count"].as_i64().unwrap() < 2500, "{old}");
    let newest = run(
        &cluster,
        &[
            "get",
            "/",
            "--prefix",
            "--sort-by",
            "MODIFY",
            "--order",
            "DESCEND",
            "--limit",
            "1",
            "-w",
            "json",
        ],
    )
    .json();
    assert_eq!(newest["kvs"][0]["key"], "/other");

    // Simple output: key, value lines as etcdctl prints them.
    let simple = run(&cluster, &["get", "/other"]);
    assert_eq!(simple.stdout, "/other\nx\n");
    let value_only = run(&cluster, &["get", "/other", "--print-value-only"]);
    assert_eq!(value_only.stdout, "x\n");

    // Values larger in total than gRPC's default 4 MiB message: pages shrink, nothing fails.
    cluster.put_random("/big/", 12, 1_000_000);
    let big = run(&cluster, &["get", "/big/", "--prefix", "-w", "json"]);
    big.expect_code(0);
    let big = big.json();
    assert_eq!(big["kvs"].as_array().unwrap().len(), 12);
    assert!(
        big["kvs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["value_size"] == 1_000_000)
    );
}

#[test]
fn secrets_stay_hidden_unless_asked_and_binary_values_are_base64() {
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put(
        "/registry/secrets/default/db-password",
        "hunter2-Secret-Value",
    );
    cluster.put("/registry/configmaps/default/bin", vec![0u8, 159, 146, 150]);
    let hidden = run(&cluster, &["get", "/registry/", "--prefix", "-w", "json"]);
    hidden.expect_code(0);
    assert!(!hidden.stdout.contains("hunter2-Secret-Value"), "{hidden}");
    let doc = hidden.json();
    let secret = doc["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "/registry/secrets/default/db-password")
        .unwrap();
    assert_eq!(secret["value_encoding"], "redacted");
    let binary = doc["kvs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "/registry/configmaps/default/bin")
        .unwrap();
    assert_eq!(binary["value_encoding"], "base64");
    assert_eq!(binary["value"], "AJ+Slg==");

    let shown = run(
        &cluster,
        &["get", "/registry/secrets/", "--prefix", "--show-secrets"],
    );
    assert!(shown.stdout.contains("hunter2-Secret-Value"), "{shown}");
    let history = run(
        &cluster,
        &["history", "/registry/secrets/default/db-password"],
    );
    history.expect_code(0);
    assert!(
        !history.stdout.contains("hunter2-Secret-Value"),
        "{history}"
    );
    // The lines a script reads: a redacted version fails the command, as `get`'s do, so
    // that the notice is never taken for the value with exit code 0.
    let simple = run(
        &cluster,
        &[
            "history",
            "/registry/secrets/default/db-password",
            "-w",
            "simple",
        ],
    );
    simple.expect_code(1);
    assert!(!simple.stdout.contains("hunter2-Secret-Value"), "{simple}");
    assert!(simple.stderr.contains("redacted"), "{simple}");
}

#[test]
fn history_shows_every_version_until_compaction_newest_first() {
    let cluster = Cluster::start(3, Security::Plain);
    let revisions: Vec<i64> = (1..=10)
        .map(|i| cluster.put("/app/config", format!("v{i}")))
        .collect();
    let full = run(&cluster, &["history", "/app/config", "-w", "json"]);
    full.expect_code(0);
    let doc = full.json();
    let events = doc["events"].as_array().unwrap();
    assert_eq!(events.len(), 10, "{doc}");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["kind"], "put");
        assert_eq!(event["version"], 10 - i as i64);
        assert_eq!(event["value"], format!("v{}", 10 - i));
        assert_eq!(event["revision"], revisions[9 - i]);
    }
    assert!(doc["compacted_before"].is_null());

    let deleted_at = cluster.delete("/app/config");
    run(&cluster, &["compact", &revisions[4].to_string()]).expect_code(0);
    let after = run(&cluster, &["history", "/app/config", "-w", "json"]).json();
    let events = after["events"].as_array().unwrap();
    assert_eq!(events[0]["kind"], "delete");
    assert_eq!(events[0]["revision"], deleted_at);
    assert_eq!(events.len(), 7, "versions 5..10 and the deletion: {after}");
    assert_eq!(events[6]["value"], "v5");
    assert_eq!(after["compacted_before"], revisions[4]);
    let table = run(&cluster, &["history", "/app/config"]);
    assert!(table.stdout.contains("COMPACTED"), "{table}");
}

#[test]
fn watch_ends_on_its_revision_or_time_bound() {
    let cluster = Cluster::start(3, Security::Plain);
    let first = cluster.put("/w/a", "1");
    cluster.put("/w/b", "2");
    cluster.delete("/w/a");
    let last = cluster.put("/w/c", "3");
    cluster.put("/w/d", "after the bound");

    let bounded = run(
        &cluster,
        &[
            "watch",
            "/w/",
            "--prefix",
            "--rev",
            &first.to_string(),
            "--until-rev",
            &last.to_string(),
            "-w",
            "json",
        ],
    );
    bounded.expect_code(0);
    let doc = bounded.json();
    let kinds: Vec<(&str, &str)> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["key"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("put", "/w/a"),
            ("put", "/w/b"),
            ("delete", "/w/a"),
            ("put", "/w/c")
        ]
    );
    assert_eq!(doc["summary"]["ended_by"], "until_revision");

    // Nothing happens on this key: the watch ends at its timeout with no events.
    let quiet = run(
        &cluster,
        &["watch", "/nothing", "--timeout", "500ms", "-w", "json"],
    );
    quiet.expect_code(0);
    let doc = quiet.json();
    assert_eq!(doc["events"].as_array().unwrap().len(), 0);
    assert_eq!(doc["summary"]["ended_by"], "timeout");

    // Without a bound the watch runs until Ctrl-C (compat_kv.rs); without a key it cannot.
    let keyless = run(&cluster, &["watch"]);
    assert_clear_error(&keyless, "bad number of arguments");
}
