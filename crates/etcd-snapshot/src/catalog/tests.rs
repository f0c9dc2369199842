//! Tests of listing, verifying and deleting backups with their chains.

use super::*;
use crate::delta::deltas_prefix;
use crate::delta::publish_segment;
use crate::manifest::{Compression, backup_object_name};
use bytes::Bytes;
use chrono::TimeZone;
use chrono::Utc;
use etcd_core::MemberId;
use sha2::{Digest, Sha256};

pub(crate) fn local_store(dir: &tempfile::TempDir) -> Store {
    Store::open(
        &dir.path().display().to_string(),
        &etcd_store::StoreOptions::default(),
    )
    .unwrap()
}

/// Publishes a full backup taken at `hour` o'clock at `revision`: object, then manifest.
pub(crate) async fn publish_full(store: &Store, hour: u32, revision: i64) -> String {
    publish_full_of(store, MemberId(0xabc), hour, revision).await
}

/// [`publish_full`] of a backup of `cluster`.
pub(crate) async fn publish_full_of(
    store: &Store,
    cluster: MemberId,
    hour: u32,
    revision: i64,
) -> String {
    let at = Utc.with_ymd_and_hms(2026, 11, 30, hour, 0, 0).unwrap();
    let object = backup_object_name(cluster, at, revision, Compression::Zstd, false, hour);
    let bytes = format!("full backup at revision {revision}").into_bytes();
    let mut manifest = crate::manifest::tests::sample();
    manifest.cluster_id = cluster;
    manifest.created_at = at;
    manifest.completed_at = at;
    manifest.revision = revision;
    manifest.object = object.clone();
    manifest.object_sha256 = hex::encode(Sha256::digest(&bytes));
    manifest.object_size = bytes.len() as u64;
    store.put_small(&object, Bytes::from(bytes)).await.unwrap();
    store
        .put_small(
            &Manifest::name_for(&object),
            Bytes::from(manifest.to_json()),
        )
        .await
        .unwrap();
    object
}

pub(crate) async fn names(store: &Store) -> Vec<String> {
    store
        .list("")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.name)
        .collect()
}

#[test]
fn encrypted_objects_are_backup_objects_too() {
    for name in ["a.db", "a.db.zst", "a.db.age", "a.db.zst.age"] {
        assert!(is_backup_object(name), "{name}");
    }
    for name in ["a.db.zst.manifest.json", "a.age", "a.txt"] {
        assert!(!is_backup_object(name), "{name}");
    }
    assert!(is_backup_object("a.deltas/000001-rev2-3.delta.zst"));
    assert!(!is_backup_object(
        "a.deltas/000001-rev2-3.delta.zst.manifest.json"
    ));
}

#[tokio::test]
async fn list_shows_each_full_backup_with_the_range_its_chain_covers() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let plain = publish_full(&store, 1, 5).await;
    let full = publish_full(&store, 2, 10).await;
    publish_segment(&store, &full, 10, 1, (10, 15), &[11, 15]).await;
    publish_segment(&store, &full, 10, 2, (15, 20), &[16]).await;
    publish_segment(&store, &full, 10, 3, (20, 30), &[21, 22, 30]).await;
    let catalog = list_backups(&store).await.unwrap();
    assert!(catalog.orphans.is_empty() && catalog.broken_manifests.is_empty());
    assert_eq!(catalog.backups.len(), 2, "segments are not backups");
    let chained = &catalog.backups[0];
    assert_eq!(chained.object, full);
    let sequences: Vec<u64> = chained.deltas.iter().map(|d| d.manifest.sequence).collect();
    assert_eq!(sequences, [1, 2, 3]);
    assert!(chained.deltas.iter().all(|d| d.complete));
    let chain = chained.chain.as_ref().unwrap();
    assert_eq!(
        (chain.segments, chain.covered_segments, chain.changes),
        (3, 3, 6)
    );
    assert_eq!((chain.after_revision, chain.to_revision), (10, 30));
    assert!(chain.continuous && chain.problems.is_empty(), "{chain:?}");
    assert!(chain.to_time.is_some() && chain.from_time.is_some());
    // A backup without a chain serializes as before.
    let other = &catalog.backups[1];
    assert_eq!(other.object, plain);
    assert!(other.chain.is_none());
    let json = serde_json::to_value(other).unwrap();
    assert!(json.get("deltas").is_none() && json.get("chain").is_none());
    let json = serde_json::to_value(&catalog).unwrap();
    assert!(json.get("dangling_deltas").is_none());
    assert_eq!(json["backups"][0]["chain"]["to_revision"], 30);
}

