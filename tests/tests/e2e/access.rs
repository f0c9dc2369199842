//! Leases (read-only) and access control: users, roles, permissions, auth enable/disable with
//! its guards. etcdctl of the same release is the oracle for lease IDs and for whether
//! authentication is really on.

use etcd_client::PutOptions;
use etcdops_tests::{Cluster, ROOT_PASSWORD, Run, Security, args, block_on, etcdops};

use crate::{assert_clear_error, run};

/// Runs etcdops with the cluster's connection flags, `rest`, and extra environment.
fn run_env(cluster: &Cluster, rest: &[&str], env: &[(&str, &str)]) -> Run {
    let mut a = cluster.client_flags();
    a.extend(args(rest));
    etcdops(&a, env)
}

/// Runs etcdops against the cluster as `user:password`.
fn run_as(cluster: &Cluster, user: &str, password: &str, rest: &[&str]) -> Run {
    let mut a = args(&["--endpoints", &cluster.endpoints()]);
    a.extend(["--user".to_string(), format!("{user}:{password}")]);
    a.extend(args(rest));
    etcdops(&a, &[])
}

/// Asserts a successful write and returns its `changed`.
fn changed(run: &Run) -> bool {
    run.expect_code(0);
    run.json()["changed"].as_bool().unwrap()
}

/// Asserts that no run printed any of the secrets, on stdout or stderr.
fn assert_no_secret(runs: &[&Run], secrets: &[&str]) {
    for run in runs {
        let all = format!("{}{}", run.stdout, run.stderr);
        for secret in secrets {
            assert!(!all.contains(secret), "secret {secret:?} leaked:\n{run}");
        }
    }
}

fn write_secret_file(cluster: &Cluster, name: &str, password: &str) -> String {
    let path = cluster.dir().join(name);
    std::fs::write(&path, format!("{password}\n")).unwrap();
    path.display().to_string()
}

/// Whether etcdctl without credentials is refused, i.e. authentication is really on.
fn etcdctl_needs_credentials(cluster: &Cluster) -> bool {
    let out = cluster.etcdctl(&["get", "probe", "--endpoints", &cluster.endpoints()]);
    !out.status.success()
}

#[test]
fn leases_are_listed_with_ttls_and_attached_keys_and_ids_as_etcdctl_prints_them() {
    let cluster = Cluster::start(3, Security::Plain);
    let (with_keys, without_keys) = block_on(async {
        let mut client = cluster.client().await;
        let a = client.lease_grant(600, None).await?.id();
        let b = client.lease_grant(300, None).await?.id();
        for key in ["/lease-a/k1", "/lease-a/k2"] {
            client
                .put(key, "v", Some(PutOptions::new().with_lease(a)))
                .await?;
        }
        Ok::<_, etcd_client::Error>((a, b))
    })
    .unwrap();
    let hex_a = format!("{with_keys:016x}");
    let hex_b = format!("{without_keys:016x}");

    let list = run(&cluster, &["lease", "list", "-w", "json"]);
    list.expect_code(0);
    let leases = list.json()["leases"].as_array().unwrap().clone();
    assert_eq!(leases.len(), 2, "{list}");
    let find = |id: &str| {
        leases
            .iter()
            .find(|l| l["id"] == id)
            .unwrap_or_else(|| panic!("lease {id} missing:\n{list}"))
            .clone()
    };
    let a = find(&hex_a);
    assert_eq!(a["granted_ttl"], 600);
    assert_eq!(a["keys"], 2);
    let remaining = a["remaining_ttl"].as_i64().unwrap();
    assert!(remaining > 0 && remaining <= 600, "{list}");
    let b = find(&hex_b);
    assert_eq!(b["granted_ttl"], 300);
    assert_eq!(b["keys"], 0);

    // etcdctl prints the same IDs (its `lease list` is the oracle for the hex format).
    let etcdctl = cluster.etcdctl(&["lease", "list", "--endpoints", &cluster.endpoints()]);
    let etcdctl_out = String::from_utf8_lossy(&etcdctl.stdout);
    let simple = run(&cluster, &["lease", "list", "-w", "simple"]);
    simple.expect_code(0);
    let sorted = |text: &str| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(&simple.stdout), sorted(&etcdctl_out), "{simple}");

    let ttl = run(
        &cluster,
        &["lease", "timetolive", &hex_a, "--keys", "-w", "json"],
    );
    ttl.expect_code(0);
    let detail = ttl.json();
    assert_eq!(detail["found"], true);
    assert_eq!(detail["granted_ttl"], 600);
    let mut keys: Vec<String> = detail["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    keys.sort();
    assert_eq!(keys, vec!["/lease-a/k1", "/lease-a/k2"]);

    let oracle = cluster.etcdctl(&[
        "lease",
        "timetolive",
        &hex_a,
        "--keys",
        "--endpoints",
        &cluster.endpoints(),
    ]);
    let oracle = String::from_utf8_lossy(&oracle.stdout);
    assert!(
        oracle.starts_with(&format!("lease {hex_a} granted with TTL(600s)")),
        "{oracle}"
    );
    let ours = run(&cluster, &["lease", "timetolive", &hex_a, "-w", "simple"]);
    assert!(
        ours.stdout
            .starts_with(&format!("lease {hex_a} granted with TTL(600s), remaining(")),
        "{ours}"
    );

    // Without --keys no keys are asked for; unpadded hex is accepted.
    let bare = run(
        &cluster,
        &[
            "lease",
            "timetolive",
            hex_b.trim_start_matches('0'),
            "-w",
            "json",
        ],
    );
    bare.expect_code(0);
    assert_eq!(bare.json()["keys"], serde_json::Value::Null);
    assert_eq!(bare.json()["id"], hex_b.as_str());

    // A lease that does not exist: exit code 1, as etcdctl words it in simple output.
    let gone = run(
        &cluster,
        &["lease", "timetolive", "7fffffff00000001", "-w", "json"],
    );
    gone.expect_code(1);
    assert_eq!(gone.json()["found"], false);
    let bad = run(&cluster, &["lease", "timetolive", "not-hex"]);
    assert_eq!(bad.code, 2, "{bad}");
}

