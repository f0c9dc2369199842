//! `snapshot verify --against-cluster`: a drill that compares a full backup with the live
//! cluster. etcd's KV hash of the backup's db is computed offline at the backup's revision and
//! compared with each member's `HashKV` at that same revision: equal hashes mean the backup
//! holds exactly the history the cluster held at that revision. A backup with delta segments
//! is compared at its chain's last revision, restored into a scratch dir (see `drill.rs`).
//!
//! A member hashes the revisions above its compaction (and, at or below it, what the
//! compaction keeps). When it compacted later than the backup (but not past its revision),
//! the backup is hashed as that member would have after the same compaction, so like is
//! compared with like. A member that compacted past the backup's revision cannot hash it at
//! all: that is "cannot compare", not a failed backup.

use etcd_core::{Client, ClusterConfig, MemberId, Targets};
use etcd_data::HashKv;
use etcd_snapshot::{HashKvRequest, SnapshotError};
use serde::Serialize;

use super::status::StatusRequest;
use super::verify::VerifyRequest;
use crate::error::Result;

/// How one member's hash at the backup's revision compares with the backup's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "reason")]
pub enum MemberOutcome {
    /// The member's hash equals the backup's.
    Match,
    /// The member's hash differs from the backup's.
    Differs,
    /// The member's hash cannot be compared with the backup's (why).
    CannotCompare(String),
}

/// One member's hash at the backup's revision.
#[derive(Debug, Clone, Serialize)]
pub struct MemberHash {
    /// The endpoint asked.
    pub endpoint: String,
    /// The member behind it, when it answered.
    pub member_id: Option<MemberId>,
    /// Its KV hash at the backup's revision.
    pub hash: Option<u32>,
    /// The compaction its hash is above (-1: never compacted).
    pub compact_revision: Option<i64>,
    /// The backup's hash with that same compaction (what `hash` is compared with).
    pub backup_hash: Option<u32>,
    /// Whether it matches.
    #[serde(flatten)]
    pub outcome: MemberOutcome,
}

impl MemberHash {
    /// `member 8e9e05c52164694d (http://...)`, or the endpoint alone.
    pub fn name(&self) -> String {
        match self.member_id {
            Some(id) => format!("member {id} ({})", self.endpoint),
            None => self.endpoint.clone(),
        }
    }
}

/// What the comparison says of the backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    /// Every member that could be compared holds exactly what the backup holds.
    Match,
    /// These members (named) hash the backup's revision differently from the backup.
    Differs {
        /// The members that differ.
        differing: Vec<String>,
    },
    /// No member could be compared (not a failure of the backup).
    CannotCompare {
        /// Why.
        reason: String,
    },
}

/// The backup against the cluster.
#[derive(Debug, Clone, Serialize)]
pub struct AgainstCluster {
    /// The backup's URL.
    pub snapshot: String,
    /// The delta segments replayed after the full backup (0: the full backup alone).
    pub segments: usize,
    /// The backup's revision (its chain's last with segments): the revision every member
    /// hashed.
    pub revision: i64,
    /// The backup's own KV hash at its revision, above its own compaction.
    pub hash: u32,
    /// The backup's compaction (-1: never compacted).
    pub compact_revision: i64,
    /// Each member asked.
    pub members: Vec<MemberHash>,
    /// What it comes to.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// What went wrong on the side (an identity file others can read).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl AgainstCluster {
    /// One line: `matches`, what differs, or why it cannot be compared.
    pub fn message(&self) -> String {
        let backup = match self.segments {
            0 => "the backup".to_string(),
            n => format!("the backup with its {n} delta segment(s)"),
        };
        match &self.verdict {
            Verdict::Match => {
                let skipped: Vec<String> = self
                    .members
                    .iter()
                    .filter_map(|m| match &m.outcome {
                        MemberOutcome::CannotCompare(why) => Some(format!("{}: {why}", m.name())),
                        _ => None,
                    })
                    .collect();
                let skipped = if skipped.is_empty() {
                    String::new()
                } else {
                    format!("; not compared: {}", skipped.join("; "))
                };
                format!(
                    "{backup} matches the cluster at revision {} (hash {}){skipped}",
                    self.revision, self.hash
                )
            }
            Verdict::Differs { differing } => format!(
                "{backup} differs from the cluster at revision {}: {} hash(es) it differently",
                self.revision,
                differing.join(", ")
            ),
            Verdict::CannotCompare { reason } => {
                format!("cannot compare the backup with the cluster: {reason}")
            }
        }
    }
}

