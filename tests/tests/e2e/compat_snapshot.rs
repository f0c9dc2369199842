//! etcdctl's and etcdutl's snapshot commands side by side with etcdops: `snapshot save
//! FILE.db` (a plain file the release's own tools read), `snapshot status` (etcdutl's simple
//! and JSON, byte for byte; etcd 3.6's from the fixture), and etcdutl's offline tools
//! (`defrag --data-dir`, `hashkv`) on real members' data.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use etcdops_tests::{Cluster, Run, Security, args, assert_same_output, etcdops, side_by_side};

use crate::run;

/// The etcd 3.6.14 fixtures: `shared/fixtures/etcd-3.6.14` beside the repository (or above).
pub fn fixture_dir() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .map(|dir| dir.join("shared/fixtures/etcd-3.6.14"))
        .find(|dir| dir.join("snapshot-3.6.14.db").is_file())
        .expect("shared/fixtures/etcd-3.6.14 beside the repository")
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
fn status_of_the_3_6_snapshot_is_etcdutl_3_6s() {
    let dir = fixture_dir();
    let snapshot = dir.join("snapshot-3.6.14.db");
    for (format, expected) in [
        ("simple", "outputs/etcdutl-snapshot-status.simple"),
        ("json", "outputs/etcdutl-snapshot-status.json"),
    ] {
        let ours = our_status(&snapshot, format);
        ours.expect_code(0);
        let want = std::fs::read_to_string(dir.join(expected)).unwrap();
        assert_eq!(ours.stdout.trim_end(), want.trim_end(), "{ours}");
    }
    // Our own JSON labels both counts and the storage version.
    let file = snapshot.display().to_string();
    let own = etcdops(&args(&["snapshot", "status", &file, "-w", "json"]), &[]);
    own.expect_code(0);
    let json = own.json();
    assert_eq!(json["live_keys"], 44, "{own}");
    assert_eq!(json["storage_version"], "3.6.0", "{own}");
    assert!(json["total_key"].as_u64().unwrap() > 44, "{own}");
}
