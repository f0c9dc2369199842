//! A local store's entries that are not files etcdops wrote are never followed or read: a
//! backup's object swapped for a link to a secret file (with a manifest forged to carry that
//! file's SHA-256 and size), a manifest that is a link, an object that is a FIFO. `list`
//! reports them and shows no such backup complete; `verify`, `status`, `restore`, `delete`
//! and a named `copy` refuse them by name in one line; a whole-store `copy` and `prune` leave
//! them (and the backups they belong to) where they are; no output holds a byte of the
//! secret, and the secret file is unchanged.

use std::path::Path;
use std::process::Command;

use etcdops_tests::{Cluster, Run, Security, args, etcdops, etcdops_path};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::assert_clear_error;

/// What the red team's link points to: a file etcdops's user may read and the attacker
/// may not, long enough (4096 + 32 bytes) to look like a snapshot with etcd's trailer.
fn secret_bytes() -> Vec<u8> {
    let line = b"TOP-SECRET root:$6$red-team-shadow-line$0123456789abcdef\n";
    line.iter().copied().cycle().take(4096 + 32).collect()
}

/// No byte of `secret` in the run's output: not as text, not its last 32 bytes (a trailer)
/// or its bytes 16..20 (a bbolt magic) as hex.
fn assert_no_secret(run: &Run, secret: &[u8]) {
    let text = format!("{}{}", run.stdout, run.stderr);
    assert!(!text.contains("TOP-SECRET"), "{run}");
    assert!(!text.contains("red-team-shadow"), "{run}");
    let tail = hex::encode(&secret[secret.len() - 32..]);
    assert!(!text.contains(&tail), "the last 32 bytes shown:\n{run}");
    let magic = u32::from_le_bytes(secret[16..20].try_into().unwrap());
    assert!(
        !text.contains(&format!("{magic:x}")),
        "bytes 16..20 shown:\n{run}"
    );
}

