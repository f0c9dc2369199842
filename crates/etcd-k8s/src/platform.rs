//! Platform detection: is etcd on this host a kubeadm static pod, OpenShift's static pod
//! (managed by the cluster-etcd-operator), a package with its `etcd.conf` and systemd unit, or
//! absent? And where are its endpoints, data dir and certificates?
//!
//! Everything is read from files under a root directory (`/` on a real host; a fixture tree in
//! tests), and every path reported is a path on this machine (the root joined with the host
//! path, after mapping the pod's container paths through its `hostPath` volumes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use etcd_core::ConnectionOptions;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::Value;

use crate::error::{K8sError, PLATFORM_ROOT, Result};
use etcd_common::InvalidOption;

/// Where the kubelet reads static pod manifests.
pub const MANIFESTS_DIR: &str = "/etc/kubernetes/manifests";
/// kubeadm's etcd manifest.
pub const KUBEADM_MANIFEST: &str = "/etc/kubernetes/manifests/etcd.yaml";
/// OpenShift's etcd manifest.
pub const OPENSHIFT_MANIFEST: &str = "/etc/kubernetes/manifests/etcd-pod.yaml";
/// Where `etcd_static_pod` parks a manifest by default (outside the kubelet's directory).
pub const DEFAULT_PARKING_DIR: &str = "/etc/kubernetes/etcdops-parked";

/// Which kind of etcd runs here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// A kubeadm control-plane node: static pod `etcd.yaml`, certificates in
    /// `/etc/kubernetes/pki/etcd`.
    Kubeadm,
    /// An OpenShift 4 control-plane node: static pod `etcd-pod.yaml`, managed by the
    /// cluster-etcd-operator.
    Openshift,
    /// etcd from a package or tarball: `etcd.conf` / `etcd.conf.yml` and a systemd unit.
    Standalone,
    /// No etcd was found.
    None,
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Platform::Kubeadm => "kubeadm",
            Platform::Openshift => "openshift",
            Platform::Standalone => "standalone",
            Platform::None => "none",
        })
    }
}

/// What to detect from.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformRequest {
    /// The directory standing for `/` (default `/`).
    #[serde(default)]
    pub root: Option<PathBuf>,
}

/// What was found on the host. Paths are paths on this machine (under the root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlatformInfo {
    /// The kind of etcd found.
    pub platform: Platform,
    /// The root the detection read from.
    pub root: PathBuf,
    /// The pod manifest read (kubeadm, OpenShift).
    pub manifest: Option<PathBuf>,
    /// The etcd configuration file read (standalone).
    pub config_file: Option<PathBuf>,
    /// The systemd unit read (standalone).
    pub unit_file: Option<PathBuf>,
    /// The member's name (`--name`).
    pub name: Option<String>,
    /// Client URLs to reach this member with (`--advertise-client-urls`, or on OpenShift
    /// the pod's `ETCDCTL_ENDPOINTS`).
    pub endpoints: Vec<String>,
    /// `--listen-client-urls`.
    pub listen_client_urls: Vec<String>,
    /// Peer URLs (`--initial-advertise-peer-urls`).
    pub peer_urls: Vec<String>,
    /// `--initial-cluster`.
    pub initial_cluster: Option<String>,
    /// The data dir.
    pub data_dir: Option<PathBuf>,
    /// CA bundle that verifies etcd's server certificate (`--trusted-ca-file`).
    pub cacert: Option<PathBuf>,
    /// A client certificate usable to talk to etcd.
    pub cert: Option<PathBuf>,
    /// Its private key (the path only; never its content).
    pub key: Option<PathBuf>,
    /// etcd's server certificate (`--cert-file`).
    pub server_cert: Option<PathBuf>,
    /// Its key file (`--key-file`).
    pub server_key: Option<PathBuf>,
    /// Whether etcd requires client certificates (`--client-cert-auth`).
    pub client_cert_auth: bool,
    /// The pod's etcd image.
    pub image: Option<String>,
    /// etcd's version, when known.
    pub version: Option<String>,
    /// Where the version came from: `image` (the tag) or `binary` (`etcd --version`).
    pub version_source: Option<String>,
    /// Whether a static pod's manifest is parked by `etcd_static_pod` (etcd stopped on purpose).
    pub parked: bool,
    /// What the detection could not settle, in words.
    pub notes: Vec<String>,
}

