//! OpenShift-compatible backups. Beside our own backup object and manifest, the pair that
//! OpenShift's `cluster-backup.sh` writes and its `cluster-restore.sh` reads, in a directory
//! of the host: `snapshot_<time>.db` (etcd's snapshot, with its SHA-256 trailer) and
//! `static_kuberesources_<time>.tar.gz` (the newest `static-pod-resources` revision of
//! kube-apiserver, kube-controller-manager, kube-scheduler and etcd, paths relative to
//! `/etc/kubernetes`, which carry the encryption-at-rest keys). `<time>` is the backup's
//! creation time in the host's local time, formatted as `date "+%F_%H%M%S"` does.
//!
//! The snapshot is read back from the store and checked against the manifest's SHA-256, so
//! the pair holds exactly what was backed up. Both files are written under temporary names,
//! flushed to disk and renamed, mode 0600: nothing half-written ever has the final name.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use etcd_common::{Hint, InvalidOption};

use chrono::Local;
use etcd_snapshot::{Manifest, open_snapshot_object};
use etcd_store::Store;
use flate2::Compression as GzLevel;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};

use crate::error::{ENCRYPT_TO, K8sError, OPENSHIFT_BACKUP_DIR, Result};
use crate::platform::rooted;

/// Where OpenShift keeps its static pods' resources (one `<pod>-<revision>` dir each).
pub const STATIC_POD_RESOURCES_DIR: &str = "/etc/kubernetes/static-pod-resources";
/// The static pods whose newest resources `cluster-backup.sh` archives.
pub const OPENSHIFT_BACKUP_PODS: &[&str] = &[
    "kube-apiserver-pod",
    "kube-controller-manager-pod",
    "kube-scheduler-pod",
    "etcd-pod",
];

/// Where to write the pair.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct OpenshiftBackupRequest {
    /// The directory for the pair (created with mode 0700 when missing).
    pub dir: PathBuf,
    /// The directory standing for `/` on this host (default `/`; tests use fixture trees).
    pub root: Option<PathBuf>,
}

impl OpenshiftBackupRequest {
    /// Checks, before any snapshot is taken, that the pair can be written: the backup is
    /// not encrypted (cluster-restore.sh reads a plain snapshot) and this host has the static
    /// pod resources to archive.
    pub fn check(&self, encrypted: bool) -> Result<()> {
        if encrypted {
            return Err(not_with_encryption());
        }
        latest_static_pod_resources(self.root.as_deref().unwrap_or(Path::new("/")))?;
        Ok(())
    }
}

fn not_with_encryption() -> K8sError {
    K8sError::InvalidRequest {
        what: "OpenShift backup dir",
        reason: "it writes the plain snapshot cluster-restore.sh reads, so it cannot be combined with encryption; keep the encrypted backup in the store and the pair on the control-plane host, with two saves".into(),
        hint: Hint::any_of(&[ENCRYPT_TO, OPENSHIFT_BACKUP_DIR]),
    }
}

/// The pair written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenshiftBackupResult {
    /// `snapshot_<time>.db`.
    pub snapshot: PathBuf,
    /// `static_kuberesources_<time>.tar.gz`.
    pub static_kuberesources: PathBuf,
    /// The resource dirs archived (`static-pod-resources/kube-apiserver-pod-12`, ...).
    pub resource_dirs: Vec<String>,
    /// SHA-256 of the snapshot's db (without the trailer), equal to the manifest's.
    pub db_sha256: String,
}

fn io_error(operation: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> K8sError {
    let path = path.display().to_string();
    move |source| K8sError::Io {
        operation,
        path,
        source,
    }
}

/// The newest revision dir of each of [`OPENSHIFT_BACKUP_PODS`] under the host's
/// `static-pod-resources` (highest revision number), as `(name in the archive, path)`.
/// Fails, naming the missing pod, when one has none: this is then no OpenShift
/// control-plane node. Call it before taking a snapshot, to fail before any work.
pub fn latest_static_pod_resources(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let base = rooted(root, Path::new(STATIC_POD_RESOURCES_DIR));
    let entries: Vec<String> = match std::fs::read_dir(&base) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => {
            return Err(K8sError::BadConfig {
                path: base.display().to_string(),
                reason: format!(
                    "cannot read OpenShift's static pod resources ({e}); OpenShift's backup pair can be written on an OpenShift control-plane node only"
                ),
            });
        }
    };
    OPENSHIFT_BACKUP_PODS
        .iter()
        .map(|pod| {
            let newest = entries
                .iter()
                .filter_map(|name| {
                    let revision = name.strip_prefix(pod)?.strip_prefix('-')?;
                    revision.parse::<u64>().ok().map(|r| (r, name))
                })
                .max_by_key(|(revision, _)| *revision)
                .map(|(_, name)| name.clone());
            newest
                .map(|name| (format!("static-pod-resources/{name}"), base.join(&name)))
                .ok_or_else(|| K8sError::BadConfig {
                    path: base.display().to_string(),
                    reason: format!(
                        "no {pod}-<revision> dir: not an OpenShift control-plane node, or its static pods were never installed; cluster-restore.sh needs all of {}",
                        OPENSHIFT_BACKUP_PODS.join(", ")
                    ),
                })
        })
        .collect()
}