/// Hashes the full backup of `request` at its revision and compares it with every member's
/// `HashKV` at that revision (members from the member list). A backup that differs is a
/// result with [`Verdict::Differs`]; an error is a comparison that could not be started
/// (no such backup, no cluster answering the member list).
pub async fn verify_against_cluster(
    config: &ClusterConfig,
    request: &VerifyRequest,
) -> Result<AgainstCluster> {
    let open = StatusRequest {
        snapshot: request.snapshot.clone(),
        skip_hash_check: false,
        identity: request.identity.clone(),
        store: request.store.clone(),
    };
    let (file, warnings) = open.open().await?;
    let name = request.snapshot.as_str();
    let hash = |asked: &HashKvRequest| file.hash_kv(name, asked);
    let cluster = backup_cluster(request).await;
    let mut against = compare_with_cluster(config, &request.snapshot, cluster, 0, &hash).await?;
    against.warnings = warnings;
    Ok(against)
}

/// The cluster a backup's manifest says it was taken of (`None` without a manifest).
pub(super) async fn backup_cluster(request: &VerifyRequest) -> Option<MemberId> {
    etcd_snapshot::recorded_manifest(&request.snapshot, &request.store.options())
        .await
        .map(|m| m.cluster_id)
}

/// Compares a db (`hash` hashes it, at its latest revision for a default request) with every
/// member's `HashKV` at its revision; `segments`: the delta segments replayed into it;
/// `cluster`: the cluster the backup's manifest names (a member of another cannot compare).
pub(super) async fn compare_with_cluster(
    config: &ClusterConfig,
    snapshot: &str,
    cluster: Option<MemberId>,
    segments: usize,
    hash_db: &(dyn Fn(&HashKvRequest) -> std::result::Result<HashKv, etcd_data::Error> + Sync),
) -> Result<AgainstCluster> {
    let own = hash_db(&HashKvRequest::default()).map_err(SnapshotError::Data)?;
    let revision = own.hash_revision;
    let client = Client::new(config.clone());
    let report = client
        .endpoints()
        .hashkv(Targets::Cluster, revision)
        .await?;
    let mut members = Vec::new();
    // The backup's hash with a later compaction, once per compaction (members that compacted
    // alike share it: each is a full pass over the db).
    let mut rehashed: std::collections::BTreeMap<i64, std::result::Result<u32, String>> =
        std::collections::BTreeMap::new();
    for row in report.endpoints {
        let mut member = MemberHash {
            endpoint: row.endpoint.clone(),
            member_id: row.member_id,
            hash: row.hash,
            compact_revision: row.compact_revision,
            backup_hash: None,
            outcome: MemberOutcome::Match,
        };
        let answered = row.header.as_ref().map(|h| MemberId(h.cluster_id));
        if let (Some(backup), Some(member_cluster)) = (cluster, answered)
            && backup != member_cluster
        {
            member.outcome = MemberOutcome::CannotCompare(format!(
                "the backup is of cluster {backup}, the member of cluster {member_cluster}: not a backup of this cluster"
            ));
            members.push(member);
            continue;
        }
        member.outcome = match (row.hash, row.compact_revision, &row.error) {
            (_, _, Some(error)) if error.contains("compacted") => MemberOutcome::CannotCompare(
                format!("the cluster compacted past revision {revision}; cannot compare"),
            ),
            (_, _, Some(error)) => {
                MemberOutcome::CannotCompare(format!("no hash at revision {revision}: {error}"))
            }
            (Some(hash), Some(compact), None) => {
                let backup = if compact == own.compact_revision {
                    Ok(own.hash)
                } else if compact < own.compact_revision {
                    Err(format!(
                        "the member's compaction ({compact}) is older than the backup's ({}): the backup holds less history than the member; is it a backup of this cluster?",
                        own.compact_revision
                    ))
                } else if compact > revision {
                    Err(format!(
                        "the cluster compacted past revision {revision}; cannot compare"
                    ))
                } else {
                    rehashed
                        .entry(compact)
                        .or_insert_with(|| {
                            let later = HashKvRequest {
                                revision,
                                compact_revision: Some(compact),
                            };
                            hash_db(&later).map(|h| h.hash).map_err(|e| e.to_string())
                        })
                        .clone()
                };
                match backup {
                    Ok(backup) => {
                        member.backup_hash = Some(backup);
                        if backup == hash {
                            MemberOutcome::Match
                        } else {
                            MemberOutcome::Differs
                        }
                    }
                    Err(reason) => MemberOutcome::CannotCompare(reason),
                }
            }
            _ => MemberOutcome::CannotCompare("the member answered without a hash".into()),
        };
        members.push(member);
    }
    let verdict = verdict(&members);
    Ok(AgainstCluster {
        snapshot: snapshot.to_string(),
        segments,
        revision,
        hash: own.hash,
        compact_revision: own.compact_revision,
        members,
        verdict,
        warnings: Vec::new(),
    })
}

