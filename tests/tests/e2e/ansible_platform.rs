//! The platform side of `etcd.core` run by real ansible-core on control-plane host trees:
//! etcd_platform_info and etcd_static_pod on a kubeadm node whose etcd the kubelet stand-in
//! runs from its manifest; the modules' refusal of what OpenShift's operator owns and its
//! compatible backups; and the restore role bringing back a three-node kubeadm control plane
//! through static pods. The targets have no Python: the modules are the shim binary.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use etcdops_tests::{
    Certs, Cluster, Collection, EtcdVersion, Kubelet, PodSpec, Run, Security, etcdops, free_port,
    install_kubeadm_pki, kubeadm_image, under, write_kubeadm_manifest, write_openshift_tree,
};
use serde_json::{Value, json};

use crate::platform::KubeadmNode;

const NO_PYTHON: &str = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";

#[test]
fn platform_modules_detect_stop_and_start_a_kubeadm_static_pod() {
    let node = KubeadmNode::start();
    let empty = tempfile::tempdir().unwrap();
    let collection = Collection::install();
    let tasks: Vec<Value> = ["etcd_platform_info", "etcd_static_pod"]
        .iter()
        .map(|t| json!({"ansible.builtin.include_role": {"name": collection.target(t)}}))
        .collect();
    let play = json!([{ "hosts": "target", "gather_facts": false, "tasks": tasks }]).to_string();
    let vars = json!({
        "etcd_platform_root": node.root(),
        "etcd_empty_root": empty.path(),
        "etcd_expected_name": node.pod.name,
        "etcd_expected_endpoint": node.pod.client_url,
        "etcd_expected_version": EtcdVersion::from_env().version_string(),
    });
    let run = collection.playbook(&play, NO_PYTHON, &vars, &[], &[]);
    run.assert_ok();
    // Four changes: stop and start, each in check mode and for real; etcd is back.
    assert!(run.stdout.contains("changed=4"), "{run}");
    assert!(
        node.root()
            .join("etc/kubernetes/manifests/etcd.yaml")
            .is_file()
    );
}

