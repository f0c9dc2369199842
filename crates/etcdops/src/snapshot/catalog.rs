//! What a store holds, and what to do with it: list, delete, prune, copy.

use chrono::Utc;
use etcd_core::MemberId;
use etcd_snapshot::{
    Catalog, CopyReport, DeleteReport, Progress, PruneReport, cluster_folder_id, copy_backups,
    delete_backup, list_backups, prune_store, split_backup_url,
};
use etcd_store::split_object_url;
use serde::{Deserialize, Serialize};

use super::save::Retention;
use super::settings::StoreSettings;
use crate::error::Result;

/// The store to list.
#[derive(Debug, Clone, Deserialize)]
pub struct ListRequest {
    /// The store's URL.
    pub store: String,
    /// How it is reached.
    #[serde(flatten)]
    pub settings: StoreSettings,
}

/// Something in a listed store that needs a look.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ListWarning {
    /// A backup's chain of delta segments is broken (its first problem).
    BrokenChain {
        /// The full backup.
        object: String,
        /// What breaks its chain.
        problem: String,
    },
    /// Delta segments without their full backup (a prune deletes them).
    DanglingDeltas(usize),
    /// The store given is a cluster folder of a store (it lists empty).
    ClusterFolder(String),
    /// An entry with a name of etcdops's that is not a regular file (a symbolic link, a FIFO,
    /// a dir named like an object): never read, copied or deleted.
    ForeignEntry {
        /// Its name in the store.
        name: String,
        /// What it is ("a symbolic link").
        kind: String,
    },
}

impl ListWarning {
    /// The warning in words.
    pub fn message(&self) -> String {
        match self {
            ListWarning::BrokenChain { object, problem } => {
                format!("the chain of delta segments of {object} is broken: {problem}")
            }
            ListWarning::DanglingDeltas(count) => format!(
                "{count} delta segment(s) have no full backup; a prune of the store deletes them"
            ),
            ListWarning::ClusterFolder(url) => {
                format!("{url} is a cluster folder, not a store: list the store that holds it")
            }
            ListWarning::ForeignEntry { name, kind } => format!(
                "{name} is {kind}, not a file etcdops wrote: never read, copied or deleted; \
                 move it out of the store if it is not meant to be there"
            ),
        }
    }
}

/// A store's catalog and what needs a look in it.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    /// The backups, orphans, broken manifests, dangling segments and unfinished uploads.
    #[serde(flatten)]
    pub catalog: Catalog,
    /// What needs a look.
    #[serde(skip)]
    pub warnings: Vec<ListWarning>,
}

/// Lists a store's backups (from their manifests), with warnings about broken chains,
/// dangling segments and a cluster folder given as the store.
pub async fn list(request: &ListRequest) -> Result<Listed> {
    let store = request.settings.open(&request.store)?;
    let catalog = list_backups(&store).await?;
    let mut warnings: Vec<ListWarning> = catalog
        .backups
        .iter()
        .filter_map(|b| {
            let problem = b.chain.as_ref()?.problems.first()?;
            Some(ListWarning::BrokenChain {
                object: b.object.clone(),
                problem: problem.clone(),
            })
        })
        .collect();
    if !catalog.dangling_deltas.is_empty() {
        warnings.push(ListWarning::DanglingDeltas(catalog.dangling_deltas.len()));
    }
    warnings.extend(
        catalog
            .foreign_entries
            .iter()
            .map(|e| ListWarning::ForeignEntry {
                name: e.name.clone(),
                kind: e.kind.to_string(),
            }),
    );
    let folder = store.url().rsplit('/').next().unwrap_or_default();
    if catalog.backups.is_empty() && cluster_folder_id(folder).is_some() {
        warnings.push(ListWarning::ClusterFolder(store.url().to_string()));
    }
    Ok(Listed { catalog, warnings })
}

/// Deletes one backup (manifest first, then its object, then its chain). `url` is
/// `STORE/etcd-<cluster>/OBJECT` (the store holding the cluster folder) or `STORE/OBJECT`.
pub async fn delete(url: &str, settings: &StoreSettings) -> Result<DeleteReport> {
    let (store_url, name) = split_backup_url(url).unwrap_or_else(|| split_object_url(url));
    let store = settings.open(&store_url)?;
    Ok(delete_backup(&store, &name).await?)
}

/// What to prune.
#[derive(Debug, Clone, Deserialize)]
pub struct PruneRequest {
    /// The store's URL.
    pub store: String,
    /// Only this cluster's folder; every cluster folder (each by its own rules) when absent.
    pub cluster: Option<MemberId>,
    /// Say what would be deleted, delete nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Verify each cluster's newest backup before deleting anything of it.
    #[serde(default)]
    pub verify_newest: bool,
    /// The rules.
    #[serde(flatten)]
    pub retention: Retention,
    /// How the store is reached.
    #[serde(flatten)]
    pub settings: StoreSettings,
}

/// Deletes the backups no rule keeps, and old orphans.
pub async fn prune(request: &PruneRequest) -> Result<PruneReport> {
    let store = request.settings.open(&request.store)?;
    let prune = etcd_snapshot::PruneRequest {
        policy: request.retention.policy()?,
        cluster: request.cluster,
        orphan_grace: request.retention.orphan_grace,
        dry_run: request.dry_run,
        verify_newest: request.verify_newest,
        ..etcd_snapshot::PruneRequest::default()
    };
    Ok(prune_store(&store, &prune, Utc::now()).await?)
}

/// What to copy where.
#[derive(Debug, Clone, Deserialize)]
pub struct CopyRequest {
    /// The store to copy from.
    pub source: String,
    /// The store to copy to.
    pub destination: String,
    /// Only these backups (object names); every complete backup when empty.
    #[serde(default)]
    pub backups: Vec<String>,
    /// Say what would be copied, copy nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// How both stores are reached.
    #[serde(flatten)]
    pub settings: StoreSettings,
}

/// Copies complete backups (with their chains) to another store, each checked against its
/// manifest, the manifest written last.
pub async fn copy(request: &CopyRequest, progress: &dyn Progress) -> Result<CopyReport> {
    let source = request.settings.open(&request.source)?;
    let destination = request.settings.open(&request.destination)?;
    let copy = etcd_snapshot::CopyRequest {
        objects: request.backups.clone(),
        dry_run: request.dry_run,
        read_back: false,
    };
    Ok(copy_backups(&source, &destination, &copy, progress).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cluster_folder_given_as_the_store_is_a_warning_of_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("etcd-5f62a924ac85910");
        std::fs::create_dir_all(&folder).unwrap();
        let listing = |store: &std::path::Path| ListRequest {
            store: store.display().to_string(),
            settings: StoreSettings::default(),
        };
        let listed = list(&listing(&folder)).await.unwrap();
        assert!(listed.catalog.backups.is_empty());
        assert!(
            matches!(listed.warnings.as_slice(), [ListWarning::ClusterFolder(url)] if url.ends_with("etcd-5f62a924ac85910")),
            "{:?}",
            listed.warnings
        );
        assert!(
            listed.warnings[0]
                .message()
                .contains("is a cluster folder, not a store")
        );
        // The store that holds it lists without a warning.
        assert!(
            list(&listing(dir.path()))
                .await
                .unwrap()
                .warnings
                .is_empty()
        );
    }
}
