//! Tests of [`super::prune_store`]'s guards: the backup a save just wrote, backups dated in
//! the future, a cluster the store does not hold, empty chain folders, `verify_newest`.

use super::*;
use crate::catalog::delete_backup;
use crate::catalog::tests::{local_store, names, publish_full, publish_full_of};
use crate::delta::publish_segment;
use crate::manifest::Manifest;
use bytes::Bytes;
use chrono::TimeZone;

const A: MemberId = MemberId(0xabc);

fn at(hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, hour, 0, 0).unwrap()
}

fn keep_last(n: u32) -> PruneRequest {
    PruneRequest {
        policy: RetentionPolicy {
            keep_last: Some(n),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Rewrites `object`'s manifest with another `created_at`, as a host with a wrong clock
/// would have written it.
async fn redate(store: &Store, object: &str, created_at: DateTime<Utc>) {
    let name = Manifest::name_for(object);
    let mut manifest = Manifest::from_json(&name, &store.get_small(&name).await.unwrap()).unwrap();
    manifest.created_at = created_at;
    store
        .put_small(&name, Bytes::from(manifest.to_json()))
        .await
        .unwrap();
}

fn objects(entries: &[PruneEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.object.as_str()).collect()
}

#[tokio::test]
async fn a_future_dated_backup_is_kept_reported_and_pushes_no_other_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let old = publish_full(&store, 1, 10).await;
    let future = publish_full(&store, 2, 20).await;
    redate(
        &store,
        &future,
        Utc.with_ymd_and_hms(2027, 6, 1, 0, 0, 0).unwrap(),
    )
    .await;
    let newest = publish_full(&store, 3, 30).await;
    let now = at(4);
    let report = prune_store(&store, &keep_last(1), now).await.unwrap();
    assert_eq!(objects(&report.deleted), [old.as_str()], "{report:?}");
    assert_eq!(report.future_dated, [future.as_str()]);
    let kept = |object: &str| {
        report
            .kept
            .iter()
            .find(|k| k.object == object)
            .map(|k| k.kept_by.join("; "))
            .unwrap_or_default()
    };
    assert!(
        kept(&newest).contains("newest complete backup"),
        "{report:?}"
    );
    assert!(kept(&newest).contains("keep-last 1"), "{report:?}");
    assert!(kept(&future).contains("dated in the future"), "{report:?}");
    assert_eq!(report.warnings.len(), 1);
    assert!(
        report.warnings[0].contains(&future) && report.warnings[0].contains("2027-06-01"),
        "{:?}",
        report.warnings
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["future_dated"][0], future.as_str());
    assert!(json["warnings"][0].is_string());
    let left = names(&store).await;
    assert!(left.contains(&newest) && left.contains(&future) && !left.contains(&old));

    // A few minutes ahead is clock noise, not the future.
    let soon = publish_full(&store, 5, 40).await;
    redate(&store, &soon, now + chrono::Duration::seconds(60)).await;
    let report = prune_store(&store, &keep_last(1), now).await.unwrap();
    assert_eq!(report.future_dated, [future.as_str()]);
    assert_eq!(objects(&report.deleted), [newest.as_str()]);
}

#[tokio::test]
async fn a_saves_own_backup_is_never_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    // The saving host's clock is behind: its backup sorts as the oldest.
    let saved = publish_full(&store, 1, 30).await;
    let other = publish_full(&store, 2, 20).await;
    let request = PruneRequest {
        protected: vec![saved.clone()],
        cluster: Some(A),
        ..keep_last(1)
    };
    let report = prune_store(&store, &request, at(3)).await.unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    let entry = report.kept.iter().find(|k| k.object == saved).unwrap();
    // Its revision (30) is also the highest: the newest data, whatever its date.
    assert_eq!(
        entry.kept_by,
        [
            "newest data (highest revision)",
            "just written by this save"
        ]
    );
    assert!(names(&store).await.contains(&saved));
    assert!(names(&store).await.contains(&other));
}

#[tokio::test]
async fn a_cluster_the_store_holds_no_folder_of_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    publish_full(&store, 1, 10).await;
    let request = PruneRequest {
        cluster: Some(MemberId(0x123)),
        ..keep_last(1)
    };
    let err = prune_store(&store, &request, at(2)).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, SnapshotError::NoSuchCluster { cluster, .. } if cluster == MemberId(0x123))
    );
    assert!(text.starts_with("no backups of cluster 123 in "), "{text}");
    assert!(!text.contains("--") && !text.contains('\n'), "{text}");
    // A folder with nothing but leftovers is the cluster's: no error.
    std::fs::create_dir_all(dir.path().join("etcd-123")).unwrap();
    let report = prune_store(&store, &request, at(2)).await.unwrap();
    assert_eq!(report.clusters, [MemberId(0x123)]);
}

