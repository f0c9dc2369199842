//! A zstd bomb never fills a disk: a 1 GiB stream of zeros in about 50 KiB, stored under a
//! full backup's name with a manifest that matches its stored bytes (SHA-256, size) but
//! records a 4 MiB db, is stopped at the manifest's `db_size` by `restore`, `status` and
//! `verify`, in a local store and in S3 (moto); without a manifest, the ceiling
//! (`ETCDOPS_MAX_DB_SIZE`, set small here) stops it. Every command runs with a file size
//! limit (`prlimit --fsize`) of 64 MiB, well under the bomb: a command that wrote past it
//! would die of SIGXFSZ instead of giving its one-line error. Nothing is left behind, in
//! `$TMPDIR` or beside the restore's target.

use std::path::Path;
use std::process::Command;

use etcdops_tests::{Run, S3Server, args, etcdops_path};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::assert_clear_error;

const WITH_MANIFEST: &str = "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst";
const WITHOUT_MANIFEST: &str = "etcd-abc/20261130T020000.000Z-rev20-0000000b.db.zst";
/// The db size the bomb's manifest records.
const DB_SIZE: u64 = 4 << 20;
/// The most bytes any file of a command may reach.
const FSIZE: u64 = 64 << 20;

/// 1 GiB of zeros as 1024 zstd frames of 1 MiB each (a zstd stream may hold many frames):
/// tiny to make and to store.
fn bomb() -> Vec<u8> {
    let frame = zstd::encode_all(&vec![0u8; 1 << 20][..], 3).unwrap();
    let bomb = frame.repeat(1024);
    assert!(bomb.len() < 256 << 10, "{} bytes", bomb.len());
    bomb
}

/// The manifest a red team writes beside the bomb: everything about the stored bytes true.
fn manifest(object: &str, bomb: &[u8]) -> String {
    json!({
        "format_version": 1,
        "tool": "etcdops",
        "tool_version": "0.1.0",
        "created_at": "2026-11-30T01:00:00Z",
        "completed_at": "2026-11-30T01:00:01Z",
        "cluster_id": "abc",
        "member_id": "8e9e05c52164694d",
        "member_name": "m0",
        "endpoint": "http://127.0.0.1:2379",
        "etcd_version": "3.5.1",
        "revision": 10,
        "raft_term": 2,
        "raft_index": 20,
        "db_size": DB_SIZE,
        "db_size_in_use": DB_SIZE,
        "db_sha256": "0".repeat(64),
        "object": object,
        "object_sha256": hex::encode(Sha256::digest(bomb)),
        "object_size": bomb.len(),
        "compression": "zstd",
        "compression_level": 3,
        "verified_after_upload": false,
        "labels": {}
    })
    .to_string()
}

/// `etcdops args` with no file growing past [`FSIZE`], `TMPDIR` set, and `env`.
fn limited(rest: &[&str], tmp: &Path, env: &[(&str, &str)]) -> Run {
    let output = Command::new("prlimit")
        .arg(format!("--fsize={FSIZE}"))
        .arg("--")
        .arg(etcdops_path())
        .args(rest)
        .env("TMPDIR", tmp)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    Run {
        args: args(rest),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn assert_empty(dir: &Path, after: &Run) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?} left in {dir:?} after\n{after}");
}

/// `restore`, `status` and `verify` of the bomb in `store` (flags and env for reaching it):
/// each stopped at the manifest's db size, nothing left.
fn refused_at_the_manifests_db_size(store: &str, work: &Path, env: &[(&str, &str)]) {
    let tmp = work.join("tmp");
    let target = work.join("target");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&target).unwrap();
    let object = format!("{store}/{WITH_MANIFEST}");
    let data_dir = target.join("data");
    let url = if object.contains("://") {
        object.clone()
    } else {
        format!("file://{object}")
    };
    for rest in [
        vec![
            "snapshot",
            "restore",
            url.as_str(),
            "--data-dir",
            data_dir.to_str().unwrap(),
        ],
        vec!["snapshot", "status", url.as_str()],
        vec!["snapshot", "verify", object.as_str()],
    ] {
        let run = limited(&rest, &tmp, env);
        assert_clear_error(&run, "its manifest's db_size records");
        assert!(run.stderr.contains(&DB_SIZE.to_string()), "{run}");
        assert!(run.stderr.contains("zstd bomb"), "{run}");
        assert_empty(&tmp, &run);
        assert_empty(&target, &run);
    }
}