#[tokio::test]
async fn a_missing_segment_or_a_wrong_start_breaks_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let gap = publish_full(&store, 1, 10).await;
    publish_segment(&store, &gap, 10, 1, (10, 15), &[11]).await;
    publish_segment(&store, &gap, 10, 3, (20, 25), &[21]).await;
    let shifted = publish_full(&store, 2, 40).await;
    publish_segment(&store, &shifted, 40, 1, (40, 45), &[41]).await;
    publish_segment(&store, &shifted, 40, 2, (46, 50), &[47]).await;
    let wrong_base = publish_full(&store, 3, 60).await;
    publish_segment(&store, &wrong_base, 59, 1, (60, 65), &[61]).await;
    let catalog = list_backups(&store).await.unwrap();
    let chain_of = |object: &str| {
        catalog
            .backups
            .iter()
            .find(|b| b.object == object)
            .and_then(|b| b.chain.clone())
            .unwrap()
    };
    let chain = chain_of(&gap);
    assert!(!chain.continuous);
    assert_eq!(chain.problems, ["segment 2 is missing"]);
    assert_eq!(
        (chain.to_revision, chain.covered_segments, chain.segments),
        (15, 1, 2)
    );
    let chain = chain_of(&shifted);
    assert!(!chain.continuous);
    assert_eq!(
        chain.problems,
        ["segment 2 starts after revision 46, but segment 1 ends at revision 45"]
    );
    assert_eq!(chain.to_revision, 45);
    let chain = chain_of(&wrong_base);
    assert_eq!(
        chain.problems,
        ["segment 1 records base revision 59, but the full backup is at revision 60"]
    );
    assert_eq!(chain.to_revision, 60);
    // An incomplete segment object breaks it too.
    let segment = catalog.backups[2].deltas[0].object.clone();
    std::fs::write(dir.path().join(&segment), b"short").unwrap();
    let catalog = list_backups(&store).await.unwrap();
    let chain = catalog.backups[2].chain.clone().unwrap();
    assert!(!catalog.backups[2].deltas[0].complete);
    assert!(
        chain.problems[0].contains("is missing or not the"),
        "{:?}",
        chain.problems
    );
    assert_eq!(chain.to_revision, 10);
}

#[tokio::test]
async fn segments_without_their_full_backup_are_dangling_and_unpublished_ones_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let full = publish_full(&store, 1, 10).await;
    publish_segment(&store, &full, 10, 1, (10, 15), &[11]).await;
    store.delete(&Manifest::name_for(&full)).await.unwrap();
    let kept = publish_full(&store, 2, 20).await;
    let unpublished = crate::delta::delta_object_name(&kept, 1, 20, 25, false);
    store
        .put_small(&unpublished, Bytes::from_static(b"x"))
        .await
        .unwrap();
    let catalog = list_backups(&store).await.unwrap();
    assert_eq!(catalog.backups.len(), 1);
    assert!(catalog.backups[0].deltas.is_empty());
    assert_eq!(catalog.dangling_deltas.len(), 1);
    assert!(
        catalog.dangling_deltas[0]
            .object
            .starts_with(&deltas_prefix(&full))
    );
    let orphans: Vec<&str> = catalog.orphans.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(orphans, [full.as_str(), unpublished.as_str()]);
    // A broken delta manifest is reported like any other.
    store
        .put_small(
            &Manifest::name_for(&unpublished),
            Bytes::from_static(b"{\"format_version\": 1}"),
        )
        .await
        .unwrap();
    let catalog = list_backups(&store).await.unwrap();
    assert_eq!(catalog.broken_manifests.len(), 1);
    assert!(
        catalog.broken_manifests[0]
            .error
            .contains("not a delta manifest"),
        "{:?}",
        catalog.broken_manifests
    );
}

