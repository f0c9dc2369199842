//! `etcdops snapshot restore` against real etcd: snapshots saved by etcdops (plain and zstd)
//! from a 3-member cluster are restored natively into 1 and 3 new data dirs with new names and
//! URLs; real etcd must start from them, serve every key with its value, list exactly the new
//! members and accept writes at a revision past the snapshot's. Refusals leave nothing behind.

use std::path::{Path, PathBuf};

use etcdops_tests::{Cluster, Run, Security, etcdops};

use crate::run;

/// Writes small keys, values larger than a page, overwrites and deletions.
fn write_keys(cluster: &Cluster) {
    cluster.put_keys("/restore/small/", 200);
    cluster.put_random("/restore/big/", 40, 6000);
    for i in 0..20 {
        cluster.put(
            &format!("/restore/small/{i:04}"),
            format!("overwritten-{i}"),
        );
    }
    for i in 180..200 {
        cluster.delete(&format!("/restore/small/{i:04}"));
    }
}

/// `etcdops snapshot restore FILE` as member `index` of `target`, with `extra` flags.
pub(crate) fn restore(file: &Path, target: &Cluster, index: usize, extra: &[&str]) -> Run {
    restore_from(&file.display().to_string(), target, index, extra, &[])
}

/// `etcdops snapshot restore SOURCE` (a file, backup URL or store) as member `index` of
/// `target`, with `extra` flags and `env` (store credentials), `-w json`.
pub(crate) fn restore_from(
    source: &str,
    target: &Cluster,
    index: usize,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let member = &target.members[index];
    let mut args: Vec<String> = [
        "snapshot",
        "restore",
        source,
        "--data-dir",
        &member.data_dir.display().to_string(),
        "--name",
        &member.name,
        "--initial-cluster",
        &target.initial_cluster(),
        "--initial-cluster-token",
        target.token(),
        "--initial-advertise-peer-urls",
        &member.peer_url,
        "-w",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    etcdops(&args, env)
}

/// Every key under /restore/ with its value and revisions, as etcdops reads them.
fn all_keys(cluster: &Cluster) -> serde_json::Value {
    let got = run(cluster, &["get", "/restore/", "--prefix", "-w", "json"]);
    got.expect_code(0);
    got.json()["kvs"].clone()
}

/// Asserts that `restored` serves `expected`, lists exactly its own members, and accepts a
/// write at a revision past `snapshot_revision`.
fn assert_serves(restored: &Cluster, expected: &serde_json::Value, snapshot_revision: i64) {
    let kvs = all_keys(restored);
    assert_eq!(kvs.as_array().unwrap().len(), 220, "every live key");
    assert_eq!(&kvs, expected, "same keys, values and revisions");

    let listed = run(restored, &["member", "list", "-w", "json"]);
    listed.expect_code(0);
    let mut members: Vec<(String, String)> = listed.json()["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["peer_urls"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    members.sort();
    let mut wanted: Vec<(String, String)> = restored
        .members
        .iter()
        .map(|m| (m.name.clone(), m.peer_url.clone()))
        .collect();
    wanted.sort();
    assert_eq!(members, wanted, "exactly the new members:\n{listed}");

    let revision = restored.put("/restore/after", "written after restore");
    assert!(
        revision > snapshot_revision,
        "write at {revision}, snapshot at {snapshot_revision}"
    );
    let got = run(restored, &["get", "/restore/after", "-w", "json"]);
    got.expect_code(0);
    assert_eq!(got.json()["kvs"].as_array().unwrap().len(), 1, "{got}");
}

#[test]
fn restore_into_three_new_members_serves_every_key() {
    let source = Cluster::start(3, Security::Plain);
    write_keys(&source);
    let expected = all_keys(&source);
    let store = source.dir().join("store");
    let file = crate::save_snapshot(&source, &store, "none");

    let mut restored = Cluster::plan_restore(3, "r");
    let mut snapshot_revision = 0;
    let mut ids = Vec::new();
    for i in 0..3 {
        let done = restore(&file, &restored, i, &[]);
        done.expect_code(0);
        let doc = done.json();
        snapshot_revision = doc["revision"].as_i64().unwrap();
        ids.push(doc["member_id"].as_str().unwrap().to_string());
        assert_eq!(doc["members"].as_array().unwrap().len(), 3, "{done}");
        assert_eq!(doc["trailer"], "verified");
    }
    ids.dedup();
    assert_eq!(ids.len(), 3, "one ID per member");
    for member in &restored.members {
        let mode = std::fs::metadata(&member.data_dir).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700
        );
    }
    restored.start_restored();
    assert_serves(&restored, &expected, snapshot_revision);
}

#[test]
fn restore_of_a_zstd_snapshot_into_one_member_with_a_wal_dir() {
    let source = Cluster::start(3, Security::Plain);
    write_keys(&source);
    let expected = all_keys(&source);
    let store = source.dir().join("store");
    let file = crate::save_snapshot(&source, &store, "zstd");

    let mut restored = Cluster::plan_restore(1, "solo");
    let wal_dir = restored.dir().join("wal-elsewhere");
    let done = restore(
        &file,
        &restored,
        0,
        &["--wal-dir", &wal_dir.display().to_string()],
    );
    done.expect_code(0);
    let snapshot_revision = done.json()["revision"].as_i64().unwrap();
    assert!(
        wal_dir
            .join("0000000000000000-0000000000000000.wal")
            .exists()
    );
    assert!(!restored.members[0].data_dir.join("member/wal").exists());

    // etcd needs the same --wal-dir: restore into the default layout instead for the run,
    // by moving the WAL where etcd looks by default.
    std::fs::rename(&wal_dir, restored.members[0].data_dir.join("member/wal")).unwrap();
    restored.start_restored();
    assert_serves(&restored, &expected, snapshot_revision);
}

fn only_entry_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn restore_refuses_a_non_empty_data_dir_and_a_corrupted_snapshot() {
    let source = Cluster::start(1, Security::Plain);
    source.put_keys("/restore/small/", 50);
    let store = source.dir().join("store");
    let file = crate::save_snapshot(&source, &store, "none");
    let target = Cluster::plan_restore(1, "t");
    let data_dir = target.members[0].data_dir.clone();

    // A data dir with something in it is refused and left as it was.
    std::fs::create_dir_all(&data_dir).unwrap();
    std::fs::write(data_dir.join("precious"), "keep me").unwrap();
    let refused = restore(&file, &target, 0, &[]);
    crate::assert_clear_error(&refused, "not empty");
    assert_eq!(only_entry_names(&data_dir), ["precious"]);
    assert_eq!(
        std::fs::read_to_string(data_dir.join("precious")).unwrap(),
        "keep me"
    );
    std::fs::remove_dir_all(&data_dir).unwrap();

    // One flipped byte in the db: etcd's SHA-256 trailer no longer matches.
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5A;
    let damaged = target.dir().join("damaged.db");
    std::fs::write(&damaged, &bytes).unwrap();
    let refused = restore(&damaged, &target, 0, &[]);
    crate::assert_clear_error(&refused, "SHA-256");
    assert!(!data_dir.exists(), "nothing written:\n{refused}");

    // Both meta pages damaged: --skip-hash-check passes the trailer, the bbolt check refuses.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[16] ^= 0xFF;
    bytes[4096 + 16] ^= 0xFF;
    std::fs::write(&damaged, &bytes).unwrap();
    let refused = restore(&damaged, &target, 0, &["--skip-hash-check"]);
    crate::assert_clear_error(&refused, "bbolt");
    assert!(!data_dir.exists(), "nothing written:\n{refused}");
    assert_eq!(
        only_entry_names(target.dir()),
        ["damaged.db"],
        "no staging dir left behind"
    );

    // A name not in --initial-cluster is refused before anything is read.
    let mut args = vec![
        "snapshot".to_string(),
        "restore".into(),
        file.display().to_string(),
        "--data-dir".into(),
        data_dir.display().to_string(),
        "--name".into(),
        "nobody".into(),
        "--initial-cluster".into(),
        target.initial_cluster(),
        "--initial-cluster-token".into(),
        target.token().into(),
    ];
    args.extend([
        "--initial-advertise-peer-urls".into(),
        target.members[0].peer_url.clone(),
    ]);
    crate::assert_clear_error(&etcdops(&args, &[]), "--name");
    assert!(!data_dir.exists());

    // The intact snapshot restores.
    restore(&file, &target, 0, &[]).expect_code(0);
}

#[test]
fn bump_revision_moves_revisions_past_the_snapshot_and_marks_them_compacted() {
    let source = Cluster::start(1, Security::Plain);
    write_keys(&source);
    let expected = all_keys(&source);
    let store = source.dir().join("store");
    let file = crate::save_snapshot(&source, &store, "none");
    let mut restored = Cluster::plan_restore(1, "b");

    let refused = restore(&file, &restored, 0, &["--bump-revision", "1000"]);
    crate::assert_clear_error(&refused, "--mark-compacted");
    assert!(!restored.members[0].data_dir.exists());

    let done = restore(
        &file,
        &restored,
        0,
        &["--bump-revision", "1000", "--mark-compacted"],
    );
    done.expect_code(0);
    let bumped = done.json()["revision"].as_i64().unwrap();
    let status = etcdops(
        &[
            "snapshot".to_string(),
            "status".into(),
            restored.members[0]
                .data_dir
                .join("member/snap/db")
                .display()
                .to_string(),
            "-w".into(),
            "json".into(),
        ],
        &[],
    );
    status.expect_code(0);
    let snapshot_revision = bumped - 1000;
    assert_eq!(status.json()["revision"], bumped, "{status}");
    assert_eq!(
        status.json()["scheduled_compact_revision"],
        bumped,
        "{status}"
    );

    restored.start_restored();
    assert_serves(&restored, &expected, bumped);
    // Revisions before the bump are compacted away.
    let old = restored.etcdctl(&[
        "--endpoints",
        &restored.endpoints(),
        "get",
        "/restore/small/0000",
        "--rev",
        &snapshot_revision.to_string(),
    ]);
    assert!(!old.status.success());
    assert!(
        String::from_utf8_lossy(&old.stderr).contains("compacted"),
        "{}",
        String::from_utf8_lossy(&old.stderr)
    );
}

#[test]
fn restore_writes_a_marker_and_repeating_it_changes_nothing() {
    let source = Cluster::start(1, Security::Plain);
    write_keys(&source);
    let expected = all_keys(&source);
    let store = source.dir().join("store");
    let file = crate::save_snapshot(&source, &store, "none");
    let mut restored = Cluster::plan_restore(1, "m");
    let data_dir = restored.members[0].data_dir.clone();

    let done = restore(&file, &restored, 0, &[]);
    done.expect_code(0);
    assert_eq!(done.json()["changed"], true, "{done}");
    let snapshot_revision = done.json()["revision"].as_i64().unwrap();
    let marker_path = data_dir.join("member/etcdops-restore.json");
    let marker_meta = std::fs::metadata(&marker_path).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&marker_meta.permissions()) & 0o777,
        0o600
    );
    let marker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&marker_path).unwrap()).unwrap();
    assert_eq!(marker["db_sha256"], done.json()["db_sha256"]);
    assert_eq!(marker["name"], restored.members[0].name.as_str());
    assert_eq!(marker["initial_cluster"], restored.initial_cluster());
    assert_eq!(marker["initial_cluster_token"], restored.token());
    assert!(marker["wal_size"].as_u64().unwrap() > 0, "{marker}");

    let db = data_dir.join("member/snap/db");
    let before = (
        std::fs::metadata(&db).unwrap().modified().unwrap(),
        std::fs::read(&db).unwrap(),
        std::fs::read(&marker_path).unwrap(),
    );
    // The same call again: nothing changes.
    let again = restore(&file, &restored, 0, &[]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false, "{again}");
    let mut args: Vec<String> = again.args.clone();
    let w = args.iter().position(|a| a == "-w").unwrap();
    args[w + 1] = "simple".into();
    let simple = etcdops(&args, &[]);
    simple.expect_code(0);
    assert!(simple.stdout.contains("already restored"), "{simple}");
    let after = (
        std::fs::metadata(&db).unwrap().modified().unwrap(),
        std::fs::read(&db).unwrap(),
        std::fs::read(&marker_path).unwrap(),
    );
    assert!(before == after, "the data dir was touched");

    // A different request on that data dir is still refused.
    let mut other = Cluster::plan_restore(1, "m");
    other.members[0].data_dir = data_dir.clone();
    let refused = restore(&file, &other, 0, &[]);
    crate::assert_clear_error(
        &refused,
        "holds an etcdops restore of another snapshot or request",
    );

    restored.start_restored();
    assert_serves(&restored, &expected, snapshot_revision);
}

