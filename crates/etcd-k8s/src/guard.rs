//! Not fighting OpenShift's cluster-etcd-operator. On OpenShift 4 the operator owns etcd's
//! membership, defragmentation and restores; doing them behind its back leaves it repairing
//! what it did not expect. [`check_operator`] refuses such an operation unless forced, and
//! looks in two places, so that it also works from a host that is not a control-plane node:
//! the files of the host it runs on (OpenShift's etcd pod manifest or certificates), and the
//! cluster itself (the operator's `etcds.operator.openshift.io/cluster` object, read with a
//! count-only get that returns no value).

use std::path::Path;

use etcd_core::{Client, ClusterConfig, GetRequest};
use serde::Serialize;

use crate::error::{K8sError, Result};
use crate::platform::openshift_evidence_on_host;

/// Where kube-apiserver keeps the cluster-etcd-operator's configuration object, under each
/// prefix OpenShift and Kubernetes use.
pub const OPENSHIFT_ETCD_OPERATOR_KEYS: &[&str] = &[
    "/kubernetes.io/operator.openshift.io/etcds/cluster",
    "/registry/operator.openshift.io/etcds/cluster",
];

/// What [`check_operator`] found, for the front-ends to report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperatorCheck {
    /// The operation checked (`member remove`, `defrag`, `snapshot restore`).
    pub operation: String,
    /// Whether OpenShift's cluster-etcd-operator manages this etcd.
    pub managed_by_operator: bool,
    /// What showed it: a file on this host or a key in the cluster.
    pub evidence: Option<String>,
    /// Whether the operation goes ahead only because it was forced.
    pub forced: bool,
}

impl OperatorCheck {
    /// The warning to print when the operation was forced through.
    pub fn warning(&self) -> Option<String> {
        self.forced.then(|| {
            format!(
                "forced: running `{}` on etcd managed by OpenShift's cluster-etcd-operator ({}), behind the operator's back",
                self.operation,
                self.evidence.as_deref().unwrap_or("detected")
            )
        })
    }
}

/// How to do `operation` the platform's way instead, in neutral words: the option that
/// forces the operation through is the refusal's hint (`force`), which each front-end spells.
pub fn openshift_procedure(operation: &str) -> String {
    if operation.contains("auth") {
        return format!(
            "OpenShift's cluster-etcd-operator manages this etcd, and `{operation}` would fight it: its components reach etcd with client certificates and no etcd users or roles, so leave etcd's access control as the operator made it; force it only if Red Hat support told you to"
        );
    }
    let procedure = if operation.contains("certificate") {
        "the operator issues and rotates etcd's certificates (secrets in the openshift-etcd and openshift-config namespaces); see the 'etcd certificates' documentation"
    } else if operation.contains("server config") {
        "the operator renders etcd's static pod and its settings from the `etcd` cluster resource (`oc get etcd cluster -o yaml`)"
    } else if operation.contains("encryption") {
        "set `spec.encryption.type` on the `apiserver` cluster resource (`oc edit apiserver`); its operators write and rotate the keys"
    } else if operation.contains("static pod") {
        "the 'Restoring to a previous cluster state' procedure, whose steps move etcd-pod.yaml out of the kubelet's directory on the other control-plane hosts (a forced stop is that step)"
    } else if operation.contains("restore") || operation.contains("WAL") {
        "the 'Restoring to a previous cluster state' procedure (cluster-restore.sh on a recovery control-plane host; a snapshot saved with an OpenShift backup dir writes the files it takes)"
    } else {
        "`oc get etcd -o yaml`, and the 'Replacing an unhealthy etcd member' or 'Defragmenting etcd data' procedure"
    };
    format!(
        "OpenShift's cluster-etcd-operator manages this etcd, and `{operation}` would fight it; use the platform's procedure instead: {procedure}; force it only if Red Hat support told you to"
    )
}

/// Refuses `operation` on etcd that OpenShift's cluster-etcd-operator manages, unless `force`.
/// Looks at the host under `root` and, when `cluster` is given, at the cluster. A cluster that
/// cannot be read (no permission on the key, unreachable) adds no evidence; the operation
/// itself then reports what is wrong.
pub async fn check_operator(
    root: &Path,
    cluster: Option<&ClusterConfig>,
    operation: &str,
    force: bool,
) -> Result<OperatorCheck> {
    let mut evidence = openshift_evidence_on_host(root).map(|path| format!("found {path}"));
    if evidence.is_none()
        && let Some(config) = cluster
    {
        evidence = operator_key_in(config)
            .await
            .map(|key| format!("key {key}"));
    }
    let check = OperatorCheck {
        operation: operation.to_string(),
        managed_by_operator: evidence.is_some(),
        forced: evidence.is_some() && force,
        evidence,
    };
    if check.managed_by_operator && !force {
        return Err(K8sError::ManagedByOperator {
            operation: operation.to_string(),
            evidence: check.evidence.clone().unwrap_or_default(),
            procedure: openshift_procedure(operation),
        });
    }
    Ok(check)
}

async fn operator_key_in(config: &ClusterConfig) -> Option<&'static str> {
    for key in OPENSHIFT_ETCD_OPERATOR_KEYS {
        let request = GetRequest {
            key: key.as_bytes().to_vec(),
            count_only: true,
            ..Default::default()
        };
        if let Ok(summary) = Client::new(config.clone())
            .kv()
            .get_pages(&request, |_| Ok(()))
            .await
            && summary.count > 0
        {
            return Some(key);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_plain_host_without_a_cluster_is_not_refused() {
        let root = tempfile::tempdir().unwrap();
        let check = check_operator(root.path(), None, "defrag", false)
            .await
            .unwrap();
        assert!(!check.managed_by_operator && !check.forced);
        assert_eq!(check.warning(), None);
    }

    #[tokio::test]
    async fn an_openshift_host_is_refused_unless_forced() {
        let root = tempfile::tempdir().unwrap();
        let manifests = root.path().join("etc/kubernetes/manifests");
        std::fs::create_dir_all(&manifests).unwrap();
        std::fs::write(manifests.join("etcd-pod.yaml"), "kind: Pod\n").unwrap();
        let err = check_operator(root.path(), None, "snapshot restore", false)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing `snapshot restore`"), "{err}");
        assert!(err.contains("cluster-restore.sh"), "{err}");
        assert!(!err.contains('\n'));
        assert!(!err.contains("--") && !err.contains("etcdops "), "{err}");
        let check = check_operator(root.path(), None, "member remove", true)
            .await
            .unwrap();
        assert!(check.managed_by_operator && check.forced);
        assert!(check.warning().unwrap().contains("member remove"));
    }
}