#[tokio::test]
async fn deleting_a_full_backup_removes_its_chain_newest_first_and_a_lone_segment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let other = publish_full(&store, 1, 5).await;
    let full = publish_full(&store, 2, 10).await;
    let s1 = publish_segment(&store, &full, 10, 1, (10, 15), &[11]).await;
    let s2 = publish_segment(&store, &full, 10, 2, (15, 20), &[16]).await;
    let err = delete_backup(&store, &s2.object)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("delete its full backup '{full}'")),
        "{err}"
    );
    assert!(!err.contains('\n'));
    let err = delete_backup(&store, &Manifest::name_for(&s1.object))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("removes the whole chain"), "{err}");
    // Also when the store is opened inside the chain's folder (a URL naming the segment).
    let (folder, file) = s2.object.rsplit_once('/').unwrap();
    let inner = Store::open(
        &dir.path().join(folder).display().to_string(),
        &etcd_store::StoreOptions::default(),
    )
    .unwrap();
    let err = delete_backup(&inner, file).await.unwrap_err().to_string();
    assert!(
        err.contains("is a delta segment") && err.contains(&full),
        "{err}"
    );
    let report = delete_backup(&store, &full).await.unwrap();
    assert_eq!(
        report.deleted,
        [
            Manifest::name_for(&s2.object),
            s2.object.clone(),
            Manifest::name_for(&s1.object),
            s1.object.clone(),
            Manifest::name_for(&full),
            full.clone(),
        ]
    );
    assert_eq!(
        names(&store).await,
        [other.clone(), Manifest::name_for(&other)]
    );
    assert!(delete_backup(&store, &full).await.is_err(), "gone now");
}

#[tokio::test]
async fn verify_chain_catches_a_changed_byte_and_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let full = publish_full(&store, 1, 10).await;
    let ids = Identities::none();
    let empty = verify_chain(&store, &full, &ids).await.unwrap();
    assert!(empty.ok && empty.segments.is_empty());
    publish_segment(&store, &full, 10, 1, (10, 15), &[11, 12]).await;
    let s2 = publish_segment(&store, &full, 10, 2, (15, 20), &[16]).await;
    publish_segment(&store, &full, 10, 3, (20, 25), &[21]).await;
    let report = verify_chain(&store, &Manifest::name_for(&full), &ids)
        .await
        .unwrap();
    assert!(report.ok, "{:?}", report.problems);
    assert_eq!((report.after_revision, report.to_revision), (10, 25));
    assert!(
        report
            .segments
            .iter()
            .all(|s| s.stored_ok && s.records_checked)
    );

    let path = dir.path().join(&s2.object);
    let mut stored = std::fs::read(&path).unwrap();
    let at = stored.len() / 2;
    stored[at] ^= 0x40;
    std::fs::write(&path, stored).unwrap();
    let report = verify_chain(&store, &full, &ids).await.unwrap();
    assert!(!report.ok);
    assert_eq!(report.to_revision, 15, "verified up to segment 1");
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(
        report.problems[0].contains("segment 2") && report.problems[0].contains("SHA-256"),
        "{:?}",
        report.problems
    );
    assert!(!report.segments[1].stored_ok);

    store.delete(&Manifest::name_for(&s2.object)).await.unwrap();
    store.delete(&s2.object).await.unwrap();
    let report = verify_chain(&store, &full, &ids).await.unwrap();
    assert!(!report.ok);
    assert_eq!(report.problems, ["segment 2 is missing"]);
    assert_eq!(report.to_revision, 15);
    let err = verify_chain(
        &store,
        &crate::delta::delta_object_name(&full, 1, 10, 15, false),
        &ids,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("verify its full backup"), "{err}");
}

