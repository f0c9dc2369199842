//! Where Kubernetes keeps its objects in etcd: `/registry` on kubeadm and most distributions,
//! `/kubernetes.io` on OpenShift, `<prefix>/<resource>/<namespace>/<name>` for namespaced
//! objects and `<prefix>/<resource>/<name>` for cluster-scoped ones.

use serde::Serialize;

use crate::error::{K8sError, PREFIX, RESOURCES, Result};
use etcd_common::InvalidOption;

/// The prefixes kube-apiserver is known to use (its `--etcd-prefix`).
pub const KNOWN_PREFIXES: &[&str] = &["/registry", "/kubernetes.io"];

/// Normalises a user-given prefix: one leading `/`, no trailing `/`.
pub fn normalize_prefix(prefix: &str) -> Result<String> {
    let trimmed = prefix.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        return Err(K8sError::from(InvalidOption::new(
            PREFIX,
            "empty; give the prefix kube-apiserver stores under (its etcd-prefix setting), e.g. /registry",
        )));
    }
    Ok(if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    })
}

/// Checks a resource name (`secrets`, `configmaps`, `apiregistration.k8s.io/apiservices`).
pub fn normalize_resource(resource: &str) -> Result<String> {
    let trimmed = resource.trim().trim_matches('/');
    if trimmed.is_empty() || trimmed.contains("//") || trimmed.contains(char::is_whitespace) {
        return Err(K8sError::from(
            InvalidOption::new(
                RESOURCES,
                format!(
                    "{resource:?} is not a resource; give plural names such as secrets,configmaps"
                ),
            )
            .called("resource"),
        ));
    }
    Ok(trimmed.to_string())
}

/// The key prefix holding every object of `resource`: `<prefix>/<resource>/`.
pub fn resource_prefix(prefix: &str, resource: &str) -> String {
    format!("{prefix}/{resource}/")
}

/// Picks the prefix from how many keys each known prefix holds: the one with keys; when both
/// have some, the one with more (and say so); when none, an error saying what to do.
pub fn choose_prefix(counts: &[(String, u64)]) -> Result<String> {
    let mut with_keys: Vec<&(String, u64)> = counts.iter().filter(|(_, n)| *n > 0).collect();
    with_keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    match with_keys.first() {
        Some((prefix, _)) => Ok(prefix.clone()),
        None => Err(K8sError::NoPrefixFound {
            looked: counts
                .iter()
                .map(|(p, _)| format!("{p}/"))
                .collect::<Vec<_>>()
                .join(" or "),
        }),
    }
}

/// Where an object is, read from its etcd key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectRef {
    /// The resource (`secrets`).
    pub resource: String,
    /// The namespace; absent for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

/// Splits `key` (under `<prefix>/<resource>/`) into namespace and name.
pub fn object_ref(prefix: &str, resource: &str, key: &str) -> ObjectRef {
    let rest = key
        .strip_prefix(&resource_prefix(prefix, resource))
        .unwrap_or(key);
    let (namespace, name) = match rest.split_once('/') {
        Some((ns, name)) => (Some(ns.to_string()), name.to_string()),
        None => (None, rest.to_string()),
    };
    ObjectRef {
        resource: resource.to_string(),
        namespace,
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_normalised() {
        assert_eq!(normalize_prefix("/registry/").unwrap(), "/registry");
        assert_eq!(normalize_prefix("kubernetes.io").unwrap(), "/kubernetes.io");
        assert!(normalize_prefix("/").is_err());
        assert!(normalize_prefix("  ").is_err());
        assert_eq!(normalize_resource("/secrets/").unwrap(), "secrets");
        assert!(normalize_resource("").is_err());
        assert!(normalize_resource("a b").is_err());
    }

    #[test]
    fn the_prefix_with_keys_wins() {
        let counts = |r: u64, o: u64| {
            vec![
                ("/registry".to_string(), r),
                ("/kubernetes.io".to_string(), o),
            ]
        };
        assert_eq!(choose_prefix(&counts(10, 0)).unwrap(), "/registry");
        assert_eq!(choose_prefix(&counts(0, 3)).unwrap(), "/kubernetes.io");
        assert_eq!(choose_prefix(&counts(2, 30)).unwrap(), "/kubernetes.io");
        let err = choose_prefix(&counts(0, 0)).unwrap_err().to_string();
        assert!(err.contains("/registry/ or /kubernetes.io/"), "{err}");
        assert!(err.contains("etcd-prefix setting"), "{err}");
    }

    #[test]
    fn keys_split_into_namespace_and_name() {
        let ns = object_ref(
            "/registry",
            "secrets",
            "/registry/secrets/kube-system/token",
        );
        assert_eq!(ns.namespace.as_deref(), Some("kube-system"));
        assert_eq!(ns.name, "token");
        let cluster = object_ref(
            "/kubernetes.io",
            "namespaces",
            "/kubernetes.io/namespaces/x",
        );
        assert_eq!((cluster.namespace, cluster.name.as_str()), (None, "x"));
        assert_eq!(
            resource_prefix("/registry", "secrets"),
            "/registry/secrets/"
        );
    }
}
