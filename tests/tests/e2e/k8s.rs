//! `etcdops k8s ...` against real etcd holding values written the way kube-apiserver writes
//! them: plaintext JSON, a protobuf `k8s\0` envelope, and aescbc-encrypted values made here
//! with the real algorithm (AES-256-CBC, PKCS#7, random IV in front), read live and from a
//! snapshot saved with `etcdops snapshot save`. Plus the EncryptionConfiguration steps.

use std::os::unix::fs::PermissionsExt;

use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use etcdops_tests::{Cluster, Run, Security, args, etcdops};

use crate::{assert_clear_error, run, save_snapshot};

type Encryptor = cbc::Encryptor<aes::Aes256>;
type Decryptor = cbc::Decryptor<aes::Aes256>;

/// Plaintext Secret data planted in the cluster: never to appear in any output.
const SECRET_TEXT: &str = "hunter2-PLAINTEXT";
/// base64 of `SECRET_TEXT`, as a JSON Secret stores it.
const SECRET_B64: &str = "aHVudGVyMi1QTEFJTlRFWFQ=";
const KEY1: [u8; 32] = [0x42; 32];

/// kube-apiserver's aescbc provider: `k8s:enc:aescbc:v1:<name>:` + IV + AES-256-CBC(PKCS#7).
fn aescbc(key_name: &str, key: &[u8; 32], plaintext: &[u8]) -> Vec<u8> {
    let mut iv = [0u8; 16];
    getrandom::fill(&mut iv).unwrap();
    let ciphertext =
        Encryptor::new(key.into(), &iv.into()).encrypt_padded_vec_mut::<Pkcs7>(plaintext);
    let mut out = format!("k8s:enc:aescbc:v1:{key_name}:").into_bytes();
    out.extend_from_slice(&iv);
    out.extend_from_slice(&ciphertext);
    // The round trip proves the envelope is what the provider reads back.
    let prefix = format!("k8s:enc:aescbc:v1:{key_name}:").len();
    let (iv, body) = out[prefix..].split_at(16);
    let back = Decryptor::new(key.into(), iv.into())
        .decrypt_padded_vec_mut::<Pkcs7>(body)
        .unwrap();
    assert_eq!(back, plaintext);
    out
}

fn pb_field(field: u8, data: &[u8]) -> Vec<u8> {
    let mut out = vec![(field << 3) | 2];
    let mut len = data.len();
    while len >= 0x80 {
        out.push((len as u8) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(data);
    out
}

/// A Secret as kube-apiserver stores it in protobuf: `k8s\0` + runtime.Unknown{typeMeta,
/// raw = Secret{metadata{name, namespace}, data}}.
fn protobuf_secret(namespace: &str, name: &str) -> Vec<u8> {
    let meta = [
        pb_field(1, name.as_bytes()),
        pb_field(3, namespace.as_bytes()),
    ]
    .concat();
    let entry = [
        pb_field(1, b"password"),
        pb_field(2, SECRET_TEXT.as_bytes()),
    ]
    .concat();
    let object = [
        pb_field(1, &meta),
        pb_field(2, &entry),
        pb_field(3, b"Opaque"),
    ]
    .concat();
    let type_meta = [pb_field(1, b"v1"), pb_field(2, b"Secret")].concat();
    let unknown = [pb_field(1, &type_meta), pb_field(2, &object)].concat();
    [b"k8s\0".to_vec(), unknown].concat()
}

fn json_secret(namespace: &str, name: &str) -> String {
    format!(
        r#"{{"kind":"Secret","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"{namespace}","uid":"u-1"}},"data":{{"password":"{SECRET_B64}"}},"type":"Opaque"}}"#
    )
}

/// Plants a kubeadm-like set of Secrets under `prefix`: two plaintext (JSON, protobuf), four
/// encrypted with aescbc key `key1` (one of them plaintext before), one deleted.
fn plant(cluster: &Cluster, prefix: &str) {
    cluster.put(
        &format!("{prefix}/secrets/default/plain-json"),
        json_secret("default", "plain-json"),
    );
    cluster.put(
        &format!("{prefix}/secrets/kube-system/plain-proto"),
        protobuf_secret("kube-system", "plain-proto"),
    );
    for i in 1..=3 {
        let name = format!("enc-{i}");
        cluster.put(
            &format!("{prefix}/secrets/prod/{name}"),
            aescbc("key1", &KEY1, &protobuf_secret("prod", &name)),
        );
    }
    let rewritten = format!("{prefix}/secrets/prod/rewritten");
    cluster.put(&rewritten, json_secret("prod", "rewritten"));
    cluster.put(
        &rewritten,
        aescbc("key1", &KEY1, &protobuf_secret("prod", "rewritten")),
    );
    let gone = format!("{prefix}/secrets/prod/deleted");
    cluster.put(&gone, json_secret("prod", "deleted"));
    cluster.delete(&gone);
    cluster.put(
        &format!("{prefix}/configmaps/default/settings"),
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"default"},"data":{"mode":"fast"}}"#,
    );
}

