//! The Kubernetes manifests of deploy/kubernetes, run for real. Each kustomization (base,
//! kubeadm, openshift) is rendered with kustomize (`kubectl kustomize`); each workload's
//! command, args and environment are taken from it as the kubelet would resolve them
//! (ConfigMap keys, the downward API, `$(VAR)` references), its volumes are mapped onto this
//! machine (hostPath volumes onto a node tree holding a real TLS etcd's certificates in
//! kubeadm's or OpenShift's layout, the Secret's files, emptyDirs), the store onto a local
//! directory and etcd's client port onto the test member's, and the same argv is run with the
//! built etcdops. The CronJob's `snapshot save` must store a backup that `snapshot list` and
//! `snapshot verify` accept; the Deployment's `backup run` must publish a full backup, answer
//! its liveness and readiness probes on the port they name, and stop cleanly on SIGTERM.
//!
//! The rendered objects are also checked for what docs/KUBERNETES.md promises: locked-down
//! containers, one `backup run` replica replaced with Recreate, a Service that deploy/
//! monitoring's ServiceMonitor selects, and an OpenShift SCC (with its RBAC) that admits the
//! pods as they are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{
    Cluster, Security, etcdops_path, free_port, http_request, install_kubeadm_pki, under,
    write_openshift_tree,
};
use serde_yaml_ng::Value;

use crate::backup_run::rand_u32;

/// The overlays a user applies.
const KUSTOMIZATIONS: [&str; 3] = ["base", "kubeadm", "openshift"];

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// kubectl with kustomize v5: `ETCDOPS_KUBECTL`, else the one scripts/install-deps puts in the
/// deps dir.
fn kubectl() -> String {
    std::env::var("ETCDOPS_KUBECTL").unwrap_or_else(|_| {
        let deps = std::env::var("ETCDOPS_DEPS_DIR").unwrap_or("/opt/etcdops-deps".into());
        format!("{deps}/kubectl/kubectl")
    })
}

/// Every document `kubectl kustomize deploy/kubernetes/<overlay>` prints.
fn render(overlay: &str) -> Vec<Value> {
    let dir = deploy_dir().join("kubernetes").join(overlay);
    let kubectl = kubectl();
    let out = Command::new(&kubectl)
        .arg("kustomize")
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| panic!("{kubectl}: {e} (run scripts/install-deps test)"));
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = text
        .split("\n---\n")
        .map(|doc| serde_yaml_ng::from_str::<Value>(doc).unwrap())
        .filter(|doc| !doc.is_null())
        .collect();
    assert!(
        docs.len() > 3,
        "{overlay} rendered only {} documents",
        docs.len()
    );
    docs
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn find_mut<'a>(docs: &'a mut [Value], kind: &str, name: &str) -> &'a mut Value {
    docs.iter_mut()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn str_of(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value:?}"))
}

fn seq(value: &Value) -> &[Value] {
    value.as_sequence().map(Vec::as_slice).unwrap_or_default()
}

/// The pod template of a CronJob or Deployment.
fn pod_template(workload: &Value) -> &Value {
    match workload["kind"].as_str() {
        Some("CronJob") => &workload["spec"]["jobTemplate"]["spec"]["template"],
        Some("Deployment") => &workload["spec"]["template"],
        other => panic!("not a workload: {other:?}"),
    }
}

fn workloads(docs: &[Value]) -> Vec<&Value> {
    let found: Vec<&Value> = docs
        .iter()
        .filter(|d| matches!(d["kind"].as_str(), Some("CronJob" | "Deployment")))
        .collect();
    assert_eq!(found.len(), 2, "one CronJob and one Deployment");
    found
}

/// The only container of a pod spec.
fn container(pod: &Value) -> &Value {
    let containers = seq(&pod["containers"]);
    assert_eq!(containers.len(), 1, "one container per pod");
    &containers[0]
}

