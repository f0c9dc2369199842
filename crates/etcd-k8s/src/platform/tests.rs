//! Unit tests of platform detection on fixture trees.

use super::*;

#[test]
fn flags_in_both_spellings() {
    let words: Vec<String> = [
        "etcd",
        "--name=m0",
        "--data-dir",
        "/var/lib/etcd",
        "--client-cert-auth",
        "--x=\"q\"",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let flags = parse_flags(&words);
    assert_eq!(flags["name"], "m0");
    assert_eq!(flags["data-dir"], "/var/lib/etcd");
    assert_eq!(flags["client-cert-auth"], "true");
    assert_eq!(flags["x"], "q");
}

#[test]
fn image_tags_give_versions() {
    assert_eq!(
        version_from_image("registry.k8s.io/etcd:3.5.9-0").as_deref(),
        Some("3.5.9")
    );
    assert_eq!(
        version_from_image("quay.io/coreos/etcd:v3.4.23").as_deref(),
        Some("3.4.23")
    );
    assert_eq!(version_from_image("localhost:5000/etcd"), None);
    assert_eq!(version_from_image("quay.io/x/etcd@sha256:abc"), None);
    assert_eq!(version_from_image("etcd:latest"), None);
}

#[test]
fn variables_expand_and_unknown_ones_stay() {
    let env = BTreeMap::from([("IP".to_string(), "10.0.0.1".to_string())]);
    assert_eq!(expand("https://${IP}:2379", &env), "https://10.0.0.1:2379");
    assert_eq!(expand("https://$IP:2379", &env), "https://10.0.0.1:2379");
    assert_eq!(expand("${NOPE}/x", &env), "${NOPE}/x");
}

#[test]
fn openshift_shell_script_and_volumes_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let manifest = rooted(root, Path::new(OPENSHIFT_MANIFEST));
    std::fs::create_dir_all(manifest.parent().unwrap()).unwrap();
    std::fs::write(
            &manifest,
            r#"
apiVersion: v1
kind: Pod
spec:
  containers:
  - name: etcdctl
    image: quay.io/openshift/etcd@sha256:0123
    env:
    - name: ETCDCTL_CERT
      value: /etc/kubernetes/static-pod-certs/secrets/etcd-all-certs/etcd-peer-n1.crt
    - name: ETCDCTL_KEY
      value: /etc/kubernetes/static-pod-certs/secrets/etcd-all-certs/etcd-peer-n1.key
  - name: etcd
    image: quay.io/openshift/etcd@sha256:0123
    env:
    - name: NODE_n1_IP
      value: 10.0.0.1
    - name: ETCD_DATA_DIR
      value: /var/lib/etcd
    command:
    - /bin/sh
    - -c
    - |
      #!/bin/sh
      set -euo pipefail
      exec etcd \
        --name=n1 \
        --initial-advertise-peer-urls=https://${NODE_n1_IP}:2380 \
        --trusted-ca-file=/etc/kubernetes/static-pod-certs/configmaps/etcd-serving-ca/ca-bundle.crt \
        --client-cert-auth=true \
        --advertise-client-urls=https://${NODE_n1_IP}:2379 \
        --listen-client-urls=https://0.0.0.0:2379
    volumeMounts:
    - mountPath: /etc/kubernetes/static-pod-certs
      name: cert-dir
    - mountPath: /var/lib/etcd
      name: data-dir
  volumes:
  - name: cert-dir
    hostPath:
      path: /etc/kubernetes/static-pod-resources/etcd-certs
  - name: data-dir
    hostPath:
      path: /var/lib/etcd
"#,
        )
        .unwrap();
    let info = detect_platform(&PlatformRequest {
        root: Some(root.to_path_buf()),
    })
    .unwrap();
    assert_eq!(info.platform, Platform::Openshift);
    assert_eq!(info.name.as_deref(), Some("n1"));
    assert_eq!(info.endpoints, vec!["https://10.0.0.1:2379"]);
    assert_eq!(info.peer_urls, vec!["https://10.0.0.1:2380"]);
    assert_eq!(info.data_dir, Some(root.join("var/lib/etcd")));
    assert_eq!(
            info.cacert,
            Some(root.join(
                "etc/kubernetes/static-pod-resources/etcd-certs/configmaps/etcd-serving-ca/ca-bundle.crt"
            ))
        );
    assert_eq!(
        info.cert,
        Some(root.join(
            "etc/kubernetes/static-pod-resources/etcd-certs/secrets/etcd-all-certs/etcd-peer-n1.crt"
        ))
    );
    assert_eq!(info.version, None);
    assert_eq!(
        openshift_evidence_on_host(root).as_deref(),
        Some(OPENSHIFT_MANIFEST)
    );
}

#[test]
fn package_env_file_and_unit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let conf = rooted(root, Path::new("/etc/etcd/etcd.conf"));
    std::fs::create_dir_all(conf.parent().unwrap()).unwrap();
    std::fs::write(
            &conf,
            "# etcd\nETCD_NAME=default\nETCD_DATA_DIR=\"/var/lib/etcd/default.etcd\"\nETCD_LISTEN_CLIENT_URLS=\"http://0.0.0.0:2379\"\n",
        )
        .unwrap();
    let unit = rooted(root, Path::new("/usr/lib/systemd/system/etcd.service"));
    std::fs::create_dir_all(unit.parent().unwrap()).unwrap();
    std::fs::write(
            &unit,
            "[Service]\nEnvironmentFile=-/etc/etcd/etcd.conf\nExecStart=/usr/bin/etcd \\\n  --name=${ETCD_NAME}\n",
        )
        .unwrap();
    let info = detect_platform(&PlatformRequest {
        root: Some(root.to_path_buf()),
    })
    .unwrap();
    assert_eq!(info.platform, Platform::Standalone);
    assert_eq!(info.name.as_deref(), Some("default"));
    assert_eq!(info.endpoints, vec!["http://127.0.0.1:2379"]);
    assert_eq!(info.data_dir, Some(root.join("var/lib/etcd/default.etcd")));
    assert_eq!(openshift_evidence_on_host(root), None);
}

#[test]
fn nothing_found_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let info = detect_platform(&PlatformRequest {
        root: Some(dir.path().to_path_buf()),
    })
    .unwrap();
    assert_eq!(info.platform, Platform::None);
    assert!(info.fill_connection(ConnectionOptions::default()).is_err());
}
