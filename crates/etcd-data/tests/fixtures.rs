//! etcd's own data for each release in `tests/fixtures` (3.6.14, 3.7.1): its snapshot, a
//! stopped member's data dir and etcdutl's restores, read and compared with what etcd-data
//! computes and writes. Every test runs over every release (`common::RELEASES`).
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{Etcd, RELEASES};
use etcd_data::{
    DefragRequest, HashKv, HashKvRequest, StatusOptions, defrag_data_dir, hash_kv_data_dir,
};

/// etcdctl's `endpoint hashkv` of the fixture cluster's member a: (hash, compact, hash
/// revision).
fn live_hashkv(etcd: &Etcd) -> (u64, i64, i64) {
    let json = etcd.output("endpoint-hashkv.json");
    let first = &json[0]["HashKV"];
    (
        first["hash"].as_u64().unwrap(),
        first["compact_revision"].as_i64().unwrap(),
        first["hash_revision"].as_i64().unwrap(),
    )
}

/// etcdutl's `hashkv -w json` output `name`: (hash, compact, hash revision).
fn etcdutl_hashkv(etcd: &Etcd, name: &str) -> (u64, i64, i64) {
    let json = etcd.output(name);
    (
        json["hash"].as_u64().unwrap(),
        json["compactRevision"].as_i64().unwrap(),
        json["hashRevision"].as_i64().unwrap(),
    )
}

fn triple(got: &HashKv) -> (u64, i64, i64) {
    (u64::from(got.hash), got.compact_revision, got.hash_revision)
}

#[test]
fn snapshot_status_is_etcdutls_field_by_field() {
    for etcd in RELEASES {
        let want = etcd.output("etcdutl-snapshot-status.json");
        let got = etcd
            .snapshot()
            .status("snapshot", &StatusOptions::default())
            .unwrap();
        let v = etcd.version;
        assert_eq!(u64::from(got.hash), want["hash"].as_u64().unwrap(), "{v}");
        assert_eq!(got.revision, want["revision"].as_i64().unwrap(), "{v}");
        // etcdutl 3.6 and later count live keys as `totalKey`.
        assert_eq!(got.live_keys, want["totalKey"].as_u64().unwrap(), "{v}");
        assert_eq!(got.total_size, want["totalSize"].as_u64().unwrap(), "{v}");
        assert_eq!(
            got.storage_version.as_deref(),
            want["version"].as_str(),
            "{v}"
        );
        assert_eq!(got.storage_version.as_deref(), Some(etcd.storage_version));
    }
}

