//! etcd started with `--auto-tls` (its own self-signed certificate, a P-521 key) reached with
//! `--insecure-skip-tls-verify`, and the endpoint forms etcdctl accepts (`:PORT`, a bracketed
//! IPv4 address) reaching the same member as etcdctl does.

use etcdops_tests::{Cluster, Security, args, assert_same_output, etcdops, side_by_side};

/// The port of the cluster's only member.
fn port(cluster: &Cluster) -> String {
    let url = &cluster.members[0].client_url;
    url.rsplit_once(':').unwrap().1.to_string()
}

#[test]
fn an_auto_tls_member_answers_endpoint_status_with_verification_skipped() {
    let cluster = Cluster::start(1, Security::AutoTls);
    let url = cluster.members[0].client_url.clone();
    assert!(url.starts_with("https://"), "{url}");

    // Our own personality: `--insecure-skip-tls-verify` alone is enough.
    let ours = etcdops(
        &args(&[
            "--endpoints",
            &url,
            "--insecure-skip-tls-verify",
            "endpoint",
            "status",
            "-w",
            "json",
        ]),
        &[],
    );
    ours.expect_code(0);
    let row = &ours.json()["endpoints"][0];
    assert_eq!(row["endpoint"], url.as_str(), "{ours}");
    assert!(row["error"].is_null(), "{ours}");
    assert!(
        row["version"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{ours}"
    );

    // etcdctl's personality, the same flag.
    let compat = etcdops(
        &args(&[
            "--endpoints",
            &url,
            "--insecure-skip-tls-verify",
            "endpoint",
            "status",
        ]),
        &[("ETCDOPS_COMPAT", "etcdctl")],
    );
    compat.expect_code(0);
    assert!(compat.stdout.starts_with(&format!("{url}, ")), "{compat}");

    // Side by side with etcdctl (which also needs --insecure-transport=false, the cluster's
    // flags), through kubeadm's old probe endpoint: a bracketed IPv4 address. Stdout and exit
    // code alike; stderr differs by our warning that verification is skipped.
    let bracketed = format!("https://[127.0.0.1]:{}", port(&cluster));
    let both = side_by_side(
        &cluster,
        &["--endpoints", &bracketed, "endpoint", "status"],
        &[],
    );
    assert_eq!(both.etcdctl.code, 0, "{both}");
    assert_eq!(both.etcdops.code, 0, "{both}");
    assert_eq!(both.etcdctl.stdout, both.etcdops.stdout, "{both}");
    assert!(
        both.etcdops.stdout.starts_with(&format!("{bracketed}, ")),
        "{both}"
    );
}

#[test]
fn an_empty_host_is_the_local_member_as_for_etcdctl() {
    // etcd's compaction recipe: `etcdctl --endpoints=:2379 ...`.
    let cluster = Cluster::start(1, Security::Plain);
    let empty_host = format!(":{}", port(&cluster));
    let both = assert_same_output(
        &cluster,
        &["--endpoints", &empty_host, "endpoint", "status"],
    );
    assert_eq!(both.etcdops.code, 0, "{both}");
    assert!(
        both.etcdops.stdout.starts_with(&format!("{empty_host}, ")),
        "{both}"
    );

    let ours = etcdops(
        &args(&[
            "--endpoints",
            &empty_host,
            "endpoint",
            "status",
            "-w",
            "json",
        ]),
        &[],
    );
    ours.expect_code(0);
    assert_eq!(
        ours.json()["endpoints"][0]["endpoint"],
        cluster.members[0].client_url.as_str(),
        "{ours}"
    );
}