fn assert_no_secret_data(run: &Run) {
    for needle in [SECRET_TEXT, SECRET_B64] {
        assert!(
            !run.stdout.contains(needle) && !run.stderr.contains(needle),
            "Secret data in the output:\n{run}"
        );
    }
}

/// The audit of `plant`'s Secrets, wherever it was read from.
fn assert_planted_report(run: &Run, prefix: &str) {
    run.expect_code(0);
    assert_no_secret_data(run);
    let report = run.json();
    assert_eq!(report["prefix"], prefix, "{run}");
    assert_eq!(report["prefix_detected"], true, "{run}");
    assert_eq!(report["total"], 6, "{run}");
    assert_eq!(report["encrypted"], 4, "{run}");
    assert_eq!(report["plaintext"], 2, "{run}");
    assert_eq!(report["all_encrypted"], false, "{run}");
    let keys = report["keys"].as_array().unwrap();
    assert_eq!(keys[0]["provider"], "aescbc", "{run}");
    assert_eq!(keys[0]["key_name"], "key1", "{run}");
    assert_eq!(keys[0]["count"], 4, "{run}");
    let plaintext: Vec<(String, String, String)> = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["namespace"].as_str().unwrap().to_string(),
                o["name"].as_str().unwrap().to_string(),
                o["format"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        plaintext,
        [
            ("default".into(), "plain-json".into(), "json".into()),
            (
                "kube-system".into(),
                "plain-proto".into(),
                "protobuf".into()
            ),
        ],
        "{run}"
    );
}

#[test]
fn encryption_status_live_reports_providers_keys_and_plaintext_objects() {
    let cluster = Cluster::start(1, Security::Plain);
    plant(&cluster, "/registry");

    let live = run(&cluster, &["k8s", "encryption-status", "-w", "json"]);
    assert_planted_report(&live, "/registry");
    assert_eq!(live.json()["offline"], false);

    // The table names the plaintext objects and the key.
    let table = run(&cluster, &["k8s", "encryption-status"]);
    table.expect_code(0);
    assert_no_secret_data(&table);
    for needle in [
        "aescbc key key1",
        "plain-json",
        "kube-system",
        "PLAINTEXT (protobuf)",
    ] {
        assert!(
            table.stdout.contains(needle),
            "missing {needle:?}:\n{table}"
        );
    }

    // Plaintext with --require-encrypted: exit code 1.
    let required = run(
        &cluster,
        &[
            "k8s",
            "encryption-status",
            "--require-encrypted",
            "-w",
            "json",
        ],
    );
    required.expect_code(1);
    assert!(required.stderr.contains("2 of 6"), "{required}");

    // Several resources, counted apart.
    let both = run(
        &cluster,
        &[
            "k8s",
            "encryption-status",
            "--resource",
            "secrets,configmaps",
            "-w",
            "json",
        ],
    );
    both.expect_code(0);
    let report = both.json();
    assert_eq!(report["total"], 7, "{both}");
    assert_eq!(report["resources"][1]["resource"], "configmaps", "{both}");
    assert_eq!(report["resources"][1]["plaintext"], 1, "{both}");
}

#[test]
fn encryption_status_from_a_snapshot_matches_the_live_scan() {
    let cluster = Cluster::start(1, Security::Plain);
    plant(&cluster, "/registry");
    let store = tempfile::tempdir().unwrap();
    for compression in ["zstd", "none"] {
        let dir = store.path().join(compression);
        let file = save_snapshot(&cluster, &dir, compression);
        let arg = file.display().to_string();
        let offline = etcdops(
            &args(&["k8s", "encryption-status", "--snapshot", &arg, "-w", "json"]),
            &[],
        );
        assert_planted_report(&offline, "/registry");
        assert_eq!(offline.json()["offline"], true);
        assert_eq!(offline.json()["source"], arg.as_str());

        let required = etcdops(
            &args(&[
                "k8s",
                "encryption-status",
                "--snapshot",
                &arg,
                "--require-encrypted",
            ]),
            &[],
        );
        required.expect_code(1);
        assert_no_secret_data(&required);
    }
    // A backup URL works the same as a file.
    let file = save_snapshot(&cluster, &store.path().join("url"), "zstd");
    let url = format!("file://{}", file.display());
    let by_url = etcdops(
        &args(&["k8s", "encryption-status", "--snapshot", &url, "-w", "json"]),
        &[],
    );
    assert_planted_report(&by_url, "/registry");
}

