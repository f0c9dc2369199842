//! etcdctl's and etcdutl's snapshot commands side by side with etcdops: `snapshot save
//! FILE.db` (a plain file the release's own tools read), `snapshot status` (etcdutl's simple
//! and JSON, byte for byte; etcd 3.6's from the fixture), and etcdutl's offline tools
//! (`defrag --data-dir`, `hashkv`) on real members' data.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use etcdops_tests::{Cluster, Run, Security, args, assert_same_output, etcdops, side_by_side};

use crate::run;

/// The releases whose own data is in the repository (`tests/fixtures/etcd-<release>`), with
/// the storage version their snapshots carry.
const FIXTURE_RELEASES: [(&str, &str); 2] = [("3.6.14", "3.6.0"), ("3.7.1", "3.7.0")];

/// The fixtures of etcd `release`, copied into the repository: `tests/fixtures/etcd-<release>`,
/// and its snapshot.
pub fn fixture_of(release: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/etcd-{release}"));
    let snapshot = dir.join(format!("snapshot-{release}.db"));
    assert!(snapshot.is_file(), "{} is missing", snapshot.display());
    (dir, snapshot)
}

/// The release's own `snapshot status FILE -w FORMAT` (etcdutl 3.5, etcdctl 3.4).
fn release_status(cluster: &Cluster, file: &Path, format: &str) -> Run {
    let out = cluster
        .version
        .snapshot_tool()
        .args(["snapshot", "status", "-w", format])
        .arg(file)
        .output()
        .expect("run the release's snapshot tool");
    Run {
        args: vec!["(release tool) snapshot status".into(), format.into()],
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `etcdops --compat etcdctl snapshot status FILE -w FORMAT`.
fn our_status(file: &Path, format: &str) -> Run {
    let file = file.display().to_string();
    etcdops(
        &args(&["snapshot", "status", &file, "-w", format]),
        &[("ETCDOPS_COMPAT", "etcdctl")],
    )
}

#[test]
fn save_to_a_db_file_prints_what_etcdctl_prints_and_writes_a_file_its_tools_read() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/compat/save/", 25);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.db");
    let file_arg = file.display().to_string();
    let endpoint = cluster.endpoints();
    let save = ["--endpoints", &endpoint, "snapshot", "save", &file_arg];
    // etcdctl writes x.db first; etcdops then replaces it with its own.
    let both = assert_same_output(&cluster, &save);
    assert_eq!(
        both.etcdops.stdout,
        format!("Snapshot saved at {file_arg}\n")
    );
    assert!(!both.etcdops.stderr.is_empty(), "{both}");
    assert!(
        !dir.path().join("x.db.part").exists(),
        "the .part file is gone"
    );
    let meta = std::fs::metadata(&file).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // A plain snapshot: a bbolt file plus etcd's 32-byte trailer.
    assert_eq!(
        meta.len() % 512,
        32,
        "not db + trailer: {} bytes",
        meta.len()
    );

    // The release's own tool reads it, and agrees with etcdops.
    let theirs = cluster.version.snapshot_status(&file).expect("status");
    let ours = our_status(&file, "json");
    ours.expect_code(0);
    assert_eq!(theirs, ours.json(), "{ours}");
    assert!(theirs["revision"].as_i64().unwrap() >= 26, "{theirs}");

    // etcdops restores it natively, and a real etcd serves its keys.
    let mut restored = Cluster::plan_restore(1, "r");
    let data_dir = restored.members[0].data_dir.display().to_string();
    let (initial, token) = (restored.initial_cluster(), restored.token().to_string());
    let peer = restored.members[0].peer_url.clone();
    etcdops(
        &args(&[
            "snapshot",
            "restore",
            &file_arg,
            "--data-dir",
            &data_dir,
            "--name",
            "r0",
            "--initial-cluster",
            &initial,
            "--initial-cluster-token",
            &token,
            "--initial-advertise-peer-urls",
            &peer,
        ]),
        &[],
    )
    .expect_code(0);
    restored.start_restored();
    let got = run(
        &restored,
        &["get", "/compat/save/", "--prefix", "-w", "json"],
    );
    got.expect_code(0);
    assert_eq!(got.json()["count"], 25, "{got}");
}

