//! Unit tests of `access.rs`: flags, and etcdctl's simple and JSON output of the etcd 3.6.14
//! fixture's values.

use clap::Parser;
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

/// `view`'s etcdctl JSON equals `expected` field for field (serde_json orders fields by
/// name; etcdctl by its struct).
fn assert_json(view: &impl Render, expected: &str) {
    let expected: Value = serde_json::from_str(expected).unwrap();
    assert_eq!(json(view), expected);
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

use crate::flags::{Cli, Command, RoleCommand, UserCommand};

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied()))
}

#[test]
fn lease_timetolive_takes_a_hex_id_and_keys() {
    let cli = parse(&["lease", "timetolive", "694d77aa9e38260f", "--keys"]).unwrap();
    let Command::Lease(crate::flags::LeaseCommand::Timetolive(args)) = cli.command else {
        panic!("not a timetolive");
    };
    assert_eq!(args.id, etcdops::lease::LeaseId(0x694d_77aa_9e38_260f));
    assert!(args.keys);
    assert!(parse(&["lease", "timetolive", "not-hex"]).is_err());
}

#[test]
fn user_add_takes_one_password_source_and_never_a_password_argument() {
    let cli = parse(&["user", "add", "alice", "--password-env", "PW"]).unwrap();
    let Command::User(UserCommand::Add(args)) = cli.command else {
        panic!("not a user add");
    };
    assert_eq!(args.password.password_env.as_deref(), Some("PW"));
    assert!(args.password.password_file.is_none() && !args.no_password);
    assert!(
        parse(&[
            "user",
            "add",
            "alice",
            "--password-env",
            "PW",
            "--password-file",
            "f"
        ])
        .is_err()
    );
    assert!(
        parse(&[
            "user",
            "add",
            "alice",
            "--no-password",
            "--password-env",
            "PW"
        ])
        .is_err()
    );
    // A second positional (a password typed on the command line) is rejected.
    assert!(parse(&["user", "add", "alice", "secret"]).is_err());
    assert!(parse(&["user", "passwd", "alice", "--no-password"]).is_err());
}

#[test]
fn role_grant_permission_takes_kind_key_and_range_or_prefix() {
    let cli = parse(&[
        "role",
        "grant-permission",
        "kube",
        "readwrite",
        "/registry/",
        "--prefix",
    ])
    .unwrap();
    let Command::Role(RoleCommand::GrantPermission(args)) = cli.command else {
        panic!("not a grant-permission");
    };
    assert_eq!(args.permission, crate::flags::PermissionArg::Readwrite);
    assert_eq!(args.key, "/registry/");
    assert!(args.prefix && args.range_end.is_none());
    assert!(parse(&["role", "grant-permission", "r", "admin", "k"]).is_err());
    assert!(
        parse(&[
            "role",
            "grant-permission",
            "r",
            "read",
            "a",
            "b",
            "--prefix"
        ])
        .is_err()
    );
    let cli = parse(&["role", "revoke-permission", "r", "a", "b"]).unwrap();
    let Command::Role(RoleCommand::RevokePermission(args)) = cli.command else {
        panic!("not a revoke-permission");
    };
    assert_eq!(args.range_end.as_deref(), Some("b"));
}

#[test]
fn etcdctl_s_password_flags_parse_and_keep_the_password_out_of_debug() {
    let cli = parse(&["user", "add", "alice", "--new-user-password", "S3cret"]).unwrap();
    let Command::User(UserCommand::Add(args)) = cli.command else {
        panic!("not a user add");
    };
    assert_eq!(
        args.new_user_password.as_ref().map(Secret::expose),
        Some("S3cret")
    );
    assert!(args.interactive.interactive);
    assert!(!format!("{args:?}").contains("S3cret"));
    let (name, source) = user_add_source(&args, Compat::Etcdops).unwrap();
    assert_eq!(name, "alice");
    assert_eq!(source, PasswordSource::Given(Secret::new("S3cret")));

    let cli = parse(&["user", "add", "bob:pw", "--interactive=false"]).unwrap();
    let Command::User(UserCommand::Add(args)) = cli.command else {
        panic!("not a user add");
    };
    assert!(!args.interactive.interactive);
    let (name, source) = user_add_source(&args, Compat::Etcdops).unwrap();
    assert_eq!(name, "bob");
    assert_eq!(source, PasswordSource::Given(Secret::new("pw")));
    let cli = parse(&["user", "add", "carol", "--interactive=false"]).unwrap();
    let Command::User(UserCommand::Add(args)) = cli.command else {
        panic!("not a user add");
    };
    assert_eq!(
        user_add_source(&args, Compat::Etcdops).unwrap().1,
        PasswordSource::Stdin
    );
    let cli = parse(&["user", "add", ":pw"]).unwrap();
    let Command::User(UserCommand::Add(args)) = cli.command else {
        panic!("not a user add");
    };
    assert!(user_add_source(&args, Compat::Etcdops).is_err());
    assert!(
        parse(&[
            "user",
            "add",
            "a",
            "--new-user-password",
            "x",
            "--no-password"
        ])
        .is_err()
    );
    let cli = parse(&["user", "passwd", "alice", "--interactive=false"]).unwrap();
    let Command::User(UserCommand::Passwd(args)) = cli.command else {
        panic!("not a user passwd");
    };
    assert!(!args.interactive.interactive);
    let cli = parse(&["user", "get", "alice", "--detail"]).unwrap();
    let Command::User(UserCommand::Get(args)) = cli.command else {
        panic!("not a user get");
    };
    assert!(args.detail);
    let cli = parse(&["role", "grant-permission", "r", "write", "/x", "--from-key"]).unwrap();
    let Command::Role(RoleCommand::GrantPermission(args)) = cli.command else {
        panic!("not a grant-permission");
    };
    assert!(args.from_key && !args.prefix);
    assert!(
        parse(&[
            "role",
            "revoke-permission",
            "r",
            "/x",
            "--from-key",
            "--prefix"
        ])
        .is_err()
    );
}

#[test]
fn the_command_line_has_no_clashing_argument_ids() {
    // A positional named like a global flag (`key` and `--key`) only fails at run time.
    <Cli as clap::CommandFactory>::command().debug_assert();
}

#[test]
fn auth_enable_takes_force() {
    let cli = parse(&["auth", "enable", "--force"]).unwrap();
    let Command::Auth(crate::flags::AuthCommand::Enable(args)) = cli.command else {
        panic!("not an auth enable");
    };
    assert!(args.force);
}