#[test]
fn modules_refuse_what_openshifts_operator_owns_and_write_openshift_backups() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put(
        "/kubernetes.io/operator.openshift.io/etcds/cluster",
        r#"{"kind":"Etcd"}"#,
    );
    let bastion = cluster.dir().join("bastion");
    std::fs::create_dir_all(&bastion).unwrap();
    let tls = Cluster::start(1, Security::Tls);
    let openshift = tls.dir().join("host");
    std::fs::create_dir_all(&openshift).unwrap();
    write_openshift_tree(
        &openshift,
        "cp0",
        &tls.members[0].client_url,
        tls.certs.as_ref().unwrap(),
    );
    crate::platform::write_static_pod_resources(&openshift);
    let store = cluster.dir().join("backups");
    let file = crate::save_snapshot(&cluster, &store, "zstd");

    let collection = Collection::install();
    let play = json!([{ "hosts": "target", "gather_facts": false, "tasks": [
        {"ansible.builtin.include_role": {"name": collection.target("etcd_openshift")}}
    ]}])
    .to_string();
    let vars = json!({
        "etcd_endpoints": cluster.endpoints(),
        "etcd_bastion_root": bastion,
        "etcd_openshift_root": openshift,
        "etcd_snapshot_file": file,
        "etcd_restore_dir": openshift.join("var/lib/etcd-restored"),
        "etcd_openshift_store": tls.dir().join("backups"),
        "etcd_openshift_pair_dir": openshift.join("home/core/backup"),
    });
    let run = collection.playbook(&play, NO_PYTHON, &vars, &[], &[]);
    run.assert_ok();
    assert!(!openshift.join("var/lib/etcd-restored").exists(), "{run}");
    // Nor did the refused certificate, config file, encryption config and WAL tail changes.
    assert!(
        !openshift.join("var/lib/etcd-restored-files").exists(),
        "{run}"
    );
    let pair: Vec<_> = std::fs::read_dir(openshift.join("home/core/backup"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(pair.len(), 2, "{pair:?}");
    // The refused add left the member list as it was.
    let list = crate::run(&cluster, &["member", "list", "-w", "json"]);
    assert_eq!(
        list.json()["members"].as_array().unwrap().len(),
        1,
        "{list}"
    );
}

/// A kubeadm control plane of three nodes, each a host tree (with spaces in its path) whose
/// kubelet stand-in runs its etcd member from the static pod manifest.
struct KubeadmControlPlane {
    dir: tempfile::TempDir,
    certs: Certs,
    roots: Vec<PathBuf>,
    pods: Vec<PodSpec>,
    kubelets: Vec<Kubelet>,
}

impl KubeadmControlPlane {
    fn start() -> KubeadmControlPlane {
        let version = EtcdVersion::from_env();
        let dir = tempfile::Builder::new()
            .prefix("etcdops-kubeadm-cp-")
            .tempdir()
            .unwrap();
        let certs = Certs::generate(&dir.path().join("pki"));
        let pods: Vec<PodSpec> = (0..3)
            .map(|i| PodSpec {
                name: format!("cp{i}"),
                client_url: format!("https://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                image: kubeadm_image(version),
            })
            .collect();
        let initial_cluster: Vec<String> = pods
            .iter()
            .map(|p| format!("{}={}", p.name, p.peer_url))
            .collect();
        let mut roots = Vec::new();
        for (i, pod) in pods.iter().enumerate() {
            let root = dir.path().join(format!("control plane {i}"));
            install_kubeadm_pki(&root, &certs);
            // Node 1 keeps etcd's data on "another disk", /var/lib/etcd being a symlink.
            if i == 1 {
                let disk = under(&root, "/mnt/etcd disk/etcd");
                std::fs::create_dir_all(&disk).unwrap();
                std::fs::create_dir_all(under(&root, "/var/lib")).unwrap();
                std::os::unix::fs::symlink(&disk, under(&root, "/var/lib/etcd")).unwrap();
            }
            let manifest = write_kubeadm_manifest(&root, pod);
            let text = std::fs::read_to_string(&manifest).unwrap().replace(
                &format!("--initial-cluster={}={}", pod.name, pod.peer_url),
                &format!("--initial-cluster={}", initial_cluster.join(",")),
            );
            std::fs::write(&manifest, text).unwrap();
            roots.push(root);
        }
        let kubelets = roots.iter().map(|r| Kubelet::start(r, version)).collect();
        let plane = KubeadmControlPlane {
            dir,
            certs,
            roots,
            pods,
            kubelets,
        };
        plane.wait_healthy();
        plane
    }

    fn endpoints(&self) -> Vec<String> {
        self.pods.iter().map(|p| p.client_url.clone()).collect()
    }

    /// `etcdops` against the whole control plane with the client certificate.
    fn etcdops(&self, args: &[&str]) -> Run {
        let mut all: Vec<String> = vec![
            "--endpoints".into(),
            self.endpoints().join(","),
            "--cacert".into(),
            self.certs.ca.display().to_string(),
            "--cert".into(),
            self.certs.client_cert.display().to_string(),
            "--key".into(),
            self.certs.client_key.display().to_string(),
        ];
        all.extend(args.iter().map(|s| s.to_string()));
        etcdops(&all, &[])
    }

    /// Writes `key` with etcd's own etcdctl (etcdops writes nothing, on purpose).
    fn put(&self, key: &str) {
        let out = std::process::Command::new(EtcdVersion::from_env().etcdctl())
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.endpoints().join(",")))
            .arg(format!("--cacert={}", self.certs.ca.display()))
            .arg(format!("--cert={}", self.certs.client_cert.display()))
            .arg(format!("--key={}", self.certs.client_key.display()))
            .args(["put", key, "v"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let run = self.etcdops(&["endpoint", "health", "-w", "json"]);
            if run.code == 0 {
                return;
            }
            assert!(Instant::now() < deadline, "never healthy:\n{run}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for KubeadmControlPlane {
    fn drop(&mut self) {
        self.kubelets.clear();
    }
}

#[test]
fn restore_role_restores_a_three_node_kubeadm_control_plane_through_static_pods() {
    let plane = KubeadmControlPlane::start();
    for i in 0..10 {
        plane.put(&format!("/dr/before-{i}"));
    }
    let store = plane.dir.path().join("backups");
    let saved = plane.etcdops(&[
        "snapshot",
        "save",
        &store.display().to_string(),
        "-w",
        "json",
    ]);
    saved.expect_code(0);
    let backup = store.join(saved.json()["manifest"]["object"].as_str().unwrap());
    let old_cluster = saved.json()["manifest"]["cluster_id"].clone();
    plane.put("/dr/after");

    let inventory: String = plane
        .pods
        .iter()
        .zip(&plane.roots)
        .map(|(pod, root)| {
            format!(
                "{name} ansible_connection=local ansible_python_interpreter=/nonexistent etcd_name={name} etcd_peer_url={peer} etcd_data_dir=\"{data}\" etcd_static_pod_manifest=\"{manifest}\" etcd_static_pod_parking_dir=\"{parking}\" etcd_platform_root=\"{root}\"\n",
                name = pod.name,
                peer = pod.peer_url,
                data = under(root, "/var/lib/etcd").display(),
                manifest = under(root, "/etc/kubernetes/manifests/etcd.yaml").display(),
                parking = under(root, "/etc/kubernetes/etcdops-parked").display(),
                root = root.display(),
            )
        })
        .collect();
    let play = json!([{
        "hosts": "all",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {
            "endpoints": plane.endpoints(),
            "cacert": plane.certs.ca,
            "cert": plane.certs.client_cert,
            "key": plane.certs.client_key,
        }},
        "roles": [{"role": "etcd.core.restore", "vars": {
            "restore_snapshot": backup,
            "restore_cluster_token": "restored-kubeadm",
            "etcd_service_manager": "static_pod",
            "etcd_stop_timeout": 60,
        }}],
    }])
    .to_string();
    let collection = Collection::install();
    let run = collection.playbook(&play, &inventory, &json!({}), &[], &[]);
    run.assert_ok();

    // The data of the backup, nothing written after it, a new cluster of the same members.
    let before = plane.etcdops(&[
        "get",
        "/dr/before-",
        "--prefix",
        "--count-only",
        "-w",
        "json",
    ]);
    assert_eq!(before.json()["count"], 10, "{before}");
    let after = plane.etcdops(&["get", "/dr/after", "--count-only", "-w", "json"]);
    assert_eq!(after.json()["count"], 0, "{after}");
    let members = plane.etcdops(&["member", "list", "-w", "json"]);
    members.expect_code(0);
    let mut names: Vec<String> = members.json()["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["cp0", "cp1", "cp2"]);
    let new_cluster = members.json()["cluster_id"].clone();
    assert!(
        new_cluster.is_string() && old_cluster.is_string(),
        "{members}"
    );
    assert_ne!(
        new_cluster, old_cluster,
        "the restored cluster has a new ID"
    );
    plane.put("/dr/new");

    for (i, root) in plane.roots.iter().enumerate() {
        // Every manifest is back where the kubelet reads it; the old data kept aside.
        assert!(under(root, "/etc/kubernetes/manifests/etcd.yaml").is_file());
        let data_parent = if i == 1 {
            under(root, "/mnt/etcd disk")
        } else {
            under(root, "/var/lib")
        };
        let aside: Vec<String> = std::fs::read_dir(&data_parent)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("etcd.bak-"))
            .collect();
        assert_eq!(aside.len(), 1, "{}: {aside:?}", data_parent.display());
    }
    // The symlinked data dir is still a link to the other disk, and holds the restore.
    let link = under(&plane.roots[1], "/var/lib/etcd");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(under(&plane.roots[1], "/mnt/etcd disk/etcd/member/snap/db").is_file());
}
