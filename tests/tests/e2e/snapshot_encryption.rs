//! Client-side encryption of backups with age (`snapshot save --encrypt-to`) against real
//! etcd, into a local dir and into S3 (moto): the stored object holds no plaintext and is not
//! zstd; list, verify, status and restore treat it like any backup; without an identity, or
//! with the wrong one, a one-line error names the recipients (exit 2); a flipped byte is
//! refused; either of two recipients' identities decrypts; identities never appear in any
//! output or manifest.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use age::secrecy::ExposeSecret;
use etcdops_tests::{Cluster, Run, S3Server, Security, etcdops, free_port, http_request};

use crate::{assert_clear_error, run};

/// A new age key pair: (identity `AGE-SECRET-KEY-1...`, recipient `age1...`).
fn key_pair() -> (String, String) {
    let identity = age::x25519::Identity::generate();
    (
        identity.to_string().expose_secret().to_string(),
        identity.to_public().to_string(),
    )
}

/// Writes an identity file as age-keygen does (comments, then the key), mode 0600.
fn identity_file(dir: &Path, name: &str, secret: &str, public: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("# created: 2026-11-29T00:00:00Z\n# public key: {public}\n{secret}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// Collects every run's output, to check at the end that no identity was ever printed.
#[derive(Default)]
struct Outputs(Vec<String>);

impl Outputs {
    fn keep(&mut self, run: Run) -> Run {
        self.0.push(format!("{}\n{}", run.stdout, run.stderr));
        run
    }

    fn assert_never_shown(&self, secrets: &[&str]) {
        for output in &self.0 {
            assert!(!output.contains("AGE-SECRET-KEY"), "{output}");
            for secret in secrets {
                assert!(
                    !output.contains(secret),
                    "an identity was printed:\n{output}"
                );
            }
        }
    }
}

/// Every key under /enc/ with its value and revisions, as etcdops reads them.
fn enc_keys(cluster: &Cluster) -> serde_json::Value {
    let got = run(cluster, &["get", "/enc/", "--prefix", "-w", "json"]);
    got.expect_code(0);
    got.json()["kvs"].clone()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn encrypted_backups_in_a_local_dir_verify_restore_and_refuse_without_the_identity() {
    let cluster = Cluster::start(1, Security::Plain);
    let marker = format!("plaintext-marker-{}-value", free_port());
    cluster.put("/enc/marker", marker.clone());
    cluster.put_keys("/enc/k", 50);
    let expected = enc_keys(&cluster);
    let keys = cluster.dir().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let (secret_a, public_a) = key_pair();
    let (secret_b, public_b) = key_pair();
    let (secret_c, public_c) = key_pair();
    let id_a = identity_file(&keys, "a.txt", &secret_a, &public_a);
    let id_b = identity_file(&keys, "b.txt", &secret_b, &public_b);
    let id_c = identity_file(&keys, "c.txt", &secret_c, &public_c);
    let recipients_file = keys.join("recipients.txt");
    std::fs::write(
        &recipients_file,
        format!("# disaster recovery key\n\n{public_b}\n"),
    )
    .unwrap();
    let store = cluster.dir().join("store");
    let store_arg = store.display().to_string();
    let mut out = Outputs::default();

    // Saved to two recipients, one from the flag and one from a recipients file.
    let saved = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "save",
            &store_arg,
            "--encrypt-to",
            &public_a,
            "--encrypt-to-file",
            &recipients_file.display().to_string(),
            "--verify-after-upload",
            "-w",
            "json",
        ],
    ));
    saved.expect_code(0);
    let manifest = saved.json()["manifest"].clone();
    let object = manifest["object"].as_str().unwrap().to_string();
    assert!(object.ends_with(".db.zst.age"), "{object}");
    assert_eq!(manifest["encryption"]["scheme"], "age");
    assert_eq!(
        manifest["encryption"]["recipients"],
        serde_json::json!([public_a, public_b])
    );
    assert_eq!(manifest["verified_after_upload"], true);
    let manifest_text =
        std::fs::read_to_string(store.join(format!("{object}.manifest.json"))).unwrap();
    assert!(manifest_text.contains(&public_a) && manifest_text.contains(&public_b));
    assert!(!manifest_text.contains("AGE-SECRET-KEY"), "{manifest_text}");
    let file = store.join(&object);
    let bytes = std::fs::read(&file).unwrap();
    assert!(bytes.starts_with(b"age-encryption.org/v1\n"));
    assert!(
        !contains(&bytes, marker.as_bytes()),
        "plaintext in the object"
    );
    assert!(
        zstd::decode_all(&bytes[..]).is_err(),
        "the stored object is a valid zstd stream"
    );
    assert_eq!(
        bytes.len() as u64,
        manifest["object_size"].as_u64().unwrap()
    );

    // Uncompressed, the db's bytes would hold the value verbatim: encrypted, they do not.
    let plain = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "save",
            &cluster.dir().join("plain").display().to_string(),
            "--compression",
            "none",
            "-w",
            "json",
        ],
    ));
    plain.expect_code(0);
    let plain_object = plain.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    let plain_bytes = std::fs::read(cluster.dir().join("plain").join(plain_object)).unwrap();
    assert!(
        contains(&plain_bytes, marker.as_bytes()),
        "control: the marker is in the db"
    );
    let raw = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "save",
            &store_arg,
            "--compression",
            "none",
            "--encrypt-to",
            &public_a,
            "-w",
            "json",
        ],
    ));
    raw.expect_code(0);
    let raw_object = raw.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(raw_object.ends_with(".db.age"), "{raw_object}");
    let raw_bytes = std::fs::read(store.join(&raw_object)).unwrap();
    assert!(
        !contains(&raw_bytes, marker.as_bytes()),
        "plaintext in the object"
    );

    // Listed like any backup, and no orphan.
    let list = out.keep(run(
        &cluster,
        &["snapshot", "list", &store_arg, "-w", "json"],
    ));
    list.expect_code(0);
    let listed: Vec<(String, bool)> = list.json()["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["object"].as_str().unwrap().to_string(),
                b["complete"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(listed.contains(&(object.clone(), true)), "{list}");
    assert!(listed.contains(&(raw_object.clone(), true)), "{list}");
    let orphans = out.keep(run(
        &cluster,
        &["snapshot", "list", &store_arg, "--orphans", "-w", "json"],
    ));
    orphans.expect_code(0);
    assert_eq!(
        orphans.json()["orphans"],
        serde_json::json!([]),
        "{orphans}"
    );

    // Either recipient's identity verifies it; the environment variable works too.
    let url = format!("{store_arg}/{object}");
    for id in [&id_a, &id_b] {
        let verified = out.keep(run(
            &cluster,
            &[
                "snapshot",
                "verify",
                &url,
                "--identity",
                &id.display().to_string(),
                "-w",
                "json",
            ],
        ));
        verified.expect_code(0);
        assert_eq!(verified.json()["encrypted"], true, "{verified}");
        assert_eq!(verified.json()["manifest_checked"], true, "{verified}");
    }
    let mut args = cluster.client_flags();
    args.extend(["snapshot", "verify", &url].iter().map(|s| s.to_string()));
    let id_a_text = id_a.display().to_string();
    let by_env = out.keep(etcdops(&args, &[("ETCDOPS_AGE_IDENTITY_FILE", &id_a_text)]));
    by_env.expect_code(0);

    // Without an identity: the stored bytes are checked, the contents are not; exit 2.
    let locked = out.keep(run(&cluster, &["snapshot", "verify", &url]));
    assert_clear_error(&locked, "give the identity of one of them (--identity)");
    assert!(locked.stderr.contains("encrypted with age to"), "{locked}");
    assert!(
        locked.stderr.contains(&public_a) && locked.stderr.contains(&public_b),
        "{locked}"
    );
    assert!(locked.stderr.contains("stored bytes match"), "{locked}");
    assert!(!locked.stdout.contains("OK"), "{locked}");
    // With the wrong identity: named recipients, never the identity.
    let wrong = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "verify",
            &url,
            "--identity",
            &id_c.display().to_string(),
        ],
    ));
    assert_clear_error(&wrong, "none of the given identities can decrypt");
    assert!(wrong.stderr.contains(&public_a), "{wrong}");
    assert!(!wrong.stderr.contains(&public_c), "{wrong}");

    // status reads the encrypted file with an identity, refuses it without one.
    let file_arg = file.display().to_string();
    let status = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "status",
            &file_arg,
            "--identity",
            &id_b.display().to_string(),
            "-w",
            "json",
        ],
    ));
    status.expect_code(0);
    assert_eq!(status.json()["encrypted"], true, "{status}");
    assert_eq!(status.json()["compression"], "zstd", "{status}");
    assert_eq!(
        status.json()["revision"].as_i64(),
        manifest["revision"].as_i64(),
        "{status}"
    );
    let status_url = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "status",
            &url,
            "--identity",
            &id_a.display().to_string(),
        ],
    ));
    status_url.expect_code(0);
    let locked = out.keep(run(&cluster, &["snapshot", "status", &file_arg]));
    assert_clear_error(&locked, "give the identity of one of them (--identity)");
    // A local file beside its manifest: the recipients are named too.
    assert!(locked.stderr.contains(&public_a), "{locked}");

    // An identity file others can read: used, with a warning.
    let loose = identity_file(&keys, "loose.txt", &secret_a, &public_a);
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let warned = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "verify",
            &url,
            "--identity",
            &loose.display().to_string(),
        ],
    ));
    warned.expect_code(0);
    assert!(
        warned.stderr.contains("warning:") && warned.stderr.contains("chmod 600"),
        "{warned}"
    );

    // Restore: refused without the identity (nothing created), done with it, and a real
    // etcd serves every key from the restored data dir.
    let mut restored = Cluster::plan_restore(1, "enc");
    let refused = out.keep(crate::snapshot_restore::restore(&file, &restored, 0, &[]));
    assert_clear_error(&refused, "give the identity of one of them (--identity)");
    assert!(!restored.members[0].data_dir.exists());
    let id_b_arg = id_b.display().to_string();
    let done = out.keep(crate::snapshot_restore::restore(
        &file,
        &restored,
        0,
        &["--identity", &id_b_arg],
    ));
    done.expect_code(0);
    restored.start_restored();
    assert_eq!(
        enc_keys(&restored),
        expected,
        "same keys, values and revisions"
    );

    // A flipped byte in the stored object is refused by verify and by restore.
    let mut damaged = bytes.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 0x20;
    std::fs::write(&file, &damaged).unwrap();
    let id_a_arg = id_a.display().to_string();
    let refused = out.keep(run(
        &cluster,
        &["snapshot", "verify", &url, "--identity", &id_a_arg],
    ));
    assert_eq!(refused.code, 1, "{refused}");
    assert!(refused.stderr.contains("verify failed"), "{refused}");
    let target = Cluster::plan_restore(1, "dmg");
    let refused = out.keep(crate::snapshot_restore::restore(
        &file,
        &target,
        0,
        &["--identity", &id_a_arg],
    ));
    assert_clear_error(&refused, "damaged or was changed");
    assert!(!target.members[0].data_dir.exists());
    // Without an identity, verify still sees the stored bytes changed.
    let refused = out.keep(run(&cluster, &["snapshot", "verify", &url]));
    assert_eq!(refused.code, 1, "{refused}");

    out.assert_never_shown(&[&secret_a, &secret_b, &secret_c]);
}

