//! The drills of `snapshot verify` against real etcd: `--against-cluster` on a backup with
//! delta segments compares the chain's last revision (replayed offline) with each member,
//! also after a later compaction; a chain whose last segment holds other content (every
//! checksum good) fails naming the member; `--restore-drill` restores the backup (or its
//! chain's end) into a private scratch dir, serves it with this run's etcd release without
//! the cluster, and compares hash and key count; a drill whose etcd exits or serves other
//! data fails saying why; the scratch dir is gone afterwards in every case.

use std::path::{Path, PathBuf};

use etcdops_tests::{Cluster, EtcdVersion, Run, Security, etcdops};
use serde_json::Value;

use crate::backup_run::{BackupRun, keys_at, write_changes};

/// `etcdops <connection of cluster> snapshot verify <args> -w json` with `TMPDIR=tmp` (where
/// the drill's scratch dir goes), expecting exit `code`.
fn verify(flags: &[String], tmp: &Path, args: &[&str], code: i32) -> (Run, Value) {
    let mut all: Vec<String> = flags.to_vec();
    all.extend(["snapshot", "verify"].map(String::from));
    all.extend(args.iter().map(|s| s.to_string()));
    all.extend(["-w", "json"].map(String::from));
    let tmp = tmp.display().to_string();
    let run = etcdops(&all, &[("TMPDIR", tmp.as_str())]);
    run.expect_code(code);
    let out = run.json();
    (run, out)
}