#[test]
fn a_directory_or_a_store_url_ending_in_db_keeps_the_store_behaviour() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/compat/store/", 3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("backups.db");
    std::fs::create_dir(&store).unwrap();
    let store_arg = store.display().to_string();
    let saved = run(&cluster, &["snapshot", "save", &store_arg, "-w", "json"]);
    saved.expect_code(0);
    let object = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(store.join(&object).is_file(), "{saved}");
    // A store-only flag with a file destination is refused, naming it.
    let file = dir.path().join("one.db").display().to_string();
    let refused = run(&cluster, &["snapshot", "save", &file, "--keep-last", "3"]);
    crate::assert_clear_error(&refused, "--keep-last");
    assert!(!Path::new(&file).exists());
    // A save that fails leaves neither the file nor its .part behind.
    let dead = format!("http://127.0.0.1:{}", etcdops_tests::free_port());
    let failed = etcdops(
        &args(&[
            "--endpoints",
            &dead,
            "--dial-timeout",
            "1s",
            "snapshot",
            "save",
            &file,
        ]),
        &[],
    );
    assert_ne!(failed.code, 0, "{failed}");
    assert!(!Path::new(&file).exists() && !Path::new(&format!("{file}.part")).exists());
}

#[test]
fn status_simple_and_json_are_the_release_tools_byte_for_byte() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/compat/status/", 40);
    cluster.delete("/compat/status/0001");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.db");
    let file_arg = file.display().to_string();
    let endpoint = cluster.endpoints();
    let saved = side_by_side(
        &cluster,
        &["--endpoints", &endpoint, "snapshot", "save", &file_arg],
        &[],
    );
    assert_eq!(saved.etcdctl.code, 0, "{saved}");
    for format in ["simple", "json"] {
        let theirs = release_status(&cluster, &file, format);
        let ours = our_status(&file, format);
        assert_eq!(theirs.code, 0, "{theirs}");
        assert_eq!(ours.code, 0, "{ours}");
        assert_eq!(theirs.stdout, ours.stdout, "{theirs}\n{ours}");
    }
}

#[test]
fn status_of_the_3_6_and_3_7_snapshots_is_their_etcdutls() {
    for (release, storage_version) in FIXTURE_RELEASES {
        let (dir, snapshot) = fixture_of(release);
        for (format, expected) in [
            ("simple", "outputs/etcdutl-snapshot-status.simple"),
            ("json", "outputs/etcdutl-snapshot-status.json"),
        ] {
            let ours = our_status(&snapshot, format);
            ours.expect_code(0);
            let want = std::fs::read_to_string(dir.join(expected)).unwrap();
            assert_eq!(ours.stdout.trim_end(), want.trim_end(), "{release}: {ours}");
        }
        // Our own JSON labels both counts and the storage version.
        let file = snapshot.display().to_string();
        let own = etcdops(&args(&["snapshot", "status", &file, "-w", "json"]), &[]);
        own.expect_code(0);
        let json = own.json();
        assert_eq!(json["live_keys"], 44, "{own}");
        assert_eq!(json["storage_version"], storage_version, "{own}");
        assert!(json["total_key"].as_u64().unwrap() > 44, "{own}");
    }
    // etcdutl 3.7's table: Unicode boxes, under the etcdctl personality.
    let (dir, snapshot) = fixture_of("3.7.1");
    let file = snapshot.display().to_string();
    let table = etcdops(
        &args(&["snapshot", "status", &file, "-w", "table"]),
        &[("ETCDOPS_COMPAT", "etcdctl")],
    );
    table.expect_code(0);
    let want = std::fs::read_to_string(dir.join("outputs/etcdutl-snapshot-status.table")).unwrap();
    assert_eq!(table.stdout, want, "{table}");
}

/// One etcd member of the release under test on its own data dir, stopped with SIGTERM (so
/// its db holds every revision it served), and restartable on the same dir.
struct Solo {
    version: etcdops_tests::EtcdVersion,
    dir: tempfile::TempDir,
    client_url: String,
    peer_url: String,
    child: Option<std::process::Child>,
}

