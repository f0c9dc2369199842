//! Which member survives a quorum loss: the one whose log is the most up to date, as its own
//! WAL says. Pure: the inspections in, a choice or a refusal out.
//!
//! Raft commits an entry once a majority holds it, and elects only a member whose log is at
//! least as up to date as a majority's (the last entry's term, then its index): that log holds
//! every committed entry. Among the survivors, the same rule picks the log holding everything
//! any of them knows was committed; the recovery then commits that whole log
//! (`etcd_data::adopt_wal_tail`), so the last entries a dying leader acknowledged before the
//! survivor learned of their commit are kept too. Ties go to the higher saved commit, then
//! the newer db, then the name (deterministic). Two members whose logs disagree at an index
//! both committed come from split histories (a restore or an earlier force-new-cluster):
//! refused. So is a member whose data dir could not be inspected (it may still serve in a
//! quorum this run cannot reach) until it is declared lost.

use std::cmp::Ordering;

use etcd_data::{DataDirInspection, WalSummary};
use serde::Serialize;

use super::membership::{coverage_refusal, identity_refusal};
use super::{Candidate, CandidateData};

/// How one candidate was judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CandidateSummary {
    /// The member name.
    pub name: String,
    /// Member ID (WAL metadata), when read.
    pub member_id: Option<String>,
    /// Cluster ID (WAL metadata), when read.
    pub cluster_id: Option<String>,
    /// Its data dir, when read.
    pub data_dir: Option<String>,
    /// Term of the last entry it knows committed.
    pub committed_term: Option<u64>,
    /// Index of that entry (the HardState's commit).
    pub committed_index: Option<u64>,
    /// Term of its last log entry.
    pub last_term: Option<u64>,
    /// Index of its last log entry.
    pub last_index: Option<u64>,
    /// Its db's revision.
    pub revision: Option<i64>,
    /// Committed entries in its WAL that its db has not applied yet (kept by WAL replay,
    /// lost by a db-only rebuild).
    pub committed_entries_beyond_db: Option<u64>,
    /// etcd runs on it (its db is locked).
    pub locked: bool,
    /// It is a learner.
    pub is_learner: bool,
    /// Whether it is the survivor.
    pub chosen: bool,
    /// Why it is not (`None` for the survivor).
    pub why_not_chosen: Option<String>,
}

/// The survivor and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SurvivorChoice {
    /// The member to start once with `--force-new-cluster`.
    pub survivor: String,
    /// Its member ID (what the one-member cluster must show).
    pub member_id: String,
    /// Its cluster ID (kept by the recovery).
    pub cluster_id: String,
    /// Its data dir.
    pub data_dir: String,
    /// Its db's revision: the recovered cluster must serve at least this one.
    pub min_revision: i64,
    /// One sentence: why this member.
    pub reason: String,
    /// Every candidate, as judged, in the order given.
    pub candidates: Vec<CandidateSummary>,
    /// The others, to rejoin with fresh data dirs, in the order given.
    pub rejoin: Vec<String>,
}

/// Why no survivor can be chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum RefusalKind {
    /// Two members' logs disagree at an index both committed.
    SplitHistory {
        /// The member to keep (the higher committed term).
        keep: String,
        /// The member that disagrees with it.
        other: String,
        /// The index both committed where they disagree.
        index: u64,
    },
    /// Two members belong to different clusters.
    ClusterMismatch {
        /// The member to keep (the higher committed term).
        keep: String,
        /// The member of the other cluster.
        other: String,
    },
    /// etcd still runs on these members.
    Locked {
        /// Their names.
        names: Vec<String>,
    },
    /// These members' data dirs could not be inspected (an unreachable host, a failed read):
    /// they may still run in a quorum this run cannot see.
    NotInspected {
        /// Their names.
        names: Vec<String>,
    },
    /// A data dir given as one member holds another member's data.
    WrongMember {
        /// The name it was given as.
        given: String,
        /// The member whose data it holds.
        holds: String,
    },
    /// Voters of the survivor's membership that were not given at all.
    NotGiven {
        /// Their names (or IDs, for members that never started).
        names: Vec<String>,
    },
    /// No voting member has a readable data dir.
    NoData,
}

