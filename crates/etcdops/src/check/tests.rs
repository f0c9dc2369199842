use super::*;

fn fresh(age_seconds: i64, verified: Option<bool>) -> BackupFreshness {
    BackupFreshness {
        store: "s3://bucket".into(),
        object: Some("etcd-9/b.db.zst".into()),
        revision: Some(42),
        as_of: None,
        age_seconds: Some(age_seconds),
        verified,
    }
}

#[test]
fn backup_age_against_the_maximum() {
    let hour = Some(Duration::from_secs(3600));
    let ok = judge_backup(&fresh(600, Some(true)), hour, Some(Verification::Verified));
    assert_eq!(ok.severity, Severity::Ok, "{ok:?}");
    assert!(ok.message.contains("revision 42"), "{ok:?}");
    assert!(ok.message.contains("verifies"), "{ok:?}");
    let old = judge_backup(&fresh(5400, Some(true)), hour, None);
    assert_eq!(old.severity, Severity::Warning, "{old:?}");
    assert!(old.message.contains("1h30m old"), "{old:?}");
    let stale = judge_backup(&fresh(3 * 3600, Some(true)), hour, None);
    assert_eq!(stale.severity, Severity::Critical, "{stale:?}");
    // Without a maximum the age is reported, not judged.
    assert_eq!(
        judge_backup(&fresh(30 * 86_400, None), None, None).severity,
        Severity::Ok
    );
}

#[test]
fn a_backup_that_does_not_verify_is_critical_however_fresh() {
    let f = judge_backup(
        &fresh(10, Some(false)),
        Some(Duration::from_secs(3600)),
        Some(Verification::Failed("sha256 mismatch".into())),
    );
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.message.contains("does NOT verify: sha256 mismatch"),
        "{f:?}"
    );
    // One that could not be checked (encrypted, no identity) is a warning, not "verified".
    let f = judge_backup(
        &fresh(10, None),
        Some(Duration::from_secs(3600)),
        Some(Verification::Unverifiable("it is encrypted".into())),
    );
    assert_eq!(f.severity, Severity::Warning, "{f:?}");
    assert!(
        f.message
            .contains("could not be verified (it is encrypted)"),
        "{f:?}"
    );
    assert!(!f.message.contains("verifies"), "{f:?}");
}

#[test]
fn free_space_against_the_db_and_its_quota() {
    let space = |free: u64, db: u64| DiskSpace {
        data_dir: "/var/lib/etcd".into(),
        free_bytes: free,
        db_bytes: db,
        quota_bytes: 2 << 30,
    };
    assert_eq!(judge_disk(&space(10 << 30, 1 << 30)).severity, Severity::Ok);
    let tight = judge_disk(&space(512 << 20, 1 << 30));
    assert_eq!(tight.severity, Severity::Critical, "{tight:?}");
    assert!(
        tight.message.contains("less than the db itself"),
        "{tight:?}"
    );
    let growing = judge_disk(&space(1 << 30, 512 << 20));
    assert_eq!(growing.severity, Severity::Warning, "{growing:?}");
}

#[test]
fn a_real_directory_gives_its_free_space() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (space, finding) = disk_check(dir.path(), 1);
    let space = space.expect("statvfs of a temp dir");
    assert!(space.free_bytes > 0);
    assert_eq!(space.db_bytes, 0);
    assert_eq!(finding.check, "disk");
    let (missing, finding) = disk_check(&dir.path().join("absent"), 1);
    assert!(missing.is_none());
    assert_eq!(finding.severity, Severity::Warning);
}

