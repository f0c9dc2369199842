use super::*;
use crate::delta::format::tests::encode as segment;
use crate::delta::format::{KeyValueFields, revision_key};

fn put(rev: i64, key: &[u8], lease: i64) -> DeltaRecord {
    DeltaRecord::Change {
        key: revision_key(rev, 0, false),
        value: KeyValueFields {
            key,
            create_revision: rev,
            mod_revision: rev,
            version: 1,
            value: b"v",
            lease,
        }
        .encode(),
    }
}

/// The manifest of segment `sequence`, (`after`, `to`], with `changes`, opened at 0 ms.
fn manifest(sequence: u64, after: i64, to: i64, changes: u64) -> DeltaManifest {
    let mut m = crate::delta::manifest::tests::sample("full", sequence, after, to);
    m.changes = changes;
    m.from_time = DateTime::<Utc>::from_timestamp_millis(0).unwrap();
    m.to_time = m.from_time;
    m
}

fn mark(revision: i64, unix_ms: i64) -> DeltaRecord {
    DeltaRecord::Mark { revision, unix_ms }
}

#[test]
fn a_replay_is_a_contiguous_prefix_of_the_chain_and_never_claims_past_its_records() {
    let s1 = segment(&[put(11, b"a", 0), mark(11, 1_000)]);
    let s3 = segment(&[put(13, b"c", 0), mark(13, 3_000)]);
    // Segment 2 left out (the bug of a plan by `from_time` alone): a hole, refused.
    let mut replay = DeltaReplay::new("full", PointInTime::Revision(13), 10);
    replay
        .add_segment(&manifest(1, 10, 11, 1), "s1", Some(&s1), None)
        .unwrap();
    let err = replay
        .add_segment(&manifest(3, 12, 13, 1), "s3", Some(&s3), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "it is segment 3 after revision 12, but the replay needs segment 2 after revision 11"
        ),
        "{err}"
    );
    // A segment whose revisions overlap the one before (its sequence right): refused.
    let err = replay
        .add_segment(&manifest(2, 10, 13, 1), "s2", Some(&s3), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("hole"), "{err}");
    // An empty segment need not be read; one whose manifest claims changes must be.
    replay
        .add_segment(&manifest(2, 11, 11, 0), "s2", None, None)
        .unwrap();
    let err = replay
        .add_segment(&manifest(3, 11, 13, 1), "s3", None, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("it was not read"), "{err}");
    // The manifest claims more than the records reach: refused.
    let err = replay
        .add_segment(&manifest(3, 11, 99, 1), "s3", Some(&s3), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("it reaches revision 99, but its records end at revision 13"),
        "{err}"
    );
    // A target past what was added: refused, naming where the chain ends.
    let err = replay.check_reach().unwrap_err().to_string();
    assert!(err.contains("revision 13 is past the end"), "{err}");
    assert!(err.contains("(revision 11)"), "{err}");
    replay
        .add_segment(&manifest(3, 11, 13, 1), "s3", Some(&s3), None)
        .unwrap();
    replay.check_reach().unwrap();
    assert_eq!(replay.reach(), 13);
    assert_eq!(replay.summary.segments, ["s1", "s3"], "s2 was not read");
    // A segment 1 that does not start at the full backup's revision: refused.
    let mut replay = DeltaReplay::new("full", PointInTime::Revision(13), 9);
    assert!(
        replay
            .add_segment(&manifest(1, 10, 11, 1), "s1", Some(&s1), None)
            .is_err()
    );
}

