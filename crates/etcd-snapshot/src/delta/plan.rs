//! Choosing what a point-in-time restore reads: the newest full backup at or before the point
//! whose chain reaches it, and the segments up to it.

use chrono::{DateTime, Utc};
use etcd_store::Store;
use serde::Serialize;

use super::manifest::DeltaManifest;
use super::replay::PointInTime;
use crate::catalog::{BackupEntry, list_backups};
use crate::error::{Result, SnapshotError};

/// What a point-in-time restore will read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PitrPlan {
    /// The store's URL.
    pub store: String,
    /// The point asked for.
    pub point: PointInTime,
    /// The full backup restored.
    pub full: String,
    /// Its revision.
    pub full_revision: i64,
    /// When it was taken.
    pub full_created_at: DateTime<Utc>,
    /// The segments replayed after it, in order (names as listed in the store).
    pub segments: Vec<String>,
    /// How far its chain reaches (revision).
    pub chain_to_revision: i64,
    /// How far its chain reaches (time), when it has segments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain_to_time: Option<DateTime<Utc>>,
    /// The segments' manifests, in the same order.
    #[serde(skip)]
    pub segment_manifests: Vec<DeltaManifest>,
}

/// One chain a restore can reach: from a full backup to where its segments end.
fn reach(entry: &BackupEntry) -> (i64, Option<DateTime<Utc>>, &[crate::catalog::DeltaEntry]) {
    match &entry.chain {
        Some(chain) => (
            chain.to_revision,
            chain.to_time,
            &entry.deltas[..chain.covered_segments.min(entry.deltas.len())],
        ),
        None => (entry.manifest.revision, None, &entry.deltas[..0]),
    }
}

fn ranges(candidates: &[&BackupEntry]) -> String {
    let mut out: Vec<String> = candidates
        .iter()
        .rev()
        .map(|entry| {
            let (to_revision, to_time, _) = reach(entry);
            let start = entry.manifest.created_at.format("%Y-%m-%dT%H:%M:%SZ");
            match to_time {
                Some(end) => format!(
                    "revisions {}..={to_revision} ({start} to {})",
                    entry.manifest.revision,
                    end.format("%Y-%m-%dT%H:%M:%SZ")
                ),
                None => format!("revision {} ({start})", entry.manifest.revision),
            }
        })
        .collect();
    out.dedup();
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}

/// Picks the full backup and segments that reach `point`, from the complete backups in
/// `store` (one cluster's: a store holding several clusters' backups must be given with the
/// cluster's folder). Refuses, naming the ranges that can be restored, when no chain reaches
/// the point.
pub async fn plan_point_in_time(store: &Store, point: PointInTime) -> Result<PitrPlan> {
    let catalog = list_backups(store).await?;
    let complete: Vec<&BackupEntry> = catalog.backups.iter().filter(|b| b.complete).collect();
    let mut clusters: Vec<String> = complete
        .iter()
        .map(|b| b.manifest.cluster_id.to_string())
        .collect();
    clusters.sort();
    clusters.dedup();
    let invalid =
        |option: &'static str, reason: String| SnapshotError::InvalidOption { option, reason };
    if clusters.len() > 1 {
        return Err(invalid(
            "STORE",
            format!(
                "{} holds backups of {} clusters ({}); give the cluster's folder, e.g. {}/etcd-{}",
                store.url(),
                clusters.len(),
                clusters.join(", "),
                store.url().trim_end_matches('/'),
                clusters[0]
            ),
        ));
    }
    let option = match point {
        PointInTime::Revision(_) => "--to-revision",
        PointInTime::Time(_) => "--to-time",
    };
    // Newest first: by revision for a revision, by time for a time.
    let mut candidates: Vec<&BackupEntry> = complete
        .iter()
        .copied()
        .filter(|b| match point {
            PointInTime::Revision(r) => b.manifest.revision <= r,
            PointInTime::Time(t) => b.manifest.created_at <= t,
        })
        .collect();
    candidates.sort_by(|a, b| {
        b.manifest
            .revision
            .cmp(&a.manifest.revision)
            .then(b.manifest.created_at.cmp(&a.manifest.created_at))
    });
    let Some(full) = candidates.first().copied() else {
        let mut all = complete.clone();
        all.sort_by_key(|b| std::cmp::Reverse(b.manifest.revision));
        return Err(invalid(
            option,
            format!(
                "no complete full backup in {} is at or before it; what can be restored: {}",
                store.url(),
                ranges(&all)
            ),
        ));
    };
    let (to_revision, to_time, deltas) = reach(full);
    let reached = match point {
        PointInTime::Revision(r) => r <= to_revision,
        PointInTime::Time(t) => {
            to_time.is_some_and(|end| t <= end) || t == full.manifest.created_at
        }
    };
    if !reached {
        let newest = complete
            .iter()
            .all(|b| b.manifest.created_at <= full.manifest.created_at);
        let why = if newest {
            "it is after the newest published change".to_string()
        } else {
            "it falls in a gap between chains".to_string()
        };
        let mut all = complete.clone();
        all.sort_by_key(|b| std::cmp::Reverse(b.manifest.revision));
        return Err(invalid(
            option,
            format!(
                "no chain reaches it ({why}); what can be restored: {}",
                ranges(&all)
            ),
        ));
    }
    // Segments without changes add nothing to replay.
    let needed: Vec<&crate::catalog::DeltaEntry> = deltas
        .iter()
        .filter(|d| d.manifest.changes > 0)
        .filter(|d| match point {
            PointInTime::Revision(r) => d.manifest.after_revision < r,
            PointInTime::Time(t) => d.manifest.from_time <= t,
        })
        .collect();
    Ok(PitrPlan {
        store: store.url().to_string(),
        point,
        full: full.object.clone(),
        full_revision: full.manifest.revision,
        full_created_at: full.manifest.created_at,
        segments: needed.iter().map(|d| d.object.clone()).collect(),
        chain_to_revision: to_revision,
        chain_to_time: to_time,
        segment_manifests: needed.into_iter().map(|d| d.manifest.clone()).collect(),
    })
}