const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "Very-Secret-Test-Key"),
    ("AWS_REGION", "us-east-1"),
];

#[test]
fn encrypted_backups_in_s3_list_verify_and_restore_from_the_url() {
    let cluster = Cluster::start(1, Security::Plain);
    let marker = format!("plaintext-marker-{}-value", free_port());
    cluster.put("/enc/marker", marker.clone());
    cluster.put_keys("/enc/k", 50);
    let expected = enc_keys(&cluster);
    let s3 = S3Server::start();
    s3.create_bucket("backups");
    let keys = cluster.dir().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let (secret_a, public_a) = key_pair();
    let (secret_c, public_c) = key_pair();
    let id_a = identity_file(&keys, "a.txt", &secret_a, &public_a);
    let id_c = identity_file(&keys, "c.txt", &secret_c, &public_c);
    let store = "s3://backups/prod/etcd";
    let flags = [
        "--s3-endpoint",
        &s3.endpoint,
        "--allow-http",
        "--s3-path-style",
    ];
    let mut out = Outputs::default();
    let etcdops_s3 = |rest: &[&str]| {
        let mut args = cluster.client_flags();
        args.extend(rest.iter().map(|s| s.to_string()));
        args.extend(flags.iter().map(|s| s.to_string()));
        etcdops(&args, &S3_ENV)
    };

    let saved = out.keep(etcdops_s3(&[
        "snapshot",
        "save",
        store,
        "--compression",
        "none",
        "--encrypt-to",
        &public_a,
        "--verify-after-upload",
        "-w",
        "json",
    ]));
    saved.expect_code(0);
    let object = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(object.ends_with(".db.age"), "{object}");
    // The stored bytes, as S3 holds them.
    let stored = http_request(
        s3.port,
        "GET",
        &format!("/backups/prod/etcd/{object}"),
        &[],
        b"",
    )
    .unwrap();
    assert_eq!(stored.status, 200, "{}", stored.body);
    assert!(stored.body.starts_with("age-encryption.org/v1\n"));
    assert!(!stored.body.contains(&marker), "plaintext in the object");
    let list = out.keep(etcdops_s3(&["snapshot", "list", store, "-w", "json"]));
    list.expect_code(0);
    assert_eq!(
        list.json()["backups"][0]["object"],
        object.as_str(),
        "{list}"
    );
    assert_eq!(list.json()["backups"][0]["complete"], true, "{list}");
    // The manifest as read back from S3: the public key, no identity.
    let listed_manifest = list.json()["backups"][0]["manifest"].clone();
    assert_eq!(
        listed_manifest["encryption"]["recipients"],
        serde_json::json!([public_a]),
        "{list}"
    );

    let url = format!("{store}/{object}");
    let id_a_arg = id_a.display().to_string();
    let verified = out.keep(etcdops_s3(&[
        "snapshot",
        "verify",
        &url,
        "--identity",
        &id_a_arg,
    ]));
    verified.expect_code(0);
    let locked = out.keep(etcdops_s3(&["snapshot", "verify", &url]));
    assert_clear_error(&locked, "give the identity of one of them (--identity)");
    assert!(locked.stderr.contains(&public_a), "{locked}");
    let wrong = out.keep(etcdops_s3(&[
        "snapshot",
        "verify",
        &url,
        "--identity",
        &id_c.display().to_string(),
    ]));
    assert_clear_error(&wrong, "none of the given identities can decrypt");

    // Restore from the backup URL.
    let mut restored = Cluster::plan_restore(1, "s3enc");
    let member = &restored.members[0];
    let restore_args = [
        "snapshot",
        "restore",
        &url,
        "--data-dir",
        &member.data_dir.display().to_string(),
        "--name",
        &member.name,
        "--initial-cluster",
        &restored.initial_cluster(),
        "--initial-cluster-token",
        restored.token(),
        "--initial-advertise-peer-urls",
        &member.peer_url,
    ]
    .map(|s| s.to_string());
    let locked = out.keep(etcdops_s3(
        &restore_args.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert_clear_error(&locked, "give the identity of one of them (--identity)");
    let mut with_identity: Vec<&str> = restore_args.iter().map(String::as_str).collect();
    with_identity.extend(["--identity", &id_a_arg]);
    let done = out.keep(etcdops_s3(&with_identity));
    done.expect_code(0);
    restored.start_restored();
    assert_eq!(
        enc_keys(&restored),
        expected,
        "same keys, values and revisions"
    );

    out.assert_never_shown(&[&secret_a, &secret_c]);
}

#[test]
fn keygen_makes_a_private_identity_that_decrypts_backups_to_its_recipient() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/enc/k", 10);
    let keys = cluster.dir().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let key_file = keys.join("backup-key.txt");
    let key_arg = key_file.display().to_string();
    let mut out = Outputs::default();
    let made = out.keep(etcdops(
        &etcdops_tests::args(&["snapshot", "keygen", "-o", &key_arg, "-w", "json"]),
        &[],
    ));
    made.expect_code(0);
    let recipient = made.json()["recipient"].as_str().unwrap().to_string();
    assert!(recipient.starts_with("age1"), "{made}");
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let written = std::fs::read_to_string(&key_file).unwrap();
    let secret = written
        .lines()
        .find(|l| l.starts_with("AGE-SECRET-KEY-1"))
        .expect("an identity line")
        .to_string();
    // An existing identity file is never overwritten.
    let again = out.keep(etcdops(
        &etcdops_tests::args(&["snapshot", "keygen", "-o", &key_arg]),
        &[],
    ));
    assert_clear_error(&again, &key_arg);
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), written);

    let store = cluster.dir().join("store").display().to_string();
    let saved = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "save",
            &store,
            "--encrypt-to",
            &recipient,
            "-w",
            "json",
        ],
    ));
    saved.expect_code(0);
    let url = format!(
        "{store}/{}",
        saved.json()["manifest"]["object"].as_str().unwrap()
    );
    let verified = out.keep(run(
        &cluster,
        &["snapshot", "verify", &url, "--identity", &key_arg],
    ));
    verified.expect_code(0);
    out.assert_never_shown(&[&secret]);
}