#[test]
fn a_time_shown_twice_maps_to_its_first_showing_and_the_step_is_reported() {
    let at = |ms| DateTime::<Utc>::from_timestamp_millis(ms).unwrap();
    // The clock reaches 30 s at revision 13, goes back 20 s, and runs on.
    let s1 = segment(&[
        put(11, b"a", 0),
        mark(11, 10_000),
        put(12, b"b", 0),
        mark(12, 20_000),
        put(13, b"c", 0),
        mark(13, 30_000),
    ]);
    let s2 = segment(&[
        put(14, b"d", 0),
        mark(14, 12_000),
        put(15, b"e", 0),
        mark(15, 22_000),
        put(16, b"f", 0),
        mark(16, 40_000),
    ]);
    let mut m2 = manifest(2, 13, 16, 3);
    m2.from_time = at(30_500);
    let build = |ms| {
        let mut replay =
            DeltaReplay::new("full", PointInTime::Time(at(ms)), 10).starting_at(at(0), None);
        replay
            .add_segment(&manifest(1, 10, 13, 3), "s1", Some(&s1), None)
            .unwrap();
        replay.add_segment(&m2, "s2", Some(&s2), None).unwrap();
        replay.note_later(&[]);
        replay.check_reach().unwrap();
        replay
    };
    // 21 s was shown between revisions 12 and 13 and again between 14 and 15: the first
    // showing. Revision 14 was stamped earlier than 21 s after the step.
    let replay = build(21_000);
    assert_eq!(replay.target_revision(), 12);
    assert_eq!(replay.summary.target_revision, 12);
    assert_eq!(replay.summary.clock_steps.len(), 1);
    assert_eq!(replay.summary.clock_steps[0].revision, 14);
    assert_eq!(replay.summary.clock_steps[0].back_ms(), 18_500);
    assert_eq!(
        replay.summary.time_seen_again,
        Some(TimeSeenAgain {
            first_revision: 14,
            last_revision: 14
        })
    );
    // After the step's window: unambiguous, the step still said.
    let replay = build(35_000);
    assert_eq!(replay.target_revision(), 15);
    assert!(replay.summary.time_seen_again.is_none());
    assert_eq!(replay.summary.clock_steps.len(), 1);
    // Before the first mark: the full backup's revision; after the last: the last.
    assert_eq!(build(5_000).target_revision(), 10);
    assert_eq!(build(50_000).target_revision(), 16);
    // Later stamps (manifests not replayed) never move the target, but name the repeat.
    let mut replay =
        DeltaReplay::new("full", PointInTime::Time(at(15_000)), 10).starting_at(at(0), None);
    replay
        .add_segment(&manifest(1, 10, 13, 3), "s1", Some(&s1), None)
        .unwrap();
    replay.note_later(&[(13, at(30_500)), (16, at(14_000))]);
    assert_eq!(replay.target_revision(), 11);
    assert_eq!(replay.summary.time_seen_again.unwrap().last_revision, 16);
    // No stamps for a revision restore.
    let mut by_revision = DeltaReplay::new("full", PointInTime::Revision(16), 10);
    by_revision
        .add_segment(&manifest(1, 10, 13, 3), "s1", Some(&s1), None)
        .unwrap();
    by_revision.add_segment(&m2, "s2", Some(&s2), None).unwrap();
    assert!(by_revision.summary.clock_steps.is_empty());
}

#[test]
fn a_replay_stops_at_the_target_skips_the_full_and_plans_leases() {
    let first = segment(&[
        put(10, b"a", 0),
        DeltaRecord::Lease { id: 7, ttl: 30 },
        put(11, b"b", 7),
        DeltaRecord::Mark {
            revision: 11,
            unix_ms: 1_000,
        },
    ]);
    let second = segment(&[
        put(12, b"c", 9),
        DeltaRecord::Mark {
            revision: 12,
            unix_ms: 2_000,
        },
        put(13, b"d", 0),
    ]);
    let build = |point| {
        let mut replay = DeltaReplay::new("full", point, 9);
        replay
            .add_segment(&manifest(1, 9, 11, 2), "s1", Some(&first), None)
            .unwrap();
        replay
            .add_segment(&manifest(2, 11, 13, 2), "s2", Some(&second), None)
            .unwrap();
        replay
    };
    let mut replay = build(PointInTime::Revision(12));
    let plan = replay.plan_leases(10, &BTreeSet::new()).unwrap();
    assert_eq!(plan.recreate, BTreeMap::from([(7, 30)]));
    assert_eq!(plan.detach, BTreeSet::from([9]));
    let detach = plan.detach;
    let mut changes = replay.changes(10, &detach);
    let keys: Vec<(Vec<u8>, i64)> = changes
        .by_ref()
        .map(|item| item.map(|(key, value)| (key, key_value_lease(&value))))
        .collect::<std::result::Result<_, _>>()
        .unwrap();
    let mut summary = replay.summary.clone();
    changes.record_in(&mut summary);
    // Revision 10 is in the full backup already; 13 is past the target.
    assert_eq!(
        keys,
        [
            (revision_key(11, 0, false), 7),
            (revision_key(12, 0, false), 0)
        ]
    );
    assert_eq!(summary.changes_applied, 2);
    assert_eq!(summary.changes_detached, 1);

    let at = DateTime::<Utc>::from_timestamp_millis(1_500).unwrap();
    assert_eq!(build(PointInTime::Time(at)).target_revision(), 11);
    let before = DateTime::<Utc>::from_timestamp_millis(10).unwrap();
    assert_eq!(build(PointInTime::Time(before)).target_revision(), 9);
}

