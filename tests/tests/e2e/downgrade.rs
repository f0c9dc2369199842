//! `etcdops downgrade validate|enable|cancel` (etcdctl 3.6's commands) against real etcd:
//! 3.5's server has the Downgrade RPC (it applies enable and cancel without answering them,
//! which etcdops confirms with validate), 3.4's does not (a clear error naming its version).
//! `enable` is guarded: refused without a verified backup of this cluster newer than
//! --max-backup-age in --store, refused with a stale or corrupt one, let through with a
//! fresh verified one or --force.

use std::path::Path;

use etcdops_tests::{Cluster, EtcdVersion, Run, Security};

use crate::{assert_clear_error, run};

/// A version one minor below the cluster's: the target etcd accepts.
fn target(cluster: &Cluster) -> &'static str {
    match cluster.version {
        EtcdVersion::V3_5 => "3.4",
        EtcdVersion::V3_4 => "3.3",
    }
}

fn downgrade(cluster: &Cluster, rest: &[&str]) -> Run {
    let mut args = vec!["downgrade"];
    args.extend_from_slice(rest);
    run(cluster, &args)
}

/// Saves a backup into `store`; returns the object's name.
fn backup(cluster: &Cluster, store: &Path) -> String {
    let saved = run(
        cluster,
        &[
            "snapshot",
            "save",
            &store.display().to_string(),
            "-w",
            "json",
        ],
    );
    saved.expect_code(0);
    saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Asserts the guard let the enable through: on 3.5 it is enabled (and then cancelled, so
/// the cluster is as before), on 3.4 the server's own refusal follows.
fn assert_enabled_then_cancel(cluster: &Cluster, enabled: &Run) {
    match cluster.version {
        EtcdVersion::V3_5 => {
            enabled.expect_code(0);
            let still = downgrade(cluster, &["validate", target(cluster)]);
            assert_clear_error(&still, "already in progress");
            downgrade(cluster, &["cancel", "-w", "simple"]).expect_code(0);
            downgrade(cluster, &["validate", target(cluster)]).expect_code(0);
        }
        EtcdVersion::V3_4 => assert_clear_error(enabled, "does not support downgrades"),
    }
}

#[test]
fn validate_and_cancel_say_what_the_server_allows() {
    let cluster = Cluster::start(3, Security::Plain);
    let valid = downgrade(&cluster, &["validate", target(&cluster), "-w", "simple"]);
    match cluster.version {
        EtcdVersion::V3_5 => {
            valid.expect_code(0);
            assert_eq!(
                valid.stdout, "Downgrade validate success, cluster version 3.5.0\n",
                "{valid}"
            );
            let json = downgrade(
                &cluster,
                &["--compat", "etcdctl", "validate", "3.4", "-w", "json"],
            );
            json.expect_code(0);
            let json = json.json();
            assert_eq!(json["version"], "3.5.0");
            assert!(json["header"]["cluster_id"].is_u64(), "{json}");
            let too_far = downgrade(&cluster, &["validate", "3.3"]);
            assert_clear_error(&too_far, "minor version just below the cluster version");
            assert!(too_far.stderr.contains("3.4"), "{too_far}");
            let nothing = downgrade(&cluster, &["cancel"]);
            assert_clear_error(&nothing, "no downgrade is in progress");
            let compat = downgrade(&cluster, &["--compat", "etcdctl", "cancel"]);
            assert_eq!(compat.code, 1, "etcdctl's exit code:\n{compat}");
        }
        EtcdVersion::V3_4 => {
            assert_clear_error(&valid, "etcd 3.4.23 does not support downgrades");
            assert_clear_error(&downgrade(&cluster, &["cancel"]), "does not support");
        }
    }
    let empty = downgrade(&cluster, &["validate", ""]);
    assert_clear_error(&empty, "target version");
}

#[test]
fn enable_is_refused_without_a_backup_and_forced_with_a_warning() {
    let cluster = Cluster::start(1, Security::Plain);
    let refused = downgrade(&cluster, &["enable", target(&cluster)]);
    assert_clear_error(&refused, "verified backup");
    assert!(refused.stderr.contains("(--store or --force)"), "{refused}");
    if cluster.version == EtcdVersion::V3_5 {
        // Nothing was sent: no downgrade is in progress.
        downgrade(&cluster, &["validate", target(&cluster)]).expect_code(0);
    }

    let empty = cluster.dir().join("empty-store");
    std::fs::create_dir_all(&empty).unwrap();
    let store = empty.display().to_string();
    let no_backup = downgrade(&cluster, &["enable", target(&cluster), "--store", &store]);
    assert_clear_error(&no_backup, "holds no complete backup of cluster");

    let forced = downgrade(
        &cluster,
        &["enable", target(&cluster), "--force", "-w", "simple"],
    );
    if cluster.version == EtcdVersion::V3_5 {
        assert!(
            forced
                .stderr
                .contains("warning: forced: downgrade enable without"),
            "{forced}"
        );
        assert_eq!(
            forced.stdout, "Downgrade enable success, cluster version 3.5.0\n",
            "{forced}"
        );
    }
    assert_enabled_then_cancel(&cluster, &forced);
}

#[test]
fn enable_goes_ahead_with_a_fresh_verified_backup_of_this_cluster() {
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put_keys("/registry/configmaps/cm-", 20);
    let store = cluster.dir().join("backups");
    let object = backup(&cluster, &store);
    let store_arg = store.display().to_string();
    let enabled = downgrade(
        &cluster,
        &[
            "enable",
            target(&cluster),
            "--store",
            &store_arg,
            "-w",
            "json",
        ],
    );
    if cluster.version == EtcdVersion::V3_5 {
        enabled.expect_code(0);
        let json = enabled.json();
        assert_eq!(json["backup"]["object"], object.as_str(), "{enabled}");
        assert_eq!(json["cluster_version"], "3.5.0", "{enabled}");
        assert_eq!(json["target_version"], "3.4", "{enabled}");
        assert!(enabled.stderr.is_empty(), "{enabled}");
    }
    assert_enabled_then_cancel(&cluster, &enabled);
}

#[test]
fn enable_is_refused_with_a_stale_or_corrupt_backup() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("backups");
    let object = backup(&cluster, &store);
    let store_arg = store.display().to_string();
    // The backup was taken long ago.
    let manifest = store.join(format!("{object}.manifest.json"));
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    json["created_at"] = "2020-01-01T00:00:00Z".into();
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();

    let stale = downgrade(
        &cluster,
        &["enable", target(&cluster), "--store", &store_arg],
    );
    assert_clear_error(&stale, "older than the 1h allowed");
    assert!(stale.stderr.contains(&object), "{stale}");
    assert!(
        stale.stderr.contains("(--max-backup-age or --force)"),
        "{stale}"
    );

    // Allowed that old, but its bytes no longer match its manifest: refused.
    let path = store.join(&object);
    let mut bytes = std::fs::read(&path).unwrap();
    let original = bytes.clone();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let old_ok = [
        "enable",
        target(&cluster),
        "--store",
        &store_arg,
        "--max-backup-age",
        "36500d",
    ];
    let corrupt = downgrade(&cluster, &old_ok);
    assert_clear_error(&corrupt, "verifies");

    // Intact and allowed that old: through the guard.
    std::fs::write(&path, &original).unwrap();
    let enabled = downgrade(&cluster, &old_ok);
    assert_enabled_then_cancel(&cluster, &enabled);
}

/// A backup with this cluster's ID that cannot be of its history does not count: its
/// revision above the cluster's, or streamed from no current member (default restores share
/// cluster IDs). A future-dated one does not count as fresh either; each refusal says why.
#[test]
fn enable_is_refused_with_a_backup_of_another_history_or_from_the_future() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("backups");
    let object = backup(&cluster, &store);
    let store_arg = store.display().to_string();
    let manifest = store.join(format!("{object}.manifest.json"));
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let enable = ["enable", target(&cluster), "--store", &store_arg];
    let cases: [(&str, serde_json::Value, &str); 3] = [
        (
            "revision",
            1_000_000_000i64.into(),
            "is above the cluster's current",
        ),
        (
            "member_id",
            "123456789abcdef".into(),
            "which is no current member",
        ),
        ("created_at", "2031-01-01T00:00:00Z".into(), "in the future"),
    ];
    for (field, value, why) in cases {
        let mut json = original.clone();
        json[field] = value;
        std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
        let refused = downgrade(&cluster, &enable);
        assert_clear_error(&refused, "not counted");
        assert!(refused.stderr.contains(why), "{field}: {refused}");
        assert!(refused.stderr.contains(&object), "{field}: {refused}");
    }
    // As it was: through the guard.
    std::fs::write(&manifest, serde_json::to_vec(&original).unwrap()).unwrap();
    let enabled = downgrade(&cluster, &enable);
    assert_enabled_then_cancel(&cluster, &enabled);
}

