//! Where a restarted `backup run` picks up: the newest chain of its cluster in the store.

use chrono::{DateTime, Utc};
use etcd_core::MemberId;
use etcd_store::Store;
use tokio::time::Instant;

use super::history::rewound;
use super::segment::ChainPosition;
use crate::catalog::{BackupEntry, list_backups};
use crate::error::Result;

/// What an earlier run left in the store for this cluster.
pub(super) enum Resume {
    /// No full backup of this cluster: start with one.
    Nothing,
    /// The newest chain is unbroken: continue it (from its last published revision).
    Chain {
        /// Where it stands.
        chain: ChainPosition,
        /// The member its full backup came from.
        endpoint: String,
        /// When the next full backup is due (now, when its full backup is older than the
        /// interval: it is taken while the chain catches up, overlapping it).
        full_due: Instant,
        /// When its full backup was completed.
        full_at: DateTime<Utc>,
    },
    /// The newest chain cannot be continued: the revisions after `covered_revision` are a
    /// gap until a new full backup.
    Broken {
        /// Its full backup.
        base: String,
        /// It restores up to here.
        covered_revision: i64,
        /// What breaks it.
        reason: String,
    },
}

/// The chain to continue, of `fulls` (newest first): the newest, unless it has no segment
/// yet and the one before has a chain. Then the earlier run was stopped during the switch to
/// the newest full backup, before its first segment, and the earlier chain may not reach the
/// revisions the newest full backup holds: that chain is continued (to now, and a new full
/// backup overlaps it), so no revision between the two is left out.
fn continued<'a>(fulls: &[&'a BackupEntry]) -> Option<&'a BackupEntry> {
    let newest = *fulls.first()?;
    match fulls.get(1) {
        Some(earlier) if newest.deltas.is_empty() && earlier.chain.is_some() => Some(*earlier),
        _ => Some(newest),
    }
}

/// `fulls` without the compacted backups (`snapshot compact`) whose chain is still in the
/// store: that chain goes on (it may reach further than its compacted copy), and a run must
/// never start writing segments after a copy while the original chain grows. A compacted
/// backup whose chain was pruned is an ordinary full backup and may be continued.
fn without_compacted_copies(fulls: Vec<&BackupEntry>) -> Vec<&BackupEntry> {
    let present = |object: &str| fulls.iter().any(|b| b.object == object);
    fulls
        .iter()
        .copied()
        .filter(|b| {
            b.manifest
                .compacted_from
                .as_ref()
                .is_none_or(|from| !present(&from.full_backup))
        })
        .collect()
}

/// The newest chain of `cluster` in `store`, continued whatever its full backup's age: the
/// watch resumes after its last published revision, so the changes made while nothing ran
/// are in it (or, if history was compacted meanwhile, the watch reports a gap). A chain with
/// a break (a missing or repeated segment), or one that reaches past `cluster_revision` (the
/// cluster's revision now: it was rolled back), cannot be continued.
pub(super) async fn resumable_chain(
    store: &Store,
    cluster: MemberId,
    full_every: std::time::Duration,
    cluster_revision: i64,
) -> Result<Resume> {
    let catalog = list_backups(store).await?;
    let mut fulls: Vec<&BackupEntry> = catalog
        .backups
        .iter()
        .filter(|b| b.complete && b.manifest.cluster_id == cluster)
        .collect();
    fulls.sort_by_key(|b| std::cmp::Reverse((b.manifest.created_at, b.manifest.revision)));
    let fulls = without_compacted_copies(fulls);
    let Some(newest) = continued(&fulls) else {
        return Ok(Resume::Nothing);
    };
    let (covered_revision, next_sequence) = match &newest.chain {
        None => (newest.manifest.revision, 1),
        Some(chain) if chain.continuous && newest.deltas.iter().all(|d| d.complete) => (
            chain.to_revision,
            newest
                .deltas
                .iter()
                .map(|d| d.manifest.sequence)
                .max()
                .unwrap_or(0)
                + 1,
        ),
        Some(chain) => {
            return Ok(Resume::Broken {
                base: newest.object.clone(),
                covered_revision: chain.to_revision,
                reason: format!(
                    "the chain left by an earlier run is broken and cannot be continued: {}",
                    if chain.problems.is_empty() {
                        "a segment is incomplete".to_string()
                    } else {
                        chain.problems.join("; ")
                    }
                ),
            });
        }
    };
    // The cluster went back below what the chain holds (restored from an older backup with
    // the same ID): its new history must not continue this chain.
    if let Some(reason) = rewound(cluster_revision, covered_revision) {
        return Ok(Resume::Broken {
            base: newest.object.clone(),
            covered_revision,
            reason,
        });
    }
    let age = (Utc::now() - newest.manifest.created_at)
        .to_std()
        .unwrap_or_default();
    let left = full_every.checked_sub(age).unwrap_or_default();
    Ok(Resume::Chain {
        chain: ChainPosition {
            base: newest.object.clone(),
            highest_time: crate::manifest::CompactedFrom::highest_of(
                &newest.manifest,
                newest.deltas.iter().map(|d| &d.manifest),
            )
            .time,
            base_revision: newest.manifest.revision,
            cluster_id: newest.manifest.cluster_id,
            next_sequence,
            covered_revision,
        },
        endpoint: newest.manifest.endpoint.clone(),
        full_due: Instant::now() + left,
        full_at: newest.manifest.completed_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::test_fixtures::full_with_segments as full;

    #[test]
    fn a_new_full_backup_without_segments_continues_the_chain_before_it() {
        let old = full(0, 100, 3);
        let switched = full(10, 150, 0);
        // Stopped during the switch, before the new full backup's first segment: the old
        // chain goes on (it may not reach what the new full backup holds).
        assert_eq!(
            continued(&[&switched, &old]).map(|b| b.manifest.revision),
            Some(100)
        );
        // Once the new chain has a segment, it is the one continued.
        let started = full(10, 150, 1);
        assert_eq!(
            continued(&[&started, &old]).map(|b| b.manifest.revision),
            Some(150)
        );
        // A first full backup alone is continued.
        assert_eq!(
            continued(&[&switched]).map(|b| b.manifest.revision),
            Some(150)
        );
        assert!(continued(&[]).is_none());
    }

    #[test]
    fn a_compacted_copy_is_not_continued_while_its_chain_is_in_the_store() {
        let chain = full(0, 100, 3);
        let mut copy = full(5, 130, 0);
        copy.manifest.compacted_from = Some(crate::manifest::CompactedFrom {
            full_backup: chain.object.clone(),
            full_revision: 100,
            last_sequence: 3,
            to_revision: 130,
            to_time: copy.manifest.created_at,
            highest_stamp: None,
        });
        let kept = without_compacted_copies(vec![&copy, &chain]);
        assert_eq!(
            kept.iter().map(|b| b.object.as_str()).collect::<Vec<_>>(),
            [chain.object.as_str()]
        );
        assert_eq!(
            continued(&kept).map(|b| b.manifest.revision),
            Some(100),
            "the chain itself goes on"
        );
        // Once retention dropped the chain, the copy is a full backup like any other.
        let alone = without_compacted_copies(vec![&copy]);
        assert_eq!(continued(&alone).map(|b| b.manifest.revision), Some(130));
    }
}
