//! Choosing what a point-in-time restore reads: the newest full backup at or before the point
//! whose chain reaches it, and the segments up to it.

use chrono::{DateTime, Utc};
use etcd_store::Store;
use serde::Serialize;

use super::manifest::DeltaManifest;
use super::replay::PointInTime;
use crate::catalog::{BackupEntry, list_backups};
use crate::error::{Result, SnapshotError};
use etcd_common::{InvalidOption, OptionId};
use etcd_data::restore::opts;

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
    /// With a time: the latest stamp of the history before this chain's full backup, when
    /// the clock stepped back across it (see [`super::timeline`]).
    #[serde(skip)]
    pub prior_time: Option<DateTime<Utc>>,
    /// With a time: the stamps of the chain's segments after those replayed (`from_time` at
    /// `after_revision`, `to_time` at `to_revision`), which show whether the time was shown
    /// again after a step back.
    #[serde(skip)]
    pub later_stamps: Vec<(i64, DateTime<Utc>)>,
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

/// Where a full backup's chain reaches: the revision it covers up to, and the latest time
/// its stamps show (its last segment's `to_time`, unless the clock stepped back: then the
/// latest of them).
fn reach_of(entry: &BackupEntry) -> (i64, DateTime<Utc>) {
    let (to_revision, to_time, deltas) = reach(entry);
    let latest = deltas
        .iter()
        .flat_map(|d| [d.manifest.from_time, d.manifest.to_time])
        .chain(to_time)
        .chain(
            entry
                .manifest
                .compacted_from
                .as_ref()
                .and_then(|from| from.highest_stamp)
                .map(|h| h.time),
        )
        .fold(entry.manifest.created_at, DateTime::max);
    (to_revision, latest)
}

/// The latest stamp of `entry`'s history before its full backup's revision: the other full
/// backups of `history` below that revision, and their segments' stamps at or below it. A
/// time earlier than this was shown (and passed) before the full backup was taken, so its
/// first showing is in an earlier chain: the clock stepped back.
fn prior_high(entry: &BackupEntry, history: &[&BackupEntry]) -> Option<DateTime<Utc>> {
    let revision = entry.manifest.revision;
    // A compacted copy (dated at its chain's last stamp) keeps its chain's highest stamp when
    // the clock stepped back inside it: the chain may be gone, the evidence is not.
    let compacted = history.iter().filter_map(|e| {
        let from = e.manifest.compacted_from.as_ref()?;
        let highest = from.highest_stamp?;
        (from.full_revision < revision && highest.revision <= revision).then_some(highest.time)
    });
    history
        .iter()
        .filter(|e| e.manifest.revision < revision)
        .flat_map(|e| {
            let (_, _, deltas) = reach(e);
            deltas
                .iter()
                .flat_map(|d| {
                    let m = &d.manifest;
                    [
                        (m.after_revision <= revision).then_some(m.from_time),
                        (m.to_revision <= revision).then_some(m.to_time),
                    ]
                })
                .chain([Some(e.manifest.created_at)])
                .flatten()
                .collect::<Vec<_>>()
        })
        .chain(compacted)
        // The chains `backup run` followed when it took this backup and the ones before it:
        // their latest stamps (the chains themselves may be pruned).
        .chain(
            history
                .iter()
                .chain([&entry])
                .filter(|e| e.manifest.revision <= revision)
                .filter_map(|e| e.manifest.follows.as_ref().map(|f| f.highest_time)),
        )
        .max()
}

/// Whether `later` was taken by `backup run` while it followed `earlier`'s chain unbroken.
/// Only a plausible link counts: `later` holds at least what the followed chain had published
/// when it started (else the cluster went back meanwhile), and `earlier` is the followed full
/// backup or a compacted copy of its chain.
fn follows(later: &BackupEntry, earlier: &BackupEntry) -> bool {
    let Some(link) = later.manifest.follows.as_ref() else {
        return false;
    };
    let named = link.full_backup == earlier.manifest.object
        || earlier
            .manifest
            .compacted_from
            .as_ref()
            .is_some_and(|from| from.full_backup == link.full_backup);
    named
        && later.manifest.revision >= link.covered_revision
        && earlier
            .manifest
            .compacted_from
            .as_ref()
            .map_or(earlier.manifest.revision, |from| from.full_revision)
            <= later.manifest.revision
}

