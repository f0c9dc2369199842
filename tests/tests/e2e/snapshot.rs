use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use etcdops_tests::{Cluster, Run, Security, args, etcdops};
use sha2::{Digest, Sha256};

use crate::{assert_clear_error, run};

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Saves into `store` with extra flags and returns the run and its manifest.
fn save(cluster: &Cluster, store: &str, extra: &[&str]) -> (Run, serde_json::Value) {
    let mut rest = vec!["snapshot", "save", store, "-w", "json"];
    rest.extend_from_slice(extra);
    let saved = run(cluster, &rest);
    saved.expect_code(0);
    let manifest = saved.json()["manifest"].clone();
    (saved, manifest)
}

/// The db bytes of a stored object (decompressed when zstd), trailer included.
fn stored_db(path: &Path, manifest: &serde_json::Value) -> Vec<u8> {
    let stored = std::fs::read(path).unwrap();
    assert_eq!(
        sha256_hex(&stored),
        manifest["object_sha256"],
        "stored bytes hash"
    );
    assert_eq!(
        stored.len() as u64,
        manifest["object_size"].as_u64().unwrap()
    );
    match manifest["compression"].as_str().unwrap() {
        "zstd" => zstd::decode_all(&stored[..]).unwrap(),
        _ => stored,
    }
}

fn leader_id(cluster: &Cluster) -> String {
    let status = run(cluster, &["endpoint", "status", "-w", "json"]).json();
    status["endpoints"][0]["leader"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn save_to_a_local_dir_streams_from_a_follower_and_etcd_accepts_the_file() {
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("/registry/secrets/default/s-", 200);
    let store = cluster.dir().join("backups");
    let store_arg = store.display().to_string();
    let (_, manifest) = save(&cluster, &store_arg, &["--label", "env=test"]);

    assert_ne!(
        manifest["member_id"],
        leader_id(&cluster),
        "the leader was spared"
    );
    assert_eq!(manifest["labels"]["env"], "test");
    assert_eq!(manifest["etcd_version"], cluster.version.version_string());
    assert!(manifest["revision"].as_i64().unwrap() >= 201);
    let object = manifest["object"].as_str().unwrap();
    assert!(
        object.starts_with(&format!(
            "etcd-{}/",
            manifest["cluster_id"].as_str().unwrap()
        )),
        "{object}"
    );
    assert!(
        object.contains(&format!("-rev{}-", manifest["revision"])) && object.ends_with(".db.zst"),
        "{object}"
    );

    // The stored object is db || sha256(db), exactly as etcd sent it.
    let db = stored_db(&store.join(object), &manifest);
    let (body, trailer) = db.split_at(db.len() - 32);
    assert_eq!(sha256_hex(body), hex::encode(trailer));
    assert_eq!(sha256_hex(body), manifest["db_sha256"]);
    assert_eq!(body.len() as u64, manifest["db_size"].as_u64().unwrap());
    // The manifest sits beside it, written last.
    assert!(store.join(format!("{object}.manifest.json")).exists());

    // etcd's own tool reads the decompressed file.
    let file = cluster.dir().join("restored-input.db");
    std::fs::write(&file, &db).unwrap();
    let status = cluster
        .version
        .snapshot_status(&file)
        .unwrap_or_else(|e| panic!("etcd rejected the snapshot: {e}"));
    assert!(
        status["revision"].as_i64().unwrap() >= manifest["revision"].as_i64().unwrap(),
        "{status}"
    );
    assert!(status["totalKey"].as_i64().unwrap() >= 200, "{status}");

    // list shows it; verify passes.
    let list = run(&cluster, &["snapshot", "list", &store_arg, "-w", "json"]);
    list.expect_code(0);
    let list = list.json();
    assert_eq!(list["backups"].as_array().unwrap().len(), 1);
    assert_eq!(list["backups"][0]["object"], object);
    assert_eq!(list["backups"][0]["complete"], true);
    let url = format!("{store_arg}/{object}");
    let verify = run(&cluster, &["snapshot", "verify", &url, "-w", "json"]);
    verify.expect_code(0);
    let report = verify.json();
    assert_eq!(report["manifest_checked"], true);
    assert_eq!(report["db_sha256"], manifest["db_sha256"]);
}

#[test]
fn forced_member_uncompressed_and_verified_after_upload() {
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("/k/", 20);
    let store = cluster.dir().join("b");
    let store_arg = store.display().to_string();
    let member = cluster.members[1].client_url.clone();
    let (_, manifest) = save(
        &cluster,
        &store_arg,
        &[
            "--endpoint",
            &member,
            "--compression",
            "none",
            "--verify-after-upload",
        ],
    );
    assert_eq!(manifest["endpoint"], member.as_str());
    assert_eq!(manifest["member_name"], "m1");
    assert_eq!(manifest["compression"], "none");
    assert_eq!(manifest["verified_after_upload"], true);
    let object = manifest["object"].as_str().unwrap();
    assert!(object.ends_with(".db"), "{object}");
    let db = stored_db(&store.join(object), &manifest);
    // Uncompressed: the stored file is what etcdctl snapshot save would have written.
    cluster
        .version
        .snapshot_status(&store.join(object))
        .unwrap_or_else(|e| panic!("etcd rejected the snapshot: {e}"));
    assert_eq!(db.len() as u64, manifest["db_size"].as_u64().unwrap() + 32);
}

#[test]
fn verify_refuses_a_flipped_byte() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 20);
    let store = cluster.dir().join("b");
    let store_arg = store.display().to_string();
    for compression in ["zstd", "none"] {
        let (_, manifest) = save(&cluster, &store_arg, &["--compression", compression]);
        let object = manifest["object"].as_str().unwrap();
        let path = store.join(object);
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let url = format!("{store_arg}/{object}");
        let verify = run(&cluster, &["snapshot", "verify", &url]);
        verify.expect_code(1);
        assert!(verify.stderr.contains("changed or damaged"), "{verify}");

        // Without its manifest the damage is still caught by etcd's own trailer.
        std::fs::remove_file(store.join(format!("{object}.manifest.json"))).unwrap();
        let bare = run(&cluster, &["snapshot", "verify", &url]);
        bare.expect_code(1);
        assert!(bare.stderr.contains("verify failed"), "{bare}");
    }
}

