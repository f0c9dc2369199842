//! `--copy-to`, a second site: `backup run` copies every full backup and segment to a second
//! store (S3 on moto, or a local dir) after the first, and a point-in-time restore from the
//! second store alone serves what the cluster served; the second store gone for several
//! segments is a warning (an event, a metric), never a failure or a hole in the first store,
//! and it is caught up without a hole when it returns. `snapshot save --copy-to` copies each
//! backup, warns when it cannot, and catches up on the next save; the second store keeps its
//! own retention.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, S3Server, Security, etcdops};
use serde_json::Value;

use crate::backup_run::{
    BackupRun, S3_ENV, assert_restored, keys_at, restore_point_env, write_changes,
};
use crate::run;

/// Every object of `store` (full backups and segments), sorted, and whether each chain is
/// continuous, from `snapshot list`.
fn stored(store: &str, flags: &[&str], env: &[(&str, &str)]) -> (Vec<String>, Vec<bool>) {
    let args: Vec<String> = ["snapshot", "list", store, "-w", "json"]
        .iter()
        .chain(flags)
        .map(|s| s.to_string())
        .collect();
    let listed = etcdops(&args, env);
    listed.expect_code(0);
    let json = listed.json();
    let mut objects = Vec::new();
    let mut continuous = Vec::new();
    for backup in json["backups"].as_array().unwrap() {
        objects.push(backup["object"].as_str().unwrap().to_string());
        for delta in backup["deltas"].as_array().cloned().unwrap_or_default() {
            objects.push(delta["object"].as_str().unwrap().to_string());
        }
        if let Some(chain) = backup.get("chain").filter(|c| !c.is_null()) {
            continuous.push(chain["continuous"].as_bool().unwrap());
        }
    }
    objects.sort();
    (objects, continuous)
}

/// Every object a run reported publishing (full backups and segments).
fn published(events: &[Value]) -> Vec<String> {
    let mut objects: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "full_saved" || e["event"] == "segment_published")
        .map(|e| e["object"].as_str().unwrap().to_string())
        .collect();
    objects.sort();
    objects
}

/// Every object a run reported copying.
fn copied(events: &[Value]) -> Vec<String> {
    let mut objects: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "copied")
        .flat_map(|e| e["objects"].as_array().cloned().unwrap_or_default())
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    objects.sort();
    objects
}

#[test]
fn backup_run_copy_to_s3_holds_every_publication_and_restores_alone() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let first = cluster.dir().join("first");
    let first_arg = first.display().to_string();
    let s3 = S3Server::start();
    s3.create_bucket("second");
    let second = "s3://second/site";
    let s3_flags = [
        "--s3-endpoint",
        s3.endpoint.as_str(),
        "--allow-http",
        "--s3-path-style",
    ];
    let mut extra = vec!["--copy-to", second];
    extra.extend(s3_flags);
    let backup = BackupRun::start_at(&cluster, &first_arg, &extra, &S3_ENV);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let revisions = write_changes(&cluster, "copy", 4);
    let last = *revisions.last().unwrap();
    backup.wait_published(last);
    let events = backup.stop();
    assert!(
        !events
            .iter()
            .any(|e| ["gap", "failed", "copy_failed"].contains(&e["event"].as_str().unwrap())),
        "{events:#?}"
    );
    let publications = published(&events);
    assert!(
        publications.len() >= 3,
        "a full backup and segments: {publications:?}"
    );
    assert_eq!(
        copied(&events),
        publications,
        "every publication is copied once"
    );
    let (in_first, first_chains) = stored(&first_arg, &[], &[]);
    let (in_second, second_chains) = stored(second, &s3_flags, &S3_ENV);
    assert_eq!(in_first, publications);
    assert_eq!(
        in_second, in_first,
        "the second store holds what the first holds"
    );
    assert!(first_chains.iter().chain(&second_chains).all(|c| *c));

    // The second store alone restores any point.
    for target in [revisions[1], last] {
        let rev = target.to_string();
        let mut point = vec!["--to-revision", rev.as_str()];
        point.extend(s3_flags);
        let (restored, result) = restore_point_env(second, &point, &S3_ENV);
        assert_restored(&restored, &keys_at(&cluster, Some(target)), target, &result);
    }
}

/// Makes the local store at `path` unreachable (a regular file where its dir was: refused
/// even to root) and back.
struct Outage {
    path: PathBuf,
    away: PathBuf,
}

impl Outage {
    fn begin(path: &Path) -> Outage {
        let away = path.with_extension("away");
        std::fs::rename(path, &away).unwrap();
        std::fs::write(path, b"the second site is down").unwrap();
        Outage {
            path: path.to_path_buf(),
            away,
        }
    }

    fn end(self) {
        std::fs::remove_file(&self.path).unwrap();
        std::fs::rename(&self.away, &self.path).unwrap();
    }
}

