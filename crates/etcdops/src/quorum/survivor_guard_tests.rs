//! Survivor choices that would lose acknowledged writes or split the cluster, refused (found by
//! the red team of issue #22; each test failed on the code it was written against).
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use etcd_data::DbMember;

use super::survivor::RefusalKind;
use super::testing::{inspection, member};
use super::{Candidate, choose_survivor};

fn db_member(name: &str, id: &str) -> DbMember {
    DbMember {
        id: id.into(),
        name: name.into(),
        peer_urls: vec![format!("https://{name}:2380")],
        client_urls: vec![format!("https://{name}:2379")],
        is_learner: false,
    }
}

/// The WAL member ID `member()` gives a name.
fn id_of(candidate: &Candidate) -> String {
    candidate.inspection().unwrap().wal.member_id.clone()
}

/// A play limited to the one dead member (`--limit`, a short inventory, endpoints naming only
/// it): the live check cannot see the two members that still serve as a quorum, and forcing
/// the one given member makes a second cluster beside them, with the same cluster ID. The
/// survivor's own db lists them: members of the cluster that were neither inspected nor
/// declared lost must refuse the plan, as an uninspectable one does.
#[test]
fn members_of_the_cluster_that_were_not_given_refuse_the_plan() {
    let mut c = member("c", &[(2, 1)], 100, 100, 50);
    let c_id = id_of(&c);
    inspection(&mut c).db.members = vec![
        db_member("a", "aaa1"),
        db_member("b", "bbb2"),
        db_member("c", &c_id),
    ];
    let refusal = match choose_survivor(&[c]) {
        Ok(choice) => panic!(
            "forced {} alone although its membership names a and b, which were neither inspected nor declared lost (they may serve a quorum unseen): {}",
            choice.survivor, choice.reason
        ),
        Err(refusal) => refusal,
    };
    assert!(
        refusal.message.contains('a') && refusal.message.contains("lost"),
        "{}",
        refusal.message
    );
}

/// The same member killed before its db was first written (etcd commits its backend every
/// 100 ms): the db names no member, but its WAL's bootstrap changes name a, b and c. The
/// plan must refuse as it does when the db names them, never take the one given member for
/// the whole cluster.
#[test]
fn members_only_the_wal_names_that_were_not_given_refuse_the_plan() {
    use etcd_data::{MembershipChange, MembershipChangeKind};
    let mut c = member("c", &[(2, 1)], 100, 100, 0);
    let c_id = id_of(&c);
    let dir = inspection(&mut c);
    dir.db.members.clear();
    dir.db.consistent_index = 0;
    dir.committed_entries_beyond_db = 100;
    dir.wal.membership_changes = [("a", "aaa1"), ("b", "bbb2"), ("c", c_id.as_str())]
        .iter()
        .zip(1..)
        .map(|(&(name, id), index)| MembershipChange {
            index,
            kind: MembershipChangeKind::Add,
            member_id: id.to_string(),
            name: name.to_string(),
            peer_urls: vec![format!("https://{name}:2380")],
        })
        .collect();
    let refusal = match choose_survivor(&[c]) {
        Ok(choice) => panic!(
            "forced {} alone although its WAL names a and b as members: {}",
            choice.survivor, choice.reason
        ),
        Err(refusal) => refusal,
    };
    assert!(
        matches!(&refusal.kind, RefusalKind::NotGiven { names } if names == &["a", "b"]),
        "{}",
        refusal.message
    );
}

/// The recovery commits the survivor's whole log (`adopt_wal_tail`), so any index another
/// member committed that the survivor's log also holds must carry the same term there. Here b
/// committed 101..=120 in term 4 (acknowledged writes); a's log holds term 5 from 101 on, with
/// a saved commit of 100. Under raft's rules that cannot happen (a leader of term 5 holds
/// every entry committed in term 4): these are split histories. The split check compares
/// only up to the lower saved commit (100), so a is chosen, its tail committed, and b's
/// twenty acknowledged writes are dropped without a word. (Fixed by the red team:
/// `tail_refusal` in survivor.rs.)
#[test]
fn another_members_commits_the_survivors_tail_overwrites_are_a_split() {
    let a = member("a", &[(4, 1), (5, 101)], 130, 100, 90);
    let b = member("b", &[(4, 1)], 120, 120, 110);
    match choose_survivor(&[a, b]) {
        Ok(choice) => panic!(
            "chose {} and commits its tail over b's committed 101..=120 (term 4): {}",
            choice.survivor, choice.reason
        ),
        Err(refusal) => {
            assert_eq!(
                refusal.kind,
                RefusalKind::SplitHistory {
                    keep: "b".into(),
                    other: "a".into(),
                    index: 101
                }
            );
            assert!(
                refusal
                    .message
                    .contains("keep b (committed term 4, index 120)"),
                "{}",
                refusal.message
            );
        }
    }
}

/// The inventory says the host runs member `a`, but its data dir is member `b`'s (its WAL's
/// member ID is b's in the db membership: a dir copied or hosts' names swapped). Forcing it
/// makes a one-member cluster with b's identity and peer URLs on a's host; the rejoin of `b`
/// then removes "its stale entry" by b's peer URL, which is the survivor itself. Refuse,
/// naming both.
#[test]
fn a_data_dir_of_another_member_than_the_one_named_refuses_the_plan() {
    let mut on_a = member("b", &[(2, 1)], 100, 100, 50);
    on_a.name = "a".into();
    let c = member("c", &[(2, 1)], 90, 90, 40);
    match choose_survivor(&[on_a, c]) {
        Ok(choice) => panic!(
            "chose {} though its data dir is member b's: {}",
            choice.survivor, choice.reason
        ),
        Err(refusal) => assert!(refusal.message.contains("b"), "{}", refusal.message),
    }
}
