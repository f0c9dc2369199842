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

/// Where a full backup's chain reaches: the revision and time it covers up to.
fn reach_of(entry: &BackupEntry) -> (i64, DateTime<Utc>) {
    let (to_revision, to_time, _) = reach(entry);
    (to_revision, to_time.unwrap_or(entry.manifest.created_at))
}

/// The history each complete full backup belongs to, in `created_at` order: a new history
/// starts when a full backup holds a lower revision than a chain before it had reached by the
/// time it ended (the cluster was restored to an earlier revision and kept its ID). Chains
/// of one history that overlap (the next full backup is taken while a chain goes on) do not
/// count: the earlier chain then reaches past the later backup's start.
fn histories<'a>(complete: &[&'a BackupEntry]) -> Vec<(usize, &'a BackupEntry)> {
    let mut by_time: Vec<&BackupEntry> = complete.to_vec();
    by_time.sort_by_key(|b| (b.manifest.created_at, b.manifest.revision));
    let mut out = Vec::new();
    let mut history = 0;
    let mut current: Vec<&BackupEntry> = Vec::new();
    for entry in by_time {
        // A compacted backup (`snapshot compact`) is its chain's state at the chain's last
        // revision: the same history, never the start of another.
        let rewound = !entry.manifest.is_compacted()
            && current.iter().any(|earlier| {
                let (to_revision, to_time) = reach_of(earlier);
                earlier.manifest.revision > entry.manifest.revision
                    || (to_revision > entry.manifest.revision
                        && to_time < entry.manifest.created_at)
            });
        if rewound {
            history += 1;
            current.clear();
        }
        current.push(entry);
        out.push((history, entry));
    }
    out
}

/// The full backups (with their segments) that may restore `point`, best first, from the
/// complete backups in `store` (one cluster's: a store holding several clusters' backups must
/// be given with the cluster's folder). Which one can be used is known only once its db's own
/// revision is read (a full backup holds at least its manifest's revision, sometimes a little
/// more), so the caller tries them in order. Refuses, naming the ranges that can be restored,
/// when no chain reaches the point, and a revision that two histories reached (the cluster
/// was restored to an earlier revision and kept its ID).
pub async fn plan_candidates(store: &Store, point: PointInTime) -> Result<Vec<PitrPlan>> {
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
        PointInTime::Revision(_) => "to_revision",
        PointInTime::Time(_) => "to_time",
    };
    let mut all = complete.clone();
    all.sort_by_key(|b| std::cmp::Reverse(b.manifest.revision));
    // Reaching the point: at or after the full backup, within its chain.
    let mut reaching: Vec<(usize, &BackupEntry)> = histories(&complete)
        .into_iter()
        .filter(|(_, entry)| {
            let (to_revision, to_time) = reach_of(entry);
            match point {
                PointInTime::Revision(r) => entry.manifest.revision <= r && r <= to_revision,
                PointInTime::Time(t) => entry.manifest.created_at <= t && t <= to_time,
            }
        })
        .collect();
    if reaching.is_empty() {
        let newest = complete.iter().all(|b| match point {
            PointInTime::Revision(r) => reach_of(b).0 < r,
            PointInTime::Time(t) => reach_of(b).1 < t,
        });
        let why = if let Some(broken) = broken_chain(&complete, point) {
            broken
        } else if complete.is_empty() {
            format!("{} holds no complete full backup", store.url())
        } else if newest {
            "it is after the newest published change".to_string()
        } else {
            "no chain reaches it: it is before the oldest full backup or falls in a gap between chains"
                .to_string()
        };
        return Err(invalid(
            option,
            format!("{why}; what can be restored: {}", ranges(&all)),
        ));
    }
    if let PointInTime::Revision(r) = point {
        let mut seen: Vec<usize> = reaching.iter().map(|(h, _)| *h).collect();
        seen.dedup();
        if seen.len() > 1 {
            let later = reaching
                .iter()
                .filter(|(h, _)| *h == seen[seen.len() - 1])
                .map(|(_, e)| e.manifest.created_at)
                .min()
                .unwrap_or_default();
            // Restoring to a time (the option that gets past it) is unambiguous.
            return Err(invalid(
                "to_time",
                format!(
                    "revision {r} was reached twice: the cluster went back to an earlier revision (a restore that kept its ID) before {}; restore to a point in time instead",
                    later.format("%Y-%m-%dT%H:%M:%SZ")
                ),
            ));
        }
    }
    // Newest first: the least to replay.
    reaching.sort_by_key(|(_, e)| std::cmp::Reverse((e.manifest.created_at, e.manifest.revision)));
    Ok(reaching
        .into_iter()
        .map(|(_, full)| plan_for(store, full, point))
        .collect())
}

