//! Issue #23 part 3: `check` sees what pages an SRE at night. Certificates about to expire
//! and with a wrong SAN, served by real TLS members and on a kubeadm or OpenShift host's
//! disk; latency and churn parsed from a real member's `/metrics` (read again here as the
//! oracle). Backup freshness and `etcd_cluster_info` are in `check_backup.rs`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use etcdops_tests::{
    Cluster, EtcdVersion, PodSpec, Security, etcdops, free_port, install_kubeadm_pki,
    kubeadm_image, spawn_logged, write_kubeadm_manifest, write_openshift_tree,
};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use serde_json::{Value, json};

use crate::run;

/// `check`'s findings by name: (severity, message).
pub(crate) fn findings(report: &Value) -> std::collections::BTreeMap<String, (String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap().to_string(),
                (
                    f["severity"].as_str().unwrap().to_string(),
                    f["message"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

/// The civil date `days` from today (UTC), as rcgen wants it.
fn date_in(days: i64) -> (i32, u8, u8) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Howard Hinnant's days-to-civil.
    let z = now / 86_400 + days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    (year, month, day)
}

/// A certificate signed by `issuer`, valid until midnight UTC `days_until` days from today
/// (so `days_until - 1` whole days are left), for `sans`.
fn leaf(
    dir: &Path,
    name: &str,
    issuer: &Issuer<'_, KeyPair>,
    days_until: i64,
    server: bool,
) -> (PathBuf, PathBuf) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    if server {
        params.subject_alt_names = vec![
            SanType::IpAddress([127, 0, 0, 1].into()),
            SanType::DnsName("localhost".try_into().unwrap()),
        ];
    }
    // Valid from yesterday (from before its end when that is past: an expired one).
    let (y, m, d) = date_in((days_until - 2).min(-1));
    params.not_before = rcgen::date_time_ymd(y, m, d);
    let (y, m, d) = date_in(days_until);
    params.not_after = rcgen::date_time_ymd(y, m, d);
    let cert = params.signed_by(&key, issuer).unwrap();
    let cert_path = dir.join(format!("{name}.pem"));
    let key_path = dir.join(format!("{name}-key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (cert_path, key_path)
}

/// Three TLS members, each serving its own certificate; killed on drop.
pub(crate) struct TlsCluster {
    children: Vec<Child>,
    endpoints: Vec<String>,
    ca: PathBuf,
    client: (PathBuf, PathBuf),
    _dir: tempfile::TempDir,
}

impl Drop for TlsCluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl TlsCluster {
    /// m0's certificate expires in 3 days, m1's in 20, m2's in a year but m2 also
    /// advertises `https://m2.etcd.invalid:PORT`, which its certificate does not name.
    fn start(version: EtcdVersion) -> TlsCluster {
        TlsCluster::start_with_days(version, [4, 21, 366])
    }

    /// As [`TlsCluster::start`], each member's certificate ending `days` from today (a
    /// member whose certificate has expired is not waited for: no client accepts it).
    pub(crate) fn start_with_days(version: EtcdVersion, days: [i64; 3]) -> TlsCluster {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "check test CA");
        ca_params.distinguished_name = dn;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.clone().self_signed(&ca_key).unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, ca_cert.pem()).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let client = leaf(dir.path(), "client", &issuer, 401, false);
        let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
        let initial = (0..3)
            .map(|i| format!("m{i}=http://127.0.0.1:{}", ports[i].1))
            .collect::<Vec<_>>()
            .join(",");
        let mut children = Vec::new();
        let mut endpoints = Vec::new();
        for (i, (client_port, peer_port)) in ports.iter().enumerate() {
            let (cert, key) = leaf(dir.path(), &format!("m{i}"), &issuer, days[i], true);
            let url = format!("https://127.0.0.1:{client_port}");
            let advertised = if i == 2 {
                format!("{url},https://m2.etcd.invalid:{client_port}")
            } else {
                url.clone()
            };
            let peer = format!("http://127.0.0.1:{peer_port}");
            let mut cmd = Command::new(version.etcd());
            cmd.args(["--name", &format!("m{i}"), "--data-dir"])
                .arg(dir.path().join(format!("m{i}")))
                .args(["--listen-client-urls", &url])
                .args(["--advertise-client-urls", &advertised])
                .args(["--listen-peer-urls", &peer])
                .args(["--initial-advertise-peer-urls", &peer])
                .args(["--initial-cluster", &initial])
                .args(["--initial-cluster-state", "new"])
                .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
                .arg("--client-cert-auth")
                .arg("--trusted-ca-file")
                .arg(&ca)
                .arg("--cert-file")
                .arg(&cert)
                .arg("--key-file")
                .arg(&key);
            children.push(spawn_logged(cmd, &dir.path().join(format!("m{i}.log"))));
            endpoints.push(url);
        }
        let cluster = TlsCluster {
            children,
            endpoints,
            ca,
            client,
            _dir: dir,
        };
        let valid: Vec<String> = (0..3)
            .filter(|&i| days[i] > 0)
            .map(|i| cluster.endpoints[i].clone())
            .collect();
        cluster.wait_healthy(version, &valid);
        cluster
    }

    fn flags(&self) -> Vec<String> {
        vec![
            "--endpoints".into(),
            self.endpoints.join(","),
            "--cacert".into(),
            self.ca.display().to_string(),
            "--cert".into(),
            self.client.0.display().to_string(),
            "--key".into(),
            self.client.1.display().to_string(),
        ]
    }

    /// Polls etcdctl (the oracle of health) until every member answers, or panics.
    fn wait_healthy(&self, version: EtcdVersion, endpoints: &[String]) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = Command::new(version.etcdctl())
                .env("ETCDCTL_API", "3")
                .args(["endpoint", "health", "--endpoints", &endpoints.join(",")])
                .arg(format!("--cacert={}", self.ca.display()))
                .arg(format!("--cert={}", self.client.0.display()))
                .arg(format!("--key={}", self.client.1.display()))
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the TLS members did not become healthy: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn check(&self, rest: &[&str]) -> etcdops_tests::Run {
        let mut args = self.flags();
        args.extend(["check", "-w", "json", "--skip-metrics"].map(String::from));
        args.extend(rest.iter().map(|s| s.to_string()));
        etcdops(&args, &[])
    }
}

#[test]
fn check_reads_served_certificates_expiring_soon_and_a_missing_san() {
    let cluster = TlsCluster::start(EtcdVersion::from_env());
    let run = cluster.check(&[]);
    run.expect_code(2);
    let report = run.json();
    let (severity, message) = &findings(&report)["certificates"];
    assert_eq!(severity, "critical", "{message}");
    assert!(
        message.contains("member m0's serving certificate") && message.contains("renew it now"),
        "{message}"
    );
    assert!(message.contains("plan its renewal"), "{message}");
    assert!(
        message.contains("does not name m2.etcd.invalid"),
        "{message}"
    );
    let certs = report["certificates"].as_array().unwrap();
    let served = |member: &str| {
        certs
            .iter()
            .find(|c| c["role"] == "serving" && c["member"] == member)
            .unwrap_or_else(|| panic!("no serving certificate of {member}: {report}"))
    };
    assert_eq!(served("m0")["days_left"], 3, "{report}");
    assert_eq!(served("m0")["subject"], "CN=m0", "{report}");
    assert_eq!(served("m1")["days_left"], 20, "{report}");
    assert_eq!(served("m2")["missing_sans"], json!(["m2.etcd.invalid"]));
    assert_eq!(
        served("m2")["sans"],
        json!(["DNS:localhost", "IP:127.0.0.1"])
    );
    let client = certs.iter().find(|c| c["role"] == "client").unwrap();
    assert_eq!(client["days_left"], 400, "{report}");
    // Nothing else is wrong with the cluster: the certificates alone make it critical.
    assert_eq!(findings(&report)["members"].0, "ok", "{report}");
    let (severity, message) = &findings(&report)["progress"];
    assert_eq!(severity, "ok", "{message}");
    assert!(message.contains("every member within"), "{message}");

    // The thresholds move the verdict: with 2 and 1 days only the missing SAN is left.
    let lenient = cluster.check(&["--cert-warn-days", "2", "--cert-critical-days", "1"]);
    lenient.expect_code(1);
    let (severity, message) = &findings(&lenient.json())["certificates"];
    assert_eq!(severity, "warning", "{message}");
    assert!(!message.contains("expires"), "{message}");
    assert!(message.contains("m2.etcd.invalid"), "{message}");

    // m2 down: the `members` finding says so; its certificate and metrics are not read (no
    // second warning), and the others' metrics come over TLS with the client certificate.
    let mut cluster = cluster;
    let _ = cluster.children[2].kill();
    let _ = cluster.children[2].wait();
    let mut args = cluster.flags();
    args.extend(
        [
            "check",
            "-w",
            "json",
            "--cert-warn-days",
            "2",
            "--cert-critical-days",
            "1",
        ]
        .map(String::from),
    );
    let report = etcdops(&args, &[]).json();
    let all = findings(&report);
    assert_eq!(all["members"].0, "warning", "{report}");
    assert_eq!(all["certificates"].0, "ok", "{report}");
    assert_eq!(all["latency"].0, "ok", "{report}");
    assert_eq!(report["metrics"].as_array().unwrap().len(), 2, "{report}");
    assert!(
        report["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["error"].is_null())
    );
}

/// `/metrics` of `url`, read with one HTTP/1.0 GET: the oracle the report is checked against.
fn scrape(url: &str) -> String {
    let host_port = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let mut stream = std::net::TcpStream::connect(&host_port).unwrap();
    stream
        .write_all(format!("GET /metrics HTTP/1.0\r\nHost: {host_port}\r\n\r\n").as_bytes())
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.split_once("\r\n\r\n").unwrap().1.to_string()
}

fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} is not in the metrics"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn check_reads_latency_and_churn_from_a_real_members_metrics() {
    let metrics_port = free_port();
    let metrics_url = format!("http://127.0.0.1:{metrics_port}");
    let cluster = Cluster::start_with(1, Security::Plain, &["--listen-metrics-urls", &metrics_url]);
    cluster.put_keys("/k/", 20);

    let run = run(&cluster, &["check", "-w", "json"]);
    let report = run.json();
    let all = findings(&report);
    assert_eq!(all["churn"].0, "ok", "{report}");
    assert!(all.contains_key("latency"), "{report}");
    let ours = &report["metrics"][0];
    assert_eq!(ours["member"], "m0", "{report}");
    assert!(ours["error"].is_null(), "{report}");
    let text = scrape(&cluster.members[0].client_url);
    assert_eq!(
        ours["leader_changes"].as_f64().unwrap(),
        sample(&text, "etcd_server_leader_changes_seen_total"),
        "{report}"
    );
    assert_eq!(
        ours["proposals_failed"].as_f64().unwrap(),
        sample(&text, "etcd_server_proposals_failed_total")
    );
    assert_eq!(
        ours["slow_applies"].as_f64().unwrap(),
        sample(&text, "etcd_server_slow_apply_total")
    );
    // The histograms only grow: read before the oracle, ours counts at most as many, and
    // at least the 20 writes' fsyncs.
    let fsyncs = ours["wal_fsync"]["count"].as_f64().unwrap();
    assert!(fsyncs >= 20.0, "{report}");
    assert!(
        fsyncs <= sample(&text, "etcd_disk_wal_fsync_duration_seconds_count"),
        "{report}"
    );
    assert!(ours["backend_commit"]["p99_ms"].as_f64().unwrap() > 0.0);

    // Judged from the real histogram: a 0 ms limit over 1 sample makes the fsync p99 a
    // warning that quotes the parsed value.
    let strict = crate::run(
        &cluster,
        &[
            "check",
            "-w",
            "json",
            "--fsync-p99-warn-ms",
            "0",
            "--latency-min-samples",
            "1",
            "--metrics-urls",
            &metrics_url,
        ],
    );
    strict.expect_code(1);
    let report = strict.json();
    let p99 = report["metrics"][0]["wal_fsync"]["p99_ms"]
        .as_f64()
        .unwrap();
    let (severity, message) = &findings(&report)["latency"];
    assert_eq!(severity, "warning", "{message}");
    assert!(
        message.contains(&format!("WAL fsync p99 is {p99:.1} ms")),
        "{message}"
    );
    assert_eq!(
        report["metrics"][0]["url"],
        format!("{metrics_url}/metrics"),
        "--metrics-urls is read instead of the client URL"
    );

    // A metrics URL where nothing listens: a warning that names it.
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let missing = crate::run(
        &cluster,
        &["check", "-w", "json", "--metrics-urls", &nowhere],
    );
    missing.expect_code(1);
    let (severity, message) = &findings(&missing.json())["latency"];
    assert_eq!(severity, "warning");
    assert!(message.contains(&nowhere), "{message}");
}