#[test]
fn encryption_at_rest_audit_reads_an_encrypted_backup_with_the_identity() {
    let cluster = Cluster::start(1, Security::Plain);
    for i in 0..5 {
        cluster.put(
            &format!("/registry/secrets/default/s{i}"),
            b"k8s\0\x0a\x0c\x0a\x02v1\x12\x06Secret".to_vec(),
        );
    }
    let (secret, public) = key_pair();
    let keys = cluster.dir().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let identity = identity_file(&keys, "id.txt", &secret, &public);
    let identity_arg = identity.display().to_string();
    let store = cluster.dir().join("store");
    let store_arg = store.display().to_string();
    let mut out = Outputs::default();
    let saved = out.keep(run(
        &cluster,
        &[
            "snapshot",
            "save",
            &store_arg,
            "--encrypt-to",
            &public,
            "-w",
            "json",
        ],
    ));
    saved.expect_code(0);
    let url = format!(
        "{store_arg}/{}",
        saved.json()["manifest"]["object"].as_str().unwrap()
    );

    let without = out.keep(run(
        &cluster,
        &["k8s", "encryption-status", "--snapshot", &url],
    ));
    assert_clear_error(&without, "--identity");
    let audited = out.keep(run(
        &cluster,
        &[
            "k8s",
            "encryption-status",
            "--snapshot",
            &url,
            "--identity",
            &identity_arg,
            "-w",
            "json",
        ],
    ));
    audited.expect_code(0);
    assert_eq!(audited.json()["total"], 5, "{audited}");
    assert_eq!(audited.json()["plaintext"], 5, "{audited}");
    out.assert_never_shown(&[&secret]);
}
