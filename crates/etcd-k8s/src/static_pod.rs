//! Stopping and starting a static etcd pod the way the kubelet allows: the manifest moves out
//! of the kubelet's directory into a parking directory (never deleted; an older parked copy
//! is kept under a backup name), and back.
//!
//! Stopping waits until etcd no longer accepts connections on its client ports; starting
//! waits until etcd answers a health check (a linearizable read, no alarm).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use etcd_core::{Client, ClusterConfig, ConnectionOptions, Targets};
use serde::{Deserialize, Serialize};

use crate::error::{K8sError, Result};
use crate::force_new_cluster::{FORCE_NEW_CLUSTER_FLAG, replace_file, set_force_new_cluster};
use crate::openshift_backup::STATIC_POD_RESOURCES_DIR;
use crate::platform::{
    DEFAULT_PARKING_DIR, KUBEADM_MANIFEST, OPENSHIFT_MANIFEST, Platform, PlatformInfo,
    parse_pod_manifest, rooted,
};
use etcd_common::InvalidOption;

/// The state asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PodState {
    /// The manifest is parked and etcd is gone.
    Stopped,
    /// The manifest is in the kubelet's directory and etcd is healthy.
    Started,
}

fn default_timeout() -> u64 {
    120
}

/// A request to stop or start a static etcd pod.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StaticPodRequest {
    /// Stopped or started.
    pub state: PodState,
    /// The manifest's path in the kubelet's directory (default: the one found under `root`,
    /// OpenShift's `etcd-pod.yaml` or kubeadm's `etcd.yaml`, parked or not; else kubeadm's
    /// `/etc/kubernetes/manifests/etcd.yaml`). See [`StaticPodRequest::manifest_path`].
    #[serde(default)]
    pub manifest: Option<PathBuf>,
    /// Where the manifest waits while etcd is stopped (default
    /// `/etc/kubernetes/etcdops-parked` under `root`); must not be the kubelet's directory.
    #[serde(default)]
    #[schemars(extend("default" = DEFAULT_PARKING_DIR))] // under `root`
    pub parking_dir: Option<PathBuf>,
    /// Seconds to wait for etcd to go or to become healthy (default 120).
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// The directory standing for `/` when reading the manifest's certificate paths
    /// (default `/`).
    #[serde(default)]
    #[schemars(skip)] // the caller's (a module's `platform_root`)
    pub root: Option<PathBuf>,
    /// Report what would be done, change nothing.
    #[serde(default)]
    #[schemars(skip)]
    pub dry_run: bool,
    /// crictl to ask whether the etcd container is gone (default: `crictl` on `PATH`, when
    /// there is one; without it, only the client ports are watched).
    #[serde(default)]
    #[schemars(skip)] // found on PATH; tests name one
    pub crictl: Option<PathBuf>,
    /// Starting: with `--force-new-cluster` in the etcd container's command (the one start
    /// that recovers a lost quorum; refused while etcd runs from the manifest in place), else
    /// without it (a normal start removes the flag a forced start left).
    #[serde(default)]
    pub force_new_cluster: bool,
}

impl StaticPodRequest {
    /// The host root (default `/`).
    pub fn root(&self) -> PathBuf {
        self.root.clone().unwrap_or_else(|| PathBuf::from("/"))
    }

    /// The manifest asked for, else the one found under the root, in the order platform
    /// detection looks: OpenShift's (`etcd-pod.yaml`), then kubeadm's (`etcd.yaml`), in the
    /// kubelet's directory or parked in the parking dir; else OpenShift's on a host with
    /// OpenShift's static pod resources, else kubeadm's. Both front-ends default to this.
    pub fn manifest_path(&self) -> PathBuf {
        if let Some(manifest) = &self.manifest {
            return manifest.clone();
        }
        let root = self.root();
        let parking_dir = self.parking_dir_path();
        let candidates =
            [OPENSHIFT_MANIFEST, KUBEADM_MANIFEST].map(|m| rooted(&root, Path::new(m)));
        let found = candidates.iter().find(|m| exists(m)).or_else(|| {
            candidates.iter().find(|m| {
                m.file_name()
                    .is_some_and(|name| exists(&parking_dir.join(name)))
            })
        });
        match found {
            Some(manifest) => manifest.clone(),
            None if exists(&rooted(&root, Path::new(STATIC_POD_RESOURCES_DIR))) => {
                candidates[0].clone()
            }
            None => candidates[1].clone(),
        }
    }