/// Names the break of a chain whose segments past the break would reach `point`: where the
/// replayable part ends (segment and revision), what is wrong (a missing segment or object,
/// a repeated sequence number) and which segments the break cuts off.
fn broken_chain(complete: &[&BackupEntry], point: PointInTime) -> Option<String> {
    let mut newest_first = complete.to_vec();
    newest_first.sort_by_key(|b| std::cmp::Reverse((b.manifest.created_at, b.manifest.revision)));
    newest_first.into_iter().find_map(|entry| {
        let chain = entry.chain.as_ref().filter(|c| !c.continuous)?;
        let starts = match point {
            PointInTime::Revision(r) => entry.manifest.revision <= r,
            PointInTime::Time(t) => entry.manifest.created_at <= t,
        };
        let cut_off = entry.deltas.get(chain.covered_segments..).unwrap_or_default();
        let reaches = cut_off.iter().any(|d| match point {
            PointInTime::Revision(r) => d.manifest.to_revision >= r,
            PointInTime::Time(t) => d.manifest.to_time >= t,
        });
        if !starts || !reaches {
            return None;
        }
        let replayable = match chain.covered_segments.checked_sub(1).and_then(|i| entry.deltas.get(i)) {
            Some(last) => format!(
                "segment {} is the last one that can be replayed, up to revision {}",
                last.manifest.sequence, chain.to_revision
            ),
            None => format!(
                "no segment can be replayed: the chain stops at the full backup's revision {}",
                chain.to_revision
            ),
        };
        let first = cut_off.first()?;
        let last = cut_off.last()?;
        Some(format!(
            "the chain of {} is broken after revision {} ({replayable}): {}; segments {} to {} (revisions {}..={}) cannot be replayed past the break",
            entry.object,
            chain.to_revision,
            chain.problems.join("; "),
            first.manifest.sequence,
            last.manifest.sequence,
            first.manifest.after_revision + 1,
            last.manifest.to_revision,
        ))
    })
}

fn plan_for(store: &Store, full: &BackupEntry, point: PointInTime) -> PitrPlan {
    let (to_revision, to_time, deltas) = reach(full);
    // Segments without changes add nothing to replay.
    let needed: Vec<&crate::catalog::DeltaEntry> = deltas
        .iter()
        .filter(|d| d.manifest.changes > 0)
        .filter(|d| match point {
            PointInTime::Revision(r) => d.manifest.after_revision < r,
            PointInTime::Time(t) => d.manifest.from_time <= t,
        })
        .collect();
    PitrPlan {
        store: store.url().to_string(),
        point,
        full: full.object.clone(),
        full_revision: full.manifest.revision,
        full_created_at: full.manifest.created_at,
        segments: needed.iter().map(|d| d.object.clone()).collect(),
        chain_to_revision: to_revision,
        chain_to_time: to_time,
        segment_manifests: needed.into_iter().map(|d| d.manifest.clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::test_fixtures::{continuous_chain, full_entry};

    /// A full backup at `minute`, with one segment reaching `(to_revision, to_minute)`.
    fn full(minute: u32, revision: i64, chain_to: Option<(i64, u32)>) -> BackupEntry {
        let mut full = full_entry(minute, revision);
        full.chain = chain_to.map(|(to, to_minute)| continuous_chain(&full, 1, to, to_minute));
        full
    }

    #[test]
    fn overlapping_chains_are_one_history_and_a_rewind_starts_another() {
        // A's chain overlaps B's start (B taken while A went on): one history.
        let a = full(0, 100, Some((260, 11)));
        let b = full(10, 250, Some((400, 20)));
        // C after a restore to revision 180 that kept the cluster ID: a new history.
        let c = full(30, 185, Some((300, 40)));
        let entries = [&a, &b, &c];
        let found: Vec<(usize, i64)> = histories(&entries)
            .into_iter()
            .map(|(h, e)| (h, e.manifest.revision))
            .collect();
        assert_eq!(found, [(0, 100), (0, 250), (1, 185)]);
        // A chain that ended (a gap) before a later full backup: still one history.
        let d = full(0, 100, Some((150, 5)));
        let e = full(10, 170, None);
        let found: Vec<usize> = histories(&[&d, &e]).into_iter().map(|(h, _)| h).collect();
        assert_eq!(found, [0, 0]);
    }

    #[test]
    fn a_compacted_chain_stays_in_its_history() {
        // A's chain caught up to 260 at minute 14, after B (taken at minute 10, its chain at
        // 300 by minute 12); A compacted at its last revision is dated minute 14.
        let a = full(0, 100, Some((260, 14)));
        let b = full(10, 250, Some((300, 12)));
        let mut compacted = full(14, 260, None);
        // Without the mark it would look like a rewind (B had reached 300 before it).
        assert_eq!(
            histories(&[&a, &b, &compacted])
                .into_iter()
                .map(|(h, _)| h)
                .collect::<Vec<_>>(),
            [0, 0, 1]
        );
        compacted.manifest.compacted_from = Some(crate::manifest::CompactedFrom {
            full_backup: a.object.clone(),
            full_revision: 100,
            last_sequence: 1,
            to_revision: 260,
            to_time: compacted.manifest.created_at,
        });
        let found: Vec<(usize, i64)> = histories(&[&a, &b, &compacted])
            .into_iter()
            .map(|(h, e)| (h, e.manifest.revision))
            .collect();
        assert_eq!(found, [(0, 100), (0, 250), (0, 260)]);
    }

    #[tokio::test]
    async fn a_point_past_a_break_names_the_break() {
        use crate::catalog::tests::{local_store, publish_full};
        use crate::delta::publish_segment;
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let full = publish_full(&store, 1, 10).await;
        publish_segment(&store, &full, 10, 1, (10, 15), &[11]).await;
        publish_segment(&store, &full, 10, 3, (20, 25), &[21]).await;
        let refused = plan_candidates(&store, PointInTime::Revision(22))
            .await
            .unwrap_err()
            .to_string();
        assert!(!refused.contains("newest published change"), "{refused}");
        assert!(
            refused.contains(&format!("the chain of {full} is broken after revision 15")),
            "{refused}"
        );
        assert!(
            refused.contains("segment 1 is the last one that can be replayed"),
            "{refused}"
        );
        assert!(refused.contains("segment 2 is missing"), "{refused}");
        assert!(
            refused.contains("segments 3 to 3 (revisions 21..=25)"),
            "{refused}"
        );
        // Past every segment, it still says so.
        let later = plan_candidates(&store, PointInTime::Revision(30))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            later.contains("after the newest published change"),
            "{later}"
        );
    }
}
