//! Tests of [`super::prune_store`]: per-cluster rules, live chains, foreign files, leftovers.

use super::*;
use crate::catalog::delete_backup;
use crate::catalog::tests::{local_store, names, publish_full, publish_full_of};
use crate::delta::publish_segment;
use crate::manifest::Manifest;
use crate::run_lock::RUN_LOCK_FORMAT_VERSION;
use bytes::Bytes;
use chrono::TimeZone;

const A: MemberId = MemberId(0xabc);
const B: MemberId = MemberId(0xdef);

fn keep_last(n: u32) -> RetentionPolicy {
    RetentionPolicy {
        keep_last: Some(n),
        ..Default::default()
    }
}

fn at(hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, hour, 0, 0).unwrap()
}

fn request(policy: RetentionPolicy, cluster: Option<MemberId>) -> PruneRequest {
    PruneRequest {
        policy,
        cluster,
        ..Default::default()
    }
}

#[tokio::test]
async fn prune_keeps_or_deletes_a_full_backup_with_its_chain_and_removes_dangling_segments() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let old = publish_full(&store, 1, 10).await;
    publish_segment(&store, &old, 10, 1, (10, 15), &[11]).await;
    publish_segment(&store, &old, 10, 2, (15, 20), &[16]).await;
    let new = publish_full(&store, 2, 20).await;
    let kept_segment = publish_segment(&store, &new, 20, 1, (20, 25), &[21]).await;
    let gone = publish_full(&store, 0, 1).await;
    let dangling = publish_segment(&store, &gone, 1, 1, (1, 5), &[2]).await;
    store.delete(&Manifest::name_for(&gone)).await.unwrap();
    store.delete(&gone).await.unwrap();
    let now = at(3);
    let before = names(&store).await;
    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, true, now)
        .await
        .unwrap();
    assert_eq!(names(&store).await, before, "a dry run deletes nothing");
    assert_eq!(report.deleted.len(), 1);
    assert_eq!(
        (report.deleted[0].object.as_str(), report.deleted[0].deltas),
        (old.as_str(), 2)
    );
    assert_eq!(
        (report.kept[0].object.as_str(), report.kept[0].deltas),
        (new.as_str(), 1)
    );
    assert_eq!(report.dangling_deleted, vec![dangling.object.clone()]);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["deleted"][0]["deltas"], 2);
    let segments: Vec<String> = list_backups(&store)
        .await
        .unwrap()
        .backups
        .iter()
        .find(|b| b.object == old)
        .unwrap()
        .deltas
        .iter()
        .map(|d| d.object.clone())
        .collect();
    assert_eq!(
        report.deleted[0].segments, segments,
        "each deleted name is reported"
    );

    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, false, now)
        .await
        .unwrap();
    assert_eq!(report.dangling_deleted, vec![dangling.object.clone()]);
    let mut left = vec![
        Manifest::name_for(&kept_segment.object),
        kept_segment.object.clone(),
        new.clone(),
        Manifest::name_for(&new),
    ];
    left.sort();
    assert_eq!(names(&store).await, left);
    let catalog = list_backups(&store).await.unwrap();
    assert!(catalog.dangling_deltas.is_empty() && catalog.orphans.is_empty());
    assert_eq!(catalog.backups[0].chain.as_ref().unwrap().to_revision, 25);
}

