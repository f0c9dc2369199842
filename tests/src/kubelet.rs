//! A small stand-in for the kubelet, and fixture trees of control-plane hosts.
//!
//! [`Kubelet`] polls `<root>/etc/kubernetes/manifests`: when `etcd.yaml` appears it starts
//! etcd with the command line of the manifest's etcd container (container paths mapped to
//! `<root>/<hostPath>` through the pod's volumes, as a container runtime would), and when
//! the manifest disappears it kills that etcd. Only plain `etcd --flag=value` command lines
//! are run (kubeadm's form), not OpenShift's shell script.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::certs::Certs;
use crate::etcd::{EtcdVersion, spawn_logged};

/// `<root>/<absolute path>`.
pub fn under(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// A kubeadm-style pod of one etcd member.
#[derive(Debug, Clone)]
pub struct PodSpec {
    /// `--name`.
    pub name: String,
    /// Client URL (listen and advertise).
    pub client_url: String,
    /// Peer URL (listen and advertise).
    pub peer_url: String,
    /// The image (its tag carries the version).
    pub image: String,
}

/// Installs kubeadm's PKI layout under `root` from `certs`: `etcd/ca.crt`, `etcd/server.*`,
/// `etcd/peer.*`, `etcd/healthcheck-client.*` and `apiserver-etcd-client.*`.
pub fn install_kubeadm_pki(root: &Path, certs: &Certs) {
    let pki = under(root, "/etc/kubernetes/pki/etcd");
    std::fs::create_dir_all(&pki).expect("create pki dir");
    let copy = |from: &Path, to: PathBuf| {
        std::fs::copy(from, to).expect("copy test certificate");
    };
    copy(&certs.ca, pki.join("ca.crt"));
    copy(&certs.server_cert, pki.join("server.crt"));
    copy(&certs.server_key, pki.join("server.key"));
    copy(&certs.server_cert, pki.join("peer.crt"));
    copy(&certs.server_key, pki.join("peer.key"));
    copy(&certs.client_cert, pki.join("healthcheck-client.crt"));
    copy(&certs.client_key, pki.join("healthcheck-client.key"));
    let parent = under(root, "/etc/kubernetes/pki");
    copy(&certs.client_cert, parent.join("apiserver-etcd-client.crt"));
    copy(&certs.client_key, parent.join("apiserver-etcd-client.key"));
}

/// kubeadm's `etcd.yaml` for `pod`, as kubeadm writes it (TLS on the client port, paths
/// inside the container).
pub fn kubeadm_manifest(pod: &PodSpec) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubeadm.kubernetes.io/etcd.advertise-client-urls: {client}
  labels:
    component: etcd
    tier: control-plane
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls={client}
    - --cert-file=/etc/kubernetes/pki/etcd/server.crt
    - --client-cert-auth=true
    - --data-dir=/var/lib/etcd
    - --initial-advertise-peer-urls={peer}
    - --initial-cluster={name}={peer}
    - --key-file=/etc/kubernetes/pki/etcd/server.key
    - --listen-client-urls={client}
    - --listen-peer-urls={peer}
    - --name={name}
    - --snapshot-count=10000
    - --trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt
    - --heartbeat-interval=50
    - --election-timeout=500
    image: {image}
    imagePullPolicy: IfNotPresent
    name: etcd
    volumeMounts:
    - mountPath: /var/lib/etcd
      name: etcd-data
    - mountPath: /etc/kubernetes/pki/etcd
      name: etcd-certs
  hostNetwork: true
  priorityClassName: system-node-critical
  volumes:
  - hostPath:
      path: /etc/kubernetes/pki/etcd
      type: DirectoryOrCreate
    name: etcd-certs
  - hostPath:
      path: /var/lib/etcd
      type: DirectoryOrCreate
    name: etcd-data
"#,
        client = pod.client_url,
        peer = pod.peer_url,
        name = pod.name,
        image = pod.image,
    )
}

/// Writes kubeadm's manifest into `<root>/etc/kubernetes/manifests/etcd.yaml`.
pub fn write_kubeadm_manifest(root: &Path, pod: &PodSpec) -> PathBuf {
    let dir = under(root, "/etc/kubernetes/manifests");
    std::fs::create_dir_all(&dir).expect("create manifests dir");
    let path = dir.join("etcd.yaml");
    std::fs::write(&path, kubeadm_manifest(pod)).expect("write manifest");
    path
}