/// Differs when any member differs; else a match when any member matched; else why none
/// could be compared.
fn verdict(members: &[MemberHash]) -> Verdict {
    let differ: Vec<String> = members
        .iter()
        .filter(|m| m.outcome == MemberOutcome::Differs)
        .map(MemberHash::name)
        .collect();
    if !differ.is_empty() {
        return Verdict::Differs { differing: differ };
    }
    if members.iter().any(|m| m.outcome == MemberOutcome::Match) {
        return Verdict::Match;
    }
    let mut reasons: Vec<String> = members
        .iter()
        .filter_map(|m| match &m.outcome {
            MemberOutcome::CannotCompare(reason) => Some(reason.clone()),
            _ => None,
        })
        .collect();
    reasons.dedup();
    Verdict::CannotCompare {
        reason: if reasons.is_empty() {
            "no member answered".into()
        } else {
            reasons.join("; ")
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(endpoint: &str, outcome: MemberOutcome) -> MemberHash {
        MemberHash {
            endpoint: endpoint.into(),
            member_id: Some(MemberId(0xab)),
            hash: Some(1),
            compact_revision: Some(-1),
            backup_hash: Some(1),
            outcome,
        }
    }

    #[test]
    fn a_differing_member_is_named_and_wins_over_matches_and_cannot_compare() {
        let members = [
            member("http://a", MemberOutcome::Match),
            member("http://b", MemberOutcome::Differs),
            member("http://c", MemberOutcome::CannotCompare("gone".into())),
        ];
        assert_eq!(
            verdict(&members),
            Verdict::Differs {
                differing: vec!["member ab (http://b)".into()]
            }
        );
    }

    #[test]
    fn one_match_is_a_match_and_none_compared_says_why() {
        let compacted = MemberOutcome::CannotCompare(
            "the cluster compacted past revision 9; cannot compare".into(),
        );
        let members = [
            member("http://a", MemberOutcome::Match),
            member("http://b", compacted.clone()),
        ];
        assert_eq!(verdict(&members), Verdict::Match);
        let members = [
            member("http://a", compacted.clone()),
            member("http://b", compacted),
        ];
        assert_eq!(
            verdict(&members),
            Verdict::CannotCompare {
                reason: "the cluster compacted past revision 9; cannot compare".into()
            }
        );
        assert_eq!(
            verdict(&[]),
            Verdict::CannotCompare {
                reason: "no member answered".into()
            }
        );
        // The JSON keeps the member rows and the differing names apart.
        let json = serde_json::to_value(member("http://a", MemberOutcome::Differs)).unwrap();
        assert_eq!(json["outcome"], "differs");
        assert_eq!(json["member_id"], "ab");
    }
}
