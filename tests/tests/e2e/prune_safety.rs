//! Prune's guards against real etcd backups in a local store: a save never prunes the backup
//! it wrote (a backup dated in the future beside it), retention rules of zero, a cluster the
//! store does not hold, and `--verify-newest` against a newest backup with rotten bytes.

use std::path::Path;

use etcdops_tests::{Cluster, Run, Security, etcdops};

use crate::pitr_clock::{format_utc_ms, parse_utc_ms};
use crate::{assert_clear_error, run};

/// `snapshot save STORE -w json -q` with `extra`; the saved object's name and cluster ID.
fn save(cluster: &Cluster, store: &Path, extra: &[&str]) -> (String, String, Run) {
    let store = store.display().to_string();
    let mut rest = vec!["snapshot", "save", &store, "-w", "json", "-q"];
    rest.extend_from_slice(extra);
    let saved = run(cluster, &rest);
    saved.expect_code(0);
    let json = saved.json();
    let object = json["manifest"]["object"].as_str().unwrap().to_string();
    let id = json["manifest"]["cluster_id"].as_str().unwrap().to_string();
    (object, id, saved)
}

/// `snapshot prune STORE` with `extra` (no cluster needed).
fn prune(store: &Path, extra: &[&str]) -> Run {
    let store = store.display().to_string();
    let mut args = vec!["snapshot", "prune", &store];
    args.extend_from_slice(extra);
    etcdops(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &[])
}

