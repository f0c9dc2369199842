use etcdops_tests::{Cluster, Security, args, etcdops, free_port};

use crate::assert_clear_error;

#[test]
fn etcdctl_environment_is_read_and_flags_win() {
    let cluster = Cluster::start(1, Security::Plain);
    let live = cluster.members[0].client_url.clone();
    let dead = format!("http://127.0.0.1:{}", free_port());

    let from_env = etcdops(
        &args(&["endpoint", "status", "-w", "json"]),
        &[("ETCDCTL_ENDPOINTS", &live)],
    );
    from_env.expect_code(0);
    assert_eq!(from_env.json()["endpoints"][0]["endpoint"], live.as_str());

    let flag_wins = etcdops(
        &args(&["--endpoints", &live, "endpoint", "status", "-w", "json"]),
        &[("ETCDCTL_ENDPOINTS", &dead)],
    );
    flag_wins.expect_code(0);
    assert_eq!(flag_wins.json()["endpoints"][0]["endpoint"], live.as_str());

    // Timeouts from the environment are used (and named in messages).
    let env_timeout = etcdops(
        &args(&["member", "list"]),
        &[
            ("ETCDCTL_ENDPOINTS", &dead),
            ("ETCDCTL_DIAL_TIMEOUT", "750ms"),
        ],
    );
    assert_clear_error(&env_timeout, "within 750ms");
    let flag_timeout = etcdops(
        &args(&["--dial-timeout", "1s", "member", "list"]),
        &[
            ("ETCDCTL_ENDPOINTS", &dead),
            ("ETCDCTL_DIAL_TIMEOUT", "750ms"),
        ],
    );
    assert_clear_error(&flag_timeout, "within 1s");

    let bad_env = etcdops(
        &args(&["member", "list"]),
        &[
            ("ETCDCTL_ENDPOINTS", &live),
            ("ETCDCTL_COMMAND_TIMEOUT", "soon"),
        ],
    );
    assert_clear_error(&bad_env, "ETCDCTL_COMMAND_TIMEOUT");
}