#[test]
fn a_lease_whose_keys_were_deleted_before_the_target_is_not_recreated() {
    let tombstone = DeltaRecord::Change {
        key: revision_key(12, 0, true),
        value: KeyValueFields {
            key: b"b",
            ..Default::default()
        }
        .encode(),
    };
    let segment = segment(&[
        DeltaRecord::Lease { id: 7, ttl: 30 },
        put(11, b"b", 7),
        tombstone,
        DeltaRecord::Lease { id: 8, ttl: 60 },
        put(13, b"c", 8),
    ]);
    let mut replay = DeltaReplay::new("full", PointInTime::Revision(13), 10);
    replay
        .add_segment(&manifest(1, 10, 13, 3), "s1", Some(&segment), None)
        .unwrap();
    let plan = replay.plan_leases(10, &BTreeSet::new()).unwrap();
    assert_eq!(plan.recreate, BTreeMap::from([(8, 60)]));
    assert!(plan.detach.is_empty());
    // A lease the db holds already is left alone; without a leases record nothing is removed.
    let plan = replay.plan_leases(10, &BTreeSet::from([8, 3])).unwrap();
    assert!(plan.recreate.is_empty());
    assert!(plan.remove.is_empty());
}

#[test]
fn the_last_leases_record_at_or_before_the_target_decides_the_lease_bucket() {
    // The db (revision 10) holds leases 1 and 2. Lease 3 is granted with no key (seen at 11),
    // lease 1 is revoked (seen at 12), lease 4 is granted and used at 13 but not yet seen.
    let segment = segment(&[
        put(11, b"a", 0),
        DeltaRecord::Leases {
            revision: 11,
            leases: vec![(1, 10), (2, 20), (3, 30)],
        },
        put(12, b"b", 0),
        DeltaRecord::Leases {
            revision: 12,
            leases: vec![(2, 20), (3, 30)],
        },
        DeltaRecord::Lease { id: 4, ttl: 40 },
        put(13, b"c", 4),
        DeltaRecord::Leases {
            revision: 14,
            leases: vec![(3, 30), (4, 40)],
        },
        put(14, b"d", 0),
    ]);
    let plan_at = |target: i64| {
        let mut replay = DeltaReplay::new("full", PointInTime::Revision(target), 10);
        replay
            .add_segment(&manifest(1, 10, 14, 4), "s1", Some(&segment), None)
            .unwrap();
        let plan = replay.plan_leases(10, &BTreeSet::from([1, 2])).unwrap();
        assert_eq!(
            replay.summary.leases_removed,
            plan.remove
                .iter()
                .map(|id| format!("{id:016x}"))
                .collect::<Vec<_>>()
        );
        plan
    };
    // Before any look: the db's leases as they are.
    let at10 = plan_at(10);
    assert!(at10.recreate.is_empty() && at10.remove.is_empty());
    let at11 = plan_at(11);
    assert_eq!(at11.recreate, BTreeMap::from([(3, 30)]));
    assert!(at11.remove.is_empty());
    let at12 = plan_at(12);
    assert_eq!(at12.remove, BTreeSet::from([1]));
    // Lease 4 is used by a live key at 13: recreated though no look has listed it yet.
    let at13 = plan_at(13);
    assert_eq!(at13.recreate, BTreeMap::from([(3, 30), (4, 40)]));
    assert_eq!(at13.remove, BTreeSet::from([1]));
    let at14 = plan_at(14);
    assert_eq!(at14.recreate, BTreeMap::from([(3, 30), (4, 40)]));
    assert_eq!(at14.remove, BTreeSet::from([1, 2]));
    assert!(at14.detach.is_empty());
}

#[test]
fn a_lease_a_live_key_uses_is_kept_whatever_a_look_said() {
    // A look listed while a revocation was being applied can miss a lease whose key is still
    // live at the target: the key keeps it.
    let segment = segment(&[
        put(11, b"a", 1),
        DeltaRecord::Leases {
            revision: 11,
            leases: Vec::new(),
        },
    ]);
    let mut replay = DeltaReplay::new("full", PointInTime::Revision(11), 10);
    replay
        .add_segment(&manifest(1, 10, 11, 1), "s1", Some(&segment), None)
        .unwrap();
    let plan = replay.plan_leases(10, &BTreeSet::from([1, 2])).unwrap();
    assert_eq!(plan.remove, BTreeSet::from([2]));
    assert!(plan.detach.is_empty() && plan.recreate.is_empty());
}

