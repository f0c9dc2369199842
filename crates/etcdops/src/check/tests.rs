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
    let ok = judge_backup(&fresh(600, Some(true)), hour, None);
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
        Some("sha256 mismatch".into()),
    );
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.message.contains("does NOT verify: sha256 mismatch"),
        "{f:?}"
    );
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
