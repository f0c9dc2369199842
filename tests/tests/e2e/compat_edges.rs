//! The etcdctl drop-in at its edges: a save to a name without `.db`, `get --hex`, a watch
//! that loses its member or has a `--` without a command, a user's password from a piped
//! stdin, `defrag` with a member down, completions into a closed pipe. Each asserts what
//! etcdctl does (or what a safe tool must do).

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security, args, assert_same_output, etcdops, etcdops_path};

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
/// `etcd-$(date +%F)`); so does etcdops under --compat etcdctl (not a directory store), and
/// etcdutl and etcdops read that file afterwards.
#[test]
fn snapshot_save_to_a_name_without_db_writes_a_file_the_tools_read() {
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

/// `--hex` changes etcdctl's simple output of get (keys and values as \xNN), and etcdops'
/// the same way.
#[test]
fn get_hex_simple_is_etcdctls() {
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

/// etcdctl's watch outlives the loss of the member it watches through: it reconnects to
/// another endpoint and goes on from the last revision. So does etcdops' unbounded watch
/// (a `watch -- COMMAND` daemon must not exit on the first broken stream).
#[test]
fn watch_survives_the_loss_of_its_member() {
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
/// once) and in etcdops, never a watch that runs forever.
#[test]
fn watch_separator_without_a_command_is_refused() {
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
/// stdin when stdin is not a terminal), and with etcdops.
#[test]
fn user_without_password_reads_it_from_a_piped_stdin() {
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

/// etcdctl prints `defrag`'s endpoint as given (`127.0.0.1:2379`), without adding
/// `http://`; so does etcdops.
#[test]
fn defrag_simple_prints_the_endpoint_as_given() {
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
fn defrag_with_a_member_down_says_on_stderr_what_failed_and_what_was_skipped() {
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

/// `etcdops completion bash | head -1` ends quietly on the closed pipe, never with a panic
/// and its backtrace.
#[test]
fn completion_into_a_closed_pipe_does_not_panic() {
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
