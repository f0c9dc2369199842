use std::path::Path;

use etcdops_tests::{Cluster, Security, args, etcdops};

use crate::{assert_clear_error, etcdctl_json, run};

#[test]
fn tls_cluster_with_client_certificates_works_like_etcdctl() {
    let cluster = Cluster::start(3, Security::Tls);
    let ours = run(&cluster, &["endpoint", "health", "--cluster", "-w", "json"]);
    ours.expect_code(0);
    let ours = ours.json();
    let endpoints = cluster.endpoints();
    let (code, theirs) = etcdctl_json(
        &cluster,
        &[
            "--endpoints",
            &endpoints,
            "endpoint",
            "health",
            "--cluster",
            "-w",
            "json",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(
        ours["endpoints"].as_array().unwrap().len(),
        theirs.as_array().unwrap().len()
    );
    for row in ours["endpoints"].as_array().unwrap() {
        assert!(row["endpoint"].as_str().unwrap().starts_with("https://"));
        assert_eq!(row["health"], true, "{row}");
    }
    let members = run(&cluster, &["member", "list", "-w", "json"]);
    members.expect_code(0);
    assert_eq!(members.json()["members"].as_array().unwrap().len(), 3);

    // host:port endpoints become https when TLS files are given.
    let certs = cluster.certs.as_ref().unwrap();
    let bare = cluster.members[0]
        .client_url
        .trim_start_matches("https://")
        .to_string();
    let status = etcdops(
        &args(&[
            "--endpoints",
            &bare,
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
    status.expect_code(0);
    assert_eq!(
        status.json()["endpoints"][0]["endpoint"],
        cluster.members[0].client_url
    );
}

#[test]
fn tls_failures_say_what_to_fix() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.as_ref().unwrap();
    let endpoint = cluster.members[0].client_url.clone();
    let path = |p: &std::path::Path| p.display().to_string();
    let with = |extra: &[&str]| {
        let mut a = args(&[
            "--endpoints",
            &endpoint,
            "--dial-timeout",
            "2s",
            "--command-timeout",
            "3s",
        ]);
        a.extend(args(extra));
        a.extend(args(&["member", "list"]));
        etcdops(&a, &[])
    };

    // A CA that did not sign etcd's certificate.
    let bad_ca = with(&[
        "--cacert",
        &path(&certs.other_ca),
        "--cert",
        &path(&certs.client_cert),
        "--key",
        &path(&certs.client_key),
    ]);
    assert_clear_error(&bad_ca, "not signed by the CA in");

    // No client certificate: etcd only stops answering, so the message must suggest one.
    let no_cert = with(&["--cacert", &path(&certs.ca)]);
    assert_clear_error(&no_cert, "client certificate");

    // A client certificate from a CA etcd does not trust.
    let rogue = with(&[
        "--cacert",
        &path(&certs.ca),
        "--cert",
        &path(&certs.rogue_client_cert),
        "--key",
        &path(&certs.rogue_client_key),
    ]);
    assert_clear_error(&rogue, "client certificate");

    // A key that is not the certificate's own: said before any connection.
    let mismatched = with(&[
        "--cacert",
        &path(&certs.ca),
        "--cert",
        &path(&certs.client_cert),
        "--key",
        &path(&certs.rogue_client_key),
    ]);
    assert_clear_error(&mismatched, "does not fit the client certificate");

    // A name the certificate does not carry.
    let wrong_name = with(&[
        "--cacert",
        &path(&certs.ca),
        "--cert",
        &path(&certs.client_cert),
        "--key",
        &path(&certs.client_key),
        "--server-name",
        "etcd.example.invalid",
    ]);
    assert_clear_error(&wrong_name, "not valid for this host name");

    // The right name, given explicitly, works.
    let right_name = with(&[
        "--cacert",
        &path(&certs.ca),
        "--cert",
        &path(&certs.client_cert),
        "--key",
        &path(&certs.client_key),
        "--server-name",
        "localhost",
    ]);
    right_name.expect_code(0);

    // Unreadable and unusable files name the file.
    let missing = with(&[
        "--cacert",
        &path(&certs.ca),
        "--cert",
        "/nonexistent/client.pem",
        "--key",
        &path(&certs.client_key),
    ]);
    assert_clear_error(
        &missing,
        "cannot read client certificate '/nonexistent/client.pem'",
    );
    let garbage = cluster.dir().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let not_pem = with(&["--cacert", &path(&garbage)]);
    assert_clear_error(&not_pem, "invalid CA certificate");
    let key_is_cert = with(&[
        "--cacert",
        &path(&certs.ca),
        "--cert",
        &path(&certs.client_cert),
        "--key",
        &path(&certs.client_cert),
    ]);
    assert_clear_error(&key_is_cert, "client key");

    // https to a plain-http server.
    let plain = Cluster::start(1, Security::Plain);
    let https_to_plain = etcdops(
        &args(&[
            "--endpoints",
            &plain.members[0].client_url.replace("http://", "https://"),
            "--cacert",
            &path(&certs.ca),
            "member",
            "list",
        ]),
        &[],
    );
    assert_clear_error(&https_to_plain, "http://");
}

#[test]
fn insecure_skip_tls_verify_connects_without_a_ca_and_warns() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.as_ref().unwrap();
    let a = args(&[
        "--endpoints",
        &cluster.members[0].client_url,
        "--cert",
        &certs.client_cert.display().to_string(),
        "--key",
        &certs.client_key.display().to_string(),
        "--insecure-skip-tls-verify",
        "endpoint",
        "health",
        "-w",
        "json",
    ]);
    let run = etcdops(&a, &[]);
    run.expect_code(0);
    assert_eq!(run.json()["all_healthy"], true);
    assert!(
        run.stderr.contains("warning: --insecure-skip-tls-verify"),
        "{run}"
    );

    // Without the flag the same call fails: there is no CA to verify with.
    let verified = etcdops(
        &a.iter()
            .filter(|s| *s != "--insecure-skip-tls-verify")
            .cloned()
            .collect::<Vec<_>>(),
        &[],
    );
    verified.expect_code(1);
    assert!(verified.stdout.contains("not signed by"), "{verified}");

    // And the variable works as the flag does.
    let by_env = etcdops(
        &a.iter()
            .filter(|s| *s != "--insecure-skip-tls-verify")
            .cloned()
            .collect::<Vec<_>>(),
        &[("ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "true")],
    );
    by_env.expect_code(0);
}

/// A one-member etcd serving TLS with `cert`/`key` and no client certificate check, killed on
/// drop.
struct SelfSignedEtcd {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl SelfSignedEtcd {
    fn start(cert_pem: &str, key_pem: &str) -> SelfSignedEtcd {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("server.pem");
        let key = dir.path().join("server-key.pem");
        std::fs::write(&cert, cert_pem).unwrap();
        std::fs::write(&key, key_pem).unwrap();
        let (child, url) = serve_tls(dir.path(), &cert, &key, None);
        SelfSignedEtcd {
            child,
            url,
            _dir: dir,
        }
    }
}

/// Starts a one-member etcd in `dir` serving TLS with `cert`/`key` on a free port, checking
/// client certificates against `client_ca` when given; returns it and its client URL.
fn serve_tls(
    dir: &Path,
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> (std::process::Child, String) {
    let url = format!("https://127.0.0.1:{}", etcdops_tests::free_port());
    let peer = format!("http://127.0.0.1:{}", etcdops_tests::free_port());
    let mut cmd = std::process::Command::new(etcdops_tests::EtcdVersion::from_env().etcd());
    cmd.args(["--name", "s0", "--data-dir"])
        .arg(dir.join("data"))
        .args([
            "--listen-client-urls",
            &url,
            "--advertise-client-urls",
            &url,
        ])
        .args([
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
        ])
        .args(["--initial-cluster", &format!("s0={peer}")])
        .arg("--cert-file")
        .arg(cert)
        .arg("--key-file")
        .arg(key);
    if let Some(ca) = client_ca {
        cmd.args(["--client-cert-auth", "--trusted-ca-file"])
            .arg(ca);
    }
    let child = etcdops_tests::spawn_logged(cmd, &dir.join("etcd.log"));
    (child, url)
}

impl Drop for SelfSignedEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `attempt` until it returns `Ok`, or panics with its last `Err` after `limit`.
fn eventually<T>(limit: std::time::Duration, mut attempt: impl FnMut() -> Result<T, String>) -> T {
    let deadline = std::time::Instant::now() + limit;
    loop {
        match attempt() {
            Ok(value) => return value,
            Err(last) if std::time::Instant::now() > deadline => panic!("gave up: {last}"),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
}

#[test]
fn a_self_signed_ca_certificate_is_accepted_when_it_is_the_cacert() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    // What `openssl req -x509` makes by default: self-signed, CA:TRUE, used as the server's.
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.subject_alt_names = vec![SanType::IpAddress([127, 0, 0, 1].into())];
    let cert = params.self_signed(&key).unwrap().pem();
    let etcd = SelfSignedEtcd::start(&cert, &key.serialize_pem());
    let ca = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca.path(), &cert).unwrap();
    let ca_path = ca.path().display().to_string();
    let list = |server_name: Option<&str>| {
        let mut a = args(&["--endpoints", &etcd.url, "--cacert", &ca_path]);
        if let Some(name) = server_name {
            a.extend(args(&["--server-name", name]));
        }
        a.extend(args(&["member", "list", "-w", "json"]));
        etcdops(&a, &[])
    };
    // etcdctl accepts it; so must we.
    let run = eventually(std::time::Duration::from_secs(30), || {
        let run = list(None);
        if run.code == 0 {
            Ok(run)
        } else {
            Err(run.to_string())
        }
    });
    assert_eq!(run.json()["members"].as_array().unwrap().len(), 1, "{run}");
    // Its name is still checked.
    let wrong = list(Some("etcd.example.invalid"));
    assert_clear_error(&wrong, "not valid for this host name");
    // And a different self-signed CA certificate is still refused.
    let other_key = KeyPair::generate().unwrap();
    let mut other = CertificateParams::new(Vec::<String>::new()).unwrap();
    other.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    other.subject_alt_names = vec![SanType::IpAddress([127, 0, 0, 1].into())];
    std::fs::write(ca.path(), other.self_signed(&other_key).unwrap().pem()).unwrap();
    let refused = list(None);
    assert_eq!(refused.code, 2, "{refused}");
    assert!(!refused.stderr.contains("panicked"), "{refused}");
}

#[test]
fn http_to_a_tls_port_says_to_use_https() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.as_ref().unwrap();
    let http = cluster.members[0].client_url.replace("https://", "http://");
    for rest in [&["member", "list"][..], &["get", "foo"][..]] {
        let mut a = args(&[
            "--endpoints",
            &http,
            "--cert",
            &certs.client_cert.display().to_string(),
            "--key",
            &certs.client_key.display().to_string(),
            "--dial-timeout",
            "2s",
            "--command-timeout",
            "3s",
        ]);
        a.extend(args(rest));
        let run = etcdops(&a, &[]);
        assert_clear_error(&run, "speaks TLS: use https://");
    }
}

/// Runs `openssl args...` in `dir`; panics with its stderr when it fails.
fn openssl(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Finding: a client certificate of X.509 version 1 (what `openssl x509 -req` signs when no
/// extensions are given, as many etcd set-up guides do) works with etcdctl and etcd, but
/// etcdops refuses it before connecting: "invalid client key in KEY: it does not fit the
/// client certificate: invalid peer certificate: Other(OtherError(UnsupportedCertVersion))"
/// (exit 128 under compat): a drop-in that cannot connect where etcdctl does, and a message
/// that blames a key that does fit.
#[test]
fn a_version_1_client_certificate_is_accepted_as_etcdctl_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=v1 test CA",
        ],
    );
    std::fs::write(d.join("server.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    for (name, cn) in [("server", "etcd"), ("client", "root")] {
        openssl(
            d,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN={cn}"),
            ],
        );
        let mut sign = vec![
            "x509".to_string(),
            "-req".into(),
            "-in".into(),
            format!("{name}.csr"),
            "-CA".into(),
            "ca.crt".into(),
            "-CAkey".into(),
            "ca.key".into(),
            "-CAcreateserial".into(),
            "-out".into(),
            format!("{name}.crt"),
            "-days".into(),
            "2".into(),
        ];
        if name == "server" {
            sign.extend(["-extfile".to_string(), "server.ext".into()]);
        }
        let sign: Vec<&str> = sign.iter().map(String::as_str).collect();
        openssl(d, &sign);
    }
    let text = openssl(d, &["x509", "-in", "client.crt", "-noout", "-text"]);
    assert!(
        text.contains("Version: 1 "),
        "not a v1 certificate:\n{text}"
    );

    let (mut child, url) = serve_tls(
        d,
        &d.join("server.crt"),
        &d.join("server.key"),
        Some(&d.join("ca.crt")),
    );
    let path = |f: &str| d.join(f).display().to_string();
    let flags = args(&[
        "--endpoints",
        &url,
        "--cacert",
        &path("ca.crt"),
        "--cert",
        &path("client.crt"),
        "--key",
        &path("client.key"),
        "member",
        "list",
    ]);
    // etcdctl connects with it (once etcd is up)...
    let etcdctl = etcdops_tests::EtcdVersion::from_env().etcdctl();
    eventually(std::time::Duration::from_secs(30), || {
        let out = std::process::Command::new(&etcdctl)
            .args(&flags)
            .env("ETCDCTL_API", "3")
            .output()
            .unwrap();
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    });
    // ...and so must etcdops, in both personalities.
    let ours = etcdops(&flags, &[]);
    let compat = etcdops(&flags, &[("ETCDOPS_COMPAT", "etcdctl")]);
    let _ = child.kill();
    let _ = child.wait();
    ours.expect_code(0);
    compat.expect_code(0);
}