#[tokio::test]
async fn retention_is_per_cluster_and_a_save_prunes_only_its_own_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let b_only = publish_full_of(&store, B, 1, 5).await;
    let a_old = publish_full_of(&store, A, 2, 10).await;
    let a_new = publish_full_of(&store, A, 3, 20).await;
    let b_newer = publish_full_of(&store, B, 0, 1).await; // older than b_only
    let now = at(4);

    // Cluster A only: B's backups are not even considered.
    let report = prune_store(&store, &request(keep_last(1), Some(A)), now)
        .await
        .unwrap();
    assert_eq!(report.clusters, [A]);
    let deleted: Vec<&str> = report.deleted.iter().map(|d| d.object.as_str()).collect();
    assert_eq!(deleted, [a_old.as_str()]);
    assert!(report.kept.iter().all(|k| k.object == a_new));
    let left = names(&store).await;
    for kept in [&a_new, &b_only, &b_newer] {
        assert!(left.contains(kept), "{kept} deleted: {left:?}");
    }

    // Every cluster: the rules apply within each folder; B's newest survives although
    // A's backups are all newer.
    let report = prune_store(&store, &request(keep_last(1), None), now)
        .await
        .unwrap();
    assert_eq!(report.clusters, [A, B]);
    let deleted: Vec<&str> = report.deleted.iter().map(|d| d.object.as_str()).collect();
    assert_eq!(deleted, [b_newer.as_str()]);
    let kept: BTreeSet<&str> = report.kept.iter().map(|k| k.object.as_str()).collect();
    assert_eq!(kept, BTreeSet::from([a_new.as_str(), b_only.as_str()]));

    // The newest complete backup of each cluster survives any rule.
    let tiny = RetentionPolicy {
        max_age: Some(Duration::from_secs(1)),
        ..Default::default()
    };
    let report = prune_store(&store, &request(tiny, None), now)
        .await
        .unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    assert!(
        report
            .kept
            .iter()
            .all(|k| k.kept_by == ["newest complete backup"])
    );
}

fn lock(full: &str, expires: DateTime<Utc>) -> RunLock {
    RunLock {
        format_version: RUN_LOCK_FORMAT_VERSION,
        holder: "t0ken".into(),
        host: "backup-host".into(),
        pid: 4242,
        cluster_id: A,
        full_backup: Some(full.to_string()),
        previous_full_backup: None,
        renewed_at: expires - chrono::Duration::minutes(1),
        expires_at: expires,
    }
}

#[tokio::test]
async fn a_chain_being_written_is_kept_with_its_full_backup() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let live = publish_full(&store, 1, 10).await;
    let segment = publish_segment(&store, &live, 10, 1, (10, 15), &[11]).await;
    publish_full(&store, 5, 30).await; // a manual save after it
    let now = at(8); // the segment (01:00) is far older than the grace
    let name = run_lock_name(A);
    store
        .put_small(&name, Bytes::from(lock(&live, at(9)).to_json()))
        .await
        .unwrap();
    let report = prune_store(&store, &request(keep_last(1), None), now)
        .await
        .unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    assert_eq!(report.kept_live, [live.as_str()]);
    let entry = report.kept.iter().find(|k| k.object == live).unwrap();
    assert!(
        entry.kept_by[0].contains("backup run on backup-host pid 4242"),
        "{entry:?}"
    );
    assert!(names(&store).await.contains(&segment.object));

    // An expired lock protects nothing.
    store
        .put_small(&name, Bytes::from(lock(&live, at(7)).to_json()))
        .await
        .unwrap();
    let report = prune_store(&store, &request(keep_last(1), None), now)
        .await
        .unwrap();
    assert_eq!(report.deleted.len(), 1);
    assert_eq!(report.deleted[0].object, live);
    assert!(report.kept_live.is_empty());
    assert!(!names(&store).await.contains(&segment.object));
}

#[tokio::test]
async fn without_a_lock_a_recently_published_chain_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let chained = publish_full(&store, 0, 10).await;
    publish_segment(&store, &chained, 10, 1, (10, 15), &[11]).await; // published 01:00
    publish_full(&store, 1, 30).await;
    let grace = Duration::from_secs(3600);
    let within = PruneRequest {
        orphan_grace: grace,
        ..request(keep_last(1), None)
    };
    let report = prune_store(&store, &within, at(2)).await.unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    assert_eq!(report.kept_live, [chained.as_str()]);
    let report = prune_store(&store, &within, at(3)).await.unwrap();
    assert_eq!(report.deleted[0].object, chained, "older than the grace");
}