#[test]
fn users_and_roles_are_managed_idempotently_and_passwords_never_show() {
    let cluster = Cluster::start(3, Security::Auth);
    let alice_pw = "Alice-Pw-7f3c9";
    let alice_new_pw = "Alice-New-Pw-99";
    let bob_pw = "Bob-Pw-from-env-42";
    let alice_file = write_secret_file(&cluster, "alice.pw", alice_pw);
    let mut runs = Vec::new();

    let role_add = run(&cluster, &["role", "add", "app", "-w", "json"]);
    assert!(changed(&role_add));
    let role_again = run(&cluster, &["role", "add", "app", "-w", "json"]);
    assert!(!changed(&role_again));
    assert!(
        role_again.json()["message"]
            .as_str()
            .unwrap()
            .contains("already exists"),
        "{role_again}"
    );

    let grant = [
        "role",
        "grant-permission",
        "app",
        "readwrite",
        "/app/",
        "--prefix",
        "-w",
        "json",
    ];
    assert!(changed(&run(&cluster, &grant)));
    assert!(!changed(&run(&cluster, &grant)));
    let role = run(&cluster, &["role", "get", "app", "-w", "json"]);
    role.expect_code(0);
    let perms = role.json()["permissions"].clone();
    assert_eq!(perms.as_array().unwrap().len(), 1, "{role}");
    assert_eq!(perms[0]["permission"], "readwrite");
    assert_eq!(perms[0]["key"], "/app/");
    assert_eq!(perms[0]["prefix"], true);
    // etcdctl sees the same prefix permission.
    let oracle = cluster.etcdctl(&["role", "get", "app", "--endpoints", &cluster.endpoints()]);
    let oracle = String::from_utf8_lossy(&oracle.stdout);
    assert!(oracle.contains("[/app/, /app0)"), "{oracle}");

    // Users: password from a file, then again (no change), from an environment variable.
    let add = run(
        &cluster,
        &[
            "user",
            "add",
            "alice",
            "--password-file",
            &alice_file,
            "-w",
            "json",
        ],
    );
    assert!(changed(&add));
    let add_again = run_env(
        &cluster,
        &[
            "user",
            "add",
            "alice",
            "--password-env",
            "ALICE_PW",
            "-w",
            "json",
        ],
        &[("ALICE_PW", alice_pw)],
    );
    assert!(!changed(&add_again));
    let bob = run_env(
        &cluster,
        &[
            "user",
            "add",
            "bob",
            "--password-env",
            "BOB_PW",
            "-w",
            "json",
        ],
        &[("BOB_PW", bob_pw)],
    );
    assert!(changed(&bob));
    let missing_var = run_env(
        &cluster,
        &["user", "add", "carol", "--password-env", "NOPE_PW"],
        &[],
    );
    assert_clear_error(&missing_var, "NOPE_PW is not set");

    let users = run(&cluster, &["user", "list", "-w", "json"]);
    users.expect_code(0);
    assert_eq!(
        users.json()["users"],
        serde_json::json!(["alice", "bob", "root"])
    );

    let grant_role = ["user", "grant-role", "alice", "app", "-w", "json"];
    assert!(changed(&run(&cluster, &grant_role)));
    assert!(!changed(&run(&cluster, &grant_role)));
    let alice = run(&cluster, &["user", "get", "alice", "-w", "json"]);
    alice.expect_code(0);
    assert_eq!(alice.json()["roles"], serde_json::json!(["app"]));
    let no_such_role = run(&cluster, &["user", "grant-role", "alice", "nope"]);
    assert_clear_error(&no_such_role, "role 'nope' does not exist");

    // The new users can authenticate with the passwords they were given.
    let alice_in = run_as(
        &cluster,
        "alice",
        alice_pw,
        &["member", "list", "-w", "json"],
    );
    alice_in.expect_code(0);
    run_as(&cluster, "bob", bob_pw, &["member", "list", "-w", "json"]).expect_code(0);
    let wrong = run_as(&cluster, "bob", alice_pw, &["member", "list"]);
    assert_clear_error(&wrong, "authentication as 'bob'");

    // A new password: changed, then the same again is not; only the new one works.
    let passwd = run_env(
        &cluster,
        &[
            "user",
            "passwd",
            "alice",
            "--password-env",
            "NEW_PW",
            "-w",
            "json",
        ],
        &[("NEW_PW", alice_new_pw)],
    );
    assert!(changed(&passwd));
    let passwd_again = run_env(
        &cluster,
        &[
            "user",
            "passwd",
            "alice",
            "--password-env",
            "NEW_PW",
            "-w",
            "json",
        ],
        &[("NEW_PW", alice_new_pw)],
    );
    assert!(!changed(&passwd_again));
    let old_pw = run_as(&cluster, "alice", alice_pw, &["member", "list"]);
    assert_clear_error(&old_pw, "wrong user name or password");
    run_as(&cluster, "alice", alice_new_pw, &["member", "list"]).expect_code(0);

    // Teardown, each step twice: changed, then not.
    for step in [
        &["user", "revoke-role", "alice", "app", "-w", "json"][..],
        &[
            "role",
            "revoke-permission",
            "app",
            "/app/",
            "--prefix",
            "-w",
            "json",
        ],
        &["user", "delete", "alice", "-w", "json"],
        &["role", "delete", "app", "-w", "json"],
    ] {
        let first = run(&cluster, step);
        assert!(changed(&first), "{first}");
        let second = run(&cluster, step);
        assert!(!changed(&second), "{second}");
        runs.push(first);
        runs.push(second);
    }
    let users = run(&cluster, &["user", "list", "-w", "json"]);
    assert_eq!(users.json()["users"], serde_json::json!(["bob", "root"]));
    let roles = run(&cluster, &["role", "list", "-w", "json"]);
    roles.expect_code(0);
    assert!(
        !roles.json()["roles"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "app"),
        "{roles}"
    );

    // Every table and simple rendering too: none prints a password.
    let table = run(&cluster, &["user", "get", "bob"]);
    table.expect_code(0);
    assert!(table.stdout.contains("bob"), "{table}");
    runs.extend([
        role_add,
        role_again,
        role,
        add,
        add_again,
        bob,
        missing_var,
        users,
        alice,
        no_such_role,
        alice_in,
        wrong,
        passwd,
        passwd_again,
        old_pw,
        roles,
        table,
    ]);
    let refs: Vec<&Run> = runs.iter().collect();
    assert_no_secret(&refs, &[alice_pw, alice_new_pw, bob_pw, ROOT_PASSWORD]);
}

