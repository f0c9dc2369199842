//! Encrypted backups through the collection: `etcd_snapshot` with `encrypt_to`,
//! `etcd_snapshot_info` verify and `etcd_snapshot_restore` with `identity_content` (from a
//! variable, as from a vault), run at `-vvvv`: the identity appears nowhere in the output.

use age::secrecy::ExposeSecret;
use etcdops_tests::{Cluster, Collection, Security, free_port};
use serde_json::json;

const LOCAL: &str = "target ansible_connection=local\n";

#[test]
fn encrypted_backup_saved_verified_and_restored_by_modules_without_showing_the_identity() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/ansible-enc/k", 20);
    let identity = age::x25519::Identity::generate();
    let secret = identity.to_string().expose_secret().to_string();
    let public = identity.to_public().to_string();
    let other = age::x25519::Identity::generate();
    let other_secret = other.to_string().expose_secret().to_string();
    let backups = cluster.dir().join("backups");
    let restores = cluster.dir().join("restores");
    std::fs::create_dir_all(&restores).unwrap();
    let peer_url = format!("http://127.0.0.1:{}", free_port());
    let collection = Collection::install();
    let restore = |name: &str, identity_var: &str| {
        json!({"etcd.core.etcd_snapshot_restore": {
            "snapshot": "{{ saved.object_url }}",
            "identity_content": format!("{{{{ {identity_var} }}}}"),
            "data_dir": restores.join(name),
            "name": name,
            "initial_cluster": format!("{name}={peer_url}"),
            "initial_cluster_token": "enc-restored",
            "initial_advertise_peer_urls": [peer_url],
        }})
    };
    let mut wrong_restore = restore("wrong", "etcd_other_identity");
    wrong_restore["register"] = json!("wrong");
    wrong_restore["ignore_errors"] = json!(true);
    let mut good_restore = restore("r0", "etcd_identity");
    good_restore["register"] = json!("restored");
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": cluster.client_urls()}},
        "tasks": [
            {"etcd.core.etcd_snapshot": {
                "dest": backups,
                "encrypt_to": ["{{ etcd_recipient }}"],
             }, "register": "saved"},
            {"ansible.builtin.assert": {"that": [
                "saved.changed",
                "saved.manifest.object.endswith('.db.zst.age')",
                "saved.manifest.encryption.recipients == [etcd_recipient]",
            ]}},
            {"etcd.core.etcd_snapshot_info": {
                "snapshot": "{{ saved.object_url }}",
                "verify": true,
                "identity_content": "{{ etcd_identity }}",
             }, "register": "info"},
            {"ansible.builtin.assert": {"that": [
                "info.encrypted",
                "info.verify.encrypted",
                "info.verify.db_sha256 == saved.manifest.db_sha256",
                "info.status.revision == saved.manifest.revision",
            ]}},
            {"etcd.core.etcd_snapshot_info": {
                "snapshot": "{{ saved.object_url }}",
                "verify": true,
             }, "register": "locked", "ignore_errors": true},
            {"ansible.builtin.assert": {"that": [
                "locked.failed",
                "'encrypted with age to ' ~ etcd_recipient in locked.msg",
                "'identity_content' in locked.msg",
            ]}},
            wrong_restore,
            {"ansible.builtin.assert": {"that": [
                "wrong.failed",
                "'none of the given identities can decrypt' in wrong.msg",
            ]}},
            good_restore,
            {"ansible.builtin.assert": {"that": ["restored.changed"]}},
        ],
    }])
    .to_string();
    let vars = json!({
        "etcd_recipient": public,
        "etcd_identity": format!("# public key: {public}\n{secret}\n"),
        "etcd_other_identity": other_secret,
    });
    let run = collection.playbook(&playbook, LOCAL, &vars, &[], &["-vvvv"]);
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("failed=0"), "{run}");
    assert!(restores.join("r0/member/snap/db").exists(), "{run}");
    assert!(!restores.join("wrong").exists(), "{run}");
    for shown in [&run.stdout, &run.stderr] {
        assert!(!shown.contains(&secret), "the identity was printed:\n{run}");
        assert!(
            !shown.contains(&other_secret),
            "an identity was printed:\n{run}"
        );
        assert!(
            !shown.contains("AGE-SECRET-KEY"),
            "an identity was printed:\n{run}"
        );
    }
    assert!(
        run.stdout.contains("VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"),
        "identity_content is not shown masked:\n{run}"
    );
}
