//! Standalone etcd clusters: etcd's config file from `etcd_host::write_server_config` (with
//! certificates from `etcd_host`'s PKI) started by real etcd, and the `etcd.core.cluster` role
//! run by real ansible-core against real etcd members, each on its own loopback address, under
//! the test supervisor (the stand-in for systemd): peers then clients switched to TLS member by
//! member under a reading client, and a bootstrap from DNS SRV records served by a real
//! dnsmasq. Bootstrap, grow, shrink, reruns and check mode in every state:
//! `ansible_cluster_states.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use etcd_host::{
    CaRequest, ClusterState, LogLevel, MemberCertRequest, ServerConfig, ServerConfigRequest,
    TransportSecurity, ensure_ca, ensure_member_certificate, write_server_config,
};
use etcdops_tests::{
    Collection, EtcdVersion, PlaybookRun, SrvRecord, StandaloneHosts, SystemDns, args, block_on,
    etcdops, free_port, spawn_logged,
};
use serde_json::{Value, json};

fn play(vars: &Value) -> String {
    json!([{
        "hosts": "all",
        "gather_facts": false,
        "roles": [{"role": "etcd.core.cluster", "vars": vars}],
    }])
    .to_string()
}

fn run_role(collection: &Collection, inventory: &str, vars: &Value) -> PlaybookRun {
    let run = collection.playbook(&play(vars), inventory, &json!({}), &[], &[]);
    assert_eq!(run.code, 0, "{run}");
    run
}

/// Every host of the recap reports `changed=0`.
fn assert_nothing_changed(run: &PlaybookRun) {
    let recap: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains(" : ok="))
        .collect();
    assert!(!recap.is_empty(), "no recap:\n{run}");
    for line in recap {
        assert!(
            line.contains("changed=0"),
            "second run changed something: {line}\n{run}"
        );
    }
}

/// (name, is_learner, peer URLs) of every member, sorted by name.
fn members(urls: &[String]) -> Vec<(String, bool, Vec<String>)> {
    block_on(async {
        let mut client = etcd_client::Client::connect(urls.to_vec(), None)
            .await
            .expect("connect");
        let mut out: Vec<(String, bool, Vec<String>)> = client
            .member_list()
            .await
            .expect("member list")
            .members()
            .iter()
            .map(|m| (m.name().to_string(), m.is_learner(), m.peer_urls().to_vec()))
            .collect();
        out.sort();
        out
    })
}

fn names(members: &[(String, bool, Vec<String>)]) -> Vec<String> {
    members.iter().map(|m| m.0.clone()).collect()
}

fn put(urls: &[String], key: &str, value: &str) {
    block_on(async {
        let mut client = etcd_client::Client::connect(urls.to_vec(), None)
            .await
            .expect("connect");
        client.put(key, value, None).await.expect("put");
    });
}