    /// The parking dir asked for, else `/etc/kubernetes/etcdops-parked` under the root.
    pub fn parking_dir_path(&self) -> PathBuf {
        self.parking_dir
            .clone()
            .unwrap_or_else(|| rooted(&self.root(), Path::new(DEFAULT_PARKING_DIR)))
    }
}

/// What was done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaticPodResult {
    /// The state reached (or that would be reached, in a dry run).
    pub state: PodState,
    /// Whether the manifest moved (or would move).
    pub changed: bool,
    /// The manifest's path in the kubelet's directory.
    pub manifest: PathBuf,
    /// Its path while parked.
    pub parked_manifest: PathBuf,
    /// An older parked copy moved aside to this name (never deleted).
    pub backup: Option<PathBuf>,
    /// Client endpoints watched (stopped: until closed; started: until healthy).
    pub endpoints: Vec<String>,
    /// Milliseconds spent waiting.
    pub waited_ms: u64,
    /// The crictl asked (stopping) whether the etcd container is gone.
    pub crictl: Option<PathBuf>,
    /// Notes (such as a leftover parked copy).
    pub notes: Vec<String>,
    /// Whether the manifest starts etcd with `--force-new-cluster` (now, or in a dry run
    /// after the start).
    pub force_new_cluster: bool,
    /// Whether `--force-new-cluster` was (or would be) added to or removed from the manifest.
    pub force_new_cluster_changed: bool,
}

impl StaticPodResult {
    /// What was done (or would be, in a dry run), in words.
    pub fn summary(&self, dry_run: bool) -> String {
        let waited = Duration::from_millis(self.waited_ms).as_secs_f64();
        let (manifest, parked) = (self.manifest.display(), self.parked_manifest.display());
        let text = match (self.state, self.changed, dry_run) {
            (PodState::Stopped, true, true) => {
                format!("would move {manifest} to {parked} and wait for etcd to stop")
            }
            (PodState::Stopped, true, false) => {
                format!("stopped: manifest parked at {parked}; etcd gone after {waited:.1}s")
            }
            (PodState::Stopped, false, _) => {
                format!("already stopped: manifest parked at {parked}")
            }
            (PodState::Started, true, true) => {
                format!("would move {parked} back to {manifest} and wait for etcd to be healthy")
            }
            (PodState::Started, true, false) => {
                format!("started: manifest back at {manifest}; etcd healthy after {waited:.1}s")
            }
            (PodState::Started, false, _) => format!("already started: manifest at {manifest}"),
        };
        match (self.force_new_cluster_changed, self.force_new_cluster) {
            (true, true) => {
                format!("{text} (with {FORCE_NEW_CLUSTER_FLAG} added to etcd's command)")
            }
            (true, false) => {
                format!("{text} ({FORCE_NEW_CLUSTER_FLAG} removed from etcd's command)")
            }
            (false, true) => format!("{text} (with {FORCE_NEW_CLUSTER_FLAG})"),
            (false, false) => text,
        }
    }
}

fn io<'a>(operation: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> K8sError + 'a {
    move |source| K8sError::Io {
        operation,
        path: path.display().to_string(),
        source,
    }
}

fn exists(path: &Path) -> bool {
    path.try_exists().unwrap_or(false)
}

/// Moves `from` to `to`, refusing to replace anything at `to`.
fn move_no_clobber(from: &Path, to: &Path) -> Result<()> {
    if exists(to) {
        return Err(K8sError::BadConfig {
            path: to.display().to_string(),
            reason: format!(
                "already exists; not replacing it with {} (move one of them away by hand)",
                from.display()
            ),
        });
    }
    match std::fs::hard_link(from, to) {
        Ok(()) => std::fs::remove_file(from).map_err(io("remove the old link of", from)),
        // Another file system, or one without hard links: rename (checked above that `to`
        // is free), or copy and then remove the source.
        Err(_) => match std::fs::rename(from, to) {
            Ok(()) => Ok(()),
            Err(_) => {
                // A static pod manifest holds no etcd data: the copy keeps its mode, as the
                // rename would.
                #[allow(clippy::disallowed_methods)]
                std::fs::copy(from, to).map_err(io("copy to", to))?;
                std::fs::File::open(to)
                    .and_then(|f| f.sync_all())
                    .map_err(io("sync", to))?;
                std::fs::remove_file(from).map_err(io("remove the moved", from))
            }
        },
    }
}