/// `etcdops args`, killed after 30 s (a FIFO opened for reading would block for ever).
fn bounded(rest: &[&str]) -> Run {
    let output = Command::new("timeout")
        .arg("30")
        .arg(etcdops_path())
        .args(rest)
        .output()
        .unwrap();
    Run {
        args: args(rest),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn save(cluster: &Cluster, store: &str) -> String {
    let mut rest = cluster.client_flags();
    rest.extend(args(&["snapshot", "save", store, "-w", "json", "-q"]));
    let run = etcdops(&rest, &[]);
    run.expect_code(0);
    run.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string()
}

fn listed(store: &str) -> (Run, Value) {
    let run = bounded(&["snapshot", "list", store, "-w", "json"]);
    run.expect_code(0);
    let json = run.json();
    (run, json)
}

#[test]
fn links_and_fifos_in_a_local_store_are_never_read_copied_or_deleted() {
    if etcdops_tests::skip_on_etcd_3_4(
        "what a local store reads does not depend on etcd's release (etcd only makes backups)",
    ) {
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/foreign/", 10);
    let work = cluster.dir().join("foreign");
    let store = work.join("store");
    let store_arg = store.display().to_string();
    let linked = save(&cluster, &store_arg);
    let manifest_linked = save(&cluster, &store_arg);
    let fifo = save(&cluster, &store_arg);
    let newest = save(&cluster, &store_arg);
    let secret_path = work.join("shadow");
    let secret = secret_bytes();
    std::fs::write(&secret_path, &secret).unwrap();
    let at = |name: &str| store.join(name);
    let manifest_of = |object: &str| format!("{object}.manifest.json");

    // The object of the oldest backup: a link to the secret, its manifest forged to match.
    std::fs::remove_file(at(&linked)).unwrap();
    std::os::unix::fs::symlink(&secret_path, at(&linked)).unwrap();
    let mut forged: Value =
        serde_json::from_slice(&std::fs::read(at(&manifest_of(&linked))).unwrap()).unwrap();
    forged["object_sha256"] = hex::encode(Sha256::digest(&secret)).into();
    forged["object_size"] = secret.len().into();
    forged["compression"] = "none".into();
    std::fs::write(at(&manifest_of(&linked)), forged.to_string()).unwrap();
    // The manifest of the second: a link. The object of the third: a FIFO.
    std::fs::remove_file(at(&manifest_of(&manifest_linked))).unwrap();
    std::os::unix::fs::symlink(&secret_path, at(&manifest_of(&manifest_linked))).unwrap();
    std::fs::remove_file(at(&fifo)).unwrap();
    let made = Command::new("mkfifo").arg(at(&fifo)).status().unwrap();
    assert!(made.success());
    let planted = [
        (linked.clone(), "symbolic link"),
        (manifest_of(&manifest_linked), "symbolic link"),
        (fifo.clone(), "FIFO"),
    ];
    let url = |name: &str| format!("{store_arg}/{name}");

    // list: reported, none complete but the newest, nothing read.
    let (run, json) = listed(&store_arg);
    assert_no_secret(&run, &secret);
    let complete: Vec<&str> = json["backups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["complete"] == true)
        .map(|b| b["object"].as_str().unwrap())
        .collect();
    assert_eq!(complete, [newest.as_str()], "{run}");
    let foreign: Vec<&str> = json["foreign_entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no foreign_entries:\n{run}"))
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for (name, kind) in &planted {
        assert!(
            foreign.contains(&name.as_str()),
            "{name} not listed:\n{run}"
        );
        assert!(
            run.stderr
                .lines()
                .any(|l| l.contains(name.as_str()) && l.contains(kind)),
            "{name} not reported:\n{run}"
        );
    }

    // Commands aimed at one: refused by name, in one line, nothing read.
    for (name, kind) in [(linked.as_str(), "symbolic link"), (fifo.as_str(), "FIFO")] {
        for rest in [
            vec!["snapshot", "verify", &url(name)],
            vec!["snapshot", "status", &format!("file://{}", url(name))],
            vec!["snapshot", "delete", &url(name)],
        ] {
            let run = bounded(&rest);
            assert_clear_error(&run, kind);
            let file = name.rsplit('/').next().unwrap();
            assert!(run.stderr.contains(file), "{run}");
            assert_no_secret(&run, &secret);
        }
    }
    let run = bounded(&["snapshot", "verify", &url(&manifest_linked)]);
    assert_clear_error(&run, "symbolic link");
    let file = manifest_of(&manifest_linked);
    assert!(
        run.stderr.contains(file.rsplit('/').next().unwrap()),
        "{run}"
    );
    assert_no_secret(&run, &secret);
    let data_dir = work.join("restored");
    let run = bounded(&[
        "snapshot",
        "restore",
        &format!("file://{}", url(&linked)),
        "--data-dir",
        data_dir.to_str().unwrap(),
    ]);
    assert_clear_error(&run, "symbolic link");
    assert_no_secret(&run, &secret);
    assert!(!data_dir.exists(), "a refused restore wrote {data_dir:?}");
    let offsite_named = work.join("offsite-named");
    let run = bounded(&[
        "snapshot",
        "copy",
        &store_arg,
        offsite_named.to_str().unwrap(),
        "--backup",
        &linked,
    ]);
    assert_clear_error(&run, "symbolic link");
    assert_no_secret(&run, &secret);

    // A whole-store copy takes the newest backup only and says what it left.
    let offsite = work.join("offsite");
    let run = bounded(&[
        "snapshot",
        "copy",
        &store_arg,
        offsite.to_str().unwrap(),
        "-w",
        "json",
        "-q",
    ]);
    run.expect_code(0);
    assert_no_secret(&run, &secret);
    let report = run.json();
    let copied: Vec<&str> = report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["object"].as_str().unwrap())
        .collect();
    assert_eq!(copied, [newest.as_str()], "{run}");
    for (name, _) in &planted {
        assert!(
            run.stderr.contains(name.as_str()),
            "{name} not reported:\n{run}"
        );
    }
    assert_no_copy_of(&offsite, &secret);

    // A prune that would keep only the newest deletes none of the planted entries, nor the
    // backups they belong to, nor the object beside the linked manifest.
    let run = bounded(&[
        "snapshot",
        "prune",
        &store_arg,
        "--keep-last",
        "1",
        "--orphan-grace",
        "0s",
        "-w",
        "json",
    ]);
    run.expect_code(0);
    assert_no_secret(&run, &secret);
    for (name, _) in &planted {
        assert!(
            at(name).symlink_metadata().is_ok(),
            "{name} deleted:\n{run}"
        );
        assert!(
            run.stderr.contains(name.as_str()),
            "{name} not reported:\n{run}"
        );
    }
    assert!(at(&manifest_linked).exists(), "{run}");
    for object in [&linked, &fifo] {
        assert!(
            at(&manifest_of(object)).exists(),
            "{object}'s manifest deleted:\n{run}"
        );
    }
    assert_eq!(std::fs::read(&secret_path).unwrap(), secret);
}

/// No file under `dir` holds the secret's bytes.
fn assert_no_copy_of(dir: &Path, secret: &[u8]) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !bytes.windows(16).any(|w| w == &secret[..16]),
                    "{path:?} holds the secret"
                );
            }
        }
    }
}