#[test]
fn a_zstd_bomb_is_stopped_at_its_manifests_db_size_or_the_ceiling() {
    if etcdops_tests::skip_on_etcd_3_4("no etcd: a crafted store read offline") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("store");
    std::fs::create_dir_all(store.join("etcd-abc")).unwrap();
    let bomb = bomb();
    std::fs::write(store.join(WITH_MANIFEST), &bomb).unwrap();
    std::fs::write(
        store.join(format!("{WITH_MANIFEST}.manifest.json")),
        manifest(WITH_MANIFEST, &bomb),
    )
    .unwrap();
    std::fs::write(store.join(WITHOUT_MANIFEST), &bomb).unwrap();
    let store_arg = store.display().to_string();
    refused_at_the_manifests_db_size(&store_arg, &work.path().join("local"), &[]);

    // Without a manifest: the ceiling, from the environment here (2 MiB), as a stored
    // object, a local file and a restore's source.
    let tmp = work.path().join("tmp");
    let target = work.path().join("target");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&target).unwrap();
    let ceiling = [("ETCDOPS_MAX_DB_SIZE", "2MiB")];
    let bare_url = format!("file://{store_arg}/{WITHOUT_MANIFEST}");
    let bare_file = store.join(WITHOUT_MANIFEST).display().to_string();
    let data_dir = target.join("data");
    for rest in [
        vec!["snapshot", "status", bare_url.as_str()],
        vec!["snapshot", "status", bare_file.as_str()],
        vec![
            "snapshot",
            "restore",
            bare_file.as_str(),
            "--data-dir",
            data_dir.to_str().unwrap(),
        ],
    ] {
        let run = limited(&rest, &tmp, &ceiling);
        assert_clear_error(&run, "the largest db read without a manifest");
        assert!(run.stderr.contains("2097152 bytes"), "{run}");
        assert!(run.stderr.contains("ETCDOPS_MAX_DB_SIZE"), "{run}");
        assert_empty(&tmp, &run);
        assert_empty(&target, &run);
    }
    let run = limited(
        &["snapshot", "status", &bare_file],
        &tmp,
        &[("ETCDOPS_MAX_DB_SIZE", "lots")],
    );
    assert_clear_error(&run, "invalid ETCDOPS_MAX_DB_SIZE");

    // The same bomb in S3: copied there as a complete backup (copy streams the stored bytes
    // and checks them against the manifest), then refused by the readers as locally.
    let s3 = S3Server::start();
    s3.create_bucket("backups");
    let s3_env = [
        ("AWS_ACCESS_KEY_ID", "test-key-id"),
        ("AWS_SECRET_ACCESS_KEY", "test-secret"),
        ("AWS_REGION", "us-east-1"),
        ("ETCDOPS_STORE_ENDPOINT", s3.endpoint.as_str()),
        ("ETCDOPS_ALLOW_HTTP", "true"),
        ("ETCDOPS_S3_PATH_STYLE", "true"),
    ];
    let copied = limited(
        &["snapshot", "copy", &store_arg, "s3://backups/etcd", "-q"],
        &tmp,
        &s3_env,
    );
    copied.expect_code(0);
    refused_at_the_manifests_db_size("s3://backups/etcd", &work.path().join("s3"), &s3_env);
}

/// The red team that forges the bomb's object SHA-256 and size forges its `db_size` too: a
/// manifest recording a 1 TiB db. The manifest is no more trusted than the object, so the
/// ceiling (`ETCDOPS_MAX_DB_SIZE`, 8 MiB here) still bounds the unpacking: `restore`,
/// `status` and `verify` stop with one line, nothing written past the ceiling (a command
/// that unpacked on would die of SIGXFSZ at the 64 MiB file size limit).
#[test]
fn a_forged_db_size_does_not_lift_the_ceiling() {
    if etcdops_tests::skip_on_etcd_3_4("no etcd: a crafted store read offline") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("store");
    std::fs::create_dir_all(store.join("etcd-abc")).unwrap();
    let bomb = bomb();
    std::fs::write(store.join(WITH_MANIFEST), &bomb).unwrap();
    let mut forged: serde_json::Value =
        serde_json::from_str(&manifest(WITH_MANIFEST, &bomb)).unwrap();
    forged["db_size"] = json!(1u64 << 40);
    forged["db_size_in_use"] = json!(1u64 << 40);
    std::fs::write(
        store.join(format!("{WITH_MANIFEST}.manifest.json")),
        forged.to_string(),
    )
    .unwrap();
    let tmp = work.path().join("tmp");
    let target = work.path().join("target");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(&target).unwrap();
    let object = format!("{}/{WITH_MANIFEST}", store.display());
    let url = format!("file://{object}");
    let data_dir = target.join("data");
    for rest in [
        vec![
            "snapshot",
            "restore",
            url.as_str(),
            "--data-dir",
            data_dir.to_str().unwrap(),
        ],
        vec!["snapshot", "status", url.as_str()],
        vec!["snapshot", "verify", object.as_str()],
    ] {
        let run = limited(&rest, &tmp, &[("ETCDOPS_MAX_DB_SIZE", "8MiB")]);
        assert_clear_error(&run, "zstd bomb");
        assert_empty(&tmp, &run);
        assert_empty(&target, &run);
    }
}
