//! `etcdops platform ...`, `--platform auto`, and the OpenShift guard in front of membership
//! and defragmentation. The work is in etcd-k8s; this prints its results.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use etcd_core::{ClusterConfig, ConnectionOptions};
use etcd_k8s::{
    DEFAULT_PARKING_DIR, KUBEADM_MANIFEST, PlatformInfo, PlatformRequest, PodState,
    StaticPodRequest, StaticPodResult, check_operator, detect_platform, rooted, static_pod,
};

use super::ExitStatus;
use crate::flags::{
    Command, GlobalFlags, MemberCommand, OutputFormat, PlatformCommand, PlatformMode,
    SnapshotCommand, StaticPodArgs,
};
use crate::output::{Render, print};

fn root(global: &GlobalFlags) -> PathBuf {
    global
        .platform_root
        .clone()
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The connection options from flags and `ETCDCTL_*`, then (with `--platform auto`) from the
/// etcd detected on this host for whatever is still unset.
pub fn connection_options(global: &GlobalFlags) -> Result<ConnectionOptions> {
    let options = global.connection_options().or_env()?;
    match global.platform {
        None => Ok(options),
        Some(PlatformMode::Auto) => {
            let info = detect_platform(&PlatformRequest {
                root: Some(root(global)),
            })?;
            Ok(info.fill_connection(options)?)
        }
    }
}

/// Where OpenShift's cluster-etcd-operator manages etcd (seen on this host or in the cluster),
/// refuses membership changes, defragmentation and restores without `--force`.
pub async fn guard(global: &GlobalFlags, command: &Command, config: &ClusterConfig) -> Result<()> {
    let (operation, force, online) = match command {
        Command::Member(MemberCommand::Add(args)) => ("member add", args.force, true),
        Command::Member(MemberCommand::Remove(args)) => ("member remove", args.force, true),
        Command::Member(MemberCommand::Update(args)) => ("member update", args.force, true),
        Command::Member(MemberCommand::Promote(args)) => ("member promote", args.force, true),
        Command::Defrag(args) => ("defrag", args.force, true),
        Command::Snapshot(SnapshotCommand::Restore(args)) => {
            ("snapshot restore", args.force, false)
        }
        _ => return Ok(()),
    };
    let check = check_operator(&root(global), online.then_some(config), operation, force).await?;
    if let Some(warning) = check.warning() {
        crate::output::warn(&warning);
    }
    Ok(())
}

/// Runs a `platform` command.
pub async fn run(
    global: &GlobalFlags,
    command: &PlatformCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        PlatformCommand::Detect(args) => {
            let root = args.root.clone().unwrap_or_else(|| root(global));
            let info = detect_platform(&PlatformRequest { root: Some(root) })?;
            print(format, &DetectView(info))?;
            Ok(ExitStatus::Success)
        }
        PlatformCommand::Stop(args) => pod(global, args, PodState::Stopped, format).await,
        PlatformCommand::Start(args) => pod(global, args, PodState::Started, format).await,
    }
}

async fn pod(
    global: &GlobalFlags,
    args: &StaticPodArgs,
    state: PodState,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let root = root(global);
    let manifest = match &args.manifest {
        Some(path) => path.clone(),
        None => default_manifest(&root),
    };
    let request = StaticPodRequest {
        state,
        manifest,
        parking_dir: args
            .parking_dir
            .clone()
            .unwrap_or_else(|| rooted(&root, Path::new(DEFAULT_PARKING_DIR))),
        timeout: args.timeout.as_secs().max(1),
        root: Some(root),
        dry_run: args.dry_run,
        crictl: None,
    };
    // Connection flags given explicitly are used for the health check; else the manifest's.
    let explicit = global.connection_options().or_env()?;
    let connection = if explicit.endpoints.is_some() {
        Some(explicit.build()?)
    } else {
        None
    };
    let result = static_pod(&request, connection.as_ref())
        .await
        .with_context(|| format!("platform {}", state_word(state)))?;
    print(format, &PodView(result, args.dry_run))?;
    Ok(ExitStatus::Success)
}

/// The detected manifest (OpenShift's, else kubeadm's, else a parked one's original place).
fn default_manifest(root: &Path) -> PathBuf {
    match detect_platform(&PlatformRequest {
        root: Some(root.to_path_buf()),
    }) {
        Ok(PlatformInfo {
            manifest: Some(manifest),
            parked: false,
            ..
        }) => manifest,
        Ok(PlatformInfo {
            manifest: Some(parked),
            parked: true,
            ..
        }) => {
            let name = parked.file_name().map(PathBuf::from).unwrap_or_default();
            rooted(root, Path::new(etcd_k8s::MANIFESTS_DIR)).join(name)
        }
        _ => rooted(root, Path::new(KUBEADM_MANIFEST)),
    }
}

fn state_word(state: PodState) -> &'static str {
    match state {
        PodState::Stopped => "stop",
        PodState::Started => "start",
    }
}

fn path(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

struct DetectView(PlatformInfo);

impl serde::Serialize for DetectView {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl DetectView {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let i = &self.0;
        let mut pairs = vec![
            ("platform", i.platform.to_string()),
            ("name", i.name.clone().unwrap_or_default()),
            ("endpoints", i.endpoints.join(",")),
            ("peer_urls", i.peer_urls.join(",")),
            ("data_dir", path(&i.data_dir)),
            ("cacert", path(&i.cacert)),
            ("cert", path(&i.cert)),
            ("key", path(&i.key)),
            ("version", i.version.clone().unwrap_or_default()),
            (
                "source",
                path(&i.manifest.clone().or_else(|| i.config_file.clone())),
            ),
        ];
        if i.parked {
            pairs.push(("parked", "true".into()));
        }
        for note in &i.notes {
            pairs.push(("note", note.clone()));
        }
        pairs
    }
}

impl Render for DetectView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["SETTING", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.pairs()
            .into_iter()
            .map(|(k, v)| vec![k.to_string(), v])
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.pairs()
            .into_iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect()
    }
}

struct PodView(StaticPodResult, bool);

impl serde::Serialize for PodView {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl PodView {
    fn line(&self) -> String {
        let r = &self.0;
        let waited = Duration::from_millis(r.waited_ms).as_secs_f64();
        match (r.state, r.changed, self.1) {
            (PodState::Stopped, true, true) => format!(
                "would move {} to {} and wait for etcd to stop",
                r.manifest.display(),
                r.parked_manifest.display()
            ),
            (PodState::Stopped, true, false) => format!(
                "stopped: manifest parked at {}; etcd gone after {waited:.1}s",
                r.parked_manifest.display()
            ),
            (PodState::Stopped, false, _) => format!(
                "already stopped: manifest parked at {}",
                r.parked_manifest.display()
            ),
            (PodState::Started, true, true) => format!(
                "would move {} back to {} and wait for etcd to be healthy",
                r.parked_manifest.display(),
                r.manifest.display()
            ),
            (PodState::Started, true, false) => format!(
                "started: manifest back at {}; etcd healthy after {waited:.1}s",
                r.manifest.display()
            ),
            (PodState::Started, false, _) => {
                format!("already started: manifest at {}", r.manifest.display())
            }
        }
    }
}

impl Render for PodView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["RESULT"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![vec![self.line()]];
        if let Some(backup) = &self.0.backup {
            rows.push(vec![format!(
                "an older parked manifest was kept as {}",
                backup.display()
            )]);
        }
        rows.extend(self.0.notes.iter().map(|n| vec![n.clone()]));
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().flatten().collect()
    }
}