#[tokio::test]
async fn an_unreadable_lock_stops_the_prune() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    publish_full(&store, 1, 10).await;
    publish_full(&store, 2, 20).await;
    store
        .put_small(&run_lock_name(A), Bytes::from_static(b"{not json"))
        .await
        .unwrap();
    let before = names(&store).await;
    let err = prune_store(&store, &request(keep_last(1), None), at(3))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("nothing was pruned"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    assert_eq!(names(&store).await, before);
}

/// Writes `bytes` at `rel` under the store's directory and dates it `age` back.
fn write_aged(dir: &std::path::Path, rel: &str, bytes: &[u8], age: Duration) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, bytes).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(std::time::SystemTime::now() - age)
        .unwrap();
}

#[tokio::test]
async fn foreign_files_are_never_orphans_and_leftovers_go_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let nested = local_store_at(dir.path().join("etcd"));
    let nested_full = publish_full(&nested, 1, 10).await;
    let full = publish_full(&store, 2, 10).await;
    let day = Duration::from_secs(86_400);
    let foreign = [
        "manual/x.db".to_string(),
        "app/app.db".into(),
        "x.db.zst".into(),
        "y.db.zst.age".into(),
        "notes.txt".into(),
        "etcd-abc/notes.db".into(),
        "etcd-abc/notes.db.zst.age".into(),
        "etcd-old/20261130T010000.000Z-rev10-0000000a.db.zst".into(),
        "manual/.x.db.partial-1f".into(),
        "etcd-abc/.notes.db.partial-1f".into(),
        format!("etcd/{nested_full}"),
        format!("etcd/{}", Manifest::name_for(&nested_full)),
    ];
    for name in &foreign[..10] {
        write_aged(dir.path(), name, b"foreign bytes", day);
    }
    let orphan = "etcd-abc/20261129T010000.000Z-rev5-0000000b.db.zst";
    write_aged(dir.path(), orphan, b"crashed save", day);
    let partial = "etcd-abc/.20261130T030000.000Z-rev7-0000000c.db.zst.partial-1a2b3c";
    write_aged(dir.path(), partial, b"killed save", day);
    let young_partial = "etcd-abc/.20261130T040000.000Z-rev8-0000000d.db.zst.partial-4d";
    write_aged(dir.path(), young_partial, b"running save", Duration::ZERO);
    let snapshot_of = |names: &[String]| -> Vec<Vec<u8>> {
        names
            .iter()
            .map(|n| std::fs::read(dir.path().join(n)).unwrap())
            .collect()
    };
    let before = snapshot_of(&foreign);

    let catalog = list_backups(&store).await.unwrap();
    assert_eq!(
        catalog.backups.len(),
        1,
        "the nested store's backup is not ours"
    );
    assert_eq!(catalog.backups[0].object, full);
    let orphans: Vec<&str> = catalog.orphans.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(orphans, [orphan]);
    let unfinished: Vec<&str> = catalog
        .unfinished_uploads
        .iter()
        .map(|u| u.info.name.as_str())
        .collect();
    assert_eq!(unfinished, [partial, young_partial]);

    let grace = PruneRequest {
        orphan_grace: Duration::from_secs(600),
        ..request(keep_last(1), None)
    };
    let report = prune_store(&store, &grace, Utc::now()).await.unwrap();
    assert_eq!(report.orphans_deleted, [orphan]);
    assert_eq!(report.unfinished_deleted, [partial]);
    assert!(report.deleted.is_empty());
    assert!(!dir.path().join(orphan).exists() && !dir.path().join(partial).exists());
    assert!(
        dir.path().join(young_partial).exists(),
        "younger than the grace"
    );
    assert_eq!(snapshot_of(&foreign), before, "a foreign file changed");
    assert_eq!(list_backups(&nested).await.unwrap().backups.len(), 1);
}