#[test]
fn openshift_prefix_is_found_and_all_encrypted_passes() {
    let cluster = Cluster::start(1, Security::Plain);
    for i in 0..5 {
        cluster.put(
            &format!("/kubernetes.io/secrets/openshift-config/s{i}"),
            aescbc(
                "key-2024",
                &KEY1,
                &protobuf_secret("openshift-config", &format!("s{i}")),
            ),
        );
    }
    let status = run(
        &cluster,
        &[
            "k8s",
            "encryption-status",
            "--require-encrypted",
            "-w",
            "json",
        ],
    );
    status.expect_code(0);
    let report = status.json();
    assert_eq!(report["prefix"], "/kubernetes.io", "{status}");
    assert_eq!(report["all_encrypted"], true, "{status}");
    assert_eq!(report["total"], 5, "{status}");
    assert_eq!(report["objects"].as_array().unwrap().len(), 0, "{status}");

    let store = tempfile::tempdir().unwrap();
    let file = save_snapshot(&cluster, store.path(), "zstd");
    let offline = etcdops(
        &args(&[
            "k8s",
            "encryption-status",
            "--snapshot",
            &file.display().to_string(),
            "--require-encrypted",
            "--all",
            "-w",
            "json",
        ]),
        &[],
    );
    offline.expect_code(0);
    let report = offline.json();
    assert_eq!(report["prefix"], "/kubernetes.io", "{offline}");
    assert_eq!(report["objects"].as_array().unwrap().len(), 5, "{offline}");
    assert_eq!(report["objects"][0]["key_name"], "key-2024", "{offline}");
}

#[test]
fn scanning_zero_objects_is_an_error_not_a_pass() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put("/unrelated/key", "v");
    // No Kubernetes data at all.
    let none = run(
        &cluster,
        &["k8s", "encryption-status", "--require-encrypted"],
    );
    assert_clear_error(&none, "no Kubernetes data found");
    // A prefix with data but no object of the resource asked for.
    cluster.put("/registry/configmaps/default/c", "{}");
    let empty = run(
        &cluster,
        &[
            "k8s",
            "encryption-status",
            "--resource",
            "secrets",
            "--require-encrypted",
        ],
    );
    assert_clear_error(&empty, "scanned 0 objects");

    let store = tempfile::tempdir().unwrap();
    let file = save_snapshot(&cluster, store.path(), "none");
    let offline = etcdops(
        &args(&[
            "k8s",
            "encryption-status",
            "--snapshot",
            &file.display().to_string(),
            "--prefix",
            "/registry",
        ]),
        &[],
    );
    assert_clear_error(&offline, "scanned 0 objects");
    let missing = etcdops(
        &args(&[
            "k8s",
            "encryption-status",
            "--snapshot",
            "/nonexistent/x.db",
        ]),
        &[],
    );
    assert_clear_error(&missing, "/nonexistent/x.db");
}

#[test]
fn k8s_get_decodes_json_protobuf_and_reports_encrypted_values() {
    let cluster = Cluster::start(1, Security::Plain);
    plant(&cluster, "/registry");

    let proto = run(
        &cluster,
        &[
            "k8s",
            "get",
            "/registry/secrets/kube-system/plain-proto",
            "-w",
            "json",
        ],
    );
    proto.expect_code(0);
    assert_no_secret_data(&proto);
    let value = &proto.json()["values"][0];
    assert_eq!(value["kind"], "Secret", "{proto}");
    assert_eq!(value["api_version"], "v1", "{proto}");
    assert_eq!(value["namespace"], "kube-system", "{proto}");
    assert_eq!(value["name"], "plain-proto", "{proto}");
    assert_eq!(value["format"], "protobuf", "{proto}");
    assert!(value["object_size"].as_u64().unwrap() > 0, "{proto}");

    let all = run(&cluster, &["k8s", "get", "/registry/", "--prefix"]);
    all.expect_code(0);
    assert_no_secret_data(&all);
    for needle in [
        "encrypted by aescbc with key key1",
        "\"mode\": \"fast\"",
        "<redacted, 24 bytes>",
        "plaintext Secret",
    ] {
        assert!(all.stdout.contains(needle), "missing {needle:?}:\n{all}");
    }
    let missing = run(&cluster, &["k8s", "get", "/registry/nothing-here"]);
    assert_clear_error(&missing, "no key");
}