/// A private TMPDIR for the drill, inside the cluster's dir.
fn tmp_dir(cluster: &Cluster, tag: &str) -> PathBuf {
    let dir = cluster.dir().join(format!("tmp-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Nothing left in the drill's TMPDIR.
fn assert_no_scratch(tmp: &Path) {
    let left: Vec<_> = std::fs::read_dir(tmp).unwrap().flatten().collect();
    assert!(
        left.is_empty(),
        "the drill left {left:?} in {}",
        tmp.display()
    );
}

/// This run's etcd release, as the drill's binary.
fn etcd_binary() -> String {
    EtcdVersion::from_env().etcd().display().to_string()
}

/// A chain on `cluster`: a full backup, then segments up to the last of `writes`' revisions
/// (the writes run after the full backup); returns the full backup's URL and that revision.
fn chain(cluster: &Cluster, store: &Path, writes: impl FnOnce() -> i64) -> (String, i64) {
    let backup = BackupRun::start(cluster, store, &[]);
    let full = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    let last = writes();
    backup.wait_published(last);
    backup.stop_clean();
    (format!("{}/{full}", store.display()), last)
}

#[test]
fn a_chain_matches_the_cluster_at_its_last_revision_and_its_restore_drill_serves_it() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let store = cluster.dir().join("backups");
    // Puts, deletes, a txn and leased keys, in two rounds (more than one segment).
    let (url, last) = chain(&cluster, &store, || {
        *write_changes(&cluster, "drill", 2).last().unwrap()
    });
    let tmp = tmp_dir(&cluster, "chain");
    let flags = cluster.client_flags();
    let binary = etcd_binary();
    let (_, out) = verify(
        &flags,
        &tmp,
        &[
            &url,
            "--against-cluster",
            "--restore-drill",
            "--etcd-binary",
            &binary,
        ],
        0,
    );
    let against = &out["against_cluster"];
    assert_eq!(against["verdict"], "match", "{out}");
    assert_eq!(against["revision"], last, "{out}");
    assert!(against["segments"].as_u64().unwrap() >= 1, "{out}");
    assert_eq!(against["members"][0]["outcome"], "match", "{out}");
    let drill = &out["restore_drill"];
    assert_eq!(drill["ok"], true, "{out}");
    assert_eq!(drill["revision"], last, "{out}");
    assert_eq!(
        drill["etcd_version"],
        EtcdVersion::from_env().version_string(),
        "{out}"
    );
    assert_eq!(drill["etcd_hash"], drill["backup_hash"], "{out}");
    assert_eq!(drill["backup_hash"], against["hash"], "{out}");
    // The key count is the cluster's own at that revision.
    let keys = keys_at(&cluster, Some(last)).len() as i64;
    assert_eq!(drill["etcd_keys"], keys, "{out}");
    assert_eq!(drill["backup_keys"], keys, "{out}");
    assert_no_scratch(&tmp);

    // The cluster compacts below the chain's end: the chain, replayed, is hashed as that
    // member would, and still matches.
    cluster.put("/after", "x");
    let compacted = cluster.etcdctl(&[
        "--endpoints",
        &cluster.endpoints(),
        "compact",
        &(last - 1).to_string(),
        "--physical",
    ]);
    assert!(compacted.status.success(), "{compacted:?}");
    let (_, out) = verify(&flags, &tmp, &[&url, "--against-cluster"], 0);
    let member = &out["against_cluster"]["members"][0];
    assert_eq!(member["outcome"], "match", "{out}");
    assert_eq!(member["compact_revision"], last - 1, "{out}");
    assert_ne!(member["hash"], out["against_cluster"]["hash"], "{out}");
    assert_no_scratch(&tmp);
}

#[test]
fn a_chain_with_other_content_in_its_last_segment_fails_naming_the_member_yet_restores() {
    // What a chain whose last segment was changed and re-hashed looks like to a verifier:
    // another cluster's chain, every manifest and checksum good, with the same writes but
    // one value in its last segment.
    let live = Cluster::start(1, Security::Plain);
    let other = Cluster::start(1, Security::Plain);
    for cluster in [&live, &other] {
        cluster.put_keys("/k/", 5);
        cluster.delete("/k/0001");
    }
    let store = other.dir().join("backups");
    let (url, last) = chain(&other, &store, || {
        for cluster in [&live, &other] {
            cluster.put("/k/0000", "overwritten");
        }
        live.put("/k/x", "original");
        other.put("/k/x", "altered")
    });
    assert_eq!(live.put("/k/y", "later") - 1, last);
    let tmp = tmp_dir(&live, "altered");
    // Another cluster's chain is not compared (exit 2); passed off as the live cluster's...
    verify(&live.client_flags(), &tmp, &[&url, "--against-cluster"], 2);
    crate::snapshot_against_cluster::pass_off_as(&url, &live);
    // ...the backup and its chain alone pass.
    verify(&live.client_flags(), &tmp, &[&url], 0);

    let (run, out) = verify(&live.client_flags(), &tmp, &[&url, "--against-cluster"], 1);
    let against = &out["against_cluster"];
    assert_eq!(against["verdict"], "differs", "{out}");
    assert_eq!(against["revision"], last, "{out}");
    let endpoint = against["members"][0]["endpoint"].as_str().unwrap();
    let member = against["members"][0]["member_id"].as_str().unwrap();
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("differs from the cluster"))
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(
        line.contains(&format!("member {member} ({endpoint})"))
            && line.contains(&format!("revision {last}"))
            && line.contains("delta segment"),
        "{line}"
    );
    // Restored and served, it is what it holds: the drill passes (it proves the backup
    // restores, not that it is this cluster's).
    let binary = etcd_binary();
    let (_, out) = verify(
        &live.client_flags(),
        &tmp,
        &[&url, "--restore-drill", "--etcd-binary", &binary],
        0,
    );
    assert_eq!(out["restore_drill"]["ok"], true, "{out}");
    assert_no_scratch(&tmp);
}

#[test]
fn the_restore_drill_needs_no_cluster_and_a_failed_one_says_why_and_leaves_no_scratch_dir() {
    let mut cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 20);
    cluster.delete("/k/0003");
    let store = cluster.dir().join("backups");
    let (url, revision) = crate::snapshot_against_cluster::save(&cluster, &store);
    // The cluster is gone: the drill needs only the backup.
    cluster.kill_member(0);
    let tmp = tmp_dir(&cluster, "alone");
    let binary = etcd_binary();
    let (_, out) = verify(
        &[],
        &tmp,
        &[&url, "--restore-drill", "--etcd-binary", &binary],
        0,
    );
    let drill = &out["restore_drill"];
    assert_eq!(drill["ok"], true, "{out}");
    assert_eq!(drill["revision"], revision, "{out}");
    assert_eq!(drill["segments"], 0, "{out}");
    assert_eq!(drill["etcd_keys"], 19, "{out}");
    assert_no_scratch(&tmp);

    // An etcd that exits at once: the drill fails, with etcd's last words.
    let scripts = cluster.dir().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let exits = script(
        &scripts,
        "exits",
        "echo 'refusing to start: on purpose' >&2\nexit 3",
    );
    let (run, out) = verify(
        &[],
        &tmp,
        &[&url, "--restore-drill", "--etcd-binary", &exits],
        1,
    );
    assert_eq!(out["restore_drill"]["ok"], false, "{out}");
    assert!(
        run.stderr.contains("the restore drill failed")
            && run.stderr.contains("exited (exit status: 3)")
            && run.stderr.contains("refusing to start: on purpose"),
        "{run:?}"
    );
    assert_no_scratch(&tmp);

    // An etcd that serves other data (a data dir of its own, empty): the drill fails naming
    // what etcd could not give at the backup's revision.
    let other = cluster.dir().join("other-data");
    let wrong = script(
        &scripts,
        "wrong-data",
        &format!("exec {binary} \"$@\" --data-dir {}", other.display()),
    );
    let (run, out) = verify(
        &[],
        &tmp,
        &[&url, "--restore-drill", "--etcd-binary", &wrong],
        1,
    );
    assert_eq!(out["restore_drill"]["ok"], false, "{out}");
    assert!(
        run.stderr
            .contains(&format!("etcd gave no hash at revision {revision}")),
        "{run:?}"
    );
    assert_no_scratch(&tmp);

    // No such binary: a one-line error naming the option, nothing left behind.
    let (run, _) = verify_code_only(&tmp, &url, "/nonexistent/etcd", 2);
    assert!(
        run.stderr
            .contains("cannot start the etcd binary /nonexistent/etcd")
            && run.stderr.contains("--etcd-binary"),
        "{run:?}"
    );
    assert_no_scratch(&tmp);
}