fn local_store_at(path: std::path::PathBuf) -> Store {
    Store::open(
        &path.display().to_string(),
        &etcd_store::StoreOptions::default(),
    )
    .unwrap()
}

#[tokio::test]
async fn a_missing_local_store_is_an_error_and_an_empty_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let missing = local_store_at(dir.path().join("nonexistent"));
    let err = list_backups(&missing).await.unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
    let empty = local_store(&dir);
    assert!(list_backups(&empty).await.unwrap().backups.is_empty());
}

#[tokio::test]
async fn what_a_concurrent_prune_deleted_first_is_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let old = publish_full(&store, 1, 10).await;
    let newest = publish_full(&store, 2, 20).await;
    let dry = PruneRequest {
        dry_run: true,
        ..request(keep_last(1), None)
    };
    let report = prune_store(&store, &dry, at(3)).await.unwrap();
    assert_eq!(report.deleted[0].object, old);
    // Another prune removes it between this one's listing and its deletions.
    delete_backup(&store, &old).await.unwrap();
    let mut report = report;
    apply(&store, &mut report, &[]).await.unwrap();
    let mut left = vec![newest.clone(), Manifest::name_for(&newest)];
    left.sort();
    assert_eq!(names(&store).await, left);
}

/// Publishes a compacted copy of `full` (its chain up to `to_revision`) dated `hour`.
async fn publish_copy(store: &Store, full: &str, hour: u32, to_revision: i64) -> String {
    let copy = publish_full(store, hour, to_revision).await;
    let name = Manifest::name_for(&copy);
    let mut manifest: Manifest =
        serde_json::from_slice(&store.get_small(&name).await.unwrap()).unwrap();
    manifest.compacted_from = Some(crate::manifest::CompactedFrom {
        full_backup: full.to_string(),
        full_revision: 10,
        last_sequence: 1,
        to_revision,
        to_time: at(hour),
        highest_stamp: None,
    });
    store
        .put_small(&name, Bytes::from(manifest.to_json()))
        .await
        .unwrap();
    copy
}

#[tokio::test]
async fn a_chain_reaching_past_its_kept_compacted_copy_is_kept_until_a_copy_reaches_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let full = publish_full(&store, 1, 10).await;
    publish_segment(&store, &full, 10, 1, (10, 15), &[11]).await;
    publish_segment(&store, &full, 10, 2, (15, 20), &[16]).await;
    let copy = publish_copy(&store, &full, 2, 15).await;
    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, true, at(3))
        .await
        .unwrap();
    assert!(report.deleted.is_empty(), "{report:#?}");
    let chain = report.kept.iter().find(|k| k.object == full).unwrap();
    assert!(
        chain.kept_by[0].contains(&format!("past its kept compacted copy {copy}")),
        "{chain:#?}"
    );
    let end = publish_copy(&store, &full, 3, 20).await;
    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, true, at(4))
        .await
        .unwrap();
    let kept: Vec<&str> = report.kept.iter().map(|k| k.object.as_str()).collect();
    assert_eq!(kept, [end.as_str()], "{report:#?}");
}