#[test]
fn restore_from_a_surviving_members_data_dir_after_quorum_loss() {
    let mut source = Cluster::start(3, Security::Plain);
    write_keys(&source);
    let expected = all_keys(&source);
    // etcd commits its db file in batches (every 100 ms): wait until the survivor's db on disk
    // holds the last write, read with our own status reader (a torn read just retries).
    let target = run(
        &source,
        &["get", "/", "--prefix", "--count-only", "-w", "json"],
    )
    .json()["revision"]
        .as_i64()
        .unwrap();
    let db_path = source.members[0].data_dir.join("member/snap/db");
    let db_arg = db_path.display().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let status = run(
            &source,
            &[
                "snapshot",
                "status",
                &db_arg,
                "--skip-hash-check",
                "-w",
                "json",
            ],
        );
        if status.code == 0 && status.json()["revision"].as_i64().unwrap_or(0) >= target {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the db never caught up:\n{status}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    source.kill_member_now(1);
    source.kill_member_now(2);
    source.kill_member_now(0);
    let survivor = source.members[0].data_dir.clone();
    let survivor_db = survivor.join("member/snap/db");
    let before = std::fs::read(&survivor_db).unwrap();
    let before_names = only_entry_names(&survivor.join("member"));

    let mut restored = Cluster::plan_restore(1, "q");
    let member = &restored.members[0];
    let args: Vec<String> = [
        "snapshot",
        "restore",
        "--from-data-dir",
        &survivor.display().to_string(),
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
        "-w",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let done = etcdops(&args, &[]);
    done.expect_code(0);
    assert_eq!(done.json()["trailer"], "absent", "{done}");
    let snapshot_revision = done.json()["revision"].as_i64().unwrap();
    assert_eq!(
        std::fs::read(&survivor_db).unwrap(),
        before,
        "source db untouched"
    );
    assert_eq!(only_entry_names(&survivor.join("member")), before_names);

    restored.start_restored();
    assert_serves(&restored, &expected, snapshot_revision);

    // The survivor's dir restored onto itself: read first, then moved aside.
    let mut in_place = args.clone();
    let d = in_place.iter().position(|a| a == "--data-dir").unwrap();
    in_place[d + 1] = survivor.display().to_string();
    in_place.push("--move-aside".into());
    let done = etcdops(&in_place, &[]);
    done.expect_code(0);
    let aside = moved_aside(&survivor);
    assert_eq!(aside.len(), 1, "{done}");
    assert_eq!(
        std::fs::read(aside[0].join("member/snap/db")).unwrap(),
        before
    );
    assert!(survivor.join("member/etcdops-restore.json").exists());
}

/// The `DIR.bak-*` siblings of `dir`.
fn moved_aside(dir: &Path) -> Vec<PathBuf> {
    let prefix = format!("{}.bak-", dir.file_name().unwrap().to_string_lossy());
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&prefix)
        })
        .collect();
    found.sort();
    found
}

