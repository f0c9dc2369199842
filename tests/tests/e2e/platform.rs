//! Platform detection, `--platform auto`, static-pod stop/start and the OpenShift guard, on
//! fixture trees of control-plane hosts with real etcd behind them: kubeadm's run by the
//! kubelet stand-in from its manifest; OpenShift's and a package's pointing at a harness
//! cluster. No kubelet, no crictl.

use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use etcdops_tests::{
    Certs, Cluster, EtcdVersion, Kubelet, PodSpec, Run, Security, etcdops, free_port,
    install_kubeadm_pki, kubeadm_image, under, write_kubeadm_manifest, write_openshift_tree,
};

/// `etcdops --platform-root ROOT args...`.
fn on(root: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--platform-root".to_string(), root.display().to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    etcdops(&all, &[])
}

fn port_open(url: &str) -> bool {
    let address = url.rsplit("://").next().unwrap_or(url);
    TcpStream::connect_timeout(&address.parse().unwrap(), Duration::from_millis(300)).is_ok()
}

/// Polls `--platform auto endpoint health` until healthy, or panics after `limit`.
fn wait_healthy(root: &Path, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let run = on(
            root,
            &["--platform", "auto", "endpoint", "health", "-w", "json"],
        );
        if run.code == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "etcd never became healthy:\n{run}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A kubeadm node: certificates in kubeadm's places, `etcd.yaml` in the manifests dir, and
/// the kubelet stand-in running etcd from it.
pub(crate) struct KubeadmNode {
    root: tempfile::TempDir,
    pub(crate) pod: PodSpec,
    kubelet: Option<Kubelet>,
}

impl KubeadmNode {
    pub(crate) fn start() -> KubeadmNode {
        let root = tempfile::Builder::new()
            .prefix("etcdops-kubeadm-")
            .tempdir()
            .unwrap();
        let certs = Certs::generate(&root.path().join("generated-pki"));
        install_kubeadm_pki(root.path(), &certs);
        let version = EtcdVersion::from_env();
        let pod = PodSpec {
            name: "cp0".into(),
            client_url: format!("https://127.0.0.1:{}", free_port()),
            peer_url: format!("http://127.0.0.1:{}", free_port()),
            image: kubeadm_image(version),
        };
        write_kubeadm_manifest(root.path(), &pod);
        let kubelet = Kubelet::start(root.path(), version);
        wait_healthy(root.path(), Duration::from_secs(30));
        KubeadmNode {
            root,
            pod,
            kubelet: Some(kubelet),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self.root.path()
    }
}

impl Drop for KubeadmNode {
    fn drop(&mut self) {
        self.kubelet.take();
    }
}

#[test]
fn platform_kubeadm_detect_auto_connect_stop_and_start() {
    let node = KubeadmNode::start();
    let root = node.root();
    let version = EtcdVersion::from_env();

    let detect = etcdops(
        &[
            "platform".into(),
            "detect".into(),
            "--root".into(),
            root.display().to_string(),
            "-w".into(),
            "json".into(),
        ],
        &[],
    );
    detect.expect_code(0);
    let info = detect.json();
    assert_eq!(info["platform"], "kubeadm", "{detect}");
    assert_eq!(info["name"], "cp0");
    assert_eq!(info["endpoints"][0], node.pod.client_url.as_str());
    assert_eq!(info["peer_urls"][0], node.pod.peer_url.as_str());
    assert_eq!(info["version"], version.version_string());
    assert_eq!(info["version_source"], "image");
    let pki = under(root, "/etc/kubernetes/pki/etcd");
    assert_eq!(info["cacert"], pki.join("ca.crt").display().to_string());
    assert_eq!(
        info["cert"],
        pki.join("healthcheck-client.crt").display().to_string()
    );
    assert_eq!(
        info["data_dir"],
        under(root, "/var/lib/etcd").display().to_string()
    );
    assert!(info["client_cert_auth"].as_bool().unwrap());
    // The data dir the kubelet stand-in gave etcd is the one detected.
    assert!(under(root, "/var/lib/etcd/member").is_dir());

    // Without --platform auto there is nothing to connect with (TLS needs a client cert).
    let plain = on(root, &["endpoint", "health"]);
    assert_ne!(plain.code, 0, "{plain}");
    let auto = on(
        root,
        &["--platform", "auto", "member", "list", "-w", "json"],
    );
    auto.expect_code(0);
    assert_eq!(auto.json()["members"][0]["name"], "cp0", "{auto}");
    // An explicit flag wins over detection.
    let explicit = on(
        root,
        &[
            "--platform",
            "auto",
            "--endpoints",
            "https://127.0.0.1:1",
            "--dial-timeout=300ms",
            "endpoint",
            "health",
        ],
    );
    assert_eq!(explicit.code, 1, "{explicit}");

    let manifest = under(root, "/etc/kubernetes/manifests/etcd.yaml");
    let parked = under(root, "/etc/kubernetes/etcdops-parked/etcd.yaml");
    let original = std::fs::read_to_string(&manifest).unwrap();

    // Dry run: nothing moves, etcd keeps serving.
    let dry = on(root, &["platform", "stop", "--dry-run", "-w", "json"]);
    dry.expect_code(0);
    assert_eq!(dry.json()["changed"], true, "{dry}");
    assert!(manifest.exists() && !parked.exists());
    assert!(port_open(&node.pod.client_url));

    // An older parked copy must survive under a backup name.
    std::fs::create_dir_all(parked.parent().unwrap()).unwrap();
    std::fs::write(&parked, "an older parked manifest\n").unwrap();

    let stop = on(root, &["platform", "stop", "-w", "json"]);
    stop.expect_code(0);
    let stopped = stop.json();
    assert_eq!(stopped["changed"], true, "{stop}");
    assert!(!manifest.exists(), "{stop}");
    assert_eq!(std::fs::read_to_string(&parked).unwrap(), original);
    let backup = stopped["backup"].as_str().expect("a backup name");
    assert_eq!(
        std::fs::read_to_string(backup).unwrap(),
        "an older parked manifest\n"
    );
    assert!(!port_open(&node.pod.client_url), "etcd still listens");

    let again = on(root, &["platform", "stop", "-w", "json"]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false, "{again}");

    let detect = on(root, &["platform", "detect", "-w", "json"]);
    assert_eq!(detect.json()["parked"], true, "{detect}");
    assert_eq!(detect.json()["platform"], "kubeadm", "{detect}");

    let start = on(root, &["platform", "start", "-w", "json"]);
    start.expect_code(0);
    assert_eq!(start.json()["changed"], true, "{start}");
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), original);
    assert!(!parked.exists());
    // start waited for health: etcd answers right away.
    let health = on(
        root,
        &["--platform", "auto", "endpoint", "health", "-w", "json"],
    );
    health.expect_code(0);

    let again = on(root, &["platform", "start", "-w", "json"]);
    again.expect_code(0);
    assert_eq!(again.json()["changed"], false, "{again}");
    // The backup is still there: nothing was deleted.
    assert!(Path::new(backup).exists());
}

