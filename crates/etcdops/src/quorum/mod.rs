//! Recovering a cluster that lost its quorum through etcd itself: the most up-to-date
//! stopped survivor starts once with `--force-new-cluster`, replays its WAL (keeping every
//! write it knew committed, which its db alone may not hold yet), and becomes a one-member
//! cluster with its data, revisions, cluster ID and member ID; the others rejoin with fresh
//! data dirs.
//!
//! This module takes the decisions and does the data-dir steps:
//! - [`choose_survivor`] (pure): which member to keep, from the offline inspections of every
//!   reachable member's data dir, refusing split history, running members and learners;
//! - [`plan_recovery`]: first asks the cluster itself whether a quorum still serves (then
//!   nothing to recover, at most members to regrow), else chooses the survivor;
//! - [`verify_survivor`]: whether the survivor now runs alone, healthy, with its revision;
//! - [`copy_data_dir_aside`] and [`move_data_dir_aside`]: keep a data dir, never delete one.
//!
//! ```no_run
//! use etcdops::quorum::{Candidate, PlanAction, plan_recovery};
//!
//! # async fn example(inspections: Vec<etcd_data::DataDirInspection>) -> etcdops::Result<()> {
//! let config = etcdops::client::ClusterConfig::for_endpoints(["http://10.0.0.1:2379"])?;
//! let candidates: Vec<Candidate> = inspections.into_iter().map(Candidate::from_inspection).collect();
//! let plan = plan_recovery(&config, &candidates).await?;
//! if plan.action == PlanAction::Recover {
//!     println!("start {:?} once with --force-new-cluster: {}", plan.survivor, plan.reason);
//! }
//! # Ok(())
//! # }
//! ```

mod data_dir;
mod membership;
mod plan;
mod survivor;
#[cfg(test)]
mod survivor_guard_tests;
mod verify;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use data_dir::{DataDirAside, copy_data_dir_aside, move_data_dir_aside};
pub use plan::{PlanAction, PlanOptions, RecoveryPlan, plan_recovery, plan_recovery_with};
pub use survivor::{
    CandidateSummary, Refusal, RefusalKind, SurvivorChoice, choose_survivor, committed_position,
};
pub use verify::{SurvivorVerified, verify_survivor};

/// The inspection of a data dir, read offline (`etcd_data::inspect`).
pub use etcd_data::DataDirInspection;

/// One member that could be the survivor, as its host reported its data dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The etcd member name.
    pub name: String,
    /// What its data dir holds.
    pub data: CandidateData,
}

/// What a candidate's data dir holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum CandidateData {
    /// Read offline.
    Inspected(Box<DataDirInspection>),
    /// No data dir (no `DIR/member`).
    Absent,
    /// It could not be read (the host was unreachable, the WAL or db is damaged): why. The
    /// member may still run in a quorum this run cannot see, so a plan with one is refused
    /// until it is readable or declared [`CandidateData::Lost`].
    Unreadable(String),
    /// The operator declared it lost for good (its host or disk is gone): never a survivor,
    /// and no reason to refuse the plan.
    Lost,
}

impl Candidate {
    /// A candidate named after the inspection's own member (the db membership's name for the
    /// WAL's member ID; the member ID itself when the db has no name for it).
    pub fn from_inspection(inspection: DataDirInspection) -> Candidate {
        let name = member_name(&inspection).unwrap_or_else(|| inspection.wal.member_id.clone());
        Candidate {
            name,
            data: CandidateData::Inspected(Box::new(inspection)),
        }
    }

    /// The inspection, when the data dir could be read.
    pub fn inspection(&self) -> Option<&DataDirInspection> {
        match &self.data {
            CandidateData::Inspected(inspection) => Some(inspection),
            CandidateData::Absent | CandidateData::Unreadable(_) | CandidateData::Lost => None,
        }
    }
}

/// A candidate from what an inspection of its data dir reported as JSON: the result
/// `etcd_data_dir_info` registered on its host (`{exists, inspection}`, or a failed or
/// unreachable result: then unreadable, with its message), or the bare inspection that
/// `data-dir inspect -w json` prints. `name` defaults to the db membership's name for the
/// WAL's member ID. Err: what is wrong with `report`, in one line.
pub fn candidate_from_report(name: Option<&str>, report: &Value) -> Result<Candidate, String> {
    let flag = |key: &str| report.get(key).and_then(Value::as_bool) == Some(true);
    let named = |data: CandidateData| match name {
        Some(name) => Ok(Candidate {
            name: name.to_string(),
            data,
        }),
        None => Err("a member without a name: give each member's name".to_string()),
    };
    if flag("failed") || flag("unreachable") {
        let msg = report
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or(if flag("unreachable") {
                "the host was unreachable"
            } else {
                "the inspection failed"
            });
        return named(CandidateData::Unreadable(msg.to_string()));
    }
    if flag("skipped") {
        return named(CandidateData::Unreadable(
            "the inspection was skipped on its host".into(),
        ));
    }
    if report.get("exists").and_then(Value::as_bool) == Some(false) {
        return named(CandidateData::Absent);
    }
    let inspection = match report.get("inspection") {
        Some(inner) if !inner.is_null() => inner,
        _ => report,
    };
    let inspection: DataDirInspection = serde_json::from_value(inspection.clone()).map_err(|e| {
        format!(
            "{}: not an inspection of a data dir ({e}); give what etcd_data_dir_info registered or data-dir inspect printed",
            name.unwrap_or("a member")
        )
    })?;
    let mut candidate = Candidate::from_inspection(inspection);
    if let Some(name) = name {
        candidate.name = name.to_string();
    }
    Ok(candidate)
}