impl Solo {
    fn start() -> Solo {
        let mut solo = Solo {
            version: etcdops_tests::EtcdVersion::from_env(),
            dir: tempfile::tempdir().unwrap(),
            client_url: format!("http://127.0.0.1:{}", etcdops_tests::free_port()),
            peer_url: format!("http://127.0.0.1:{}", etcdops_tests::free_port()),
            child: None,
        };
        solo.restart();
        solo
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("solo")
    }

    /// Starts etcd on the data dir (new, or the one it stopped on) and waits until it serves.
    fn restart(&mut self) {
        let mut cmd = std::process::Command::new(self.version.etcd());
        cmd.args(["--name", "solo", "--data-dir"])
            .arg(self.data_dir())
            .args(["--listen-client-urls", &self.client_url])
            .args(["--advertise-client-urls", &self.client_url])
            .args(["--listen-peer-urls", &self.peer_url])
            .args(["--initial-advertise-peer-urls", &self.peer_url])
            .args(["--initial-cluster", &format!("solo={}", self.peer_url)])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
        let log = self.dir.path().join("solo.log");
        self.child = Some(etcdops_tests::spawn_logged(cmd, &log));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !self.etcdctl(&["endpoint", "health"]).status.success() {
            assert!(
                std::time::Instant::now() < deadline,
                "etcd did not start:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// SIGTERM, and waits for the process to exit (at most 30 s, then SIGKILL and fail).
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("etcd did not stop on SIGTERM");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn etcdctl(&self, rest: &[&str]) -> std::process::Output {
        std::process::Command::new(self.version.etcdctl())
            .env("ETCDCTL_API", "3")
            .env_remove("ETCDCTL_ENDPOINTS")
            .args(["--endpoints", &self.client_url])
            .args(rest)
            .output()
            .unwrap()
    }

    fn etcdctl_ok(&self, rest: &[&str]) -> String {
        let out = self.etcdctl(rest);
        assert!(out.status.success(), "etcdctl {rest:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, rest: &[&str]) -> serde_json::Value {
        let mut all = rest.to_vec();
        all.extend(["-w", "json"]);
        serde_json::from_str(&self.etcdctl_ok(&all)).unwrap()
    }

    /// `endpoint hashkv [--rev REV]`: (hash, hash revision, compact revision).
    fn live_hashkv(&self, rev: Option<i64>) -> (u64, i64, i64) {
        let rev_text = rev.map(|r| r.to_string());
        let mut args = vec!["endpoint", "hashkv"];
        if let Some(r) = &rev_text {
            args.extend(["--rev", r]);
        }
        let json = self.json(&args);
        let h = &json[0]["HashKV"];
        (
            h["hash"].as_u64().unwrap(),
            rev.unwrap_or_else(|| h["header"]["revision"].as_i64().unwrap()),
            h["compact_revision"].as_i64().unwrap_or(0),
        )
    }
}

impl Drop for Solo {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// History with overwrites, deletions and a physical compaction; returns a revision between
/// the compaction and the end.
fn write_history(solo: &Solo) -> i64 {
    for i in 0..30 {
        solo.etcdctl_ok(&["put", &format!("/h/k{i:02}"), &format!("v{i}")]);
    }
    for i in 0..10 {
        solo.etcdctl_ok(&["put", &format!("/h/k{i:02}"), "again"]);
    }
    for i in 20..25 {
        solo.etcdctl_ok(&["del", &format!("/h/k{i:02}")]);
    }
    let compact = solo.json(&["get", "/h/k00"])["header"]["revision"]
        .as_i64()
        .unwrap();
    solo.etcdctl_ok(&["compaction", &compact.to_string(), "--physical"]);
    for i in 0..5 {
        solo.etcdctl_ok(&["put", &format!("/h/k{i:02}"), "after"]);
    }
    let middle = solo.json(&["get", "/h/k00"])["header"]["revision"]
        .as_i64()
        .unwrap();
    solo.etcdctl_ok(&["del", "/h/k29"]);
    solo.etcdctl_ok(&["put", "/h/last", "x"]);
    middle
}

/// `etcdops hashkv ARGS -w json`: (hash, hash revision, compact revision).
fn our_hashkv(rest: &[&str]) -> (u64, i64, i64) {
    let mut all = vec!["hashkv"];
    all.extend(rest);
    all.extend(["-w", "json"]);
    let out = etcdops(&args(&all), &[]);
    out.expect_code(0);
    let json = out.json();
    (
        json["hash"].as_u64().unwrap(),
        json["hash_revision"].as_i64().unwrap(),
        json["compact_revision"].as_i64().unwrap(),
    )
}

#[test]
fn hashkv_offline_is_the_live_members_endpoint_hashkv() {
    let mut solo = Solo::start();
    let middle = write_history(&solo);
    let live = solo.live_hashkv(None);
    let live_middle = solo.live_hashkv(Some(middle));
    let snapshot = solo.dir.path().join("at-end.db");
    solo.etcdctl_ok(&["snapshot", "save", &snapshot.display().to_string()]);
    // Refused while etcd runs on the data dir.
    let data_dir = solo.data_dir().display().to_string();
    let running = etcdops(&args(&["hashkv", "--data-dir", &data_dir]), &[]);
    crate::assert_clear_error(&running, "running");
    // The running member's db given as a file is read, by hashkv and snapshot status alike,
    // with a warning that the answer is consistent only once the member is stopped.
    let live_db = solo.data_dir().join("member/snap/db").display().to_string();
    for command in [
        &["hashkv"][..],
        &["snapshot", "status", "--skip-hash-check"],
    ] {
        let mut given = command.to_vec();
        given.push(&live_db);
        let read = etcdops(&args(&given), &[]);
        read.expect_code(0);
        assert!(
            read.stderr.contains("running") && read.stderr.contains("stopped"),
            "{read}"
        );
    }
    solo.stop();
    // Stopped, the same file reads (and hashes as the data dir does, below).
    etcdops(
        &args(&["snapshot", "status", &live_db, "--skip-hash-check"]),
        &[],
    )
    .expect_code(0);

    let (hash, rev, compact) = our_hashkv(&["--data-dir", &data_dir]);
    assert_eq!((hash, rev), (live.0, live.1));
    assert!(
        compact > 0 && compact < middle,
        "compact revision {compact}"
    );
    let middle_text = middle.to_string();
    let at_middle = our_hashkv(&["--data-dir", &data_dir, "--rev", &middle_text]);
    assert_eq!((at_middle.0, at_middle.1), (live_middle.0, live_middle.1));
    assert_ne!(at_middle.0, hash);
    // The snapshot saved at the end holds the same history.
    let from_file = our_hashkv(&[&snapshot.display().to_string()]);
    assert_eq!(from_file, (hash, rev, compact));
    // etcdutl 3.6's simple line under compat: `hash, hash revision, compact revision`.
    let simple = etcdops(
        &args(&["hashkv", "--data-dir", &data_dir]),
        &[("ETCDOPS_COMPAT", "etcdctl")],
    );
    simple.expect_code(0);
    assert_eq!(simple.stdout, format!("{hash}, {rev}, {compact}\n"));
}

#[test]
fn defrag_data_dir_shrinks_a_stopped_member_and_etcd_serves_every_key_after() {
    let mut solo = Solo::start();
    let big = "x".repeat(8000);
    for i in 0..150 {
        solo.etcdctl_ok(&["put", &format!("/d/k{i:03}"), &big]);
    }
    solo.etcdctl_ok(&["del", "/d/k0", "--prefix"]);
    write_history(&solo);
    let latest = solo.json(&["get", "/h/last"])["header"]["revision"]
        .as_i64()
        .unwrap();
    solo.etcdctl_ok(&["compaction", &latest.to_string(), "--physical"]);
    let before_keys = solo.etcdctl_ok(&["get", "", "--prefix", "-w", "json"]);
    let before_hash = solo.live_hashkv(None);
    let data_dir = solo.data_dir().display().to_string();
    // Refused while etcd runs there; the db is not touched.
    let db = solo.data_dir().join("member/snap/db");
    let running = etcdops(&args(&["defrag", "--data-dir", &data_dir]), &[]);
    crate::assert_clear_error(&running, "running");
    solo.stop();
    let size_before = std::fs::metadata(&db).unwrap().len();

    let done = etcdops(
        &args(&["defrag", "--data-dir", &data_dir, "-w", "json"]),
        &[],
    );
    done.expect_code(0);
    let json = done.json();
    assert_eq!(json["size_before"].as_u64().unwrap(), size_before, "{done}");
    let size_after = json["size_after"].as_u64().unwrap();
    assert!(size_after < size_before / 2, "{done}");
    assert_eq!(std::fs::metadata(&db).unwrap().len(), size_after);
    // A killed defrag's copy is removed by the next one, which says so on stderr; a file
    // of another name is left alone. Under compat: etcdctl's line on stdout.
    let snap = solo.data_dir().join("member/snap");
    let leftover = snap.join("db.defrag-Zz9Yy8");
    std::fs::write(&leftover, b"a killed defrag's copy").unwrap();
    std::fs::write(snap.join("db.defrag-notours"), b"someone else's").unwrap();
    let again = etcdops(
        &args(&["defrag", "--data-dir", &data_dir]),
        &[("ETCDOPS_COMPAT", "etcdctl")],
    );
    again.expect_code(0);
    assert_eq!(
        again.stdout,
        format!("Finished defragmenting etcd data[{data_dir}]\n")
    );
    assert!(!leftover.exists(), "{again}");
    assert!(
        again
            .stderr
            .contains(&format!("removed {}", leftover.display())),
        "{again}"
    );
    assert!(snap.join("db.defrag-notours").exists());
    std::fs::remove_file(snap.join("db.defrag-notours")).unwrap();

    // Real etcd starts on it and serves every key, at the same revision, with the same hash.
    solo.restart();
    let mut after: serde_json::Value =
        serde_json::from_str(&solo.etcdctl_ok(&["get", "", "--prefix", "-w", "json"])).unwrap();
    let mut before: serde_json::Value = serde_json::from_str(&before_keys).unwrap();
    for json in [&mut before, &mut after] {
        etcdops_tests::remove_pointer(json, "/header/raft_term");
    }
    assert_eq!(after["header"]["revision"], before["header"]["revision"]);
    assert_eq!(after["kvs"], before["kvs"]);
    assert!(after["count"].as_u64().unwrap() > 20);
    assert_eq!(solo.live_hashkv(None), before_hash);
}

/// The first `count` records of a WAL segment, as framed on disk (length word, record, pad).
fn first_wal_frames(path: &Path, count: usize) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let mut at = 0;
    for _ in 0..count {
        let word = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let len = (word & 0x00FF_FFFF_FFFF_FFFF) as usize;
        let pad = if word >> 63 == 1 {
            ((word >> 56) & 0x7) as usize
        } else {
            0
        };
        at += 8 + len + pad;
    }
    bytes[..at].to_vec()
}

/// `etcdops snapshot status FILE -w json` (our JSON).
fn our_status_json(file: &Path) -> serde_json::Value {
    let file = file.display().to_string();
    let out = etcdops(&args(&["snapshot", "status", &file, "-w", "json"]), &[]);
    out.expect_code(0);
    out.json()
}

#[test]
fn restore_without_cluster_flags_uses_etcdutls_defaults() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/compat/defaults/", 5);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.db");
    let file_arg = file.display().to_string();
    let endpoint = cluster.endpoints();
    cluster
        .etcdctl(&["--endpoints", &endpoint, "snapshot", "save", &file_arg])
        .status
        .success()
        .then_some(())
        .expect("etcdctl snapshot save");
    // The release's own tool, with no flag but the file (and the data dir, which etcdutl
    // 3.5 requires; 3.4 and 3.6 default it to NAME.etcd as etcdops does), in its own dir.
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let out = cluster
        .version
        .snapshot_tool()
        .args([
            "snapshot",
            "restore",
            &file_arg,
            "--data-dir",
            "default.etcd",
        ])
        .current_dir(&theirs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty() && !out.stderr.is_empty(), "{out:?}");
    // Under compat etcdops says it on stderr too, and nothing on stdout.
    let compat_dir = dir.path().join("compat");
    std::fs::create_dir(&compat_dir).unwrap();
    let compat = std::process::Command::new(etcdops_tests::etcdops_path())
        .args(["snapshot", "restore", &file_arg])
        .env("ETCDOPS_COMPAT", "etcdctl")
        .current_dir(&compat_dir)
        .output()
        .unwrap();
    assert!(compat.status.success(), "{compat:?}");
    assert!(
        compat.stdout.is_empty() && !compat.stderr.is_empty(),
        "{compat:?}"
    );
    assert!(compat_dir.join("default.etcd/member/snap/db").is_file());
    // etcdops, the same way.
    let ours = dir.path().join("ours");
    std::fs::create_dir(&ours).unwrap();
    let out = std::process::Command::new(etcdops_tests::etcdops_path())
        .args(["snapshot", "restore", &file_arg])
        .current_dir(&ours)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Both wrote default.etcd, with the same member (its ID derived from the default peer
    // URL and token) of the same cluster.
    // The WAL's first records name the member and cluster IDs: byte for byte the same.
    let wal = "default.etcd/member/wal/0000000000000000-0000000000000000.wal";
    assert_eq!(
        first_wal_frames(&theirs.join(wal), 2),
        first_wal_frames(&ours.join(wal), 2)
    );
    let db = "default.etcd/member/snap/db";
    let (a, b) = (
        our_status_json(&theirs.join(db)),
        our_status_json(&ours.join(db)),
    );
    // etcdctl 3.4 leaves the snapshot's old members in the db (3.4 reads them from the snap
    // file's v2 store); etcdutl 3.5 and etcdops write the new one.
    if cluster.version == etcdops_tests::EtcdVersion::V3_5 {
        assert_eq!(a["members"], b["members"]);
        assert_eq!(a["term"], b["term"]);
    }
    assert_eq!(a["consistent_index"], b["consistent_index"]);
    assert_eq!(b["members"][0]["name"], "default");
    assert_eq!(
        b["members"][0]["peer_urls"],
        serde_json::json!(["http://localhost:2380"])
    );
}

#[test]
fn restores_of_the_3_6_and_3_7_snapshots_start_under_this_release_and_serve_their_keys() {
    for (release, _) in FIXTURE_RELEASES {
        restore_and_serve(release);
    }
}

/// Restores etcd `release`'s snapshot with etcdops, starts this release's etcd on it, and
/// reads the fixture's keys back (with etcdctl too).
fn restore_and_serve(release: &str) {
    let (_, snapshot) = fixture_of(release);
    let snapshot_arg = snapshot.display().to_string();
    let mut restored = Cluster::plan_restore(1, "n");
    let data_dir = restored.members[0].data_dir.display().to_string();
    let (initial, token) = (restored.initial_cluster(), restored.token().to_string());
    let peer = restored.members[0].peer_url.clone();
    etcdops(
        &args(&[
            "snapshot",
            "restore",
            &snapshot_arg,
            "--data-dir",
            &data_dir,
            "--name",
            "n0",
            "--initial-cluster",
            &initial,
            "--initial-cluster-token",
            &token,
            "--initial-advertise-peer-urls",
            &peer,
        ]),
        &[],
    )
    .expect_code(0);
    restored.start_restored();
    // The fixture's keys at their revision: 39 configmaps, /registry/hot at v8, the binary
    // secret, and the key put after the compaction.
    let got = run(&restored, &["get", "/registry/", "--prefix", "-w", "json"]);
    got.expect_code(0);
    let json = got.json();
    assert_eq!(json["count"], 42, "{got}");
    let hot = run(&restored, &["get", "/registry/hot", "-w", "json"]);
    assert_eq!(hot.json()["kvs"][0]["value"], "v8", "{hot}");
    let endpoint = restored.endpoints();
    let (code, theirs) = crate::etcdctl_json(
        &restored,
        &[
            "--endpoints",
            &endpoint,
            "get",
            "/registry/hot",
            "-w",
            "json",
        ],
    );
    assert_eq!(code, 0, "{theirs}");
    assert_eq!(theirs["header"]["revision"], 54, "{theirs}");
}