fn wait_until(limit: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn config_file_from_the_library_starts_real_etcd_with_client_and_peer_tls() {
    let version = EtcdVersion::from_env();
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    // Certificates from `etcdops pki`: made once, kept on a second run, keys never printed.
    let ca = CaRequest::new(pki.join("ca.crt"), pki.join("ca.key"));
    let mut member = MemberCertRequest::new(&ca, "m0", pki.join("m0.crt"), pki.join("m0.key"));
    let ca_flags = [
        "--ca-cert".to_string(),
        ca.cert_path.display().to_string(),
        "--ca-key".to_string(),
        ca.key_path.display().to_string(),
    ];
    let mut make_ca = args(&["pki", "ca", "-w", "json"]);
    make_ca.extend(ca_flags.iter().cloned());
    let mut make_member = args(&["pki", "member", "-w", "json", "--name", "m0"]);
    make_member.extend(ca_flags.iter().cloned());
    make_member.extend(args(&["--dns", "localhost", "--ip", "127.0.0.1", "--cert"]));
    make_member.push(member.cert_path.display().to_string());
    make_member.push("--key".into());
    make_member.push(member.key_path.display().to_string());
    for (round, changed) in [(1, true), (2, false)] {
        for cmd in [&make_ca, &make_member] {
            let run = etcdops(cmd, &[]);
            assert_eq!(run.code, 0, "round {round}: {run}");
            assert_eq!(
                run.json()["changed"],
                json!(changed),
                "round {round}: {run}"
            );
            assert!(!run.stdout.contains("PRIVATE KEY"), "{run}");
        }
    }
    // A member certificate without a name it is reached at is refused, and the hint is a
    // flag this command has.
    let mut no_names: Vec<String> = args(&["pki", "member", "--name", "m1"]);
    no_names.extend(ca_flags.iter().cloned());
    for (flag, file) in [("--cert", "m1.crt"), ("--key", "m1.key")] {
        no_names.extend([flag.to_string(), pki.join(file).display().to_string()]);
    }
    let refused = etcdops(&no_names, &[]);
    assert_ne!(refused.code, 0, "{refused}");
    assert!(refused.stderr.contains("--dns-names"), "{refused}");
    let named = [
        no_names.clone(),
        args(&["--dns-names", "localhost", "--dry-run"]),
    ]
    .concat();
    let run = etcdops(&named, &[]);
    assert_eq!(run.code, 0, "{run}");
    let key_mode = std::fs::metadata(&member.key_path).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&key_mode) & 0o777,
        0o600
    );
    // The library agrees the files are valid as they are.
    member.dns_names = vec!["localhost".into()];
    member.ip_addresses = vec!["127.0.0.1".parse().unwrap()];
    assert!(!ensure_member_certificate(&member).unwrap().changed);
    assert!(!ensure_ca(&ca).unwrap().changed);
    let (client_port, peer_port, metrics_port) = (free_port(), free_port(), free_port());
    let tls = TransportSecurity {
        cert_file: Some(member.cert_path.clone()),
        key_file: Some(member.key_path.clone()),
        trusted_ca_file: Some(ca.cert_path.clone()),
        client_cert_auth: true,
    };
    let peer_url = format!("https://127.0.0.1:{peer_port}");
    let config = ServerConfig {
        name: "m0".into(),
        data_dir: dir.path().join("data"),
        listen_client_urls: vec![format!("https://127.0.0.1:{client_port}")],
        listen_peer_urls: vec![peer_url.clone()],
        initial_cluster: vec![format!("m0={peer_url}")],
        initial_cluster_state: Some(ClusterState::New),
        initial_cluster_token: Some("config-file-test".into()),
        client_tls: tls.clone(),
        peer_tls: tls,
        quota_backend_bytes: Some(123_456_789),
        snapshot_count: Some(5555),
        listen_metrics_urls: vec![format!("http://127.0.0.1:{metrics_port}")],
        log_level: Some(LogLevel::Warn),
        extra: [("max-txn-ops".to_string(), "256".to_string())].into(),
        ..Default::default()
    };
    let path = dir.path().join("etcd.yaml");
    let written = write_server_config(&ServerConfigRequest {
        path: path.clone(),
        config,
        check_mode: false,
    })
    .unwrap();
    assert!(written.changed);
    let log = dir.path().join("etcd.log");
    let mut cmd = std::process::Command::new(version.etcd());
    cmd.arg("--config-file").arg(&path);
    let mut etcd = spawn_logged(cmd, &log);
    let endpoint = format!("https://127.0.0.1:{client_port}");
    let etcdctl = |with_cert: bool| {
        let mut cmd = std::process::Command::new(version.etcdctl());
        cmd.env("ETCDCTL_API", "3")
            .args(["--endpoints", &endpoint, "--dial-timeout", "2s"])
            .arg(format!("--cacert={}", ca.cert_path.display()));
        if with_cert {
            cmd.arg(format!("--cert={}", member.cert_path.display()))
                .arg(format!("--key={}", member.key_path.display()));
        }
        cmd.args(["endpoint", "health"]).output().unwrap()
    };
    wait_until(Duration::from_secs(30), "etcd serves TLS clients", || {
        etcdctl(true).status.success()
    });
    // client-cert-auth: the same CA without a client certificate is refused.
    assert!(
        !etcdctl(false).status.success(),
        "a client without a certificate got in"
    );
    // quota-backend-bytes and listen-metrics-urls took effect.
    let metrics = std::process::Command::new("curl")
        .args(["-sf", &format!("http://127.0.0.1:{metrics_port}/metrics")])
        .output()
        .unwrap();
    let metrics = String::from_utf8_lossy(&metrics.stdout);
    assert!(
        metrics.contains("etcd_server_quota_backend_bytes 1.23456789e+08"),
        "quota not applied:\n{}",
        metrics
            .lines()
            .filter(|l| l.contains("quota"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The peer listener is TLS with client-cert-auth too.
    let peer = |with_cert: bool| {
        let mut cmd = std::process::Command::new("curl");
        cmd.args(["-sSf", "--http1.1", "--cacert"])
            .arg(&ca.cert_path);
        if with_cert {
            cmd.arg("--cert")
                .arg(&member.cert_path)
                .arg("--key")
                .arg(&member.key_path);
        }
        cmd.arg(format!("{peer_url}/version")).output().unwrap()
    };
    let with_cert = peer(true);
    assert!(
        with_cert.status.success(),
        "peer TLS with the member certificate: {}",
        String::from_utf8_lossy(&with_cert.stderr)
    );
    assert!(
        !peer(false).status.success(),
        "peer TLS without a client certificate"
    );
    let _ = etcd.kill();
    let _ = etcd.wait();
    // log-level warn (with logger zap, which etcd 3.4 needs): no info lines, no capnslog.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("\"level\":\"info\""),
        "info lines at log-level warn:\n{text}"
    );
    assert!(!text.contains("capnslog"), "{text}");
    // The file is plain YAML with etcd's own keys.
    let parsed: serde_yaml_ng::Value = serde_yaml_ng::from_str(&written.after).unwrap();
    assert_eq!(parsed["snapshot-count"], serde_yaml_ng::Value::from(5555));
    assert_eq!(parsed["max-txn-ops"], serde_yaml_ng::Value::from(256));
    assert_eq!(parsed["logger"], serde_yaml_ng::Value::from("zap"));
}

#[test]
fn etcd_config_and_etcd_certificate_modules_in_check_mode_for_real_again_and_in_diff() {
    if etcdops_tests::skip_on_etcd_3_4(
        "writes etcd config files and certificates only; starts no etcd",
    ) {
        return;
    }
    let collection = Collection::install();
    let dir = tempfile::tempdir().unwrap();
    let playbook = json!([{
        "hosts": "all",
        "gather_facts": false,
        "tasks": [{"ansible.builtin.include_role": {"name": collection.target("etcd_config")}}],
    }])
    .to_string();
    let vars = json!({"etcd_cfg_dir": dir.path()});
    let run = collection.playbook(
        &playbook,
        "local ansible_connection=local\n",
        &vars,
        &[],
        &[],
    );
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("failed=0"), "{run}");
    let key = std::fs::read_to_string(dir.path().join("pki/m0.key")).unwrap();
    assert!(
        !run.stdout.contains(key.trim()),
        "the key reached the output"
    );
}