#[test]
fn check_reads_the_certificates_on_disk_of_this_hosts_member_only() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.clone().unwrap();
    let member = &cluster.members[0];
    let host = |client_url: &str, peer_url: &str| {
        let root = tempfile::tempdir().unwrap();
        install_kubeadm_pki(root.path(), &certs);
        write_kubeadm_manifest(
            root.path(),
            &PodSpec {
                name: member.name.clone(),
                client_url: client_url.to_string(),
                peer_url: peer_url.to_string(),
                image: kubeadm_image(cluster.version),
            },
        );
        std::fs::create_dir_all(root.path().join("var/lib/etcd")).unwrap();
        root
    };
    // This member's host, whose peer certificate expires in 5 days.
    let ours = host(&member.client_url, &member.peer_url);
    let pki = ours.path().join("etc/kubernetes/pki/etcd");
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let issuer = Issuer::new(ca_params, ca_key);
    let (peer, _) = leaf(&pki, "short-peer", &issuer, 6, true);
    std::fs::rename(&peer, pki.join("peer.crt")).unwrap();

    let check = |root: &Path| {
        let mut args = cluster.client_flags();
        args.extend(
            [
                "--platform-root",
                &root.display().to_string(),
                "check",
                "-w",
                "json",
                "--skip-metrics",
            ]
            .map(String::from),
        );
        etcdops(&args, &[])
    };
    let run = check(ours.path());
    run.expect_code(2);
    let report = run.json();
    assert_eq!(report["platform"], "kubeadm", "{report}");
    let on_disk: Vec<&Value> = report["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "on_disk")
        .collect();
    let names: std::collections::BTreeSet<String> = on_disk
        .iter()
        .map(|c| {
            Path::new(c["source"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for expected in ["ca.crt", "server.crt", "peer.crt", "healthcheck-client.crt"] {
        assert!(
            names.contains(expected),
            "{expected} not checked: {names:?}"
        );
    }
    let peer = on_disk
        .iter()
        .find(|c| c["source"].as_str().unwrap().ends_with("peer.crt"))
        .unwrap();
    assert_eq!(peer["days_left"], 5, "{peer}");
    let (severity, message) = &findings(&report)["certificates"];
    assert_eq!(severity, "critical", "{message}");
    assert!(message.contains("peer.crt expires in 5 days"), "{message}");
    // The detected data dir gives the disk finding.
    let (_, disk) = &findings(&report)["disk"];
    assert!(disk.contains("var/lib/etcd"), "{disk}");
    assert!(
        report["disk"]["free_bytes"].as_u64().unwrap() > 0,
        "{report}"
    );

    // The same member on an OpenShift host: the certificates its pod mounts.
    let openshift = tempfile::tempdir().unwrap();
    write_openshift_tree(openshift.path(), &member.name, &member.client_url, &certs);
    std::fs::create_dir_all(openshift.path().join("var/lib/etcd")).unwrap();
    let run = check(openshift.path());
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["platform"], "openshift", "{report}");
    let on_disk: std::collections::BTreeSet<String> = report["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "on_disk" && c["error"].is_null())
        .map(|c| {
            c["source"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    for expected in ["etcd-serving-m0.crt", "etcd-peer-m0.crt", "ca-bundle.crt"] {
        assert!(
            on_disk.contains(expected),
            "{expected} not checked: {on_disk:?}"
        );
    }

    // A host whose etcd is not a member of this cluster: its files are not this cluster's.
    let foreign = host("https://127.0.0.1:1", "http://127.0.0.1:2");
    let run = check(foreign.path());
    let report = run.json();
    assert!(report["platform"].is_null(), "{report}");
    assert!(report["disk"].is_null(), "{report}");
    assert!(
        report["certificates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["role"] != "on_disk"),
        "{report}"
    );
    assert_eq!(findings(&report)["certificates"].0, "ok", "{report}");
}