/// What a red team with write access to a local store plants under etcdops's own names: a
/// backup's object, a segment and an orphan's manifest swapped for links to a secret, a chain
/// folder linked to a dir elsewhere, a FIFO and a dir named like backups. Listed as foreign,
/// never read or deleted: the backups they belong to are kept and each is a warning.
#[tokio::test]
async fn entries_that_are_not_files_are_foreign_kept_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("shadow");
    std::fs::write(&secret, b"TOP-SECRET").unwrap();
    let root = dir.path();
    let linked = publish_full(&store, 1, 10).await;
    std::fs::remove_file(root.join(&linked)).unwrap();
    std::os::unix::fs::symlink(&secret, root.join(&linked)).unwrap();
    let chained = publish_full(&store, 2, 20).await;
    publish_segment(&store, &chained, 20, 1, (20, 25), &[21]).await;
    let chain_dir = root.join(format!("{}.deltas", backup_stem(&chained)));
    let moved = outside.path().join("deltas");
    std::fs::rename(&chain_dir, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &chain_dir).unwrap();
    let orphan = publish_full(&store, 3, 25).await;
    let orphan_manifest = root.join(Manifest::name_for(&orphan));
    std::fs::remove_file(&orphan_manifest).unwrap();
    std::os::unix::fs::symlink(&secret, &orphan_manifest).unwrap();
    let newest = publish_full(&store, 4, 30).await;
    let segment = publish_segment(&store, &newest, 30, 1, (30, 35), &[31]).await;
    std::fs::remove_file(root.join(&segment.object)).unwrap();
    std::os::unix::fs::symlink(&secret, root.join(&segment.object)).unwrap();
    let fifo = "etcd-abc/20261130T050000.000Z-rev40-00000005.db.zst";
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join(fifo),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let as_dir = "etcd-abc/20261130T060000.000Z-rev50-00000006.db.zst.manifest.json";
    std::fs::create_dir(root.join(as_dir)).unwrap();
    let chain_name = format!("{}.deltas", backup_stem(&chained));

    let catalog = list_backups(&store).await.unwrap();
    let foreign: Vec<(String, &str)> = catalog
        .foreign_entries
        .iter()
        .map(|e| (e.name.clone(), e.kind))
        .collect();
    let mut expected = vec![
        (linked.clone(), "a symbolic link"),
        (chain_name.clone(), "a symbolic link"),
        (Manifest::name_for(&orphan), "a symbolic link"),
        (fifo.to_string(), "a FIFO"),
        (as_dir.to_string(), "a directory"),
        (segment.object.clone(), "a symbolic link"),
    ];
    expected.sort();
    assert_eq!(foreign, expected);
    let listed = catalog.backups.iter().find(|b| b.object == linked).unwrap();
    assert!(!listed.complete, "a linked object is not a complete backup");
    assert_eq!(
        catalog.orphans.iter().map(|o| &o.name).collect::<Vec<_>>(),
        [&orphan]
    );

    let report = prune_backups(&store, &keep_last(1), Duration::ZERO, false, at(5))
        .await
        .unwrap();
    assert!(report.deleted.is_empty(), "{:?}", report.deleted);
    assert!(report.orphans_deleted.is_empty(), "{report:?}");
    for object in [&linked, &chained, &newest] {
        assert!(
            report.kept.iter().any(|k| &k.object == object),
            "{object} not kept"
        );
    }
    for (name, _) in &expected {
        assert!(
            report.warnings.iter().any(|w| w.contains(name.as_str())),
            "{name} not reported: {:?}",
            report.warnings
        );
        assert!(root.join(name).symlink_metadata().is_ok(), "{name} removed");
    }
    assert_eq!(std::fs::read(&secret).unwrap(), b"TOP-SECRET");
    assert_eq!(
        std::fs::read_dir(&moved).unwrap().count(),
        2,
        "segment kept"
    );
    // A linked lock stops the prune by its name: it is never read, and nothing is deleted.
    std::os::unix::fs::symlink(&secret, root.join("etcd-abc/backup-run.lock.json")).unwrap();
    let before = names(&store).await;
    let err = prune_backups(&store, &keep_last(1), Duration::ZERO, false, at(5))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("etcd-abc/backup-run.lock.json") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(!err.contains("TOP-SECRET"), "{err}");
    assert_eq!(names(&store).await, before);
}