#[tokio::test]
async fn a_deleted_chain_leaves_no_empty_deltas_folder_and_foreign_folders_stay() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let old = publish_full(&store, 1, 10).await;
    publish_segment(&store, &old, 10, 1, (10, 15), &[11]).await;
    let gone = publish_full(&store, 0, 1).await;
    publish_segment(&store, &gone, 1, 1, (1, 5), &[2]).await;
    store.delete(&Manifest::name_for(&gone)).await.unwrap();
    store.delete(&gone).await.unwrap();
    let newest = publish_full(&store, 2, 20).await;
    let folder = |object: &str| dir.path().join(crate::delta::deltas_prefix(object));
    assert!(folder(&old).is_dir() && folder(&gone).is_dir());
    // Foreign: an empty folder not named as a chain's, and a chain folder holding a
    // foreign file.
    let foreign_empty = dir.path().join("etcd-abc/notes.deltas");
    std::fs::create_dir_all(&foreign_empty).unwrap();
    let kept_chain = publish_full(&store, 3, 30).await;
    publish_segment(&store, &kept_chain, 30, 1, (30, 35), &[31]).await;
    let report = prune_store(&store, &keep_last(2), at(4)).await.unwrap();
    assert_eq!(objects(&report.deleted), [old.as_str()], "{report:?}");
    assert_eq!(report.dangling_deleted.len(), 1);
    assert!(!folder(&old).exists(), "the deleted chain's folder is left");
    assert!(
        !folder(&gone).exists(),
        "the dangling chain's folder is left"
    );
    assert!(foreign_empty.is_dir(), "a foreign folder was removed");
    assert!(folder(&kept_chain).is_dir());
    assert!(names(&store).await.contains(&newest));

    // delete_backup too; a foreign file in the folder keeps it.
    std::fs::write(folder(&kept_chain).join("notes.txt"), b"mine").unwrap();
    delete_backup(&store, &kept_chain).await.unwrap();
    assert!(folder(&kept_chain).join("notes.txt").is_file());
    let lone = publish_full_of(&store, A, 5, 50).await;
    publish_segment(&store, &lone, 50, 1, (50, 55), &[51]).await;
    delete_backup(&store, &lone).await.unwrap();
    assert!(!folder(&lone).exists());
}

#[tokio::test]
async fn with_verify_newest_a_damaged_newest_backup_stops_its_clusters_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let old = publish_full(&store, 1, 10).await;
    let orphan = "etcd-abc/20261129T010000.000Z-rev5-0000000b.db.zst";
    store
        .put_small(orphan, Bytes::from_static(b"crashed save"))
        .await
        .unwrap();
    let newest = publish_full(&store, 2, 20).await;
    // Bit rot: other bytes of the same size.
    let path = dir.path().join(&newest);
    let rotten: Vec<u8> = std::fs::read(&path).unwrap().iter().map(|b| !b).collect();
    std::fs::write(&path, rotten).unwrap();
    let grace0 = |verify_newest| PruneRequest {
        verify_newest,
        orphan_grace: Duration::ZERO,
        dry_run: true,
        ..keep_last(1)
    };
    // By default "complete" is only the size: the damaged one is the newest kept.
    let report = prune_store(&store, &grace0(false), Utc::now())
        .await
        .unwrap();
    assert_eq!(objects(&report.deleted), [old.as_str()]);
    assert!(report.verify_failed.is_empty());

    let mut request = grace0(true);
    request.dry_run = false;
    let report = prune_store(&store, &request, Utc::now()).await.unwrap();
    assert!(report.deleted.is_empty(), "{report:?}");
    assert!(report.orphans_deleted.is_empty(), "{report:?}");
    assert_eq!(report.verify_failed, [newest.as_str()]);
    assert!(
        report.warnings[0].contains("failed verification") && !report.warnings[0].contains('\n'),
        "{:?}",
        report.warnings
    );
    let entry = report.kept.iter().find(|k| k.object == old).unwrap();
    assert!(
        entry.kept_by[0].contains("failed verification"),
        "{entry:?}"
    );
    let left = names(&store).await;
    assert!(left.contains(&old) && left.iter().any(|n| n == orphan));
}

#[tokio::test]
async fn an_orphan_whose_manifest_appears_after_the_listing_is_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let full = publish_full(&store, 1, 10).await;
    let manifest = store.get_small(&Manifest::name_for(&full)).await.unwrap();
    // A save between its object's rename and its manifest: an orphan to the listing.
    store.delete(&Manifest::name_for(&full)).await.unwrap();
    let request = PruneRequest {
        orphan_grace: Duration::ZERO,
        dry_run: true,
        ..keep_last(1)
    };
    let mut report = prune_store(&store, &request, Utc::now()).await.unwrap();
    assert_eq!(report.orphans_deleted, [full.as_str()]);
    // The save writes its manifest before this prune deletes.
    store
        .put_small(&Manifest::name_for(&full), manifest)
        .await
        .unwrap();
    apply(&store, &mut report, &[]).await.unwrap();
    assert!(report.orphans_deleted.is_empty(), "{report:?}");
    assert!(list_backups(&store).await.unwrap().backups[0].complete);
}

#[tokio::test]
async fn a_planned_backup_counts_as_the_newest_as_the_real_saves_prune_will() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let older = publish_full(&store, 1, 10).await;
    let newer = publish_full(&store, 2, 20).await;
    let other = publish_full_of(&store, MemberId(0xdef), 1, 10).await;
    let now = at(3);
    // keep_last 2 with two backups: nothing goes today, one goes once the save has written.
    let today = prune_store(&store, &keep_last(2), now).await.unwrap();
    assert!(today.deleted.is_empty(), "{today:?}");
    let preview = PruneRequest {
        dry_run: true,
        planned: Some(A),
        ..keep_last(2)
    };
    let report = prune_store(&store, &preview, now).await.unwrap();
    assert_eq!(objects(&report.deleted), [older.as_str()], "{report:?}");
    // The planned backup is never in the report, and another cluster's are judged alone.
    assert!(
        report
            .kept
            .iter()
            .all(|e| e.object == newer || e.object == other)
    );
    assert!(
        names(&store).await.contains(&older),
        "a dry run deletes nothing"
    );
}
