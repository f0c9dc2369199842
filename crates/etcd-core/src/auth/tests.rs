//! Unit tests of key ranges, permissions and password sources.

use super::*;
use crate::config::Secret;

#[test]
fn key_ranges_resolve_like_etcdctl() {
    let single = KeyRange {
        key: "foo".into(),
        ..Default::default()
    };
    assert_eq!(single.to_bytes().unwrap(), (b"foo".to_vec(), Vec::new()));
    let prefix = KeyRange {
        key: "/registry/".into(),
        prefix: true,
        ..Default::default()
    };
    assert_eq!(
        prefix.to_bytes().unwrap(),
        (b"/registry/".to_vec(), b"/registry0".to_vec())
    );
    let all = KeyRange {
        key: String::new(),
        prefix: true,
        ..Default::default()
    };
    // As etcdctl sends it: `\0` to `\0`, every key.
    assert_eq!(all.to_bytes().unwrap(), (vec![0], vec![0]));
    let all_from = KeyRange {
        from_key: true,
        ..Default::default()
    };
    assert_eq!(all_from.to_bytes().unwrap(), (vec![0], vec![0]));
    let from = KeyRange {
        key: "/x".into(),
        from_key: true,
        ..Default::default()
    };
    assert_eq!(from.to_bytes().unwrap(), (b"/x".to_vec(), vec![0]));
    let prefix_and_from = KeyRange {
        key: "/x".into(),
        prefix: true,
        from_key: true,
        ..Default::default()
    };
    assert!(prefix_and_from.to_bytes().is_err());
    let both = KeyRange {
        key: "a".into(),
        range_end: Some("b".into()),
        prefix: true,
        from_key: false,
    };
    assert!(both.to_bytes().is_err());
    let backwards = KeyRange {
        key: "b".into(),
        range_end: Some("a".into()),
        prefix: false,
        from_key: false,
    };
    assert!(backwards.to_bytes().is_err());
    assert!(KeyRange::default().to_bytes().is_err());
}

#[test]
fn permissions_describe_their_range() {
    let p = |key: &[u8], end: &[u8]| PermissionInfo::from_bytes(PermissionKind::Read, key, end);
    assert_eq!(p(b"foo", b"").describe(), "foo");
    assert_eq!(
        p(b"/registry/", b"/registry0").describe(),
        "/registry/ (prefix)"
    );
    assert!(p(b"/registry/", b"/registry0").prefix);
    assert_eq!(p(b"a", b"c").describe(), "[a, c)");
    assert_eq!(p(b"", b"\0").describe(), "all keys");
    assert_eq!(p(b"\0", b"\0").describe(), "all keys");
    assert_eq!(p(b"/x", b"\0").describe(), "/x and every key after it");
    assert_eq!(
        serde_json::to_value(p(b"a", b"c")).unwrap()["permission"],
        "read"
    );
}

#[test]
fn password_sources_read_file_env_and_prompt_and_never_show_the_password() {
    let dir = std::env::temp_dir().join(format!("etcdops-pw-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pw");
    std::fs::write(&file, "S3cret-from-file\n").unwrap();
    let no_prompt = |_: &str| -> std::io::Result<Secret> { panic!("no prompt expected") };
    let no_env = |_: &str| -> Option<std::ffi::OsString> { None };

    let read = PasswordSource::File(file.clone())
        .read_with("alice", no_env, no_prompt)
        .unwrap()
        .unwrap();
    assert_eq!(read.expose(), "S3cret-from-file");
    assert!(!format!("{read:?}").contains("S3cret"));

    let env = PasswordSource::Env("PW_VAR".into())
        .read_with(
            "alice",
            |name| (name == "PW_VAR").then(|| "S3cret-from-env".into()),
            no_prompt,
        )
        .unwrap()
        .unwrap();
    assert_eq!(env.expose(), "S3cret-from-env");

    let missing = PasswordSource::Env("PW_VAR".into())
        .read_with("alice", no_env, no_prompt)
        .unwrap_err()
        .to_string();
    assert!(missing.contains("PW_VAR is not set"), "{missing}");

    let prompted = PasswordSource::Prompt
        .read_with("alice", no_env, |user| {
            assert_eq!(user, "alice");
            Ok(Secret::new("typed"))
        })
        .unwrap()
        .unwrap();
    assert_eq!(prompted.expose(), "typed");

    std::fs::write(&file, "\n").unwrap();
    let empty = PasswordSource::File(file.clone())
        .read_with("alice", no_env, no_prompt)
        .unwrap_err()
        .to_string();
    assert!(empty.contains("empty"), "{empty}");
    assert_eq!(
        PasswordSource::NoPassword
            .read_with("alice", no_env, no_prompt)
            .unwrap(),
        None
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_password_source_is_required_without_a_terminal() {
    let err = PasswordSource::choose(None, None, false, false, "root")
        .unwrap_err()
        .to_string();
    assert!(err.contains("a file or an environment variable"), "{err}");
    assert!(!err.contains("--"), "{err}");
    assert_eq!(
        PasswordSource::choose(None, None, false, true, "root").unwrap(),
        PasswordSource::Prompt
    );
    assert_eq!(
        PasswordSource::choose(None, Some("V".into()), false, false, "root").unwrap(),
        PasswordSource::Env("V".into())
    );
    assert!(PasswordSource::choose(Some("f".into()), Some("V".into()), false, false, "u").is_err());
}

#[test]
fn a_password_read_from_stdin_is_its_first_word_as_etcdctl_reads_it() {
    // etcdctl's --interactive=false reads with fmt.Scanf("%s").
    assert_eq!(first_word("pw2 extra\n"), "pw2");
    assert_eq!(first_word("  \tnewpw more\n"), "newpw");
    assert_eq!(first_word("only"), "only");
    assert_eq!(first_word("\nlater\n"), "");
    assert_eq!(first_word(""), "");
}

#[test]
fn a_password_given_on_the_command_line_is_read_as_given_and_never_shown() {
    let no_prompt = |_: &str| -> std::io::Result<Secret> { panic!("no prompt expected") };
    let source = PasswordSource::Given(Secret::new("S3cret-given"));
    assert!(!format!("{source:?}").contains("S3cret"));
    let read = source
        .read_with("alice", |_| None, no_prompt)
        .unwrap()
        .unwrap();
    assert_eq!(read.expose(), "S3cret-given");
    let empty = PasswordSource::Given(Secret::new(""))
        .read_with("alice", |_| None, no_prompt)
        .unwrap_err()
        .to_string();
    assert!(empty.contains("empty"), "{empty}");
}