fn entry(
    cluster: u64,
    minutes_ago: i64,
    complete: bool,
    chain_minutes_ago: Option<i64>,
) -> BackupEntry {
    let at = Utc::now() - chrono::Duration::minutes(minutes_ago);
    let object = format!("etcd-{cluster:x}/b-{minutes_ago}.db.zst");
    let manifest: etcd_snapshot::Manifest = serde_json::from_value(serde_json::json!({
        "format_version": 1, "tool": "etcdops", "tool_version": "0",
        "created_at": at, "completed_at": at,
        "cluster_id": format!("{cluster:x}"), "member_id": "1", "member_name": "m0",
        "endpoint": "http://127.0.0.1:2379", "etcd_version": "3.5.1",
        "revision": 100, "raft_term": 2, "raft_index": 10,
        "db_size": 1, "db_size_in_use": 1, "db_sha256": "", "object": object,
        "object_sha256": "", "object_size": 1, "compression": "zstd",
        "compression_level": 3, "verified_after_upload": true, "labels": {}
    }))
    .expect("a manifest");
    let chain = chain_minutes_ago.map(|ago| {
        let to = Utc::now() - chrono::Duration::minutes(ago);
        etcd_snapshot::ChainSummary {
            segments: 3,
            covered_segments: 3,
            changes: 40,
            after_revision: 100,
            to_revision: 140,
            from_time: Some(at),
            to_time: Some(to),
            last_published: to,
            continuous: true,
            problems: Vec::new(),
        }
    });
    BackupEntry {
        object: object.clone(),
        manifest_name: format!("{object}.manifest.json"),
        complete,
        manifest,
        deltas: Vec::new(),
        chain,
    }
}

#[test]
fn the_newest_complete_backup_of_this_cluster_counts_with_its_chain() {
    let ours = MemberId(0xabc);
    let backups = vec![
        entry(0xdef, 1, true, None),     // another cluster's, newest of all
        entry(0xabc, 2, false, None),    // ours, but incomplete
        entry(0xabc, 90, true, Some(3)), // ours, its chain published 3 minutes ago
        entry(0xabc, 30, true, None),    // ours, a newer full without a chain
    ];
    let (found, revision, at) = newest_backup(&backups, ours).expect("one of ours");
    assert_eq!(found.object, "etcd-abc/b-90.db.zst");
    assert_eq!(revision, 140, "the chain's last revision");
    assert!(Utc::now() - at < chrono::Duration::minutes(4));
    // Without the chain, the newest full wins at its own revision.
    let fulls: Vec<BackupEntry> = backups
        .into_iter()
        .map(|mut b| {
            b.chain = None;
            b
        })
        .collect();
    let (found, revision, _) = newest_backup(&fulls, ours).expect("one of ours");
    assert_eq!(
        (found.object.as_str(), revision),
        ("etcd-abc/b-30.db.zst", 100)
    );
    assert!(newest_backup(&fulls, MemberId(0x123)).is_none());
}

#[test]
fn a_backup_stamped_in_the_future_is_a_clock_warning_not_fresh() {
    let hour = Some(Duration::from_secs(3600));
    let f = judge_backup(&fresh(-2 * 86_400, Some(true)), hour, None);
    assert_eq!(f.severity, Severity::Warning, "{f:?}");
    assert!(f.message.contains("2d in the future"), "{f:?}");
    // A few seconds ahead is ordinary skew between hosts: judged as fresh.
    let f = judge_backup(&fresh(-5, Some(true)), hour, None);
    assert_eq!(f.severity, Severity::Ok, "{f:?}");
}

#[test]
fn nonsense_thresholds_are_refused_before_anything_is_read() {
    let swapped = CheckRequest {
        options: CheckOptions {
            cert_warn_days: 7,
            cert_critical_days: 30,
            ..CheckOptions::default()
        },
        ..CheckRequest::default()
    };
    let e = validate(&swapped).unwrap_err().to_string();
    assert!(e.contains("below the critical one"), "{e}");
    let zero = CheckRequest {
        max_backup_age: Some(Duration::ZERO),
        ..CheckRequest::default()
    };
    assert!(validate(&zero).is_err());
    let defaults = CheckRequest {
        options: CheckOptions::default(),
        ..CheckRequest::default()
    };
    assert!(validate(&defaults).is_ok());
}

#[tokio::test]
async fn a_backup_deleted_between_listing_and_verifying_is_not_called_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let request = CheckRequest::default();
    let store = request
        .store_settings
        .open(&dir.path().display().to_string())
        .unwrap();
    let v = verify(
        &request,
        &store,
        "etcd-1/20260101T000000.000Z-rev5-00000000.db.zst",
    )
    .await;
    match v {
        Verification::Unverifiable(why) => assert!(why.contains("deleted while"), "{why}"),
        other => panic!("a vanished object is not a damaged one: {other:?}"),
    }
}
