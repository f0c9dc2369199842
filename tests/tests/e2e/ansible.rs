//! The `etcd.core` collection with real ansible-core against real etcd: every module's
//! normal path, check mode, idempotence, the module_defaults group, credentials only in the
//! controller's environment, a target without Python, secrets never printed.

use etcdops_tests::{Cluster, Collection, ROOT_PASSWORD, Security, block_on, free_port};
use serde_json::{Value, json};

/// `localhost` as a target that has no Python: binary modules must not need it.
const NO_PYTHON: &str = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";
const LOCAL: &str = "target ansible_connection=local\n";

/// The connection options for `module_defaults: {group/etcd.core.etcd: ...}`.
fn connection(cluster: &Cluster) -> Value {
    let mut options = json!({ "endpoints": cluster.client_urls() });
    if let Some(certs) = &cluster.certs {
        options["cacert"] = json!(certs.ca);
        options["cert"] = json!(certs.client_cert);
        // Key material as content, as from a vault: must never be printed back.
        options["key_content"] = json!(std::fs::read_to_string(&certs.client_key).unwrap());
    }
    if cluster.security == Security::Auth {
        options["user"] = json!("root");
        options["password"] = json!(ROOT_PASSWORD);
    }
    options
}

/// A play on `target` running the given integration targets of the collection in order.
fn play(collection: &Collection, defaults: &Value, targets: &[&str], extra: Value) -> String {
    let tasks: Vec<Value> = targets
        .iter()
        .map(|t| json!({"ansible.builtin.include_role": {"name": collection.target(t)}}))
        .collect();
    let mut play = json!({
        "hosts": "target",
        "gather_facts": false,
        "tasks": tasks,
    });
    if !defaults.is_null() {
        play["module_defaults"] = json!({ "group/etcd.core.etcd": defaults });
    }
    if let Value::Object(map) = extra {
        for (k, v) in map {
            play[k] = v;
        }
    }
    json!([play]).to_string()
}

#[test]
fn every_module_on_one_member_with_a_target_without_python() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/ansible/k", 10);
    cluster.put("/ansible/k0000", "value-0");
    let secret_value = format!("s3cret-{}", free_port());
    cluster.put("/registry/secrets/default/s1", secret_value.clone());
    let lease_id = block_on(async {
        let mut client = cluster.client().await;
        let lease = client.lease_grant(600, None).await.unwrap();
        let options = etcd_client::PutOptions::new().with_lease(lease.id());
        client
            .put("/ansible/leased", "x", Some(options))
            .await
            .unwrap();
        format!("{:016x}", lease.id())
    });
    let collection = Collection::install();
    let backups = cluster.dir().join("backups");
    std::fs::create_dir_all(&backups).unwrap();
    let restores = cluster.dir().join("restores");
    std::fs::create_dir_all(&restores).unwrap();
    let vars = json!({
        "etcd_expected_members": 1,
        "etcd_secret_value": secret_value,
        "etcd_lease_id": lease_id,
        "etcd_backup_dir": backups,
        "etcd_restore_dir": restores,
        "etcd_restore_peer_url": format!("http://127.0.0.1:{}", free_port()),
    });
    let playbook = play(
        &collection,
        &connection(&cluster),
        &[
            "etcd_cluster_info",
            "etcd_kv_info",
            "etcd_lease_info",
            "etcd_snapshot",
            "etcd_maintenance",
        ],
        json!({}),
    );
    let run = collection.playbook(&playbook, NO_PYTHON, &vars, &[], &[]);
    run.assert_ok();
    // Check mode wrote nothing: only the restore of the normal path exists.
    assert!(restores.join("r0/member/snap/db").exists(), "{run}");
    assert!(!restores.join("r1").exists(), "{run}");
}

#[test]
fn member_changes_on_three_tls_members_through_module_defaults() {
    let cluster = Cluster::start(3, Security::Tls);
    let collection = Collection::install();
    let (peer_url, _) = cluster.new_member_urls();
    let vars = json!({ "etcd_expected_members": 3, "etcd_new_peer_url": peer_url });
    let playbook = play(
        &collection,
        &connection(&cluster),
        &["etcd_cluster_info", "etcd_member"],
        json!({}),
    );
    let run = collection.playbook(&playbook, LOCAL, &vars, &[], &["-vvv"]);
    run.assert_ok();
    let key = std::fs::read_to_string(&cluster.certs.as_ref().unwrap().client_key).unwrap();
    let key_body = key.lines().nth(1).unwrap();
    assert!(
        !run.stdout.contains(key_body) && !run.stderr.contains(key_body),
        "the client key was printed:\n{run}"
    );
    assert!(
        run.stdout.contains("VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"),
        "key_content is not shown masked in invocation:\n{run}"
    );
}

