//! The one-pass restore from a compressed backup against real etcd: the backup is streamed
//! (read, decompressed, hashed) straight into the db the restore stages, so a backup that
//! turns out bad only at its end (etcd's trailer does not match, the zstd frame is cut short),
//! from a file, a `file://` store or S3, and a restore killed in the middle of the stream,
//! must leave nothing at the target: no data dir, no staging dir, no named spool file. The
//! same good backup then restores, and etcd serves its data.

use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, EtcdVersion, S3Server, Security, etcdops_path, http_request};

use crate::snapshot_restore::restore_from;
use crate::{assert_clear_error, run, save_snapshot};

const CHECK_KEY: &str = "/stream/check";
const CHECK_VALUE: &str = "streamed back";

const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "Very-Secret-Test-Key"),
    ("AWS_REGION", "us-east-1"),
];

/// Every entry under `root` but logs, sorted (to compare a dir before and after a restore).
fn entries(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "log") {
                continue;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The snapshot's db and trailer, decompressed from a saved `.db.zst`.
fn decompressed(file: &Path) -> Vec<u8> {
    zstd::decode_all(std::fs::File::open(file).unwrap()).unwrap()
}

/// A `.db.zst` whose db no longer matches etcd's trailer: one byte of the last page changed,
/// which the stream only finds out at its very end.
fn with_bad_trailer(snapshot: &[u8], to: &Path) {
    let mut bytes = snapshot.to_vec();
    let at = bytes.len() - 32 - 100;
    bytes[at] ^= 0x5a;
    std::fs::write(to, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
}

/// Starts etcd as member 0 of `planned` on its data dir and asserts it serves the check key.
fn assert_etcd_serves(planned: &Cluster) {
    let member = &planned.members[0];
    let log = planned.dir().join("etcd.log");
    let mut child = Command::new(EtcdVersion::from_env().etcd())
        .args(["--name", &member.name, "--data-dir"])
        .arg(&member.data_dir)
        .args(["--listen-client-urls", &member.client_url])
        .args(["--advertise-client-urls", &member.client_url])
        .args(["--listen-peer-urls", &member.peer_url])
        .args(["--initial-advertise-peer-urls", &member.peer_url])
        .args(["--initial-cluster", &planned.initial_cluster()])
        .args(["--initial-cluster-token", planned.token()])
        .args(["--initial-cluster-state", "new"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let got = loop {
        let got = run(planned, &["get", CHECK_KEY, "-w", "json"]);
        if got.code == 0 || Instant::now() > deadline {
            break got;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "etcd exited:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    got.expect_code(0);
    assert_eq!(got.json()["kvs"][0]["value"], CHECK_VALUE, "{got}");
}

/// A cluster with the check key and 10 MB of random values, and its saved `.db.zst`.
fn source() -> (Cluster, PathBuf) {
    let source = Cluster::start(1, Security::Plain);
    source.put(CHECK_KEY, CHECK_VALUE);
    source.put_random("/stream/big/", 100, 100_000);
    let file = save_snapshot(&source, &source.dir().join("store"), "zstd");
    (source, file)
}

#[test]
fn a_backup_found_bad_at_the_end_of_the_stream_leaves_nothing_at_the_target() {
    let (source, file) = source();
    let snapshot = decompressed(&file);
    let bad = source.dir().join("bad");
    std::fs::create_dir(&bad).unwrap();
    let bad_trailer = bad.join("bad-trailer.db.zst");
    with_bad_trailer(&snapshot, &bad_trailer);
    let good = std::fs::read(&file).unwrap();
    let cut = bad.join("cut.db.zst");
    std::fs::write(&cut, &good[..good.len() / 2]).unwrap();

    let s3 = S3Server::start();
    s3.create_bucket("backups");
    let put = http_request(
        s3.port,
        "PUT",
        "/backups/bad/bad-trailer.db.zst",
        &[],
        &std::fs::read(&bad_trailer).unwrap(),
    )
    .unwrap();
    assert_eq!(put.status, 200, "{}", put.body);
    let s3_flags = [
        "--s3-endpoint",
        s3.endpoint.as_str(),
        "--allow-http",
        "--s3-path-style",
    ];

    let planned = Cluster::plan_restore(1, "b");
    let before = entries(planned.dir());
    let trailer_cases = [
        bad_trailer.display().to_string(),
        format!("file://{}/bad-trailer.db.zst", bad.display()),
        "s3://backups/bad/bad-trailer.db.zst".to_string(),
    ];
    for source in &trailer_cases {
        for dry_run in [false, true] {
            let mut extra: Vec<&str> = s3_flags.to_vec();
            if dry_run {
                extra.push("--dry-run");
            }
            let refused = restore_from(source, &planned, 0, &extra, &S3_ENV);
            assert_clear_error(&refused, "does not match");
            assert_eq!(
                entries(planned.dir()),
                before,
                "{source}, dry run {dry_run}"
            );
        }
    }
    let cut_cases = [
        cut.display().to_string(),
        format!("file://{}/cut.db.zst", bad.display()),
    ];
    for source in &cut_cases {
        let refused = restore_from(source, &planned, 0, &[], &[]);
        assert_clear_error(&refused, "cut.db.zst");
        assert_eq!(entries(planned.dir()), before, "{source}");
    }
    // Skipping the hash check lets the mismatch through, as etcdutl does.
    let skipped = restore_from(
        &bad_trailer.display().to_string(),
        &planned,
        0,
        &["--skip-hash-check"],
        &[],
    );
    skipped.expect_code(0);
    assert_eq!(skipped.json()["trailer"], "mismatch_ignored", "{skipped}");
    std::fs::remove_dir_all(&planned.members[0].data_dir).unwrap();

    // The good backup, from S3 too, restores and etcd serves it.
    let put = http_request(s3.port, "PUT", "/backups/good/b.db.zst", &[], &good).unwrap();
    assert_eq!(put.status, 200, "{}", put.body);
    let done = restore_from(
        "s3://backups/good/b.db.zst",
        &planned,
        0,
        &s3_flags,
        &S3_ENV,
    );
    done.expect_code(0);
    assert_eq!(done.json()["trailer"], "verified", "{done}");
    assert_etcd_serves(&planned);
}

/// Whether process `pid` holds a spool file open in `dir`: an unnamed (`O_TMPFILE`) file
/// there, which `/proc` shows as `DIR/#INODE (deleted)`.
fn holds_spool_in(pid: u32, dir: &Path) -> bool {
    let prefix = format!("{}/#", dir.display());
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .any(|target| target.to_string_lossy().starts_with(&prefix))
}

#[test]
fn a_restore_killed_in_the_middle_of_the_stream_leaves_nothing_and_the_next_one_restores() {
    let (source, file) = source();
    let good = std::fs::read(&file).unwrap();
    let planned = Cluster::plan_restore(1, "k");
    let data = planned.members[0].data_dir.clone();
    let spool_dir = data.parent().unwrap().to_path_buf();
    let before = entries(planned.dir());

    // The backup comes through a pipe, half of it, then the restore is killed while it holds
    // its spool open.
    let fifo = source.dir().join("slow.db.zst");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let member = &planned.members[0];
    let mut child = Command::new(etcdops_path())
        .args(["snapshot", "restore"])
        .arg(&fifo)
        .arg("--data-dir")
        .arg(&data)
        .args(["--name", &member.name])
        .args(["--initial-cluster", &planned.initial_cluster()])
        .args(["--initial-cluster-token", planned.token()])
        .args(["--initial-advertise-peer-urls", &member.peer_url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut pipe = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    pipe.write_all(&good[..good.len() / 2]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !holds_spool_in(child.id(), &spool_dir) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the restore ended before it was killed"
        );
        assert!(Instant::now() < deadline, "the restore never spooled");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(pipe);
    assert_eq!(
        entries(planned.dir()),
        before,
        "a restore killed mid-stream leaves nothing"
    );

    let done = restore_from(&file.display().to_string(), &planned, 0, &[], &[]);
    done.expect_code(0);
    assert_eq!(done.json()["trailer"], "verified", "{done}");
    assert_etcd_serves(&planned);
}
