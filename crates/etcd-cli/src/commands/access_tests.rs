//! Unit tests of `access.rs`: its flags and where a new user's password comes from.

use clap::Parser;

use super::*;
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
