//! Unit tests of membership.rs: selectors, member matching, initial cluster, peer URLs.

use super::*;

#[test]
fn empty_and_control_character_selectors_are_refused() {
    for bad in ["", "  ", "m1\n", "\x1b[2J"] {
        let err = check_selector(bad).unwrap_err().to_string();
        assert!(err.starts_with("invalid member: "), "{err}");
        assert!(!err.contains('\x1b'), "{err}");
    }
    for good in ["m1", "5f62a924ac85910", "http://10.0.0.1:2380"] {
        assert!(check_selector(good).is_ok(), "{good}");
    }
}

fn member(id: u64, name: &str, peer: &str) -> Member {
    Member {
        id: MemberId(id),
        name: name.into(),
        peer_urls: vec![peer.into()],
        client_urls: vec![],
        is_learner: false,
        started: !name.is_empty(),
    }
}

fn query(name: Option<&str>, urls: &[&str]) -> MemberQuery {
    MemberQuery {
        member: None,
        name: name.map(str::to_string),
        peer_urls: urls.iter().map(|u| u.to_string()).collect(),
    }
}

#[test]
fn a_member_is_matched_by_its_peer_urls_before_it_has_a_name() {
    let members = vec![
        member(1, "a", "https://10.0.0.1:2380"),
        member(2, "", "https://10.0.0.2:2380"),
    ];
    let found = |q: &MemberQuery| match_listed(&members, q).unwrap().map(|m| m.id.0);
    // The learner not started: found by its peer URL, whatever name it will have.
    assert_eq!(
        found(&query(Some("b"), &["https://10.0.0.2:2380/"])),
        Some(2)
    );
    assert_eq!(found(&query(None, &["https://10.0.0.2:2380"])), Some(2));
    assert_eq!(found(&query(Some("a"), &[])), Some(1));
    assert_eq!(found(&query(Some("b"), &[])), None);
    assert_eq!(found(&query(Some("c"), &["https://10.0.0.3:2380"])), None);
    assert_eq!(found(&MemberQuery::from("https://10.0.0.2:2380")), Some(2));
    // A name and peer URLs of two different members: refused, never one of them.
    for ambiguous in [
        query(Some("a"), &["https://10.0.0.2:2380"]),
        query(Some("a"), &["https://10.0.0.3:2380"]),
        query(None, &["https://10.0.0.1:2380", "https://10.0.0.2:2380"]),
    ] {
        let err = match_listed(&members, &ambiguous).unwrap_err().to_string();
        assert!(err.contains("give"), "{ambiguous}: {err}");
    }
    assert!(match_listed(&members, &query(None, &[])).is_err());
}

#[test]
fn initial_cluster_names_the_new_member() {
    let members = vec![
        member(1, "a", "https://10.0.0.1:2380"),
        member(2, "", "https://10.0.0.2:2380"),
    ];
    assert_eq!(
        initial_cluster(&members, MemberId(2), "b"),
        "a=https://10.0.0.1:2380,b=https://10.0.0.2:2380"
    );
}

#[test]
fn peer_urls_compare_as_sets() {
    assert!(same_urls(
        &["https://a:2380/".into(), "https://B:2380".into()],
        &["https://b:2380".into(), "https://a:2380".into()]
    ));
    assert!(!same_urls(
        &["https://a:2380".into()],
        &["https://a:2381".into()]
    ));
}

#[test]
fn bad_peer_urls_are_refused() {
    assert!(validate_peer_urls(&[]).is_err());
    assert!(validate_peer_urls(&["10.0.0.1:2380".into()]).is_err());
    assert!(validate_peer_urls(&["https://10.0.0.1".into()]).is_err());
    assert!(validate_peer_urls(&["https://10.0.0.1:2380".into()]).is_ok());
}

/// An addition that clashes with a member's name or peer URLs never advises removing it while
/// it is healthy (its URLs change with a member update); one that does not answer may be gone.
#[test]
fn a_clash_with_a_healthy_member_never_advises_its_removal() {
    let state = |healthy| MemberState {
        member: member(7, "m3", "https://10.0.0.3:2380"),
        endpoint: None,
        healthy,
        status: None,
        error: None,
    };
    let healthy = taken_by(&state(true));
    assert!(!healthy.contains("remove"), "{healthy}");
    assert!(
        healthy.contains("member update") && healthy.contains("https://10.0.0.3:2380"),
        "{healthy}"
    );
    let gone = taken_by(&state(false));
    assert!(gone.contains("gone for good, remove it first"), "{gone}");
}
