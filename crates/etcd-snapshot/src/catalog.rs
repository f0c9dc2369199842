//! The backup catalog over a store: list (from manifests), verify, delete, prune.
//! A backup exists only when its manifest exists; a backup object without one is an orphan
//! (a save that crashed, or one still finishing), removed by `prune` after a grace period.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use etcd_store::{ObjectInfo, Store};
use serde::Serialize;

use crate::crypt::Identities;
use crate::error::Result;
use crate::manifest::{ENCRYPTED_SUFFIX, MANIFEST_SUFFIX, Manifest};
use crate::progress::Progress;
use crate::retention::{RetentionItem, RetentionPolicy, apply_retention};
use crate::verify::{VerifyExpectation, VerifyReport, verify_object};

/// Default age after which `prune` removes orphans.
pub const DEFAULT_ORPHAN_GRACE: Duration = Duration::from_secs(3600);

/// One backup: its manifest and whether its object is in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackupEntry {
    /// Object name in the store.
    pub object: String,
    /// Manifest name in the store.
    pub manifest_name: String,
    /// Whether the object is present with the size the manifest records.
    pub complete: bool,
    /// The manifest.
    pub manifest: Manifest,
}

/// A manifest that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokenManifest {
    /// Its name.
    pub name: String,
    /// Why.
    pub error: String,
}

/// Everything in a store, as backups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Catalog {
    /// The store's URL.
    pub store: String,
    /// Backups, newest first.
    pub backups: Vec<BackupEntry>,
    /// Backup objects without a manifest.
    pub orphans: Vec<ObjectInfo>,
    /// Manifests that could not be read.
    pub broken_manifests: Vec<BrokenManifest>,
}

fn is_backup_object(name: &str) -> bool {
    let name = name.strip_suffix(ENCRYPTED_SUFFIX).unwrap_or(name);
    name.ends_with(".db") || name.ends_with(".db.zst")
}

/// Lists the backups in a store, newest first, with orphans and unreadable manifests.
pub async fn list_backups(store: &Store) -> Result<Catalog> {
    let objects = store.list("").await?;
    let by_name: std::collections::HashMap<&str, &ObjectInfo> =
        objects.iter().map(|o| (o.name.as_str(), o)).collect();
    let manifest_names: Vec<&str> = objects
        .iter()
        .map(|o| o.name.as_str())
        .filter(|n| n.ends_with(MANIFEST_SUFFIX))
        .collect();
    let loaded = futures::future::join_all(manifest_names.iter().map(|name| async move {
        let bytes = store.get_small(name).await?;
        Manifest::from_json(name, &bytes)
    }))
    .await;
    let mut backups = Vec::new();
    let mut broken = Vec::new();
    let mut described: HashSet<String> = HashSet::new();
    for (name, manifest) in manifest_names.iter().zip(loaded) {
        let object = name.trim_end_matches(MANIFEST_SUFFIX).to_string();
        described.insert(object.clone());
        match manifest {
            Ok(manifest) => {
                let complete = by_name
                    .get(object.as_str())
                    .is_some_and(|o| o.size == manifest.object_size);
                backups.push(BackupEntry {
                    object,
                    manifest_name: name.to_string(),
                    complete,
                    manifest,
                });
            }
            Err(e) => broken.push(BrokenManifest {
                name: name.to_string(),
                error: e.to_string(),
            }),
        }
    }
    backups.sort_by(|a, b| {
        b.manifest
            .created_at
            .cmp(&a.manifest.created_at)
            .then(b.object.cmp(&a.object))
    });
    let orphans = objects
        .iter()
        .filter(|o| is_backup_object(&o.name) && !described.contains(&o.name))
        .cloned()
        .collect();
    Ok(Catalog {
        store: store.url().to_string(),
        backups,
        orphans,
        broken_manifests: broken,
    })
}

/// The object a user named: an object name or its manifest's name.
pub fn object_name(name: &str) -> &str {
    name.strip_suffix(MANIFEST_SUFFIX).unwrap_or(name)
}

/// Verifies one backup. With a manifest, everything it records is checked; a bare object
/// (no manifest) is checked for etcd's trailer and sound bbolt meta pages. An age-encrypted
/// backup is decrypted with `identities`; without one, only its stored bytes can be checked
/// and [`crate::SnapshotError::Encrypted`] says so.
pub async fn verify_backup(
    store: &Store,
    name: &str,
    identities: &Identities,
    progress: &dyn Progress,
) -> Result<VerifyReport> {
    let object = object_name(name);
    let manifest_name = Manifest::name_for(object);
    let expectation = match store.head(&manifest_name).await? {
        Some(_) => {
            let bytes = store.get_small(&manifest_name).await?;
            VerifyExpectation::from_manifest(&Manifest::from_json(&manifest_name, &bytes)?)
        }
        None => VerifyExpectation::default(),
    };
    verify_object(store, object, &expectation, identities, progress).await
}

