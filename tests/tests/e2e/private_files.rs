//! Every file and dir etcdops creates that can hold etcd data is private from its creation
//! on: each command runs under `umask 000` and `strace`, and the mode argument of every
//! creating system call (`open`/`openat` with `O_CREAT` or `O_TMPFILE`, `mkdir`, `mkdirat`,
//! `mknodat`) must give nothing to group or others. The mode in the call is what an
//! unprivileged user racing the command would get: a file created 0644 and tightened after
//! its copy can be opened in between, and the opened file stays readable. Checked for the
//! commands that write backups, copies, spools, staging and work dirs: `snapshot save` (to a
//! store and to a file), `snapshot status` (of a stored object and of a local `.zst`),
//! `snapshot restore`, `snapshot copy`, `snapshot compact`, `snapshot keygen`,
//! `data-dir backup` and the offline `defrag --data-dir`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use etcdops_tests::{Cluster, Run, Security, args, etcdops, etcdops_path};

use crate::backup_run::{BackupRun, write_changes};

/// One creating system call strace saw.
#[derive(Debug)]
struct Created {
    /// The path as passed (relative to its dir descriptor for the `*at` calls).
    path: String,
    /// The mode argument.
    mode: u32,
    /// The whole line, for failure messages.
    line: String,
}

/// The creating calls in strace's output files under `dir` (one per process or thread).
fn creations(dir: &Path) -> Vec<Created> {
    let mut out = Vec::new();
    for file in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
        for line in text.lines() {
            let call = line.split('(').next().unwrap_or_default();
            let creates = match call {
                "open" | "openat" | "openat2" => {
                    line.contains("O_CREAT") || line.contains("O_TMPFILE")
                }
                "creat" | "mkdir" | "mkdirat" | "mknod" | "mknodat" => true,
                _ => false,
            };
            if !creates {
                continue;
            }
            let path = line.split('"').nth(1).unwrap_or_default().to_string();
            let mode_text = if call == "openat2" {
                line.split("mode=").nth(1).unwrap_or_default()
            } else {
                let args = line.rsplit_once(") = ").map_or(line, |(args, _)| args);
                args.rsplit(", ").next().unwrap_or_default()
            };
            let digits: String = mode_text
                .rsplit('|')
                .next()
                .unwrap_or_default()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let mode = u32::from_str_radix(&digits, 8)
                .unwrap_or_else(|_| panic!("no mode in a creating call: {line}"));
            out.push(Created {
                path,
                mode,
                line: line.to_string(),
            });
        }
    }
    out
}

/// Runs `etcdops args` under `umask 000` and strace (every process and thread, successful
/// creating calls only), with `env`; returns the run and the calls.
fn traced(work: &Path, what: &str, args: &[String], env: &[(&str, &str)]) -> (Run, Vec<Created>) {
    let traces = work.join(format!("strace-{what}"));
    std::fs::create_dir_all(&traces).unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(
            "umask 000 && exec strace -ff -qq -e trace=open,openat,openat2,creat,mkdir,mkdirat,\
             mknod,mknodat -e status=successful -o \"$0\" -- \"$@\"",
        )
        .arg(traces.join("t"))
        .arg(etcdops_path())
        .args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("ETCDCTL_") {
            cmd.env_remove(key);
        }
    }
    let output = cmd.envs(env.iter().copied()).output().expect("run strace");
    let run = Run {
        args: args.to_vec(),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    run.expect_code(0);
    (run, creations(&traces))
}

/// Every creating call gives nothing to group or others, and the ones `expected` name (a
/// part of the path each) were seen: the check cannot pass on a command that created nothing.
fn assert_private(what: &str, created: &[Created], expected: &[&str]) {
    for call in created {
        assert_eq!(
            call.mode & 0o077,
            0,
            "{what} created {} with mode {:o}: {}",
            call.path,
            call.mode,
            call.line
        );
    }
    for needle in expected {
        assert!(
            created.iter().any(|c| c.path.contains(needle)),
            "{what}: no creation of {needle:?} seen in\n{created:#?}"
        );
    }
}

fn args_of(flags: &[String], rest: &[&str]) -> Vec<String> {
    let mut out = flags.to_vec();
    out.extend(rest.iter().map(|s| s.to_string()));
    out
}

/// The files and dirs under `dir` with their modes, relative.
fn modes_under(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path.clone());
            }
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            out.push((rel, meta.permissions().mode() & 0o7777));
        }
    }
    out.sort();
    out
}