/// A free backup name beside `path`: `<name>.etcdops-backup-<unix time>[-N]`.
fn backup_name(path: &Path) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let base = format!("{}.etcdops-backup-{stamp}", path.display());
    let mut candidate = PathBuf::from(&base);
    let mut n = 1;
    while exists(&candidate) {
        candidate = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    candidate
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `host:port` of each client URL, a wildcard address as 127.0.0.1.
fn socket_addresses(urls: &[String]) -> Vec<String> {
    urls.iter()
        .filter_map(|u| {
            let rest = u.split_once("://").map(|(_, r)| r).unwrap_or(u);
            let authority = rest.split('/').next()?;
            let authority = authority
                .replace("0.0.0.0:", "127.0.0.1:")
                .replace("[::]:", "127.0.0.1:");
            authority.contains(':').then_some(authority)
        })
        .collect()
}

/// `crictl` on `PATH`, if any.
fn crictl_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("crictl"))
        .find(|candidate| candidate.is_file())
}

/// IDs of running containers named exactly `etcd`, as crictl lists them; `Err` when crictl
/// cannot answer (no runtime socket, not root).
async fn running_etcd_containers(crictl: &Path) -> std::result::Result<Vec<String>, String> {
    let output = tokio::process::Command::new(crictl)
        .args(["ps", "--quiet", "--name", "^etcd$", "--state", "running"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

async fn accepts(address: &str) -> bool {
    matches!(
        tokio::time::timeout(
            Duration::from_millis(500),
            tokio::net::TcpStream::connect(address)
        )
        .await,
        Ok(Ok(_))
    )
}

/// Where a pod's manifest is and may go, as [`static_pod`] found them.
struct Places {
    /// In the kubelet's directory.
    manifest: PathBuf,
    /// In the parking dir.
    parked: PathBuf,
    /// The parking dir.
    parking_dir: PathBuf,
    /// Whether the manifest is in the kubelet's directory.
    in_place: bool,
    /// Whether a parked copy exists.
    is_parked: bool,
}

impl Places {
    /// The manifest file there is: in place, else parked.
    fn source(&self) -> &Path {
        if self.in_place {
            &self.manifest
        } else {
            &self.parked
        }
    }
}

/// Finds the manifest (in place or parked) and reads it.
fn locate(request: &StaticPodRequest) -> Result<(Places, PlatformInfo)> {
    let manifest = request.manifest_path();
    let parking_dir = request.parking_dir_path();
    let file_name = manifest.file_name().ok_or_else(|| {
        K8sError::from(InvalidOption::input(
            "manifest",
            format!(
                "'{}' names no file; give the manifest's path, such as {KUBEADM_MANIFEST}",
                manifest.display()
            ),
        ))
    })?;
    let manifests_dir = manifest.parent().unwrap_or(Path::new("/"));
    if same_dir(manifests_dir, &parking_dir) {
        return Err(K8sError::from(InvalidOption::input(
            "parking_dir",
            "is the kubelet's manifests directory, where the kubelet would keep running etcd; choose a directory outside it",
        )));
    }
    let parked = parking_dir.join(file_name);
    let platform = if file_name == "etcd-pod.yaml" {
        Platform::Openshift
    } else {
        Platform::Kubeadm
    };
    let (in_place, is_parked) = (exists(&manifest), exists(&parked));
    let source = match (in_place, is_parked) {
        (true, _) => &manifest,
        (false, true) => &parked,
        (false, false) => {
            return Err(K8sError::BadConfig {
                path: manifest.display().to_string(),
                reason: format!(
                    "no such manifest, and none parked in {}; give the manifest's path and the parking dir used to stop it",
                    parking_dir.display()
                ),
            });
        }
    };
    let info = parse_pod_manifest(&request.root(), source, platform)?;
    let places = Places {
        manifest,
        parked,
        parking_dir,
        in_place,
        is_parked,
    };
    Ok((places, info))
}

/// Stops or starts the static etcd pod. `connection` is used for the health check when
/// starting; when `None`, endpoints and certificates come from the manifest.
pub async fn static_pod(
    request: &StaticPodRequest,
    connection: Option<&ClusterConfig>,
) -> Result<StaticPodResult> {
    let (places, info) = locate(request)?;
    let mut result = StaticPodResult {
        state: request.state,
        changed: false,
        manifest: places.manifest.clone(),
        parked_manifest: places.parked.clone(),
        backup: None,
        endpoints: Vec::new(),
        waited_ms: 0,
        crictl: None,
        notes: Vec::new(),
        force_new_cluster: false,
        force_new_cluster_changed: false,
    };
    match request.state {
        PodState::Stopped => stop(request, &places, &info, &mut result).await?,
        PodState::Started => start(request, &places, &info, connection, &mut result).await?,
    }
    Ok(result)
}

/// Parks the manifest and waits until etcd's client ports close (and crictl, when there is
/// one, lists no running etcd container).
async fn stop(
    request: &StaticPodRequest,
    places: &Places,
    info: &PlatformInfo,
    result: &mut StaticPodResult,
) -> Result<()> {
    let urls = if info.listen_client_urls.is_empty() {
        info.endpoints.clone()
    } else {
        info.listen_client_urls.clone()
    };
    result.endpoints = urls.clone();
    result.changed = places.in_place;
    if request.dry_run {
        return Ok(());
    }
    if places.in_place {
        etcd_common::private::create_dir_all(&places.parking_dir)
            .map_err(io("create", &places.parking_dir))?;
        if places.is_parked {
            let backup = backup_name(&places.parked);
            move_no_clobber(&places.parked, &backup)?;
            result.backup = Some(backup);
        }
        move_no_clobber(&places.manifest, &places.parked)?;
    }
    let addresses = socket_addresses(&urls);
    let mut crictl = request.crictl.clone().or_else(crictl_on_path);
    let timeout = Duration::from_secs(request.timeout);
    let started = Instant::now();
    loop {
        let mut open = Vec::new();
        for address in &addresses {
            if accepts(address).await {
                open.push(format!("etcd still accepts connections on {address}"));
            }
        }
        if open.is_empty()
            && let Some(tool) = crictl.clone()
        {
            match running_etcd_containers(&tool).await {
                Ok(ids) if ids.is_empty() => {}
                Ok(ids) => open.push(format!(
                    "crictl still lists a running etcd container ({})",
                    ids.join(", ")
                )),
                Err(e) => {
                    result.notes.push(format!(
                        "{} could not list containers ({e}); watched the client ports only",
                        tool.display()
                    ));
                    crictl = None;
                }
            }
        }
        if open.is_empty() {
            break;
        }
        if started.elapsed() > timeout {
            return Err(K8sError::BadConfig {
                path: places.parked.display().to_string(),
                reason: format!(
                    "manifest parked, but after {}s {}; check the kubelet (journalctl -u kubelet, crictl ps --name etcd) and run again",
                    request.timeout,
                    open.join("; ")
                ),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    result.crictl = crictl;
    result.waited_ms = started.elapsed().as_millis() as u64;
    Ok(())
}

/// The manifest's text with or without `--force-new-cluster` as the request asks, when it
/// must change (told in `result`). A forced start is refused while etcd runs from the
/// manifest in place (the kubelet would restart it forced at once): stop it first.
fn flag_edit(
    request: &StaticPodRequest,
    places: &Places,
    result: &mut StaticPodResult,
) -> Result<Option<String>> {
    let source = places.source();
    let text = std::fs::read_to_string(source).map_err(io("read", source))?;
    let edit = set_force_new_cluster(source, &text, request.force_new_cluster)?;
    result.force_new_cluster = request.force_new_cluster;
    if edit.is_some() {
        if request.force_new_cluster && places.in_place {
            return Err(K8sError::BadConfig {
                path: places.manifest.display().to_string(),
                reason: format!(
                    "etcd runs from this manifest; stop it first (the manifest parked), then start it with {FORCE_NEW_CLUSTER_FLAG}"
                ),
            });
        }
        result.changed = true;
        result.force_new_cluster_changed = true;
    }
    Ok(edit)
}

/// Moves the manifest back and waits until etcd is healthy.
async fn start(
    request: &StaticPodRequest,
    places: &Places,
    info: &PlatformInfo,
    connection: Option<&ClusterConfig>,
    result: &mut StaticPodResult,
) -> Result<()> {
    if places.in_place && places.is_parked {
        result.notes.push(format!(
            "a parked copy remains at {} (kept; the manifest in place is the one running)",
            places.parked.display()
        ));
    }
    result.changed = !places.in_place;
    let edit = flag_edit(request, places, result)?;
    let config = match connection {
        Some(config) => config.clone(),
        None => info
            .fill_connection(ConnectionOptions::default())?
            .build()?,
    };
    result.endpoints = config.endpoints.clone();
    if request.dry_run {
        return Ok(());
    }
    if let Some(text) = &edit {
        replace_file(places.source(), text)?;
    }
    if !places.in_place {
        move_no_clobber(&places.parked, &places.manifest)?;
    }
    let timeout = Duration::from_secs(request.timeout);
    let started = Instant::now();
    loop {
        // A new connection each time: the member is (re)starting.
        let report = Client::new(config.clone())
            .endpoints()
            .health(Targets::Configured)
            .await;
        let last_error = match report {
            Ok(report) if report.all_healthy => break,
            Ok(report) => report
                .endpoints
                .iter()
                .filter_map(|e| e.error.clone())
                .collect::<Vec<_>>()
                .join("; "),
            Err(e) => e.to_string(),
        };
        if started.elapsed() > timeout {
            return Err(K8sError::BadConfig {
                path: places.manifest.display().to_string(),
                reason: format!(
                    "manifest in place, but etcd is not healthy after {}s ({last_error}); check the kubelet and etcd's log (crictl logs)",
                    request.timeout
                ),
            });
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    result.waited_ms = started.elapsed().as_millis() as u64;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_of_urls() {
        assert_eq!(
            socket_addresses(&[
                "https://0.0.0.0:2379".into(),
                "http://127.0.0.1:4001/".into()
            ]),
            vec!["127.0.0.1:2379", "127.0.0.1:4001"]
        );
    }

    #[test]
    fn moves_never_replace_and_backups_get_free_names() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, "one").unwrap();
        std::fs::write(&b, "two").unwrap();
        assert!(move_no_clobber(&a, &b).is_err());
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "two");
        let backup = backup_name(&b);
        move_no_clobber(&b, &backup).unwrap();
        move_no_clobber(&a, &b).unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "one");
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), "two");
        assert!(!a.exists());
        assert_ne!(backup_name(&backup), backup);
    }

    #[tokio::test]
    async fn parking_in_the_manifests_dir_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let request = StaticPodRequest {
            state: PodState::Stopped,
            manifest: Some(dir.path().join("etcd.yaml")),
            parking_dir: Some(dir.path().to_path_buf()),
            timeout: 1,
            root: None,
            dry_run: true,
            crictl: None,
            force_new_cluster: false,
        };
        let err = static_pod(&request, None).await.unwrap_err().to_string();
        assert!(err.contains("parking_dir"), "{err}");
    }

    fn request_under(root: &Path) -> StaticPodRequest {
        StaticPodRequest {
            state: PodState::Stopped,
            manifest: None,
            parking_dir: None,
            timeout: 1,
            root: Some(root.to_path_buf()),
            dry_run: true,
            crictl: None,
            force_new_cluster: false,
        }
    }

    #[test]
    fn the_default_manifest_is_the_one_on_the_host_openshifts_or_kubeadms() {
        let host = tempfile::tempdir().unwrap();
        let request = request_under(host.path());
        let kubeadm = host.path().join("etc/kubernetes/manifests/etcd.yaml");
        let openshift = host.path().join("etc/kubernetes/manifests/etcd-pod.yaml");
        let parking = host.path().join("etc/kubernetes/etcdops-parked");
        assert_eq!(request.parking_dir_path(), parking);
        // Nothing there: kubeadm's.
        assert_eq!(request.manifest_path(), kubeadm);
        // OpenShift's static pod resources, no manifest: OpenShift's.
        std::fs::create_dir_all(host.path().join("etc/kubernetes/static-pod-resources")).unwrap();
        assert_eq!(request.manifest_path(), openshift);
        // OpenShift's manifest parked: back to where it came from.
        std::fs::create_dir_all(&parking).unwrap();
        std::fs::write(parking.join("etcd-pod.yaml"), "kind: Pod\n").unwrap();
        assert_eq!(request.manifest_path(), openshift);
        // kubeadm's manifest in place wins over a parked copy; OpenShift's in place over both.
        std::fs::create_dir_all(kubeadm.parent().unwrap()).unwrap();
        std::fs::write(&kubeadm, "kind: Pod\n").unwrap();
        assert_eq!(request.manifest_path(), kubeadm);
        std::fs::write(&openshift, "kind: Pod\n").unwrap();
        assert_eq!(request.manifest_path(), openshift);
        // Given paths are kept.
        let given = StaticPodRequest {
            manifest: Some("/srv/etcd.yaml".into()),
            parking_dir: Some("/srv/parked".into()),
            ..request
        };
        assert_eq!(given.manifest_path(), Path::new("/srv/etcd.yaml"));
        assert_eq!(given.parking_dir_path(), Path::new("/srv/parked"));
    }

    const MANIFEST: &str = "\
apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls=http://127.0.0.1:1
    - --listen-client-urls=http://127.0.0.1:1
    - --data-dir=/var/lib/etcd
    - --name=cp0
    image: registry.k8s.io/etcd:3.5.15-0
    name: etcd
";

    #[tokio::test]
    async fn a_forced_start_edits_the_parked_manifest_and_never_the_running_one() {
        let host = tempfile::tempdir().unwrap();
        let kubelet = host.path().join("etc/kubernetes/manifests");
        let parking = host.path().join("etc/kubernetes/etcdops-parked");
        std::fs::create_dir_all(&kubelet).unwrap();
        std::fs::create_dir_all(&parking).unwrap();
        let parked = parking.join("etcd.yaml");
        std::fs::write(&parked, MANIFEST).unwrap();
        let request = StaticPodRequest {
            state: PodState::Started,
            force_new_cluster: true,
            ..request_under(host.path())
        };
        // Check mode: reported, nothing edited or moved.
        let result = static_pod(&request, None).await.unwrap();
        assert!(result.changed && result.force_new_cluster_changed && result.force_new_cluster);
        assert!(
            result.summary(true).contains("--force-new-cluster added"),
            "{}",
            result.summary(true)
        );
        assert_eq!(std::fs::read_to_string(&parked).unwrap(), MANIFEST);
        // Running from the manifest in place: a forced start is refused, the file unchanged.
        std::fs::rename(&parked, kubelet.join("etcd.yaml")).unwrap();
        let err = static_pod(&request, None).await.unwrap_err().to_string();
        assert!(err.contains("stop it first"), "{err}");
        assert_eq!(
            std::fs::read_to_string(kubelet.join("etcd.yaml")).unwrap(),
            MANIFEST
        );
        // Already without the flag and in place: a normal start changes nothing.
        let normal = StaticPodRequest {
            force_new_cluster: false,
            ..request.clone()
        };
        let result = static_pod(&normal, None).await.unwrap();
        assert!(!result.changed && !result.force_new_cluster_changed);
        // Left forced in place (a run killed after the forced start): a normal start takes
        // the flag out (in check mode only reported).
        let forced = set_force_new_cluster(Path::new("etcd.yaml"), MANIFEST, true)
            .unwrap()
            .unwrap();
        std::fs::write(kubelet.join("etcd.yaml"), &forced).unwrap();
        let result = static_pod(&normal, None).await.unwrap();
        assert!(result.changed && result.force_new_cluster_changed && !result.force_new_cluster);
        assert_eq!(
            std::fs::read_to_string(kubelet.join("etcd.yaml")).unwrap(),
            forced
        );
    }
}