#[test]
fn platform_kubeadm_stop_times_out_clearly_without_a_kubelet() {
    let node = KubeadmNode::start();
    let root = node.root().to_path_buf();
    let mut node = node;
    // No kubelet: parking the manifest stops nothing; the etcd it ran is gone with it, so
    // hold the port open ourselves to stand for an etcd that does not go.
    node.kubelet.take();
    let address = node
        .pod
        .client_url
        .rsplit("://")
        .next()
        .unwrap()
        .to_string();
    let listener = std::net::TcpListener::bind(&address).unwrap();
    let stop = on(&root, &["platform", "stop", "--timeout", "1s"]);
    assert_eq!(stop.code, 2, "{stop}");
    assert!(stop.stderr.contains("still accepts connections"), "{stop}");
    assert!(!stop.stderr.contains("panicked"), "{stop}");
    // The manifest is parked, not lost.
    assert!(under(&root, "/etc/kubernetes/etcdops-parked/etcd.yaml").exists());
    drop(listener);
}

#[test]
fn platform_openshift_detect_and_guard() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.clone().unwrap();
    let root = cluster.dir().join("host");
    std::fs::create_dir_all(&root).unwrap();
    write_openshift_tree(&root, "cp0", &cluster.members[0].client_url, &certs);

    let detect = on(&root, &["platform", "detect", "-w", "json"]);
    detect.expect_code(0);
    let info = detect.json();
    assert_eq!(info["platform"], "openshift", "{detect}");
    assert_eq!(info["name"], "cp0");
    assert_eq!(info["endpoints"][0], cluster.members[0].client_url.as_str());
    let certs_dir = under(&root, "/etc/kubernetes/static-pod-resources/etcd-certs");
    assert_eq!(
        info["cacert"],
        certs_dir
            .join("configmaps/etcd-serving-ca/ca-bundle.crt")
            .display()
            .to_string()
    );
    assert_eq!(
        info["cert"],
        certs_dir
            .join("secrets/etcd-all-certs/etcd-peer-cp0.crt")
            .display()
            .to_string()
    );
    // The image is a digest: no version from it.
    assert!(info["version"].is_null(), "{detect}");

    let health = on(
        &root,
        &["--platform", "auto", "endpoint", "health", "-w", "json"],
    );
    health.expect_code(0);
    assert_eq!(health.json()["all_healthy"], true, "{health}");

    for args in [
        vec!["member", "remove", "m0"],
        vec!["member", "promote", "m0"],
        vec!["member", "update", "m0", "--peer-urls=http://127.0.0.1:1"],
        vec!["member", "add", "x", "--peer-urls=http://127.0.0.1:1"],
        vec!["defrag"],
    ] {
        let mut all = vec!["--platform", "auto"];
        all.extend(args.iter().copied());
        let refused = on(&root, &all);
        assert_eq!(refused.code, 2, "{refused}");
        assert!(refused.stderr.contains("OpenShift"), "{refused}");
        assert!(refused.stderr.contains("--force"), "{refused}");
        assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
    }
    // Nothing changed: still one member.
    let list = on(
        &root,
        &["--platform", "auto", "member", "list", "-w", "json"],
    );
    assert_eq!(
        list.json()["members"].as_array().unwrap().len(),
        1,
        "{list}"
    );
    // --force overrides, with a warning.
    let forced = on(&root, &["--platform", "auto", "defrag", "--force"]);
    forced.expect_code(0);
    assert!(forced.stderr.contains("OpenShift"), "{forced}");
}

