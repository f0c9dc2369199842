//! Restore safety against real etcd: every `--wal-dir` placement is either restored and served
//! by a real etcd started on it, or refused before anything is written; a restore killed at
//! random points leaves the data dir old or complete, never a WAL without its db, and etcd
//! started on whatever is there serves the data; the "already restored" marker is checked
//! against the disk; a backup is checked against its manifest and its trailer; staging dirs
//! of killed restores are removed; a running member is never restored from or over.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, EtcdVersion, Run, Security, etcdops, etcdops_path, spawn_logged};
use serde_json::Value;

use crate::snapshot_failures::Tmpfs;
use crate::snapshot_restore::restore_from;
use crate::{assert_clear_error, save_snapshot};

/// The key every restore must serve, and its value.
const CHECK_KEY: &str = "/safety/check";
const CHECK_VALUE: &str = "the data came back";

/// A one-member cluster holding the check key and `big` values of 100 kB (to make a restore
/// take a while), and a saved snapshot of it (`compression` none or zstd).
fn source_with_snapshot(big: usize, compression: &str) -> (Cluster, PathBuf) {
    let source = Cluster::start(1, Security::Plain);
    source.put(CHECK_KEY, CHECK_VALUE);
    source.put_random("/safety/big/", big, 100_000);
    let store = source.dir().join("store");
    let file = save_snapshot(&source, &store, compression);
    (source, file)
}

/// Every entry under `root` (relative path → mode and, for files, contents), to compare a dir
/// before and after a refused restore.
fn tree(root: &Path) -> BTreeMap<PathBuf, (u32, Option<Vec<u8>>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            // etcd's and the test's own logs are not the restore's business.
            if rel.extension().is_some_and(|e| e == "log") {
                continue;
            }
            let contents = meta.is_file().then(|| std::fs::read(&path).unwrap());
            if meta.is_dir() {
                stack.push(path);
            }
            out.insert(rel, (meta.permissions().mode(), contents));
        }
    }
    out
}

/// etcd started on a restored data dir (and WAL dir), stopped when dropped.
struct RestoredEtcd {
    child: Child,
    client_url: String,
}