#[test]
fn hashkv_of_the_stopped_member_is_the_live_members_endpoint_hashkv() {
    for etcd in RELEASES {
        let v = etcd.version;
        let (_dir, data_dir) = etcd.stopped_member();
        let got = hash_kv_data_dir(&data_dir, &HashKvRequest::default()).unwrap();
        assert_eq!(triple(&got), live_hashkv(&etcd), "{v}");
        // The snapshot taken at the same revision holds the same history.
        let snapshot = etcd.snapshot();
        let from_snapshot = snapshot
            .hash_kv("snapshot", &HashKvRequest::default())
            .unwrap();
        assert_eq!(from_snapshot, got, "{v}");
        // The keys live at the latest revision: etcdutl 3.6's `totalKey` (a range's count).
        let want = etcd.output("etcdutl-snapshot-status.json");
        assert_eq!(
            from_snapshot.live_keys,
            want["totalKey"].as_u64().unwrap(),
            "{v}"
        );
        // An older revision hashes less; one below the compaction or past the end is refused.
        let older = snapshot
            .hash_kv(
                "snapshot",
                &HashKvRequest {
                    revision: 30,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(older.hash_revision, 30, "{v}");
        assert_ne!(older.hash, got.hash, "{v}");
        assert!(older.live_keys <= got.live_keys + 30, "{v}");
        let err = snapshot
            .hash_kv(
                "snapshot",
                &HashKvRequest {
                    revision: 10,
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("compacted"), "{v}: {err}");
        let err = snapshot
            .hash_kv(
                "snapshot",
                &HashKvRequest {
                    revision: 99,
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("past"), "{v}: {err}");
        // The db's own compaction asked for is no change; one older than it is refused (the
        // db no longer holds what a member compacted there hashes).
        let same = snapshot
            .hash_kv(
                "snapshot",
                &HashKvRequest {
                    compact_revision: Some(got.compact_revision),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(same, got, "{v}");
        let err = snapshot
            .hash_kv(
                "snapshot",
                &HashKvRequest {
                    compact_revision: Some(got.compact_revision - 1),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("compacted"), "{v}: {err}");
    }
}

/// A file's bytes and modification time.
fn bytes_and_mtime(path: &Path) -> (Vec<u8>, SystemTime) {
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    (std::fs::read(path).unwrap(), modified)
}

/// Sets `path`'s modification time to a day ago: a write afterwards would move it.
fn age(path: &Path) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let day_ago = SystemTime::now() - Duration::from_secs(86_400);
    file.set_modified(day_ago).unwrap();
}

#[test]
fn hashkv_of_a_file_is_etcdutls_and_never_writes_to_it() {
    for etcd in RELEASES {
        let v = etcd.version;
        let dir = tempfile::tempdir().unwrap();
        let (_member, data_dir) = etcd.stopped_member();
        let copies = [
            ("etcdutl-hashkv-snapshot.json", dir.path().join("snap.db")),
            (
                "etcdutl-hashkv-member-a.json",
                data_dir.join("member/snap/db"),
            ),
        ];
        std::fs::copy(etcd.snapshot_path(), &copies[0].1).unwrap();
        for (oracle, file) in &copies {
            age(file);
            let before = bytes_and_mtime(file);
            let opened = etcd_data::open_snapshot_file(file, None).unwrap();
            let got = opened.hash_kv("file", &HashKvRequest::default()).unwrap();
            drop(opened);
            // etcdutl 3.7's `hashkv` of the same file (3.6's panics on leased keys: its
            // cluster's `endpoint hashkv` stands in).
            let want = if etcd.etcdutl_hashkv {
                etcdutl_hashkv(&etcd, oracle)
            } else {
                live_hashkv(&etcd)
            };
            assert_eq!(triple(&got), want, "{v}: {oracle}");
            // etcdutl's hashkv writes to the file it opens (breaking a snapshot's trailer);
            // ours leaves every byte and the modification time as they were.
            assert!(
                bytes_and_mtime(file) == before,
                "{v}: {} changed",
                file.display()
            );
        }
        // And the data dir form reads the member's db without writing to it either.
        let db = &copies[1].1;
        let before = bytes_and_mtime(db);
        let got = hash_kv_data_dir(&data_dir, &HashKvRequest::default()).unwrap();
        assert_eq!(triple(&got), live_hashkv(&etcd), "{v}");
        assert!(
            bytes_and_mtime(db) == before,
            "{v}: the member's db changed"
        );
    }
}

#[test]
fn defrag_shrinks_the_stopped_member_and_keeps_every_key() {
    for etcd in RELEASES {
        let v = etcd.version;
        let (_dir, data_dir) = etcd.stopped_member();
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
        assert_eq!(done.size_before, 16_801_792, "{v}");
        assert!(done.size_after < 100_000, "{v}: {done:?}");
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
            ),
            "{v}"
        );
        assert_eq!(after.storage_version.as_deref(), Some(etcd.storage_version));
        assert_eq!(
            hash_kv_data_dir(&data_dir, &HashKvRequest::default()).unwrap(),
            before_hash,
            "{v}"
        );
        // No temporary file is left beside it.
        let names: Vec<String> = std::fs::read_dir(db.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["db"], "{v}");
    }
}

#[test]
fn a_member_running_on_the_data_dir_is_refused() {
    for etcd in RELEASES {
        let (_dir, data_dir) = etcd.stopped_member();
        let db = data_dir.join("member/snap/db");
        // What etcd's bbolt holds while etcd runs.
        let _held = common::hold_db_lock(&db);
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
    common::wal_frames(&bytes).into_iter().map(fields).collect()
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

/// The pages of a db: (high-water mark, pages reached, free pages).
fn pages(path: &Path) -> (u64, u64, u64) {
    use bbolt::{BoltDb, DbFile};
    let db = BoltDb::open(DbFile::whole(std::fs::File::open(path).unwrap()).unwrap()).unwrap();
    let usage = db
        .walk_pages(|_, _| Ok::<(), bbolt::BoltError>(()))
        .unwrap();
    (usage.high_water, usage.reached, usage.free)
}

/// Restores the release's snapshot as the fixture `tarball` was made (`request` into
/// `<tmp>/<dir_name>`), and compares field by field.
fn restore_matches_etcdutl(
    etcd: &Etcd,
    tarball: &str,
    dir_name: &str,
    request: impl Fn(&Path) -> etcd_data::RestoreRequest,
) {
    let v = etcd.version;
    let theirs_root = etcd.unpack(tarball);
    let theirs = theirs_root.path().join(dir_name);
    let ours_root = tempfile::tempdir().unwrap();
    let ours = ours_root.path().join(dir_name);
    let snapshot = etcd.snapshot();
    let restored = etcd_data::restore_snapshot(
        &etcd.snapshot_name(),
        &snapshot,
        &request(&ours),
        &etcd_data::Unguarded,
    )
    .unwrap();
    // The same files: db, WAL and the raft .snap file beside them.
    assert_eq!(files(&ours), files(&theirs), "{v}");
    let snap_name = files(&theirs)
        .into_iter()
        .find(|f| f.ends_with(".snap"))
        .expect("etcdutl writes a .snap file");
    // The db: every bucket, every key and value (membership, meta's consistent index, term,
    // storageVersion, confState, compaction marks, the key bucket with any bump).
    let db = "member/snap/db";
    assert_eq!(
        db_contents(&ours.join(db)),
        db_contents(&theirs.join(db)),
        "{v}"
    );
    // And in no more pages than etcdutl's (bbolt reuses the snapshot's free pages and keeps
    // small buckets inline); none of them more free.
    let (our_pages, their_pages) = (pages(&ours.join(db)), pages(&theirs.join(db)));
    assert!(
        our_pages.0 <= their_pages.0 && our_pages.2 <= their_pages.2,
        "{v}: ours (high water, reached, free) {our_pages:?}, etcdutl's {their_pages:?}"
    );
    assert_eq!(
        std::fs::metadata(ours.join(db)).unwrap().len(),
        our_pages.0 * 4096,
        "{v}"
    );
    // The WAL: every record, type, CRC and data (metadata with member and cluster IDs,
    // snapshot marks, one conf change entry per member, hard state).
    let wal = "member/wal/0000000000000000-0000000000000000.wal";
    let (our_wal, their_wal) = (wal_records(&ours.join(wal)), wal_records(&theirs.join(wal)));
    assert_eq!(our_wal.len(), their_wal.len(), "{v}");
    for (i, (a, b)) in our_wal.iter().zip(&their_wal).enumerate() {
        assert_eq!(a, b, "{v}: WAL record {i}");
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
    assert_eq!(restored.member_id, format!("{:x}", id(1)), "{v}");
    assert_eq!(restored.cluster_id, format!("{:x}", id(2)), "{v}");
    // The snap file: the same raft metadata, the same v2 store.
    let (our_meta, our_store) = snap_parts(&ours.join(&snap_name));
    let (their_meta, their_store) = snap_parts(&theirs.join(&snap_name));
    assert_eq!(our_meta, their_meta, "{v}");
    assert_eq!(
        v2_essentials(&our_store),
        v2_essentials(&their_store),
        "{v}"
    );
}

#[test]
fn restore_writes_what_etcdutl_writes_in_no_more_pages() {
    for etcd in RELEASES {
        restore_matches_etcdutl(&etcd, "etcdutl-restored-a.tar.gz", "restored-a", |dir| {
            etcd.restore_request_a(dir)
        });
    }
}

#[test]
fn restore_with_a_bump_and_mark_compacted_writes_what_etcdutl_writes() {
    for etcd in RELEASES {
        restore_matches_etcdutl(
            &etcd,
            "etcdutl-restored-bump1000-marked.tar.gz",
            "restored-bump",
            |dir| etcd.restore_request_bump(dir),
        );
    }
}

#[test]
fn the_snap_file_is_left_out_only_when_asked_and_only_for_3_7_or_later() {
    use common::{ETCD_3_6, ETCD_3_7};
    use etcd_data::V2Snapshot;
    // etcd 3.7 boots from the WAL's snapshot record and the db: the .snap file can go.
    let root = tempfile::tempdir().unwrap();
    let data_dir = root.path().join("restored");
    let request = etcd_data::RestoreRequest {
        v2_snapshot: V2Snapshot::Skip,
        ..ETCD_3_7.restore_request_a(&data_dir)
    };
    let snapshot = ETCD_3_7.snapshot();
    let first =
        etcd_data::restore_snapshot("s", &snapshot, &request, &etcd_data::Unguarded).unwrap();
    assert!(first.changed);
    assert_eq!(
        files(&data_dir),
        [
            "member/snap/db",
            "member/wal/0000000000000000-0000000000000000.wal"
        ]
    );
    // The same db and WAL as with the file.
    let with_root = tempfile::tempdir().unwrap();
    let with = with_root.path().join("restored");
    etcd_data::restore_snapshot(
        "s",
        &ETCD_3_7.snapshot(),
        &ETCD_3_7.restore_request_a(&with),
        &etcd_data::Unguarded,
    )
    .unwrap();
    let wal = "member/wal/0000000000000000-0000000000000000.wal";
    assert_eq!(
        wal_records(&data_dir.join(wal)),
        wal_records(&with.join(wal))
    );
    let db = "member/snap/db";
    assert_eq!(db_contents(&data_dir.join(db)), db_contents(&with.join(db)));
    // Repeated, it is recognised as done without the file; asked with it, it is not.
    let again =
        etcd_data::restore_snapshot("s", &ETCD_3_7.snapshot(), &request, &etcd_data::Unguarded)
            .unwrap();
    assert!(!again.changed);
    let err = etcd_data::restore_snapshot(
        "s",
        &ETCD_3_7.snapshot(),
        &etcd_data::RestoreRequest {
            v2_snapshot: V2Snapshot::Write,
            ..request.clone()
        },
        &etcd_data::Unguarded,
    )
    .unwrap_err();
    assert!(err.to_string().contains("holds"), "{err}");

    // etcd 3.6 loads the file on boot (3.5 takes the members from it): refused, nothing
    // written.
    let refused_dir = root.path().join("refused");
    let err = etcd_data::restore_snapshot(
        "snapshot-3.6.14.db",
        &ETCD_3_6.snapshot(),
        &etcd_data::RestoreRequest {
            v2_snapshot: V2Snapshot::Skip,
            ..ETCD_3_6.restore_request_a(&refused_dir)
        },
        &etcd_data::Unguarded,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("etcd 3.6") && text.contains(".snap") && !text.contains('\n'),
        "{text}"
    );
    assert_eq!(
        etcd_common::Hinted::kind(&err),
        Some(etcd_common::ErrorKind::InvalidInput)
    );
    assert!(!refused_dir.exists());
    let leftovers: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

/// Leaving the `.snap` file out of a 3.6 snapshot's restore is refused before anything is
/// written: not the missing parents of the data dir (nor a copy of the db beside it, which for
/// a large db is minutes of writing and its size in disk space, on the very disk the restore
/// needs).
#[test]
fn leaving_the_snap_file_out_of_a_3_6_restore_is_refused_before_any_directory_is_made() {
    use common::ETCD_3_6;
    use etcd_data::V2Snapshot;
    let root = tempfile::tempdir().unwrap();
    let data_dir = root.path().join("absent").join("parent").join("data");
    let err = etcd_data::restore_snapshot(
        "snapshot-3.6.14.db",
        &ETCD_3_6.snapshot(),
        &etcd_data::RestoreRequest {
            v2_snapshot: V2Snapshot::Skip,
            ..ETCD_3_6.restore_request_a(&data_dir)
        },
        &etcd_data::Unguarded,
    )
    .unwrap_err();
    assert!(err.to_string().contains("etcd 3.6"), "{err}");
    let made: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(made.is_empty(), "{made:?}");
}