impl PlatformInfo {
    fn empty(platform: Platform, root: &Path) -> PlatformInfo {
        PlatformInfo {
            platform,
            root: root.to_path_buf(),
            manifest: None,
            config_file: None,
            unit_file: None,
            name: None,
            endpoints: Vec::new(),
            listen_client_urls: Vec::new(),
            peer_urls: Vec::new(),
            initial_cluster: None,
            data_dir: None,
            cacert: None,
            cert: None,
            key: None,
            server_cert: None,
            server_key: None,
            client_cert_auth: false,
            image: None,
            version: None,
            version_source: None,
            parked: false,
            notes: Vec::new(),
        }
    }

    /// Fills what `options` leaves unset (endpoints, CA, client certificate and key) from
    /// what was detected. Fails when no etcd was found.
    pub fn fill_connection(&self, mut options: ConnectionOptions) -> Result<ConnectionOptions> {
        if self.platform == Platform::None {
            return Err(K8sError::NoEtcdFound {
                root: self.root.display().to_string(),
                looked: format!(
                    "no static pod manifest in {MANIFESTS_DIR}, no etcd.conf, no etcd systemd unit"
                ),
            });
        }
        let nothing_set = options.endpoints.is_none() && options.discovery_srv.is_none();
        if nothing_set && !self.endpoints.is_empty() {
            options.endpoints = Some(self.endpoints.clone());
        }
        if options.cacert.is_none() && options.cacert_pem.is_none() {
            options.cacert = self.cacert.clone();
        }
        if options.cert.is_none() && options.cert_pem.is_none() && options.key.is_none() {
            options.cert = self.cert.clone();
            options.key = self.key.clone();
        }
        Ok(options)
    }
}

/// Joins a host path onto the root.
pub fn rooted(root: &Path, host_path: &Path) -> PathBuf {
    match host_path.strip_prefix("/") {
        Ok(relative) => root.join(relative),
        Err(_) => root.join(host_path),
    }
}

fn exists(path: &Path) -> bool {
    path.try_exists().unwrap_or(false)
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| K8sError::Io {
        operation: "read",
        path: path.display().to_string(),
        source,
    })
}

/// Detects the platform under `request.root` (default `/`).
pub fn detect_platform(request: &PlatformRequest) -> Result<PlatformInfo> {
    let root = request.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    if !root.is_dir() {
        return Err(K8sError::from(InvalidOption::new(
            PLATFORM_ROOT,
            format!(
                "'{}' is not a directory; give the directory standing for / (default /)",
                root.display()
            ),
        )));
    }
    let openshift = rooted(&root, Path::new(OPENSHIFT_MANIFEST));
    if exists(&openshift) {
        return parse_pod_manifest(&root, &openshift, Platform::Openshift);
    }
    let kubeadm = rooted(&root, Path::new(KUBEADM_MANIFEST));
    if exists(&kubeadm) {
        return parse_pod_manifest(&root, &kubeadm, Platform::Kubeadm);
    }
    // A manifest parked by `etcd_static_pod`: etcd is stopped on purpose.
    let parked_dir = rooted(&root, Path::new(DEFAULT_PARKING_DIR));
    for (file, platform) in [
        ("etcd-pod.yaml", Platform::Openshift),
        ("etcd.yaml", Platform::Kubeadm),
    ] {
        let parked = parked_dir.join(file);
        if exists(&parked) {
            let mut info = parse_pod_manifest(&root, &parked, platform)?;
            info.parked = true;
            info.notes.push(format!(
                "etcd is stopped: its manifest is parked in {}",
                parked_dir.display()
            ));
            return Ok(info);
        }
    }
    // OpenShift keeps every revision of the pod under static-pod-resources even while the
    // manifest is away.
    let resources = rooted(&root, Path::new("/etc/kubernetes/static-pod-resources"));
    if let Some(manifest) = newest_openshift_revision(&resources) {
        let mut info = parse_pod_manifest(&root, &manifest, Platform::Openshift)?;
        info.notes.push(format!(
            "no etcd manifest in {MANIFESTS_DIR}: read the newest revision {} (etcd may be stopped)",
            manifest.display()
        ));
        return Ok(info);
    }
    if exists(&resources.join("etcd-certs")) {
        let mut info = PlatformInfo::empty(Platform::Openshift, &root);
        info.notes.push(
            "OpenShift etcd certificates found but no etcd pod manifest: etcd is not configured on this node".into(),
        );
        return Ok(info);
    }
    detect_standalone(&root)
}

