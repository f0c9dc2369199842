use super::*;
use crate::catalog::tests::local_store;
use crate::delta::test_fixtures::{full_entry, full_with_segments};
use etcd_core::MemberId;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir);
    (dir, store)
}

fn error_text(e: RestoreError) -> String {
    let text = e.to_string();
    assert!(!text.contains('\n'), "one line: {text}");
    text
}

#[test]
fn the_newest_chain_is_chosen_and_a_full_backup_without_segments_is_not() {
    let (_dir, store) = store();
    let old = full_with_segments(0, 100, 3);
    let newer = full_with_segments(10, 200, 2);
    let bare = full_entry(20, 300);
    let backups = [bare.clone(), newer.clone(), old.clone()];
    let chosen = choose_chain(&store, &backups, &ConsolidateRequest::default()).unwrap();
    assert_eq!(chosen.object, newer.object);
    // Named: that one, by object name or manifest name.
    let named = ConsolidateRequest {
        chain: Some(Manifest::name_for(&old.object)),
        ..ConsolidateRequest::default()
    };
    assert_eq!(
        choose_chain(&store, &backups, &named).unwrap().object,
        old.object
    );
    let missing = ConsolidateRequest {
        chain: Some("etcd-abc/nope.db.zst".into()),
        ..ConsolidateRequest::default()
    };
    let text = error_text(choose_chain(&store, &backups, &missing).unwrap_err());
    assert!(
        text.contains("no complete full backup named 'etcd-abc/nope.db.zst'"),
        "{text}"
    );
    // No chain at all.
    let text =
        error_text(choose_chain(&store, &[bare], &ConsolidateRequest::default()).unwrap_err());
    assert!(text.contains("holds no chain to compact"), "{text}");
}

#[test]
fn an_incomplete_full_backup_is_never_chosen() {
    let (_dir, store) = store();
    let mut newest = full_with_segments(10, 200, 2);
    newest.complete = false;
    let old = full_with_segments(0, 100, 1);
    let backups = [newest, old.clone()];
    let chosen = choose_chain(&store, &backups, &ConsolidateRequest::default());
    assert_eq!(chosen.unwrap().object, old.object);
}

#[test]
fn a_store_of_several_clusters_needs_the_clusters_folder() {
    let (_dir, store) = store();
    let a = full_with_segments(0, 100, 1);
    let mut b = full_with_segments(1, 100, 1);
    b.manifest.cluster_id = MemberId(0xdef);
    let text =
        error_text(choose_chain(&store, &[a, b], &ConsolidateRequest::default()).unwrap_err());
    assert!(text.contains("holds backups of 2 clusters"), "{text}");
    assert!(text.contains("name the chain to compact"), "{text}");
}

#[test]
fn a_chain_reaches_its_last_covered_segment_and_a_break_is_a_warning() {
    let full = full_with_segments(0, 100, 3);
    let reached = reach(&full).unwrap();
    assert_eq!(reached.segments.len(), 3);
    assert_eq!(reached.to_revision, 103);
    assert!(reached.warning.is_none());

    let mut broken = full_with_segments(0, 100, 3);
    let chain = broken.chain.as_mut().unwrap();
    chain.covered_segments = 1;
    chain.to_revision = 101;
    chain.continuous = false;
    chain.problems = vec!["segment 2 is missing".into()];
    let reached = reach(&broken).unwrap();
    assert_eq!(reached.segments.len(), 1);
    assert_eq!(reached.to_revision, 101);
    let warning = reached.warning.unwrap();
    assert!(warning.contains("segment 2 is missing"), "{warning}");
    assert!(
        warning.contains("compacted up to revision 101"),
        "{warning}"
    );

    let text = error_text(reach(&full_entry(0, 100)).err().unwrap());
    assert!(text.contains("nothing to compact"), "{text}");
}

#[test]
fn a_chain_compacted_to_the_same_revision_is_found_and_a_longer_chain_is_not() {
    let full = full_with_segments(0, 100, 3);
    let mut copy = full_entry(5, 103);
    copy.manifest.compacted_from = Some(CompactedFrom {
        full_backup: full.object.clone(),
        full_revision: 100,
        last_sequence: 3,
        to_revision: 103,
        to_time: copy.manifest.created_at,
        highest_stamp: None,
    });
    let backups = [copy.clone(), full.clone()];
    assert_eq!(
        already_compacted(&backups, &full, 103).map(|b| &b.object),
        Some(&copy.object)
    );
    // The chain grew since: a new compaction.
    assert!(already_compacted(&backups, &full, 110).is_none());
    // An incomplete copy (object missing) does not count.
    let mut gone = copy.clone();
    gone.complete = false;
    assert!(already_compacted(&[gone, full.clone()], &full, 103).is_none());
}

#[test]
fn the_copy_is_stored_as_its_source_is() {
    let mut source = crate::manifest::tests::sample();
    source.compression_level = Some(7);
    let (plain, warning) = save_request_like(&source).unwrap();
    assert_eq!(warning, None);
    assert_eq!(plain.compression, Compression::Zstd);
    assert_eq!(plain.level, 7);
    assert!(plain.encrypt_to.is_empty());
    assert!(plain.verify_after_upload);
    assert_eq!(plain.labels, source.labels);

    let key = age::x25519::Identity::generate().to_public().to_string();
    source.compression = Compression::None;
    source.compression_level = None;
    source.encryption = Some(crate::crypt::Encryption {
        scheme: "age".into(),
        recipients: vec![key.clone()],
    });
    let (encrypted, _) = save_request_like(&source).unwrap();
    assert_eq!(encrypted.compression, Compression::None);
    assert_eq!(encrypted.encrypt_to.public_keys(), vec![key]);
}