/// How long one read may be retried before it counts as failed.
const READ_RETRY_WINDOW: Duration = Duration::from_secs(3);

/// Reads a key in a loop, each read trying the members in turn (as a client with every
/// endpoint does) and retried for up to [`READ_RETRY_WINDOW`], until stopped; counts reads
/// that no member answered within that window.
struct Reader {
    stop: Arc<AtomicBool>,
    reads: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<Vec<String>>,
}

impl Reader {
    /// `tls`: (CA, certificate, key) PEM files for the https endpoints.
    fn start(
        urls: Vec<String>,
        key: &'static str,
        tls: Option<(PathBuf, PathBuf, PathBuf)>,
    ) -> Reader {
        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(AtomicU64::new(0));
        let (s, r, f) = (stop.clone(), reads.clone(), failures.clone());
        let thread = std::thread::spawn(move || {
            block_on(async move {
                let mut errors = Vec::new();
                let mut i = 0usize;
                // One connection per endpoint, made again after a failure.
                let mut clients: Vec<Option<etcd_client::Client>> = vec![None; urls.len()];
                while !s.load(Ordering::Relaxed) {
                    let mut answered = false;
                    // As etcd's clients do, a read is retried for a short while (a leader
                    // election takes about one election timeout, 1 s by default); it fails
                    // only when no member answers within that window.
                    let deadline = std::time::Instant::now() + READ_RETRY_WINDOW;
                    while !answered {
                        for k in 0..urls.len() {
                            let idx = (i + k) % urls.len();
                            let url = &urls[idx];
                            let options = match (&tls, url.starts_with("https://")) {
                                (Some((ca, cert, key)), true) => {
                                    let read = |p: &PathBuf| std::fs::read(p).expect("read PEM");
                                    Some(
                                        etcd_client::ConnectOptions::new().with_tls(
                                            etcd_client::TlsOptions::new()
                                                .ca_certificate(etcd_client::Certificate::from_pem(
                                                    read(ca),
                                                ))
                                                .identity(etcd_client::Identity::from_pem(
                                                    read(cert),
                                                    read(key),
                                                )),
                                        ),
                                    )
                                }
                                _ => None,
                            };
                            let slot = &mut clients[idx];
                            let read = async {
                                let client = match slot {
                                    Some(client) => client,
                                    None => slot.insert(
                                        etcd_client::Client::connect([url], options).await?,
                                    ),
                                };
                                client.get(key, None).await
                            };
                            let result = tokio::time::timeout(Duration::from_secs(3), read).await;
                            if !matches!(result, Ok(Ok(_))) {
                                clients[idx] = None;
                            }
                            match result {
                                Ok(Ok(resp)) if resp.kvs().len() == 1 => {
                                    answered = true;
                                    break;
                                }
                                Ok(Ok(_)) => errors.push(format!("{url}: key missing")),
                                Ok(Err(e)) => errors.push(format!("{url}: {e}")),
                                Err(_) => errors.push(format!("{url}: timed out")),
                            }
                        }
                        if answered || std::time::Instant::now() >= deadline {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    if answered {
                        r.fetch_add(1, Ordering::Relaxed);
                    } else {
                        f.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                errors
            })
        });
        Reader {
            stop,
            reads,
            failures,
            thread,
        }
    }

    /// Stops; returns (reads answered, reads no member answered, per-member errors).
    fn finish(self) -> (u64, u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let errors = self.thread.join().expect("reader thread");
        (
            self.reads.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
            errors,
        )
    }
}

#[test]
fn cluster_role_switches_peers_then_clients_to_tls_member_by_member_while_a_client_reads() {
    let hosts = StandaloneHosts::plan(3);
    let collection = Collection::install();
    let mut vars = hosts.role_vars();
    vars["cluster_bootstrap"] = json!("serial");
    vars["cluster_pki"] = json!("generate");
    let all: Vec<_> = hosts.hosts.iter().collect();
    let inventory = hosts.inventory(&all, "");
    run_role(&collection, &inventory, &vars);
    let urls: Vec<String> = hosts.hosts.iter().map(|h| h.client_url()).collect();
    let listed = members(&urls);
    assert_eq!(names(&listed), ["h0", "h1", "h2"]);
    assert!(
        listed.iter().all(|m| m.2[0].starts_with("http://")),
        "{listed:?}"
    );
    put(&urls, "/tls/k", "v");

    let reader = Reader::start(urls.clone(), "/tls/k", None);
    vars["cluster_peer_tls"] = json!(true);
    let run = run_role(&collection, &inventory, &vars);
    let (reads, failures, errors) = reader.finish();
    assert_eq!(
        failures, 0,
        "reads no member answered during the switch; errors: {errors:?}"
    );
    assert!(reads > 20, "only {reads} reads during the switch");

    let listed = members(&urls);
    for (name, learner, peer_urls) in &listed {
        assert!(!learner);
        assert_eq!(peer_urls.len(), 1);
        let host = hosts.hosts.iter().find(|h| &h.name == name).unwrap();
        assert_eq!(
            peer_urls[0],
            format!("https://{}:{}", host.ip, host.peer_port),
            "{name}: {peer_urls:?}\n{run}"
        );
    }
    for host in &hosts.hosts {
        let text = std::fs::read_to_string(host.config_file()).unwrap();
        assert!(text.contains("peer-transport-security:"), "{text}");
        assert!(text.contains("client-cert-auth: true"), "{text}");
        let key = host.dir.join(format!("pki/{}.key", host.name));
        let mode = std::fs::metadata(&key).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        // The member restarted serving its peers over TLS.
        assert!(
            host.log().contains("starting with peer TLS"),
            "{}",
            host.name
        );
    }
    // No key material in the play's output.
    assert!(!run.stdout.contains("PRIVATE KEY"), "{run}");
    put(&urls, "/tls/after", "v");

    // Then the clients: each member in turn restarts serving https only. A client that knows
    // both endpoint sets keeps reading throughout.
    let pki = hosts.dir().join("controller-pki");
    let https: Vec<String> = hosts.hosts.iter().map(|h| h.https_url()).collect();
    let both: Vec<String> = https.iter().chain(urls.iter()).cloned().collect();
    let tls = (pki.join("ca.crt"), pki.join("h0.crt"), pki.join("h0.key"));
    let reader = Reader::start(both, "/tls/k", Some(tls));
    vars["cluster_client_tls"] = json!(true);
    run_role(&collection, &inventory, &vars);
    let (reads, failures, errors) = reader.finish();
    assert_eq!(
        failures, 0,
        "reads no member answered during the client switch; errors: {errors:?}"
    );
    assert!(reads > 10, "only {reads} reads during the client switch");
    let etcdctl = |endpoint: &str| {
        let mut cmd = std::process::Command::new(hosts.version.etcdctl());
        cmd.env("ETCDCTL_API", "3").args([
            "--endpoints",
            endpoint,
            "--dial-timeout",
            "2s",
            "--command-timeout",
            "3s",
        ]);
        if endpoint.starts_with("https") {
            cmd.arg(format!("--cacert={}", pki.join("ca.crt").display()))
                .arg(format!("--cert={}", pki.join("h0.crt").display()))
                .arg(format!("--key={}", pki.join("h0.key").display()));
        }
        cmd.args(["get", "/tls/k", "--print-value-only"])
            .output()
            .unwrap()
    };
    for (host, url) in hosts.hosts.iter().zip(&https) {
        let out = etcdctl(url);
        assert!(
            out.status.success(),
            "{url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "v");
        assert!(
            !etcdctl(&host.client_url()).status.success(),
            "{} still serves http",
            host.name
        );
        let text = std::fs::read_to_string(host.config_file()).unwrap();
        assert!(text.contains("client-transport-security:"), "{text}");
    }
    assert_nothing_changed(&run_role(&collection, &inventory, &vars));
}

#[test]
fn cluster_role_bootstraps_from_dns_srv_records_served_by_dnsmasq() {
    if let Some(why) = SystemDns::unavailable() {
        panic!(
            "cannot give etcd a private resolver here ({why}); this test needs root and unshare"
        );
    }
    let mut hosts = StandaloneHosts::plan(3);
    let domain = format!("etcd{}.test", free_port());
    for host in &mut hosts.hosts {
        host.address = format!("{}.{domain}", host.name);
    }
    let mut srv = Vec::new();
    let mut a_records = Vec::new();
    for host in &hosts.hosts {
        srv.push(SrvRecord {
            name: format!("_etcd-server-ssl._tcp.{domain}"),
            target: host.address.clone(),
            port: host.peer_port,
        });
        srv.push(SrvRecord {
            name: format!("_etcd-client._tcp.{domain}"),
            target: host.address.clone(),
            port: host.client_port,
        });
        a_records.push((host.address.clone(), host.ip.clone()));
    }
    let a: Vec<(&str, &str)> = a_records
        .iter()
        .map(|(n, ip)| (n.as_str(), ip.as_str()))
        .collect();
    let dns = SystemDns::start(hosts.dir(), &srv, &a);
    for host in &hosts.hosts {
        let wrapper = dns.wrapper(&host.dir, "etcd-with-test-dns", &hosts.version.etcd());
        hosts.set_binary(host, &wrapper);
    }
    let collection = Collection::install();
    let mut vars = hosts.role_vars();
    vars["cluster_peer_discovery_srv"] = json!(domain);
    // https peers: etcd 3.4.23 fails a discovery whose _etcd-server-ssl lookup fails, and never
    // uses _etcd-server (http) records; 3.5 takes either.
    vars["cluster_pki"] = json!("generate");
    vars["cluster_peer_tls"] = json!(true);
    vars["cluster_cert_dns_names"] = json!([domain, format!("*.{domain}")]);
    let all: Vec<_> = hosts.hosts.iter().collect();
    let inventory = hosts.inventory(&all, "");
    let run = run_role(&collection, &inventory, &vars);

    let urls: Vec<String> = hosts.hosts.iter().map(|h| h.client_url()).collect();
    let listed = members(&urls);
    assert_eq!(names(&listed), ["h0", "h1", "h2"]);
    for (name, _, peer_urls) in &listed {
        assert_eq!(
            peer_urls,
            &[format!(
                "https://{name}.{domain}:{}",
                hosts
                    .hosts
                    .iter()
                    .find(|h| &h.name == name)
                    .unwrap()
                    .peer_port
            )]
        );
    }
    // etcd asked the test's DNS server, not the host's.
    assert!(
        dns.log()
            .contains(&format!("_etcd-server-ssl._tcp.{domain}")),
        "no SRV query reached dnsmasq:\n{}",
        dns.log()
    );
    for host in &hosts.hosts {
        let text = std::fs::read_to_string(host.config_file()).unwrap();
        assert!(
            !text.contains("discovery-srv"),
            "steady state drops discovery-srv:\n{text}"
        );
        // The role printed the records this member needs, as dnsmasq serves them.
        let line = format!(
            "_etcd-server-ssl._tcp.{domain}. 300 IN SRV 0 0 {} {}.",
            host.peer_port, host.address
        );
        assert!(run.stdout.contains(&line), "{line} not printed:\n{run}");
    }
    put(&urls, "/srv/k", "v");
    assert_nothing_changed(&run_role(&collection, &inventory, &vars));
}