fn newest_openshift_revision(resources: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(resources).ok()?;
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let revision: u64 = name.strip_prefix("etcd-pod-")?.parse().ok()?;
            let manifest = entry.path().join("etcd-pod.yaml");
            exists(&manifest).then_some((revision, manifest))
        })
        .max_by_key(|(revision, _)| *revision)
        .map(|(_, manifest)| manifest)
}

/// Flags of an etcd command line: `--flag=value`, `--flag value` and bare `--flag`.
fn parse_flags(tokens: &[String]) -> BTreeMap<String, String> {
    let mut flags = BTreeMap::new();
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens[i].trim();
        if let Some(flag) = token.strip_prefix("--").or_else(|| {
            token
                .strip_prefix('-')
                .filter(|rest| !rest.starts_with('-') && rest.len() > 1)
        }) {
            if let Some((name, value)) = flag.split_once('=') {
                flags.insert(name.to_string(), unquote(value));
            } else if let Some(next) = tokens.get(i + 1).filter(|n| !n.starts_with('-')) {
                flags.insert(flag.to_string(), unquote(next));
                i += 1;
            } else {
                flags.insert(flag.to_string(), "true".to_string());
            }
        }
        i += 1;
    }
    flags
}

fn unquote(value: &str) -> String {
    value
        .trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .to_string()
}

/// Splits a shell script (OpenShift runs etcd from `/bin/sh -c`) into words, good enough to
/// find the `--flag=value` words of its `exec etcd` line.
fn shell_words(script: &str) -> Vec<String> {
    script
        .split_whitespace()
        .filter(|w| *w != "\\")
        .map(|w| w.trim_end_matches('\\').to_string())
        .collect()
}