#[test]
fn a_crafted_compression_level_is_bounded_and_said() {
    let mut source = crate::manifest::tests::sample();
    for (level, used) in [
        (99_999, DEFAULT_ZSTD_LEVEL),
        (0, DEFAULT_ZSTD_LEVEL),
        (-5, DEFAULT_ZSTD_LEVEL),
        (22, DEFAULT_ZSTD_LEVEL),
        (19, 19),
        (1, 1),
    ] {
        source.compression_level = Some(level);
        let (request, warning) = save_request_like(&source).unwrap();
        assert_eq!(request.level, used, "level {level}");
        // What the save pipeline accepts, so nothing crafted reaches zstd.
        request.validate().unwrap();
        assert_eq!(
            warning.is_some(),
            used != level,
            "level {level}: {warning:?}"
        );
        if let Some(warning) = warning {
            assert!(
                warning.contains(&format!("records zstd level {level}, outside 1..=19")),
                "{warning}"
            );
        }
    }
}

#[tokio::test]
async fn a_store_without_a_chain_is_refused_and_nothing_is_written() {
    let (dir, store) = store();
    crate::catalog::tests::publish_full(&store, 1, 10).await;
    let before = crate::catalog::tests::names(&store).await;
    let work = tempfile::tempdir().unwrap();
    let request = ConsolidateRequest {
        work_dir: Some(work.path().to_path_buf()),
        ..ConsolidateRequest::default()
    };
    let e = consolidate_chain(
        &store,
        &request,
        &Identities::none(),
        &crate::progress::NoProgress,
    )
    .await
    .unwrap_err();
    assert!(error_text(e).contains("holds no chain to compact"));
    assert_eq!(crate::catalog::tests::names(&store).await, before);
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    drop(dir);
}

#[tokio::test]
async fn a_damaged_full_backup_fails_the_compaction_and_leaves_the_chain_and_no_backup() {
    // The fixture's full backup is not a db: opening it for the replay fails its check.
    let (_dir, store) = store();
    let full = crate::catalog::tests::publish_full(&store, 1, 10).await;
    crate::delta::publish_segment(&store, &full, 10, 1, (10, 12), &[11, 12]).await;
    let before = crate::catalog::tests::names(&store).await;
    let work = tempfile::tempdir().unwrap();
    let request = ConsolidateRequest {
        work_dir: Some(work.path().to_path_buf()),
        ..ConsolidateRequest::default()
    };
    let result = consolidate_chain(
        &store,
        &request,
        &Identities::none(),
        &crate::progress::NoProgress,
    )
    .await;
    assert!(result.is_err());
    assert_eq!(crate::catalog::tests::names(&store).await, before);
    assert_eq!(
        std::fs::read_dir(work.path()).unwrap().count(),
        0,
        "the work dir is removed"
    );
}

#[test]
fn a_full_work_dir_is_told_as_such_and_other_errors_are_left_alone() {
    let full = RestoreError::Io {
        path: "/w/x".into(),
        source: std::io::Error::from_raw_os_error(28),
    };
    let told = out_of_room(full, Path::new("/w")).to_string();
    assert!(told.contains("/w ran out of space"), "{told}");
    assert!(told.contains("more room"), "{told}");
    let other = RestoreError::Io {
        path: "/w/x".into(),
        source: std::io::Error::from_raw_os_error(13),
    };
    let kept = out_of_room(other, Path::new("/w")).to_string();
    assert!(!kept.contains("ran out of space"), "{kept}");
}

#[tokio::test]
async fn a_preview_names_the_chain_its_segments_and_revision_and_writes_nothing() {
    let (_dir, store) = store();
    let full = crate::catalog::tests::publish_full(&store, 1, 10).await;
    crate::delta::publish_segment(&store, &full, 10, 1, (10, 12), &[11, 12]).await;
    let before = crate::catalog::tests::names(&store).await;
    let preview = preview_consolidation(&store, &ConsolidateRequest::default())
        .await
        .unwrap();
    assert!(preview.changed);
    assert_eq!(preview.source, full);
    assert_eq!(preview.source_revision, 10);
    assert_eq!(preview.segments, 1);
    assert_eq!(preview.to_revision, 12);
    assert!(preview.compacted.is_none());
    assert!(preview.warnings.is_empty());
    assert_eq!(crate::catalog::tests::names(&store).await, before);
}

#[tokio::test]
async fn a_preview_refuses_what_a_compaction_refuses() {
    let (_dir, store) = store();
    crate::catalog::tests::publish_full(&store, 1, 10).await;
    let e = preview_consolidation(&store, &ConsolidateRequest::default())
        .await
        .unwrap_err();
    assert!(error_text(e).contains("holds no chain to compact"));
    let named = ConsolidateRequest {
        chain: Some("nothing.db.zst".into()),
        ..ConsolidateRequest::default()
    };
    let e = preview_consolidation(&store, &named).await.unwrap_err();
    assert!(error_text(e).contains("no complete full backup named"));
}
