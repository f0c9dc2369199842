//! Red team for issue #20 (the etcdctl drop-in): each test proves one finding and FAILS on
//! the code it was written against. They assert what etcdctl does (or what a safe tool must
//! do); see the red team's report for the reasoning and severity of each.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcdops_tests::{
    Cluster, EtcdVersion, Security, args, assert_same_output, etcdops, etcdops_path,
};

use crate::run;

const COMPAT: (&str, &str) = ("ETCDOPS_COMPAT", "etcdctl");

/// A running etcdops whose stdout is collected in the background.
struct Live {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
}

impl Live {
    fn start(rest: &[&str]) -> Live {
        let mut child = Command::new(etcdops_path())
            .args(rest)
            .env("ETCDOPS_COMPAT", "etcdctl")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn etcdops");
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Live { child, out }
    }

    /// Waits until stdout contains `needle` (true) or `limit` passes or the process ends.
    fn until(&mut self, needle: &str, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if String::from_utf8_lossy(&self.out.lock().unwrap()).contains(needle) {
                return true;
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return String::from_utf8_lossy(&self.out.lock().unwrap()).contains(needle);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn stop(mut self) -> (Option<i32>, String) {
        let _ = self.child.kill();
        let status = self.child.wait().ok().and_then(|s| s.code());
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        (status, err)
    }
}

/// etcdctl writes a plain snapshot file for any name it is given (`snapshot.snap`,
/// `etcd-$(date +%F)`); under --compat etcdctl, etcdops makes a directory store for every
/// name that does not end in `.db`, exits 0, and neither etcdutl nor etcdops itself can
/// `snapshot status` or `restore` that path afterwards.
#[test]
fn red_compat_snapshot_save_to_a_name_without_db_writes_a_file_the_tools_read() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/red/save/", 5);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("etcd-backup.snap");
    let file_arg = file.display().to_string();
    let endpoint = cluster.endpoints();
    let saved = etcdops(
        &args(&["--endpoints", &endpoint, "snapshot", "save", &file_arg]),
        &[COMPAT],
    );
    saved.expect_code(0);
    assert!(
        file.is_file(),
        "etcdctl would have written a plain file at {file_arg}; etcdops made a directory:\n{saved}"
    );
    let status = cluster.version.snapshot_status(&file);
    assert!(status.is_ok(), "the release's snapshot status: {status:?}");
}

/// `--hex` changes etcdctl's simple output of get (keys and values as \xNN); etcdops
/// ignores it in simple and prints the raw bytes.
#[test]
fn red_get_hex_simple_is_etcdctls() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put("/red/hex", vec![0u8, 1, 0xff, b'a']);
    let endpoint = cluster.endpoints();
    assert_same_output(
        &cluster,
        &["--endpoints", &endpoint, "get", "/red/hex", "--hex"],
    );
    assert_same_output(
        &cluster,
        &[
            "--endpoints",
            &endpoint,
            "get",
            "/red/hex",
            "--hex",
            "--print-value-only",
        ],
    );
}

/// A pre-existing `x.db.part` symlink is followed: the snapshot (every Secret in the
/// cluster) is written through it into whatever file it points to, and that file keeps its
/// own (here world-readable) mode. A safe writer creates the temporary file exclusively.
#[test]
fn red_snapshot_save_does_not_write_through_a_planted_part_symlink() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put("/registry/secrets/default/token", "s3cr3t-token");
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"untouched").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("x.db.part")).unwrap();
    let file = dir.path().join("x.db").display().to_string();
    let endpoint = cluster.endpoints();
    let _ = etcdops(
        &args(&["--endpoints", &endpoint, "snapshot", "save", &file]),
        &[COMPAT],
    );
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"untouched",
        "the snapshot was written through the planted x.db.part symlink"
    );
}

/// The downgrade guard takes a backup dated in the future as fresh (its age is clamped to
/// zero), so one manifest with a wrong clock satisfies --max-backup-age forever.
#[test]
fn red_downgrade_guard_does_not_take_a_future_dated_backup_as_fresh() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("backups");
    let saved = run(
        &cluster,
        &[
            "snapshot",
            "save",
            &store.display().to_string(),
            "-w",
            "json",
        ],
    );
    saved.expect_code(0);
    let object = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    let manifest = store.join(format!("{object}.manifest.json"));
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    json["created_at"] = "2031-01-01T00:00:00Z".into();
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
    let target = match cluster.version {
        EtcdVersion::V3_5 => "3.4",
        EtcdVersion::V3_4 => "3.3",
    };
    let store_arg = store.display().to_string();
    let enabled = run(
        &cluster,
        &[
            "downgrade",
            "enable",
            target,
            "--store",
            &store_arg,
            "--max-backup-age",
            "1m",
        ],
    );
    if enabled.code == 0 {
        run(&cluster, &["downgrade", "cancel"]);
    }
    assert_ne!(
        enabled.code, 0,
        "downgrade enabled on a future-dated backup:\n{enabled}"
    );
    assert!(
        !enabled.stderr.contains("does not support downgrades"),
        "the guard let a future-dated backup through (the server answered):\n{enabled}"
    );
}

