//! Red team of #24's performance work (paged `get`, the one-pass restore through a spool,
//! the threaded save): the attacks that held, the bug found and fixed (a mount point named by
//! a relative path), and one known gap kept as an ignored test (non-UTF-8 key arguments).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use etcdops_tests::{Cluster, Security, block_on, etcdops_path};

use crate::snapshot_restore::restore_from;
use crate::{assert_clear_error, save_snapshot};

/// Runs `program` with byte arguments (not necessarily UTF-8) in etcdctl-compatible mode.
fn raw_bytes(
    program: &Path,
    args: &[&[u8]],
    env: &[(&str, &str)],
    dir: Option<&Path>,
) -> (i32, Vec<u8>, String) {
    let args: Vec<&OsStr> = args.iter().map(|a| OsStr::from_bytes(a)).collect();
    let mut cmd = crate::compat_kv::command(program, &args, env);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let out = cmd.output().expect("run");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Binary keys (0x00, 0xff, runs of 0xff), keys that are prefixes of each other, empty
/// values, a dense run then one far key, dense clusters at both ends of the byte range.
fn binary_cluster() -> Cluster {
    let cluster = Cluster::start_with(1, Security::Plain, &[]);
    block_on(async {
        let mut c = cluster.client().await;
        let keys: Vec<Vec<u8>> = vec![
            vec![0],
            vec![0, 0],
            vec![0, 1],
            vec![1],
            vec![0xfe, 0xff],
            vec![0xff],
            vec![0xff, 0],
            vec![0xff, 0xff],
            vec![0xff, 0xff, 0xff],
            vec![0xff, 0xff, 0xff, 0xff],
            b"a".to_vec(),
            b"a\0".to_vec(),
            b"a\0\0".to_vec(),
            b"a\xff".to_vec(),
            b"ab".to_vec(),
            b"abc".to_vec(),
            b"b".to_vec(),
        ];
        for (i, k) in keys.iter().enumerate() {
            let v = if i % 2 == 0 {
                format!("v{i}").into_bytes()
            } else {
                Vec::new()
            };
            c.put(k.clone(), v, None).await?;
        }
        for i in 0..1000 {
            c.put(format!("s/a{i:05}"), "val", None).await?;
        }
        c.put("s/z", "last", None).await?;
        for i in 0..300 {
            let mut k = b"t/\0".to_vec();
            k.extend(format!("{i:03}").bytes());
            c.put(k, "", None).await?;
        }
        c.put(b"t/\x80".to_vec(), "mid", None).await?;
        for i in 0..300 {
            let mut k = b"t/\xff".to_vec();
            k.extend(format!("{i:03}").bytes());
            c.put(k, "x", None).await?;
        }
        for i in 0..300 {
            c.put(format!("u/{}", "a".repeat(i)), "", None).await?;
        }
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    cluster
}

#[test]
fn red24_paged_get_of_binary_and_skewed_keys_is_etcdctls_byte_for_byte() {
    let cluster = binary_cluster();
    let endpoints = cluster.endpoints();
    let cases: Vec<Vec<&str>> = vec![
        vec!["get", "", "--prefix"],
        vec!["get", "", "--prefix", "-w", "json"],
        vec!["get", "", "--prefix", "--keys-only", "-w", "json"],
        vec!["get", "--from-key", ""],
        vec!["get", "--from-key", "\u{1}"],
        vec!["get", "a", "--prefix"],
        vec!["get", "s/", "--prefix", "-w", "json"],
        vec!["get", "s/", "--prefix", "--limit", "1000", "-w", "json"],
        vec!["get", "s/", "--prefix", "--limit", "1001", "-w", "json"],
        vec!["get", "s/", "--prefix", "--limit", "3", "-w", "json"],
        vec!["get", "s/", "--prefix", "--limit", "6", "-w", "json"],
        vec!["get", "t/", "--prefix", "-w", "json"],
        vec!["get", "u/", "--prefix", "--keys-only"],
        vec!["get", "u/", "--prefix", "--limit", "4", "-w", "json"],
        vec!["get", "s/", "--prefix", "--rev", "30", "-w", "json"],
        vec![
            "get", "s/", "--prefix", "--order", "DESCEND", "--limit", "5",
        ],
        vec!["get", "a", "b"],
    ];
    for pages in ["3", "1", "2", "0"] {
        for args in &cases {
            let mut all: Vec<&[u8]> = vec![b"--endpoints", endpoints.as_bytes()];
            all.extend(args.iter().map(|a| a.as_bytes()));
            let theirs = raw_bytes(&cluster.version.etcdctl(), &all, &[], None);
            let ours = raw_bytes(
                &etcdops_path(),
                &all,
                &[("ETCDOPS_GET_PAGE_KEYS", pages)],
                None,
            );
            assert_eq!(theirs.0, 0, "{args:?}: {}", theirs.2);
            assert_eq!(theirs.0, ours.0, "{pages} {args:?}: {}", ours.2);
            assert!(
                theirs.1 == ours.1,
                "pages {pages}, {args:?}: stdout differs"
            );
        }
    }
}

#[test]
#[ignore = "known gap: key arguments are UTF-8 strings from the CLI to the library (KeyQuery)"]
fn red24_get_takes_a_non_utf8_key_as_etcdctl_does() {
    // Not yet: etcdctl takes `get $'\xff' --prefix`; etcdops (clap) refuses any non-UTF-8
    // argument ("invalid UTF-8 was detected in one or more arguments", exit 1), so binary
    // keys and prefixes cannot be read by name in compat mode.
    let cluster = binary_cluster();
    let endpoints = cluster.endpoints();
    for args in [
        vec![b"get".as_slice(), b"\xff", b"--prefix"],
        vec![b"get", b"\xff", b"--from-key"],
        vec![b"get", b"\xff\xff", b"--prefix", b"-w", b"json"],
        vec![b"get", b"a", b"\xff"],
    ] {
        let mut all: Vec<&[u8]> = vec![b"--endpoints", endpoints.as_bytes()];
        all.extend(args.iter().copied());
        let theirs = raw_bytes(&cluster.version.etcdctl(), &all, &[], None);
        let ours = raw_bytes(
            &etcdops_path(),
            &all,
            &[("ETCDOPS_GET_PAGE_KEYS", "3")],
            None,
        );
        assert_eq!(theirs.0, 0, "{}", theirs.2);
        assert_eq!(ours.0, 0, "{args:?}: {}", ours.2);
        assert!(theirs.1 == ours.1, "{args:?}: stdout differs");
    }
}

/// A cluster with 20 MB of values and its `.db.zst`, decompressed too.
fn saved() -> (Cluster, std::path::PathBuf, Vec<u8>) {
    let source = Cluster::start(1, Security::Plain);
    source.put("/red24/check", "ok");
    source.put_random("/red24/big/", 40, 500_000);
    let file = save_snapshot(&source, &source.dir().join("store"), "zstd");
    let db = zstd::decode_all(std::fs::File::open(&file).unwrap()).unwrap();
    (source, file, db)
}

fn listing(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = walk(root)
        .into_iter()
        .filter(|p| p.extension().is_none_or(|e| e != "log"))
        .map(|p| p.display().to_string())
        .collect();
    out.sort();
    out
}

fn walk(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn red24_damaged_zstd_streams_fail_in_one_line_and_leave_nothing() {
    // Held: a flipped byte at 95% of the compressed stream, garbage after the frame, a cut
    // at the last 3 bytes, a db with 4 KiB of zeros after its trailer: one line, exit 2.
    let (source, file, db) = saved();
    let good = std::fs::read(&file).unwrap();
    let dir = source.dir().join("bad");
    std::fs::create_dir(&dir).unwrap();
    let mut flip = good.clone();
    let at = flip.len() * 95 / 100;
    flip[at] ^= 1;
    let mut garbage = good.clone();
    garbage.extend_from_slice(b"garbage after the frame");
    let mut extra = db.clone();
    extra.extend_from_slice(&[0u8; 4096]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("flip.db.zst", flip, "flip.db.zst"),
        ("garbage.db.zst", garbage, "garbage.db.zst"),
        (
            "cutend.db.zst",
            good[..good.len() - 3].to_vec(),
            "cutend.db.zst",
        ),
        (
            "extra.db.zst",
            zstd::encode_all(&extra[..], 1).unwrap(),
            "does not match",
        ),
    ];
    let planned = Cluster::plan_restore(1, "r24d");
    let before = listing(planned.dir());
    for (name, bytes, needle) in &cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let refused = restore_from(&path.display().to_string(), &planned, 0, &[], &[]);
        assert_clear_error(&refused, needle);
        assert_eq!(listing(planned.dir()), before, "{name}");
    }
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid() == 0
        })
        .unwrap_or(false)
}

/// Mounts a tmpfs of `bytes` at `dir`; unmounted on drop.
struct Tmpfs(std::path::PathBuf);
impl Tmpfs {
    fn mount(dir: &Path, bytes: u64) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(ok.success());
        Tmpfs(dir.to_path_buf())
    }
}
impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn red24_enospc_at_every_stage_of_a_restore_fails_in_one_line_and_leaves_nothing() {
    // Held: a tmpfs from far too small to a few pages short (spool, linked db, raft snap
    // file, WAL): one line, exit 2, and the filesystem left empty.
    if !is_root() {
        eprintln!("skipped: needs root to mount a tmpfs");
        return;
    }
    let (source, file, db) = saved();
    let db_len = (db.len() - 32) as u64;
    let planned = Cluster::plan_restore(1, "r24n");
    let member = &planned.members[0];
    for extra_pages in [0u64, 1, 3, 4, 6] {
        let mnt = source.dir().join(format!("full{extra_pages}"));
        let _fs = Tmpfs::mount(&mnt, db_len + 4096 * extra_pages);
        let data = mnt.join("d");
        let args: Vec<String> = [
            "snapshot",
            "restore",
            &file.display().to_string(),
            "--data-dir",
            &data.display().to_string(),
            "--name",
            &member.name,
            "--initial-cluster",
            &planned.initial_cluster(),
            "--initial-cluster-token",
            planned.token(),
            "--initial-advertise-peer-urls",
            &member.peer_url,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let refused = etcdops_tests::etcdops(&args, &[]);
        assert_clear_error(&refused, "No space left on device");
        assert!(
            listing(&mnt).is_empty(),
            "+{extra_pages}: {:?}",
            listing(&mnt)
        );
    }
}

#[test]
fn red24_restore_into_a_mount_point_named_by_a_relative_path() {
    // Was a bug: `cd /var/lib && etcdops snapshot restore F --data-dir etcd` where etcd is a
    // mount point: is_mount_point() took the parent of "etcd" (""), so the mount point was
    // not seen, the staged dir was renamed over it, and the restore failed with "cannot write
    // 'etcd': Device or resource busy (os error 16)". The same dir by its absolute path
    // restored.
    if !is_root() {
        eprintln!("skipped: needs root to mount a tmpfs");
        return;
    }
    let (source, file, _) = saved();
    let planned = Cluster::plan_restore(1, "r24m");
    let member = &planned.members[0];
    let mnt = source.dir().join("mnt");
    let _fs = Tmpfs::mount(&mnt, 256 << 20);
    let file_arg = file.display().to_string();
    let cluster_arg = planned.initial_cluster();
    let args: Vec<&[u8]> = vec![
        b"snapshot",
        b"restore",
        file_arg.as_bytes(),
        b"--data-dir",
        b"mnt",
        b"--name",
        member.name.as_bytes(),
        b"--initial-cluster",
        cluster_arg.as_bytes(),
        b"--initial-cluster-token",
        planned.token().as_bytes(),
        b"--initial-advertise-peer-urls",
        member.peer_url.as_bytes(),
    ];
    let (code, _, stderr) = raw_bytes(&etcdops_path(), &args, &[], Some(source.dir()));
    assert_eq!(code, 0, "{stderr}");
    assert!(mnt.join("member/snap/db").exists());
}

#[test]
fn red24_a_backup_checked_by_its_manifest_is_refused_when_its_object_changed() {
    // A restore checks a backup with its manifest by the db's SHA-256 (hashed on the way for
    // etcd's trailer), not by a second SHA-256 of the stored bytes: every change to the
    // stored object must still be refused, through a path (the manifest beside the file) and
    // through a store URL, with nothing left at the target.
    let (source, file, _) = saved();
    let manifest = std::fs::read(format!("{}.manifest.json", file.display())).unwrap();
    let good = std::fs::read(&file).unwrap();
    // Another valid backup of the same cluster, one write later.
    source.put("/red24/later", "x");
    let other =
        std::fs::read(save_snapshot(&source, &source.dir().join("store2"), "zstd")).unwrap();
    let mut flip = good.clone();
    let at = flip.len() / 2;
    flip[at] ^= 0x40;
    let mut same_size_other = other.clone();
    same_size_other.resize(good.len(), 0);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a flipped byte", flip),
        ("another valid backup", other),
        ("another backup cut or padded to the size", same_size_other),
    ];
    let planned = Cluster::plan_restore(1, "r24m");
    let before = listing(planned.dir());
    let object = file.file_name().unwrap().to_string_lossy().to_string();
    for (i, (what, bytes)) in cases.iter().enumerate() {
        let store = source.dir().join(format!("damaged{i}"));
        std::fs::create_dir(&store).unwrap();
        std::fs::write(store.join(&object), bytes).unwrap();
        std::fs::write(store.join(format!("{object}.manifest.json")), &manifest).unwrap();
        for from in [
            store.join(&object).display().to_string(),
            format!("file://{}/{object}", store.display()),
        ] {
            let refused = restore_from(&from, &planned, 0, &[], &[]);
            assert_eq!(refused.code, 2, "{what} from {from}:\n{refused}");
            assert_eq!(
                refused.stderr.lines().count(),
                1,
                "{what} from {from}:\n{refused}"
            );
            assert!(!refused.stderr.contains("panicked"), "{refused}");
            assert_eq!(listing(planned.dir()), before, "{what} from {from}");
        }
    }
    // The intact backup restores by both ways, and etcd serves it.
    let store = source.dir().join("intact");
    std::fs::create_dir(&store).unwrap();
    std::fs::write(store.join(&object), &good).unwrap();
    std::fs::write(store.join(format!("{object}.manifest.json")), &manifest).unwrap();
    let by_url = Cluster::plan_restore(1, "r24u");
    restore_from(
        &format!("file://{}/{object}", store.display()),
        &by_url,
        0,
        &[],
        &[],
    )
    .expect_code(0);
    let mut by_path = planned;
    let done = restore_from(
        &store.join(&object).display().to_string(),
        &by_path,
        0,
        &[],
        &[],
    );
    done.expect_code(0);
    assert_eq!(done.json()["trailer"], "verified", "{done}");
    by_path.start_restored();
    let got = crate::run(&by_path, &["get", "/red24/check", "--print-value-only"]);
    got.expect_code(0);
    assert_eq!(got.stdout.trim(), "ok");
    let later = crate::run(
        &by_path,
        &["get", "/red24/later", "--count-only", "-w", "json"],
    );
    later.expect_code(0);
    assert_eq!(
        later.json()["count"],
        0,
        "the backup from before the later write"
    );
}
