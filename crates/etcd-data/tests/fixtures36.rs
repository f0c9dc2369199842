//! etcd 3.6.14's own data (tests/fixtures/etcd-3.6.14): its snapshot, a stopped member's data
//! dir and etcdutl 3.6's restores, read and compared with what etcd-data computes and writes.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

use std::path::{Path, PathBuf};

use etcd_data::{DefragRequest, HashKvRequest, StatusOptions, defrag_data_dir, hash_kv_data_dir};

/// The fixtures, copied into the repository: `tests/fixtures/etcd-3.6.14`.
fn fixture_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/etcd-3.6.14");
    assert!(
        dir.join("snapshot-3.6.14.db").is_file(),
        "{} is missing",
        dir.display()
    );
    dir
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

/// Every top-level bucket with every key/value pair, in order.
type Contents = Vec<(Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>)>;

fn db_contents(path: &Path) -> Contents {
    use bbolt::{BoltDb, DbFile};
    let db = BoltDb::open(DbFile::whole(std::fs::File::open(path).unwrap()).unwrap()).unwrap();
    db.check().unwrap();
    let root = db.root();
    let mut names = Vec::new();
    db.for_each(&root, |e| {
        names.push(e.key.to_vec());
        Ok::<(), bbolt::BoltError>(())
    })
    .unwrap();
    names
        .into_iter()
        .map(|name| {
            let bucket = db.bucket(&root, &name).unwrap().unwrap();
            let mut pairs = Vec::new();
            db.for_each(&bucket, |e| {
                pairs.push((e.key.to_vec(), e.value.to_vec()));
                Ok::<(), bbolt::BoltError>(())
            })
            .unwrap();
            (name, pairs)
        })
        .collect()
}

fn varint(bytes: &[u8], at: &mut usize) -> u64 {
    let (mut value, mut shift) = (0u64, 0);
    loop {
        let byte = bytes[*at];
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte < 0x80 {
            return value;
        }
    }
}

/// A protobuf message's fields in order: (number, varint or bytes).
type Fields = Vec<(u64, Result<u64, Vec<u8>>)>;

/// Parses the fields of one protobuf message.
fn fields(bytes: &[u8]) -> Fields {
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let key = varint(bytes, &mut at);
        let value = match key & 7 {
            0 => Ok(varint(bytes, &mut at)),
            2 => {
                let len = varint(bytes, &mut at) as usize;
                at += len;
                Err(bytes[at - len..at].to_vec())
            }
            other => panic!("wire type {other}"),
        };
        out.push((key >> 3, value));
    }
    out
}

/// The WAL's records (type, crc, data), framing checked.
fn wal_records(path: &Path) -> Vec<Fields> {
    let bytes = std::fs::read(path).unwrap();
    let mut at = 0;
    let mut records = Vec::new();
    while at + 8 <= bytes.len() {
        let word = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        if word == 0 {
            break;
        }
        let len = (word & 0x00FF_FFFF_FFFF_FFFF) as usize;
        let pad = if word >> 63 == 1 {
            ((word >> 56) & 0x7) as usize
        } else {
            0
        };
        records.push(fields(&bytes[at + 8..at + 8 + len]));
        at += 8 + len + pad;
    }
    records
}

/// The files under `dir`, relative, sorted (without etcdops' restore marker).
fn files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.retain(|f| f != &format!("member/{}", etcd_data::MARKER_FILE));
    out.sort();
    out
}

/// A `.snap` file: its raft snapshot metadata (bytes) and its v2 store JSON.
fn snap_parts(path: &Path) -> (Vec<u8>, serde_json::Value) {
    let outer = fields(&std::fs::read(path).unwrap());
    let data = outer
        .iter()
        .find_map(|(n, v)| (*n == 2).then(|| v.clone().unwrap_err()))
        .unwrap();
    let snapshot = fields(&data);
    let field = |n: u64| {
        snapshot
            .iter()
            .find_map(|(f, v)| (*f == n).then(|| v.clone().unwrap_err()))
            .unwrap()
    };
    (field(2), serde_json::from_slice(&field(1)).unwrap())
}

