//! A store is exactly its own layout (`etcd-<cluster>/…`): two clusters sharing one store,
//! foreign files and nested stores beside the backups, a live `backup run` lock, killed
//! saves' temporary files and a copy into the source's own folder. Local directory and moto
//! S3; real etcd clusters.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use etcdops_tests::{Cluster, Run, S3Server, Security, etcdops, etcdops_path, http_request};

use crate::assert_clear_error;
use crate::backup_run::BackupRun;

const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "Very-Secret-Test-Key"),
    ("AWS_REGION", "us-east-1"),
];

/// Where the shared store lives, with raw access to its files (around etcdops).
enum Place {
    Local(tempfile::TempDir),
    S3 { server: S3Server, bucket: String },
}

impl Place {
    fn local() -> Place {
        Place::Local(tempfile::tempdir().unwrap())
    }

    fn s3() -> Place {
        let server = S3Server::start();
        let bucket = "layout".to_string();
        server.create_bucket(&bucket);
        Place::S3 { server, bucket }
    }

    /// The store URL of folder `sub` (`""`: the root, the bucket itself on S3).
    fn url(&self, sub: &str) -> String {
        let base = match self {
            Place::Local(dir) => dir.path().join("store").display().to_string(),
            Place::S3 { bucket, .. } => format!("s3://{bucket}"),
        };
        if sub.is_empty() {
            base
        } else {
            format!("{base}/{sub}")
        }
    }

    /// Runs etcdops with the store flags appended.
    fn run(&self, cluster: Option<&Cluster>, rest: &[&str]) -> Run {
        let mut args: Vec<String> = cluster.map(|c| c.client_flags()).unwrap_or_default();
        args.extend(rest.iter().map(|s| s.to_string()));
        match self {
            Place::Local(_) => etcdops(&args, &[]),
            Place::S3 { server, .. } => {
                args.extend(
                    [
                        "--s3-endpoint",
                        &server.endpoint,
                        "--allow-http",
                        "--s3-path-style",
                    ]
                    .map(String::from),
                );
                etcdops(&args, &S3_ENV)
            }
        }
    }

    fn put(&self, name: &str, bytes: &[u8]) {
        match self {
            Place::Local(dir) => {
                let path = dir.path().join("store").join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, bytes).unwrap();
                // A day old: older than any grace.
                let file = std::fs::File::options().write(true).open(&path).unwrap();
                file.set_modified(SystemTime::now() - Duration::from_secs(86_400))
                    .unwrap();
            }
            Place::S3 { server, bucket } => {
                let r = http_request(server.port, "PUT", &format!("/{bucket}/{name}"), &[], bytes)
                    .unwrap();
                assert_eq!(r.status, 200, "PUT {name}: {}", r.body);
            }
        }
    }

    /// What identifies an object's bytes: the bytes themselves (local), or the ETag (MD5 of a
    /// single PUT) and size S3 lists (moto refuses unsigned GETs of objects).
    fn get(&self, name: &str) -> Option<String> {
        match self {
            Place::Local(dir) => std::fs::read(dir.path().join("store").join(name))
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
            Place::S3 { .. } => self
                .s3_listing()
                .into_iter()
                .find(|(key, _)| key == name)
                .map(|(_, fingerprint)| fingerprint),
        }
    }

    /// (key, "ETag size") of every object in the bucket.
    fn s3_listing(&self) -> Vec<(String, String)> {
        let Place::S3 { server, bucket } = self else {
            return Vec::new();
        };
        let r = http_request(
            server.port,
            "GET",
            &format!("/{bucket}?list-type=2"),
            &[],
            b"",
        )
        .unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        let keys = etcdops_tests::xml_values(&r.body, "Key");
        let etags = etcdops_tests::xml_values(&r.body, "ETag");
        let sizes = etcdops_tests::xml_values(&r.body, "Size");
        assert!(
            keys.len() == etags.len() && keys.len() == sizes.len(),
            "{}",
            r.body
        );
        keys.into_iter()
            .zip(
                etags
                    .into_iter()
                    .zip(sizes)
                    .map(|(e, s)| format!("{e} {s}")),
            )
            .collect()
    }

    /// Every object under the root, as names relative to it.
    fn names(&self) -> BTreeSet<String> {
        match self {
            Place::Local(dir) => {
                let root = dir.path().join("store");
                let mut out = BTreeSet::new();
                let mut stack = vec![root.clone()];
                while let Some(d) = stack.pop() {
                    let Ok(entries) = std::fs::read_dir(&d) else {
                        continue;
                    };
                    for e in entries.flatten() {
                        if e.file_type().unwrap().is_dir() {
                            stack.push(e.path());
                        } else {
                            let rel = e.path().strip_prefix(&root).unwrap().to_owned();
                            out.insert(rel.display().to_string());
                        }
                    }
                }
                out
            }
            Place::S3 { .. } => self.s3_listing().into_iter().map(|(key, _)| key).collect(),
        }
    }
}

