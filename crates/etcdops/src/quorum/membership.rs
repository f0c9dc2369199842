//! The survivor choice against the cluster's own membership: every voter the survivor's db
//! names must have been given (inspected, found without data, or declared lost), and each
//! data dir must hold the member it was given as. Either mistake forces a member beside a
//! quorum this run cannot see, or under another member's name.

use etcd_data::DataDirInspection;

use super::survivor::RefusalKind;
use super::{Candidate, CandidateData};

/// Refuses a data dir given as one member that holds another member's data: its WAL's
/// member ID is named otherwise in its own db's membership (a dir copied between hosts, two
/// hosts' names swapped in the inventory).
pub(super) fn identity_refusal(
    inspected: &[(&str, &DataDirInspection)],
) -> Option<(RefusalKind, String)> {
    inspected.iter().find_map(|&(given, inspection)| {
        let membership = inspection.membership();
        let own = membership
            .iter()
            .find(|m| m.id == inspection.wal.member_id)?;
        (!own.name.is_empty() && own.name != given).then(|| {
            (
                RefusalKind::WrongMember {
                    given: given.to_string(),
                    holds: own.name.clone(),
                },
                format!(
                    "the data dir given as {given} ({}) holds member {}'s data (member ID {}): check which host runs which member (the member names given) and its data dir, then plan again",
                    inspection.data_dir, own.name, own.id
                ),
            )
        })
    })
}

/// Refuses when the survivor's membership (its db's, or its WAL's when the db names none) names voters that are none of `candidates` (by member ID
/// for an inspected dir, by name otherwise): they were left out of the run (a short
/// inventory, `--limit`) and may still serve a quorum that the live check could not reach.
pub(super) fn coverage_refusal(
    survivor: &DataDirInspection,
    candidates: &[Candidate],
) -> Option<(RefusalKind, String)> {
    let given = |id: &str, name: &str| {
        candidates.iter().any(|c| match &c.data {
            CandidateData::Inspected(i) => {
                i.wal.member_id == id || (!name.is_empty() && c.name == name)
            }
            CandidateData::Absent | CandidateData::Unreadable(_) | CandidateData::Lost => {
                !name.is_empty() && c.name == name
            }
        })
    };
    let missing: Vec<String> = survivor
        .membership()
        .iter()
        .filter(|m| !m.is_learner && !given(&m.id, &m.name))
        .map(|m| {
            if m.name.is_empty() {
                format!("member {} (never started)", m.id)
            } else {
                m.name.clone()
            }
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    let names = missing.join(", ");
    Some((
        RefusalKind::NotGiven {
            names: missing.clone(),
        },
        format!(
            "the cluster's membership (in {}'s data) names {names}, which this run was not given: they may still serve a quorum it cannot see, and forcing a survivor then splits the cluster in two; give every member of the cluster, or declare {names} lost if gone for good",
            survivor.data_dir
        ),
    ))
}
