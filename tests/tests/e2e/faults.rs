//! Fault injection: `etcdops` killed with SIGKILL at many points of a save (local dir and S3)
//! and of a restore. Whatever the moment, a listed backup is complete and verifies, and a
//! data dir holds its old state or a complete restore, never a half-written one.
//! Kill points are spread over the measured duration of an uninterrupted run
//! (deterministically, so a failure can be replayed); the assertions do not depend on timing.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, S3Server, Security, etcdops, etcdops_path};
use serde_json::Value;

const TRIALS: u32 = 20;
const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "Very-Secret-Test-Key"),
    ("AWS_REGION", "us-east-1"),
];

/// The kill point of trial `n`: spread over `0..=duration` in a scrambled order.
fn kill_point(n: u32, duration: Duration) -> Duration {
    let slot = (n * 7 + 3) % (TRIALS + 1);
    duration.mul_f64(f64::from(slot) / f64::from(TRIALS))
}

fn spawn(args: &[String], env: &[(&str, &str)]) -> Child {
    Command::new(etcdops_path())
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn etcdops")
}

/// Runs once to completion and returns how long it took.
fn timed(args: &[String], env: &[(&str, &str)]) -> Duration {
    let started = Instant::now();
    let status = spawn(args, env).wait().expect("wait");
    assert!(
        status.success(),
        "the uninterrupted run failed: etcdops {args:?}"
    );
    started.elapsed()
}

/// Kills the run at `after` (or lets it finish first) and reaps it.
fn kill_after(mut child: Child, after: Duration) {
    let deadline = Instant::now() + after;
    while Instant::now() < deadline {
        if child.try_wait().expect("try_wait").is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn list(store: &str, extra: &[String], env: &[(&str, &str)]) -> Value {
    let mut args = vec!["snapshot".into(), "list".into(), store.to_string()];
    args.extend(extra.iter().cloned());
    args.extend(["-w".into(), "json".into()]);
    let run = etcdops(&args, env);
    run.expect_code(0);
    run.json()
}

/// Every listed backup is complete and verifies; returns how many there are.
fn assert_only_complete_backups(store: &str, extra: &[String], env: &[(&str, &str)]) -> usize {
    let catalog = list(store, extra, env);
    let backups = catalog["backups"].as_array().expect("backups").clone();
    for backup in &backups {
        let object = backup["object"].as_str().unwrap();
        assert_eq!(backup["complete"], true, "listed but incomplete: {backup}");
        let mut args = vec![
            "snapshot".into(),
            "verify".into(),
            format!("{}/{object}", store.trim_end_matches('/')),
        ];
        args.extend(extra.iter().cloned());
        let run = etcdops(&args, env);
        assert_eq!(run.code, 0, "a listed backup does not verify:\n{run}");
    }
    backups.len()
}

fn save_args(cluster: &Cluster, store: &str, extra: &[String]) -> Vec<String> {
    let mut args = cluster.client_flags();
    args.extend([
        "snapshot".into(),
        "save".into(),
        store.to_string(),
        "--quiet".into(),
    ]);
    args.extend(extra.iter().cloned());
    args
}

#[test]
fn saves_killed_at_any_point_leave_only_complete_backups_in_a_local_dir() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 40, 500_000);
    let store_dir = cluster.dir().join("backups");
    let store = store_dir.display().to_string();
    let args = save_args(&cluster, &store, &[]);
    let duration = timed(&args, &[]);
    for n in 0..TRIALS {
        kill_after(spawn(&args, &[]), kill_point(n, duration));
    }
    let listed = assert_only_complete_backups(&store, &[], &[]);
    assert!(listed >= 1, "the uninterrupted save is listed");
    // Nothing half-written carries a final name: every object is a listed backup or an
    // orphan that `list` reports (and `prune` deletes); temporary files have other names.
    let catalog = list(&store, &[], &[]).to_string();
    for entry in std::fs::read_dir(find_cluster_dir(&store_dir)).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".db") || name.ends_with(".db.zst") {
            assert!(
                catalog.contains(&name),
                "{name} is neither listed nor reported as an orphan"
            );
        }
    }
}

fn find_cluster_dir(store: &Path) -> std::path::PathBuf {
    // Backups live in `<store>/etcd-<cluster id>/`.
    std::fs::read_dir(store)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().is_dir())
        .map(|e| e.path())
        .unwrap_or_else(|| store.to_path_buf())
}