/// etcdctl's watch outlives the loss of the member it watches through: it reconnects to
/// another endpoint and goes on from the last revision. etcdops' unbounded watch (and a
/// `watch -- COMMAND` daemon) exits 1 on the first broken stream.
#[test]
fn red_watch_survives_the_loss_of_its_member() {
    let mut cluster = Cluster::start(3, Security::Plain);
    let urls = cluster.client_urls();
    let endpoints = urls.join(",");
    let mut live = Live::start(&["--endpoints", &endpoints, "watch", "/red/w"]);
    // The watch is established once it reports the first event.
    let mut first = false;
    let start = Instant::now();
    while !first && start.elapsed() < Duration::from_secs(20) {
        cluster.put("/red/w", "one");
        first = live.until("one\n", Duration::from_secs(2));
    }
    assert!(first, "the watch never reported the first event");
    cluster.kill_member_now(0);
    let mut second = false;
    let start = Instant::now();
    while !second && start.elapsed() < Duration::from_secs(30) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cluster.put("/red/w", "two")
        }));
        second = live.until("two\n", Duration::from_secs(3));
    }
    let (code, err) = live.stop();
    assert!(
        second,
        "the watch did not survive the loss of member 0 (exit {code:?}): {err}"
    );
}

/// `watch KEY --` (a separator and no command) is a usage error in etcdctl (exit 128, at
/// once); etcdops ignores the separator and watches forever.
#[test]
fn red_watch_separator_without_a_command_is_refused() {
    let cluster = Cluster::start(1, Security::Plain);
    let endpoint = cluster.endpoints();
    let mut live = Live::start(&["--endpoints", &endpoint, "watch", "/red/x", "--"]);
    let start = Instant::now();
    let mut ended = None;
    while start.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(status)) = live.child.try_wait() {
            ended = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, err) = live.stop();
    let status = ended.unwrap_or_else(|| panic!("still watching after 10s: {err}"));
    assert!(!status.success(), "{err}");
}

/// `echo "$PW" | etcdctl --user root get k` works with etcdctl (it reads the password from
/// stdin when stdin is not a terminal); etcdops refuses it.
#[test]
fn red_user_without_password_reads_it_from_a_piped_stdin() {
    let cluster = Cluster::start(1, Security::Auth);
    cluster.put("/red/auth", "v");
    let endpoint = cluster.endpoints();
    let mut child = Command::new(etcdops_path())
        .args([
            "--endpoints",
            &endpoint,
            "--user",
            "root",
            "get",
            "/red/auth",
        ])
        .env("ETCDOPS_COMPAT", "etcdctl")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    let password = etcdops_tests::ROOT_PASSWORD;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("/red/auth\nv\n"),
        "exit {:?}, stderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// etcdctl prints `defrag`'s endpoint as given (`127.0.0.1:2379`); etcdops adds `http://`
/// (the "endpoints print with http://" fixed for endpoint/member, not for defrag).
#[test]
fn red_defrag_simple_prints_the_endpoint_as_given() {
    let cluster = Cluster::start(1, Security::Plain);
    let endpoint = cluster.endpoints();
    let bare = endpoint.trim_start_matches("http://").to_string();
    assert_same_output(&cluster, &["--endpoints", &bare, "defrag"]);
}

/// With one member down, etcdctl defragments the others (and says on stderr which failed);
/// etcdops defragments none (one defragmenting while another is down can cost the quorum),
/// but prints etcdctl's failure line on stderr as etcdctl does and names the members it
/// skipped and why, with etcdctl's exit code.
#[test]
fn red_defrag_with_a_member_down_says_on_stderr_what_failed_and_what_was_skipped() {
    let mut cluster = Cluster::start(3, Security::Plain);
    let bare: Vec<String> = cluster
        .client_urls()
        .iter()
        .map(|u| u.trim_start_matches("http://").to_string())
        .collect();
    cluster.kill_member_now(1);
    let endpoints = bare.join(",");
    let both = etcdops_tests::side_by_side(
        &cluster,
        &[
            "--endpoints",
            &endpoints,
            "--command-timeout",
            "5s",
            "defrag",
        ],
        &[],
    );
    let (theirs, ours) = (&both.etcdctl, &both.etcdops);
    let failed = format!("Failed to defragment etcd member[{}]", bare[1]);
    assert_eq!(theirs.code, 1, "{theirs}");
    assert_eq!(ours.code, theirs.code, "{ours}");
    assert!(theirs.stderr.contains(&failed), "{theirs}");
    assert!(ours.stderr.contains(&failed), "{ours}");
    assert!(
        !ours.stdout.contains("Failed"),
        "the failure goes to stderr:\n{ours}"
    );
    for healthy in [&bare[0], &bare[2]] {
        let finished = format!("Finished defragmenting etcd member[{healthy}]");
        assert!(theirs.stdout.contains(&finished), "{theirs}");
        assert!(
            ours.stderr
                .contains(&format!("etcdops: skipped etcd member[{healthy}]: not defragmented because member[{}] failed first", bare[1])),
            "{ours}"
        );
    }
    assert_eq!(ours.stdout, "", "nothing was defragmented:\n{ours}");
}

/// `etcdops completion bash | head -1` panics (with a backtrace) on the closed pipe: "bad
/// input = one-line message, never a panic".
#[test]
fn red_completion_into_a_closed_pipe_does_not_panic() {
    let mut child = Command::new(etcdops_path())
        .args(["completion", "bash"])
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "a closed pipe is no error: {stderr}"
    );
}