/// An OpenShift 4 control-plane tree for a member named `name` serving `client_url`:
/// `etcd-pod.yaml` (etcd started from a shell script, the node IP from an environment
/// variable), and the certificates under `static-pod-resources/etcd-certs` (mounted at
/// `/etc/kubernetes/static-pod-certs` in the pod). Returns the manifest's path.
pub fn write_openshift_tree(root: &Path, name: &str, client_url: &str, certs: &Certs) -> PathBuf {
    let resources = under(root, "/etc/kubernetes/static-pod-resources/etcd-certs");
    let ca_dir = resources.join("configmaps/etcd-serving-ca");
    let secrets = resources.join("secrets/etcd-all-certs");
    std::fs::create_dir_all(&ca_dir).expect("create ca dir");
    std::fs::create_dir_all(&secrets).expect("create secrets dir");
    std::fs::copy(&certs.ca, ca_dir.join("ca-bundle.crt")).expect("copy ca");
    std::fs::copy(
        &certs.client_cert,
        secrets.join(format!("etcd-peer-{name}.crt")),
    )
    .expect("copy cert");
    std::fs::copy(
        &certs.client_key,
        secrets.join(format!("etcd-peer-{name}.key")),
    )
    .expect("copy key");
    std::fs::copy(
        &certs.server_cert,
        secrets.join(format!("etcd-serving-{name}.crt")),
    )
    .expect("copy server cert");
    std::fs::copy(
        &certs.server_key,
        secrets.join(format!("etcd-serving-{name}.key")),
    )
    .expect("copy server key");
    // https://127.0.0.1:PORT -> the port, the host given by NODE_<name>_IP.
    let port = client_url.rsplit(':').next().expect("a port");
    let manifest = format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: openshift-etcd
  labels:
    app: etcd
    etcd: "true"
    revision: "7"
spec:
  initContainers:
  - name: setup
    image: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123456789abcdef
    command: ["/bin/sh", "-c", "echo setup"]
  containers:
  - name: etcdctl
    image: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123456789abcdef
    command: ["/bin/bash", "-c", "trap TERM INT; sleep infinity & wait"]
    env:
    - name: ETCDCTL_API
      value: "3"
    - name: ETCDCTL_CACERT
      value: /etc/kubernetes/static-pod-certs/configmaps/etcd-serving-ca/ca-bundle.crt
    - name: ETCDCTL_CERT
      value: /etc/kubernetes/static-pod-certs/secrets/etcd-all-certs/etcd-peer-{name}.crt
    - name: ETCDCTL_KEY
      value: /etc/kubernetes/static-pod-certs/secrets/etcd-all-certs/etcd-peer-{name}.key
    volumeMounts:
    - mountPath: /etc/kubernetes/static-pod-certs
      name: cert-dir
  - name: etcd
    image: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123456789abcdef
    env:
    - name: NODE_{name}_IP
      value: 127.0.0.1
    - name: ETCD_DATA_DIR
      value: /var/lib/etcd
    - name: ETCD_NAME
      value: {name}
    command:
    - /bin/sh
    - -c
    - |
      #!/bin/sh
      set -euo pipefail
      etcdctl member list || true
      exec nice -n -19 ionice -c2 -n0 etcd \
        --logger=zap \
        --initial-advertise-peer-urls=https://${{NODE_{name}_IP}}:2380 \
        --cert-file=/etc/kubernetes/static-pod-certs/secrets/etcd-all-certs/etcd-serving-{name}.crt \
        --key-file=/etc/kubernetes/static-pod-certs/secrets/etcd-all-certs/etcd-serving-{name}.key \
        --trusted-ca-file=/etc/kubernetes/static-pod-certs/configmaps/etcd-serving-ca/ca-bundle.crt \
        --client-cert-auth=true \
        --advertise-client-urls=https://${{NODE_{name}_IP}}:{port} \
        --listen-client-urls=https://0.0.0.0:{port} \
        --listen-peer-urls=https://0.0.0.0:2380
    volumeMounts:
    - mountPath: /etc/kubernetes/manifests
      name: static-pod-dir
    - mountPath: /etc/kubernetes/static-pod-certs
      name: cert-dir
    - mountPath: /var/lib/etcd/
      name: data-dir
  hostNetwork: true
  volumes:
  - hostPath:
      path: /etc/kubernetes/static-pod-resources/etcd-pod-7
    name: resource-dir
  - hostPath:
      path: /etc/kubernetes/static-pod-resources/etcd-certs
    name: cert-dir
  - hostPath:
      path: /var/lib/etcd
    name: data-dir
  - hostPath:
      path: /etc/kubernetes/manifests
    name: static-pod-dir
"#
    );
    let dir = under(root, "/etc/kubernetes/manifests");
    std::fs::create_dir_all(&dir).expect("create manifests dir");
    let path = dir.join("etcd-pod.yaml");
    std::fs::write(&path, manifest).expect("write manifest");
    path
}