fn metric(path: &Path, series: &str) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{series} ")))
        .unwrap_or_else(|| panic!("{series} is missing:\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn a_lost_second_store_is_a_warning_and_is_caught_up_without_a_hole() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/seed/", 10);
    let first = cluster.dir().join("first");
    let second = cluster.dir().join("second");
    let (first_arg, second_arg) = (first.display().to_string(), second.display().to_string());
    let metrics = cluster.dir().join("copy.prom");
    let metrics_arg = metrics.display().to_string();
    let backup = BackupRun::start(
        &cluster,
        &first,
        &["--copy-to", &second_arg, "--metrics-file", &metrics_arg],
    );
    backup.wait_for("a first copy", |e| e["event"] == "copied");

    let outage = Outage::begin(&second);
    let during = write_changes(&cluster, "down", 3);
    backup.wait_published(*during.last().unwrap());
    let warning = backup.wait_for("a copy warning", |e| e["event"] == "copy_failed");
    assert!(
        warning["error"]
            .as_str()
            .unwrap()
            .contains("the first store is not affected"),
        "{warning}"
    );
    // Several segments later, the first store's chain has no gap and the run no failure.
    let (in_first, chains) = stored(&first_arg, &[], &[]);
    assert_eq!(chains, [true], "{in_first:?}");
    let events = backup.events();
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "gap" || e["event"] == "failed"),
        "{events:#?}"
    );
    assert!(metric(&metrics, "etcdops_backup_run_copy_failures_total") >= 1.0);
    assert_eq!(
        metric(&metrics, "etcdops_backup_run_copy_pending_chains"),
        1.0
    );
    assert_eq!(
        metric(
            &metrics,
            "etcdops_backup_run_failures_total{reason=\"segment\"}"
        ),
        0.0
    );

    // Back: what it lacks is copied, in order, and new segments follow.
    outage.end();
    let after = write_changes(&cluster, "back", 1);
    let last = *after.last().unwrap();
    backup.wait_published(last);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let events = backup.events();
        if published(&events)
            .iter()
            .all(|o| copied(&events).contains(o))
        {
            break;
        }
        assert!(Instant::now() < deadline, "never caught up:\n{events:#?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let events = backup.stop();
    // Stopped with everything copied.
    assert_eq!(
        metric(&metrics, "etcdops_backup_run_copy_pending_chains"),
        0.0
    );
    assert!(
        metric(
            &metrics,
            "etcdops_backup_run_copy_last_caught_up_timestamp_seconds"
        ) > 0.0
    );
    assert_eq!(copied(&events), published(&events));
    let (in_first, _) = stored(&first_arg, &[], &[]);
    let (in_second, second_chains) = stored(&second_arg, &[], &[]);
    assert_eq!(in_second, in_first);
    assert_eq!(second_chains, [true], "no hole in the second store");

    // A revision written while the second store was down, restored from it alone.
    let target = during[1];
    let rev = target.to_string();
    let (restored, result) = restore_point_env(&second_arg, &["--to-revision", &rev], &[]);
    assert_restored(&restored, &keys_at(&cluster, Some(target)), target, &result);
}

#[test]
fn snapshot_save_copy_to_warns_when_the_second_store_is_down_and_catches_up_next_time() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/save/", 10);
    let first = cluster.dir().join("first");
    let second = cluster.dir().join("second");
    let (first_arg, second_arg) = (first.display().to_string(), second.display().to_string());
    let save = || {
        run(
            &cluster,
            &[
                "snapshot",
                "save",
                &first_arg,
                "--copy-to",
                &second_arg,
                "--copy-keep-last",
                "2",
                "-q",
                "-w",
                "json",
            ],
        )
    };
    let saved = save();
    saved.expect_code(0);
    let object = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(saved.json()["copied"]["copied"], 1, "{saved}");
    assert_eq!(
        stored(&second_arg, &[], &[]).0,
        std::slice::from_ref(&object)
    );

    // Down: the save succeeds, says why the copy failed, and the first store has it.
    let outage = Outage::begin(&second);
    let missed = save();
    missed.expect_code(0);
    assert!(missed.json().get("copied").is_none(), "{missed}");
    assert!(
        missed.stderr.contains("copying it to")
            && missed.stderr.contains("the next save copies it"),
        "{missed}"
    );
    let missed_object = missed.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(stored(&first_arg, &[], &[]).0.len(), 2);
    outage.end();

    // Back: the next save copies the one missed too, then the second store keeps its own 2.
    cluster.put_keys("/save/more/", 3);
    let caught_up = save();
    caught_up.expect_code(0);
    let newest = caught_up.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(caught_up.json()["copied"]["copied"], 2, "{caught_up}");
    let pruned: Vec<String> = caught_up.json()["copy_pruned"]["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["object"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(pruned, [object], "{caught_up}");
    let mut expected = vec![missed_object, newest];
    expected.sort();
    assert_eq!(stored(&second_arg, &[], &[]).0, expected);
    assert_eq!(
        stored(&first_arg, &[], &[]).0.len(),
        3,
        "the first store keeps its own"
    );

    // The second store is never the first, however it is named (its retention would delete
    // the first's backups): the same path, through `..`, through a symlink.
    let first_path = std::path::PathBuf::from(&first_arg);
    let name = first_path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let dotted = first_path
        .parent()
        .unwrap()
        .join("elsewhere/..")
        .join(&name);
    let link = cluster.dir().join("first-link");
    std::os::unix::fs::symlink(&first_path, &link).unwrap();
    for alias in [
        first_arg.clone(),
        dotted.display().to_string(),
        link.display().to_string(),
    ] {
        let same = run(
            &cluster,
            &[
                "snapshot",
                "save",
                &first_arg,
                "--copy-to",
                &alias,
                "--copy-keep-last",
                "1",
            ],
        );
        same.expect_code(2);
        assert!(
            same.stderr.contains("name a second store"),
            "{alias}: {same}"
        );
    }
    assert_eq!(
        stored(&first_arg, &[], &[]).0.len(),
        3,
        "the first store keeps its own"
    );
}