#[test]
fn credentials_only_in_the_controllers_environment() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.as_ref().unwrap();
    let collection = Collection::install();
    let endpoints = cluster.endpoints();
    let ca = certs.ca.display().to_string();
    let cert = certs.client_cert.display().to_string();
    let key = certs.client_key.display().to_string();
    // The target's own environment points elsewhere: only what the action plugin resolved on
    // the controller (and sent as arguments and PEM content) can make this work.
    let playbook = play(
        &collection,
        &Value::Null,
        &["etcd_cluster_info"],
        json!({"environment": {
            "ETCDCTL_ENDPOINTS": "http://127.0.0.1:1",
            "ETCDCTL_CACERT": "/nonexistent/ca.pem",
            "ETCDCTL_CERT": "/nonexistent/cert.pem",
            "ETCDCTL_KEY": "/nonexistent/key.pem",
        }}),
    );
    let env = [
        ("ETCDCTL_ENDPOINTS", endpoints.as_str()),
        ("ETCDCTL_CACERT", ca.as_str()),
        ("ETCDCTL_CERT", cert.as_str()),
        ("ETCDCTL_KEY", key.as_str()),
    ];
    let vars = json!({ "etcd_expected_members": 1 });
    let run = collection.playbook(&playbook, NO_PYTHON, &vars, &env, &["-vvv"]);
    run.assert_ok();
    let key_body = std::fs::read_to_string(&certs.client_key).unwrap();
    let key_body = key_body.lines().nth(1).unwrap();
    assert!(
        !run.stdout.contains(key_body),
        "the key was printed:\n{run}"
    );
}

#[test]
fn passwords_never_appear_in_any_output() {
    let cluster = Cluster::start(1, Security::Auth);
    let collection = Collection::install();
    let vars = json!({ "etcd_expected_members": 1 });
    let playbook = play(
        &collection,
        &connection(&cluster),
        &["etcd_cluster_info"],
        json!({}),
    );
    let run = collection.playbook(&playbook, LOCAL, &vars, &[], &["-vvvv"]);
    run.assert_ok();
    assert!(
        !run.stdout.contains(ROOT_PASSWORD) && !run.stderr.contains(ROOT_PASSWORD),
        "the password was printed:\n{run}"
    );
    // A wrong password fails clearly, without echoing it.
    let mut wrong = connection(&cluster);
    wrong["password"] = json!("Wr0ng-Passw0rd-xyz");
    let playbook = play(&collection, &wrong, &["etcd_cluster_info"], json!({}));
    let run = collection.playbook(&playbook, LOCAL, &vars, &[], &["-vvvv"]);
    assert_ne!(run.code, 0, "{run}");
    assert!(!run.stdout.contains("Wr0ng-Passw0rd-xyz"), "{run}");
    assert!(
        run.stdout.contains("authentication failed") || run.stdout.contains("password"),
        "{run}"
    );
}

#[test]
fn the_built_tarball_installs_and_its_modules_run() {
    let cluster = Cluster::start(1, Security::Plain);
    let collection = Collection::install_tarball();
    // The installed tarball has no test targets: a play of its own.
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [
            {"etcd.core.etcd_cluster_info": {"endpoints": cluster.client_urls()}, "register": "info"},
            {"ansible.builtin.assert": {"that": ["info.healthy", "info.members | length == 1"]}},
        ],
    }])
    .to_string();
    let run = collection.playbook(&playbook, NO_PYTHON, &json!({}), &[], &[]);
    run.assert_ok();
}

#[test]
fn encryption_modules_audit_a_cluster_and_write_the_config_step_by_step() {
    let cluster = Cluster::start(1, Security::Plain);
    let mut encrypted = b"k8s:enc:aescbc:v1:key1:".to_vec();
    encrypted.extend((0u8..48).map(|i| i.wrapping_mul(37)));
    cluster.put("/registry/secrets/default/enc", encrypted);
    cluster.put(
        "/registry/secrets/default/plain",
        r#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"plain","namespace":"default"},"data":{"a":"Yg=="}}"#,
    );
    let collection = Collection::install();
    let enc_path = cluster.dir().join("enc/encryption-config.yaml");
    let vars = json!({ "etcd_enc_path": enc_path });
    let playbook = play(
        &collection,
        &connection(&cluster),
        &["etcd_encryption"],
        json!({}),
    );
    let run = collection.playbook(&playbook, LOCAL, &vars, &[], &["-vvv"]);
    run.assert_ok();
    let written = std::fs::read_to_string(&enc_path).unwrap();
    assert!(written.contains("EncryptionConfiguration") && written.contains("key2"));
    // The key material is in the file and nowhere in Ansible's output.
    let secret_line = written
        .lines()
        .find(|l| l.trim_start().starts_with("secret:"))
        .expect("a secret line");
    let secret = secret_line.split(':').nth(1).unwrap().trim();
    assert!(secret.len() >= 40, "{written}");
    assert!(!run.stdout.contains(secret), "the key was printed:\n{run}");
}
