//! `lease`, `auth`, `user` and `role` as an etcdctl drop-in: side by side with the etcdctl of
//! the cluster's release (`--compat etcdctl`), byte for byte in `simple` and field for field
//! in `-w json`; the etcdctl flags of `user add|passwd` and `role grant|revoke-permission`.

use etcdops_tests::{
    Cluster, EtcdVersion, Run, SideBySide, assert_same_json, assert_same_output, block_on,
    side_by_side,
};

use crate::run;

/// `--endpoints` plus `rest`.
fn args<'a>(cluster: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--endpoints", cluster];
    all.extend_from_slice(rest);
    all
}

/// etcdctl of the cluster's release with its connection flags, asserting success.
fn etcdctl_ok(cluster: &Cluster, rest: &[&str]) -> String {
    let endpoints = cluster.endpoints();
    let out = cluster.etcdctl(&args(&endpoints, rest));
    assert!(
        out.status.success(),
        "etcdctl {rest:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `remaining(Ns)` counts down between the two runs: blanked in both. etcd lists a lease's
/// keys in no stable order (a Go map): sorted in both.
fn without_remaining(text: &str) -> String {
    let text = match (text.find("attached keys(["), text.rfind("])")) {
        (Some(start), Some(end)) => {
            let start = start + "attached keys([".len();
            let mut keys: Vec<&str> = text[start..end].split(' ').collect();
            keys.sort();
            format!("{}{}{}", &text[..start], keys.join(" "), &text[end..])
        }
        _ => text.to_string(),
    };
    let text = text.as_str();
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("remaining(") {
        out.push_str(&rest[..at + "remaining(".len()]);
        rest = &rest[at + "remaining(".len()..];
        let end = rest.find(')').unwrap_or(rest.len());
        out.push('N');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Both runs agree on exit code, stderr emptiness and stdout once remaining TTLs are blanked.
fn assert_same_but_remaining(both: &SideBySide) {
    assert_eq!(both.etcdctl.code, both.etcdops.code, "exit codes:\n{both}");
    assert_eq!(
        without_remaining(&both.etcdctl.stdout),
        without_remaining(&both.etcdops.stdout),
        "stdout differs:\n{both}"
    );
    assert!(both.etcdops.stdout.contains("remaining("), "{both}");
    assert_eq!(
        both.etcdctl.stderr.is_empty(),
        both.etcdops.stderr.is_empty(),
        "{both}"
    );
}

/// Both agree on the exit code and line by line, lines of JSON field for field.
fn assert_same_lines(both: &SideBySide) {
    assert_eq!(both.etcdctl.code, both.etcdops.code, "exit codes:\n{both}");
    let theirs: Vec<&str> = both.etcdctl.stdout.split('\n').collect();
    let ours: Vec<&str> = both.etcdops.stdout.split('\n').collect();
    assert_eq!(theirs.len(), ours.len(), "{both}");
    for (theirs, ours) in theirs.iter().zip(&ours) {
        if theirs.starts_with('{') {
            let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
            assert_eq!(parse(theirs), parse(ours), "{both}");
        } else {
            assert_eq!(theirs, ours, "{both}");
        }
    }
}

/// Both print the same lease JSON but for `ttl` (counting down) and the order of `keys`.
fn assert_same_lease_json(both: &SideBySide) {
    assert_eq!(both.etcdctl.code, both.etcdops.code, "exit codes:\n{both}");
    let parse = |run: &Run| {
        let mut json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert!(json["ttl"].as_i64().unwrap() > 0, "{both}");
        json.as_object_mut().unwrap().remove("ttl");
        if let Some(keys) = json["keys"].as_array_mut() {
            keys.sort_by_key(|k| k.to_string());
        }
        json
    };
    assert_eq!(parse(&both.etcdctl), parse(&both.etcdops), "{both}");
}

/// Grants leases of 300, 600 and 900 s; the 600 s one holds three keys.
fn leases(cluster: &Cluster) -> (String, String) {
    block_on(async {
        let mut client = cluster.client().await;
        let mut ids = Vec::new();
        for ttl in [600, 300, 900] {
            ids.push(client.lease_grant(ttl, None).await?.id());
        }
        let options = etcd_client::PutOptions::new().with_lease(ids[0]);
        for key in ["/a/k1", "/a/k2", "/b"] {
            client.put(key, "v", Some(options.clone())).await?;
        }
        Ok::<_, etcd_client::Error>((format!("{:016x}", ids[0]), format!("{:016x}", ids[1])))
    })
    .unwrap()
}

#[test]
fn lease_list_and_timetolive_print_as_etcdctl_prints_them() {
    let cluster = Cluster::start(1, etcdops_tests::Security::Plain);
    let endpoints = cluster.endpoints();
    let (with_keys, without_keys) = leases(&cluster);

    // Every lease in etcd's order (soonest expiry first, not by ID).
    let list = assert_same_output(&cluster, &args(&endpoints, &["lease", "list"]));
    assert!(
        list.etcdops.stdout.starts_with("found 3 leases\n"),
        "{list}"
    );
    assert_same_json(
        &cluster,
        &args(&endpoints, &["lease", "list", "-w", "json"]),
        &[],
    );
    assert_same_json(
        &cluster,
        &args(&endpoints, &["lease", "list", "-w", "json", "--hex"]),
        &[],
    );

    for rest in [
        vec!["lease", "timetolive", with_keys.as_str()],
        vec!["lease", "timetolive", with_keys.as_str(), "--keys"],
        // No keys attached: etcdctl still prints `attached keys([])`.
        vec!["lease", "timetolive", without_keys.as_str(), "--keys"],
    ] {
        let both = side_by_side(&cluster, &args(&endpoints, &rest), &[]);
        assert_same_but_remaining(&both);
        let mut json = rest.clone();
        json.extend(["-w", "json"]);
        assert_same_lease_json(&side_by_side(&cluster, &args(&endpoints, &json), &[]));
    }

    // A lease that does not exist: etcdctl says it expired and exits 0.
    let gone = ["lease", "timetolive", "7fffffff00000001"];
    let both = assert_same_output(&cluster, &args(&endpoints, &gone));
    assert_eq!(
        both.etcdops.stdout,
        "lease 7fffffff00000001 already expired\n"
    );
    assert_eq!(both.etcdops.code, 0);
    let (_, ours) = assert_same_json(
        &cluster,
        &args(
            &endpoints,
            &[
                "lease",
                "timetolive",
                "7fffffff00000001",
                "--keys",
                "-w",
                "json",
            ],
        ),
        &[],
    );
    assert_eq!(ours["ttl"], -1);
    assert_eq!(ours["granted-ttl"], 0);
    assert!(ours["keys"].is_null());

    // Our own mode keeps its exit code 1 for a lease that is gone.
    let own = run(&cluster, &["lease", "timetolive", "7fffffff00000001"]);
    assert_eq!(own.code, 1, "{own}");
}

/// Users `alice` (roles empty, reader, writer), `bob` (none); roles with every kind of range
/// etcdctl can grant: prefix, range, single key, from-key, all keys. Made by etcdctl itself.
fn users_and_roles(cluster: &Cluster) {
    for rest in [
        vec!["user", "add", "alice", "--new-user-password", "pw-alice"],
        vec!["user", "add", "bob:pw-bob"],
        vec!["role", "add", "reader"],
        vec!["role", "add", "writer"],
        vec!["role", "add", "empty"],
        vec![
            "role",
            "grant-permission",
            "reader",
            "read",
            "/registry/",
            "--prefix",
        ],
        vec!["role", "grant-permission", "reader", "readwrite", "a", "z"],
        vec!["role", "grant-permission", "reader", "write", "single"],
        vec![
            "role",
            "grant-permission",
            "writer",
            "write",
            "/x",
            "--from-key",
        ],
        vec![
            "role",
            "grant-permission",
            "writer",
            "readwrite",
            "",
            "--prefix",
        ],
        vec!["user", "grant-role", "alice", "reader"],
        vec!["user", "grant-role", "alice", "writer"],
        vec!["user", "grant-role", "alice", "empty"],
    ] {
        etcdctl_ok(cluster, &rest);
    }
}

/// Every read-only user and role command, simple and JSON, side by side.
fn assert_users_and_roles_print_as_etcdctl(cluster: &Cluster, users: &[&str], roles: &[&str]) {
    let endpoints = cluster.endpoints();
    let e = endpoints.as_str();
    let a = |rest: &[&'static str]| args(e, rest);
    assert_same_output(cluster, &a(&["user", "list"]));
    assert_same_json(cluster, &a(&["user", "list", "-w", "json"]), &[]);
    assert_same_output(cluster, &a(&["role", "list"]));
    assert_same_json(cluster, &a(&["role", "list", "-w", "json"]), &[]);
    for &user in users {
        assert_same_output(cluster, &args(e, &["user", "get", user]));
        assert_same_output(cluster, &args(e, &["user", "get", user, "--detail"]));
        assert_same_output(cluster, &args(e, &["user", "get", user, "--detail=true"]));
        assert_same_json(cluster, &args(e, &["user", "get", user, "-w", "json"]), &[]);
        // Not one JSON document: the `User:` line, then each role's JSON.
        let detail = ["user", "get", user, "--detail", "-w", "json"];
        assert_same_lines(&side_by_side(cluster, &args(e, &detail), &[]));
    }
    for &role in roles {
        assert_same_output(cluster, &args(e, &["role", "get", role]));
        assert_same_json(cluster, &args(e, &["role", "get", role, "-w", "json"]), &[]);
    }
    // What is not there: an error on stderr, nothing on stdout, exit code 1 for both.
    for rest in [["user", "get", "nobody"], ["role", "get", "nothing"]] {
        let both = assert_same_output(cluster, &a(&rest));
        assert_eq!(both.etcdops.code, 1, "{both}");
        assert!(both.etcdops.stdout.is_empty(), "{both}");
    }
}

#[test]
fn users_and_roles_print_as_etcdctl_prints_them() {
    let cluster = Cluster::start(1, etcdops_tests::Security::Plain);
    users_and_roles(&cluster);
    let both = assert_same_output(
        &cluster,
        &args(&cluster.endpoints(), &["role", "get", "writer"]),
    );
    // The all-keys permission is `\0` to `\0`: printed raw, as etcdctl does, into a pipe.
    assert!(
        both.etcdops.stdout.contains("\t[\0, <open ended>\n"),
        "{both}"
    );
    assert_users_and_roles_print_as_etcdctl(
        &cluster,
        &["alice", "bob"],
        &["reader", "writer", "empty"],
    );
}

#[test]
fn on_an_auth_cluster_users_roles_and_leases_print_as_etcdctl_prints_them() {
    let cluster = Cluster::start(1, etcdops_tests::Security::Auth);
    users_and_roles(&cluster);
    leases(&cluster);
    let endpoints = cluster.endpoints();
    assert_same_output(&cluster, &args(&endpoints, &["lease", "list"]));
    assert_same_json(
        &cluster,
        &args(&endpoints, &["lease", "list", "-w", "json"]),
        &[],
    );
    // etcd 3.4 has no role object for `root` (granted, not created): both fail after the
    // `User:` line of `user get root --detail`, as the helper's error case checks.
    assert_users_and_roles_print_as_etcdctl(
        &cluster,
        &["root", "alice", "bob"],
        &["reader", "writer", "empty"],
    );
    assert_same_output(&cluster, &args(&endpoints, &["role", "get", "root"]));
}

#[test]
fn auth_status_prints_as_etcdctl_prints_it() {
    for security in [
        etcdops_tests::Security::Plain,
        etcdops_tests::Security::Auth,
    ] {
        let cluster = Cluster::start(1, security);
        let endpoints = cluster.endpoints();
        let simple = args(&endpoints, &["auth", "status"]);
        if cluster.version == EtcdVersion::V3_4 {
            // etcdctl 3.4 has no `auth status` (it prints its help): etcdctl 3.5's first line,
            // without the auth revision, which etcd 3.4 cannot tell.
            let both = side_by_side(&cluster, &simple, &[]);
            let enabled = security == etcdops_tests::Security::Auth;
            assert_eq!(
                both.etcdops.stdout,
                format!("Authentication Status: {enabled}\n"),
                "{both}"
            );
            continue;
        }
        // etcd 3.5 also tells its auth revision (etcd's AuthStatus request): the same line and
        // field, byte for byte (with auth on, the revision is past 1, so a missing or made-up
        // one shows).
        let both = side_by_side(&cluster, &simple, &[]);
        assert_eq!(both.etcdctl.code, both.etcdops.code, "{both}");
        let theirs: Vec<&str> = both.etcdctl.stdout.lines().collect();
        assert_eq!(theirs.len(), 2, "{both}");
        assert!(theirs[1].starts_with("AuthRevision: "), "{both}");
        assert_eq!(both.etcdops.stdout, both.etcdctl.stdout, "{both}");
        let json = args(&endpoints, &["auth", "status", "-w", "json"]);
        assert_same_json(&cluster, &json, &[]);
    }
}

/// Whether `user` can log in with `password` (etcdctl as the judge: a user without roles
/// logs in, then is denied the read).
fn can_log_in(cluster: &Cluster, user: &str, password: &str) -> bool {
    let endpoints = cluster.endpoints();
    let credentials = format!("{user}:{password}");
    let out = std::process::Command::new(cluster.version.etcdctl())
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            &endpoints,
            "--user",
            &credentials,
            "--dial-timeout",
            "10s",
            "--command-timeout",
            "20s",
            "get",
            "x",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let denied = stderr.contains("permission denied");
    if !out.status.success() && !denied {
        eprintln!("{user} cannot log in: {stderr}");
    }
    out.status.success() || denied
}

/// Runs etcdops under `--compat etcdctl` with `stdin` as its standard input.
fn etcdops_with_stdin(cluster: &Cluster, rest: &[&str], stdin: &str) -> Run {
    use std::io::Write;
    let mut all = cluster.client_flags();
    // Bounded, with room for a loaded machine (bcrypt on every login).
    all.extend(
        [
            "--compat",
            "etcdctl",
            "--dial-timeout",
            "10s",
            "--command-timeout",
            "20s",
        ]
        .map(String::from),
    );
    all.extend(rest.iter().map(|s| s.to_string()));
    let mut child = std::process::Command::new(etcdops_tests::etcdops_path())
        .args(&all)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    Run {
        args: all,
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn etcdctls_password_and_permission_flags_work_and_never_print_the_password() {
    let cluster = Cluster::start(1, etcdops_tests::Security::Auth);
    let secrets = ["pw-carol", "pw-dave", "pw-erin", "pw-new"];

    // --new-user-password, NAME:PASSWORD, --interactive=false (first word of stdin).
    let theirs = etcdctl_ok(
        &cluster,
        &["user", "add", "theirs", "--new-user-password", "x"],
    );
    let carol = run(
        &cluster,
        &[
            "--compat",
            "etcdctl",
            "user",
            "add",
            "carol",
            "--new-user-password",
            "pw-carol",
        ],
    );
    assert_eq!(carol.code, 0, "{carol}");
    assert_eq!(carol.stdout, theirs.replace("theirs", "carol"), "{carol}");
    assert!(carol.stderr.is_empty(), "{carol}");
    // Already there: ours changes nothing and says so (idempotent, exit 0).
    let again = run(
        &cluster,
        &[
            "--compat",
            "etcdctl",
            "user",
            "add",
            "carol",
            "--new-user-password",
            "other",
        ],
    );
    assert_eq!(again.code, 0, "{again}");
    assert!(again.stdout.contains("already exists"), "{again}");
    assert!(can_log_in(&cluster, "carol", "pw-carol"));
    let dave = run(
        &cluster,
        &["--compat", "etcdctl", "user", "add", "dave:pw-dave"],
    );
    assert_eq!(dave.stdout, "User dave created\n", "{dave}");
    assert!(dave.stderr.is_empty(), "{dave}");
    let erin = etcdops_with_stdin(
        &cluster,
        &["user", "add", "erin", "--interactive=false"],
        "pw-erin ignored\n",
    );
    assert_eq!(erin.stdout, "User erin created\n", "{erin}");
    assert!(can_log_in(&cluster, "carol", "pw-carol"));
    assert!(can_log_in(&cluster, "dave", "pw-dave"));
    assert!(can_log_in(&cluster, "erin", "pw-erin"));
    assert!(!can_log_in(&cluster, "erin", "pw-erin ignored"));
    let empty = run(&cluster, &["--compat", "etcdctl", "user", "add", ":pw"]);
    assert_eq!(empty.code, 1, "{empty}");

    // user passwd --interactive=false, as etcdctl's words say.
    let passwd = etcdops_with_stdin(
        &cluster,
        &["user", "passwd", "erin", "--interactive=false"],
        "pw-new\n",
    );
    assert_eq!(passwd.stdout, "Password updated\n", "{passwd}");
    assert!(can_log_in(&cluster, "erin", "pw-new"));
    // Our own mode warns about a password on the command line.
    let own = run(
        &cluster,
        &["user", "add", "frank", "--new-user-password", "pw-frank"],
    );
    assert_eq!(own.code, 0, "{own}");
    assert!(own.stderr.contains("ps and shell history"), "{own}");

    // --from-key and --prefix (an empty key: every key) as etcdctl grants and revokes them.
    etcdctl_ok(&cluster, &["role", "add", "theirs"]);
    let ours = run(&cluster, &["--compat", "etcdctl", "role", "add", "ours"]);
    assert_eq!(ours.stdout, "Role ours created\n", "{ours}");
    for (role, tool) in [("theirs", "etcdctl"), ("ours", "etcdops")] {
        for grant in [
            ["write", "/x", "--from-key"],
            ["readwrite", "", "--prefix"],
            ["read", "/p/", "--prefix"],
        ] {
            let mut rest = vec!["role", "grant-permission", role];
            rest.extend(grant);
            if tool == "etcdctl" {
                etcdctl_ok(&cluster, &rest);
            } else {
                let mut with = vec!["--compat", "etcdctl"];
                with.extend(&rest);
                let granted = run(&cluster, &with);
                assert_eq!(granted.stdout, "Role ours updated\n", "{granted}");
            }
        }
    }
    let theirs = etcdctl_ok(&cluster, &["role", "get", "theirs"]);
    let ours = run(&cluster, &["--compat", "etcdctl", "role", "get", "ours"]);
    assert_eq!(ours.stdout, theirs.replace("theirs", "ours"), "{ours}");
    // Granting the same again changes nothing (our idempotence stays).
    let again = run(
        &cluster,
        &[
            "role",
            "grant-permission",
            "ours",
            "write",
            "/x",
            "--from-key",
            "-w",
            "json",
        ],
    );
    assert_eq!(again.json()["changed"], false, "{again}");
    for revoke in [["/x", "--from-key"], ["", "--prefix"]] {
        let mut rest = vec!["--compat", "etcdctl", "role", "revoke-permission", "ours"];
        rest.extend(revoke);
        let revoked = run(&cluster, &rest);
        assert_eq!(revoked.code, 0, "{revoked}");
        let mut theirs = vec!["role", "revoke-permission", "theirs"];
        theirs.extend(revoke);
        let said = etcdctl_ok(&cluster, &theirs);
        assert_eq!(revoked.stdout, said.replace("theirs", "ours"), "{revoked}");
    }
    let theirs = etcdctl_ok(&cluster, &["role", "get", "theirs"]);
    let ours = run(&cluster, &["--compat", "etcdctl", "role", "get", "ours"]);
    assert_eq!(ours.stdout, theirs.replace("theirs", "ours"), "{ours}");
    assert!(ours.stdout.contains("(prefix /p/)"), "{ours}");

    // The other writes in etcdctl's words (theirs on dave and role theirs, ours on carol and
    // role ours).
    for (rest, user, role) in [
        (["user", "grant-role", "USER", "ROLE"], "carol", "ours"),
        (["user", "revoke-role", "USER", "ROLE"], "carol", "ours"),
        (["user", "delete", "USER", "-"], "carol", "-"),
        (["role", "delete", "ROLE", "-"], "-", "ours"),
    ] {
        let words = |user: &'static str, role: &'static str| -> Vec<&'static str> {
            rest.iter()
                .filter(|w| **w != "-")
                .map(|w| match *w {
                    "USER" => user,
                    "ROLE" => role,
                    w => w,
                })
                .collect()
        };
        let said = etcdctl_ok(&cluster, &words("dave", "theirs"));
        let mut with = vec!["--compat", "etcdctl"];
        with.extend(words(user, role));
        let done = run(&cluster, &with);
        assert_eq!(done.code, 0, "{done}");
        let expected = said.replace("dave", "carol").replace("theirs", "ours");
        assert_eq!(done.stdout, expected, "{done}");
    }

    for out in [&carol, &dave, &erin, &passwd, &own] {
        for secret in secrets.iter().chain(&["pw-frank"]) {
            assert!(
                !out.stdout.contains(secret) && !out.stderr.contains(secret),
                "{out}"
            );
        }
    }
}