/// Rewrites the manifest of `object` with an Object Lock retention until `until`.
async fn lock_in_manifest(store: &Store, object: &str, until: DateTime<Utc>) {
    let name = Manifest::name_for(object);
    let mut manifest = Manifest::from_json(&name, &store.get_small(&name).await.unwrap()).unwrap();
    manifest.object_lock = Some(etcd_store::ObjectLock {
        mode: etcd_store::LockMode::Compliance,
        retain_until: until,
    });
    store
        .put_small(&name, Bytes::from(manifest.to_json()))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_backup_whose_object_lock_holds_is_kept_and_reported_held_until_its_date() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let locked = publish_full(&store, 1, 10).await;
    let unlocked = publish_full(&store, 2, 20).await;
    let newest = publish_full(&store, 3, 30).await;
    lock_in_manifest(&store, &locked, at(5)).await;
    // Held: kept, reported, and the run goes on (the unlocked one is deleted).
    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, false, at(4))
        .await
        .unwrap();
    assert_eq!(
        report.held,
        [HeldBackup {
            object: locked.clone(),
            mode: etcd_store::LockMode::Compliance,
            retain_until: at(5),
        }]
    );
    let kept = report.kept.iter().find(|e| e.object == locked).unwrap();
    assert_eq!(
        kept.kept_by,
        ["held by its S3 Object Lock (compliance lock until 2026-11-30T05:00:00Z)"]
    );
    assert_eq!(report.deleted.len(), 1);
    assert_eq!(report.deleted[0].object, unlocked);
    let left = names(&store).await;
    assert!(left.contains(&locked) && left.contains(&newest) && !left.contains(&unlocked));
    // A backup the rules keep anyway is not "held": the lock is one more reason.
    let report = prune_backups(&store, &keep_last(2), DEFAULT_ORPHAN_GRACE, true, at(4))
        .await
        .unwrap();
    assert!(report.held.is_empty(), "{:?}", report.held);
    // At the date, the lock is over: deleted.
    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, false, at(5))
        .await
        .unwrap();
    assert!(report.held.is_empty());
    assert_eq!(report.deleted[0].object, locked);
    assert!(!names(&store).await.contains(&locked));
    // An explicit delete (which reads the clock) of a backup held beyond now is refused,
    // naming the date; once the date is behind, it goes.
    let until = Utc::now() + chrono::Duration::days(1);
    lock_in_manifest(&store, &newest, until).await;
    let err = delete_backup(&store, &newest).await.unwrap_err();
    let date = until.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    assert!(
        matches!(err, SnapshotError::ObjectLocked { .. }) && err.to_string().contains(&date),
        "{err}"
    );
    assert!(names(&store).await.contains(&newest));
    lock_in_manifest(&store, &newest, at(5)).await;
    delete_backup(&store, &newest).await.unwrap();
}

#[tokio::test]
async fn a_chain_is_held_until_its_latest_segment_lock() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let old = publish_full(&store, 1, 10).await;
    let mut segment = publish_segment(&store, &old, 10, 1, (10, 15), &[11]).await;
    segment.object_lock = Some(etcd_store::ObjectLock {
        mode: etcd_store::LockMode::Governance,
        retain_until: at(6),
    });
    store
        .put_small(
            &Manifest::name_for(&segment.object),
            Bytes::from(segment.to_json()),
        )
        .await
        .unwrap();
    publish_full(&store, 2, 20).await;
    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, false, at(4))
        .await
        .unwrap();
    assert_eq!(report.held.len(), 1, "{report:?}");
    assert_eq!(
        (report.held[0].object.as_str(), report.held[0].retain_until),
        (old.as_str(), at(6))
    );
    assert!(report.deleted.is_empty());
    assert!(names(&store).await.contains(&segment.object));
    // Its full backup gone (deleted by hand past the check): the segment, dangling, is still
    // held by its own lock, and goes after the date.
    store.delete(&Manifest::name_for(&old)).await.unwrap();
    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, false, at(5))
        .await
        .unwrap();
    assert_eq!(report.held[0].object, segment.object);
    assert!(report.dangling_deleted.is_empty());
    let report = prune_backups(&store, &keep_last(1), DEFAULT_ORPHAN_GRACE, false, at(6))
        .await
        .unwrap();
    assert_eq!(report.dangling_deleted, [segment.object.clone()]);
}