/// A snapshot named by a plain path (not a store URL) that is a FIFO: `status`, `restore` and
/// `verify` say it is not a regular file instead of blocking for ever in `open` (a writer
/// that never comes holds them; a cron-run check of a shared backup dir hangs).
#[test]
#[ignore = "known, left open on purpose: a snapshot path the user names may be a pipe (a backup streamed through a FIFO or /dev/stdin is a feature: restore_stream::a_restore_killed_in_the_middle_of_the_stream_...), and a pipe is waited on as cat waits; a FIFO inside a store is refused (links_and_fifos_in_a_local_store_...) and one beside a file as its manifest too"]
fn a_fifo_named_as_a_snapshot_file_is_refused_not_waited_on() {
    let work = tempfile::tempdir().unwrap();
    let fifo = work
        .path()
        .join("20261205T170000.000Z-rev9-bbbbbbbb.db.zst");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let fifo = fifo.display().to_string();
    let data_dir = work.path().join("restored");
    for rest in [
        vec!["snapshot", "status", fifo.as_str()],
        vec![
            "snapshot",
            "restore",
            fifo.as_str(),
            "--data-dir",
            data_dir.to_str().unwrap(),
        ],
        vec!["snapshot", "verify", fifo.as_str()],
    ] {
        let run = bounded(&rest);
        assert_ne!(
            run.code, 124,
            "killed after 30 s: it waited on the FIFO\n{run}"
        );
        assert_clear_error(&run, "FIFO");
    }
    assert!(!data_dir.exists(), "a refused restore wrote {data_dir:?}");
}

/// A backup's object replaced by a hard link to a file outside the store (here a file of the
/// test's own; as root, or where `fs.protected_hardlinks` is 0, any file on the store's
/// filesystem), its manifest forged to carry that file's SHA-256 and size: a hard link is a
/// regular file, so the symlink checks pass it. A whole-store `copy` must not carry the
/// linked file off-site as a complete backup (a regular file with more than one link is not a
/// file etcdops wrote: its objects are created under a temporary name and renamed, one link).
#[test]
#[ignore = "known, left open on purpose: treating every file with more than one link as foreign (tried) makes cp -al / hardlink-deduplicated copies of a store unrestorable and stalls a live backup run whose manifest got a second link; with fs.protected_hardlinks=1 only files the linker can already read and write can be linked. A narrower rule (refuse linked files only when copying off-site) is the next step"]
fn a_hard_link_out_of_a_local_store_is_never_copied() {
    if etcdops_tests::skip_on_etcd_3_4(
        "what a local store reads does not depend on etcd's release (etcd only makes backups)",
    ) {
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/hardlink/", 10);
    let work = cluster.dir().join("hardlinked");
    let store = work.join("store");
    let store_arg = store.display().to_string();
    let linked = save(&cluster, &store_arg);
    let newest = save(&cluster, &store_arg);
    let secret_path = work.join("shadow");
    let secret = secret_bytes();
    std::fs::write(&secret_path, &secret).unwrap();
    let object = store.join(&linked);
    std::fs::remove_file(&object).unwrap();
    std::fs::hard_link(&secret_path, &object).unwrap();
    let manifest = store.join(format!("{linked}.manifest.json"));
    let mut forged: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    forged["object_sha256"] = hex::encode(Sha256::digest(&secret)).into();
    forged["object_size"] = secret.len().into();
    forged["compression"] = "none".into();
    std::fs::write(&manifest, forged.to_string()).unwrap();

    let (run, json) = listed(&store_arg);
    assert_no_secret(&run, &secret);
    let complete: Vec<&str> = json["backups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["complete"] == true)
        .map(|b| b["object"].as_str().unwrap())
        .collect();
    assert_eq!(
        complete,
        [newest.as_str()],
        "the hard link listed complete:\n{run}"
    );

    let offsite = work.join("offsite");
    let run = bounded(&["snapshot", "copy", &store_arg, offsite.to_str().unwrap()]);
    assert_no_secret(&run, &secret);
    assert_no_copy_of(&offsite, &secret);
    assert_eq!(std::fs::read(&secret_path).unwrap(), secret);
}
