use etcdops_tests::{Cluster, DnsServer, Security, SrvRecord, args, etcdops};

use crate::assert_clear_error;

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn srv_discovery_finds_plain_http_members() {
    let cluster = Cluster::start(3, Security::Plain);
    let records: Vec<SrvRecord> = cluster
        .members
        .iter()
        .map(|m| SrvRecord {
            name: "_etcd-client._tcp.example.test".into(),
            target: "localhost".into(),
            port: port_of(&m.client_url),
        })
        .collect();
    let dns = DnsServer::start(cluster.dir(), &records);

    let run = etcdops(
        &args(&[
            "-d",
            "example.test",
            "--dns-server",
            &dns.address,
            "endpoint",
            "health",
            "-w",
            "json",
        ]),
        &[],
    );
    run.expect_code(0);
    let report = run.json();
    let mut found: Vec<String> = report["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["endpoint"].as_str().unwrap().to_string())
        .collect();
    found.sort();
    let mut expected: Vec<String> = cluster
        .members
        .iter()
        .map(|m| format!("http://localhost:{}", port_of(&m.client_url)))
        .collect();
    expected.sort();
    assert_eq!(found, expected);

    // The same through ETCDCTL_DISCOVERY_SRV and ETCDOPS_DNS_SERVER.
    let by_env = etcdops(
        &args(&["member", "list", "-w", "json"]),
        &[
            ("ETCDCTL_DISCOVERY_SRV", "example.test"),
            ("ETCDOPS_DNS_SERVER", &dns.address),
        ],
    );
    by_env.expect_code(0);
    assert_eq!(by_env.json()["members"].as_array().unwrap().len(), 3);

    // With insecure discovery off, plain-http records are ignored, and that is explained.
    let strict = etcdops(
        &args(&[
            "-d",
            "example.test",
            "--dns-server",
            &dns.address,
            "--insecure-discovery=false",
            "member",
            "list",
        ]),
        &[],
    );
    assert_clear_error(&strict, "found no etcd client endpoints");
}

#[test]
fn srv_discovery_of_tls_members_with_a_service_name() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.as_ref().unwrap();
    let dns = DnsServer::start(
        cluster.dir(),
        &[SrvRecord {
            name: "_etcd-client-ssl-prod._tcp.example.test".into(),
            target: "localhost".into(),
            port: port_of(&cluster.members[0].client_url),
        }],
    );
    let run = etcdops(
        &args(&[
            "--discovery-srv",
            "example.test",
            "--discovery-srv-name",
            "prod",
            "--dns-server",
            &dns.address,
            "--cacert",
            &certs.ca.display().to_string(),
            "--cert",
            &certs.client_cert.display().to_string(),
            "--key",
            &certs.client_key.display().to_string(),
            "endpoint",
            "status",
            "-w",
            "json",
        ]),
        &[],
    );
    run.expect_code(0);
    let report = run.json();
    assert_eq!(
        report["endpoints"][0]["endpoint"],
        format!(
            "https://localhost:{}",
            port_of(&cluster.members[0].client_url)
        )
    );
    assert_eq!(
        report["endpoints"][0]["version"],
        cluster.version.version_string()
    );
}