/// `verify URL --restore-drill --etcd-binary BINARY` (no JSON expected).
fn verify_code_only(tmp: &Path, url: &str, binary: &str, code: i32) -> (Run, ()) {
    let args: Vec<String> = [
        "snapshot",
        "verify",
        url,
        "--restore-drill",
        "--etcd-binary",
        binary,
    ]
    .map(String::from)
    .to_vec();
    let tmp = tmp.display().to_string();
    let run = etcdops(&args, &[("TMPDIR", tmp.as_str())]);
    run.expect_code(code);
    (run, ())
}

/// An executable shell script `name` in `dir` with `body`; its path.
fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn an_interrupted_restore_drill_stops_its_etcd_and_removes_its_scratch_dir() {
    if etcdops_tests::skip_on_etcd_3_4(
        "the drill's own signal handling around an etcd stand-in that never serves",
    ) {
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 3);
    let store = cluster.dir().join("backups");
    let (url, _) = crate::snapshot_against_cluster::save(&cluster, &store);
    let tmp = tmp_dir(&cluster, "interrupted");
    let scripts = cluster.dir().join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let pid_file = scripts.join("etcd.pid");
    // An etcd that never serves (nor answers --version): the drill waits on it until
    // interrupted.
    let hangs = script(
        &scripts,
        "hangs",
        &format!(
            "[ \"$1\" = --version ] && exec sleep 600\necho $$ > {}\nexec sleep 600",
            pid_file.display()
        ),
    );
    let mut verify = std::process::Command::new(etcdops_tests::etcdops_path())
        .args([
            "snapshot",
            "verify",
            &url,
            "--restore-drill",
            "--etcd-binary",
            &hangs,
        ])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let etcd_pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the drill never started its etcd"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let scratch: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
    assert_eq!(scratch.len(), 1, "the scratch dir while etcd runs");
    let term = std::process::Command::new("kill")
        .args(["-TERM", &verify.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = verify.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(verify.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    // At once, not after the stand-in's sleep.
    assert!(
        std::time::Instant::now() < deadline,
        "the interrupted drill took until {deadline:?}"
    );
    assert!(stderr.contains("interrupted"), "{stderr}");
    // The etcd it started is gone (killed and reaped, not left running), and so is the dir.
    assert!(
        !Path::new(&format!("/proc/{etcd_pid}")).exists(),
        "the drill's etcd {etcd_pid} is still running"
    );
    assert_no_scratch(&tmp);
}

#[test]
fn a_drill_through_a_wrapper_script_leaves_no_etcd_behind() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/k/", 5);
    let store = cluster.dir().join("backups");
    let (url, _) = crate::snapshot_against_cluster::save(&cluster, &store);
    // A wrapper that runs etcd as its child (no exec), in a path with a space.
    let wrapper = cluster.dir().join("etcd wrapper");
    std::fs::write(&wrapper, format!("#!/bin/sh\n'{}' \"$@\"\n", etcd_binary())).unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let tmp = tmp_dir(&cluster, "wrapped");
    let (_, out) = verify(
        &[],
        &tmp,
        &[
            &url,
            "--restore-drill",
            "--etcd-binary",
            &wrapper.display().to_string(),
        ],
        0,
    );
    assert_eq!(out["restore_drill"]["ok"], true, "{out}");
    assert_no_scratch(&tmp);
    // No process still runs on the drill's scratch dir (the wrapper's etcd included).
    let left = std::process::Command::new("pgrep")
        .args(["-f", &tmp.display().to_string()])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}