/// The history each complete full backup belongs to, in `created_at` order: a new history
/// starts when a full backup holds a lower revision than a chain before it had reached by the
/// time it ended (the cluster was restored to an earlier revision and kept its ID). Chains
/// of one history that overlap (the next full backup is taken while a chain goes on) do not
/// count: the earlier chain then reaches past the later backup's start. Nor does a pair that
/// [`follows`] links (a clock step dated the later full backup before the earlier one).
fn histories<'a>(complete: &[&'a BackupEntry]) -> Vec<(usize, &'a BackupEntry)> {
    let mut by_time: Vec<&BackupEntry> = complete.to_vec();
    by_time.sort_by_key(|b| (b.manifest.created_at, b.manifest.revision));
    let mut out = Vec::new();
    let mut history = 0;
    let mut current: Vec<&BackupEntry> = Vec::new();
    for entry in by_time {
        // A compacted backup (`snapshot compact`) is its chain's state at the chain's last
        // revision: the same history, never the start of another.
        // A full backup `backup run` took while following the other's chain without a break
        // (`follows`) is of the same history by construction, whatever the dates say (a clock
        // stepped back); without that link, dates and revisions that disagree are a rewind.
        let rewound = !entry.manifest.is_compacted()
            && current.iter().any(|earlier| {
                let (to_revision, to_time) = reach_of(earlier);
                let linked = follows(earlier, entry) || follows(entry, earlier);
                !linked
                    && (earlier.manifest.revision > entry.manifest.revision
                        || (to_revision > entry.manifest.revision
                            && to_time < entry.manifest.created_at))
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
    plan_over(store.url(), &catalog.backups, point)
}

/// [`plan_candidates`] over the `backups` listed in the store at `url`.
fn plan_over(url: &str, backups: &[BackupEntry], point: PointInTime) -> Result<Vec<PitrPlan>> {
    let complete: Vec<&BackupEntry> = backups.iter().filter(|b| b.complete).collect();
    let mut clusters: Vec<String> = complete
        .iter()
        .map(|b| b.manifest.cluster_id.to_string())
        .collect();
    clusters.sort();
    clusters.dedup();
    let invalid =
        |option: OptionId, reason: String| SnapshotError::from(InvalidOption::new(option, reason));
    if clusters.len() > 1 {
        return Err(SnapshotError::from(InvalidOption::input(
            "STORE",
            format!(
                "{} holds backups of {} clusters ({}); give the cluster's folder, e.g. {}/etcd-{}",
                url,
                clusters.len(),
                clusters.join(", "),
                url.trim_end_matches('/'),
                clusters[0]
            ),
        )));
    }
    let option = match point {
        PointInTime::Revision(_) => opts::TO_REVISION,
        PointInTime::Time(_) => opts::TO_TIME,
    };
    let mut all = complete.clone();
    all.sort_by_key(|b| std::cmp::Reverse(b.manifest.revision));
    // Reaching the point: at or after the full backup, within its chain; for a time, one the
    // history's clock had not passed before the full backup (else its first showing is in an
    // earlier chain).
    let by_history = histories(&complete);
    let mut reaching: Vec<(usize, &BackupEntry, Option<DateTime<Utc>>)> = Vec::new();
    for &(history, entry) in &by_history {
        let (to_revision, to_time) = reach_of(entry);
        let same: Vec<&BackupEntry> = by_history
            .iter()
            .filter(|(h, _)| *h == history)
            .map(|(_, e)| *e)
            .collect();
        let prior = prior_high(entry, &same).filter(|p| *p > entry.manifest.created_at);
        let reaches = match point {
            PointInTime::Revision(r) => entry.manifest.revision <= r && r <= to_revision,
            PointInTime::Time(t) => {
                entry.manifest.created_at <= t && t <= to_time && prior.is_none_or(|p| p <= t)
            }
        };
        if reaches {
            reaching.push((history, entry, prior));
        }
    }
    if reaching.is_empty() {
        let newest = complete.iter().all(|b| match point {
            PointInTime::Revision(r) => reach_of(b).0 < r,
            PointInTime::Time(t) => reach_of(b).1 < t,
        });
        let why = if let Some(broken) = broken_chain(&complete, point) {
            broken
        } else if complete.is_empty() {
            format!("{url} holds no complete full backup")
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
        let mut seen: Vec<usize> = reaching.iter().map(|(h, _, _)| *h).collect();
        seen.dedup();
        if seen.len() > 1 {
            let later = reaching
                .iter()
                .filter(|(h, _, _)| *h == seen[seen.len() - 1])
                .map(|(_, e, _)| e.manifest.created_at)
                .min()
                .unwrap_or_default();
            // Restoring to a time (the option that gets past it) is unambiguous.
            return Err(invalid(
                opts::TO_TIME,
                format!(
                    "revision {r} was reached twice: the cluster went back to an earlier revision (a restore that kept its ID) before {}; restore to a point in time instead",
                    later.format("%Y-%m-%dT%H:%M:%SZ")
                ),
            ));
        }
    }
    // Newest first: the least to replay.
    reaching
        .sort_by_key(|(_, e, _)| std::cmp::Reverse((e.manifest.created_at, e.manifest.revision)));
    Ok(reaching
        .into_iter()
        .map(|(_, full, prior)| plan_for(url, full, point, prior))
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

/// The segments a restore of `point` from `full` reads: the chain's prefix up to the point,
/// every segment of it (one without changes is not downloaded, but it is part of the chain
/// the replay checks for holes). For a time, the prefix ends with the segment in which the
/// chain's clock first goes past it (`prior`: the history's latest stamp before the chain).
fn plan_for(
    url: &str,
    full: &BackupEntry,
    point: PointInTime,
    prior: Option<DateTime<Utc>>,
) -> PitrPlan {
    let (to_revision, to_time, deltas) = reach(full);
    let mut needed: Vec<&crate::catalog::DeltaEntry> = Vec::new();
    let mut later: Vec<(i64, DateTime<Utc>)> = Vec::new();
    match point {
        PointInTime::Revision(r) => {
            // A segment starting at `r` holds no change at or before it, but may hold the
            // look at the leases at `r` (its changes past `r` are not replayed).
            needed.extend(deltas.iter().take_while(|d| d.manifest.after_revision <= r));
        }
        PointInTime::Time(t) => {
            let mut high = prior.map_or(full.manifest.created_at, |p| {
                p.max(full.manifest.created_at)
            });
            let mut passed = high > t;
            for d in deltas {
                let m = &d.manifest;
                if !passed && high.max(m.from_time) <= t {
                    needed.push(d);
                    high = high.max(m.from_time).max(m.to_time);
                    passed = high > t;
                } else {
                    passed = true;
                    later.extend([(m.after_revision, m.from_time), (m.to_revision, m.to_time)]);
                }
            }
        }
    }
    PitrPlan {
        store: url.to_string(),
        point,
        full: full.object.clone(),
        full_revision: full.manifest.revision,
        full_created_at: full.manifest.created_at,
        segments: needed.iter().map(|d| d.object.clone()).collect(),
        chain_to_revision: to_revision,
        chain_to_time: to_time,
        segment_manifests: needed.into_iter().map(|d| d.manifest.clone()).collect(),
        prior_time: prior,
        later_stamps: later,
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

    /// `entry` under the object name `object`.
    fn renamed(entry: &mut BackupEntry, object: &str) {
        entry.manifest.object = object.into();
        entry.object = object.into();
    }

    /// Records on `later` that `backup run` took it while following `earlier`'s chain, which
    /// had published up to `covered` and stamped up to `highest_time`.
    fn link(
        later: &mut BackupEntry,
        earlier: &BackupEntry,
        covered: i64,
        highest_time: DateTime<Utc>,
    ) {
        later.manifest.follows = Some(crate::manifest::Follows {
            full_backup: earlier.object.clone(),
            covered_revision: covered,
            highest_time,
        });
    }

    /// A full backup at `minute` (revision `revision`) with one segment of 10 revisions per
    /// `(from, to)` pair of seconds after that minute: the stamps of the chain, in order.
    fn stamped(minute: u32, revision: i64, times: &[(i64, i64)]) -> BackupEntry {
        let mut full = full_entry(minute, revision);
        let start = full.manifest.created_at;
        full.deltas = times
            .iter()
            .enumerate()
            .map(|(i, &(from, to))| {
                let seq = i as u64 + 1;
                let after = revision + 10 * i as i64;
                let mut manifest =
                    crate::delta::manifest::tests::sample(&full.object, seq, after, after + 10);
                manifest.from_time = start + chrono::TimeDelta::seconds(from);
                manifest.to_time = start + chrono::TimeDelta::seconds(to);
                crate::catalog::DeltaEntry {
                    object: manifest.object.clone(),
                    manifest_name: String::new(),
                    complete: true,
                    manifest,
                }
            })
            .collect();
        let last = full.deltas.last().map(|d| d.manifest.clone());
        let mut chain = continuous_chain(&full, times.len(), revision, minute);
        if let Some(last) = last {
            chain.to_revision = last.to_revision;
            chain.to_time = Some(last.to_time);
        }
        full.chain = Some(chain);
        full
    }

    fn at_second(minute: u32, second: i64) -> PointInTime {
        PointInTime::Time(
            crate::delta::test_fixtures::at(minute) + chrono::TimeDelta::seconds(second),
        )
    }

    fn sequences(plan: &PitrPlan) -> Vec<u64> {
        plan.segment_manifests.iter().map(|m| m.sequence).collect()
    }

    #[test]
    fn a_time_plan_is_a_prefix_of_the_chain_whatever_its_stamps_do() {
        // The clock reached 40 s in segment 3, went back 20 s (segment 4 opened at 20 s),
        // and ran on: segments 4 and 5 hold times shown before.
        let chain = stamped(
            0,
            100,
            &[(0, 10), (10, 30), (30, 40), (20, 25), (25, 35), (35, 50)],
        );
        let plan = |second| {
            let plans = plan_over("s", std::slice::from_ref(&chain), at_second(0, second)).unwrap();
            assert_eq!(plans.len(), 1);
            plans.into_iter().next().unwrap()
        };
        // 27 s: shown in segment 2 first. Never 1, 2, 4, 5 (segment 3 skipped: a hole).
        let first = plan(27);
        assert_eq!(sequences(&first), [1, 2]);
        assert!(
            first.later_stamps.contains(&(
                130,
                crate::delta::test_fixtures::at(0) + chrono::TimeDelta::seconds(20)
            )),
            "segment 4's stamps are passed on to name the time shown again: {:?}",
            first.later_stamps
        );
        // 38 s: in segment 3; the running latest stamp (40 s) stops it there.
        assert_eq!(sequences(&plan(38)), [1, 2, 3]);
        // At the latest stamp: the whole chain. Exactly at a stamp: up to the segment it ends.
        assert_eq!(sequences(&plan(50)), [1, 2, 3, 4, 5, 6]);
        assert_eq!(sequences(&plan(10)), [1, 2]);
        // A chain whose clock jumped forward (no stamp between 10 s and 40 s), then back.
        let jumped = stamped(0, 100, &[(0, 10), (40, 45), (15, 20)]);
        let plans = plan_over("s", std::slice::from_ref(&jumped), at_second(0, 20)).unwrap();
        assert_eq!(sequences(&plans[0]), [1]);
        // Before the full backup: refused, naming what can be restored.
        let refused = plan_over("s", std::slice::from_ref(&chain), at_second(0, -5))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("what can be restored"), "{refused}");
        // After the latest stamp: refused.
        let refused = plan_over("s", std::slice::from_ref(&chain), at_second(0, 51))
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("after the newest published change"),
            "{refused}"
        );
        // The latest stamp is not the last segment's: a time between them still plans.
        let ends_early = stamped(0, 100, &[(0, 10), (10, 50), (20, 30)]);
        let plans = plan_over("s", std::slice::from_ref(&ends_early), at_second(0, 40)).unwrap();
        assert_eq!(sequences(&plans[0]), [1, 2]);
    }

    #[test]
    fn a_full_backup_taken_after_a_step_back_gives_way_to_the_chain_that_showed_the_time_first() {
        // A: full at 0 s, segments to 40 s (revision 140); the clock goes back 30 s and B is
        // taken at 15 s (minute 0), at revision 130, while A goes on.
        let a = stamped(0, 100, &[(0, 10), (10, 20), (20, 40), (10, 20)]);
        let mut b = stamped(0, 130, &[(16, 30)]);
        b.manifest.created_at += chrono::TimeDelta::seconds(15);
        renamed(&mut b, "etcd-abc/00-rev130-b.db.zst");
        let backups = [a.clone(), b.clone()];
        // 18 s: B starts before it, but A's clock had shown 40 s by revision 130: A, first.
        let plans = plan_over("s", &backups, at_second(0, 18)).unwrap();
        assert_eq!(
            plans.iter().map(|p| p.full.as_str()).collect::<Vec<_>>(),
            [a.object.as_str()]
        );
        assert_eq!(sequences(&plans[0]), [1, 2]);
        // Only B's stamps reach a time past A's latest (40 s): none here, refused...
        let refused = plan_over("s", &backups, at_second(0, 45))
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("after the newest published change"),
            "{refused}"
        );
        // A compacted copy of A (dated at A's last segment's 20 s, below A's 40 s) is not
        // taken for a time A's clock had passed before the copy's revision.
        let mut copy = full_entry(0, 140);
        copy.manifest.created_at += chrono::TimeDelta::seconds(20);
        copy.manifest.compacted_from = Some(crate::manifest::CompactedFrom {
            full_backup: a.object.clone(),
            full_revision: 100,
            last_sequence: 4,
            to_revision: 140,
            to_time: copy.manifest.created_at,
            highest_stamp: None,
        });
        let plans = plan_over("s", &[a.clone(), copy.clone()], at_second(0, 20)).unwrap();
        assert_eq!(
            plans.iter().map(|p| p.full.as_str()).collect::<Vec<_>>(),
            [a.object.as_str()],
            "the copy would restore 20 s's second showing"
        );
        // ...and B alone (A pruned) restores 18 s from itself.
        let plans = plan_over("s", std::slice::from_ref(&b), at_second(0, 18)).unwrap();
        assert_eq!(plans[0].full, b.object);
        assert_eq!(plans[0].prior_time, None);
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
    fn a_full_backup_that_follows_a_chain_is_of_its_history_whatever_the_clock_says() {
        // The clock stepped back further than B's whole chain lasted: B (revision 78) and
        // its chain (to 107) are dated before A (revision 50), whose chain reached 79. By the
        // dates alone that is a rewind; B's manifest says `backup run` took it while
        // following A's chain unbroken, so it is one history.
        let a = full(5, 50, Some((79, 6)));
        let mut b = full(1, 78, Some((107, 2)));
        renamed(&mut b, "etcd-abc/00-rev78-b.db.zst");
        let split: Vec<usize> = histories(&[&a, &b]).into_iter().map(|(h, _)| h).collect();
        assert_eq!(
            split,
            [0, 1],
            "without the link, the dates make it a rewind"
        );
        link(&mut b, &a, 77, a.manifest.created_at);
        let one: Vec<usize> = histories(&[&a, &b]).into_iter().map(|(h, _)| h).collect();
        assert_eq!(one, [0, 0]);
        let plans = plan_over("s", &[a.clone(), b.clone()], PointInTime::Revision(79));
        assert!(plans.is_ok(), "{:?}", plans.err().map(|e| e.to_string()));
    }

    #[test]
    fn a_full_backup_dated_earlier_by_a_clock_step_back_is_not_a_rewind() {
        // A: full at minute 1 (revision 50), its chain to revision 79 at minute 2. The clock
        // then steps back and B is taken at revision 78 but dated minute 0; its chain reaches
        // 107 at minute 3. One history: nothing was restored, only the clock went back;
        // `backup run` took B while following A's chain (published to 77), and says so.
        // Without that record the dates and revisions disagree, which a restore that kept the
        // cluster ID also shows: then it is taken for a rewind (a refusal, never a silent mix).
        let a = full(1, 50, Some((79, 2)));
        let mut b = full(0, 78, Some((107, 3)));
        renamed(&mut b, "etcd-abc/00-rev78-b.db.zst");
        let unlinked: Vec<usize> = histories(&[&a, &b]).into_iter().map(|(h, _)| h).collect();
        assert_eq!(unlinked, [0, 1]);
        link(&mut b, &a, 77, a.manifest.created_at);
        let found: Vec<(usize, i64)> = histories(&[&a, &b])
            .into_iter()
            .map(|(h, e)| (h, e.manifest.revision))
            .collect();
        assert!(
            found.iter().all(|(h, _)| *h == 0),
            "a clock step is not a rewind: {found:?}"
        );
        // A revision both chains hold is restorable (either chain gives the same state).
        let plans = plan_over("s", &[a.clone(), b.clone()], PointInTime::Revision(79));
        assert!(plans.is_ok(), "{:?}", plans.err().map(|e| e.to_string()));
    }

    #[test]
    fn a_link_recorded_after_the_cluster_went_back_does_not_join_the_histories() {
        // A's chain had published revision 300 when B was taken at revision 120: the
        // cluster was restored meanwhile (kept its ID). B's link does not count.
        let a = full(1, 50, Some((300, 2)));
        let mut b = full(3, 120, Some((160, 4)));
        renamed(&mut b, "etcd-abc/00-rev120-b.db.zst");
        link(&mut b, &a, 300, a.manifest.created_at);
        let split: Vec<usize> = histories(&[&a, &b]).into_iter().map(|(h, _)| h).collect();
        assert_eq!(split, [0, 1]);
        assert!(plan_over("s", &[a.clone(), b.clone()], PointInTime::Revision(130)).is_err());
    }

    #[test]
    fn a_compacted_copy_keeps_the_evidence_that_the_clock_had_gone_past_a_time() {
        // A: full at 0 s (revision 100); its clock reaches 40 s by revision 120, steps back
        // and ends at 30 s (revision 140). B is taken at 25 s (revision 135, after the step)
        // and its stamps reach 50 s. 35 s was first shown in A's second segment.
        let a = stamped(0, 100, &[(0, 10), (10, 40), (25, 27), (27, 30)]);
        let mut b = stamped(0, 135, &[(26, 28), (28, 36), (36, 50)]);
        b.manifest.created_at += chrono::TimeDelta::seconds(25);
        renamed(&mut b, "etcd-abc/00-rev135-b.db.zst");
        // A compacted (dated at its last stamp, 30 s), and then pruned by retention.
        let mut copy = full_entry(0, 140);
        copy.manifest.created_at += chrono::TimeDelta::seconds(30);
        renamed(&mut copy, "etcd-abc/00-rev140-copy.db.zst");
        copy.manifest.compacted_from = Some(crate::manifest::CompactedFrom {
            full_backup: a.object.clone(),
            full_revision: 100,
            last_sequence: 4,
            to_revision: 140,
            to_time: copy.manifest.created_at,
            // As `snapshot compact` records it: 40 s, at revision 120.
            highest_stamp: Some(crate::manifest::CompactedFrom::highest_of(
                &a.manifest,
                a.deltas.iter().map(|d| &d.manifest),
            )),
        });
        assert_eq!(
            copy.manifest
                .compacted_from
                .as_ref()
                .and_then(|f| f.highest_stamp)
                .map(|h| (h.revision, h.time - a.manifest.created_at)),
            Some((120, chrono::TimeDelta::seconds(40)))
        );
        // With A there, 35 s is restored from A (its first showing).
        let plans =
            plan_over("s", &[a.clone(), copy.clone(), b.clone()], at_second(0, 35)).unwrap();
        assert_eq!(plans[0].full, a.object);
        // Without A, B's chain would restore 35 s's second showing (revisions received after
        // the clock had shown 40 s), and nothing says so: refuse, or at least not from B.
        let plans = plan_over("s", &[copy.clone(), b.clone()], at_second(0, 35));
        if let Ok(plans) = plans {
            assert!(
                plans.iter().all(|p| p.full != b.object),
                "35 s mapped into B's chain, after the clock had shown 40 s: {:?}",
                plans.iter().map(|p| &p.full).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_backup_taken_after_a_step_back_keeps_the_evidence_when_the_chain_before_is_pruned() {
        // As in the test above, but A is pruned without a compacted copy: B, taken while
        // `backup run` followed A's chain (whose stamps had reached 40 s), records that.
        let a = stamped(0, 100, &[(0, 10), (10, 40), (25, 27), (27, 30)]);
        let mut b = stamped(0, 135, &[(26, 28), (28, 36), (36, 50)]);
        b.manifest.created_at += chrono::TimeDelta::seconds(25);
        renamed(&mut b, "etcd-abc/00-rev135-b.db.zst");
        let unlinked = plan_over("s", std::slice::from_ref(&b), at_second(0, 35)).unwrap();
        assert_eq!(
            unlinked[0].full, b.object,
            "without the record: its second showing"
        );
        link(
            &mut b,
            &a,
            130,
            crate::manifest::CompactedFrom::highest_of(
                &a.manifest,
                a.deltas.iter().map(|d| &d.manifest),
            )
            .time,
        );
        // 35 s was passed before B was taken: B cannot restore it (refused: a gap), and a
        // time after 40 s still can.
        assert!(plan_over("s", std::slice::from_ref(&b), at_second(0, 35)).is_err());
        let later = plan_over("s", std::slice::from_ref(&b), at_second(0, 45)).unwrap();
        assert_eq!(later[0].full, b.object);
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
            highest_stamp: None,
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