fn set_age(path: &Path, age: Duration) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

#[test]
fn prune_follows_the_rules_keeps_the_newest_and_clears_old_orphans() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("b");
    let store_arg = store.display().to_string();
    let mut objects = Vec::new();
    for i in 0..4 {
        cluster.put_keys(&format!("/round{i}/"), 3);
        let (_, manifest) = save(&cluster, &store_arg, &[]);
        objects.push(manifest["object"].as_str().unwrap().to_string());
    }
    let cluster_dir: PathBuf = store.join(objects[0].split('/').next().unwrap());
    // Two orphans: an old one (a crashed save) and a fresh one (a save finishing now).
    let old_orphan = cluster_dir.join("20200101T000000.000Z-rev1.db.zst");
    let new_orphan = cluster_dir.join("20200101T000001.000Z-rev2.db.zst");
    std::fs::write(&old_orphan, b"partial").unwrap();
    std::fs::write(&new_orphan, b"partial").unwrap();
    set_age(&old_orphan, Duration::from_secs(7200));

    let orphans = run(
        &cluster,
        &["snapshot", "list", &store_arg, "--orphans", "-w", "json"],
    )
    .json();
    assert_eq!(orphans["orphans"].as_array().unwrap().len(), 2, "{orphans}");

    let dry = run(
        &cluster,
        &[
            "snapshot",
            "prune",
            &store_arg,
            "--keep-last",
            "2",
            "--dry-run",
            "-w",
            "json",
        ],
    );
    dry.expect_code(0);
    let dry = dry.json();
    assert_eq!(dry["deleted"].as_array().unwrap().len(), 2, "{dry}");
    for object in &objects {
        assert!(store.join(object).exists(), "dry run deleted {object}");
    }

    let real = run(
        &cluster,
        &[
            "snapshot",
            "prune",
            &store_arg,
            "--keep-last",
            "2",
            "-w",
            "json",
        ],
    );
    real.expect_code(0);
    let report = real.json();
    let deleted: Vec<&str> = report["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["object"].as_str().unwrap())
        .collect();
    assert_eq!(deleted, [objects[1].as_str(), objects[0].as_str()]);
    for object in &objects[..2] {
        assert!(!store.join(object).exists());
        assert!(!store.join(format!("{object}.manifest.json")).exists());
    }
    for object in &objects[2..] {
        assert!(store.join(object).exists());
    }
    assert!(!old_orphan.exists(), "old orphan removed");
    assert!(
        new_orphan.exists(),
        "fresh orphan kept within the grace period"
    );

    // A policy that keeps nothing by itself still keeps the newest backup.
    let strict = run(
        &cluster,
        &[
            "snapshot",
            "prune",
            &store_arg,
            "--max-age",
            "1ms",
            "-w",
            "json",
        ],
    );
    strict.expect_code(0);
    let left = run(&cluster, &["snapshot", "list", &store_arg, "-w", "json"]).json();
    let left: Vec<&str> = left["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["object"].as_str().unwrap())
        .collect();
    assert_eq!(left, [objects[3].as_str()]);

    // Prune without rules is refused; delete removes the last one by URL.
    let no_rules = run(&cluster, &["snapshot", "prune", &store_arg]);
    assert_clear_error(&no_rules, "--keep-last");
    let url = format!("{store_arg}/{}", objects[3]);
    run(&cluster, &["snapshot", "delete", &url]).expect_code(0);
    assert!(!store.join(&objects[3]).exists());
    let again = run(&cluster, &["snapshot", "delete", &url]);
    assert_clear_error(&again, "no object");
}

#[test]
fn save_with_retention_and_metrics_file() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("b");
    let store_arg = store.display().to_string();
    let metrics = cluster.dir().join("etcd-backup.prom");
    let metrics_arg = metrics.display().to_string();
    for _ in 0..3 {
        save(
            &cluster,
            &store_arg,
            &["--keep-last", "2", "--metrics-file", &metrics_arg],
        );
    }
    let list = run(&cluster, &["snapshot", "list", &store_arg, "-w", "json"]).json();
    assert_eq!(list["backups"].as_array().unwrap().len(), 2);
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("etcdops_snapshot_last_attempt_success 1"),
        "{text}"
    );
    // Readable by node_exporter's own user, writable only by us, whatever the umask.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&metrics).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "metrics file mode {mode:o}");
    assert!(
        text.contains("etcdops_snapshot_last_success_timestamp_seconds "),
        "{text}"
    );

    // A failed save records the failure and keeps the last success.
    let mut a = args(&[
        "--endpoints",
        "http://127.0.0.1:1",
        "snapshot",
        "save",
        &store_arg,
    ]);
    a.extend(args(&["--metrics-file", &metrics_arg]));
    let failed = etcdops(&a, &[]);
    assert_eq!(failed.code, 2, "{failed}");
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("etcdops_snapshot_last_attempt_success 0"),
        "{text}"
    );
    assert!(
        text.contains("etcdops_snapshot_last_success_timestamp_seconds "),
        "{text}"
    );
    let list = run(&cluster, &["snapshot", "list", &store_arg, "-w", "json"]).json();
    assert_eq!(
        list["backups"].as_array().unwrap().len(),
        2,
        "earlier backups untouched"
    );
}

#[test]
fn unknown_store_schemes_and_bad_options_are_refused() {
    let cluster = Cluster::start(1, Security::Plain);
    let bad = run(&cluster, &["snapshot", "save", "ftp://host/backups"]);
    assert_clear_error(&bad, "ftp");
    let level = run(
        &cluster,
        &[
            "snapshot",
            "save",
            &cluster.dir().join("b").display().to_string(),
            "--compression-level",
            "40",
        ],
    );
    assert_clear_error(&level, "compression-level");
    assert!(!cluster.dir().join("b").join("etcd-").exists());
}
