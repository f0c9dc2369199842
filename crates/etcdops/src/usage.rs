//! `usage` (`etcdops usage`, `etcd_usage_info`): what fills the db, the question behind most
//! "etcdserver: mvcc: database space exceeded" incidents. Live (paged reads, no history), or
//! offline from a snapshot (file or stored object) or a stopped member's data dir (page by
//! page, with the history a compaction frees and the free pages a defragmentation gives
//! back). Keys are grouped by prefix depth and, under kube-apiserver's prefix, by resource
//! and namespace.

use std::path::PathBuf;

use etcd_common::{InvalidOption, OptionId};
use etcd_core::ClusterConfig;
use etcd_k8s::{KubernetesGrouping, usage_live};
use etcd_snapshot::{DataError, SnapshotError};
use serde::{Deserialize, Serialize};

pub use etcd_data::usage::{
    DEFAULT_DEPTH, DEFAULT_TOP, DbSpace, GroupTable, GroupUsage, KeyUsage, SpaceSource,
    UsageOptions, UsageReport,
};

use crate::error::Result;
use crate::snapshot::{IdentitySettings, StatusRequest, StoreSettings};

/// Most path segments a group may span.
pub const MAX_DEPTH: usize = 64;
/// Most keys and groups listed.
pub const MAX_TOP: usize = 10_000;

use etcd_common::options::{DEPTH, KUBERNETES_PREFIX, TOP};

/// What to measure, and where.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct UsageRequest {
    /// Only keys that start with this ("": every key).
    pub prefix: String,
    /// Path segments after `prefix` that make a group (default [`DEFAULT_DEPTH`]).
    pub depth: Option<usize>,
    /// The largest keys and groups listed (default [`DEFAULT_TOP`]).
    pub top: Option<usize>,
    /// kube-apiserver's `--etcd-prefix`, for the resource and namespace groups; default:
    /// both known ones (`/registry`, `/kubernetes.io`).
    pub kubernetes_prefix: Option<String>,
    /// Read this snapshot (a file, or a stored object's URL) instead of the live cluster.
    pub snapshot: Option<String>,
    /// Read the db of the stopped member at this data dir instead of the live cluster.
    pub data_dir: Option<PathBuf>,
    /// Read a snapshot even when etcd's SHA-256 trailer does not match its db.
    pub skip_hash_check: bool,
    /// The identities of an encrypted snapshot.
    #[serde(flatten)]
    pub identity: IdentitySettings,
    /// How a store is reached.
    #[serde(flatten)]
    pub store: StoreSettings,
}

impl UsageRequest {
    /// Whether it reads a file (no cluster connection needed).
    pub fn is_offline(&self) -> bool {
        self.snapshot.is_some() || self.data_dir.is_some()
    }

    /// The options, checked.
    pub fn options(&self) -> Result<UsageOptions> {
        let depth = self.depth.unwrap_or(DEFAULT_DEPTH);
        let top = self.top.unwrap_or(DEFAULT_TOP);
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(invalid(
                DEPTH,
                format!("{depth} is out of range; give 1 to {MAX_DEPTH} path segments"),
            ));
        }
        if !(1..=MAX_TOP).contains(&top) {
            return Err(invalid(
                TOP,
                format!("{top} is out of range; give 1 to {MAX_TOP}"),
            ));
        }
        Ok(UsageOptions {
            prefix: self.prefix.clone(),
            depth,
            top,
        })
    }
}

fn invalid(option: OptionId, reason: String) -> crate::Error {
    SnapshotError::from(InvalidOption::new(option, reason)).into()
}

fn data_error(e: DataError) -> crate::Error {
    SnapshotError::Data(e).into()
}

/// What fills the db, and what went wrong on the side.
#[derive(Debug, Clone, Serialize)]
pub struct UsageResult {
    /// The usage.
    #[serde(flatten)]
    pub report: UsageReport,
    /// Warnings (a running member's db read as a file, an identity file others can read).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Measures the db: from `request.snapshot` or `request.data_dir` when given (at most one;
/// `config` is not used), else live through `config` (required then).
pub async fn usage(config: Option<&ClusterConfig>, request: &UsageRequest) -> Result<UsageResult> {
    let options = request.options()?;
    let grouping = KubernetesGrouping::new(&options, request.kubernetes_prefix.as_deref())
        .map_err(|e| invalid(KUBERNETES_PREFIX, e.to_string()))?;
    match (&request.snapshot, &request.data_dir) {
        (Some(_), Some(_)) => Err(invalid(
            crate::snapshot::SNAPSHOT,
            "give a snapshot or a data dir, not both".into(),
        )),
        (None, Some(dir)) => {
            let report = etcd_data::usage_data_dir(dir, &options, &grouping).map_err(data_error)?;
            Ok(UsageResult {
                report,
                warnings: Vec::new(),
            })
        }
        (Some(snapshot), None) => {
            let open = StatusRequest {
                snapshot: snapshot.clone(),
                skip_hash_check: request.skip_hash_check,
                identity: request.identity.clone(),
                store: request.store.clone(),
            };
            let (file, warnings) = open.open().await?;
            let skip = request.skip_hash_check;
            let report = file
                .usage(snapshot, skip, &options, &grouping)
                .map_err(data_error)?;
            Ok(UsageResult { report, warnings })
        }
        (None, None) => {
            let Some(config) = config else {
                return Err(invalid(
                    crate::snapshot::SNAPSHOT,
                    "no cluster to read: give a snapshot or a data dir, or connection settings"
                        .into(),
                ));
            };
            let report = usage_live(config, &options, request.kubernetes_prefix.as_deref()).await?;
            Ok(UsageResult {
                report,
                warnings: Vec::new(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_arguments_deserialize_and_bad_options_are_refused() {
        let request: UsageRequest = serde_json::from_value(serde_json::json!({
            "prefix": "/registry/", "depth": 1, "top": 5, "data_dir": "/var/lib/etcd",
        }))
        .unwrap();
        assert!(request.is_offline());
        let options = request.options().unwrap();
        assert_eq!((options.depth, options.top), (1, 5));
        let defaults = UsageRequest::default().options().unwrap();
        assert_eq!((defaults.depth, defaults.top), (DEFAULT_DEPTH, DEFAULT_TOP));
        for bad in [
            UsageRequest {
                depth: Some(0),
                ..Default::default()
            },
            UsageRequest {
                top: Some(0),
                ..Default::default()
            },
        ] {
            let err = bad.options().unwrap_err().to_string();
            assert!(err.contains("out of range"), "{err}");
        }
    }

    #[tokio::test]
    async fn a_missing_snapshot_and_two_sources_are_clear_errors() {
        let both = UsageRequest {
            snapshot: Some("a.db".into()),
            data_dir: Some("/x".into()),
            ..Default::default()
        };
        let err = usage(None, &both).await.unwrap_err().to_string();
        assert!(err.contains("not both"), "{err}");
        let none = usage(None, &UsageRequest::default()).await.unwrap_err();
        assert!(none.to_string().contains("no cluster"), "{none}");
        let missing = UsageRequest {
            snapshot: Some("/nonexistent/x.db".into()),
            ..Default::default()
        };
        let err = usage(None, &missing).await.unwrap_err().to_string();
        assert!(err.contains("/nonexistent/x.db"), "{err}");
    }
}