#[test]
fn platform_package_config_and_binary_version() {
    let cluster = Cluster::start(1, Security::Plain);
    let root = cluster.dir().join("host");
    let conf = under(&root, "/etc/etcd/etcd.conf");
    std::fs::create_dir_all(conf.parent().unwrap()).unwrap();
    let url = &cluster.members[0].client_url;
    std::fs::write(
        &conf,
        format!(
            "# etcd.conf\nETCD_NAME=\"pkg0\"\nETCD_DATA_DIR=\"/var/lib/etcd/default.etcd\"\nETCD_LISTEN_CLIENT_URLS=\"{url}\"\nETCD_ADVERTISE_CLIENT_URLS=\"{url}\"\n"
        ),
    )
    .unwrap();
    let unit = under(&root, "/usr/lib/systemd/system/etcd.service");
    std::fs::create_dir_all(unit.parent().unwrap()).unwrap();
    std::fs::write(
        &unit,
        "[Unit]\nDescription=etcd\n[Service]\nType=notify\nEnvironmentFile=-/etc/etcd/etcd.conf\nExecStart=/usr/bin/etcd \\\n  --name=\"${ETCD_NAME}\"\n",
    )
    .unwrap();
    let bin = under(&root, "/usr/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(EtcdVersion::from_env().etcd(), bin.join("etcd")).unwrap();

    let detect = on(&root, &["platform", "detect", "-w", "json"]);
    detect.expect_code(0);
    let info = detect.json();
    assert_eq!(info["platform"], "standalone", "{detect}");
    assert_eq!(info["name"], "pkg0");
    assert_eq!(info["endpoints"][0], url.as_str());
    assert_eq!(info["version"], EtcdVersion::from_env().version_string());
    assert_eq!(info["version_source"], "binary");
    assert_eq!(
        info["data_dir"],
        under(&root, "/var/lib/etcd/default.etcd")
            .display()
            .to_string()
    );
    let health = on(&root, &["--platform", "auto", "endpoint", "health"]);
    health.expect_code(0);
    // Not OpenShift: no guard.
    let defrag = on(&root, &["--platform", "auto", "defrag"]);
    defrag.expect_code(0);
}

#[test]
fn platform_auto_without_etcd_says_what_to_do() {
    let empty = tempfile::tempdir().unwrap();
    let detect = on(empty.path(), &["platform", "detect", "-w", "json"]);
    detect.expect_code(0);
    assert_eq!(detect.json()["platform"], "none");
    let run = on(empty.path(), &["--platform", "auto", "member", "list"]);
    crate::assert_clear_error(&run, "--endpoints");
}

#[test]
fn platform_kubeadm_stop_also_waits_for_crictl_when_present() {
    let node = KubeadmNode::start();
    let root = node.root();
    // A stand-in crictl: lists one running etcd container while the file `running` exists,
    // and records how it was called.
    let bin = root.join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let crictl = bin.join("crictl");
    std::fs::write(
        &crictl,
        "#!/bin/sh\nd=$(dirname \"$0\")\necho \"$@\" >> \"$d/calls\"\nif [ -e \"$d/running\" ]; then echo 0123abcd; fi\n",
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&crictl).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&crictl, permissions).unwrap();
    std::fs::write(bin.join("running"), "").unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root_arg = root.display().to_string();
    let stop = |timeout: &str| {
        etcdops(
            &[
                "--platform-root".to_string(),
                root_arg.clone(),
                "platform".into(),
                "stop".into(),
                "--timeout".into(),
                timeout.into(),
                "-w".into(),
                "json".into(),
            ],
            &[("PATH", path.as_str())],
        )
    };
    let waiting = stop("1s");
    assert_eq!(waiting.code, 2, "{waiting}");
    assert!(
        waiting
            .stderr
            .contains("crictl still lists a running etcd container (0123abcd)"),
        "{waiting}"
    );
    // The kubelet stand-in did stop etcd; only crictl held the wait.
    assert!(!port_open(&node.pod.client_url));
    let calls = std::fs::read_to_string(bin.join("calls")).unwrap();
    assert!(
        calls.contains("ps --quiet --name ^etcd$ --state running"),
        "{calls}"
    );
    std::fs::remove_file(bin.join("running")).unwrap();
    let done = stop("10s");
    done.expect_code(0);
    assert_eq!(done.json()["changed"], false, "{done}");
    assert_eq!(
        done.json()["crictl"],
        crictl.display().to_string(),
        "{done}"
    );
}