/// A refused choice: why, in one line, and every candidate as judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    /// The kind, with the members involved.
    #[serde(flatten)]
    pub kind: RefusalKind,
    /// What was found and what to do.
    pub message: String,
    /// Every candidate, in the order given.
    pub candidates: Vec<CandidateSummary>,
}

/// The term covering an index, as far as a WAL tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TermAt {
    /// That term, exactly.
    Known(u64),
    /// Covered by the WAL's snapshot (before its first entry): that term or an older one.
    AtMost(u64),
    /// Beyond the log.
    Unknown,
}

/// The term covering index `i` in `wal`: from its term starts among its entries, the
/// snapshot's term at the snapshot's index, at most the snapshot's term before it.
fn term_at(wal: &WalSummary, i: u64) -> TermAt {
    if i == wal.snapshot.index {
        return TermAt::Known(wal.snapshot.term);
    }
    let first = wal.term_starts.first().map(|t| t.first_index);
    if let Some(first) = first
        && i >= first
        && i <= wal.last_index
    {
        let term = wal
            .term_starts
            .iter()
            .rev()
            .find(|t| t.first_index <= i)
            .map_or(0, |t| t.term);
        return TermAt::Known(term);
    }
    if i < wal.snapshot.index {
        return TermAt::AtMost(wal.snapshot.term);
    }
    TermAt::Unknown
}

/// The highest committed (term, index) of a WAL: the term of the entry at the HardState's
/// commit (the snapshot's when that entry is not among the WAL's own).
pub fn committed_position(wal: &WalSummary) -> (u64, u64) {
    let commit = wal.hard_state.commit;
    let term = wal.commit_term.unwrap_or(match term_at(wal, commit) {
        TermAt::Known(t) | TermAt::AtMost(t) => t,
        TermAt::Unknown => 0,
    });
    (term, commit)
}

/// What the choice orders candidates by, best last: the last entry's (term, index) — raft's
/// election rule for the most up-to-date log, which holds every entry any of these members
/// knows committed — then the committed (term, index), then the db revision. The recovery
/// commits the survivor's whole log before the forced start (`etcd_data::adopt_wal_tail`),
/// so the entries past its saved commit, which may have been acknowledged by a leader that
/// died before telling it, are kept too.
fn rank(inspection: &DataDirInspection) -> ((u64, u64), (u64, u64), i64) {
    (
        (inspection.wal.last_term, inspection.wal.last_index),
        committed_position(&inspection.wal),
        inspection.db.revision,
    )
}

/// `a` before `b` when `a` is the better survivor (names ascending break the last tie).
fn better(a: (&str, &DataDirInspection), b: (&str, &DataDirInspection)) -> Ordering {
    rank(b.1).cmp(&rank(a.1)).then_with(|| a.0.cmp(b.0))
}

/// The first index both WALs committed at which they disagree (different terms cover it).
///
/// Within the range both WALs know (from the newer of their snapshots up to the highest
/// index both committed) every point where either's term changes is compared: two logs
/// that a force-new-cluster split can carry the same term numbers from different indexes,
/// which a comparison at one index alone would miss. Below that range, a term known on one
/// side above the other's snapshot term is a split too.
fn split_at(a: &WalSummary, b: &WalSummary) -> Option<u64> {
    let i = a.hard_state.commit.min(b.hard_state.commit);
    if i == 0 {
        return None;
    }
    let lo = a.snapshot.index.max(b.snapshot.index);
    if lo <= i {
        let mut points: Vec<u64> = std::iter::once(lo)
            .chain(
                a.term_starts
                    .iter()
                    .chain(&b.term_starts)
                    .map(|t| t.first_index)
                    .filter(|&f| f > lo && f <= i),
            )
            .collect();
        points.sort_unstable();
        points.dedup();
        for x in points {
            if let (TermAt::Known(ta), TermAt::Known(tb)) = (term_at(a, x), term_at(b, x))
                && ta != tb
            {
                return Some(x);
            }
        }
    }
    let disagree = match (term_at(a, i), term_at(b, i)) {
        (TermAt::Known(x), TermAt::Known(y)) => x != y,
        (TermAt::Known(x), TermAt::AtMost(y)) | (TermAt::AtMost(y), TermAt::Known(x)) => x > y,
        _ => false,
    };
    disagree.then_some(i)
}