/// `--backup-to`: the backup the guard wants is taken first, once etcd has validated the
/// target (3.4, which has no downgrades, gets no backup), and named.
#[test]
fn enable_with_backup_to_takes_the_verified_backup_it_needs() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/registry/configmaps/cm-", 20);
    let store = cluster.dir().join("before-downgrade");
    let store_arg = store.display().to_string();
    let enabled = downgrade(
        &cluster,
        &[
            "enable",
            target(&cluster),
            "--backup-to",
            &store_arg,
            "-w",
            "json",
        ],
    );
    let backups = std::fs::read_dir(&store)
        .map(|d| d.filter_map(Result::ok).count())
        .unwrap_or(0);
    if cluster.version == EtcdVersion::V3_5 {
        enabled.expect_code(0);
        let json = enabled.json();
        let object = json["backup_taken"]["object"].as_str().unwrap();
        assert_eq!(json["backup"]["object"], object, "{enabled}");
        assert_eq!(json["backup_taken"]["verified"], true, "{enabled}");
        assert!(enabled.stderr.contains("backed up to"), "{enabled}");
        assert_eq!(backups, 1, "one cluster folder");
    } else {
        assert_eq!(
            backups, 0,
            "a backup before a downgrade 3.4 cannot do:\n{enabled}"
        );
    }
    assert_enabled_then_cancel(&cluster, &enabled);
}

