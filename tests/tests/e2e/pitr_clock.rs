//! Point-in-time restore when the clock of `backup run`'s host is stepped back while it
//! writes a chain (an NTP step, a VM resumed): libfaketime fakes only the wall clock of
//! `backup run` (its monotonic clock, which drives its timers, stays true) and steps it back
//! during the run, while a writer puts a new key every ~10 ms. A restore by a time that clock
//! showed twice restores its first showing: a contiguous prefix of the chain, never a change
//! begun after the time, and a real etcd on the restored dir serves exactly what the cluster
//! served at the revision chosen. The restore (CLI and module) and `snapshot verify` say that
//! the clock stepped. The same chain with its last segment's manifest forged to reach
//! revision i64::MAX fails verify, and a restore past its proven end is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use etcdops_tests::{Cluster, Security, block_on, etcdops};
use serde_json::{Value, json};

use crate::backup_run::{BackupRun, assert_restored, keys_at, revision_of};
use crate::snapshot_restore::restore_from;

/// How far the faked clock of `backup run` is stepped back, in seconds.
const STEP_BACK: i64 = 6;

/// libfaketime's preload library (Debian's `libfaketime`, installed by
/// `scripts/install-deps test`).
fn libfaketime() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|dir| dir.path().join("faketime/libfaketime.so.1"))
        .chain([PathBuf::from("/usr/lib/faketime/libfaketime.so.1")])
        .find(|path| path.exists());
    found.expect(
        "libfaketime is missing: run scripts/install-deps test (Debian package libfaketime)",
    )
}

