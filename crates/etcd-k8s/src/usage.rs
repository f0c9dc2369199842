//! What fills the db, grouped the Kubernetes way: besides the key-prefix groups of
//! etcd-data's usage, keys under kube-apiserver's prefix (`/registry`, `/kubernetes.io`, or
//! the one given) are grouped by resource (`pods`, `apiregistration.k8s.io/apiservices`) and
//! by namespace. Read live, page by page through etcd's API (which shows no history), or
//! offline from a snapshot or a stopped member's data dir (etcd-data, which does).

use etcd_core::{Client, ClusterConfig, GetRequest, Targets};
use etcd_data::usage::{
    DbSpace, KeyGrouping, KeyUsage, SpaceSource, Tally, TopN, UsageOptions, UsageReport,
    display_bytes, key_hash, prefix_group,
};

use crate::error::Result;
use crate::prefix::{KNOWN_PREFIXES, normalize_prefix};

/// Groups by key prefix, Kubernetes resource and namespace.
#[derive(Debug, Clone)]
pub struct KubernetesGrouping {
    prefix: Vec<u8>,
    depth: usize,
    /// kube-apiserver's prefixes, each with its trailing `/`.
    k8s_prefixes: Vec<Vec<u8>>,
}

impl KubernetesGrouping {
    /// Prefix groups of `options`; resources and namespaces under `kubernetes_prefix`
    /// (normalised), or under every known prefix when `None`.
    pub fn new(options: &UsageOptions, kubernetes_prefix: Option<&str>) -> Result<Self> {
        let k8s_prefixes = match kubernetes_prefix {
            Some(p) => vec![format!("{}/", normalize_prefix(p)?).into_bytes()],
            None => KNOWN_PREFIXES
                .iter()
                .map(|p| format!("{p}/").into_bytes())
                .collect(),
        };
        Ok(KubernetesGrouping {
            prefix: options.prefix.as_bytes().to_vec(),
            depth: options.depth,
            k8s_prefixes,
        })
    }

    /// `key` after kube-apiserver's prefix: (resource, the rest after the resource's `/`).
    fn resource<'k>(&self, key: &'k [u8]) -> Option<(&'k [u8], &'k [u8])> {
        let start = self.k8s_prefixes.iter().find(|p| key.starts_with(p))?.len();
        let rest = &key[start..];
        let first = rest.iter().position(|b| *b == b'/')?;
        // A group-qualified resource (`<group>/<resource>/...`): its group has a dot. Services
        // and their endpoints are stored under two segments too (`services/specs`,
        // `services/endpoints`): the second is not a namespace.
        let end = if rest[..first].contains(&b'.') || &rest[..first] == b"services" {
            let second = rest[first + 1..].iter().position(|b| *b == b'/')?;
            first + 1 + second
        } else {
            first
        };
        Some((&key[start..start + end], &rest[end + 1..]))
    }
}

impl KeyGrouping for KubernetesGrouping {
    fn dimensions(&self) -> &[&'static str] {
        &["prefix", "resource", "namespace"]
    }

    fn group<'k>(&self, dimension: usize, key: &'k [u8]) -> Option<&'k [u8]> {
        match dimension {
            0 => Some(prefix_group(&self.prefix, self.depth, key)),
            1 => self.resource(key).map(|(resource, _)| resource),
            // `<namespace>/<name>`; a cluster-scoped object (`<name>` alone) has none.
            _ => {
                let (_, rest) = self.resource(key)?;
                let slash = rest.iter().position(|b| *b == b'/')?;
                (slash > 0).then(|| &rest[..slash])
            }
        }
    }
}