fn summary(candidate: &Candidate) -> CandidateSummary {
    let mut summary = CandidateSummary {
        name: candidate.name.clone(),
        member_id: None,
        cluster_id: None,
        data_dir: None,
        committed_term: None,
        committed_index: None,
        last_term: None,
        last_index: None,
        revision: None,
        committed_entries_beyond_db: None,
        locked: false,
        is_learner: false,
        chosen: false,
        why_not_chosen: None,
    };
    match &candidate.data {
        CandidateData::Inspected(i) => {
            let (term, index) = committed_position(&i.wal);
            summary.member_id = Some(i.wal.member_id.clone());
            summary.cluster_id = Some(i.wal.cluster_id.clone());
            summary.data_dir = Some(i.data_dir.clone());
            summary.committed_term = Some(term);
            summary.committed_index = Some(index);
            summary.last_term = Some(i.wal.last_term);
            summary.last_index = Some(i.wal.last_index);
            summary.revision = Some(i.db.revision);
            summary.committed_entries_beyond_db = Some(i.committed_entries_beyond_db);
            summary.locked = i.locked;
            summary.is_learner = i.is_learner;
            summary.why_not_chosen = if i.locked {
                Some("etcd runs on it (its db is locked)".into())
            } else if i.is_learner {
                Some("it is a learner: its log may lack committed entries".into())
            } else {
                None
            };
        }
        CandidateData::Absent => summary.why_not_chosen = Some("it has no data dir".into()),
        CandidateData::Unreadable(why) => {
            summary.why_not_chosen = Some(format!("its data dir could not be read: {why}"))
        }
        CandidateData::Lost => summary.why_not_chosen = Some("declared lost".into()),
    }
    summary
}

/// The survivor among `candidates`: the voter with the most up-to-date log (last entry's
/// term, then index); ties go to the higher committed (term, index), then the higher db
/// revision, then the name that sorts first.
///
/// Refused: a candidate etcd still runs on (stop it first: a member of a live quorum is
/// never chosen, and a running member's files change under the inspection); two candidates
/// of different clusters, or whose logs disagree at the highest index both committed (split
/// history: the message names the one to keep, the higher committed term, and says that a
/// backup restore is the right call when unsure); no voter with a readable data dir
/// (restore from a backup). A learner is never chosen.
pub fn choose_survivor(candidates: &[Candidate]) -> Result<SurvivorChoice, Refusal> {
    let mut summaries: Vec<CandidateSummary> = candidates.iter().map(summary).collect();
    let refuse = |kind: RefusalKind, message: String, summaries: &[CandidateSummary]| Refusal {
        kind,
        message,
        candidates: summaries.to_vec(),
    };
    let locked: Vec<String> = summaries
        .iter()
        .filter(|s| s.locked)
        .map(|s| s.name.clone())
        .collect();
    if !locked.is_empty() {
        let names = locked.join(", ");
        return Err(refuse(
            RefusalKind::Locked { names: locked },
            format!(
                "etcd still runs on {names} (its db is locked): stop etcd on {names} first, then plan again; a member of a live quorum is never chosen"
            ),
            &summaries,
        ));
    }
    let unread: Vec<String> = candidates
        .iter()
        .filter(|c| matches!(c.data, CandidateData::Unreadable(_)))
        .map(|c| c.name.clone())
        .collect();
    if !unread.is_empty() {
        let names = unread.join(", ");
        let why: Vec<String> = candidates
            .iter()
            .filter_map(|c| match &c.data {
                CandidateData::Unreadable(why) => Some(format!("{}: {why}", c.name)),
                _ => None,
            })
            .collect();
        return Err(refuse(
            RefusalKind::NotInspected { names: unread },
            format!(
                "the data dir of {names} could not be inspected ({}): it may still run in a quorum this run cannot reach, and forcing a survivor then splits the cluster in two; make it readable and plan again, or declare it lost if its host or disk is gone for good",
                why.join("; ")
            ),
            &summaries,
        ));
    }
    let inspected: Vec<(&str, &DataDirInspection)> = candidates
        .iter()
        .filter_map(|c| c.inspection().map(|i| (c.name.as_str(), i)))
        .collect();
    if let Some((kind, message)) = identity_refusal(&inspected) {
        return Err(refuse(kind, message, &summaries));
    }
    if let Some(refusal) = history_refusal(&inspected) {
        let (kind, message) = refusal;
        return Err(refuse(kind, message, &summaries));
    }
    let mut voters: Vec<(&str, &DataDirInspection)> = inspected
        .iter()
        .copied()
        .filter(|(_, i)| !i.is_learner)
        .collect();
    voters.sort_by(|a, b| better(*a, *b));
    let Some(&(name, best)) = voters.first() else {
        return Err(refuse(
            RefusalKind::NoData,
            "no voting member has a readable data dir to recover from: restore the cluster from a backup instead".into(),
            &summaries,
        ));
    };
    if let Some((kind, message)) = tail_refusal((name, best), &inspected) {
        return Err(refuse(kind, message, &summaries));
    }
    if let Some((kind, message)) = coverage_refusal(best, candidates) {
        return Err(refuse(kind, message, &summaries));
    }
    let reason = reason(name, best, voters.get(1).copied());
    for summary in &mut summaries {
        if summary.name == name {
            summary.chosen = true;
        } else if summary.why_not_chosen.is_none() {
            let other = inspected.iter().find(|(n, _)| *n == summary.name);
            summary.why_not_chosen = Some(match other {
                Some(&(_, other)) => behind(name, best, other),
                None => "not inspected".into(),
            });
        }
    }
    Ok(SurvivorChoice {
        survivor: name.to_string(),
        member_id: best.wal.member_id.clone(),
        cluster_id: best.wal.cluster_id.clone(),
        data_dir: best.data_dir.clone(),
        min_revision: best.db.revision,
        reason,
        rejoin: candidates
            .iter()
            .filter(|c| c.name != name)
            .map(|c| c.name.clone())
            .collect(),
        candidates: summaries,
    })
}

