//! Changes to files on an etcd host that a platform may own: the cluster's certificates,
//! etcd's configuration file, the apiserver's encryption configuration and a stopped member's
//! WAL. Each workflow passes the OpenShift operator guard first ([`Guards::check`]), in check
//! mode too, so a dry run predicts the refusal: OpenShift's operators issue and rotate etcd's
//! certificates, render etcd's static pod, own encryption at rest (the `apiserver` resource's
//! `spec.encryption`) and restore a lost quorum with their own procedure, and a hand-made
//! change fights them. A forced change carries the guard's warning in [`HostChange::forced`].
//!
//! Stopping the etcd static pod passes the same guard: on OpenShift it takes down a member
//! the operator runs, so it needs `force` (OpenShift's own restore procedure moves the pod's
//! manifest aside, and whoever follows it says so). Starting a parked pod again is not
//! guarded: it puts back what a stop moved.
//!
//! ```no_run
//! # async fn run() -> etcdops::Result<()> {
//! use etcdops::guard::{Force, Guards};
//! use etcdops::pki::{CaRequest, ensure_ca};
//!
//! let request = CaRequest::new("/etc/etcd/pki/ca.crt", "/etc/etcd/pki/ca.key");
//! let done = ensure_ca(&Guards::on_host("/"), &request, Force(false)).await?;
//! println!("{}: {}", done.result.cert_path, done.result.reason);
//! # Ok(())
//! # }
//! ```

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::guard::{Force, Guards, Operation};

/// What a host-file workflow did, and the guard's warning when it was forced through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostChange<T> {
    /// The library's own result.
    #[serde(flatten)]
    pub result: T,
    /// The warning of a guard that `force` got past (OpenShift's operator owns these files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forced: Option<String>,
}

/// Makes `change` once the guards of `operation` on this host let it through (no cluster is
/// asked: these are files).
async fn after_guards<T, E: Into<Error>>(
    guards: &Guards,
    operation: Operation,
    force: Force,
    change: impl FnOnce() -> std::result::Result<T, E>,
) -> Result<HostChange<T>> {
    let forced = guards.check(operation, force, None).await?.warning();
    let result = change().map_err(Into::into)?;
    Ok(HostChange { result, forced })
}

/// Keeps a valid CA or makes one (see `etcd_host::ensure_ca`), after the guards.
pub async fn ensure_ca(
    guards: &Guards,
    request: &etcd_host::CaRequest,
    force: Force,
) -> Result<HostChange<etcd_host::CertificateResult>> {
    after_guards(guards, Operation::CertificateIssue, force, || {
        etcd_host::ensure_ca(request)
    })
    .await
}

/// Keeps a valid member certificate or (re)issues it from the CA (see
/// `etcd_host::ensure_member_certificate`), after the guards.
pub async fn ensure_member_certificate(
    guards: &Guards,
    request: &etcd_host::MemberCertRequest,
    force: Force,
) -> Result<HostChange<etcd_host::CertificateResult>> {
    after_guards(guards, Operation::CertificateIssue, force, || {
        etcd_host::ensure_member_certificate(request)
    })
    .await
}

/// Writes etcd's configuration file (see `etcd_host::write_server_config`), after the guards.
pub async fn write_server_config(
    guards: &Guards,
    request: &etcd_host::ServerConfigRequest,
    force: Force,
) -> Result<HostChange<etcd_host::ServerConfigResult>> {
    after_guards(guards, Operation::ServerConfigWrite, force, || {
        etcd_host::write_server_config(request)
    })
    .await
}

/// Applies one step of a key rotation to the apiserver's encryption configuration (see
/// `etcd_k8s::encryption_config`), after the guards. The request's own `force` (replace a
/// file that holds other keys, with a warning) also gets past the guard: one switch goes past
/// refusals.
pub async fn encryption_config(
    guards: &Guards,
    request: &etcd_k8s::EncryptionConfigRequest,
) -> Result<HostChange<etcd_k8s::EncryptionConfigResult>> {
    after_guards(
        guards,
        Operation::EncryptionConfig,
        Force(request.force),
        || etcd_k8s::encryption_config(request),
    )
    .await
}

/// Raises a stopped member's saved commit index to its WAL's last entry (see
/// `etcd_data::adopt_wal_tail`), after the guards; with `dry_run`, only says what it would do
/// (`etcd_data::plan_wal_tail`).
pub async fn adopt_wal_tail(
    guards: &Guards,
    data_dir: &Path,
    dry_run: bool,
    force: Force,
) -> Result<HostChange<etcd_data::TailAdoption>> {
    after_guards(guards, Operation::WalTailAdoption, force, || {
        if dry_run {
            etcd_data::plan_wal_tail(data_dir)
        } else {
            etcd_data::adopt_wal_tail(data_dir)
        }
    })
    .await
}

/// Stops or starts a static etcd pod (see `etcd_k8s::static_pod`); a stop passes the guards
/// first, in a dry run too, so the dry run predicts the refusal.
pub async fn static_pod(
    guards: &Guards,
    request: &etcd_k8s::StaticPodRequest,
    connection: Option<&etcd_core::ClusterConfig>,
    force: Force,
) -> Result<HostChange<etcd_k8s::StaticPodResult>> {
    let forced = match request.state {
        etcd_k8s::PodState::Stopped => guards
            .check(Operation::StaticPodStop, force, None)
            .await?
            .warning(),
        etcd_k8s::PodState::Started => None,
    };
    let result = etcd_k8s::static_pod(request, connection).await?;
    Ok(HostChange { result, forced })
}