#[test]
fn a_hanging_second_store_never_delays_the_first() {
    let cluster = Cluster::start(1, Security::Plain);
    let first = cluster.dir().join("first");
    let first_arg = first.display().to_string();
    // Connections are taken (by the kernel's backlog) and never answered.
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", hanging.local_addr().unwrap());
    let extra = [
        "--copy-to",
        "s3://hangs/site",
        "--s3-endpoint",
        endpoint.as_str(),
        "--allow-http",
        "--s3-path-style",
    ];
    let backup = BackupRun::start_at(&cluster, &first_arg, &extra, &S3_ENV);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    // Segments go on being published (each within the wait's bound) while every copy hangs.
    for round in 0..3 {
        let revisions = write_changes(&cluster, &format!("hang{round}"), 1);
        let started = Instant::now();
        backup.wait_published(*revisions.last().unwrap());
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "round {round}: a publication waited {:?}",
            started.elapsed()
        );
    }
    let events = backup.events();
    assert!(copied(&events).is_empty(), "{events:#?}");
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "failed" || e["event"] == "gap"),
        "{events:#?}"
    );
    // A stop waits a bounded time for the copies, then says what was left.
    let stopping = Instant::now();
    let events = backup.stop();
    assert!(
        stopping.elapsed() < Duration::from_secs(50),
        "{:?}",
        stopping.elapsed()
    );
    let left = events
        .iter()
        .filter(|e| e["event"] == "copy_failed")
        .filter_map(|e| e["error"].as_str())
        .find(|e| e.contains("stopped before the second store held everything"));
    assert!(left.is_some(), "{events:#?}");
    let (in_first, chains) = stored(&first_arg, &[], &[]);
    assert_eq!(in_first, published(&events));
    assert_eq!(chains, [true]);
    drop(hanging);
}

#[test]
fn the_backup_role_copies_each_backup_to_a_second_store_with_its_own_retention() {
    use etcdops_tests::{Collection, StandaloneHost, StandaloneHosts};
    use serde_json::json;
    if etcdops_tests::skip_on_etcd_3_4("the role's options; the copy itself runs on both releases")
    {
        return;
    }
    let hosts = StandaloneHosts::plan(1);
    hosts.start_by_hand("copy-role");
    let endpoints: Vec<String> = hosts.hosts.iter().map(|h| h.client_url()).collect();
    let collection = Collection::install();
    let (first, second) = (hosts.dir().join("first"), hosts.dir().join("second"));
    let all: Vec<&StandaloneHost> = hosts.hosts.iter().collect();
    let inventory = format!("[etcd]\n{}", hosts.inventory(&all, ""));
    let vars = json!({
        "backup_dest": first, "backup_copy_to": second, "backup_copy_keep_last": 1,
    });
    let play = json!([{
        "hosts": "etcd",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": endpoints}},
        "roles": [{"role": "etcd.core.backup", "vars": vars}],
    }])
    .to_string();
    for _ in 0..2 {
        let taken = collection.playbook(&play, &inventory, &json!({}), &[], &[]);
        assert_eq!(taken.code, 0, "{taken}");
    }
    let (in_first, _) = stored(&first.display().to_string(), &[], &[]);
    let (in_second, _) = stored(&second.display().to_string(), &[], &[]);
    assert_eq!(in_first.len(), 2, "the first store keeps 7");
    assert_eq!(in_second, in_first[1..], "the second keeps its newest one");
}