/// `backup run` into the store `name` under the cluster's dir, with `args`, its wall clock
/// faked by libfaketime from a file (the returned path; "+0" to start, written to step it)
/// while its monotonic clock stays true.
fn stepped_backup_run(
    cluster: &Cluster,
    name: &str,
    args: &[&str],
) -> (BackupRun, PathBuf, PathBuf) {
    let store = cluster.dir().join(name);
    let rc = cluster.dir().join(format!("{name}.faketime"));
    std::fs::write(&rc, "+0\n").unwrap();
    let preload = libfaketime().display().to_string();
    let rc_path = rc.display().to_string();
    let backup = BackupRun::start_at(
        cluster,
        &store.display().to_string(),
        args,
        &[
            ("LD_PRELOAD", preload.as_str()),
            ("FAKETIME_TIMESTAMP_FILE", rc_path.as_str()),
            ("FAKETIME_NO_CACHE", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    (backup, store, rc)
}

fn unix_ms(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH:MM:SS[.fff...]Z` (as the manifests hold times) in ms since the epoch.
pub(crate) fn parse_utc_ms(text: &str) -> i64 {
    let n = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
    let days = days_from_civil(n(0..4), n(5..7), n(8..10));
    let seconds = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    let fraction = text[19..].trim_start_matches('.').trim_end_matches('Z');
    let ms = format!("{fraction:0<3}")[..3].parse::<i64>().unwrap_or(0);
    seconds * 1000 + ms
}

/// ms since the epoch as RFC 3339 with milliseconds, UTC.
pub(crate) fn format_utc_ms(ms: i64) -> String {
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // civil_from_days
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let s = rest / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        rest % 1000
    )
}

#[test]
fn utc_times_parse_and_format_both_ways() {
    assert_eq!(parse_utc_ms("1970-01-01T00:00:00Z"), 0);
    let ms = parse_utc_ms("2026-11-30T01:02:03.456789Z");
    assert_eq!(format_utc_ms(ms), "2026-11-30T01:02:03.456Z");
    assert_eq!(
        parse_utc_ms(&format_utc_ms(1_796_000_400_007)),
        1_796_000_400_007
    );
}

/// The segment manifests of every chain in `store`, as JSON.
fn segment_manifests(store: &Path) -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for cluster in std::fs::read_dir(store).into_iter().flatten().flatten() {
        for chain in std::fs::read_dir(cluster.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            for file in std::fs::read_dir(chain.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let path = file.path();
                if path.to_string_lossy().ends_with(".delta.zst.manifest.json")
                    && let Ok(bytes) = std::fs::read(&path)
                    && let Ok(manifest) = serde_json::from_slice::<Value>(&bytes)
                {
                    out.push((path, manifest));
                }
            }
        }
    }
    out
}

/// The latest `to_time` of the published segments (the faked clock's reading), ms.
fn latest_stamp(store: &Path) -> Option<i64> {
    segment_manifests(store)
        .iter()
        .filter_map(|(_, m)| m["to_time"].as_str().map(parse_utc_ms))
        .max()
}

/// Polls until the published segments' latest stamp is at least `at` (ms).
fn wait_stamped(store: &Path, at: i64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while latest_stamp(store).is_none_or(|s| s < at) {
        assert!(Instant::now() < deadline, "backup run never stamped {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One put of the writer: when it was sent and answered (true wall clock), its revision.
struct Put {
    sent: i64,
    answered: i64,
    revision: i64,
}

/// Puts a new key under /clock/ about every 10 ms until `stop` is set.
fn start_writer(url: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Put>> {
    std::thread::spawn(move || {
        block_on(async move {
            let mut client = etcd_client::Client::connect([url], None).await.unwrap();
            let mut puts = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let sent = unix_ms(SystemTime::now());
                let response = client
                    .put(format!("/clock/k{:06}", puts.len()), "v", None)
                    .await
                    .unwrap();
                puts.push(Put {
                    sent,
                    answered: unix_ms(SystemTime::now()),
                    revision: response.header().unwrap().revision(),
                });
                // The write rate (~100/s), not a synchronization.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            puts
        })
    })
}

/// The `etcd_snapshot_restore` module's result for a check-mode restore of `store` to `at`.
fn module_check_restore(store: &Path, at: &str) -> Value {
    let planned = Cluster::plan_restore(1, "mod");
    let member = &planned.members[0];
    let args = json!({
        "_etcd_module": "etcd_snapshot_restore",
        "_ansible_check_mode": true,
        "snapshot": store.display().to_string(),
        "to_time": at,
        "data_dir": member.data_dir,
        "name": member.name,
        "initial_cluster": planned.initial_cluster(),
        "initial_cluster_token": planned.token(),
        "initial_advertise_peer_urls": [member.peer_url],
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("args");
    std::fs::write(&path, args.to_string()).unwrap();
    let out = std::process::Command::new(etcdops_tests::shim_path())
        .arg(&path)
        .output()
        .unwrap();
    assert!(!member.data_dir.exists(), "check mode writes nothing");
    serde_json::from_slice(&out.stdout).expect("the module prints JSON")
}

#[test]
fn a_time_shown_twice_by_a_clock_stepped_back_restores_its_first_showing() {
    let cluster = Cluster::start(1, Security::Plain);
    let (backup, store, rc) = stepped_backup_run(&cluster, "clock-store", &[]);
    backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = start_writer(cluster.members[0].client_url.clone(), stop.clone());
    // A few seconds of writes stamped by the true clock; T is a moment among them.
    let started = revision_of(&cluster);
    backup.wait_published(started + 150);
    let t = unix_ms(SystemTime::now());
    wait_stamped(&store, t + 1500, "1.5 s past T");
    // The step: backup run's clock now shows STEP_BACK seconds earlier, so it shows T again.
    let high = latest_stamp(&store).unwrap();
    std::fs::write(&rc, format!("-{STEP_BACK}\n")).unwrap();
    // Until its clock has run past where it was before the step.
    wait_stamped(&store, high + 1500, "past its stamps before the step");
    stop.store(true, Ordering::SeqCst);
    let puts = writer.join().unwrap();
    let last = puts.last().unwrap().revision;
    backup.wait_published(last);
    let events = backup.stop();
    assert!(!events.iter().any(|e| e["event"] == "gap"), "{events:#?}");
    let at = format_utc_ms(t);

    // The restore: the first showing of T, said to be one of two.
    let mut restored = Cluster::plan_restore(1, "clk");
    let done = restore_from(
        &store.display().to_string(),
        &restored,
        0,
        &["--to-time", &at],
        &[],
    );
    done.expect_code(0);
    let result = done.json();
    let target = result["revision"].as_i64().unwrap();
    assert_eq!(
        result["point_in_time"]["target_revision"], target,
        "{result}"
    );
    // Nothing begun after T, and not a state long before it (the marks are per response).
    let first_after = puts.iter().find(|p| p.sent > t).unwrap().revision;
    let done_before = puts
        .iter()
        .filter(|p| p.answered <= t - 1000)
        .map(|p| p.revision)
        .max()
        .unwrap();
    assert!(
        target < first_after,
        "revision {target} was written after T (the first put sent after T got {first_after}): {result}"
    );
    assert!(
        target >= done_before,
        "revision {target} is older than what was answered a second before T ({done_before})"
    );
    assert!(
        !result["point_in_time"]["clock_steps"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{result}"
    );
    let again = &result["point_in_time"]["time_seen_again"];
    assert!(
        again["first_revision"].as_i64().unwrap() > target,
        "{result}"
    );
    assert!(
        done.stderr.contains("time stamps go back")
            && done
                .stderr
                .contains(&format!("mapped to revision {target}"))
            && done.stderr.contains("(--to-revision)"),
        "{done}"
    );
    // A real etcd on the restored dir serves what the cluster served at that revision.
    restored.start_restored();
    let expected = keys_at(&cluster, Some(target));
    assert!(
        expected.len() > 100,
        "the writer's keys are part of the check"
    );
    assert_restored(&restored, &expected, target, &result);

    // The module decides alike, and says so.
    let module = module_check_restore(&store, &at);
    assert_eq!(module["revision"], target, "{module}");
    let warnings = module["warnings"].to_string();
    assert!(
        warnings.contains("time stamps go back") && warnings.contains("(to_revision)"),
        "{module}"
    );

    // verify: the chain is whole, its steps said.
    let listed = crate::snapshot_compact::listed(&store);
    let object = listed["backups"][0]["object"].as_str().unwrap().to_string();
    let backup_url = format!("{}/{object}", store.display());
    let verified = etcdops(
        &["snapshot".into(), "verify".into(), backup_url.clone()],
        &[],
    );
    verified.expect_code(0);
    assert!(
        verified.stderr.contains("time stamps are not monotonic")
            && verified.stderr.contains("the backup clock went back"),
        "{verified}"
    );

    // The last segment's manifest forged to reach the largest revision: verify fails, and
    // a restore past what the segments prove is refused, nothing written.
    let (path, mut last_segment) = segment_manifests(&store)
        .into_iter()
        .max_by_key(|(_, m)| m["sequence"].as_u64().unwrap())
        .unwrap();
    let proven = last_segment["to_revision"].as_i64().unwrap();
    last_segment["to_revision"] = json!(i64::MAX);
    std::fs::write(&path, serde_json::to_vec_pretty(&last_segment).unwrap()).unwrap();
    let verified = etcdops(&["snapshot".into(), "verify".into(), backup_url], &[]);
    assert_eq!(verified.code, 1, "{verified}");
    assert!(
        verified.stderr.contains(&format!(
            "its manifest says it reaches revision {}, but its records end at revision {proven}",
            i64::MAX
        )),
        "{verified}"
    );
    let planned = Cluster::plan_restore(1, "far");
    let refused = restore_from(
        &store.display().to_string(),
        &planned,
        0,
        &["--to-revision", "9000000000000000000"],
        &[],
    );
    assert_ne!(refused.code, 0, "{refused}");
    assert!(
        refused
            .stderr
            .contains(&format!("its records end at revision {proven}")),
        "{refused}"
    );
    assert!(!planned.members[0].data_dir.exists(), "nothing written");
}

/// The clock of `backup run` steps back by more than `--full-every` just after a full
/// backup A: the next full backup B (a later revision) is dated before A. Nothing was
/// restored, only the clock went back, so A's chain and B are one history: a revision both
/// reach (B's own) restores, instead of being refused as "reached twice" by a cluster that
/// "went back to an earlier revision (a restore that kept its ID)".
#[test]
fn a_full_backup_dated_before_the_last_by_a_clock_step_back_is_not_a_rewind() {
    let cluster = Cluster::start(1, Security::Plain);
    let (backup, store, rc) =
        stepped_backup_run(&cluster, "clock-rewind-store", &["--full-every", "3s"]);
    let first = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let first_object = first["object"].as_str().unwrap().to_string();
    cluster.put_keys("/rewind/before/", 20);
    backup.wait_published(revision_of(&cluster));
    // Back by more than --full-every: the next full backup is dated before the first.
    std::fs::write(&rc, "-10\n").unwrap();
    cluster.put_keys("/rewind/after/", 20);
    let second = backup.wait_for("a full backup after the step", |e| {
        e["event"] == "full_saved" && e["object"].as_str() != Some(first_object.as_str())
    });
    cluster.put_keys("/rewind/later/", 20);
    backup.wait_published(revision_of(&cluster));
    backup.stop();
    let listed = crate::snapshot_compact::listed(&store);
    let backups = listed["backups"].as_array().unwrap().clone();
    let dated = |object: &str| {
        backups
            .iter()
            .find(|b| {
                b["object"]
                    .as_str()
                    .unwrap()
                    .ends_with(object.rsplit('/').next().unwrap())
            })
            .map(|b| b["manifest"]["created_at"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{object} not listed: {backups:#?}"))
    };
    let second_object = second["object"].as_str().unwrap();
    assert!(
        dated(second_object) < dated(&first_object),
        "the step did not date the second full backup before the first"
    );
    let target = second["revision"].as_i64().unwrap();
    let mut restored = Cluster::plan_restore(1, "rwd");
    let done = restore_from(
        &store.display().to_string(),
        &restored,
        0,
        &["--to-revision", &target.to_string()],
        &[],
    );
    done.expect_code(0);
    let result = done.json();
    assert_eq!(result["revision"], target, "{result}");
    restored.start_restored();
    let expected = keys_at(&cluster, Some(target));
    assert_restored(&restored, &expected, target, &result);
}

/// The clock of `backup run` steps back (by more than `--full-every`) while a writer puts a
/// key every ~10 ms; the chain A that ran across the step is compacted (`snapshot compact`)
/// and its original deleted, as retention does once a compacted copy exists. A time T that
/// A's clock showed before the step is shown again by the next chain B. A restore by T must
/// not restore its second showing (changes committed long after T) silently: the copy has to
/// keep the evidence that the clock had gone past T (or the restore refuses).
#[test]
fn a_time_shown_twice_is_not_restored_from_its_second_showing_once_the_first_is_compacted() {
    let cluster = Cluster::start(1, Security::Plain);
    let (backup, store, rc) =
        stepped_backup_run(&cluster, "clock-compact-store", &["--full-every", "8s"]);
    let first = backup.wait_for("a full backup", |e| e["event"] == "full_saved");
    let first_object = first["object"].as_str().unwrap().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = start_writer(cluster.members[0].client_url.clone(), stop.clone());
    let started = revision_of(&cluster);
    backup.wait_published(started + 50);
    let t = unix_ms(SystemTime::now());
    wait_stamped(&store, t + 1500, "1.5 s past T");
    let high = latest_stamp(&store).unwrap();
    // Back 14 s: the next full backup (8 s after the first) is dated before T.
    std::fs::write(&rc, "-14\n").unwrap();
    let second = backup.wait_for("a full backup after the step", |e| {
        e["event"] == "full_saved" && e["object"].as_str() != Some(first_object.as_str())
    });
    assert!(second["object"].as_str().is_some());
    // Until the clock has shown T again and gone past where it was before the step.
    wait_stamped(&store, high + 1500, "past its stamps before the step");
    stop.store(true, Ordering::SeqCst);
    let puts = writer.join().unwrap();
    backup.wait_published(puts.last().unwrap().revision);
    backup.stop();

    // A's chain compacted, its original deleted.
    let compacted = etcdops(
        &[
            "snapshot",
            "compact",
            &store.display().to_string(),
            "--chain",
            &first_object,
        ]
        .map(String::from),
        &[],
    );
    compacted.expect_code(0);
    let full = store.join(&first_object);
    std::fs::remove_file(&full).unwrap();
    std::fs::remove_file(format!("{}.manifest.json", full.display())).unwrap();
    let stem = full.display().to_string();
    let deltas = format!("{}.deltas", stem.trim_end_matches(".db.zst"));
    std::fs::remove_dir_all(&deltas).unwrap();

    let at = format_utc_ms(t);
    let planned = Cluster::plan_restore(1, "cpt");
    let done = restore_from(
        &store.display().to_string(),
        &planned,
        0,
        &["--to-time", &at],
        &[],
    );
    if done.code == 0 {
        let target = done.json()["revision"].as_i64().unwrap();
        let first_after = puts.iter().find(|p| p.sent > t).unwrap().revision;
        assert!(
            target < first_after,
            "revision {target} was written after T (the first put sent after T got {first_after}): {done}"
        );
    }
}