#[tokio::test]
async fn verify_checks_a_segments_reach_against_its_records_and_reports_a_clock_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let full = publish_full(&store, 1, 10).await;
    let ids = Identities::none();
    publish_segment(&store, &full, 10, 1, (10, 15), &[11, 15]).await;
    // The last segment is empty, as `backup run` publishes one when nothing changed; its
    // manifest is then edited to claim the largest revision there is.
    let last = publish_segment(&store, &full, 10, 2, (15, 15), &[]).await;
    let report = verify_chain(&store, &full, &ids).await.unwrap();
    assert!(report.ok, "{:?}", report.problems);
    assert!(report.clock_steps.is_empty(), "{:?}", report.clock_steps);
    let mut forged = last.clone();
    forged.to_revision = i64::MAX;
    store
        .put_small(
            &Manifest::name_for(&last.object),
            bytes::Bytes::from(forged.to_json()),
        )
        .await
        .unwrap();
    let report = verify_chain(&store, &full, &ids).await.unwrap();
    assert!(!report.ok);
    assert_eq!(
        report.to_revision, 15,
        "verified up to what the records prove"
    );
    assert!(
        report.problems[0].contains(&format!(
            "its manifest says it reaches revision {}, but its records end at revision 15",
            i64::MAX
        )),
        "{:?}",
        report.problems
    );

    // A chain whose stamps go back (segment 2 opened 20 s before segment 1's mark): still
    // ok, and the step is reported.
    let other = publish_full(&store, 1, 30).await;
    publish_segment(&store, &other, 30, 1, (30, 35), &[31, 35]).await;
    let mut stepped = publish_segment(&store, &other, 30, 2, (35, 40), &[36, 40]).await;
    stepped.from_time = chrono::DateTime::<Utc>::from_timestamp_millis(1_796_000_380_000).unwrap();
    store
        .put_small(
            &Manifest::name_for(&stepped.object),
            bytes::Bytes::from(stepped.to_json()),
        )
        .await
        .unwrap();
    let report = verify_chain(&store, &other, &ids).await.unwrap();
    assert!(report.ok, "{:?}", report.problems);
    let at: Vec<i64> = report.clock_steps.iter().map(|s| s.revision).collect();
    assert_eq!(at, [35], "{:?}", report.clock_steps);
    assert_eq!(report.clock_steps[0].back_ms(), 20_000);
}

#[tokio::test]
async fn a_segment_of_a_newer_format_breaks_the_chain_saying_to_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    let full = publish_full(&store, 1, 10).await;
    publish_segment(&store, &full, 10, 1, (10, 15), &[11]).await;
    let newer = publish_segment(&store, &full, 10, 2, (15, 20), &[16]).await;
    publish_segment(&store, &full, 10, 3, (20, 25), &[21]).await;
    let name = Manifest::name_for(&newer.object);
    let mut json: serde_json::Value =
        serde_json::from_slice(&store.get_small(&name).await.unwrap()).unwrap();
    json["format_version"] = 99.into();
    store
        .put_small(&name, bytes::Bytes::from(json.to_string()))
        .await
        .unwrap();
    let catalog = list_backups(&store).await.unwrap();
    let chain = catalog.backups[0].chain.clone().unwrap();
    assert!(!chain.continuous);
    assert_eq!(chain.problems[0], "segment 2 is missing");
    assert!(
        chain.problems[1].contains("cannot be read")
            && chain.problems[1].contains("upgrade etcdops"),
        "{:?}",
        chain.problems
    );
}
