//! No control character from etcd reaches a terminal raw, and binary data is marked: keys,
//! values and names are escaped in table and simple output; `-w json` keeps the exact text.

use etcdops_tests::{Cluster, Security, block_on};

use crate::run;

/// Keys and values that would forge lines, retitle or clear the terminal if printed raw.
/// (No NUL in the key: it is also a command-line argument here.)
const NASTY_KEY: &str = "/t/k\nFAKE-LINE \x1b]0;owned\x07\x1b[2J\rend";
const NASTY_VALUE: &str = "v\nFAKE-VALUE-LINE\x1b[31m\x07\r\0\u{9b}2J\x7f";
/// A text key that looks like base64, next to a binary key whose base64 is the same.
const BASE64_LOOKING: &str = "/t//wCA";
const BINARY_KEY: &[u8] = b"/t/\xff\x00\x80";

fn assert_no_raw_controls(out: &str, context: &str) {
    for c in out.chars() {
        assert!(
            c == '\n' || !c.is_control(),
            "raw control character {c:?} in {context}:\n{out:?}"
        );
    }
    // `--print-value-only` prints a multi-line value on several lines, by design.
    if context.contains("--print-value-only") {
        return;
    }
    for line in out.lines() {
        assert!(
            !line.starts_with("FAKE-"),
            "a key or value forged an output line in {context}:\n{out}"
        );
    }
}

fn nasty_cluster() -> (Cluster, i64) {
    let cluster = Cluster::start(1, Security::Plain);
    let lease = block_on(async {
        let mut client = cluster.client().await;
        let lease = client.lease_grant(600, None).await?.id();
        let options = etcd_client::PutOptions::new().with_lease(lease);
        client.put(NASTY_KEY, NASTY_VALUE, Some(options)).await?;
        client.put(BASE64_LOOKING, "text", None).await?;
        client
            .put(BINARY_KEY.to_vec(), b"\xfe\xff".to_vec(), None)
            .await?;
        Ok::<_, etcd_client::Error>(lease)
    })
    .unwrap();
    (cluster, lease)
}

#[test]
fn keys_and_values_cannot_forge_lines_or_drive_the_terminal() {
    let (cluster, lease) = nasty_cluster();
    let lease_hex = format!("{lease:x}");
    let commands: Vec<Vec<&str>> = vec![
        vec!["get", "/t/", "--prefix"],
        vec!["get", "/t/", "--prefix", "-w", "table"],
        vec!["get", "/t/", "--prefix", "--keys-only"],
        vec!["get", "/t/", "--prefix", "--print-value-only"],
        vec!["history", NASTY_KEY],
        vec!["history", NASTY_KEY, "-w", "simple"],
        vec!["watch", "/t/", "--prefix", "--rev", "1", "--timeout", "1s"],
        vec!["lease", "timetolive", &lease_hex, "--keys"],
        vec!["lease", "timetolive", &lease_hex, "--keys", "-w", "simple"],
        vec!["lease", "list"],
        vec!["member", "list"],
        vec!["endpoint", "status"],
    ];
    for command in &commands {
        let out = run(&cluster, command);
        out.expect_code(0);
        assert_no_raw_controls(&out.stdout, &format!("{command:?} stdout"));
        assert_no_raw_controls(&out.stderr, &format!("{command:?} stderr"));
    }

    // Simple output: one line per key and one per value; the escapes are visible.
    let get = run(&cluster, &["get", NASTY_KEY]);
    assert_eq!(
        get.stdout,
        "/t/k\\nFAKE-LINE \\x1b]0;owned\\x07\\x1b[2J\\rend\nv\\nFAKE-VALUE-LINE\\x1b[31m\\x07\\r\\0\\x9b2J\\x7f\n",
        "{get}"
    );
    // A value printed on its own keeps its lines but not its escape sequences.
    let value = run(&cluster, &["get", NASTY_KEY, "--print-value-only"]);
    assert_eq!(
        value.stdout, "v\nFAKE-VALUE-LINE\\x1b[31m\\x07\\r\\0\\x9b2J\\x7f\n",
        "{value}"
    );
    // A key that is not a member of the output must not end it either: errors too.
    let missing = run(&cluster, &["k8s", "get", "/registry/\x1b]0;x\x07nothing"]);
    assert_no_raw_controls(&missing.stderr, "k8s get error");

    // JSON keeps the exact text, every control character escaped (DEL and C1 too).
    let json = run(&cluster, &["get", NASTY_KEY, "-w", "json"]);
    assert_no_raw_controls(&json.stdout, "get -w json");
    let history = run(&cluster, &["history", NASTY_KEY, "-w", "json"]);
    assert_no_raw_controls(&history.stdout, "history -w json");
    assert_eq!(json.json()["kvs"][0]["key"], NASTY_KEY);
    assert_eq!(json.json()["kvs"][0]["value"], NASTY_VALUE);
}

#[test]
fn binary_keys_are_marked_and_differ_from_text_that_looks_like_base64() {
    let (cluster, _) = nasty_cluster();
    let keys = run(&cluster, &["get", "/t/", "--prefix", "--keys-only"]);
    keys.expect_code(0);
    let lines: Vec<&str> = keys.stdout.lines().filter(|l| !l.is_empty()).collect();
    // The text key as it is; the binary key (invalid UTF-8) marked as base64.
    assert!(lines.contains(&BASE64_LOOKING), "{keys}");
    assert!(lines.contains(&"base64:L3Qv/wCA"), "{keys}");
    let value = run(&cluster, &["get", "/t/", "--prefix"]);
    assert!(value.stdout.contains("\nbase64:/v8=\n"), "{value}");
    // JSON says the same with its encoding fields.
    let json = run(&cluster, &["get", "/t/", "--prefix", "-w", "json"]);
    let kvs = json.json()["kvs"].as_array().unwrap().clone();
    let binary = kvs.iter().find(|kv| kv["key"] == "L3Qv/wCA").unwrap();
    assert_eq!(binary["key_encoding"], "base64");
    assert_eq!(binary["value_encoding"], "base64");
    let text = kvs.iter().find(|kv| kv["key"] == BASE64_LOOKING).unwrap();
    assert_eq!(text["key_encoding"], "text");
}

#[test]
fn kubernetes_object_fields_are_escaped() {
    let cluster = Cluster::start(1, Security::Plain);
    let object = serde_json::json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": "cm\n  kind: Secret\u{1b}[2J",
            "namespace": "default",
            "uid": "u\u{7}",
        },
        "data": {"k": "v\u{1b}]0;t\u{7}"},
    });
    cluster.put("/registry/configmaps/default/cm\x1b[1m", object.to_string());
    let out = run(
        &cluster,
        &["k8s", "get", "/registry/configmaps/", "--prefix"],
    );
    out.expect_code(0);
    assert_no_raw_controls(&out.stdout, "k8s get");
    assert!(
        !out.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("kind: Secret")),
        "a name forged a field line:\n{out}"
    );
    assert!(out.stdout.contains("cm\\x1b[1m"), "{out}");
}
