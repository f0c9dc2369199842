//! Unit tests of `access.rs`: etcdctl's simple and JSON output of the etcd 3.6.14
//! fixture's values.

use etcdops::client::ResponseHeader;
use etcdops::lease::LeaseId;

use super::*;

/// The header of every answer in the etcd 3.6.14 fixture (outputs/*.json).
const FIXTURE_HEADER: ResponseHeader = ResponseHeader {
    cluster_id: 17497139193859109479,
    member_id: 14423874141243768641,
    revision: 54,
    raft_term: 2,
};

fn json(view: &impl Render) -> Value {
    view.etcdctl_json(false).unwrap()
}

/// `view`'s etcdctl JSON equals `expected` byte for byte (etcdctl's field order too).
fn assert_json(view: &impl Render, expected: &str) {
    assert_eq!(
        serde_json::to_string(&json(view)).unwrap(),
        expected.trim_end()
    );
}

/// The header of every answer in the etcd 3.7.1 fixture (its member a).
const FIXTURE_3_7_HEADER: ResponseHeader = ResponseHeader {
    cluster_id: 13880743270753340716,
    member_id: 959035401820190083,
    revision: 54,
    raft_term: 2,
};

/// A file of etcd 3.7.1's outputs.
fn output_3_7(name: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/etcd-3.7.1/outputs");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

fn simple(view: &impl RawLines) -> String {
    String::from_utf8(view.simple_with(&raw)).unwrap()
}

fn fixture_lease(keys: bool) -> LeaseTimeToLive {
    let raw_keys: Option<Vec<Vec<u8>>> =
        keys.then(|| vec![b"/leased/k1".to_vec(), b"/leased/k2".to_vec()]);
    LeaseTimeToLive {
        id: LeaseId(9169788645574485302),
        found: true,
        granted_ttl: 7200,
        remaining_ttl: 7198,
        keys: raw_keys.as_ref().map(|k| {
            k.iter()
                .map(|k| String::from_utf8_lossy(k).into())
                .collect()
        }),
        raw_keys,
        header: Some(FIXTURE_HEADER),
    }
}

fn fixture_role() -> RoleInfo {
    RoleInfo {
        name: "reader".into(),
        permissions: vec![PermissionInfo::from_bytes(
            PermissionKind::Read,
            b"/registry/",
            b"/registry0",
        )],
        header: Some(FIXTURE_HEADER),
    }
}

#[test]
fn lease_json_is_etcd_3_6_s_with_the_header_flat_and_keys_base64() {
    let list = LeasesView(LeaseList {
        leases: Vec::new(),
        listed: vec![LeaseId(9169788645574485302)],
        header: Some(FIXTURE_HEADER),
    });
    // outputs/lease-list.json
    assert_json(
        &list,
        r#"{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"revision":54,"raft_term":2,"leases":[{"id":9169788645574485302}]}"#,
    );
    assert_eq!(simple(&list), "found 1 leases\n7f41a23084e0a536\n");
    // outputs/lease-timetolive.json (`--keys`)
    let lease = LeaseView(fixture_lease(true));
    assert_json(
        &lease,
        r#"{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"revision":54,"raft_term":2,"id":9169788645574485302,"ttl":7198,"granted-ttl":7200,"keys":["L2xlYXNlZC9rMQ==","L2xlYXNlZC9rMg=="]}"#,
    );
    assert_eq!(
        simple(&lease),
        "lease 7f41a23084e0a536 granted with TTL(7200s), remaining(7198s), attached keys([/leased/k1 /leased/k2])\n"
    );
    let bare = LeaseView(fixture_lease(false));
    assert_eq!(json(&bare)["granted-ttl"], 7200);
    assert!(json(&bare)["keys"].is_null());
    assert_eq!(
        simple(&bare),
        "lease 7f41a23084e0a536 granted with TTL(7200s), remaining(7198s)\n"
    );
    // Keys asked for, none attached: etcdctl prints the empty list, and null in JSON.
    let mut none = fixture_lease(true);
    none.raw_keys = Some(Vec::new());
    none.keys = Some(Vec::new());
    assert!(simple(&LeaseView(none.clone())).ends_with(", attached keys([])\n"));
    assert!(json(&LeaseView(none.clone()))["keys"].is_null());
    // Gone: etcdctl's words; no omitempty in its JSON.
    none.found = false;
    none.granted_ttl = 0;
    none.remaining_ttl = -1;
    assert_eq!(
        simple(&LeaseView(none.clone())),
        "lease 7f41a23084e0a536 already expired\n"
    );
    let gone = json(&LeaseView(none));
    assert_eq!(
        (&gone["ttl"], &gone["granted-ttl"]),
        (&(-1).into(), &0.into())
    );
    assert!(gone["keys"].is_null());
}

#[test]
fn auth_user_and_role_json_is_etcd_3_6_s() {
    let status = AuthStatusView(AuthStatus {
        enabled: false,
        root_user_exists: Some(false),
        root_has_root_role: Some(false),
        auth_revision: Some(5),
        header: Some(FIXTURE_HEADER),
    });
    // outputs/auth-status.json: `enabled` false is left out (omitempty).
    assert_json(
        &status,
        r#"{"header":{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"revision":54,"raft_term":2},"authRevision":5}"#,
    );
    assert_eq!(
        status.simple_lines(),
        ["Authentication Status: false", "AuthRevision: 5"]
    );
    let user = UserView(UserInfo {
        name: "alice".into(),
        roles: vec!["reader".into()],
        role_details: None,
        missing_role: None,
        header: Some(FIXTURE_HEADER),
    });
    // outputs/user-get.json
    assert_json(
        &user,
        r#"{"header":{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"revision":54,"raft_term":2},"roles":["reader"]}"#,
    );
    assert_eq!(simple(&user), "User: alice\nRoles: reader\n");
    // outputs/role-get.json: permType 0 (read) left out, keys base64.
    let role = RoleView(fixture_role());
    assert_json(
        &role,
        r#"{"header":{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"revision":54,"raft_term":2},"perm":[{"key":"L3JlZ2lzdHJ5Lw==","range_end":"L3JlZ2lzdHJ5MA=="}]}"#,
    );
    assert_eq!(
        simple(&role),
        "Role reader\nKV Read:\n\t[/registry/, /registry0) (prefix /registry/)\nKV Write:\n"
    );
}

#[test]
fn json_of_etcd_3_7_is_etcdctl_3_7s_byte_for_byte() {
    let id = LeaseId(3856104113254683449);
    let list = LeasesView(LeaseList {
        leases: Vec::new(),
        listed: vec![id],
        header: Some(FIXTURE_3_7_HEADER),
    });
    assert_json(&list, &output_3_7("lease-list.json"));
    let mut lease = fixture_lease(true);
    (lease.id, lease.remaining_ttl, lease.header) = (id, 7197, Some(FIXTURE_3_7_HEADER));
    assert_json(&LeaseView(lease), &output_3_7("lease-timetolive.json"));
    let status = AuthStatusView(AuthStatus {
        enabled: false,
        root_user_exists: Some(false),
        root_has_root_role: Some(false),
        auth_revision: Some(5),
        header: Some(FIXTURE_3_7_HEADER),
    });
    assert_json(&status, &output_3_7("auth-status.json"));
    let user = UserView(UserInfo {
        name: "alice".into(),
        roles: vec!["reader".into()],
        role_details: None,
        missing_role: None,
        header: Some(FIXTURE_3_7_HEADER),
    });
    assert_json(&user, &output_3_7("user-get.json"));
    let mut role = fixture_role();
    role.header = Some(FIXTURE_3_7_HEADER);
    assert_json(&RoleView(role), &output_3_7("role-get.json"));
}

#[test]
fn simple_output_is_etcdctl_s_for_every_kind_of_range_and_no_roles() {
    let mut detail = UserInfo {
        name: "bob".into(),
        roles: Vec::new(),
        role_details: None,
        missing_role: None,
        header: None,
    };
    // No roles: no space after `Roles:`.
    assert_eq!(simple(&UserView(detail.clone())), "User: bob\nRoles:\n");
    let perm = |kind, key: &[u8], end: &[u8]| PermissionInfo::from_bytes(kind, key, end);
    let mut role = fixture_role();
    role.name = "writer".into();
    role.permissions = vec![
        perm(PermissionKind::Readwrite, b"\0", b"\0"),
        perm(PermissionKind::Write, b"/x", b"\0"),
        perm(PermissionKind::Readwrite, b"a", b"z"),
        perm(PermissionKind::Write, b"single", b""),
    ];
    let expected = "Role writer\nKV Read:\n\t[\0, <open ended>\n\t[a, z)\nKV Write:\n\t[\0, <open ended>\n\t[/x, <open ended>\n\t[a, z)\n\tsingle\n";
    assert_eq!(simple(&RoleView(role.clone())), expected);
    // On a terminal (or in our own mode) the NUL is escaped.
    assert_eq!(
        RoleView(role.clone()).simple_lines()[2],
        "\t[\\0, <open ended>"
    );
    detail.roles = vec!["writer".into()];
    detail.role_details = Some(vec![role]);
    assert_eq!(
        simple(&UserView(detail)),
        format!("User: bob\n\n{expected}")
    );
    assert_eq!(
        revoked_line(
            "r",
            &KeyRange {
                prefix: true,
                ..Default::default()
            }
        ),
        "Permission of range [, <open ended> is revoked from role r"
    );
    let prefix = KeyRange {
        key: "/p/".into(),
        prefix: true,
        ..Default::default()
    };
    assert_eq!(
        revoked_line("r", &prefix),
        "Permission of range [/p/, /p0) is revoked from role r"
    );
    let key = KeyRange {
        key: "k".into(),
        ..Default::default()
    };
    assert_eq!(
        revoked_line("r", &key),
        "Permission of key k is revoked from role r"
    );
}
