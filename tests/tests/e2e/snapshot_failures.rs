//! A failed save must leave a clear error, a non-zero exit, no manifest, nothing under a final
//! name, and earlier backups untouched.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Security, etcdops_path};

use crate::{assert_clear_error, run};

/// Every file under `dir`, hidden ones included, relative to it.
fn all_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

pub(crate) struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    pub(crate) fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mounting a tmpfs needs root (the disk-full test needs it)"
        );
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_fails_the_save_cleanly_and_keeps_earlier_backups() {
    let cluster = Cluster::start(1, Security::Plain);
    let mount = cluster.dir().join("small-disk");
    let _tmpfs = Tmpfs::mount(&mount, "1m");
    let store = mount.display().to_string();
    let first = run(&cluster, &["snapshot", "save", &store, "-w", "json"]);
    first.expect_code(0);
    let before = all_files(&mount);
    assert_eq!(before.len(), 2, "{before:?}");

    cluster.put_random("/big/", 30, 100_000);
    let full = run(
        &cluster,
        &["snapshot", "save", &store, "--compression", "none"],
    );
    assert_clear_error(&full, "no space left");
    assert_eq!(
        all_files(&mount),
        before,
        "nothing new, nothing partial, nothing lost"
    );
    let list = run(&cluster, &["snapshot", "list", &store, "-w", "json"]).json();
    assert_eq!(list["backups"].as_array().unwrap().len(), 1);
}

#[test]
fn killing_the_member_mid_stream_fails_the_save_and_stores_nothing() {
    let mut cluster = Cluster::start(3, Security::Plain);
    cluster.put_random("/big/", 120, 1_000_000);
    let store = cluster.dir().join("b");
    std::fs::create_dir_all(&store).unwrap();
    let victim = cluster.members[2].client_url.clone();
    let mut child = Command::new(etcdops_path())
        .args(["--endpoints", &cluster.endpoints(), "snapshot", "save"])
        .arg(&store)
        .args(["--endpoint", &victim, "--compression-level", "19"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The upload's temporary file appears once the stream has started: kill the member then.
    let deadline = Instant::now() + Duration::from_secs(30);
    while all_files(&store).is_empty() {
        assert!(Instant::now() < deadline, "the save never started writing");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the save ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    cluster.kill_member_now(2);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains(&victim),
        "the error names the member: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        all_files(&store),
        Vec::<String>::new(),
        "no object, no manifest, no partial file"
    );
}