#[test]
fn move_aside_keeps_the_old_data_dir_and_guards_a_dir_a_member_ran_on() {
    let source = Cluster::start(1, Security::Plain);
    write_keys(&source);
    let expected = all_keys(&source);
    let store = source.dir().join("store");
    let file = crate::save_snapshot(&source, &store, "none");
    let mut restored = Cluster::plan_restore(1, "a");
    let data_dir = restored.members[0].data_dir.clone();

    // An old, non-empty data dir is renamed, never deleted.
    std::fs::create_dir_all(data_dir.join("member")).unwrap();
    std::fs::write(data_dir.join("member/precious"), "keep me").unwrap();
    let done = restore(&file, &restored, 0, &["--move-aside"]);
    done.expect_code(0);
    let aside = moved_aside(&data_dir);
    assert_eq!(aside.len(), 1, "{done}");
    let stamp = aside[0]
        .to_string_lossy()
        .rsplit(".bak-")
        .next()
        .unwrap()
        .to_string();
    assert_eq!(stamp.len(), "20261129T190500Z".len(), "{stamp}");
    assert!(
        stamp.ends_with('Z') && stamp.as_bytes()[8] == b'T',
        "{stamp}"
    );
    assert_eq!(
        std::fs::read_to_string(aside[0].join("member/precious")).unwrap(),
        "keep me"
    );
    assert_eq!(
        done.json()["moved_aside"][0],
        aside[0].display().to_string()
    );
    let snapshot_revision = done.json()["revision"].as_i64().unwrap();

    // A member runs on the restored dir: moving it aside again needs --force.
    restored.start_restored();
    assert_serves(&restored, &expected, snapshot_revision);
    restored.kill_member(0);
    let mut other = Cluster::plan_restore(1, "a");
    other.members[0].data_dir = data_dir.clone();
    let refused = restore(&file, &other, 0, &["--move-aside"]);
    crate::assert_clear_error(&refused, "--force");
    assert_eq!(moved_aside(&data_dir).len(), 1, "nothing moved:\n{refused}");
    let forced = restore(&file, &other, 0, &["--move-aside", "--force"]);
    forced.expect_code(0);
    let aside = moved_aside(&data_dir);
    assert_eq!(aside.len(), 2, "{forced}");
    assert!(aside[1].join("member/etcdops-restore.json").exists());
    assert!(aside[1].join("member/snap/db").exists());
    other.start_restored();
    let kvs = all_keys(&other);
    assert_eq!(kvs.as_array().unwrap().len(), 220, "every live key");
}

