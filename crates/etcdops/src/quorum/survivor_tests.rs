//! Unit tests of the survivor choice.

use etcd_data::SnapPosition;

use super::super::testing::{inspection, member};
use super::*;

fn kind(result: Result<SurvivorChoice, Refusal>) -> (RefusalKind, String) {
    let refusal = result.unwrap_err();
    (refusal.kind, refusal.message)
}

#[test]
fn the_member_with_the_most_up_to_date_log_wins() {
    let a = member("a", &[(2, 1)], 100, 90, 80);
    let b = member("b", &[(2, 1)], 120, 118, 110);
    let c = member("c", &[(2, 1)], 95, 95, 85);
    let choice = choose_survivor(&[a, b, c]).unwrap();
    assert_eq!(choice.survivor, "b");
    assert_eq!(choice.rejoin, ["a", "c"]);
    assert_eq!(choice.min_revision, 110);
    assert!(
        choice
            .reason
            .contains("most up-to-date log (last entry term 2, index 120; committed (2, 118))"),
        "{}",
        choice.reason
    );
    let a = &choice.candidates[0];
    assert_eq!((a.committed_term, a.committed_index), (Some(2), Some(90)));
    assert!(
        a.why_not_chosen
            .as_deref()
            .unwrap()
            .contains("behind b's (2, 120)")
    );
    assert!(choice.candidates[1].chosen && choice.candidates[1].why_not_chosen.is_none());
    assert_eq!(choice.candidates[1].committed_entries_beyond_db, Some(3));
}

#[test]
fn a_higher_committed_term_beats_a_longer_log() {
    // a appended more entries in term 3 but b committed further, in term 4: a's extra
    // entries were never committed (force-new-cluster drops them).
    let a = member("a", &[(3, 1)], 140, 100, 90);
    let b = member("b", &[(3, 1), (4, 101)], 105, 105, 95);
    assert_eq!(choose_survivor(&[a, b]).unwrap().survivor, "b");
    // Ranked term first: (4, 90) is above (3, 100).
    let mut x = member("x", &[(3, 1)], 100, 100, 1);
    let mut y = member("y", &[(4, 1)], 90, 90, 1);
    let (x, y) = (inspection(&mut x).clone(), inspection(&mut y).clone());
    assert_eq!(better(("y", &y), ("x", &x)), Ordering::Less);
}

#[test]
fn a_longer_log_of_the_same_term_beats_a_higher_saved_commit() {
    // The leader died after b acknowledged 101 and 102 but before a learned 101 was
    // committed; a saved commit 101, b saved 100. Both logs hold term 2 up to their end, so
    // b's holds a's; the recovery commits b's whole log, keeping 102 too.
    let a = member("a", &[(2, 1)], 101, 101, 90);
    let b = member("b", &[(2, 1)], 102, 100, 90);
    let choice = choose_survivor(&[a, b]).unwrap();
    assert_eq!(choice.survivor, "b");
    assert!(
        choice.candidates[0]
            .why_not_chosen
            .as_deref()
            .unwrap()
            .contains("its log ends at (2, 101), behind b's (2, 102)"),
        "{:?}",
        choice.candidates[0]
    );
}

#[test]
fn ties_go_to_the_longer_log_then_the_newer_db_then_the_name() {
    let a = member("a", &[(2, 1)], 100, 100, 50);
    let b = member("b", &[(2, 1)], 102, 100, 40);
    let choice = choose_survivor(&[a.clone(), b]).unwrap();
    assert_eq!(choice.survivor, "b");
    assert!(
        choice.reason.contains("most up-to-date log"),
        "{}",
        choice.reason
    );
    // The same log end: the higher saved commit.
    let d = member("d", &[(2, 1)], 100, 98, 50);
    let choice = choose_survivor(&[d, a.clone()]).unwrap();
    assert_eq!(choice.survivor, "a");
    assert!(
        choice
            .reason
            .contains("highest committed (term, index): (2, 100)"),
        "{}",
        choice.reason
    );
    let c = member("c", &[(2, 1)], 100, 100, 60);
    assert_eq!(choose_survivor(&[a.clone(), c]).unwrap().survivor, "c");
    let z = member("z", &[(2, 1)], 100, 100, 50);
    let choice = choose_survivor(&[z, a]).unwrap();
    assert_eq!(choice.survivor, "a");
    assert!(
        choice.reason.contains("chosen by name"),
        "{}",
        choice.reason
    );
}

#[test]
fn split_history_is_refused_naming_the_member_to_keep() {
    // Both committed index 50, in term 3 on a and in term 4 on b; they part at 40, where
    // a's term 3 begins and b is still in term 2.
    let a = member("a", &[(2, 1), (3, 40)], 60, 60, 50);
    let b = member("b", &[(2, 1), (4, 45)], 55, 50, 45);
    let (kind, message) = kind(choose_survivor(&[a, b]));
    assert_eq!(
        kind,
        RefusalKind::SplitHistory {
            keep: "b".into(),
            other: "a".into(),
            index: 40
        }
    );
    assert!(message.contains("keep b (committed term 4"), "{message}");
    assert!(
        message.contains("restore the cluster from a backup"),
        "{message}"
    );
    // Agreeing at the common committed index is no split, even if later terms differ.
    let a = member("a", &[(2, 1), (3, 46)], 60, 45, 50);
    let b = member("b", &[(2, 1), (4, 46)], 55, 50, 45);
    assert_eq!(
        choose_survivor(&[a, b]).unwrap().survivor,
        "b",
        "index 45 is term 2 on both"
    );
}

