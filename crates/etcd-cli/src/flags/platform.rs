//! Flags of `etcdops platform ...`.

use super::*;

/// `etcdops platform ...`
#[derive(Debug, Subcommand)]
pub enum PlatformCommand {
    /// Which etcd runs here (kubeadm, openshift, standalone or none), with its endpoints, data
    /// dir, certificate paths, peer URLs, name and version.
    Detect(PlatformDetectArgs),
    /// Stop the static etcd pod: move its manifest to the parking dir (kept, never deleted)
    /// and wait until etcd's client ports close.
    Stop(StaticPodArgs),
    /// Start the static etcd pod: move its manifest back and wait until etcd is healthy.
    Start(StaticPodArgs),
}

/// Arguments of `platform detect`.
#[derive(Debug, Args)]
pub struct PlatformDetectArgs {
    /// Directory standing for `/` (a copy of a host's files) [default: --platform-root, or /]
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Arguments of `platform stop|start`.
#[derive(Debug, Args)]
pub struct StaticPodArgs {
    /// The manifest in the kubelet's directory [default: the detected one, or
    /// /etc/kubernetes/manifests/etcd.yaml under --platform-root]
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Where the manifest waits while etcd is stopped [default:
    /// /etc/kubernetes/etcdops-parked under --platform-root]
    #[arg(long, value_name = "DIR")]
    pub parking_dir: Option<PathBuf>,
    /// How long to wait for etcd to go or to become healthy, e.g. 2m
    #[arg(long, value_parser = duration, value_name = "DURATION", default_value = "2m")]
    pub timeout: Duration,
    /// Say what would be done; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Stop it even where OpenShift's cluster-etcd-operator runs etcd (with a warning)
    #[command(flatten)]
    pub force: ForceFlag,
}