#[test]
fn auth_enable_needs_a_root_user_with_the_root_role_and_disable_turns_it_off() {
    let cluster = Cluster::start(1, Security::Plain);
    let root_file = write_secret_file(&cluster, "root.pw", ROOT_PASSWORD);

    let status = run(&cluster, &["auth", "status", "-w", "json"]).json();
    assert_eq!(status["enabled"], false);
    assert_eq!(status["root_user_exists"], false);

    let no_root = run(&cluster, &["auth", "enable"]);
    assert_clear_error(&no_root, "root user does not exist");
    assert!(no_root.stderr.contains("user add root"), "{no_root}");

    // No password source and no terminal (stdin is not one here): refused, saying how.
    let no_source = run(&cluster, &["user", "add", "root"]);
    assert_clear_error(&no_source, "--password-file");
    assert!(no_source.stderr.contains("--password-env"), "{no_source}");
    let users = run(&cluster, &["user", "list", "-w", "json"]).json();
    assert_eq!(users["users"], serde_json::json!([]));

    let add_root = run(
        &cluster,
        &[
            "user",
            "add",
            "root",
            "--password-file",
            &root_file,
            "-w",
            "json",
        ],
    );
    assert!(changed(&add_root));
    let no_role = run(&cluster, &["auth", "enable"]);
    assert_clear_error(&no_role, "lacks the root role");
    assert!(changed(&run(
        &cluster,
        &["user", "grant-role", "root", "root", "-w", "json"]
    )));
    let status = run(&cluster, &["auth", "status", "-w", "json"]).json();
    assert_eq!(status["root_has_root_role"], true);
    assert_eq!(status["enabled"], false);
    assert!(!etcdctl_needs_credentials(&cluster));

    let enable = run(&cluster, &["auth", "enable", "-w", "json"]);
    assert!(changed(&enable));
    assert!(etcdctl_needs_credentials(&cluster));
    let again = run_as(
        &cluster,
        "root",
        ROOT_PASSWORD,
        &["auth", "enable", "-w", "json"],
    );
    assert!(!changed(&again));
    // Status needs no credentials.
    let status = run(&cluster, &["auth", "status", "-w", "json"]);
    status.expect_code(0);
    assert_eq!(status.json()["enabled"], true);
    let simple = run(&cluster, &["auth", "status", "-w", "simple"]);
    assert_eq!(
        simple.stdout.trim(),
        "Authentication Status: true",
        "{simple}"
    );

    // Disabling takes the root role.
    let anonymous = run(&cluster, &["auth", "disable"]);
    // The library says which user; the CLI adds the flag that gives one.
    assert_clear_error(&anonymous, "user root");
    assert!(anonymous.stderr.contains("(--user)"), "{anonymous}");
    let disable = run_as(
        &cluster,
        "root",
        ROOT_PASSWORD,
        &["auth", "disable", "-w", "json"],
    );
    assert!(changed(&disable));
    assert!(!etcdctl_needs_credentials(&cluster));
    assert_eq!(
        run(&cluster, &["auth", "status", "-w", "json"]).json()["enabled"],
        false
    );
    let disable_again = run(&cluster, &["auth", "disable", "-w", "json"]);
    assert!(!changed(&disable_again));

    assert_no_secret(
        &[
            &no_root,
            &no_source,
            &add_root,
            &no_role,
            &enable,
            &again,
            &anonymous,
            &disable,
            &disable_again,
        ],
        &[ROOT_PASSWORD],
    );
}

