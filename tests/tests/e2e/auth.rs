use etcdops_tests::{Cluster, ROOT_PASSWORD, Security, args, etcdops};

use crate::assert_clear_error;

#[test]
fn user_and_password_from_flags_or_environment_with_flags_winning() {
    let cluster = Cluster::start(1, Security::Auth);
    let endpoint = cluster.members[0].client_url.clone();
    let list = |extra: &[&str], env: &[(&str, &str)]| {
        // etcd checks each password with bcrypt: on a loaded machine that takes longer than
        // the 2 s default, and this test is about which credentials win, not about timeouts.
        let mut a = args(&["--endpoints", &endpoint, "--command-timeout", "30s"]);
        a.extend(args(extra));
        a.extend(args(&["member", "list", "-w", "json"]));
        etcdops(&a, env)
    };

    list(&["--user", "root", "--password", ROOT_PASSWORD], &[]).expect_code(0);
    list(&["--user", &format!("root:{ROOT_PASSWORD}")], &[]).expect_code(0);
    list(
        &[],
        &[
            ("ETCDCTL_USER", "root"),
            ("ETCDCTL_PASSWORD", ROOT_PASSWORD),
        ],
    )
    .expect_code(0);

    // Flag beats environment, both ways round.
    list(
        &["--password", ROOT_PASSWORD],
        &[
            ("ETCDCTL_USER", "root"),
            ("ETCDCTL_PASSWORD", "wrong-env-pw"),
        ],
    )
    .expect_code(0);
    let env_right_flag_wrong = list(
        &["--password", "wrong-flag-pw"],
        &[
            ("ETCDCTL_USER", "root"),
            ("ETCDCTL_PASSWORD", ROOT_PASSWORD),
        ],
    );
    assert_clear_error(&env_right_flag_wrong, "authentication as 'root'");

    // A wrong password is named as such, and no password is ever printed.
    let wrong = list(&["--user", "root:Not-The-Pw-123"], &[]);
    assert_clear_error(&wrong, "wrong user name or password");
    for run in [&wrong, &env_right_flag_wrong] {
        let all = format!("{}{}", run.stdout, run.stderr);
        for secret in [ROOT_PASSWORD, "Not-The-Pw-123", "wrong-flag-pw"] {
            assert!(!all.contains(secret), "secret leaked:\n{run}");
        }
    }

    // A user with no password at all is refused before any connection.
    let no_pw = list(&["--user", "root"], &[]);
    assert_clear_error(&no_pw, "has no password");

    // Health through auth: the linearizable read is authorized for root.
    let mut a = args(&[
        "--endpoints",
        &endpoint,
        "--user",
        &format!("root:{ROOT_PASSWORD}"),
    ]);
    a.extend(args(&["endpoint", "health", "-w", "json"]));
    let health = etcdops(&a, &[]);
    health.expect_code(0);
    assert_eq!(health.json()["all_healthy"], true);
}
