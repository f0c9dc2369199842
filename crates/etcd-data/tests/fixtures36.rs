//! etcd 3.6.14's own data (shared/fixtures/etcd-3.6.14): its snapshot, a stopped member's data
//! dir and etcdutl 3.6's restores, read and compared with what etcd-data computes and writes.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use etcd_data::{DefragRequest, HashKvRequest, StatusOptions, defrag_data_dir, hash_kv_data_dir};

/// The fixtures: `shared/fixtures/etcd-3.6.14` beside the repository (or above it).
fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|dir| dir.join("shared/fixtures/etcd-3.6.14"))
        .find(|dir| dir.join("snapshot-3.6.14.db").is_file())
        .expect("shared/fixtures/etcd-3.6.14 beside the repository")
}

/// Unpacks the fixture tarball `name` into a new temporary dir.
fn unpack(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .arg("xzf")
        .arg(fixture_dir().join(name))
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success(), "tar xzf {name}");
    dir
}

/// etcdctl 3.6.14's `endpoint hashkv` of the fixture cluster: (hash, compact, hash revision).
fn live_hashkv() -> (u64, i64, i64) {
    let text = std::fs::read_to_string(fixture_dir().join("outputs/endpoint-hashkv.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let first = &json[0]["HashKV"];
    (
        first["hash"].as_u64().unwrap(),
        first["compact_revision"].as_i64().unwrap(),
        first["hash_revision"].as_i64().unwrap(),
    )
}

#[test]
fn hashkv_of_the_stopped_3_6_member_is_the_live_members_endpoint_hashkv() {
    let (hash, compact, revision) = live_hashkv();
    let dir = unpack("member-a-data-dir-stopped.tar.gz");
    let got = hash_kv_data_dir(&dir.path().join("a"), &HashKvRequest::default()).unwrap();
    assert_eq!(
        (u64::from(got.hash), got.compact_revision, got.hash_revision),
        (hash, compact, revision)
    );
    // The snapshot taken at the same revision holds the same history.
    let snapshot =
        etcd_data::open_snapshot_file(&fixture_dir().join("snapshot-3.6.14.db"), None).unwrap();
    let from_snapshot = snapshot
        .hash_kv("snapshot", &HashKvRequest::default())
        .unwrap();
    assert_eq!(from_snapshot, got);
    // An older revision hashes less; one below the compaction or past the end is refused.
    let older = snapshot
        .hash_kv("snapshot", &HashKvRequest { revision: 30 })
        .unwrap();
    assert_eq!(older.hash_revision, 30);
    assert_ne!(older.hash, got.hash);
    let err = snapshot
        .hash_kv("snapshot", &HashKvRequest { revision: 10 })
        .unwrap_err();
    assert!(err.to_string().contains("compacted"), "{err}");
    let err = snapshot
        .hash_kv("snapshot", &HashKvRequest { revision: 99 })
        .unwrap_err();
    assert!(err.to_string().contains("past"), "{err}");
}

#[test]
fn defrag_shrinks_the_stopped_3_6_member_and_keeps_every_key() {
    let dir = unpack("member-a-data-dir-stopped.tar.gz");
    let data_dir = dir.path().join("a");
    let before_hash = hash_kv_data_dir(&data_dir, &HashKvRequest::default()).unwrap();
    let db = data_dir.join("member/snap/db");
    let status_of = |path: &Path| {
        etcd_data::open_snapshot_file(path, None)
            .unwrap()
            .status("db", &StatusOptions::default())
            .unwrap()
    };
    let before = status_of(&db);
    let done = defrag_data_dir(&DefragRequest {
        data_dir: data_dir.clone(),
    })
    .unwrap();
    assert_eq!(done.size_before, 16_801_792);
    assert!(done.size_after < 100_000, "{done:?}");
    assert_eq!(std::fs::metadata(&db).unwrap().len(), done.size_after);
    let after = status_of(&db);
    // Same buckets, keys and values: the status hash covers every one of them.
    assert_eq!(
        (after.hash, after.total_key, after.live_keys, after.revision),
        (
            before.hash,
            before.total_key,
            before.live_keys,
            before.revision
        )
    );
    assert_eq!(after.storage_version.as_deref(), Some("3.6.0"));
    assert_eq!(
        hash_kv_data_dir(&data_dir, &HashKvRequest::default()).unwrap(),
        before_hash
    );
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["db"]);
}

#[test]
fn a_member_running_on_the_data_dir_is_refused() {
    use rustix::fs::{FlockOperation, flock};
    let dir = unpack("member-a-data-dir-stopped.tar.gz");
    let data_dir = dir.path().join("a");
    let db = data_dir.join("member/snap/db");
    // What etcd's bbolt holds while etcd runs.
    let held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&db)
        .unwrap();
    flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
    let before = std::fs::read(&db).unwrap();
    let err = defrag_data_dir(&DefragRequest {
        data_dir: data_dir.clone(),
    })
    .unwrap_err();
    assert!(err.to_string().contains("running"), "{err}");
    let err = hash_kv_data_dir(&data_dir, &HashKvRequest::default()).unwrap_err();
    assert!(err.to_string().contains("running"), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before, "the db is untouched");
}