/// A refusal for two inspected candidates of different clusters or split histories.
fn history_refusal(inspected: &[(&str, &DataDirInspection)]) -> Option<(RefusalKind, String)> {
    for (n, a) in inspected.iter().enumerate() {
        for b in &inspected[n + 1..] {
            // The one to keep: the higher committed term (then the better rank).
            let (keep, other) = match committed_position(&a.1.wal)
                .0
                .cmp(&committed_position(&b.1.wal).0)
                .then_with(|| better(*b, *a))
            {
                Ordering::Less => (b, a),
                _ => (a, b),
            };
            let (keep_term, keep_index) = committed_position(&keep.1.wal);
            let keep_why = format!(
                "keep {} (committed term {keep_term}, index {keep_index}) and rejoin the others from it, or restore the cluster from a backup if unsure which history is right",
                keep.0
            );
            if a.1.wal.cluster_id != b.1.wal.cluster_id {
                return Some((
                    RefusalKind::ClusterMismatch {
                        keep: keep.0.into(),
                        other: other.0.into(),
                    },
                    format!(
                        "{} and {} belong to different clusters ({} and {}): their histories are unrelated; {keep_why}",
                        keep.0, other.0, keep.1.wal.cluster_id, other.1.wal.cluster_id
                    ),
                ));
            }
            if let Some(index) = split_at(&keep.1.wal, &other.1.wal) {
                let term = |w: &WalSummary| match term_at(w, index) {
                    TermAt::Known(t) => format!("term {t}"),
                    TermAt::AtMost(t) => format!("term {t} or older"),
                    TermAt::Unknown => "an unknown term".into(),
                };
                return Some((
                    RefusalKind::SplitHistory {
                        keep: keep.0.into(),
                        other: other.0.into(),
                        index,
                    },
                    format!(
                        "split history: {} and {} both committed index {index} but with different terms ({} on {}, {} on {}); {keep_why}",
                        keep.0,
                        other.0,
                        term(&keep.1.wal),
                        keep.0,
                        term(&other.1.wal),
                        other.0
                    ),
                ));
            }
        }
    }
    None
}