/// Replaces `${NAME}` and `$NAME` from `env`; unknown variables stay as they are.
fn expand(value: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], &inner[end + 1..]),
                None => ("", after),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        match env.get(name).filter(|_| !name.is_empty()) {
            Some(v) => out.push_str(v),
            None => out.push_str(&rest[at..rest.len() - tail.len()]),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

fn list(value: Option<&String>) -> Vec<String> {
    value
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Client URLs to connect to from this host: a wildcard listen address becomes 127.0.0.1.
fn local_urls(urls: &[String]) -> Vec<String> {
    urls.iter()
        .map(|u| {
            u.replace("://0.0.0.0:", "://127.0.0.1:")
                .replace("://[::]:", "://127.0.0.1:")
        })
        .collect()
}

/// Drops URLs holding unresolved shell variables, with a note.
fn resolved(urls: Vec<String>, what: &str, notes: &mut Vec<String>) -> Vec<String> {
    let (good, bad): (Vec<String>, Vec<String>) = urls.into_iter().partition(|u| !u.contains('$'));
    if !bad.is_empty() {
        notes.push(format!(
            "{what}: ignored {} (a variable set at run time)",
            bad.join(", ")
        ));
    }
    good
}

/// The version in an image tag: `registry.k8s.io/etcd:3.5.9-0` -> `3.5.9`.
pub fn version_from_image(image: &str) -> Option<String> {
    if image.contains('@') {
        return None;
    }
    let last = image.rsplit('/').next()?;
    let (_, tag) = last.split_once(':')?;
    let tag = tag.trim_start_matches('v');
    let version = tag.split('-').next()?;
    let numeric = version.split('.').count() >= 2
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    numeric.then(|| version.to_string())
}

/// `etcd --version` of a binary: the `etcd Version: X` line.
pub fn binary_version(binary: &Path) -> Option<String> {
    let output = std::process::Command::new(binary)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("etcd Version:"))
        .map(|v| v.trim().to_string())
}

/// A pod's etcd container: its command line words, environment and path mapping.
struct PodEtcd {
    words: Vec<String>,
    env: BTreeMap<String, String>,
    image: Option<String>,
    /// (container mount path, host path), longest first.
    mounts: Vec<(PathBuf, PathBuf)>,
}

impl PodEtcd {
    /// A container path as a path on this machine.
    fn host_path(&self, root: &Path, container_path: &str) -> PathBuf {
        let path = Path::new(container_path);
        for (mount, host) in &self.mounts {
            if let Ok(rest) = path.strip_prefix(mount) {
                let host = if rest.as_os_str().is_empty() {
                    host.clone()
                } else {
                    host.join(rest)
                };
                return rooted(root, &host);
            }
        }
        rooted(root, path)
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn seq<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_sequence)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn pod_etcd(manifest: &Path, text: &str) -> Result<PodEtcd> {
    let bad = |reason: String| K8sError::BadConfig {
        path: manifest.display().to_string(),
        reason,
    };
    let pod: Value = serde_yaml_ng::from_str(text).map_err(|e| {
        bad(format!(
            "not a YAML pod manifest ({e}); fix the file (the kubelet cannot run it either)"
        ))
    })?;
    let spec = pod
        .get("spec")
        .ok_or_else(|| bad("no spec: not a pod manifest".into()))?;
    let containers = seq(spec, "containers");
    let words_of = |c: &Value| -> Vec<String> {
        seq(c, "command")
            .iter()
            .chain(seq(c, "args"))
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let container = containers
        .iter()
        .find(|c| str_of(c, "name") == Some("etcd"))
        .or_else(|| {
            containers
                .iter()
                .find(|c| words_of(c).iter().any(|w| w.contains("etcd")))
        })
        .ok_or_else(|| bad("no container named etcd".into()))?;
    let mut words = Vec::new();
    for word in words_of(container) {
        if word.contains('\n') || word.contains(" --") {
            words.extend(shell_words(&word));
        } else {
            words.push(word);
        }
    }
    // Environment: the etcd container's, then (for ETCDCTL_*) any other container's.
    let mut env = BTreeMap::new();
    for c in std::iter::once(container).chain(containers.iter()) {
        for var in seq(c, "env") {
            if let (Some(name), Some(value)) = (str_of(var, "name"), str_of(var, "value")) {
                env.entry(name.to_string())
                    .or_insert_with(|| value.to_string());
            }
        }
    }
    let volumes: BTreeMap<&str, &str> = seq(spec, "volumes")
        .iter()
        .filter_map(|v| {
            Some((
                str_of(v, "name")?,
                v.get("hostPath").and_then(|h| str_of(h, "path"))?,
            ))
        })
        .collect();
    let mut mounts: Vec<(PathBuf, PathBuf)> = seq(container, "volumeMounts")
        .iter()
        .filter_map(|m| {
            let host = volumes.get(str_of(m, "name")?)?;
            Some((PathBuf::from(str_of(m, "mountPath")?), PathBuf::from(host)))
        })
        .collect();
    mounts.sort_by_key(|(mount, _)| std::cmp::Reverse(mount.as_os_str().len()));
    Ok(PodEtcd {
        words,
        env,
        image: str_of(container, "image").map(str::to_string),
        mounts,
    })
}

/// Reads a static pod manifest (kubeadm or OpenShift) under `root`.
pub fn parse_pod_manifest(
    root: &Path,
    manifest: &Path,
    platform: Platform,
) -> Result<PlatformInfo> {
    let text = read(manifest)?;
    let pod = pod_etcd(manifest, &text)?;
    let mut flags = parse_flags(&pod.words);
    for value in flags.values_mut() {
        *value = expand(value, &pod.env);
    }
    let env_flag = |flag: &str| {
        let var = format!("ETCD_{}", flag.to_ascii_uppercase().replace('-', "_"));
        pod.env.get(&var).map(|v| expand(v, &pod.env))
    };
    let get = |flag: &str| flags.get(flag).cloned().or_else(|| env_flag(flag));
    let mut info = PlatformInfo::empty(platform, root);
    info.manifest = Some(manifest.to_path_buf());
    info.name = get("name");
    info.listen_client_urls = list(get("listen-client-urls").as_ref());
    let advertised = list(get("advertise-client-urls").as_ref());
    let mut notes = Vec::new();
    let etcdctl_endpoints = pod
        .env
        .get("ETCDCTL_ENDPOINTS")
        .map(|v| expand(v, &pod.env));
    let mut endpoints = resolved(advertised, "etcd's advertise-client-urls", &mut notes);
    if endpoints.is_empty() {
        endpoints = resolved(
            list(etcdctl_endpoints.as_ref()),
            "ETCDCTL_ENDPOINTS",
            &mut notes,
        );
    }
    if endpoints.is_empty() {
        endpoints = resolved(
            local_urls(&info.listen_client_urls),
            "etcd's listen-client-urls",
            &mut notes,
        );
    }
    info.endpoints = endpoints;
    info.peer_urls = list(get("initial-advertise-peer-urls").as_ref());
    info.initial_cluster = get("initial-cluster");
    info.data_dir = get("data-dir").map(|d| pod.host_path(root, &d));
    info.client_cert_auth = get("client-cert-auth").is_some_and(|v| v != "false");
    info.server_cert = get("cert-file").map(|p| pod.host_path(root, &p));
    info.server_key = get("key-file").map(|p| pod.host_path(root, &p));
    info.cacert = get("trusted-ca-file").map(|p| pod.host_path(root, &p));
    // The client certificate: what the pod's own etcdctl uses (OpenShift), kubeadm's
    // healthcheck client or kube-apiserver's client, else the server certificate (kubeadm's
    // carries the clientAuth usage).
    let env_path = |var: &str| {
        pod.env
            .get(var)
            .map(|v| pod.host_path(root, &expand(v, &pod.env)))
    };
    if let Some(ca) = env_path("ETCDCTL_CACERT")
        && info.cacert.is_none()
    {
        info.cacert = Some(ca);
    }
    let kubeadm_pairs = [
        (
            "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
            "/etc/kubernetes/pki/etcd/healthcheck-client.key",
        ),
        (
            "/etc/kubernetes/pki/apiserver-etcd-client.crt",
            "/etc/kubernetes/pki/apiserver-etcd-client.key",
        ),
    ];
    let pair = match (env_path("ETCDCTL_CERT"), env_path("ETCDCTL_KEY")) {
        (Some(cert), Some(key)) => Some((cert, key)),
        _ => kubeadm_pairs
            .iter()
            .map(|(c, k)| (rooted(root, Path::new(c)), rooted(root, Path::new(k))))
            .find(|(c, k)| exists(c) && exists(k)),
    };
    match pair {
        Some((cert, key)) => {
            info.cert = Some(cert);
            info.key = Some(key);
        }
        None if info.client_cert_auth => {
            info.cert = info.server_cert.clone();
            info.key = info.server_key.clone();
            if info.cert.is_some() {
                notes.push("no client certificate found: using etcd's server certificate as the client certificate (works when it carries the clientAuth usage)".into());
            }
        }
        None => {}
    }
    if platform == Platform::Kubeadm && info.cacert.is_none() {
        let ca = rooted(root, Path::new("/etc/kubernetes/pki/etcd/ca.crt"));
        if exists(&ca) {
            info.cacert = Some(ca);
        }
    }
    info.image = pod.image.clone();
    if let Some(version) = pod.image.as_deref().and_then(version_from_image) {
        info.version = Some(version);
        info.version_source = Some("image".into());
    } else if pod.image.is_some() {
        notes.push(
            "etcd's version is not in the image reference (a digest); ask etcd for its version"
                .into(),
        );
    }
    for path in [&info.cacert, &info.cert, &info.key].into_iter().flatten() {
        if !exists(path) {
            notes.push(format!("{} does not exist", path.display()));
        }
    }
    info.notes.extend(notes);
    Ok(info)
}

/// The file on the host under `root` that shows OpenShift's cluster-etcd-operator runs etcd
/// there (its etcd pod manifest, parked or not, or its etcd certificates), if any.
pub(crate) fn openshift_evidence_on_host(root: &Path) -> Option<String> {
    [
        OPENSHIFT_MANIFEST.to_string(),
        "/etc/kubernetes/static-pod-resources/etcd-certs".to_string(),
        format!("{DEFAULT_PARKING_DIR}/etcd-pod.yaml"),
    ]
    .into_iter()
    .find(|host_path| exists(&rooted(root, Path::new(host_path))))
}

mod standalone;
#[cfg(test)]
mod tests;

use standalone::detect_standalone;