/// What `delete` removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeleteReport {
    /// Names removed, manifest first.
    pub deleted: Vec<String>,
}

/// Deletes a backup: the manifest first (so it stops counting as a backup at once), then the
/// object. Naming something that is not there is an error.
pub async fn delete_backup(store: &Store, name: &str) -> Result<DeleteReport> {
    let object = object_name(name);
    let manifest_name = Manifest::name_for(object);
    let manifest = store.head(&manifest_name).await?;
    let data = store.head(object).await?;
    if manifest.is_none() && data.is_none() {
        return Err(etcd_store::StoreError::NotFound {
            store: store.url().to_string(),
            name: object.to_string(),
        }
        .into());
    }
    let mut deleted = Vec::new();
    if manifest.is_some() {
        store.delete(&manifest_name).await?;
        deleted.push(manifest_name);
    }
    if data.is_some() {
        store.delete(object).await?;
        deleted.push(object.to_string());
    }
    Ok(DeleteReport { deleted })
}

/// One backup's fate in a prune.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PruneEntry {
    /// The backup object.
    pub object: String,
    /// When it was taken.
    pub created_at: DateTime<Utc>,
    /// Rules that keep it; empty when deleted.
    pub kept_by: Vec<String>,
}

/// What a prune did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PruneReport {
    /// The store's URL.
    pub store: String,
    /// Whether nothing was deleted because it was a dry run.
    pub dry_run: bool,
    /// Backups kept, newest first.
    pub kept: Vec<PruneEntry>,
    /// Backups deleted (or to delete), newest first.
    pub deleted: Vec<PruneEntry>,
    /// Orphan objects older than the grace period, deleted (or to delete).
    pub orphans_deleted: Vec<String>,
}

/// Deletes the backups no rule keeps, and orphans older than `orphan_grace`.
pub async fn prune_backups(
    store: &Store,
    policy: &RetentionPolicy,
    orphan_grace: Duration,
    dry_run: bool,
    now: DateTime<Utc>,
) -> Result<PruneReport> {
    let catalog = list_backups(store).await?;
    let items: Vec<RetentionItem> = catalog
        .backups
        .iter()
        .map(|b| RetentionItem {
            name: b.object.clone(),
            created_at: b.manifest.created_at,
            complete: b.complete,
        })
        .collect();
    let decisions = apply_retention(policy, &items, now)?;
    let mut kept = Vec::new();
    let mut deleted = Vec::new();
    for decision in decisions {
        let created_at = catalog
            .backups
            .iter()
            .find(|b| b.object == decision.name)
            .map(|b| b.manifest.created_at)
            .unwrap_or(now);
        let entry = PruneEntry {
            object: decision.name,
            created_at,
            kept_by: decision.kept_by,
        };
        if entry.kept_by.is_empty() {
            deleted.push(entry);
        } else {
            kept.push(entry);
        }
    }
    let orphans_deleted: Vec<String> = catalog
        .orphans
        .iter()
        .filter(|o| {
            DateTime::parse_from_rfc3339(&o.last_modified)
                .map(|t| {
                    now.signed_duration_since(t.with_timezone(&Utc))
                        .to_std()
                        .is_ok_and(|age| age > orphan_grace)
                })
                .unwrap_or(false)
        })
        .map(|o| o.name.clone())
        .collect();
    if !dry_run {
        for entry in &deleted {
            delete_backup(store, &entry.object).await?;
        }
        for orphan in &orphans_deleted {
            store.delete(orphan).await?;
        }
    }
    Ok(PruneReport {
        store: catalog.store,
        dry_run,
        kept,
        deleted,
        orphans_deleted,
    })
}

#[cfg(test)]
mod tests {
    use super::is_backup_object;

    #[test]
    fn encrypted_objects_are_backup_objects_too() {
        for name in ["a.db", "a.db.zst", "a.db.age", "a.db.zst.age"] {
            assert!(is_backup_object(name), "{name}");
        }
        for name in ["a.db.zst.manifest.json", "a.age", "a.txt"] {
            assert!(!is_backup_object(name), "{name}");
        }
    }
}