/// What of a v2 store etcd fixes: each member's raft attributes, the events as a set of
/// (action, key, value), the stats and the current index (etcd adds the members in its map's
/// order, so which one got which index varies from run to run).
fn v2_essentials(store: &serde_json::Value) -> serde_json::Value {
    let members = &store["Root"]["Children"]["0"]["Children"]["members"]["Children"];
    let attributes: std::collections::BTreeMap<String, serde_json::Value> = members
        .as_object()
        .unwrap()
        .iter()
        .map(|(id, m)| (id.clone(), m["Children"]["raftAttributes"]["Value"].clone()))
        .collect();
    let queue = &store["WatcherHub"]["EventHistory"]["Queue"];
    let mut events: Vec<String> = queue["Events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e.is_null())
        .map(|e| {
            format!(
                "{} {} {}",
                e["action"], e["node"]["key"], e["node"]["value"]
            )
        })
        .collect();
    events.sort();
    serde_json::json!({
        "members": attributes,
        "events": events,
        "queue": [queue["Size"].clone(), queue["Front"].clone(), queue["Back"].clone(),
                  queue["Capacity"].clone(), queue["Events"].as_array().unwrap().len()],
        "history": [store["WatcherHub"]["EventHistory"]["StartIndex"].clone(),
                    store["WatcherHub"]["EventHistory"]["LastIndex"].clone()],
        "stats": store["Stats"].clone(),
        "current": [store["CurrentIndex"].clone(), store["CurrentVersion"].clone()],
        "slash1": store["Root"]["Children"]["1"].clone(),
    })
}

/// Restores the 3.6 snapshot as the fixture `tarball` was made, and compares field by field.
fn restore_matches_etcdutl(tarball: &str, dir_name: &str, request: etcd_data::RestoreRequest) {
    let theirs_root = unpack(tarball);
    let theirs = theirs_root.path().join(dir_name);
    let ours_root = tempfile::tempdir().unwrap();
    let ours = ours_root.path().join(dir_name);
    let snapshot =
        etcd_data::open_snapshot_file(&fixture_dir().join("snapshot-3.6.14.db"), None).unwrap();
    let request = etcd_data::RestoreRequest {
        data_dir: ours.clone(),
        ..request
    };
    let restored = etcd_data::restore_snapshot(
        "snapshot-3.6.14.db",
        &snapshot,
        &request,
        &etcd_data::Unguarded,
    )
    .unwrap();
    // The same files: db, WAL and the raft .snap file beside them.
    assert_eq!(files(&ours), files(&theirs));
    let snap_name = files(&theirs)
        .into_iter()
        .find(|f| f.ends_with(".snap"))
        .expect("3.6 writes a .snap file");
    // The db: every bucket, every key and value (membership, meta's consistent index, term,
    // storageVersion, confState, compaction marks, the key bucket with any bump).
    let db = "member/snap/db";
    assert_eq!(db_contents(&ours.join(db)), db_contents(&theirs.join(db)));
    // The WAL: every record, type, CRC and data (metadata with member and cluster IDs,
    // snapshot marks, one conf change entry per member, hard state).
    let wal = "member/wal/0000000000000000-0000000000000000.wal";
    let (our_wal, their_wal) = (wal_records(&ours.join(wal)), wal_records(&theirs.join(wal)));
    assert_eq!(our_wal.len(), their_wal.len());
    for (i, (a, b)) in our_wal.iter().zip(&their_wal).enumerate() {
        assert_eq!(a, b, "WAL record {i}");
    }
    // Member and cluster IDs as the WAL's metadata record holds them.
    let metadata = fields(their_wal[1][2].1.as_ref().unwrap_err());
    let id = |n: u64| {
        metadata
            .iter()
            .find(|(f, _)| *f == n)
            .unwrap()
            .1
            .clone()
            .unwrap()
    };
    assert_eq!(restored.member_id, format!("{:x}", id(1)));
    assert_eq!(restored.cluster_id, format!("{:x}", id(2)));
    // The snap file: the same raft metadata, the same v2 store.
    let (our_meta, our_store) = snap_parts(&ours.join(&snap_name));
    let (their_meta, their_store) = snap_parts(&theirs.join(&snap_name));
    assert_eq!(our_meta, their_meta);
    assert_eq!(v2_essentials(&our_store), v2_essentials(&their_store));
}

#[test]
fn restore_of_the_3_6_snapshot_writes_what_etcdutl_3_6_writes() {
    restore_matches_etcdutl(
        "etcdutl-restored-a.tar.gz",
        "restored-a",
        etcd_data::RestoreRequest {
            name: "a".into(),
            initial_cluster:
                "a=http://127.0.0.1:45111,b=http://127.0.0.1:45112,c=http://127.0.0.1:45113".into(),
            initial_cluster_token: "restored36".into(),
            initial_advertise_peer_urls: vec!["http://127.0.0.1:45111".into()],
            ..etcd_data::RestoreRequest::default()
        },
    );
}

#[test]
fn restore_with_a_bump_and_mark_compacted_writes_what_etcdutl_3_6_writes() {
    restore_matches_etcdutl(
        "etcdutl-restored-bump1000-marked.tar.gz",
        "restored-bump",
        etcd_data::RestoreRequest {
            name: "a".into(),
            initial_cluster: "a=http://127.0.0.1:45111".into(),
            initial_cluster_token: "restored36".into(),
            initial_advertise_peer_urls: vec!["http://127.0.0.1:45111".into()],
            bump_revision: 1000,
            mark_compacted: true,
            ..etcd_data::RestoreRequest::default()
        },
    );
}