#[test]
fn owner_chowns_the_restored_tree() {
    use std::os::unix::fs::MetadataExt;
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let Some(nobody) = passwd
        .lines()
        .find(|l| l.starts_with("nobody:"))
        .and_then(|l| l.split(':').nth(2))
        .and_then(|id| id.parse::<u32>().ok())
    else {
        eprintln!("no user nobody: skipped");
        return;
    };
    let source = Cluster::start(1, Security::Plain);
    source.put_keys("/restore/small/", 20);
    let store = source.dir().join("store");
    let file = crate::save_snapshot(&source, &store, "none");
    let target = Cluster::plan_restore(1, "o");
    let data_dir = target.members[0].data_dir.clone();

    let refused = restore(&file, &target, 0, &["--owner", "no-such-user-etcdops"]);
    crate::assert_clear_error(&refused, "--owner");
    assert!(!data_dir.exists());

    let done = restore(&file, &target, 0, &["--owner", "nobody"]);
    if done.code != 0 && done.stderr.contains("Operation not permitted") {
        eprintln!("not allowed to chown here: skipped");
        return;
    }
    done.expect_code(0);
    let mut paths = vec![data_dir.clone()];
    let mut i = 0;
    while i < paths.len() {
        if paths[i].is_dir() {
            for entry in std::fs::read_dir(&paths[i]).unwrap() {
                paths.push(entry.unwrap().path());
            }
        }
        i += 1;
    }
    assert!(paths.len() >= 7, "{paths:?}");
    for path in &paths {
        assert_eq!(
            std::fs::metadata(path).unwrap().uid(),
            nobody,
            "{}",
            path.display()
        );
    }
}