/// The image a kubeadm of this etcd release would use.
pub fn kubeadm_image(version: EtcdVersion) -> String {
    format!("registry.k8s.io/etcd:{}-0", version.version_string())
}

/// The kubelet stand-in: runs etcd while `etcd.yaml` is in the manifests dir.
pub struct Kubelet {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The etcd command line of a manifest, for `binary`, with container paths mapped under `root`.
fn command_line(root: &Path, text: &str, binary: &Path) -> Option<std::process::Command> {
    let pod: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).ok()?;
    let spec = pod.get("spec")?;
    let container = spec
        .get("containers")?
        .as_sequence()?
        .iter()
        .find(|c| c.get("name").and_then(|n| n.as_str()) == Some("etcd"))?;
    let mut mounts: Vec<(String, String)> = Vec::new();
    for mount in container.get("volumeMounts")?.as_sequence()? {
        let name = mount.get("name")?.as_str()?;
        let mount_path = mount.get("mountPath")?.as_str()?;
        let host = spec
            .get("volumes")?
            .as_sequence()?
            .iter()
            .find(|v| v.get("name").and_then(|n| n.as_str()) == Some(name))?
            .get("hostPath")?
            .get("path")?
            .as_str()?;
        mounts.push((mount_path.to_string(), host.to_string()));
    }
    let words: Vec<&str> = container
        .get("command")?
        .as_sequence()?
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    let mut cmd = std::process::Command::new(binary);
    for word in words.iter().skip(1) {
        let mapped = match word.split_once('=') {
            Some((flag, value)) => {
                let value = mounts
                    .iter()
                    .find_map(|(mount, host)| {
                        value
                            .strip_prefix(mount.as_str())
                            .map(|rest| format!("{}{rest}", under(root, host).display()))
                    })
                    .unwrap_or_else(|| value.to_string());
                format!("{flag}={value}")
            }
            None => word.to_string(),
        };
        cmd.arg(mapped);
    }
    Some(cmd)
}

impl Kubelet {
    /// Starts polling `<root>/etc/kubernetes/manifests/etcd.yaml`; etcd's output goes to
    /// `<root>/kubelet-etcd.log`.
    pub fn start(root: &Path, version: EtcdVersion) -> Kubelet {
        let stop = Arc::new(AtomicBool::new(false));
        let root = root.to_path_buf();
        let flag = stop.clone();
        let binary = version.etcd();
        let thread = std::thread::spawn(move || {
            let manifest = under(&root, "/etc/kubernetes/manifests/etcd.yaml");
            let log = root.join("kubelet-etcd.log");
            let mut running: Option<Child> = None;
            while !flag.load(Ordering::SeqCst) {
                let present = manifest.exists();
                if present && running.is_none() {
                    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
                    if let Some(cmd) = command_line(&root, &text, &binary) {
                        running = Some(spawn_logged(cmd, &log));
                    }
                } else if !present && let Some(mut child) = running.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                // A pod that exited is restarted on the next round, as the kubelet does.
                if let Some(child) = running.as_mut()
                    && matches!(child.try_wait(), Ok(Some(_)))
                {
                    running = None;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Some(mut child) = running.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        });
        Kubelet {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