/// The usage of the live cluster, read page by page at one revision (memory: a page, the
/// groups and the `top` largest keys). etcd's API shows no history: `history_bytes` is
/// `None`, and over every key `history_bytes_estimate` is `dbSizeInUse` minus the live
/// bytes. The db's space is the first configured endpoint's status that answers; leases are
/// counted with one LeaseLeases call.
pub async fn usage_live(
    config: &ClusterConfig,
    options: &UsageOptions,
    kubernetes_prefix: Option<&str>,
) -> Result<UsageReport> {
    let grouping = KubernetesGrouping::new(options, kubernetes_prefix)?;
    let mut tally = Tally::new(&grouping);
    let mut top: TopN<KeyUsage> = TopN::new(options.top);
    let get = GetRequest {
        key: options.prefix.as_bytes().to_vec(),
        prefix: true,
        ..Default::default()
    };
    // Ties in the top: the earliest revision first, then the lower key hash (as offline).
    let summary = Client::new(config.clone())
        .kv()
        .get_pages(&get, |page| {
            for kv in page {
                let key = &kv.bytes.key;
                let bytes = (key.len() + kv.value_size) as u64;
                let ids = tally.groups_of(&grouping, key);
                tally.live(&ids, bytes, kv.bytes.lease != 0);
                let tie = (kv.mod_revision, key_hash(key));
                if top.wants(bytes, tie) {
                    top.offer(
                        bytes,
                        tie,
                        KeyUsage {
                            key: display_bytes(key),
                            bytes,
                            value_bytes: kv.value_size as u64,
                            mod_revision: kv.mod_revision,
                            lease: kv.lease.clone(),
                        },
                    );
                }
            }
            Ok(())
        })
        .await?;
    let client = Client::new(config.clone());
    let leases = client.leases().ids().await?.len() as u64;
    let status = client.endpoints().status(Targets::Configured).await?;
    let answered = status
        .endpoints
        .iter()
        .find(|e| e.db_size.is_some() && e.db_size_in_use.is_some());
    let mut db = DbSpace::new(
        SpaceSource::EndpointStatus,
        answered.and_then(|e| e.db_size).unwrap_or_default().max(0) as u64,
        answered
            .and_then(|e| e.db_size_in_use)
            .unwrap_or_default()
            .max(0) as u64,
    );
    db.endpoint = answered.map(|e| e.endpoint.clone());
    let history_bytes_estimate = (options.prefix.is_empty() && answered.is_some())
        .then(|| db.in_use.saturating_sub(tally.live_bytes()));
    Ok(UsageReport {
        source: "etcd".into(),
        offline: false,
        revision: summary.revision,
        compact_revision: None,
        prefix: options.prefix.clone(),
        depth: options.depth,
        keys: tally.keys(),
        live_bytes: tally.live_bytes(),
        history_revisions: None,
        history_bytes: None,
        history_bytes_estimate,
        leased_keys: tally.leased_keys(),
        leases: Some(leases),
        db,
        groups: tally.tables(options.top, false),
        largest_keys: top.into_sorted(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(grouping: &KubernetesGrouping, key: &str) -> Vec<Option<String>> {
        (0..3)
            .map(|d| {
                grouping
                    .group(d, key.as_bytes())
                    .map(|g| String::from_utf8_lossy(g).into_owned())
            })
            .collect()
    }

    #[test]
    fn keys_group_by_resource_and_namespace() {
        let options = UsageOptions::default();
        let any = KubernetesGrouping::new(&options, None).unwrap();
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            groups(&any, "/registry/pods/kube-system/etcd-0"),
            [s("/registry/pods/"), s("pods"), s("kube-system")]
        );
        assert_eq!(
            groups(&any, "/kubernetes.io/namespaces/default"),
            [s("/kubernetes.io/namespaces/"), s("namespaces"), None]
        );
        assert_eq!(
            groups(&any, "/registry/apiregistration.k8s.io/apiservices/v1.apps"),
            [
                s("/registry/apiregistration.k8s.io/"),
                s("apiregistration.k8s.io/apiservices"),
                None
            ]
        );
        assert_eq!(
            groups(&any, "/registry/monitoring.coreos.com/prometheuses/mon/k8s"),
            [
                s("/registry/monitoring.coreos.com/"),
                s("monitoring.coreos.com/prometheuses"),
                s("mon")
            ]
        );
        // Services and endpoints: kube-apiserver stores them under `services/specs` and
        // `services/endpoints`, whose second segment is no namespace.
        assert_eq!(
            groups(&any, "/registry/services/specs/default/kubernetes"),
            [s("/registry/services/"), s("services/specs"), s("default")]
        );
        assert_eq!(
            groups(&any, "/registry/services/endpoints/kube-system/kube-dns")[1..],
            [s("services/endpoints"), s("kube-system")]
        );
        // Not an object key, or not under kube-apiserver's prefix.
        assert_eq!(
            groups(&any, "/registry/health"),
            [s("/registry/health"), None, None]
        );
        assert_eq!(
            groups(&any, "/app/config/x"),
            [s("/app/config/"), None, None]
        );
        let given = KubernetesGrouping::new(&options, Some("custom")).unwrap();
        assert_eq!(
            groups(&given, "/custom/secrets/ns/s"),
            [s("/custom/secrets/"), s("secrets"), s("ns")]
        );
        assert_eq!(groups(&given, "/registry/secrets/ns/s")[1], None);
        assert!(KubernetesGrouping::new(&options, Some("/")).is_err());
    }
}
