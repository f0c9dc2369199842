//! The host's platform for the workflows: `platform: auto` (fill unset connection settings
//! from the etcd found on the host), the same for both front-ends.

use std::path::Path;

use etcd_core::ConnectionOptions;
use etcd_k8s::{K8sError, PlatformRequest, detect_platform};

/// `options` with what is still unset filled from the etcd detected on the host under
/// `root` (its static pod manifest, package configuration or unit): endpoints, certificates.
/// Fails when no etcd is found there.
pub fn fill_from_host(
    options: ConnectionOptions,
    root: &Path,
) -> Result<ConnectionOptions, K8sError> {
    detect_platform(&PlatformRequest {
        root: Some(root.to_path_buf()),
    })?
    .fill_connection(options)
}
