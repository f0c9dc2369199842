//! A local copy of what one restore reads, for a host that must not reach the store: the
//! backup a restore would choose (one backup by its URL, the newest complete one of a store,
//! or every full backup a point-in-time restore may start from, each with its chain of delta
//! segments) is copied into a local directory laid out as a file store, manifests included,
//! each object checked against its manifest on the way ([`copy_backups`]). A restore of the
//! copy (`snapshot` as returned, the same `to_revision`/`to_time`) restores what a restore
//! of the store would. A repeated copy into the same directory copies nothing.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use etcd_snapshot::{
    CopyReport, PointInTime, Progress, copy_backups, list_backups, plan_candidates,
    split_backup_url,
};
use etcd_store::split_object_url;
use serde::{Deserialize, Serialize};

use super::restore::{point_in_time, rfc3339};
use super::settings::StoreSettings;
use crate::error::{Error, Result};

/// What to copy for a restore, and where.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct LocalCopyRequest {
    /// One backup's URL (the store's URL, then the object's name).
    pub snapshot: Option<String>,
    /// A store: its newest complete backup, or what a restore to `to_revision`/`to_time`
    /// reads.
    pub store: Option<String>,
    /// Point in time: what a restore to this revision reads.
    pub to_revision: Option<i64>,
    /// Point in time: what a restore to this time reads.
    #[serde(default, deserialize_with = "rfc3339")]
    pub to_time: Option<DateTime<Utc>>,
    /// The local directory to copy into (created when missing).
    pub dest: PathBuf,
    /// Say what would be copied, copy nothing.
    #[serde(skip)]
    pub dry_run: bool,
    /// How the store is reached.
    #[serde(flatten)]
    pub settings: StoreSettings,
}

/// What [`copy_for_restore`] did.
#[derive(Debug, Clone, Serialize)]
pub struct LocalCopy {
    /// What a restore of the copy is given as its `snapshot`: the copied backup's path, or
    /// (point in time) the directory, a store to give with the same `to_revision`/`to_time`.
    pub snapshot: String,
    /// The full backups copied (object names, as in the store and under `dest`).
    pub backups: Vec<String>,
    /// Whether anything was copied (or would be, in a dry run); the module's `changed`.
    #[serde(skip)]
    pub changed: bool,
    /// The copy, backup by backup and segment by segment.
    pub report: CopyReport,
}

impl LocalCopyRequest {
    /// The store to read and its backups to copy (`None`: its newest complete one).
    fn source(&self) -> Result<(String, Option<PointInTime>, Option<String>)> {
        let point = point_in_time(self.to_revision, self.to_time)?;
        match (&self.snapshot, &self.store, point) {
            (Some(_), Some(_), _) | (None, None, _) => Err(Error::invalid(
                "give exactly one of snapshot (one backup's URL) and store (a store URL)",
                None,
            )),
            (Some(_), None, Some(_)) => Err(Error::invalid(
                "to_revision and to_time need store (the store backup run writes to), not snapshot",
                None,
            )),
            (Some(url), None, None) => {
                // The store above the cluster folder: its catalog lists the backup.
                let (store, object) =
                    split_backup_url(url).unwrap_or_else(|| split_object_url(url));
                Ok((store, None, Some(object)))
            }
            (None, Some(store), point) => Ok((store.clone(), point, None)),
        }
    }
}

/// Copies what a restore of the request's source reads into `dest`, verified; see the
/// module's documentation. A store without a complete backup, or a point no chain reaches,
/// is refused before anything is copied.
pub async fn copy_for_restore(
    request: &LocalCopyRequest,
    progress: &dyn Progress,
) -> Result<LocalCopy> {
    let (store_url, point, object) = request.source()?;
    let dest_url = request.dest.display().to_string();
    if dest_url.contains("://") || !request.dest.is_absolute() {
        return Err(Error::invalid(
            format!("dest must be an absolute local directory, not '{dest_url}'"),
            None,
        ));
    }
    let source = request.settings.open(&store_url)?;
    let destination = request.settings.open(&dest_url)?;
    let backups = match (point, object) {
        (Some(point), _) => {
            // Every candidate: which one restores the point is known only once its db is read.
            let mut fulls: Vec<String> = plan_candidates(&source, point)
                .await?
                .into_iter()
                .map(|plan| plan.full)
                .collect();
            fulls.dedup();
            fulls
        }
        (None, Some(object)) => vec![object],
        (None, None) => {
            let catalog = list_backups(&source).await?;
            let newest = catalog
                .backups
                .iter()
                .filter(|b| b.complete)
                .max_by_key(|b| b.manifest.created_at)
                .ok_or_else(|| {
                    Error::invalid(format!("{} holds no complete backup", source.url()), None)
                })?;
            vec![newest.object.clone()]
        }
    };
    let copy = etcd_snapshot::CopyRequest {
        objects: backups.clone(),
        dry_run: request.dry_run,
        read_back: false,
    };
    let report = copy_backups(&source, &destination, &copy, progress).await?;
    let snapshot = if point.is_some() {
        dest_url
    } else {
        request.dest.join(&backups[0]).display().to_string()
    };
    Ok(LocalCopy {
        snapshot,
        backups,
        changed: report.copied > 0 || report.segments_copied > 0,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(args: serde_json::Value) -> LocalCopyRequest {
        let mut all = serde_json::json!({"dest": "/var/tmp/copy"});
        all.as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        serde_json::from_value(all).unwrap()
    }

    #[test]
    fn the_source_is_one_backup_a_store_or_a_point_of_a_store() {
        let one = request(serde_json::json!({"snapshot": "s3://b/p/etcd-1/x.db.zst"}));
        assert_eq!(
            one.source().unwrap(),
            (
                "s3://b/p/etcd-1".to_string(),
                None,
                Some("x.db.zst".to_string())
            )
        );
        let newest = request(serde_json::json!({"store": "s3://b/p"}));
        assert_eq!(
            newest.source().unwrap(),
            ("s3://b/p".to_string(), None, None)
        );
        let point = request(serde_json::json!({"store": "s3://b/p", "to_revision": 7}));
        assert_eq!(
            point.source().unwrap(),
            ("s3://b/p".to_string(), Some(PointInTime::Revision(7)), None)
        );
    }

    #[test]
    fn ambiguous_or_missing_sources_are_refused_in_option_names() {
        for (args, says) in [
            (serde_json::json!({}), "give exactly one of snapshot"),
            (
                serde_json::json!({"snapshot": "s3://b/x", "store": "s3://b"}),
                "give exactly one of snapshot",
            ),
            (
                serde_json::json!({"snapshot": "s3://b/x", "to_revision": 3}),
                "need store",
            ),
            (
                serde_json::json!({"store": "s3://b", "to_revision": 3, "to_time": "2026-11-30T02:15:00Z"}),
                "at most one of to_revision and to_time",
            ),
        ] {
            let err = request(args.clone()).source().unwrap_err().to_string();
            assert!(err.contains(says), "{args}: {err}");
        }
    }

    #[tokio::test]
    async fn a_relative_or_url_dest_is_refused() {
        for dest in ["relative/dir", "s3://b/copy"] {
            let mut bad = request(serde_json::json!({"store": "/var/backups/none"}));
            bad.dest = PathBuf::from(dest);
            let err = copy_for_restore(&bad, &etcd_snapshot::NoProgress)
                .await
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("dest must be an absolute local directory"),
                "{err}"
            );
        }
    }
}