#[test]
fn auth_enable_is_refused_on_a_kubernetes_cluster_unless_forced() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/registry/pods/default/pod-", 2);
    let root_file = write_secret_file(&cluster, "root.pw", ROOT_PASSWORD);
    assert!(changed(&run(
        &cluster,
        &[
            "user",
            "add",
            "root",
            "--password-file",
            &root_file,
            "-w",
            "json"
        ]
    )));
    assert!(changed(&run(
        &cluster,
        &["user", "grant-role", "root", "root", "-w", "json"]
    )));

    let refused = run(&cluster, &["auth", "enable"]);
    assert_clear_error(&refused, "/registry/");
    for needle in [
        "kube-apiserver",
        "client certificate",
        "readwrite",
        "--force",
    ] {
        assert!(
            refused.stderr.contains(needle),
            "missing {needle:?}:\n{refused}"
        );
    }
    assert_eq!(
        run(&cluster, &["auth", "status", "-w", "json"]).json()["enabled"],
        false
    );
    assert!(!etcdctl_needs_credentials(&cluster));

    let forced = run(&cluster, &["auth", "enable", "--force", "-w", "json"]);
    assert!(changed(&forced));
    let warnings = forced.json()["warnings"].clone();
    assert!(
        warnings[0].as_str().unwrap().contains("kube-apiserver"),
        "{forced}"
    );
    assert!(forced.stderr.contains("warning:"), "{forced}");
    assert!(etcdctl_needs_credentials(&cluster));
    assert_eq!(
        run(&cluster, &["auth", "status", "-w", "json"]).json()["enabled"],
        true
    );
}
