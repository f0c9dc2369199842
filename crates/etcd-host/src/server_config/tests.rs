//! Unit tests of rendering, validation and writing of etcd's config file.
#![allow(clippy::unwrap_used)]

use super::*;

fn member(name: &str, n: u16) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        data_dir: format!("/var/lib/etcd-{name}").into(),
        listen_client_urls: vec![format!("http://10.0.0.{n}:2379")],
        listen_peer_urls: vec![format!("http://10.0.0.{n}:2380")],
        initial_cluster: vec![
            "a=http://10.0.0.1:2380".into(),
            "b=http://10.0.0.2:2380".into(),
        ],
        initial_cluster_state: Some(ClusterState::New),
        initial_cluster_token: Some("tok".into()),
        ..Default::default()
    }
}

fn error(config: &ServerConfig) -> String {
    let e = config.validate().unwrap_err().to_string();
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    e
}

#[test]
fn renders_etcd_key_names() {
    let mut config = member("a", 1);
    config.client_tls = TransportSecurity {
        cert_file: Some("/etc/etcd/a.crt".into()),
        key_file: Some("/etc/etcd/a.key".into()),
        trusted_ca_file: Some("/etc/etcd/ca.crt".into()),
        client_cert_auth: true,
    };
    config.listen_client_urls = vec!["https://0.0.0.0:2379".into()];
    config.advertise_client_urls = vec!["https://10.0.0.1:2379".into()];
    config.quota_backend_bytes = Some(8 << 30);
    config.auto_compaction_mode = Some(CompactionMode::Periodic);
    config.auto_compaction_retention = Some("1h".into());
    config.log_level = Some(LogLevel::Warn);
    config.extra = BTreeMap::from([
        ("enable-v2".into(), "false".into()),
        ("max-txn-ops".into(), "256".into()),
    ]);
    let text = config.render().unwrap();
    for line in [
        "name: a\n",
        "data-dir: /var/lib/etcd-a\n",
        "listen-client-urls: https://0.0.0.0:2379\n",
        "advertise-client-urls: https://10.0.0.1:2379\n",
        "initial-advertise-peer-urls: http://10.0.0.1:2380\n",
        "initial-cluster: a=http://10.0.0.1:2380,b=http://10.0.0.2:2380\n",
        "initial-cluster-state: new\n",
        "client-transport-security:\n  cert-file: /etc/etcd/a.crt\n  key-file: /etc/etcd/a.key\n  trusted-ca-file: /etc/etcd/ca.crt\n  client-cert-auth: true\n",
        "quota-backend-bytes: 8589934592\n",
        "auto-compaction-mode: periodic\n",
        "auto-compaction-retention: 1h\n",
        "logger: zap\n",
        "log-level: warn\n",
        "enable-v2: false\n",
        "max-txn-ops: 256\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert!(!text.contains("peer-transport-security"), "{text}");
    // The YAML parses back, each key once.
    let parsed: BTreeMap<String, serde_yaml_ng::Value> = serde_yaml_ng::from_str(&text).unwrap();
    assert!(parsed.contains_key("enable-v2") && !parsed.contains_key("snapshot-count"));
}

#[test]
fn bad_combinations_are_refused_in_one_line() {
    let mut c = member("a", 1);
    c.listen_client_urls = vec!["https://10.0.0.1:2379".into()];
    assert!(error(&c).contains("is https but no certificate is set"));

    let mut c = member("a", 1);
    c.initial_advertise_peer_urls = vec!["https://10.0.0.1:2380".into()];
    c.peer_tls.cert_file = Some("/p.crt".into());
    assert!(error(&c).contains("give both peer_cert_file and peer_key_file"));

    let mut c = member("a", 1);
    c.discovery_srv = Some("example.com".into());
    assert!(error(&c).contains("not both"));

    let mut c = member("a", 1);
    c.initial_cluster.clear();
    assert!(error(&c).contains("needs initial_cluster"));

    let c = member("c", 3);
    let e = error(&c);
    assert!(
        e.contains("member 'c' is not in it; add c=http://10.0.0.3:2380"),
        "{e}"
    );

    let mut c = member("a", 1);
    c.initial_cluster = vec!["a=http://10.0.0.9:2380".into()];
    assert!(error(&c).contains("differ from the advertised peer URLs"));

    let mut c = member("a", 1);
    c.initial_cluster = vec!["a http://10.0.0.1:2380".into()];
    assert!(error(&c).contains("is not NAME=PEER_URL"));

    let mut c = member("a", 1);
    c.listen_peer_urls = vec!["tcp://10.0.0.1:2380".into()];
    assert!(error(&c).contains("scheme 'tcp'"));

    let mut c = member("a", 1);
    c.listen_client_urls = vec!["http://10.0.0.1".into()];
    assert!(error(&c).contains("has no port"));

    let mut c = member("a", 1);
    c.listen_client_urls = vec!["http://0.0.0.0:2379".into()];
    assert!(error(&c).contains("bind all addresses"));

    let mut c = member("a", 1);
    c.client_tls.client_cert_auth = true;
    assert!(error(&c).contains("needs client_trusted_ca_file"));

    let mut c = member("a", 1);
    c.data_dir = "var/lib/etcd".into();
    assert!(error(&c).contains("absolute"));

    let mut c = member("a", 1);
    c.extra.insert("initial-cluster".into(), "x".into());
    assert!(error(&c).contains("is set through initial_cluster"));

    let mut c = member("a", 1);
    c.auto_compaction_mode = Some(CompactionMode::Revision);
    c.auto_compaction_retention = Some("1h".into());
    assert!(error(&c).contains("does not suit mode revision"));

    let mut c = member("a", 1);
    c.initial_cluster.clear();
    c.initial_cluster_state = None;
    c.discovery_srv_name = Some("x".into());
    assert!(error(&c).contains("only means something with discovery_srv"));
}

#[test]
fn state_names_deserialize_and_bad_ones_are_named() {
    let ok: ClusterState = serde_json::from_str("\"existing\"").unwrap();
    assert_eq!(ok, ClusterState::Existing);
    let bad = serde_json::from_str::<ClusterState>("\"old\"").unwrap_err();
    assert!(bad.to_string().contains("unknown variant `old`"), "{bad}");
}

#[test]
fn steady_state_and_srv_bootstrap_are_valid() {
    let mut c = member("a", 1);
    c.initial_cluster.clear();
    c.initial_cluster_state = None;
    c.initial_cluster_token = None;
    let text = c.render().unwrap();
    assert!(!text.contains("initial-cluster"), "{text}");
    c.discovery_srv = Some("example.com.".into());
    c.initial_cluster_state = Some(ClusterState::New);
    let text = c.render().unwrap();
    assert!(text.contains("discovery-srv: example.com\n"), "{text}");
}

#[test]
fn srv_records_follow_the_schemes() {
    let mut c = member("a", 1);
    c.listen_peer_urls = vec!["https://etcd-a.example.com:2380".into()];
    c.initial_cluster = vec!["a=https://etcd-a.example.com:2380".into()];
    c.peer_tls.cert_file = Some("/p.crt".into());
    c.peer_tls.key_file = Some("/p.key".into());
    let records = srv_records(&c, "example.com", None).unwrap();
    let lines: Vec<&str> = records.iter().map(|r| r.zone_line.as_str()).collect();
    assert_eq!(
        lines,
        [
            "_etcd-server-ssl._tcp.example.com. 300 IN SRV 0 0 2380 etcd-a.example.com.",
            "_etcd-client._tcp.example.com. 300 IN SRV 0 0 2379 10.0.0.1.",
        ]
    );
}

#[test]
fn writes_once_with_mode_0600_and_honours_check_mode() {
    let dir = std::env::temp_dir().join(format!("etcdops-server-config-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("conf/etcd.yaml");
    let mut request = ServerConfigRequest {
        path: path.clone(),
        config: member("a", 1),
        check_mode: true,
    };
    let checked = write_server_config(&request).unwrap();
    assert!(checked.changed && checked.before.is_none());
    assert!(!path.exists(), "check mode wrote the file");
    request.check_mode = false;
    let written = write_server_config(&request).unwrap();
    assert!(written.changed);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written.after);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
    let again = write_server_config(&request).unwrap();
    assert!(!again.changed);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let fixed = write_server_config(&request).unwrap();
    assert!(fixed.changed);
    assert_eq!(fixed.mode_before.as_deref(), Some("0644"));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    request.config.snapshot_count = Some(5000);
    let updated = write_server_config(&request).unwrap();
    assert!(updated.changed);
    assert!(updated.after.contains("snapshot-count: 5000"));
    assert!(!updated.before.unwrap().contains("snapshot-count"));
    let _ = std::fs::remove_dir_all(&dir);
}