/// The downgrade guard never takes a backup dated in the future as fresh: clamping its age to
/// zero would let one manifest with a wrong clock satisfy --max-backup-age forever.
#[test]
fn downgrade_guard_does_not_take_a_future_dated_backup_as_fresh() {
    let cluster = Cluster::start(1, Security::Plain);
    let store = cluster.dir().join("backups");
    let saved = run(
        &cluster,
        &[
            "snapshot",
            "save",
            &store.display().to_string(),
            "-w",
            "json",
        ],
    );
    saved.expect_code(0);
    let object = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    let manifest = store.join(format!("{object}.manifest.json"));
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    json["created_at"] = "2031-01-01T00:00:00Z".into();
    std::fs::write(&manifest, serde_json::to_vec(&json).unwrap()).unwrap();
    let target = match cluster.version {
        EtcdVersion::V3_5 => "3.4",
        EtcdVersion::V3_4 => "3.3",
    };
    let store_arg = store.display().to_string();
    let enabled = run(
        &cluster,
        &[
            "downgrade",
            "enable",
            target,
            "--store",
            &store_arg,
            "--max-backup-age",
            "1m",
        ],
    );
    if enabled.code == 0 {
        run(&cluster, &["downgrade", "cancel"]);
    }
    assert_ne!(
        enabled.code, 0,
        "downgrade enabled on a future-dated backup:\n{enabled}"
    );
    assert!(
        !enabled.stderr.contains("does not support downgrades"),
        "the guard let a future-dated backup through (the server answered):\n{enabled}"
    );
}