impl RestoredEtcd {
    /// Starts etcd as member 0 of `planned` on its data dir with `wal_dir`, and waits until it
    /// serves reads.
    fn start(planned: &Cluster, wal_dir: Option<&Path>, log: &str) -> RestoredEtcd {
        let member = &planned.members[0];
        let mut cmd = Command::new(EtcdVersion::from_env().etcd());
        cmd.args(["--name", &member.name, "--data-dir"])
            .arg(&member.data_dir)
            .args(["--listen-client-urls", &member.client_url])
            .args(["--advertise-client-urls", &member.client_url])
            .args(["--listen-peer-urls", &member.peer_url])
            .args(["--initial-advertise-peer-urls", &member.peer_url])
            .args(["--initial-cluster", &planned.initial_cluster()])
            .args(["--initial-cluster-token", planned.token()])
            .args(["--initial-cluster-state", "new"])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
        if let Some(wal) = wal_dir {
            cmd.arg("--wal-dir").arg(wal);
        }
        let log = planned.dir().join(log);
        let child = spawn_logged(cmd, &log);
        let mut etcd = RestoredEtcd {
            child,
            client_url: member.client_url.clone(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = etcd.get(CHECK_KEY);
            if got.code == 0 {
                break;
            }
            if let Ok(Some(status)) = etcd.child.try_wait() {
                panic!(
                    "etcd exited ({status}) on {}:\n{}",
                    member.data_dir.display(),
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "etcd on {} does not serve reads:\n{got}\n{}",
                member.data_dir.display(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        etcd
    }

    fn get(&self, key: &str) -> Run {
        etcdops(
            &[
                "--endpoints".into(),
                self.client_url.clone(),
                "--command-timeout".into(),
                "2s".into(),
                "get".into(),
                key.into(),
                "-w".into(),
                "json".into(),
            ],
            &[],
        )
    }

    /// Asserts that the check key is served with its value (never an empty keyspace).
    fn assert_serves_the_data(&self, context: &str) {
        let got = self.get(CHECK_KEY);
        got.expect_code(0);
        let kvs = got.json()["kvs"].clone();
        assert_eq!(
            kvs.as_array().map(Vec::len),
            Some(1),
            "{context}: etcd serves an empty keyspace:\n{got}"
        );
        assert_eq!(kvs[0]["value"], CHECK_VALUE, "{context}:\n{got}");
    }
}

impl Drop for RestoredEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a `--wal-dir` points, relative to member 0's data dir `data` (in `root`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    MemberWal,
    DataWal,
    Sibling,
    OtherDisk,
}

impl Placement {
    fn path(self, data: &Path, root: &Path) -> PathBuf {
        match self {
            Placement::MemberWal => data.join("member/wal"),
            Placement::DataWal => data.join("wal"),
            Placement::Sibling => root.join("wal-beside"),
            Placement::OtherDisk => root.join("wal-disk/wal"),
        }
    }
}

fn json_paths(doc: &Value, field: &str) -> Vec<PathBuf> {
    doc[field]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| PathBuf::from(p.as_str().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_wal_dir_placement_is_restored_and_served_or_refused_before_writing() {
    let (_source, file) = source_with_snapshot(2, "zstd");
    let source = file.display().to_string();

    for placement in [
        Placement::MemberWal,
        Placement::DataWal,
        Placement::Sibling,
        Placement::OtherDisk,
    ] {
        let planned = Cluster::plan_restore(1, "w");
        let data = planned.members[0].data_dir.clone();
        let wal = placement.path(&data, planned.dir());
        let _disk = (placement == Placement::OtherDisk)
            .then(|| Tmpfs::mount(wal.parent().unwrap(), "256m"));
        let wal_arg = wal.display().to_string();
        let done = restore_from(&source, &planned, 0, &["--wal-dir", &wal_arg], &[]);
        done.expect_code(0);
        assert_eq!(
            PathBuf::from(done.json()["wal_dir"].as_str().unwrap()),
            wal,
            "{placement:?}"
        );
        assert!(
            wal.join("0000000000000000-0000000000000000.wal").is_file(),
            "{placement:?}"
        );
        assert!(data.join("member/snap/db").is_file(), "{placement:?}");
        if !matches!(placement, Placement::MemberWal) {
            assert!(!data.join("member/wal").exists(), "{placement:?}");
        }
        let etcd = RestoredEtcd::start(&planned, Some(&wal), "etcd.log");
        etcd.assert_serves_the_data(&format!("{placement:?}"));
        drop(etcd);
        // The same restore again: nothing to do.
        let again = restore_from(&source, &planned, 0, &["--wal-dir", &wal_arg], &[]);
        again.expect_code(0);
        assert_eq!(again.json()["changed"], false, "{placement:?}: {again}");
    }

    // Refused up front, with a one-line message, nothing written: the data dir itself, a dir
    // holding the data dir, etcd's member dir, a dir beside the db, a mount point.
    let planned = Cluster::plan_restore(1, "x");
    let data = planned.members[0].data_dir.clone();
    let mount = planned.dir().join("a-disk");
    let _disk = Tmpfs::mount(&mount, "16m");
    for (wal, why) in [
        (data.clone(), "the data dir itself"),
        (data.join("."), "the data dir itself"),
        (planned.dir().to_path_buf(), "is inside it"),
        (data.join("member"), "member dir"),
        (data.join("member/snap/wal"), "member/snap"),
        (mount.clone(), "mount point"),
    ] {
        for existing in [false, true] {
            if existing {
                std::fs::create_dir_all(&data).unwrap();
            }
            let before = tree(planned.dir());
            let refused = restore_from(
                &source,
                &planned,
                0,
                &["--wal-dir", &wal.display().to_string()],
                &[],
            );
            assert_clear_error(&refused, why);
            assert!(!refused.stderr.contains("internal"), "{refused}");
            assert_eq!(tree(planned.dir()), before, "{}: {refused}", wal.display());
        }
        std::fs::remove_dir(&data).unwrap();
    }
}

/// A small deterministic generator (xorshift64*), so a failing run can be replayed.
struct Random(u64);

impl Random {
    fn seeded() -> (Random, u64) {
        let seed = std::env::var("ETCDOPS_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("restore kill points: ETCDOPS_TEST_SEED={seed}");
        (Random(seed.max(1)), seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn fraction(&mut self) -> f64 {
        (self.next() % 10_001) as f64 / 10_000.0
    }
}

/// The staging dirs (`.NAME.restore-PID`) in `dir`.
fn staging_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with('.') && name.contains(".restore-")
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

fn wal_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".wal"))
        .count()
}

/// The arguments of a restore of `file` into member 0 of `planned` with `wal`.
fn restore_args(file: &Path, planned: &Cluster, wal: &Path, extra: &[&str]) -> Vec<String> {
    let member = &planned.members[0];
    let mut args: Vec<String> = [
        "snapshot",
        "restore",
        &file.display().to_string(),
        "--data-dir",
        &member.data_dir.display().to_string(),
        "--wal-dir",
        &wal.display().to_string(),
        "--name",
        &member.name,
        "--initial-cluster",
        &planned.initial_cluster(),
        "--initial-cluster-token",
        planned.token(),
        "--initial-advertise-peer-urls",
        &member.peer_url,
        "-w",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn spawn_quiet(args: &[String]) -> Child {
    Command::new(etcdops_path())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn etcdops")
}

#[test]
fn restores_killed_at_random_points_with_a_wal_dir_leave_a_dir_etcd_serves_the_data_from() {
    let (_source, file) = source_with_snapshot(200, "zstd");
    let (mut random, seed) = Random::seeded();
    for placement in [Placement::DataWal, Placement::Sibling, Placement::OtherDisk] {
        let planned = Cluster::plan_restore(1, "k");
        let data = planned.members[0].data_dir.clone();
        let wal = placement.path(&data, planned.dir());
        let _disk = (placement == Placement::OtherDisk)
            .then(|| Tmpfs::mount(wal.parent().unwrap(), "512m"));
        // Each trial restores something else over the last (a revision bump of its own), with
        // the same members, so etcd can start on whichever is there.
        let args = |bump: u64| {
            let bump = bump.to_string();
            let mut extra = vec!["--move-aside", "--force"];
            if bump != "0" {
                extra.extend(["--bump-revision", &bump, "--mark-compacted"]);
            }
            restore_args(&file, &planned, &wal, &extra)
        };
        let started = Instant::now();
        etcdops(&args(0), &[]).expect_code(0);
        let duration = started.elapsed();
        let mut states: BTreeMap<String, u32> = BTreeMap::new();
        for trial in 0..8u64 {
            let context = format!("seed {seed}, {placement:?}, trial {trial}");
            let mut child = spawn_quiet(&args(1000 * (trial + 1)));
            let kill_at = Instant::now() + duration.mul_f64(random.fraction() * 1.2);
            while Instant::now() < kill_at && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = child.kill();
            let _ = child.wait();
            // The dirs earlier trials moved aside are of no interest here (disk space).
            for dir in [data.parent().unwrap(), wal.parent().unwrap()] {
                for entry in std::fs::read_dir(dir).unwrap().flatten() {
                    if entry.file_name().to_string_lossy().contains(".bak-") {
                        std::fs::remove_dir_all(entry.path()).unwrap();
                    }
                }
            }
            // What a kill may leave beside the targets is private (it can hold a db).
            for dir in [data.parent().unwrap(), wal.parent().unwrap()] {
                for staged in staging_dirs(dir) {
                    let mode = std::fs::metadata(&staged).map(|m| m.permissions().mode());
                    if let Ok(mode) = mode {
                        assert_eq!(mode & 0o777, 0o700, "{context}: {}", staged.display());
                    }
                }
            }
            // Never a WAL without its db.
            let db = data.join("member/snap/db");
            if wal_files(&wal) > 0 {
                assert!(db.is_file(), "{context}: a WAL without a db");
            }
            // Which restore is there: the marker records the revision bump.
            let marker = std::fs::read(data.join("member/etcdops-restore.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            let which = match marker.as_ref().map(|m| m["bump_revision"].as_u64()) {
                Some(Some(bump)) if bump == 1000 * (trial + 1) => "new",
                Some(_) => "old",
                None => "no marker",
            };
            let state = match (data.exists(), wal_files(&wal) > 0) {
                (false, _) => "absent".to_string(),
                (true, true) => format!("complete ({which})"),
                (true, false) => format!("db without WAL ({which})"),
            };
            *states.entry(state).or_insert(0) += 1;
            if !data.exists() {
                continue;
            }
            assert!(db.is_file(), "{context}: a data dir without a db");
            assert_ne!(which, "no marker", "{context}: a data dir without a marker");
            let etcd = RestoredEtcd::start(&planned, Some(&wal), &format!("etcd-{trial}.log"));
            etcd.assert_serves_the_data(&context);
        }
        eprintln!("{placement:?}: a restore takes {duration:?}; after the kills: {states:?}");
        // An uninterrupted restore at the end leaves a complete dir and no staging dir.
        let done = etcdops(&args(99_000), &[]);
        done.expect_code(0);
        for dir in [data.parent().unwrap(), wal.parent().unwrap()] {
            assert_eq!(staging_dirs(dir), Vec::<PathBuf>::new(), "seed {seed}");
        }
        let etcd = RestoredEtcd::start(&planned, Some(&wal), "etcd-last.log");
        etcd.assert_serves_the_data(&format!("seed {seed}, {placement:?}, last"));
    }
}

#[test]
fn the_restore_marker_is_checked_against_the_db_and_wal_on_disk() {
    let (_source, file) = source_with_snapshot(1, "none");
    let source = file.display().to_string();
    let planned = Cluster::plan_restore(1, "m");
    let data = planned.members[0].data_dir.clone();
    restore_from(&source, &planned, 0, &[], &[]).expect_code(0);
    std::fs::remove_file(data.join("member/snap/db")).unwrap();
    std::fs::remove_dir_all(data.join("member/wal")).unwrap();

    // The same restore again: the damage is found, the dir left as it is.
    let before = tree(planned.dir());
    let refused = restore_from(&source, &planned, 0, &[], &[]);
    assert_clear_error(&refused, "incomplete or damaged");
    assert!(refused.stderr.contains("--move-aside"), "{refused}");
    assert!(refused.stderr.contains("no db"), "{refused}");
    assert_eq!(tree(planned.dir()), before);

    // With --move-aside the damaged dir is kept aside and the restore done anew.
    let done = restore_from(&source, &planned, 0, &["--move-aside"], &[]);
    done.expect_code(0);
    assert_eq!(done.json()["changed"], true, "{done}");
    assert_eq!(json_paths(&done.json(), "moved_aside").len(), 1, "{done}");
    let etcd = RestoredEtcd::start(&planned, None, "etcd.log");
    etcd.assert_serves_the_data("restored anew");
}

#[test]
fn a_restored_db_replaced_by_another_valid_db_is_not_taken_for_the_restore() {
    let (_source, file) = source_with_snapshot(1, "none");
    let source = file.display().to_string();
    let planned = Cluster::plan_restore(1, "m");
    let data = planned.members[0].data_dir.clone();
    restore_from(&source, &planned, 0, &[], &[]).expect_code(0);
    // Another cluster's valid db in its place, WAL and marker untouched.
    let (_other, other_file) = source_with_snapshot(2, "none");
    let other = Cluster::plan_restore(1, "o");
    restore_from(&other_file.display().to_string(), &other, 0, &[], &[]).expect_code(0);
    std::fs::copy(
        other.members[0].data_dir.join("member/snap/db"),
        data.join("member/snap/db"),
    )
    .unwrap();

    let before = tree(planned.dir());
    let refused = restore_from(&source, &planned, 0, &[], &[]);
    assert_clear_error(&refused, "incomplete or damaged");
    assert!(
        refused.stderr.contains("not the one this restore wrote"),
        "{refused}"
    );
    assert_eq!(tree(planned.dir()), before);
}

#[test]
fn a_backup_replaced_by_another_valid_backup_is_refused_as_verify_refuses_it() {
    let source = Cluster::start(1, Security::Plain);
    source.put(CHECK_KEY, CHECK_VALUE);
    let store = source.dir().join("store");
    let first = save_snapshot(&source, &store, "zstd");
    source.put_keys("/safety/more/", 20);
    let second = save_snapshot(&source, &store, "zstd");
    // The first object's bytes replaced by the second's; its manifest kept.
    std::fs::copy(&second, &first).unwrap();
    let url = format!("file://{}", first.display());

    let verified = etcdops(&["snapshot".into(), "verify".into(), url.clone()], &[]);
    assert_ne!(
        verified.code, 0,
        "verify accepts the swapped object:\n{verified}"
    );

    for given in [url.clone(), first.display().to_string()] {
        let planned = Cluster::plan_restore(1, "s");
        let before = tree(planned.dir());
        let refused = restore_from(&given, &planned, 0, &[], &[]);
        assert_clear_error(&refused, "failed verification: the manifest says");
        assert_eq!(tree(planned.dir()), before, "{given}");
    }
    // The untouched backup restores.
    let planned = Cluster::plan_restore(1, "s");
    let url = format!("file://{}", second.display());
    restore_from(&url, &planned, 0, &[], &[]).expect_code(0);
}

#[test]
fn a_snapshot_with_its_trailer_cut_off_is_refused_unless_the_hash_check_is_skipped() {
    let (source, file) = source_with_snapshot(1, "none");
    let bytes = std::fs::read(&file).unwrap();
    let cut = source.dir().join("cut.db");
    std::fs::write(&cut, &bytes[..bytes.len() - 32]).unwrap();
    let cut_arg = cut.display().to_string();

    let planned = Cluster::plan_restore(1, "t");
    let before = tree(planned.dir());
    let refused = restore_from(&cut_arg, &planned, 0, &[], &[]);
    assert_clear_error(&refused, "no SHA-256 trailer");
    assert!(refused.stderr.contains("--skip-hash-check"), "{refused}");
    assert_eq!(tree(planned.dir()), before);

    let done = restore_from(&cut_arg, &planned, 0, &["--skip-hash-check"], &[]);
    done.expect_code(0);
    assert_eq!(done.json()["trailer"], "absent", "{done}");
    let etcd = RestoredEtcd::start(&planned, None, "etcd.log");
    etcd.assert_serves_the_data("trailer cut off, hash check skipped");
}

#[test]
fn staging_dirs_of_killed_restores_are_private_removed_and_reported() {
    let (_source, file) = source_with_snapshot(200, "zstd");
    let planned = Cluster::plan_restore(1, "l");
    let data = planned.members[0].data_dir.clone();
    let wal = planned.dir().join("wal-beside");
    let args = restore_args(&file, &planned, &wal, &[]);
    let root = planned.dir();

    // Kill a restore once its staging dir holds the plaintext db.
    let mut caught = None;
    for _ in 0..30 {
        let mut child = spawn_quiet(&args);
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            if let Some(staged) = staging_dirs(root)
                .into_iter()
                .find(|d| d.join("member/snap/db").exists())
            {
                let _ = child.kill();
                caught = Some(staged);
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        if caught.is_some() {
            break;
        }
        // Finished before it was caught: start over.
        let _ = std::fs::remove_dir_all(&data);
        let _ = std::fs::remove_dir_all(&wal);
    }
    let staged = caught.expect("no restore was caught with its staging dir");
    let mode = std::fs::metadata(&staged).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{}", staged.display());
    assert!(
        !data.exists(),
        "the killed restore renamed nothing into place"
    );
    // The snapshot was decompressed into an unnamed spool file (gone with the process): the
    // staging dir is all a kill leaves.
    let mut left: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_none_or(|e| e != "log"))
        .collect();
    left.sort();
    assert_eq!(left, vec![staged.clone()]);
    // What a kill leaves beside a WAL dir too (the name and layout a restore writes), from a
    // process that is gone.
    let gone = u32::MAX / 2;
    let staged_wal = root.join(format!(".wal-beside.restore-{gone}"));
    std::fs::create_dir(&staged_wal).unwrap();
    std::fs::write(
        staged_wal.join("0000000000000000-0000000000000000.wal"),
        b"w",
    )
    .unwrap();
    // Not ours: kept.
    let foreign = root.join(".wal-beside.restore-notes");
    std::fs::create_dir(&foreign).unwrap();

    let done = etcdops(&args, &[]);
    done.expect_code(0);
    let mut removed = json_paths(&done.json(), "leftovers_removed");
    removed.sort();
    let mut wanted = vec![staged.clone(), staged_wal.clone()];
    wanted.sort();
    assert_eq!(removed, wanted, "{done}");
    assert!(
        done.stderr
            .contains("the staging dir of a restore that was killed"),
        "{done}"
    );
    assert!(!staged.exists() && !staged_wal.exists());
    assert!(foreign.exists());
    assert_eq!(staging_dirs(root), vec![foreign]);
    let etcd = RestoredEtcd::start(&planned, Some(&wal), "etcd.log");
    etcd.assert_serves_the_data("after the leftovers were removed");
}

#[test]
fn a_running_member_is_neither_restored_from_nor_moved_aside() {
    let mut source = Cluster::start(1, Security::Plain);
    source.put(CHECK_KEY, CHECK_VALUE);
    let member_dir = source.members[0].data_dir.clone();
    let from = [
        "--from-data-dir".to_string(),
        member_dir.display().to_string(),
    ];
    let planned = Cluster::plan_restore(1, "f");
    let restore = |planned: &Cluster, extra: &[&str]| -> Run {
        let member = &planned.members[0];
        let mut args: Vec<String> = vec!["snapshot".into(), "restore".into()];
        args.extend(from.iter().cloned());
        args.extend(
            [
                "--data-dir",
                &member.data_dir.display().to_string(),
                "--name",
                &member.name,
                "--initial-cluster",
                &planned.initial_cluster(),
                "--initial-cluster-token",
                planned.token(),
                "--initial-advertise-peer-urls",
                &member.peer_url,
                "-w",
                "json",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        args.extend(extra.iter().map(|s| s.to_string()));
        etcdops(&args, &[])
    };

    let before = tree(planned.dir());
    let refused = restore(&planned, &[]);
    assert_clear_error(
        &refused,
        &format!(
            "the member at '{}' is running (etcd holds a lock on its db); stop it first",
            member_dir.display()
        ),
    );
    assert_eq!(tree(planned.dir()), before);

    // A running member's data dir as the target, even with --move-aside: refused, untouched.
    let file = save_snapshot(&source, &source.dir().join("store"), "none");
    let over = restore_from(
        &file.display().to_string(),
        &source,
        0,
        &["--move-aside", "--force"],
        &[],
    );
    assert_clear_error(&over, "is running");
    // A dry run is the check made before the member is stopped: it passes.
    let check = restore_from(
        &file.display().to_string(),
        &source,
        0,
        &["--move-aside", "--dry-run"],
        &[],
    );
    check.expect_code(0);
    assert!(member_dir.join("member/snap/db").is_file());
    let got = crate::run(&source, &["get", CHECK_KEY, "-w", "json"]);
    got.expect_code(0);
    assert_eq!(got.json()["kvs"][0]["value"], CHECK_VALUE);

    // Stopped, the same restore works (a member's db has no trailer: no flag needed).
    source.kill_member(0);
    let done = restore(&planned, &[]);
    done.expect_code(0);
    assert_eq!(done.json()["trailer"], "absent", "{done}");
    let etcd = RestoredEtcd::start(&planned, None, "etcd.log");
    etcd.assert_serves_the_data("restored from a stopped member's data dir");
}

#[test]
fn a_kill_between_the_db_and_an_outside_wal_leaves_a_db_etcd_serves_and_the_next_restore_finds() {
    let (_source, file) = source_with_snapshot(1, "none");
    let planned = Cluster::plan_restore(1, "b");
    let wal = planned.dir().join("wal-beside");
    let args = restore_args(&file, &planned, &wal, &[]);
    etcdops(&args, &[]).expect_code(0);
    // What a kill between the two renames leaves: the data dir in place, its WAL not yet.
    let staged_wal = planned
        .dir()
        .join(format!(".wal-beside.restore-{}", u32::MAX / 2));
    std::fs::rename(&wal, &staged_wal).unwrap();

    // The same restore again: the missing WAL is found, nothing is touched.
    let before = tree(planned.dir());
    let refused = etcdops(&args, &[]);
    assert_clear_error(&refused, "no WAL in");
    assert_eq!(tree(planned.dir()), before);

    // etcd started there serves the data from the db (a member of the restored cluster).
    let etcd = RestoredEtcd::start(&planned, Some(&wal), "etcd.log");
    etcd.assert_serves_the_data("a db without its WAL");
    drop(etcd);

    // With --move-aside: the dir (and what etcd made of it) kept aside, restored anew, the
    // staged WAL of the killed restore removed.
    let mut extra = args.clone();
    extra.extend(["--move-aside".to_string()]);
    let done = etcdops(&extra, &[]);
    done.expect_code(0);
    assert_eq!(
        json_paths(&done.json(), "leftovers_removed"),
        vec![staged_wal.clone()],
        "{done}"
    );
    assert!(!staged_wal.exists());
    let etcd = RestoredEtcd::start(&planned, Some(&wal), "etcd-again.log");
    etcd.assert_serves_the_data("restored anew");
}
