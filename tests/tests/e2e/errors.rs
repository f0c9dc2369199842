use std::net::TcpListener;

use etcdops_tests::{DnsServer, args, etcdops, free_port};

use crate::assert_clear_error;

#[test]
fn unreachable_endpoint_is_named_with_its_timeout() {
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let run = etcdops(&args(&["--endpoints", &endpoint, "member", "list"]), &[]);
    assert_clear_error(&run, &endpoint);
    assert!(run.stderr.contains("within 2s (dial timeout)"), "{run}");
    assert!(run.stderr.contains("connection refused"), "{run}");

    // endpoint health reports it as an unhealthy row, exit code 1.
    let health = etcdops(
        &args(&["--endpoints", &endpoint, "endpoint", "health", "-w", "json"]),
        &[],
    );
    health.expect_code(1);
    assert_eq!(health.json()["endpoints"][0]["health"], false);
}

#[test]
fn a_server_that_never_answers_hits_the_timeouts() {
    if etcdops_tests::skip_on_etcd_3_4("the server is a silent TCP listener, not etcd") {
        return;
    }
    // Accepts TCP connections and never speaks: neither HTTP/2 nor TLS gets an answer.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let plain = etcdops(
        &args(&[
            "--endpoints",
            &format!("http://127.0.0.1:{port}"),
            "--dial-timeout",
            "500ms",
            "--command-timeout",
            "1s",
            "member",
            "list",
        ]),
        &[],
    );
    assert_clear_error(&plain, "timed out");
    let tls = etcdops(
        &args(&[
            "--endpoints",
            &format!("https://127.0.0.1:{port}"),
            "--insecure-skip-tls-verify",
            "--dial-timeout",
            "500ms",
            "member",
            "list",
        ]),
        &[],
    );
    assert_clear_error(&tls, "within 500ms");
    drop(listener);
}

#[test]
fn malformed_endpoints_are_refused_before_connecting() {
    for (endpoint, needle) in [
        ("http://127.0.0.1:notaport", "invalid endpoint"),
        ("ftp://127.0.0.1:2379", "scheme 'ftp'"),
        ("http://127.0.0.1", "no port"),
        ("127.0.0.1:99999", "out of range"),
        ("::1:2379", "IPv6 address in brackets"),
        ("http://root:pw@127.0.0.1:2379", "credentials in the URL"),
    ] {
        let run = etcdops(&args(&["--endpoints", endpoint, "member", "list"]), &[]);
        assert_clear_error(&run, needle);
    }
    let bad_flag = etcdops(&args(&["--dial-timeout", "soon", "member", "list"]), &[]);
    assert_eq!(bad_flag.code, 2, "{bad_flag}");
    assert!(bad_flag.stderr.contains("not a duration"), "{bad_flag}");
}

/// A password in an endpoint URL is never shown, even when it holds '/', '?' or '#' (base64
/// passwords do), which a URL parser takes for the end of the host: neither the whole
/// password nor its first part read as a port, in either mode, from the flag or the variable.
#[test]
fn endpoint_passwords_with_url_delimiters_are_never_echoed() {
    for endpoint in [
        "http://root:Sekr1t/Tail@127.0.0.1:2379",
        "https://root:Sekr1t#Tail@127.0.0.1:2379",
        "http://root:Sekr1t?Tail@127.0.0.1:2379",
        "root:Sekr1t/Tail@127.0.0.1:2379",
    ] {
        for compat in ["etcdops", "etcdctl"] {
            for via_env in [false, true] {
                let mut argv = vec!["--compat", compat];
                let mut env = vec![];
                if via_env {
                    env.push(("ETCDCTL_ENDPOINTS", endpoint));
                } else {
                    argv.extend(["--endpoints", endpoint]);
                }
                argv.extend(["endpoint", "health"]);
                let run = etcdops(&args(&argv), &env);
                assert_ne!(run.code, 0, "{run}");
                assert!(run.stderr.contains("credentials in the URL"), "{run}");
                for part in ["Sekr1t", "Tail"] {
                    assert!(
                        !run.stderr.contains(part) && !run.stdout.contains(part),
                        "{part} shown:\n{run}"
                    );
                }
            }
        }
    }
}

#[test]
fn srv_lookup_without_records_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let dns = DnsServer::start(dir.path(), &[]);
    let run = etcdops(
        &args(&[
            "--discovery-srv",
            "nothing.example.test",
            "--dns-server",
            &dns.address,
            "member",
            "list",
        ]),
        &[],
    );
    assert_clear_error(&run, "found no etcd client endpoints");
    assert!(
        run.stderr
            .contains("_etcd-client-ssl._tcp.nothing.example.test"),
        "{run}"
    );
    assert!(
        run.stderr
            .contains("_etcd-client._tcp.nothing.example.test"),
        "{run}"
    );
}

#[test]
fn usage_errors_exit_2_without_panicking() {
    let run = etcdops(&args(&["endpoint", "frobnicate"]), &[]);
    assert_eq!(run.code, 2, "{run}");
    assert!(!run.stderr.contains("panicked"), "{run}");
    let run = etcdops(&args(&["--password", "x", "member", "list"]), &[]);
    assert_clear_error(&run, "without a user");
    assert!(!run.stderr.contains(" x "), "{run}");
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    use std::process::{Command, Stdio};
    let cluster = etcdops_tests::Cluster::start(1, etcdops_tests::Security::Plain);
    let mut child = Command::new(etcdops_tests::etcdops_path())
        .args([
            "--endpoints",
            &cluster.members[0].client_url,
            "member",
            "list",
            "-w",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before etcdops writes, as `| head -0` would.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn member_remove_of_an_empty_member_is_refused() {
    let cluster = etcdops_tests::Cluster::start(1, etcdops_tests::Security::Plain);
    for member in ["", "  ", "m0\n"] {
        let run = crate::run(&cluster, &["member", "remove", member]);
        assert_clear_error(&run, "invalid member");
    }
    // The member is still there.
    let list = crate::run(&cluster, &["member", "list", "-w", "json"]);
    list.expect_code(0);
    assert_eq!(list.json()["members"].as_array().unwrap().len(), 1);
}