#[test]
fn encryption_config_steps_are_ordered_private_and_name_keys_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let (k1, k2, config) = (path("k1.json"), path("k2.json"), path("enc.yaml"));
    let k8s = |rest: &[&str]| {
        let mut all = vec!["k8s"];
        all.extend_from_slice(rest);
        etcdops(&args(&all), &[])
    };
    k8s(&["encryption-key", "new", "--name", "k1", "--out", &k1]).expect_code(0);
    k8s(&["encryption-key", "new", "--name", "k2", "--out", &k2]).expect_code(0);
    let key_mode = std::fs::metadata(&k1).unwrap().permissions().mode() & 0o777;
    assert_eq!(key_mode, 0o600);
    let material = |file: &str| -> String {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        json["secret"].as_str().unwrap().to_string()
    };
    let (m1, m2) = (material(&k1), material(&k2));
    assert_ne!(m1, m2);
    let no_material = |run: &Run| {
        for m in [&m1, &m2] {
            assert!(
                !run.stdout.contains(m.as_str()) && !run.stderr.contains(m.as_str()),
                "key material in the output:\n{run}"
            );
        }
    };
    // Printed once when asked for on stdout, 32 bytes.
    let printed = k8s(&["encryption-key", "new", "-w", "json"]);
    printed.expect_code(0);
    assert_eq!(printed.json()["secret"].as_str().unwrap().len(), 44);

    let generated = k8s(&[
        "encryption-config",
        "generate",
        "--config",
        &config,
        "--key-file",
        &k1,
        "-w",
        "json",
    ]);
    generated.expect_code(0);
    no_material(&generated);
    assert_eq!(generated.json()["changed"], true);
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the config must be 0600");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("apiserver.config.k8s.io/v1") && text.contains(&m1),
        "{text}"
    );

    // Out of order: promote or drop-old before add-key.
    for step in ["promote", "drop-old"] {
        let refused = k8s(&[
            "encryption-config",
            "rotate",
            "--step",
            step,
            "--config",
            &config,
            "--key-name",
            "k2",
        ]);
        assert_clear_error(&refused, "refusing rotation step");
        no_material(&refused);
    }
    // Check mode: a diff of key names, nothing written.
    let check = k8s(&[
        "encryption-config",
        "rotate",
        "--step",
        "add-key",
        "--config",
        &config,
        "--key-file",
        &k2,
        "--check",
        "-w",
        "json",
    ]);
    check.expect_code(0);
    no_material(&check);
    let result = check.json();
    assert_eq!(result["changed"], true);
    assert_eq!(result["written"], false);
    assert!(
        result["diff"]["after"]
            .as_str()
            .unwrap()
            .contains("aescbc: k1, k2"),
        "{check}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);

    let added = k8s(&[
        "encryption-config",
        "rotate",
        "--step",
        "add-key",
        "--config",
        &config,
        "--key-file",
        &k2,
        "-w",
        "json",
    ]);
    added.expect_code(0);
    no_material(&added);
    assert_eq!(added.json()["keys_after"], serde_json::json!(["k1", "k2"]));
    // Dropping the old key before promoting the new one: refused.
    let early = k8s(&[
        "encryption-config",
        "rotate",
        "--step",
        "drop-old",
        "--config",
        &config,
        "--key-name",
        "k2",
    ]);
    assert_clear_error(&early, "not first yet");
    let promoted = k8s(&[
        "encryption-config",
        "rotate",
        "--step",
        "promote",
        "--config",
        &config,
        "--key-name",
        "k2",
        "-w",
        "json",
    ]);
    promoted.expect_code(0);
    assert_eq!(
        promoted.json()["keys_after"],
        serde_json::json!(["k2", "k1"])
    );
    let again = k8s(&[
        "encryption-config",
        "rotate",
        "--step",
        "promote",
        "--config",
        &config,
        "--key-name",
        "k2",
        "-w",
        "json",
    ]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false);
    let dropped = k8s(&[
        "encryption-config",
        "rotate",
        "--step",
        "drop-old",
        "--config",
        &config,
        "--key-name",
        "k2",
        "-w",
        "simple",
    ]);
    dropped.expect_code(0);
    no_material(&dropped);
    assert!(dropped.stdout.contains("+   - aescbc: k2"), "{dropped}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains(&m2) && !text.contains(&m1),
        "old key still in the file"
    );
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}