/// The backups `snapshot list` shows, newest first, with whether each is complete.
fn listed(store: &Path) -> Vec<(String, bool)> {
    let store = store.display().to_string();
    let list = etcdops(
        &["snapshot", "list", &store, "-w", "json"].map(String::from),
        &[],
    );
    list.expect_code(0);
    list.json()["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["object"].as_str().unwrap().to_string(),
                b["complete"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn objects(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["object"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_save_never_prunes_the_backup_it_wrote_beside_one_dated_in_the_future() {
    let cluster = Cluster::start(1, Security::Plain);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let (skewed, _, _) = save(&cluster, store, &[]);
    // Saved by a host whose clock was months ahead.
    let manifest = store.join(format!("{skewed}.manifest.json"));
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    json["created_at"] = "2027-06-01T00:00:00Z".into();
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
    cluster.put("/k", "v");

    let (saved, _, run) = save(&cluster, store, &["--keep-last", "1"]);
    let pruned = &run.json()["pruned"];
    assert!(objects(&pruned["deleted"]).is_empty(), "{run}");
    assert_eq!(pruned["future_dated"][0], skewed.as_str(), "{run}");
    assert!(
        run.stderr.contains("warning:") && run.stderr.contains("in the future"),
        "{run}"
    );
    let left = listed(store);
    assert!(left.contains(&(saved.clone(), true)), "{left:?}\n{run}");
    assert!(left.contains(&(skewed.clone(), true)), "{left:?}");

    // The next save pushes the previous one out by the rules, never the one it wrote; the
    // future-dated backup stays until someone deletes it.
    let (newest, _, run) = save(&cluster, store, &["--keep-last", "1"]);
    assert_eq!(objects(&run.json()["pruned"]["deleted"]), [saved], "{run}");
    let left: Vec<String> = listed(store).into_iter().map(|(o, _)| o).collect();
    assert_eq!(left, [skewed, newest]);
}

#[test]
fn retention_rules_of_zero_are_refused_before_anything_is_saved_or_deleted() {
    let cluster = Cluster::start(1, Security::Plain);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    save(&cluster, store, &[]);
    save(&cluster, store, &[]);
    let before = listed(store);
    let zero = [
        ("--keep-last", "0", "--keep-last must be at least 1"),
        ("--keep-hourly", "0", "--keep-hourly must be at least 1"),
        ("--keep-daily", "0", "--keep-daily must be at least 1"),
        ("--keep-weekly", "0", "--keep-weekly must be at least 1"),
        ("--keep-monthly", "0", "--keep-monthly must be at least 1"),
        ("--max-age", "0s", "--max-age must be more than 0s"),
    ];
    for (flag, value, message) in zero {
        assert_clear_error(&prune(store, &[flag, value]), message);
        // Beside a sound rule too.
        let sound = if flag == "--max-age" {
            ["--keep-last", "5"]
        } else {
            ["--max-age", "7d"]
        };
        assert_clear_error(&prune(store, &[sound[0], sound[1], flag, value]), message);
        let store_arg = store.display().to_string();
        let refused = run(
            &cluster,
            &["snapshot", "save", &store_arg, "-q", flag, value],
        );
        assert_clear_error(&refused, message);
    }
    assert_eq!(listed(store), before, "nothing saved or deleted");
}

#[test]
fn pruning_a_cluster_the_store_does_not_hold_is_an_error() {
    let cluster = Cluster::start(1, Security::Plain);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let (_, id, _) = save(&cluster, store, &[]);
    let other = if id == "123" { "124" } else { "123" };
    let refused = prune(store, &["--cluster", other, "--keep-last", "1"]);
    assert_clear_error(
        &refused,
        &format!("no backups of cluster {other} in {}", store.display()),
    );
    assert!(
        refused
            .stderr
            .contains("`snapshot list` shows the clusters it holds")
    );
    let ok = prune(store, &["--cluster", &id, "--keep-last", "1"]);
    ok.expect_code(0);
}

#[test]
fn verify_newest_keeps_every_backup_of_a_cluster_whose_newest_is_rotten() {
    let cluster = Cluster::start(1, Security::Plain);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let (first, _, _) = save(&cluster, store, &[]);
    cluster.put("/k", "v");
    let (second, _, _) = save(&cluster, store, &[]);
    // Bit rot: random bytes of the same size over the newest backup.
    let path = store.join(&second);
    let mut rotten = vec![0u8; std::fs::metadata(&path).unwrap().len() as usize];
    getrandom::fill(&mut rotten).unwrap();
    let good = std::fs::read(&path).unwrap();
    std::fs::write(&path, &rotten).unwrap();

    // By default "complete" is the size only: the rotten one counts as the newest kept.
    let dry = prune(store, &["--keep-last", "1", "--dry-run", "-w", "json"]);
    dry.expect_code(0);
    assert_eq!(objects(&dry.json()["deleted"]), [first.as_str()], "{dry}");
    assert!(listed(store).contains(&(second.clone(), true)));

    let checked = prune(
        store,
        &["--keep-last", "1", "--verify-newest", "-w", "json"],
    );
    assert_eq!(checked.code, 1, "{checked}");
    let report = checked.json();
    assert!(objects(&report["deleted"]).is_empty(), "{checked}");
    assert_eq!(report["verify_failed"][0], second.as_str(), "{checked}");
    let warnings: Vec<&str> = checked
        .stderr
        .lines()
        .filter(|l| l.contains("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{checked}");
    assert!(warnings[0].contains("failed verification"), "{checked}");
    assert_eq!(listed(store).len(), 2, "nothing deleted");

    // Sound again: the same prune deletes by the rules.
    std::fs::write(&path, &good).unwrap();
    let checked = prune(
        store,
        &["--keep-last", "1", "--verify-newest", "-w", "json"],
    );
    checked.expect_code(0);
    assert_eq!(objects(&checked.json()["deleted"]), [first], "{checked}");
    assert_eq!(listed(store), [(second, true)]);
}

/// A clock stepped back between two saves: A (revision r) is dated a moment after B (a later
/// revision, saved after the step); both dates are in the past when prune runs. Keeping the
/// last one by date keeps A and deletes B, the backup holding the cluster's newest data
/// (with `backup run`, B's chain reaches past A's: the store's recovery point moves back).
/// Prune keeps the backup with the highest revision of the cluster's history.
#[test]
fn prune_keeps_the_newest_data_when_a_clock_step_dated_an_older_backup_later() {
    let cluster = Cluster::start(1, Security::Plain);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let (older, _, _) = save(&cluster, store, &[]);
    cluster.put("/k", "v");
    let (newer, _, saved) = save(&cluster, store, &[]);
    // The older backup was dated by a clock running ahead: a millisecond after the newer.
    let created = saved.json()["manifest"]["created_at"]
        .as_str()
        .unwrap()
        .to_string();
    let later = format_utc_ms(parse_utc_ms(&created) + 1);
    let manifest = store.join(format!("{older}.manifest.json"));
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    json["created_at"] = later.into();
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();

    let run = prune(store, &["--keep-last", "1", "-w", "json"]);
    run.expect_code(0);
    let left: Vec<String> = listed(store).into_iter().map(|(o, _)| o).collect();
    assert!(
        left.contains(&newer),
        "the backup with the newest data was deleted: {left:?}\n{run}"
    );
}
