//! The etcdctl drop-in at its edges: a save to a name without `.db`, `get --hex`, a watch
//! that loses its member or has a `--` without a command, a user's password from a piped
//! stdin, `defrag` with a member down, completions into a closed pipe. Each asserts what
//! etcdctl does (or what a safe tool must do).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security, args, assert_same_output, etcdops, etcdops_path};

use crate::compat_kv::Live;

const COMPAT: (&str, &str) = ("ETCDOPS_COMPAT", "etcdctl");

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
    let endpoints = cluster.client_urls().join(",");
    let first = cluster.put("/edges/w", "one");
    // From the first put's revision: the watch reports it whenever it is established.
    let rev = first.to_string();
    let args = [
        "--endpoints",
        &endpoints,
        "watch",
        "/edges/w",
        "--rev",
        &rev,
    ];
    let mut live = Live::start(&etcdops_path(), &args, &[]);
    live.until(|out| String::from_utf8_lossy(out).contains("one\n"));
    cluster.kill_member_now(0);
    // Until the two survivors have a leader, a put may fail: retried until one is applied.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cluster.put("/edges/w", "two")
    }))
    .is_err()
    {
        assert!(Instant::now() < deadline, "no put applied without member 0");
    }
    live.until(|out| String::from_utf8_lossy(out).contains("two\n"));
    assert_eq!(live.finish("-TERM").0, 0, "SIGTERM ends the watch cleanly");
}

/// `watch KEY --` (a separator and no command) is a usage error in etcdctl (exit 128, at
/// once) and in etcdops, never a watch that runs forever.
#[test]
fn watch_separator_without_a_command_is_refused() {
    let cluster = Cluster::start(1, Security::Plain);
    let endpoint = cluster.endpoints();
    let args = ["--endpoints", &endpoint, "watch", "/edges/x", "--"];
    let (code, out) = Live::start(&etcdops_path(), &args, &[]).ended();
    assert_ne!(code, 0, "{}", String::from_utf8_lossy(&out));
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