#[test]
fn saves_killed_at_any_point_leave_only_complete_backups_in_s3() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 40, 500_000);
    let s3 = S3Server::start();
    s3.create_bucket("backups");
    let store = "s3://backups/faults";
    let extra: Vec<String> = [
        "--s3-endpoint",
        &s3.endpoint,
        "--allow-http",
        "--s3-path-style",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut save_extra = extra.clone();
    save_extra.extend(["--part-size", "5MiB", "--compression", "none"].map(String::from));
    let args = save_args(&cluster, store, &save_extra);
    let duration = timed(&args, &S3_ENV);
    for n in 0..TRIALS {
        kill_after(spawn(&args, &S3_ENV), kill_point(n, duration));
    }
    let listed = assert_only_complete_backups(store, &extra, &S3_ENV);
    assert!(listed >= 1, "the uninterrupted save is listed");
}

/// What a data dir holds after a killed restore.
#[derive(Debug, PartialEq)]
enum DirState {
    /// Moved aside, the new one not yet renamed in (nothing lost; etcd cannot start).
    Absent,
    /// A complete restore made with this cluster token.
    Restored(String),
}

fn dir_state(data_dir: &Path) -> DirState {
    if !data_dir.exists() {
        return DirState::Absent;
    }
    let marker = data_dir.join("member").join("etcdops-restore.json");
    let text = std::fs::read_to_string(&marker).unwrap_or_else(|e| {
        panic!(
            "{} exists without a restore marker: {e}",
            data_dir.display()
        )
    });
    let marker: Value = serde_json::from_str(&text).expect("marker JSON");
    // Complete: the db reads back, the WAL is there.
    let db = data_dir.join("member/snap/db");
    let status = etcdops(
        &[
            "snapshot".into(),
            "status".into(),
            db.display().to_string(),
            "-w".into(),
            "json".into(),
        ],
        &[],
    );
    assert_eq!(
        status.code,
        0,
        "{} holds an unreadable db:\n{status}",
        data_dir.display()
    );
    let wal = data_dir.join("member/wal");
    let wal_files = std::fs::read_dir(&wal)
        .map(|d| d.filter_map(Result::ok).count())
        .unwrap_or(0);
    assert!(wal_files > 0, "{} has no WAL", data_dir.display());
    DirState::Restored(
        marker["initial_cluster_token"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

#[test]
fn restores_killed_at_any_point_leave_the_old_state_or_a_complete_restore() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 40, 500_000);
    let store = cluster.dir().join("backups");
    let snapshot = crate::save_snapshot(&cluster, &store, "zstd");
    let data_dir = cluster.dir().join("restored/etcd");
    let restore = |token: &str| -> Vec<String> {
        [
            "snapshot",
            "restore",
            &snapshot.display().to_string(),
            "--data-dir",
            &data_dir.display().to_string(),
            "--name",
            "r0",
            "--initial-cluster",
            "r0=http://127.0.0.1:2380",
            "--initial-advertise-peer-urls",
            "http://127.0.0.1:2380",
            "--initial-cluster-token",
            token,
            "--move-aside",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let duration = timed(&restore("token-initial"), &[]);
    assert_eq!(
        dir_state(&data_dir),
        DirState::Restored("token-initial".into())
    );
    let mut previous = "token-initial".to_string();
    for n in 0..TRIALS {
        let token = format!("token-{n}");
        kill_after(spawn(&restore(&token), &[]), kill_point(n, duration));
        match dir_state(&data_dir) {
            DirState::Restored(found) => {
                assert!(
                    found == previous || found == token,
                    "trial {n}: the data dir holds restore {found}, neither the old {previous} nor the new {token}"
                );
                previous = found;
            }
            DirState::Absent => {
                // Killed between moving the old dir aside and renaming the new one in: the old
                // one is kept aside, complete.
                let aside = std::fs::read_dir(data_dir.parent().unwrap())
                    .unwrap()
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .unwrap()
                            .to_string_lossy()
                            .starts_with("etcd.bak-")
                    })
                    .any(|p| dir_state(&p) == DirState::Restored(previous.clone()));
                assert!(
                    aside,
                    "trial {n}: the data dir is gone and no complete copy was kept aside"
                );
                // The next restore starts from an absent dir.
            }
        }
    }
    // Whatever happened, one more uninterrupted restore completes.
    let done = etcdops(&restore("token-final"), &[]);
    assert_eq!(done.code, 0, "{done}");
    assert_eq!(
        dir_state(&data_dir),
        DirState::Restored("token-final".into())
    );
}