/// Kubernetes' `$(VAR)` expansion: a reference to a defined variable is replaced, `$$` is a
/// literal `$`, anything else stays as written.
fn expand(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some(name_end) = tail.strip_prefix("$(").and_then(|t| t.find(')')) {
            let name = &tail[2..2 + name_end];
            match vars.get(name) {
                Some(value) => out.push_str(value),
                None => out.push_str(&tail[..3 + name_end]),
            }
            rest = &tail[3 + name_end..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// What stands in for the node and the cluster around a pod: the node's `/`, the Secrets that
/// exist, where emptyDirs go, the node's address and the etcd member behind port 2379.
struct Node {
    root: PathBuf,
    secrets: BTreeMap<String, PathBuf>,
    scratch: PathBuf,
    host_ip: String,
    etcd_url: String,
}

/// A pod's volume mounts as paths of this machine, longest mount path first.
struct Mounts(Vec<(String, PathBuf)>);

impl Mounts {
    fn of(pod: &Value, node: &Node) -> Mounts {
        let volumes: BTreeMap<&str, &Value> = seq(&pod["spec"]["volumes"])
            .iter()
            .map(|v| (str_of(&v["name"]), v))
            .collect();
        let mut mounts = Vec::new();
        for mount in seq(&container(&pod["spec"])["volumeMounts"]) {
            let path = str_of(&mount["mountPath"]).to_string();
            let volume = volumes
                .get(str_of(&mount["name"]))
                .unwrap_or_else(|| panic!("mount {path} names no volume"));
            let local = if let Some(host) = volume["hostPath"]["path"].as_str() {
                // The prefix under which the pod sees the node's `/` (OpenShift's /host).
                if let Some(prefix) = path.strip_suffix(host).filter(|p| !p.is_empty()) {
                    mounts.push((prefix.to_string(), node.root.clone()));
                }
                under(&node.root, host)
            } else if let Some(secret) = volume["secret"]["secretName"].as_str() {
                node.secrets
                    .get(secret)
                    .unwrap_or_else(|| panic!("the Secret {secret} is not there"))
                    .clone()
            } else if volume["emptyDir"].is_mapping() {
                let dir = node.scratch.join(format!("empty-dir-{}", rand_u32()));
                std::fs::create_dir_all(&dir).unwrap();
                dir
            } else {
                panic!("volume of mount {path}: not hostPath, secret or emptyDir: {volume:?}");
            };
            assert!(local.exists(), "{path} -> {} is missing", local.display());
            mounts.push((path, local));
        }
        mounts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        mounts.dedup();
        Mounts(mounts)
    }

    /// `text` with a path inside the pod replaced by the same file on this machine.
    fn map(&self, text: &str) -> String {
        for (path, local) in &self.0 {
            if text == path {
                return local.display().to_string();
            }
            if let Some(rest) = text.strip_prefix(path.as_str())
                && rest.starts_with('/')
            {
                return format!("{}{rest}", local.display());
            }
        }
        text.to_string()
    }
}

/// etcd's client URLs in the pod's view (`https://<address>:2379`) as the test member's URL.
fn map_endpoints(value: &str, node: &Node) -> String {
    value
        .split(',')
        .map(|url| {
            assert!(
                url.ends_with(":2379"),
                "endpoint {url} is not etcd's client port 2379"
            );
            node.etcd_url.clone()
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The container's environment as the kubelet resolves it, with paths and endpoints mapped.
fn environment(
    docs: &[Value],
    pod: &Value,
    node: &Node,
    mounts: &Mounts,
) -> BTreeMap<String, String> {
    let c = container(&pod["spec"]);
    let config_value = |name: &str, key: &str| -> String {
        let map = find(docs, "ConfigMap", name);
        str_of(&map["data"][key]).to_string()
    };
    let mut vars = BTreeMap::new();
    for source in seq(&c["envFrom"]) {
        if let Some(name) = source["secretRef"]["name"].as_str() {
            // A Secret only the user creates (store credentials): it must be optional.
            assert!(
                node.secrets.contains_key(name) || source["secretRef"]["optional"] == true,
                "envFrom Secret {name} is required but not part of the manifests"
            );
        } else {
            panic!("unexpected envFrom {source:?}");
        }
    }
    for var in seq(&c["env"]) {
        let name = str_of(&var["name"]).to_string();
        // Literal values are the pod's view (paths inside it, etcd at :2379); ConfigMap
        // values are what the test configured for this machine.
        let value = if let Some(value) = var["value"].as_str() {
            let value = expand(value, &vars);
            if name == "ETCDCTL_ENDPOINTS" {
                map_endpoints(&value, node)
            } else if value.starts_with('/') {
                mounts.map(&value)
            } else {
                value
            }
        } else if let Some(reference) = var["valueFrom"]["configMapKeyRef"].as_mapping() {
            let reference = Value::Mapping(reference.clone());
            config_value(str_of(&reference["name"]), str_of(&reference["key"]))
        } else if var["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP" {
            node.host_ip.clone()
        } else {
            panic!("unexpected env {var:?}");
        };
        vars.insert(name, value);
    }
    vars
}

/// A workload's container, ready to run here: argv and environment.
struct Resolved {
    args: Vec<String>,
    env: BTreeMap<String, String>,
}

fn resolve(docs: &[Value], workload: &Value, node: &Node) -> Resolved {
    let pod = pod_template(workload);
    let mounts = Mounts::of(pod, node);
    let env = environment(docs, pod, node, &mounts);
    let c = container(&pod["spec"]);
    let command: Vec<&str> = seq(&c["command"]).iter().map(str_of).collect();
    assert_eq!(command, ["/etcdops"], "the image's binary, no shell");
    let args = seq(&c["args"])
        .iter()
        .map(|a| {
            let arg = str_of(a);
            if arg.starts_with('/') {
                expand(&mounts.map(arg), &env)
            } else {
                expand(arg, &env)
            }
        })
        .collect();
    Resolved { args, env }
}

impl Resolved {
    fn command(&self) -> Command {
        let mut cmd = Command::new(etcdops_path());
        cmd.args(&self.args).env_clear().envs(&self.env);
        cmd
    }

    /// The value after `flag` (`--flag VALUE` or `--flag=VALUE`), and its index.
    fn flag(&self, flag: &str) -> Option<(usize, String)> {
        self.args.iter().enumerate().find_map(|(i, a)| {
            if a == flag {
                self.args.get(i + 1).map(|v| (i + 1, v.clone()))
            } else {
                a.strip_prefix(&format!("{flag}="))
                    .map(|v| (i, v.to_string()))
            }
        })
    }
}

/// The rendered manifests of `overlay` with the user's edits of etcdops-config made: the
/// stores in `dir`, etcd's endpoints the test member's.
fn configured(overlay: &str, dir: &Path, etcd_url: &str) -> (Vec<Value>, PathBuf, PathBuf) {
    let mut docs = render(overlay);
    let snapshots = dir.join("snapshot-store");
    let continuous = dir.join("backup-run-store");
    let data = &mut find_mut(&mut docs, "ConfigMap", "etcdops-config")["data"];
    data["snapshot-store"] = Value::String(snapshots.display().to_string());
    data["backup-run-store"] = Value::String(continuous.display().to_string());
    data["etcd-endpoints"] = Value::String(etcd_url.to_string());
    (docs, snapshots, continuous)
}

/// A TLS member and the node around it, laid out as `overlay` expects.
fn node_for(overlay: &str, cluster: &Cluster) -> Node {
    let certs = cluster.certs.clone().unwrap();
    let root = cluster.dir().join("node");
    std::fs::create_dir_all(&root).unwrap();
    let etcd_url = cluster.members[0].client_url.clone();
    let mut secrets = BTreeMap::new();
    match overlay {
        "base" => {
            // `kubectl create secret generic etcdops-etcd-client --from-file=...` as
            // base/kustomization.yaml says.
            let dir = cluster.dir().join("secret-etcdops-etcd-client");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(&certs.ca, dir.join("ca.crt")).unwrap();
            std::fs::copy(&certs.client_cert, dir.join("tls.crt")).unwrap();
            std::fs::copy(&certs.client_key, dir.join("tls.key")).unwrap();
            secrets.insert("etcdops-etcd-client".to_string(), dir);
        }
        "kubeadm" => install_kubeadm_pki(&root, &certs),
        "openshift" => {
            write_openshift_tree(&root, "cp0", &etcd_url, &certs);
        }
        other => panic!("unknown overlay {other}"),
    }
    Node {
        root,
        secrets,
        scratch: cluster.dir().join("pods"),
        host_ip: "127.0.0.1".into(),
        etcd_url,
    }
}

fn list_backups(store: &Path) -> Vec<serde_json::Value> {
    let out = Command::new(etcdops_path())
        .args([
            "snapshot",
            "list",
            &store.display().to_string(),
            "-w",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "snapshot list: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list["backups"].as_array().cloned().unwrap_or_default()
}

/// The CronJob's `snapshot save`, then `snapshot list` and `snapshot verify` on its store.
fn run_snapshot_cronjob(docs: &[Value], node: &Node, store: &Path) {
    let cronjob = find(docs, "CronJob", "etcdops-snapshot");
    let resolved = resolve(docs, cronjob, node);
    assert_eq!(
        resolved.args[..2],
        ["snapshot", "save"],
        "{:?}",
        resolved.args
    );
    assert_eq!(
        resolved.args[2],
        store.display().to_string(),
        "the store from etcdops-config"
    );
    let out = resolved.command().output().unwrap();
    assert!(
        out.status.success(),
        "the CronJob's command failed: etcdops {}\n{}{}",
        resolved.args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let backups = list_backups(store);
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(backups[0]["complete"], true, "{backups:?}");
    let object = backups[0]["object"].as_str().unwrap();
    let url = format!("{}/{object}", store.display());
    let verify = Command::new(etcdops_path())
        .args(["snapshot", "verify", &url, "-w", "json"])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "snapshot verify {url}: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// A spawned `backup run`, killed if the test fails before it is stopped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The port a probe names, as a number: a named port resolves through the container's ports.
fn probe_port(container: &Value, probe: &str) -> (String, u16) {
    let get = &container[probe]["httpGet"];
    let path = str_of(&get["path"]).to_string();
    let port = match &get["port"] {
        Value::Number(n) => n.as_u64().unwrap() as u16,
        Value::String(name) => seq(&container["ports"])
            .iter()
            .find(|p| p["name"].as_str() == Some(name))
            .and_then(|p| p["containerPort"].as_u64())
            .unwrap_or_else(|| panic!("{probe} names port {name}, which the container lacks"))
            as u16,
        other => panic!("{probe} port {other:?}"),
    };
    (path, port)
}

/// The Deployment's `backup run`: a full backup published, both probes answering 200 on the
/// port they name (the --metrics-addr port), a clean stop on SIGTERM.
fn run_backup_deployment(docs: &[Value], node: &Node, store: &Path) {
    let deployment = find(docs, "Deployment", "etcdops-backup-run");
    let c = container(&pod_template(deployment)["spec"]);
    let mut resolved = resolve(docs, deployment, node);
    assert_eq!(
        resolved.args[2..4],
        ["backup", "run"],
        "{:?}",
        resolved.args
    );
    assert_eq!(resolved.args[4], store.display().to_string());
    let (live_path, live_port) = probe_port(c, "livenessProbe");
    let (ready_path, ready_port) = probe_port(c, "readinessProbe");
    let (at, addr) = resolved
        .flag("--metrics-addr")
        .expect("backup run serves its probes with --metrics-addr");
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    assert_eq!(
        addr.port(),
        live_port,
        "the liveness probe's port is --metrics-addr's"
    );
    assert_eq!(
        addr.port(),
        ready_port,
        "the readiness probe's port is --metrics-addr's"
    );
    assert!(
        addr.ip().is_unspecified(),
        "probes reach {addr} on the pod's IP"
    );
    // The pod's port, on this machine: a free loopback port.
    let port = free_port();
    resolved.args[at] = format!("127.0.0.1:{port}");

    let out_file = node
        .scratch
        .join(format!("backup-run-{}.jsonl", rand_u32()));
    std::fs::create_dir_all(&node.scratch).unwrap();
    let mut cmd = resolved.command();
    cmd.stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(Stdio::inherit());
    let mut run = Running(cmd.spawn().unwrap());
    let events = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&out_file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let full = loop {
        if let Some(e) = events().into_iter().find(|e| e["event"] == "full_saved") {
            break e;
        }
        if let Some(status) = run.0.try_wait().unwrap() {
            panic!(
                "backup run exited with {status}: etcdops {}\n{:#?}",
                resolved.args.join(" "),
                events()
            );
        }
        assert!(Instant::now() < deadline, "no full backup: {:#?}", events());
        std::thread::sleep(Duration::from_millis(100));
    };
    for path in [&live_path, &ready_path] {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match http_request(port, "GET", path, &[], b"") {
                Ok(r) if r.status == 200 => break,
                other => assert!(
                    Instant::now() < deadline,
                    "{path} never answered 200: {other:?}"
                ),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let pid = run.0.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = run.0.wait().unwrap();
    assert!(status.success(), "backup run on SIGTERM: {status}");
    let backups = list_backups(store);
    assert!(
        backups.iter().any(|b| b["object"] == full["object"]),
        "{backups:?} lacks {full}"
    );
}

/// Both workloads of `overlay` against a real TLS etcd.
fn workloads_back_up_a_real_etcd(overlay: &str) {
    let cluster = Cluster::start(1, Security::Tls);
    cluster.put_keys("/registry/pods/", 50);
    let node = node_for(overlay, &cluster);
    let (docs, snapshots, continuous) =
        configured(overlay, cluster.dir(), &cluster.members[0].client_url);
    run_snapshot_cronjob(&docs, &node, &snapshots);
    run_backup_deployment(&docs, &node, &continuous);
}

#[test]
fn base_workloads_back_up_a_real_etcd_with_the_secrets_certificate() {
    workloads_back_up_a_real_etcd("base");
}

#[test]
fn kubeadm_workloads_back_up_a_real_etcd_with_the_nodes_certificate() {
    workloads_back_up_a_real_etcd("kubeadm");
}

#[test]
fn openshift_workloads_find_etcd_from_its_static_pod() {
    workloads_back_up_a_real_etcd("openshift");
}

/// Seconds of a duration flag value such as `60s`, `2m`.
fn seconds(text: &str) -> u64 {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap());
    let n: u64 = number.parse().unwrap();
    match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        other => panic!("unit {other} in {text}"),
    }
}

#[test]
fn pods_are_locked_down_and_the_workloads_shaped_as_documented() {
    for overlay in KUSTOMIZATIONS {
        let docs = render(overlay);
        for workload in workloads(&docs) {
            let what = format!(
                "{overlay}: {}",
                workload["metadata"]["name"].as_str().unwrap()
            );
            let pod = &pod_template(workload)["spec"];
            let c = container(pod);
            assert_eq!(pod["serviceAccountName"], "etcdops", "{what}");
            assert_eq!(pod["automountServiceAccountToken"], false, "{what}");
            assert_eq!(
                pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
                "{what}"
            );
            let security = &c["securityContext"];
            assert_eq!(security["readOnlyRootFilesystem"], true, "{what}");
            assert_eq!(security["allowPrivilegeEscalation"], false, "{what}");
            assert_eq!(security["capabilities"]["drop"][0], "ALL", "{what}");
            assert!(security["capabilities"]["add"].is_null(), "{what}");
            assert!(security["privileged"] != true, "{what}");
            assert!(c["resources"]["requests"]["memory"].is_string(), "{what}");
            assert!(c["resources"]["limits"]["memory"].is_string(), "{what}");
            // The read-only root: temporary files go to an emptyDir at /tmp.
            let env: BTreeMap<&str, &Value> = seq(&c["env"])
                .iter()
                .map(|v| (str_of(&v["name"]), &v["value"]))
                .collect();
            assert_eq!(
                env.get("TMPDIR").copied(),
                Some(&Value::from("/tmp")),
                "{what}"
            );
            let volumes: BTreeMap<&str, &Value> = seq(&pod["volumes"])
                .iter()
                .map(|v| (str_of(&v["name"]), v))
                .collect();
            let mut tmp = false;
            for mount in seq(&c["volumeMounts"]) {
                let volume = volumes[str_of(&mount["name"])];
                if mount["mountPath"] == "/tmp" {
                    tmp = volume["emptyDir"].is_mapping();
                }
                if !volume["hostPath"].is_null() || !volume["secret"].is_null() {
                    assert_eq!(mount["readOnly"], true, "{what}: {mount:?}");
                }
            }
            assert!(tmp, "{what}: no emptyDir at /tmp");
            let uses_host = volumes.values().any(|v| !v["hostPath"].is_null());
            let pod_security = &pod["securityContext"];
            if overlay == "base" {
                assert!(!uses_host, "{what}: the base takes nothing from the node");
                assert_eq!(pod_security["runAsNonRoot"], true, "{what}");
                assert_eq!(pod_security["runAsUser"], 65532, "{what}");
            } else {
                // The node's etcd key is root's, mode 0600.
                assert!(uses_host, "{what}");
                assert_eq!(pod_security["runAsUser"], 0, "{what}");
                let (label, taints): (&str, &[&str]) = if overlay == "kubeadm" {
                    (
                        "node-role.kubernetes.io/control-plane",
                        &["node-role.kubernetes.io/control-plane"],
                    )
                } else {
                    (
                        "node-role.kubernetes.io/master",
                        &["node-role.kubernetes.io/master"],
                    )
                };
                assert_eq!(pod["nodeSelector"][label], "", "{what}");
                for taint in taints {
                    assert!(
                        seq(&pod["tolerations"])
                            .iter()
                            .any(|t| t["key"] == *taint && t["effect"] == "NoSchedule"),
                        "{what}: no toleration of {taint}"
                    );
                }
            }
            match workload["kind"].as_str().unwrap() {
                "CronJob" => {
                    assert_eq!(workload["spec"]["concurrencyPolicy"], "Forbid", "{what}");
                    if overlay != "base" {
                        assert_eq!(pod["hostNetwork"], true, "{what}");
                        assert_eq!(pod["dnsPolicy"], "ClusterFirstWithHostNet", "{what}");
                    }
                    let args: Vec<&str> = seq(&c["args"]).iter().map(str_of).collect();
                    assert!(args.contains(&"--keep-last"), "{what}: retention");
                }
                _ => {
                    assert_eq!(workload["spec"]["replicas"], 1, "{what}");
                    assert_eq!(workload["spec"]["strategy"]["type"], "Recreate", "{what}");
                    let args: Vec<&str> = seq(&c["args"]).iter().map(str_of).collect();
                    let grace = args
                        .iter()
                        .position(|a| *a == "--stop-grace")
                        .map(|i| seconds(args[i + 1]))
                        .expect("--stop-grace");
                    let period = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
                    assert!(
                        period > grace,
                        "{what}: {period} s to stop, {grace} s of grace"
                    );
                }
            }
        }
    }
}

#[test]
fn the_service_monitor_scrapes_the_backup_run_service() {
    let monitor: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(deploy_dir().join("monitoring/service-monitor.yaml")).unwrap(),
    )
    .unwrap();
    for overlay in KUSTOMIZATIONS {
        let docs = render(overlay);
        let service = find(&docs, "Service", "etcdops-backup-run");
        let deployment = find(&docs, "Deployment", "etcdops-backup-run");
        let pod = pod_template(deployment);
        assert_eq!(
            monitor["metadata"]["namespace"], service["metadata"]["namespace"],
            "{overlay}"
        );
        for (key, value) in monitor["spec"]["selector"]["matchLabels"]
            .as_mapping()
            .unwrap()
        {
            assert_eq!(
                &service["metadata"]["labels"][key], value,
                "{overlay}: {key:?}"
            );
        }
        for (key, value) in service["spec"]["selector"].as_mapping().unwrap() {
            assert_eq!(&pod["metadata"]["labels"][key], value, "{overlay}: {key:?}");
        }
        let port_name = monitor["spec"]["endpoints"][0]["port"].as_str().unwrap();
        let port = seq(&service["spec"]["ports"])
            .iter()
            .find(|p| p["name"].as_str() == Some(port_name))
            .unwrap_or_else(|| panic!("{overlay}: the Service has no port {port_name}"));
        let target = str_of(&port["targetPort"]);
        assert!(
            seq(&container(&pod["spec"])["ports"])
                .iter()
                .any(|p| p["name"].as_str() == Some(target)),
            "{overlay}: the container has no port {target}"
        );
    }
}

/// What OpenShift's SCC admission checks, for the fields these pods set: the SCC `etcdops`
/// admits both pods as rendered, and only the ServiceAccount etcdops may use it.
#[test]
fn the_openshift_scc_admits_the_pods_and_only_etcdops_may_use_it() {
    let docs = render("openshift");
    let scc = find(&docs, "SecurityContextConstraints", "etcdops");
    let allowed_volumes: Vec<&str> = seq(&scc["volumes"]).iter().map(str_of).collect();
    let required_drop: Vec<&str> = seq(&scc["requiredDropCapabilities"])
        .iter()
        .map(str_of)
        .collect();
    for workload in workloads(&docs) {
        let template = pod_template(workload);
        let what = workload["metadata"]["name"].as_str().unwrap();
        assert_eq!(
            template["metadata"]["annotations"]["openshift.io/required-scc"], "etcdops",
            "{what}"
        );
        let pod = &template["spec"];
        let c = container(pod);
        if pod["hostNetwork"] == true {
            assert_eq!(scc["allowHostNetwork"], true, "{what}");
            // With hostNetwork every container port is a host port.
            if !seq(&c["ports"]).is_empty() {
                assert_eq!(scc["allowHostPorts"], true, "{what}");
            }
        }
        for volume in seq(&pod["volumes"]) {
            let kind = volume
                .as_mapping()
                .unwrap()
                .keys()
                .map(str_of)
                .find(|k| *k != "name")
                .unwrap();
            assert!(allowed_volumes.contains(&kind), "{what}: {kind} volumes");
            if kind == "hostPath" {
                assert_eq!(scc["allowHostDirVolumePlugin"], true, "{what}");
            }
        }
        let user = pod["securityContext"]["runAsUser"].as_u64().unwrap();
        match scc["runAsUser"]["type"].as_str().unwrap() {
            "MustRunAs" => assert_eq!(scc["runAsUser"]["uid"].as_u64(), Some(user), "{what}"),
            "RunAsAny" => {}
            other => panic!("{what}: runAsUser {other} does not admit uid {user}"),
        }
        if pod["securityContext"]["seLinuxOptions"].is_mapping() {
            assert_eq!(
                scc["seLinuxContext"]["type"], "RunAsAny",
                "{what}: SELinux type"
            );
        }
        assert!(
            seq(&scc["seccompProfiles"])
                .iter()
                .any(|p| p == "runtime/default"),
            "{what}"
        );
        let security = &c["securityContext"];
        if scc["readOnlyRootFilesystem"] == true {
            assert_eq!(security["readOnlyRootFilesystem"], true, "{what}");
        }
        if scc["allowPrivilegeEscalation"] == false {
            assert_eq!(security["allowPrivilegeEscalation"], false, "{what}");
        }
        assert_eq!(scc["allowPrivilegedContainer"], false, "{what}");
        let dropped: Vec<&str> = seq(&security["capabilities"]["drop"])
            .iter()
            .map(str_of)
            .collect();
        for cap in &required_drop {
            assert!(dropped.contains(cap), "{what}: {cap} not dropped");
        }
    }
    let role = find(&docs, "ClusterRole", "etcdops-scc");
    let rule = &role["rules"][0];
    assert_eq!(rule["apiGroups"][0], "security.openshift.io");
    assert_eq!(rule["resources"][0], "securitycontextconstraints");
    assert_eq!(rule["resourceNames"][0], "etcdops");
    assert_eq!(rule["verbs"][0], "use");
    let binding = find(&docs, "RoleBinding", "etcdops-scc");
    assert_eq!(binding["metadata"]["namespace"], "etcdops");
    assert_eq!(binding["roleRef"]["name"], "etcdops-scc");
    assert_eq!(binding["subjects"][0]["kind"], "ServiceAccount");
    assert_eq!(binding["subjects"][0]["name"], "etcdops");
    assert_eq!(binding["subjects"][0]["namespace"], "etcdops");
}

/// `buildah ARGS` with the test's own image storage; its stdout.
fn buildah(storage: &Path, args: &[&str]) -> String {
    let out = Command::new("buildah")
        .arg("--storage-driver=vfs")
        .arg(format!("--root={}", storage.join("root").display()))
        .arg(format!("--runroot={}", storage.join("run").display()))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("buildah: {e} (apt-get install buildah)"));
    assert!(
        out.status.success(),
        "buildah {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// deploy/build-image builds the image from the built binary (its own check runs
/// `etcdops --version` in it as 65532); then, as uid 65532 inside the image, with only the
/// image's loader, libraries and CA bundle, etcdops saves a real TLS etcd into a mounted
/// store that the binary outside lists and verifies.
#[test]
fn the_image_built_offline_saves_a_backup_as_nonroot() {
    let cluster = Cluster::start(1, Security::Tls);
    cluster.put_keys("/registry/configmaps/", 20);
    let certs = cluster.certs.clone().unwrap();
    let storage = cluster.dir().join("containers");
    let tag = format!("localhost/etcdops-e2e:{}", rand_u32());
    let out = Command::new(deploy_dir().join("build-image"))
        .arg("--binary")
        .arg(etcdops_path())
        .args(["--tag", &tag, "--check", "--storage-driver", "vfs"])
        .arg("--root")
        .arg(storage.join("root"))
        .arg("--runroot")
        .arg(storage.join("run"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "deploy/build-image: {stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), tag, "{stderr}");
    assert!(stderr.contains("runs 'etcdops "), "{stderr}");

    // What a pod mounts: the client certificate (readable by 65532) and a writable store.
    let secret = cluster.dir().join("image-secret");
    let store = cluster.dir().join("image-store");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::create_dir_all(&store).unwrap();
    for (from, name) in [
        (&certs.ca, "ca.crt"),
        (&certs.client_cert, "tls.crt"),
        (&certs.client_key, "tls.key"),
    ] {
        std::fs::copy(from, secret.join(name)).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777)).unwrap();
    for name in ["ca.crt", "tls.crt", "tls.key"] {
        std::fs::set_permissions(secret.join(name), std::fs::Permissions::from_mode(0o644))
            .unwrap();
    }
    let container = buildah(&storage, &["from", "--quiet", &tag]);
    let secret_mount = format!("{}:/etc/etcdops/etcd-client:ro", secret.display());
    let store_mount = format!("{}:/store", store.display());
    let endpoint = cluster.members[0].client_url.clone();
    let saved = buildah(
        &storage,
        &[
            "run",
            "--isolation",
            "chroot",
            "--user",
            "65532:65532",
            "-v",
            &secret_mount,
            "-v",
            &store_mount,
            "--env",
            &format!("ETCDCTL_ENDPOINTS={endpoint}"),
            "--env",
            "ETCDCTL_CACERT=/etc/etcdops/etcd-client/ca.crt",
            "--env",
            "ETCDCTL_CERT=/etc/etcdops/etcd-client/tls.crt",
            "--env",
            "ETCDCTL_KEY=/etc/etcdops/etcd-client/tls.key",
            &container,
            "--",
            "/etcdops",
            "-w",
            "json",
            "snapshot",
            "save",
            "/store",
        ],
    );
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    buildah(&storage, &["rm", &container]);
    buildah(&storage, &["rmi", &tag]);
    let backups = list_backups(&store);
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(backups[0]["complete"], true);
    let manifest = &saved["manifest"];
    assert!(manifest["revision"].as_i64().unwrap() > 20, "{saved}");
    assert_eq!(
        backups[0]["object"], manifest["object"],
        "{saved} vs {backups:?}"
    );
}