#[test]
fn platform_operator_object_in_the_cluster_refuses_from_any_host() {
    // A host with no OpenShift files (say, a bastion) talking to OpenShift's etcd: the
    // cluster-etcd-operator's own object in etcd is what gives it away.
    let cluster = Cluster::start(1, Security::Plain);
    let root = cluster.dir().join("bastion");
    std::fs::create_dir_all(&root).unwrap();
    let endpoints = cluster.endpoints();
    let with = |args: &[&str]| {
        let mut all = vec!["--endpoints", endpoints.as_str()];
        all.extend_from_slice(args);
        on(&root, &all)
    };
    // Before the object exists, defrag runs.
    with(&["defrag"]).expect_code(0);

    let key = "/kubernetes.io/operator.openshift.io/etcds/cluster";
    cluster.put(
        key,
        r#"{"kind":"Etcd","apiVersion":"operator.openshift.io/v1"}"#,
    );
    for args in [
        vec!["member", "remove", "m0"],
        vec!["member", "add", "x", "--peer-urls=http://127.0.0.1:1"],
        vec!["defrag"],
        // etcd's access control is the operator's too: every change is guarded.
        vec!["role", "add", "intruder"],
        vec!["user", "add", "intruder", "--no-password"],
        vec!["auth", "enable"],
        vec!["auth", "disable"],
    ] {
        let refused = with(&args);
        assert_eq!(refused.code, 2, "{refused}");
        assert!(refused.stderr.contains(key), "{refused}");
        assert!(refused.stderr.contains("--force"), "{refused}");
        assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
    }
    let list = with(&["member", "list", "-w", "json"]);
    assert_eq!(list.json()["members"].as_array().unwrap().len(), 1);
    let roles = with(&["role", "list", "-w", "json"]);
    assert!(!roles.stdout.contains("intruder"), "{roles}");
    let users = with(&["user", "list", "-w", "json"]);
    assert!(!users.stdout.contains("intruder"), "{users}");
    let added = with(&["role", "add", "intruder", "--force"]);
    added.expect_code(0);
    assert!(added.stderr.contains("cluster-etcd-operator"), "{added}");
    assert!(
        with(&["role", "list"]).stdout.contains("intruder"),
        "a forced change is made"
    );
    let forced = with(&["defrag", "--force"]);
    forced.expect_code(0);
    assert!(
        forced.stderr.contains("behind the operator's back"),
        "{forced}"
    );
}