/// The member name the dir's membership (its db's, or its WAL's when the db names none)
/// records for the WAL's member ID.
pub fn member_name(inspection: &DataDirInspection) -> Option<String> {
    let own = inspection.wal.member_id.trim_start_matches('0');
    inspection
        .membership()
        .into_iter()
        .find(|m| m.id.trim_start_matches('0') == own && !m.name.is_empty())
        .map(|m| m.name.clone())
}

/// Builds inspections for the unit tests of this module.
#[cfg(test)]
pub(crate) mod testing {
    use etcd_data::{DataDirInspection, DbMember, HardState, SnapPosition, TermStart};

    use super::{Candidate, CandidateData};

    /// A stopped voter `name` of cluster `c1` whose WAL holds terms `terms` ((term, first
    /// index)), last entry `last`, committed up to `commit`, db at `revision`.
    pub(crate) fn member(
        name: &str,
        terms: &[(u64, u64)],
        last: u64,
        commit: u64,
        revision: i64,
    ) -> Candidate {
        let term_starts: Vec<TermStart> = terms
            .iter()
            .map(|&(term, first_index)| TermStart { term, first_index })
            .collect();
        let term_at = |i: u64| {
            term_starts
                .iter()
                .rev()
                .find(|t| t.first_index <= i)
                .map(|t| t.term)
        };
        let id = format!("{:x}", 0x1000 + name.bytes().map(u64::from).sum::<u64>());
        let mut inspection = DataDirInspection {
            data_dir: format!("/var/lib/etcd-{name}"),
            ..DataDirInspection::default()
        };
        inspection.wal.member_id = id.clone();
        inspection.wal.cluster_id = "c1".into();
        inspection.wal.hard_state = HardState {
            term: term_at(last).unwrap_or(0),
            vote: 0,
            commit,
        };
        inspection.wal.last_index = last;
        inspection.wal.last_term = term_at(last).unwrap_or(0);
        inspection.wal.commit_term = term_at(commit);
        inspection.wal.snapshot = SnapPosition::default();
        inspection.wal.term_starts = term_starts;
        inspection.wal.uncommitted_entries = last - commit;
        inspection.db.revision = revision;
        inspection.db.consistent_index = commit.saturating_sub(3);
        inspection.committed_entries_beyond_db = commit - inspection.db.consistent_index;
        inspection.db.members = vec![DbMember {
            id,
            name: name.into(),
            peer_urls: vec![],
            client_urls: vec![],
            is_learner: false,
        }];
        Candidate {
            name: name.into(),
            data: CandidateData::Inspected(Box::new(inspection)),
        }
    }

    /// The inspection inside `candidate`, to change.
    pub(crate) fn inspection(candidate: &mut Candidate) -> &mut DataDirInspection {
        match &mut candidate.data {
            CandidateData::Inspected(inspection) => inspection,
            _ => panic!("not inspected"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::member;
    use super::*;

    #[test]
    fn a_registered_result_becomes_a_candidate() {
        let Candidate { data, .. } = member("etcd-a", &[(2, 1)], 10, 10, 5);
        let inspection = serde_json::to_value(data.clone()).unwrap()["detail"].clone();
        let ok = serde_json::json!({"changed": false, "exists": true, "inspection": inspection});
        assert_eq!(candidate_from_report(Some("a"), &ok).unwrap().data, data);
        assert_eq!(
            candidate_from_report(None, &inspection).unwrap().name,
            "etcd-a"
        );
        let absent = serde_json::json!({"exists": false, "inspection": null});
        assert_eq!(
            candidate_from_report(Some("b"), &absent).unwrap().data,
            CandidateData::Absent
        );
        let failed = serde_json::json!({"failed": true, "msg": "WAL CRC mismatch"});
        assert_eq!(
            candidate_from_report(Some("c"), &failed).unwrap().data,
            CandidateData::Unreadable("WAL CRC mismatch".into())
        );
        let down = serde_json::json!({"unreachable": true});
        assert!(matches!(
            candidate_from_report(Some("d"), &down).unwrap().data,
            CandidateData::Unreadable(_)
        ));
        let err = candidate_from_report(Some("e"), &serde_json::json!({"x": 1})).unwrap_err();
        assert!(err.starts_with("e: not an inspection"), "{err}");
        assert!(candidate_from_report(None, &failed).is_err());
    }

    #[test]
    fn a_candidate_is_named_after_its_own_member_in_the_db() {
        let Candidate { data, .. } = member("etcd-b", &[(2, 1)], 10, 10, 5);
        let CandidateData::Inspected(inspection) = data else {
            panic!()
        };
        let candidate = Candidate::from_inspection(*inspection.clone());
        assert_eq!(candidate.name, "etcd-b");
        let mut unnamed = *inspection;
        unnamed.db.members.clear();
        let id = unnamed.wal.member_id.clone();
        assert_eq!(Candidate::from_inspection(unnamed).name, id);
    }
}