/// Writes the pair for the backup `manifest` (in `store`) into `request.dir`.
pub async fn write_openshift_backup(
    store: &Store,
    manifest: &Manifest,
    request: &OpenshiftBackupRequest,
) -> Result<OpenshiftBackupResult> {
    if manifest.object.ends_with(".age") {
        return Err(not_with_encryption());
    }
    let root = request.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    let resources = latest_static_pod_resources(&root)?;
    let dir = &request.dir;
    etcd_common::private::create_dir_all(dir).map_err(io_error("create", dir))?;
    let time = manifest
        .created_at
        .with_timezone(&Local)
        .format("%F_%H%M%S")
        .to_string();
    let snapshot = dir.join(format!("snapshot_{time}.db"));
    let archive = dir.join(format!("static_kuberesources_{time}.tar.gz"));
    for path in [&snapshot, &archive] {
        if path.symlink_metadata().is_ok() {
            return Err(K8sError::from(InvalidOption::new(
                OPENSHIFT_BACKUP_DIR,
                format!("{} already exists; it is never overwritten", path.display()),
            )));
        }
    }
    let partial = |path: &Path| {
        path.with_file_name(format!(
            ".{}.partial",
            path.file_name().unwrap_or_default().to_string_lossy()
        ))
    };
    let (snapshot_partial, archive_partial) = (partial(&snapshot), partial(&archive));
    let written = async {
        write_archive(&archive_partial, &resources)?;
        let db_sha256 = write_snapshot(store, manifest, &snapshot_partial, dir).await?;
        std::fs::rename(&archive_partial, &archive).map_err(io_error("rename", &archive))?;
        std::fs::rename(&snapshot_partial, &snapshot).map_err(io_error("rename", &snapshot))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_error("sync", dir))?;
        Ok::<_, K8sError>(db_sha256)
    }
    .await;
    match written {
        Ok(db_sha256) => Ok(OpenshiftBackupResult {
            snapshot,
            static_kuberesources: archive,
            resource_dirs: resources.into_iter().map(|(name, _)| name).collect(),
            db_sha256,
        }),
        Err(e) => {
            // Best effort: the error that matters is the one that stopped the work.
            let _ = std::fs::remove_file(&archive_partial);
            let _ = std::fs::remove_file(&snapshot_partial);
            Err(K8sError::BadConfig {
                path: dir.display().to_string(),
                reason: format!(
                    "backup {} was saved, but the OpenShift pair was not written: {e}",
                    manifest.object
                ),
            })
        }
    }
}

fn create_private(path: &Path) -> Result<File> {
    etcd_common::private::create_new_file(path).map_err(io_error("create", path))
}

/// `tar -cpzf` of the resource dirs, with paths relative to `/etc/kubernetes`, symlinks kept
/// as symlinks, owners and modes kept.
fn write_archive(path: &Path, resources: &[(String, PathBuf)]) -> Result<()> {
    let file = create_private(path)?;
    let mut builder = tar::Builder::new(GzEncoder::new(file, GzLevel::default()));
    builder.follow_symlinks(false);
    for (name, source) in resources {
        builder
            .append_dir_all(name, source)
            .map_err(io_error("archive", source))?;
    }
    let file = builder
        .into_inner()
        .and_then(GzEncoder::finish)
        .map_err(io_error("write", path))?;
    file.sync_all().map_err(io_error("sync", path))
}

/// Copies the backup's db and trailer out of the store into `path`, after checking the db's
/// SHA-256 (computed while it was downloaded) against the manifest. Returns that SHA-256.
async fn write_snapshot(
    store: &Store,
    manifest: &Manifest,
    path: &Path,
    spool_dir: &Path,
) -> Result<String> {
    let opened = open_snapshot_object(store, &manifest.object, Some(spool_dir)).await?;
    let trailer = opened.trailer().ok_or_else(|| K8sError::NotEtcdData {
        name: manifest.object.clone(),
        reason: "the snapshot has no SHA-256 trailer, which cluster-restore.sh's etcdctl needs"
            .into(),
    })?;
    let sha = opened.db_sha256().map_err(io_error("read", spool_dir))?;
    if sha != manifest.db_sha256 {
        return Err(K8sError::NotEtcdData {
            name: manifest.object.clone(),
            reason: format!(
                "the stored db's SHA-256 is {sha}, the manifest says {}; the backup is damaged",
                manifest.db_sha256
            ),
        });
    }
    let mut db = opened
        .db()
        .file()
        .try_clone()
        .map_err(io_error("read", spool_dir))?;
    db.seek(SeekFrom::Start(0))
        .map_err(io_error("read", spool_dir))?;
    let mut out = create_private(path)?;
    std::io::copy(&mut db.take(opened.db_size()), &mut out).map_err(io_error("write", path))?;
    out.write_all(&trailer).map_err(io_error("write", path))?;
    out.sync_all().map_err(io_error("sync", path))?;
    Ok(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_revision_of_each_pod_is_chosen_and_a_missing_one_named() {
        let root = tempfile::tempdir().unwrap();
        let base = rooted(root.path(), Path::new(STATIC_POD_RESOURCES_DIR));
        for dir in [
            "kube-apiserver-pod-9",
            "kube-apiserver-pod-12",
            "kube-apiserver-pod-x",
            "kube-controller-manager-pod-4",
            "kube-scheduler-pod-3",
            "etcd-certs",
        ] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        let err = latest_static_pod_resources(root.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no etcd-pod-<revision> dir"), "{err}");
        std::fs::create_dir_all(base.join("etcd-pod-2")).unwrap();
        let found: Vec<String> = latest_static_pod_resources(root.path())
            .unwrap()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            found,
            [
                "static-pod-resources/kube-apiserver-pod-12",
                "static-pod-resources/kube-controller-manager-pod-4",
                "static-pod-resources/kube-scheduler-pod-3",
                "static-pod-resources/etcd-pod-2",
            ]
        );
    }
}