#[test]
fn the_same_term_numbers_from_different_indexes_are_a_split() {
    // After a force-new-cluster, a's term 3 began at 40, b's at 35: index 37 is term 2
    // on a and term 3 on b, though both are in term 3 at the common commit 50.
    let a = member("a", &[(2, 1), (3, 40)], 70, 70, 60);
    let b = member("b", &[(2, 1), (3, 35)], 50, 50, 45);
    let (kind, message) = kind(choose_survivor(&[a, b]));
    assert!(
        matches!(kind, RefusalKind::SplitHistory { index: 35, .. }),
        "{kind:?}"
    );
    assert!(message.contains("term 2 on"), "{message}");
}

#[test]
fn a_common_index_under_a_snapshot_compares_with_the_snapshot_term() {
    // a's WAL starts after its snapshot at index 80 (term 3): index 70 is term 3 or
    // older there; b says term 5 covers it: split.
    let mut a = member("a", &[(3, 81)], 100, 100, 90);
    inspection(&mut a).wal.snapshot = SnapPosition { index: 80, term: 3 };
    let b = member("b", &[(2, 1), (5, 60)], 70, 70, 60);
    let (kind, _) = kind(choose_survivor(&[a.clone(), b]));
    assert!(matches!(kind, RefusalKind::SplitHistory { index: 70, .. }));
    // b's term 2 at index 70 fits under a's snapshot: a is chosen.
    let b = member("b", &[(2, 1)], 70, 70, 60);
    assert_eq!(choose_survivor(&[a, b]).unwrap().survivor, "a");
}

#[test]
fn members_of_different_clusters_are_refused() {
    let a = member("a", &[(2, 1)], 100, 100, 50);
    let mut b = member("b", &[(3, 1)], 10, 10, 5);
    inspection(&mut b).wal.cluster_id = "c2".into();
    let (kind, message) = kind(choose_survivor(&[a, b]));
    assert_eq!(
        kind,
        RefusalKind::ClusterMismatch {
            keep: "b".into(),
            other: "a".into()
        }
    );
    assert!(
        message.contains("different clusters (c2 and c1)"),
        "{message}"
    );
}

#[test]
fn a_running_member_is_never_chosen_and_refuses_the_plan() {
    let a = member("a", &[(2, 1)], 100, 100, 50);
    let mut b = member("b", &[(2, 1)], 120, 120, 60);
    inspection(&mut b).locked = true;
    let refusal = choose_survivor(&[a, b]).unwrap_err();
    assert_eq!(
        refusal.kind,
        RefusalKind::Locked {
            names: vec!["b".into()]
        }
    );
    assert!(
        refusal.message.contains("stop etcd on b first"),
        "{}",
        refusal.message
    );
    assert!(refusal.candidates[1].locked);
}

#[test]
fn a_learner_is_never_chosen() {
    let a = member("a", &[(2, 1)], 100, 90, 50);
    let mut b = member("b", &[(2, 1)], 120, 120, 60);
    inspection(&mut b).is_learner = true;
    let choice = choose_survivor(&[a, b.clone()]).unwrap();
    assert_eq!(choice.survivor, "a");
    assert!(
        choice.candidates[1]
            .why_not_chosen
            .as_deref()
            .unwrap()
            .contains("learner")
    );
    let (kind, _) = kind(choose_survivor(&[b]));
    assert_eq!(kind, RefusalKind::NoData);
}

#[test]
fn a_member_that_could_not_be_inspected_refuses_the_plan_until_declared_lost() {
    // Its host may be unreachable from here while it serves in a quorum with others.
    let unreachable = Candidate {
        name: "b".into(),
        data: CandidateData::Unreadable("the host was unreachable".into()),
    };
    let c = member("c", &[(2, 1)], 10, 10, 5);
    let refusal = choose_survivor(&[unreachable, c.clone()]).unwrap_err();
    assert_eq!(
        refusal.kind,
        RefusalKind::NotInspected {
            names: vec!["b".into()]
        }
    );
    assert!(
        refusal.message.contains("b: the host was unreachable")
            && refusal.message.contains("declare it lost"),
        "{}",
        refusal.message
    );
    let lost = Candidate {
        name: "b".into(),
        data: CandidateData::Lost,
    };
    let choice = choose_survivor(&[lost, c]).unwrap();
    assert_eq!(
        (choice.survivor.as_str(), choice.rejoin.as_slice()),
        ("c", &["b".to_string()][..])
    );
}

#[test]
fn nothing_with_data_is_refused_pointing_to_a_backup_restore() {
    let absent = Candidate {
        name: "a".into(),
        data: CandidateData::Absent,
    };
    let broken = Candidate {
        name: "b".into(),
        data: CandidateData::Lost,
    };
    let refusal = choose_survivor(&[absent.clone(), broken.clone()]).unwrap_err();
    assert_eq!(refusal.kind, RefusalKind::NoData);
    assert!(
        refusal.message.contains("from a backup"),
        "{}",
        refusal.message
    );
    assert!(
        refusal.candidates[1]
            .why_not_chosen
            .as_deref()
            .unwrap()
            .contains("declared lost")
    );
    assert!(choose_survivor(&[]).is_err());
    // With one readable member, it is chosen and the others rejoin.
    let c = member("c", &[(2, 1)], 10, 10, 5);
    let choice = choose_survivor(&[absent, broken, c]).unwrap();
    assert_eq!(choice.survivor, "c");
    assert_eq!(choice.rejoin, ["a", "b"]);
    assert!(
        choice.reason.contains("only voting member"),
        "{}",
        choice.reason
    );
}