#[test]
fn lease_entries_encode_as_etcd_stores_them() {
    let (key, value) = lease_entry(0x1234, 60);
    assert_eq!(key, 0x1234i64.to_be_bytes());
    assert_eq!(value, [0x08, 0xb4, 0x24, 0x10, 60]);
}

#[test]
fn an_idle_segment_is_read_only_when_it_may_hold_a_lease_set() {
    let mut idle = manifest(4, 12, 12, 0);
    assert!(!segment_needs_reading(&idle));
    idle.format_version = crate::delta::DELTA_FORMAT_VERSION;
    assert!(segment_needs_reading(&idle));
}

/// A replay of revisions 11..=`to` (one change each, leased to 9 every third), in segments
/// of `per_segment` changes.
fn long_replay(to: i64, per_segment: i64) -> DeltaReplay {
    let mut replay = DeltaReplay::new("full", PointInTime::Revision(to), 10);
    let mut after = 10;
    let mut sequence = 1;
    while after < to {
        let end = (after + per_segment).min(to);
        let records: Vec<DeltaRecord> = (after + 1..=end)
            .map(|rev| {
                put(
                    rev,
                    format!("k{rev}").as_bytes(),
                    if rev % 3 == 0 { 9 } else { 0 },
                )
            })
            .collect();
        let bytes = segment(&records);
        let m = manifest(sequence, after, end, (end - after) as u64);
        replay
            .add_segment(&m, &format!("s{sequence}"), Some(&bytes), None)
            .unwrap();
        after = end;
        sequence += 1;
    }
    replay
}

#[test]
fn changes_handed_to_the_writer_are_all_the_changes_in_order_and_counted() {
    use etcd_data::restore::Replay;
    let mut replay = long_replay(5_010, 700);
    let detach = BTreeSet::from([9]);
    let mut written = Vec::new();
    let report = Replay::replay_into(&mut replay, 10, &detach, &mut |changes| {
        for change in changes {
            written.push(change?);
        }
        Ok(bbolt::AppendReport {
            appended: written.len() as u64,
            new_size: 0,
            last_key: written.last().map(|(k, _)| k.clone()),
        })
    })
    .unwrap();
    assert_eq!(report.appended, 5_000);
    let revisions: Vec<i64> = written
        .iter()
        .map(|(key, _)| parse_revision_key(key).unwrap().0)
        .collect();
    assert_eq!(revisions, (11..=5_010).collect::<Vec<_>>());
    assert!(written.iter().all(|(_, value)| key_value_lease(value) == 0));
    let summary = Replay::summary(&replay);
    assert_eq!(summary.changes_applied, 5_000);
    assert_eq!(
        summary.changes_detached,
        (11..=5_010).filter(|r| r % 3 == 0).count() as u64
    );
}

#[test]
fn a_writer_that_stops_on_an_error_ends_the_replay_with_it() {
    use etcd_data::restore::Replay;
    let mut replay = long_replay(50_010, 10_000);
    let before = replay.summary.clone();
    let err = Replay::replay_into(&mut replay, 10, &BTreeSet::new(), &mut |changes| {
        let _ = changes.take(10).count();
        Err(BoltError::Check {
            problems: vec!["the disk is full".into()],
        })
    })
    .unwrap_err();
    assert!(err.to_string().contains("the disk is full"), "{err}");
    assert_eq!(replay.summary, before);
}

#[test]
fn a_damaged_spooled_segment_fails_the_replay_as_reading_it_does() {
    use etcd_data::restore::Replay;
    let mut replay = long_replay(5_010, 2_000);
    // The second segment cut in the middle of a record.
    let len = replay.segments[1].metadata().unwrap().len();
    replay.segments[1].set_len(len / 2 + 3).unwrap();
    let detach = BTreeSet::new();
    let direct = replay
        .changes(10, &detach)
        .find_map(Result::err)
        .expect("reading the cut segment fails")
        .to_string();
    assert!(direct.contains("cut off"), "{direct}");
    let before = replay.summary.clone();
    let mut seen = 0;
    let err = Replay::replay_into(&mut replay, 10, &detach, &mut |changes| {
        for change in changes {
            change?;
            seen += 1;
        }
        Ok(bbolt::AppendReport {
            appended: seen,
            new_size: 0,
            last_key: None,
        })
    })
    .unwrap_err();
    assert_eq!(err.to_string(), direct);
    assert!((2_000..4_000).contains(&seen), "{seen}");
    assert_eq!(replay.summary, before);
}