#[test]
fn every_file_and_dir_that_can_hold_etcd_data_is_created_private() {
    if etcdops_tests::skip_on_etcd_3_4(
        "the modes etcdops creates files with do not depend on etcd's release",
    ) {
        return;
    }
    let mut cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/private/", 20);
    let work = cluster.dir().join("private-files");
    std::fs::create_dir_all(&work).unwrap();
    let tmp = work.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let tmp_env = [("TMPDIR", tmp.to_str().unwrap())];
    let flags = cluster.client_flags();
    let store = work.join("store");
    let store_arg = store.display().to_string();

    // A backup into a store that does not exist yet: its dirs, temporary files and manifest.
    let (saved, created) = traced(
        &work,
        "save",
        &args_of(
            &flags,
            &["snapshot", "save", &store_arg, "-w", "json", "-q"],
        ),
        &[],
    );
    assert_private(
        "snapshot save STORE",
        &created,
        &["store", "etcd-", ".partial-"],
    );
    let object = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();

    // etcdctl's form: one file, written as FILE.part.
    let file = work.join("file.db");
    let (_, created) = traced(
        &work,
        "save-file",
        &args_of(&flags, &["snapshot", "save", file.to_str().unwrap()]),
        &[],
    );
    assert_private("snapshot save FILE", &created, &["file.db.part"]);

    // Status spools the decompressed db in $TMPDIR: of the stored object, and of the object
    // read as a local .zst file.
    let url = format!("file://{store_arg}/{object}");
    let local_zst = store.join(&object).display().to_string();
    for (what, source) in [("status-object", &url), ("status-file", &local_zst)] {
        let (_, created) = traced(
            &work,
            what,
            &["snapshot", "status", source.as_str(), "-w", "json"].map(String::from),
            &tmp_env,
        );
        assert_private(what, &created, &[tmp.to_str().unwrap()]);
    }

    // A restore: the spool beside the target (an O_TMPFILE in its parent, linked as the db
    // once checked), the staging dir, the member, snap and WAL dirs and files.
    let restored = work.join("restored");
    let restore_args = [
        "snapshot",
        "restore",
        &url,
        "--data-dir",
        restored.to_str().unwrap(),
        "--name",
        "r0",
        "--initial-cluster",
        "r0=http://127.0.0.1:1",
        "--initial-advertise-peer-urls",
        "http://127.0.0.1:1",
    ]
    .map(String::from);
    let (_, created) = traced(&work, "restore", &restore_args, &[]);
    assert_private(
        "snapshot restore",
        &created,
        &[
            "private-files",
            ".restored.restore-",
            "member",
            "snap",
            "wal",
        ],
    );

    // A copy to another store.
    let offsite = work.join("offsite");
    let (_, created) = traced(
        &work,
        "copy",
        &[
            "snapshot",
            "copy",
            &store_arg,
            offsite.to_str().unwrap(),
            "-q",
        ]
        .map(String::from),
        &[],
    );
    assert_private("snapshot copy", &created, &["offsite", ".partial-"]);

    // A compaction of a chain `backup run` wrote: its work dir, the spools there (the full
    // backup's, linked as the db rebuilt, and each segment's), the new backup.
    let chain_store = work.join("chain");
    let backup = BackupRun::start(&cluster, &chain_store, &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let written = write_changes(&cluster, "priv", 2);
    backup.wait_published(*written.last().unwrap());
    backup.stop();
    let compact_work = work.join("compact-work");
    std::fs::create_dir_all(&compact_work).unwrap();
    let (_, created) = traced(
        &work,
        "compact",
        &[
            "snapshot",
            "compact",
            chain_store.to_str().unwrap(),
            "--work-dir",
            compact_work.to_str().unwrap(),
            "-w",
            "json",
        ]
        .map(String::from),
        &tmp_env,
    );
    assert_private(
        "snapshot compact",
        &created,
        &["compact-work/.etcdops-compact-", ".partial-"],
    );

    // An identity file.
    let identity = work.join("identity.txt");
    let (_, created) = traced(
        &work,
        "keygen",
        &["snapshot", "keygen", "--out", identity.to_str().unwrap()].map(String::from),
        &[],
    );
    assert_private("snapshot keygen", &created, &["identity.txt"]);

    // The member stopped: a copy of its data dir, then an offline defrag of its db.
    cluster.kill_member_now(0);
    let data_dir = cluster.members[0].data_dir.clone();
    let (backed_up, created) = traced(
        &work,
        "data-dir-backup",
        &[
            "data-dir",
            "backup",
            data_dir.to_str().unwrap(),
            "-w",
            "json",
        ]
        .map(String::from),
        &[],
    );
    assert_private(
        "data-dir backup",
        &created,
        &[".bak-", ".part", "member", "snap", "db", "wal"],
    );
    // The copy, once complete, has its source's modes, as documented.
    let copy = PathBuf::from(backed_up.json()["path"].as_str().unwrap());
    assert_eq!(modes_under(&copy), modes_under(&data_dir));

    let (_, created) = traced(
        &work,
        "defrag",
        &["defrag", "--data-dir", data_dir.to_str().unwrap()].map(String::from),
        &[],
    );
    assert_private("defrag --data-dir", &created, &["db.defrag-"]);
}

/// A planted `x.db.part` symlink is never followed: the snapshot (every Secret in the
/// cluster) would otherwise be written into whatever file it points to, keeping that file's
/// own (here world-readable) mode. The temporary file is created exclusively.
#[test]
fn snapshot_save_does_not_write_through_a_planted_part_symlink() {
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
        &[("ETCDOPS_COMPAT", "etcdctl")],
    );
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"untouched",
        "the snapshot was written through the planted x.db.part symlink"
    );
}