/// `snapshot save` into `store` (with `extra` flags); the saved object's name and cluster.
fn save(place: &Place, cluster: &Cluster, store: &str, extra: &[&str]) -> (String, String, Run) {
    let mut rest = vec!["snapshot", "save", store, "-w", "json", "-q"];
    rest.extend_from_slice(extra);
    let run = place.run(Some(cluster), &rest);
    run.expect_code(0);
    let json = run.json();
    let object = json["manifest"]["object"].as_str().unwrap().to_string();
    let id = json["manifest"]["cluster_id"].as_str().unwrap().to_string();
    (object, id, run)
}

/// The backups `snapshot list` shows in `store`.
fn listed(place: &Place, store: &str) -> Vec<String> {
    let run = place.run(None, &["snapshot", "list", store, "-w", "json"]);
    run.expect_code(0);
    run.json()["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["object"].as_str().unwrap().to_string())
        .collect()
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn shared_store_keeps_each_cluster_and_every_foreign_file(place: Place) {
    let a = Cluster::start(1, Security::Plain);
    let b = Cluster::start(1, Security::Plain);
    a.put("/k", "a");
    b.put("/k", "b");
    let root = place.url("");
    let (b_old, b_id, _) = save(&place, &b, &root, &[]);
    let (b_new, _, _) = save(&place, &b, &root, &[]);
    // A nested store with backups of its own, and a folder that looks like a cluster's.
    let nested = place.url("etcd");
    let (nested_backup, a_id, _) = save(&place, &a, &nested, &[]);
    assert_ne!(a_id, b_id);
    let backup_file = nested_backup.rsplit('/').next().unwrap().to_string();
    let foreign: Vec<String> = vec![
        "manual/x.db".into(),
        "app/app.db".into(),
        "x.db.zst".into(),
        "y.db.zst.age".into(),
        "z.age".into(),
        "notes.txt".into(),
        format!("etcd-{a_id}/notes.db"),
        format!("etcd-{a_id}/notes.db.zst.age"),
        format!("etcd-old/{backup_file}"),
        format!("etcd-old/{backup_file}.manifest.json"),
    ];
    for (i, name) in foreign.iter().enumerate() {
        place.put(name, format!("foreign file {i}, not etcdops's").as_bytes());
    }
    // An orphan of etcdops's own: a backup name without a manifest.
    let orphan = format!("etcd-{b_id}/20261130T010000.000Z-rev1-0000abcd.db.zst");
    place.put(&orphan, b"crashed save");
    let nested_before: BTreeSet<String> = place
        .names()
        .into_iter()
        .filter(|n| n.starts_with("etcd/"))
        .collect();
    assert_eq!(nested_before.len(), 2, "{nested_before:?}");
    let foreign_before: Vec<Option<String>> = foreign.iter().map(|n| place.get(n)).collect();
    assert!(
        foreign_before.iter().all(Option::is_some),
        "{foreign_before:?}"
    );

    // The root store lists only its own two backups of B; the orphan is ours, nothing else.
    assert_eq!(listed(&place, &root), [b_new.clone(), b_old.clone()]);
    let orphans = place.run(
        None,
        &["snapshot", "list", &root, "--orphans", "-w", "json"],
    );
    orphans.expect_code(0);
    let orphan_names: Vec<String> = orphans.json()["orphans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(orphan_names, [orphan.as_str()], "{orphans}");

    // Cluster A saves with --keep-last 1 twice: only A's folder is pruned.
    let (a_first, _, _) = save(
        &place,
        &a,
        &root,
        &["--keep-last", "1", "--orphan-grace", "0s"],
    );
    let (a_second, _, run) = save(
        &place,
        &a,
        &root,
        &["--keep-last", "1", "--orphan-grace", "0s"],
    );
    let pruned = &run.json()["pruned"];
    assert_eq!(strings(&pruned["clusters"]), [a_id.as_str()], "{run}");
    let deleted: Vec<&str> = pruned["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["object"].as_str().unwrap())
        .collect();
    assert_eq!(deleted, [a_first.as_str()], "{run}");
    assert!(
        place.get(&orphan).is_some(),
        "B's orphan is not A's to prune:\n{run}"
    );
    let mut both = listed(&place, &root);
    both.sort();
    let mut expected = vec![a_second.clone(), b_new.clone(), b_old.clone()];
    expected.sort();
    assert_eq!(both, expected, "B's backups survive A's save --keep-last 1");

    // `snapshot delete` of a foreign file is refused.
    let run = place.run(
        None,
        &["snapshot", "delete", &format!("{root}/manual/x.db")],
    );
    assert_clear_error(&run, "not a backup etcdops wrote");

    // Prune every cluster: each keeps its newest; every deletion is reported.
    let before = place.names();
    let run = place.run(
        None,
        &[
            "snapshot",
            "prune",
            &root,
            "--keep-last",
            "1",
            "--orphan-grace",
            "0s",
            "-w",
            "json",
        ],
    );
    run.expect_code(0);
    let report = run.json();
    let after = place.names();
    let mut reported: BTreeSet<String> = BTreeSet::new();
    for d in report["deleted"].as_array().unwrap() {
        let mut objects = strings(&d["segments"]);
        objects.push(d["object"].as_str().unwrap().to_string());
        for object in objects {
            reported.insert(format!("{object}.manifest.json"));
            reported.insert(object);
        }
    }
    reported.extend(
        strings(&report["dangling_deleted"])
            .into_iter()
            .flat_map(|o| {
                let manifest = format!("{o}.manifest.json");
                [o, manifest]
            }),
    );
    reported.extend(strings(&report["orphans_deleted"]));
    let gone: BTreeSet<String> = before.difference(&after).cloned().collect();
    assert_eq!(gone, reported, "every deletion is in the report:\n{run}");
    assert!(gone.contains(&b_old) && gone.contains(&orphan), "{gone:?}");
    let mut left = listed(&place, &root);
    left.sort();
    let mut expected = vec![a_second.clone(), b_new.clone()];
    expected.sort();
    assert_eq!(left, expected);

    // Nothing foreign or nested changed.
    let foreign_after: Vec<Option<String>> = foreign.iter().map(|n| place.get(n)).collect();
    assert_eq!(foreign_after, foreign_before);
    let nested_after: BTreeSet<String> = after
        .iter()
        .filter(|n| n.starts_with("etcd/"))
        .cloned()
        .collect();
    assert_eq!(nested_after, nested_before);
    assert_eq!(listed(&place, &nested), [nested_backup]);
    // A cluster folder named as the store lists nothing, and says what to list instead.
    let run = place.run(
        None,
        &["snapshot", "list", &place.url(&format!("etcd-{a_id}"))],
    );
    run.expect_code(0);
    assert!(
        run.stderr.contains("is a cluster folder, not a store"),
        "{run}"
    );
}

#[test]
fn a_shared_local_store_keeps_each_cluster_and_every_foreign_file() {
    shared_store_keeps_each_cluster_and_every_foreign_file(Place::local());
}

#[test]
fn a_shared_s3_bucket_keeps_each_cluster_and_every_foreign_file() {
    shared_store_keeps_each_cluster_and_every_foreign_file(Place::s3());
}

/// `now + offset_seconds`, RFC 3339 UTC (by date(1): the test crate has no chrono).
fn rfc3339_in(offset_seconds: i64) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let out = Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("@{}", now + offset_seconds),
            "+%Y-%m-%dT%H:%M:%SZ",
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A lock as `backup run` writes it, naming `full` as the chain being written, expiring
/// `expires_in` seconds from now.
fn run_lock(cluster_id: &str, full: &str, expires_in: i64) -> String {
    serde_json::json!({
        "format_version": 1,
        "holder": "f00dfeed",
        "host": "backup-host-1",
        "pid": 4242,
        "cluster_id": cluster_id,
        "full_backup": full,
        "renewed_at": rfc3339_in(0),
        "expires_at": rfc3339_in(expires_in),
    })
    .to_string()
}

#[test]
fn a_live_backup_run_lock_keeps_its_chain_from_prune() {
    let place = Place::local();
    let cluster = Cluster::start(1, Security::Plain);
    let root = place.url("");
    let (live, id, _) = save(&place, &cluster, &root, &[]);
    let (manual, _, _) = save(&place, &cluster, &root, &[]);
    let lock = format!("etcd-{id}/backup-run.lock.json");
    place.put(&lock, run_lock(&id, &live, 3600).as_bytes());
    let prune = |place: &Place| {
        let run = place.run(
            None,
            &["snapshot", "prune", &root, "--keep-last", "1", "-w", "json"],
        );
        run.expect_code(0);
        run
    };
    let run = prune(&place);
    let report = run.json();
    assert_eq!(strings(&report["kept_live"]), [live.as_str()], "{run}");
    assert!(report["deleted"].as_array().unwrap().is_empty(), "{run}");
    let kept_by = report["kept"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["object"] == live.as_str())
        .map(|k| k["kept_by"].to_string())
        .unwrap();
    assert!(kept_by.contains("backup-host-1"), "{kept_by}");
    assert_eq!(listed(&place, &root), [manual.clone(), live.clone()]);

    // Once the lock has expired the chain is retention's again.
    place.put(&lock, run_lock(&id, &live, -3600).as_bytes());
    let run = prune(&place);
    assert_eq!(run.json()["deleted"][0]["object"], live.as_str(), "{run}");
    assert_eq!(listed(&place, &root), [manual]);
    assert!(
        place.get(&lock).is_some(),
        "the lock is backup run's, not prune's"
    );
}

#[test]
fn a_killed_saves_temporary_file_is_listed_and_pruned_after_the_grace() {
    let place = Place::local();
    let cluster = Cluster::start(1, Security::Plain);
    let root = place.url("");
    let (_, id, _) = save(&place, &cluster, &root, &[]);
    cluster.put_random("/big/", 40, 1_000_000);
    let folder = std::path::Path::new(&root).join(format!("etcd-{id}"));
    let partials = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&folder)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(".partial-"))
            .collect()
    };
    // A slow save (zstd level 19 over 40 MB of random values), killed once its temporary
    // file is there.
    let mut args = cluster.client_flags();
    args.extend(["snapshot", "save", &root, "-q", "--compression-level", "19"].map(String::from));
    let mut child = Command::new(etcdops_path())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while partials().is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "the save ended first");
        assert!(Instant::now() < deadline, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = partials();
    assert_eq!(killed.len(), 1, "{killed:?}");
    let killed_name = format!(
        "etcd-{id}/{}",
        killed[0].file_name().unwrap().to_string_lossy()
    );
    // A foreign file with a temporary-looking name is never ours.
    place.put("manual/.x.db.partial-1f", b"not ours");
    let list = place.run(
        None,
        &["snapshot", "list", &root, "--orphans", "-w", "json"],
    );
    list.expect_code(0);
    let unfinished: Vec<String> = list.json()["unfinished_uploads"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|u| u["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(unfinished, [killed_name.as_str()], "{list}");
    let simple = place.run(
        None,
        &["snapshot", "list", &root, "--orphans", "-w", "simple"],
    );
    assert!(simple.stdout.contains(&killed_name), "{simple}");

    let prune = |grace: &str| {
        let run = place.run(
            None,
            &[
                "snapshot",
                "prune",
                &root,
                "--keep-last",
                "5",
                "--orphan-grace",
                grace,
                "-w",
                "json",
            ],
        );
        run.expect_code(0);
        run
    };
    // Younger than the grace: kept (a save may still be writing it).
    let run = prune("10m");
    assert!(
        strings(&run.json()["unfinished_deleted"]).is_empty(),
        "{run}"
    );
    assert!(killed[0].exists());
    // Dated 20 minutes back: removed and reported.
    let file = std::fs::File::options()
        .write(true)
        .open(&killed[0])
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(1200))
        .unwrap();
    drop(file);
    let run = prune("10m");
    assert_eq!(
        strings(&run.json()["unfinished_deleted"]),
        [killed_name],
        "{run}"
    );
    assert!(partials().is_empty());
    assert_eq!(place.get("manual/.x.db.partial-1f").unwrap(), "not ours");
}

#[test]
fn a_copy_into_a_folder_of_its_source_never_nests() {
    let place = Place::local();
    let cluster = Cluster::start(1, Security::Plain);
    let source = place.url("p9");
    let destination = place.url("p9/dr");
    let (saved, _, _) = save(&place, &cluster, &source, &[]);
    for run in 0..2 {
        let copy = place.run(None, &["snapshot", "copy", &source, &destination, "-q"]);
        copy.expect_code(0);
        assert_eq!(listed(&place, &source), [saved.as_str()], "run {run}");
        assert_eq!(listed(&place, &destination), [saved.as_str()], "run {run}");
    }
    let nested: Vec<String> = place
        .names()
        .into_iter()
        .filter(|n| n.starts_with("p9/dr/dr/") || n.starts_with("p9/dr/p9"))
        .collect();
    assert!(nested.is_empty(), "the copy nested: {nested:?}");
    let orphans = place.run(
        None,
        &["snapshot", "list", &source, "--orphans", "-w", "json"],
    );
    assert!(orphans.json()["orphans"].as_array().unwrap().is_empty());
}

#[test]
fn the_filesystem_root_and_a_missing_directory_are_not_stores() {
    // Dry runs and lists only: a build without the guard would read the whole file system.
    for url in ["file://", "file:///", "/"] {
        for command in [
            vec!["snapshot", "list", url],
            vec!["snapshot", "prune", url, "--keep-last", "1", "--dry-run"],
        ] {
            let run = etcdops(
                &command.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                &[],
            );
            assert_clear_error(&run, "filesystem root");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexistent").display().to_string();
    for command in [
        vec!["snapshot", "list", missing.as_str()],
        vec!["snapshot", "list", missing.as_str(), "--orphans"],
        vec!["snapshot", "prune", missing.as_str(), "--keep-last", "1"],
    ] {
        let run = etcdops(
            &command.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            &[],
        );
        assert_clear_error(&run, "does not exist");
    }
    assert!(!dir.path().join("nonexistent").exists(), "nothing created");
    let empty = dir.path().display().to_string();
    let run = etcdops(
        &["snapshot", "list", &empty, "-w", "json"].map(String::from),
        &[],
    );
    run.expect_code(0);
    assert!(run.json()["backups"].as_array().unwrap().is_empty());
}

/// Waits (60 s at most) until `run` has published `n` segments.
fn wait_segments(run: &BackupRun, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let published = run
            .events()
            .iter()
            .filter(|e| e["event"] == "segment_published")
            .count();
        if published >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "backup run published {published} of {n} segments:\n{:#?}",
            run.events()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn prune_beside_a_running_backup_run_keeps_the_chain_it_writes() {
    let place = Place::local();
    let cluster = Cluster::start(1, Security::Plain);
    let root = place.url("");
    let backup_run = BackupRun::start_at(&cluster, &root, &[], &[]);
    cluster.put("/live/1", "a");
    wait_segments(&backup_run, 1);
    // A manual save beside the chain, then the tightest rule.
    let (manual, _, _) = save(&place, &cluster, &root, &[]);
    let run = place.run(
        None,
        &["snapshot", "prune", &root, "--keep-last", "1", "-w", "json"],
    );
    run.expect_code(0);
    let report = run.json();
    assert!(report["deleted"].as_array().unwrap().is_empty(), "{run}");
    let live = strings(&report["kept_live"]);
    assert_eq!(live.len(), 1, "{run}");
    assert_ne!(live[0], manual);
    // The run goes on publishing into a chain that is still there.
    cluster.put("/live/2", "b");
    let before = backup_run
        .events()
        .iter()
        .filter(|e| e["event"] == "segment_published")
        .count();
    wait_segments(&backup_run, before + 1);
    let list = place.run(None, &["snapshot", "list", &root, "-w", "json"]);
    list.expect_code(0);
    let catalog = list.json();
    let chain = catalog["backups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["object"] == live[0].as_str())
        .unwrap_or_else(|| panic!("the live chain's full backup is gone:\n{list}"));
    assert_eq!(chain["complete"], true);
    assert!(chain["chain"]["continuous"] == true, "{list}");
    assert!(
        chain["deltas"].as_array().unwrap().len() > before,
        "every segment is in the chain:\n{list}"
    );
}

#[test]
fn backup_run_on_a_parent_store_never_continues_a_nested_stores_chain() {
    let place = Place::local();
    let cluster = Cluster::start(1, Security::Plain);
    let nested = place.url("sub");
    let root = place.url("");
    let run = BackupRun::start_at(&cluster, &nested, &[], &[]);
    cluster.put("/n/1", "a");
    wait_segments(&run, 1);
    run.stop();
    let nested_before = place.run(None, &["snapshot", "list", &nested, "-w", "json"]);
    nested_before.expect_code(0);

    let run = BackupRun::start_at(&cluster, &root, &[], &[]);
    let first = run.wait_for("a full backup or a resumed chain", |e| {
        e["event"] == "full_saved" || e["event"] == "resumed"
    });
    cluster.put("/r/1", "b");
    wait_segments(&run, 1);
    run.stop();
    assert_eq!(first["event"], "full_saved", "{first}");
    let object = first["object"].as_str().unwrap();
    assert!(object.starts_with("etcd-"), "{first}");
    assert_eq!(listed(&place, &root), [object]);
    let nested_after = place.run(None, &["snapshot", "list", &nested, "-w", "json"]);
    assert_eq!(
        nested_after.json()["backups"],
        nested_before.json()["backups"],
        "the nested store's chain changed"
    );
}

#[test]
fn backup_run_retention_prunes_only_its_own_clusters_folder() {
    let place = Place::local();
    let a = Cluster::start(1, Security::Plain);
    let b = Cluster::start(1, Security::Plain);
    let root = place.url("");
    // Two backups of B: a prune of every folder by A's rule would take B's older one.
    let (b_older, _, _) = save(&place, &b, &root, &[]);
    let (b_newer, _, _) = save(&place, &b, &root, &[]);
    let (a_old, _, _) = save(&place, &a, &root, &[]);
    // Full backups every 2 s: once the older ones' chains are finished, the rule prunes.
    let run = BackupRun::start_at(
        &a,
        &root,
        &[
            "--full-every",
            "2s",
            "--keep-last",
            "1",
            // Chains published within the grace are kept as live: none here.
            "--orphan-grace",
            "0s",
        ],
        &[],
    );
    a.put("/keep/1", "a");
    let pruned = run.wait_for("a prune", |e| e["event"] == "pruned");
    let events = run.stop();
    let a_folder = a_old.split('/').next().unwrap().to_string();
    for deleted in strings(&pruned["deleted"]) {
        assert!(
            deleted.starts_with(&format!("{a_folder}/")),
            "backup run of cluster A pruned {deleted}, outside its own folder"
        );
    }
    let after = listed(&place, &root);
    for b_backup in [&b_older, &b_newer] {
        assert!(
            after.contains(b_backup),
            "backup run of cluster A with --keep-last 1 deleted cluster B's {b_backup}:\n{after:#?}\n{events:#?}"
        );
    }
}