#[test]
fn platform_openshift_restore_is_refused_without_force() {
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.clone().unwrap();
    let root = cluster.dir().join("host");
    std::fs::create_dir_all(&root).unwrap();
    write_openshift_tree(&root, "cp0", &cluster.members[0].client_url, &certs);
    cluster.put("/registry/configmaps/default/one", "1");
    let store = cluster.dir().join("backups");
    let saved = on(
        &root,
        &[
            "--platform",
            "auto",
            "snapshot",
            "save",
            &store.display().to_string(),
            "-w",
            "json",
        ],
    );
    saved.expect_code(0);
    let file = store.join(saved.json()["manifest"]["object"].as_str().unwrap());

    let data_dir = root.join("var/lib/etcd-restored");
    let restore = |extra: &[&str]| {
        let mut args = vec![
            "snapshot".to_string(),
            "restore".into(),
            file.display().to_string(),
            "--data-dir".into(),
            data_dir.display().to_string(),
            "--name".into(),
            "cp0".into(),
            "--initial-cluster".into(),
            "cp0=https://127.0.0.1:2380".into(),
            "--initial-cluster-token".into(),
            "t".into(),
            "--initial-advertise-peer-urls".into(),
            "https://127.0.0.1:2380".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        on(&root, &refs)
    };
    let refused = restore(&[]);
    assert_eq!(refused.code, 2, "{refused}");
    assert!(refused.stderr.contains("cluster-restore.sh"), "{refused}");
    assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
    assert!(
        !data_dir.exists(),
        "a refused restore wrote {}",
        data_dir.display()
    );

    let forced = restore(&["--force"]);
    forced.expect_code(0);
    assert!(
        forced.stderr.contains("behind the operator's back"),
        "{forced}"
    );
    assert!(data_dir.join("member/snap/db").is_file());
}

/// Static pod resources as an OpenShift node holds them: several revisions per pod.
pub(crate) fn write_static_pod_resources(root: &Path) {
    let base = under(root, "/etc/kubernetes/static-pod-resources");
    for (pod, revisions) in [
        ("kube-apiserver-pod", &[3, 11][..]),
        ("kube-controller-manager-pod", &[5][..]),
        ("kube-scheduler-pod", &[2, 9, 10][..]),
        ("etcd-pod", &[6, 7][..]),
    ] {
        for revision in revisions {
            let dir = base.join(format!("{pod}-{revision}"));
            std::fs::create_dir_all(dir.join("secrets/encryption-config")).unwrap();
            let yaml = pod.replace("-pod", "-pod.yaml");
            std::fs::write(dir.join(&yaml), format!("# {pod} revision {revision}\n")).unwrap();
            std::fs::write(
                dir.join("secrets/encryption-config/encryption-config"),
                format!("key of revision {revision}\n"),
            )
            .unwrap();
        }
    }
}

#[test]
fn platform_openshift_backup_pair_is_what_cluster_restore_reads() {
    use std::os::unix::fs::PermissionsExt;

    let version = EtcdVersion::from_env();
    let cluster = Cluster::start(1, Security::Tls);
    let certs = cluster.certs.clone().unwrap();
    let root = cluster.dir().join("host");
    std::fs::create_dir_all(&root).unwrap();
    write_openshift_tree(&root, "cp0", &cluster.members[0].client_url, &certs);
    cluster.put_keys("/kubernetes.io/configmaps/default/c", 20);
    let store = cluster.dir().join("backups");
    let pair_dir = root.join("home/core/backup");
    let save = |extra: &[&str]| {
        let mut args = vec![
            "--platform".to_string(),
            "auto".into(),
            "snapshot".into(),
            "save".into(),
            store.display().to_string(),
            "--openshift-backup-dir".into(),
            pair_dir.display().to_string(),
            "-w".into(),
            "json".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        on(&root, &refs)
    };

    // Without static pod resources: refused before anything is saved.
    let refused = save(&[]);
    assert_eq!(refused.code, 2, "{refused}");
    assert!(refused.stderr.contains("kube-apiserver-pod"), "{refused}");
    assert!(!store.exists() || std::fs::read_dir(&store).unwrap().next().is_none());

    write_static_pod_resources(&root);
    let saved = save(&[]);
    saved.expect_code(0);
    let out = saved.json();
    let snapshot = Path::new(out["openshift"]["snapshot"].as_str().unwrap()).to_path_buf();
    let archive =
        Path::new(out["openshift"]["static_kuberesources"].as_str().unwrap()).to_path_buf();
    // Names as cluster-backup.sh gives them, one timestamp for both.
    let name = snapshot.file_name().unwrap().to_string_lossy().into_owned();
    let time = name
        .strip_prefix("snapshot_")
        .and_then(|n| n.strip_suffix(".db"))
        .unwrap_or_else(|| panic!("{name}"));
    // `date "+%F_%H%M%S"`: 2026-11-29_231503.
    let shape: String = time
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "9999-99-99_999999", "{name}");
    assert_eq!(
        archive.file_name().unwrap().to_string_lossy(),
        format!("static_kuberesources_{time}.tar.gz")
    );
    for file in [&snapshot, &archive] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
    let leftovers: Vec<_> = std::fs::read_dir(&pair_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // etcd's own tool reads the snapshot, trailer and all, and agrees with the manifest.
    let status = version.snapshot_status(&snapshot).unwrap();
    assert_eq!(status["revision"], out["manifest"]["revision"], "{status}");
    let restored = cluster.dir().join("oracle-restore");
    let restore = version
        .snapshot_tool()
        .args(["snapshot", "restore"])
        .arg(&snapshot)
        .arg("--data-dir")
        .arg(&restored)
        .output()
        .unwrap();
    assert!(
        restore.status.success(),
        "{}",
        String::from_utf8_lossy(&restore.stderr)
    );

    // The archive as cluster-restore.sh uses it: the newest revision of each pod, paths
    // relative to /etc/kubernetes, the pod manifest found by name and at depth 2.
    let listing = std::process::Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    for newest in [
        "static-pod-resources/kube-apiserver-pod-11/kube-apiserver-pod.yaml",
        "static-pod-resources/kube-controller-manager-pod-5/kube-controller-manager-pod.yaml",
        "static-pod-resources/kube-scheduler-pod-10/kube-scheduler-pod.yaml",
        "static-pod-resources/etcd-pod-7/etcd-pod.yaml",
        "static-pod-resources/kube-apiserver-pod-11/secrets/encryption-config/encryption-config",
    ] {
        assert!(
            listing.lines().any(|l| l == newest),
            "{newest} not in:\n{listing}"
        );
    }
    assert!(!listing.contains("kube-apiserver-pod-3/"), "{listing}");
    assert!(!listing.contains("etcd-certs"), "{listing}");
    let extract = cluster.dir().join("extract");
    std::fs::create_dir_all(&extract).unwrap();
    let untar = std::process::Command::new("tar")
        .arg("-C")
        .arg(&extract)
        .arg("-xzf")
        .arg(&archive)
        .arg("static-pod-resources")
        .status()
        .unwrap();
    assert!(untar.success());
    assert_eq!(
        std::fs::read_to_string(extract.join("static-pod-resources/etcd-pod-7/etcd-pod.yaml"))
            .unwrap(),
        "# etcd-pod revision 7\n"
    );

    // Never overwritten, and never combined with encryption.
    let again = save(&[
        "--encrypt-to",
        "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
    ]);
    assert_eq!(again.code, 2, "{again}");
    assert!(again.stderr.contains("--encrypt-to"), "{again}");
}

/// Files OpenShift's operators own are not changed by hand on its control-plane host: `pki ca`
/// and `data-dir commit-tail` are refused in one line naming `--force` (in a dry run too) and
/// write nothing; forced, the CA is made, with a warning. No etcd is needed: the guard reads
/// the host.
#[test]
fn host_file_changes_are_refused_on_openshift_without_force() {
    let root = tempfile::tempdir().unwrap();
    let manifests = root.path().join("etc/kubernetes/manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("etcd-pod.yaml"), "kind: Pod\n").unwrap();
    let pki = root.path().join("pki");
    let ca = |extra: &[&str]| {
        let mut args = vec![
            "pki".to_string(),
            "ca".into(),
            "--ca-cert".into(),
            pki.join("ca.crt").display().to_string(),
            "--ca-key".into(),
            pki.join("ca.key").display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        on(root.path(), &refs)
    };
    for extra in [&[][..], &["--dry-run"][..]] {
        let refused = ca(extra);
        assert_eq!(refused.code, 2, "{refused}");
        assert!(
            refused.stderr.contains("refusing `certificate issue`")
                && refused.stderr.trim_end().ends_with("(--force)"),
            "{refused}"
        );
        assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
    }
    let data_dir = root.path().join("var/lib/etcd").display().to_string();
    let refused = on(root.path(), &["data-dir", "commit-tail", &data_dir]);
    assert_eq!(refused.code, 2, "{refused}");
    assert!(refused.stderr.contains("`WAL tail adoption`"), "{refused}");
    assert!(!pki.exists(), "a refused change wrote {}", pki.display());

    let forced = ca(&["--force"]);
    forced.expect_code(0);
    assert!(forced.stderr.contains("OpenShift"), "{forced}");
    assert!(pki.join("ca.crt").is_file() && pki.join("ca.key").is_file());
}

/// Finding: #35 item 2 names static pods among the state changes that go through a workflow
/// with its guard, but `platform stop` still calls etcd-k8s's `static_pod` directly: on an
/// OpenShift control-plane host it parks cluster-etcd-operator's `etcd-pod.yaml` (stopping
/// that member's etcd) with no refusal, no `--force` and no warning, while `pki ca`,
/// `data-dir commit-tail`, `defrag` and `snapshot restore` are refused there. Expected: refused
/// in one line naming `--force` (in a dry run too), the manifest left where it is. No etcd is
/// needed: the guard reads the host.
#[test]
fn static_pod_stop_is_refused_on_openshift_without_force() {
    let root = tempfile::tempdir().unwrap();
    let manifests = root.path().join("etc/kubernetes/manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    let manifest = manifests.join("etcd-pod.yaml");
    let port = free_port();
    std::fs::write(
        &manifest,
        format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: openshift-etcd
spec:
  containers:
  - name: etcd
    image: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123456789abcdef
    env:
    - name: ETCD_DATA_DIR
      value: /var/lib/etcd
    - name: ETCD_NAME
      value: cp0
    command:
    - /bin/sh
    - -c
    - |
      exec etcd --advertise-client-urls=https://127.0.0.1:{port} --listen-client-urls=https://127.0.0.1:{port}
  hostNetwork: true
"#
        ),
    )
    .unwrap();
    let detect = on(root.path(), &["platform", "detect", "-w", "json"]);
    detect.expect_code(0);
    assert_eq!(detect.json()["platform"], "openshift", "{detect}");
    for extra in [&["--dry-run"][..], &[][..]] {
        let mut args = vec!["platform", "stop", "--timeout", "1s"];
        args.extend_from_slice(extra);
        let refused = on(root.path(), &args);
        assert_eq!(refused.code, 2, "{args:?}: {refused}");
        assert!(
            refused.stderr.contains("OpenShift")
                && refused.stderr.trim_end().ends_with("(--force)"),
            "{args:?}: {refused}"
        );
        assert!(
            manifest.is_file(),
            "a refused stop parked {}",
            manifest.display()
        );
    }
}