/// The recovery commits the survivor's whole log (`etcd_data::adopt_wal_tail`): an index
/// another member committed that the survivor's log holds under another term would be
/// overwritten. Raft's rules rule it out (a leader holds every entry committed in an earlier
/// term), so such logs come from split histories: refused, keeping the member whose commit
/// it is.
fn tail_refusal(
    (name, best): (&str, &DataDirInspection),
    inspected: &[(&str, &DataDirInspection)],
) -> Option<(RefusalKind, String)> {
    let mut adopted = best.wal.clone();
    adopted.hard_state.commit = adopted.hard_state.commit.max(adopted.last_index);
    for &(other, inspection) in inspected {
        if other == name {
            continue;
        }
        let Some(index) = split_at(&adopted, &inspection.wal) else {
            continue;
        };
        let (term, commit) = committed_position(&inspection.wal);
        let shown = |w: &WalSummary| match term_at(w, index) {
            TermAt::Known(t) => format!("term {t}"),
            TermAt::AtMost(t) => format!("term {t} or older"),
            TermAt::Unknown => "an unknown term".into(),
        };
        return Some((
            RefusalKind::SplitHistory {
                keep: other.into(),
                other: name.into(),
                index,
            },
            format!(
                "split history: {other} committed index {index} in {} but {name}, the most up-to-date log, holds {} there, and the recovery would commit {name}'s whole log over it; keep {other} (committed term {term}, index {commit}) and rejoin the others from it, or restore the cluster from a backup if unsure which history is right",
                shown(&inspection.wal),
                shown(&best.wal)
            ),
        ));
    }
    None
}

/// One sentence: why `name` won over the runner-up.
fn reason(
    name: &str,
    best: &DataDirInspection,
    next: Option<(&str, &DataDirInspection)>,
) -> String {
    let (term, index) = committed_position(&best.wal);
    let kept = match best.committed_entries_beyond_db {
        0 => String::new(),
        n => format!(" ({n} committed entries beyond its db, kept by the WAL replay)"),
    };
    let Some((other, next)) = next else {
        return format!(
            "{name} is the only voting member with a readable data dir: committed term {term}, index {index}, revision {}{kept}",
            best.db.revision
        );
    };
    let (best_rank, next_rank) = (rank(best), rank(next));
    let why = if best_rank.0 != next_rank.0 {
        format!(
            "the most up-to-date log (last entry term {}, index {}; committed ({term}, {index}))",
            best.wal.last_term, best.wal.last_index
        )
    } else if best_rank.1 != next_rank.1 {
        format!(
            "the same log end as {other} (term {}, index {}) and the highest committed (term, index): ({term}, {index})",
            best.wal.last_term, best.wal.last_index
        )
    } else if best_rank.2 != next_rank.2 {
        format!(
            "the same log as {other} up to ({term}, {index}) and the newer db (revision {})",
            best.db.revision
        )
    } else {
        format!("the same log and db as {other} ({term}, {index}); chosen by name")
    };
    format!("{name} has {why}{kept}")
}

/// Why `other` is not chosen, next to the survivor `name`.
fn behind(name: &str, best: &DataDirInspection, other: &DataDirInspection) -> String {
    let (bt, bi) = committed_position(&best.wal);
    let (ot, oi) = committed_position(&other.wal);
    if (other.wal.last_term, other.wal.last_index) != (best.wal.last_term, best.wal.last_index) {
        format!(
            "its log ends at ({}, {}), behind {name}'s ({}, {}); committed ({ot}, {oi})",
            other.wal.last_term, other.wal.last_index, best.wal.last_term, best.wal.last_index
        )
    } else if (ot, oi) != (bt, bi) {
        format!("same log end as {name}, committed up to ({ot}, {oi}), behind ({bt}, {bi})")
    } else if other.db.revision != best.db.revision {
        format!(
            "same log as {name}, older db (revision {})",
            other.db.revision
        )
    } else {
        format!("same log and db as {name}, whose name sorts first")
    }
}

#[cfg(test)]
#[path = "survivor_tests.rs"]
mod tests;
