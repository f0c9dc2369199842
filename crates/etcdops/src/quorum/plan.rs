//! The recovery plan: ask the cluster first, choose a survivor only when no quorum serves.

use std::time::Duration;

use etcd_core::{Client, ClusterConfig, Consistency, Error as EtcdError, MemberListOptions};
use serde::Serialize;

use super::Candidate;
use super::survivor::{CandidateSummary, SurvivorChoice, choose_survivor};
use crate::Error;

/// The longest the live check waits for one answer: without a quorum a linearizable read
/// hangs until etcd's own request timeout, so this bounds the plan on a dead cluster.
const LIVE_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// What the plan says to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanAction {
    /// A quorum serves and every given member is a healthy voter: nothing to do.
    None,
    /// A quorum serves; some given members are not healthy voters: re-add them (`rejoin`).
    Regrow,
    /// No quorum, but a majority of the voters still have their data (all stopped, or a
    /// power cut): start them normally (`restart`); raft restores the quorum with every
    /// committed write, and nothing is forced. Then rejoin the others.
    Restart,
    /// No quorum: start `survivor` once with `--force-new-cluster`, then rejoin the others.
    Recover,
}

/// How to plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOptions {
    /// Plan `restart` when a majority of the voters still have their data dirs (the
    /// default); false forces the best survivor even then (when restarting them did not bring
    /// the quorum back).
    pub restart_intact: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            restart_intact: true,
        }
    }
}

/// The plan and what it was decided from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecoveryPlan {
    /// What to do.
    pub action: PlanAction,
    /// Whether a linearizable read succeeded (a quorum serves).
    pub quorum: bool,
    /// One sentence: why this action (and this survivor).
    pub reason: String,
    /// With `recover`: the member to keep.
    pub survivor: Option<String>,
    /// With `recover`: its member ID.
    pub member_id: Option<String>,
    /// With `recover`: its data dir.
    pub data_dir: Option<String>,
    /// With `recover`: the revision the recovered cluster must serve at least.
    pub min_revision: Option<i64>,
    /// With `recover` and `restart`: every candidate as judged (empty otherwise: none was
    /// judged).
    pub candidates: Vec<CandidateSummary>,
    /// With `restart`: the members to start normally, with their data.
    pub restart: Vec<String>,
    /// The given members to re-add (fresh data dir, as learners): with `recover` every one
    /// but the survivor; with `regrow` those that are not healthy voters.
    pub rejoin: Vec<String>,
    /// With a quorum: the healthy voters by name.
    pub healthy_voters: Vec<String>,
    /// Without a quorum: what the live check got from each endpoint (URL passwords redacted).
    pub live_check: Option<String>,
}

/// Whether `e` says no quorum serves (members down, no leader, reads timing out), as opposed
/// to a setting or credential that is wrong (those are errors: the cluster may be fine).
fn no_quorum(e: &EtcdError) -> bool {
    match e {
        EtcdError::NoEndpointAvailable { errors } => errors.iter().all(no_quorum),
        EtcdError::Unreachable { .. }
        | EtcdError::Unavailable { .. }
        | EtcdError::Timeout { .. } => true,
        EtcdError::Request { message, .. } => {
            message.contains("timed out") || message.contains("leader")
        }
        _ => false,
    }
}

/// `config` with its timeouts no longer than the live check's.
fn live_config(config: &ClusterConfig) -> ClusterConfig {
    let mut config = config.clone();
    config.command_timeout = config.command_timeout.min(LIVE_CHECK_TIMEOUT);
    config.dial_timeout = config.dial_timeout.min(LIVE_CHECK_TIMEOUT);
    config
}

/// Plans the recovery of the members `candidates` name (each with what its data dir holds).
///
/// First the cluster itself, through `config`'s endpoints: when a linearizable member list
/// succeeds a quorum serves, and the plan is `none` (every given member is a healthy voter)
/// or `regrow` (the others, in `rejoin`); no survivor is chosen then. Without a quorum the
/// plan is `recover`, with the survivor [`choose_survivor`] picks (refused as it refuses).
/// A connection setting or credential that is wrong is an error, never taken for "no
/// quorum". Plans `restart` instead of `recover` when a majority of the voters still have
/// their data (see [`plan_recovery_with`]).
pub async fn plan_recovery(
    config: &ClusterConfig,
    candidates: &[Candidate],
) -> Result<RecoveryPlan, Error> {
    plan_recovery_with(config, candidates, PlanOptions::default()).await
}

/// The voters among `candidates` that still have their data, when they are a majority of
/// the survivor's membership (its db's voters, else its WAL's; the given members when neither
/// names any): starting them again restores the quorum, and forcing one would throw the
/// others' copies away for nothing.
fn intact_majority(choice: &SurvivorChoice, candidates: &[Candidate]) -> Option<Vec<String>> {
    let survivor = candidates
        .iter()
        .find(|c| c.name == choice.survivor)?
        .inspection()?;
    let membership = survivor.membership();
    let voters: Vec<&str> = membership
        .iter()
        .filter(|m| !m.is_learner)
        .map(|m| m.id.as_str())
        .collect();
    let intact: Vec<String> = candidates
        .iter()
        .filter(|c| {
            c.inspection().is_some_and(|i| {
                !i.is_learner
                    && i.wal.cluster_id == choice.cluster_id
                    && (voters.is_empty() || voters.contains(&i.wal.member_id.as_str()))
            })
        })
        .map(|c| c.name.clone())
        .collect();
    let size = if voters.is_empty() {
        candidates.len()
    } else {
        voters.len()
    };
    (intact.len() * 2 > size).then_some(intact)
}

/// [`plan_recovery`] with `options`.
pub async fn plan_recovery_with(
    config: &ClusterConfig,
    candidates: &[Candidate],
    options: PlanOptions,
) -> Result<RecoveryPlan, Error> {
    let client = Client::new(live_config(config));
    let linearizable = MemberListOptions {
        consistency: Some(Consistency::Linearizable),
    };
    match client.members().list_with(linearizable).await {
        Ok(_) => regrow_plan(&client, candidates).await,
        Err(e) if no_quorum(&e) => {
            let choice = choose_survivor(candidates)?;
            let intact = intact_majority(&choice, candidates).filter(|_| options.restart_intact);
            let seen = match &e {
                EtcdError::NoEndpointAvailable { errors } => {
                    format!(
                        "none of {} endpoints served a linearizable read",
                        errors.len()
                    )
                }
                _ => "no endpoint served a linearizable read".to_string(),
            };
            if let Some(restart) = intact {
                return Ok(RecoveryPlan {
                    action: PlanAction::Restart,
                    quorum: false,
                    reason: format!(
                        "no quorum serves ({seen}), but {} of the voters still have their data ({}): start them normally, nothing needs forcing",
                        restart.len(),
                        restart.join(", ")
                    ),
                    survivor: None,
                    member_id: None,
                    data_dir: None,
                    min_revision: None,
                    rejoin: candidates
                        .iter()
                        .filter(|c| !restart.contains(&c.name))
                        .map(|c| c.name.clone())
                        .collect(),
                    restart,
                    candidates: choice.candidates,
                    healthy_voters: Vec::new(),
                    live_check: Some(etcd_core::redact_urls(&e.to_string())),
                });
            }
            Ok(RecoveryPlan {
                action: PlanAction::Recover,
                quorum: false,
                reason: format!("no quorum serves ({seen}); {}", choice.reason),
                restart: Vec::new(),
                survivor: Some(choice.survivor),
                member_id: Some(choice.member_id),
                data_dir: Some(choice.data_dir),
                min_revision: Some(choice.min_revision),
                candidates: choice.candidates,
                rejoin: choice.rejoin,
                healthy_voters: Vec::new(),
                live_check: Some(etcd_core::redact_urls(&e.to_string())),
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// How many times the members are looked at before one counts as not healthy, and the pause
/// between looks: a member busy for a moment (a slow disk, a loaded host) must not be
/// re-added as if it were gone.
const LOOKS: usize = 6;
const BETWEEN_LOOKS: Duration = Duration::from_millis(500);

/// The plan when a quorum serves: which given members are not healthy voters, in any of a
/// few looks.
async fn regrow_plan(client: &Client, candidates: &[Candidate]) -> Result<RecoveryPlan, Error> {
    let mut healthy_voters: Vec<String> = Vec::new();
    let mut healthy_ids: Vec<String> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    // A candidate is a healthy voter by its name, or by its data dir's member ID (named after
    // that ID when its db did not hold its name yet: a member inspected just after it started).
    let healthy = |c: &Candidate, names: &[String], ids: &[String]| {
        names.contains(&c.name)
            || c.inspection()
                .is_some_and(|i| ids.contains(&i.wal.member_id))
    };
    for look in 0..LOOKS {
        if look > 0 {
            tokio::time::sleep(BETWEEN_LOOKS).await;
        }
        let view = client.cluster_view().await?;
        for member in view.voters().filter(|m| m.healthy) {
            if !healthy_voters.contains(&member.member.name) {
                healthy_voters.push(member.member.name.clone());
                healthy_ids.push(member.member.id.to_string());
            }
        }
        problems = view
            .members
            .iter()
            .filter(|m| !m.healthy)
            .map(|m| {
                format!(
                    "{}: {}",
                    m.member.name,
                    m.error.as_deref().unwrap_or("unhealthy")
                )
            })
            .collect();
        if candidates
            .iter()
            .all(|c| healthy(c, &healthy_voters, &healthy_ids))
        {
            break;
        }
    }
    let rejoin: Vec<String> = candidates
        .iter()
        .filter(|c| !healthy(c, &healthy_voters, &healthy_ids))
        .map(|c| c.name.clone())
        .collect();
    let (action, reason) = if rejoin.is_empty() {
        (
            PlanAction::None,
            format!(
                "a quorum serves and every given member is a healthy voter ({}): nothing to recover",
                healthy_voters.join(", ")
            ),
        )
    } else {
        let seen = if problems.is_empty() {
            String::new()
        } else {
            format!(" ({})", etcd_core::redact_urls(&problems.join("; ")))
        };
        (
            PlanAction::Regrow,
            format!(
                "a quorum serves ({} healthy voters): no survivor to force; re-add {}{seen}",
                healthy_voters.len(),
                rejoin.join(", ")
            ),
        )
    };
    Ok(RecoveryPlan {
        action,
        quorum: true,
        reason,
        survivor: None,
        member_id: None,
        data_dir: None,
        min_revision: None,
        candidates: Vec::new(),
        restart: Vec::new(),
        rejoin,
        healthy_voters,
        live_check: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::CandidateData;
    use super::super::testing::{inspection, member};
    use super::*;

    /// Three voters of one membership; `absent` have no data dir.
    fn three(absent: &[&str]) -> Vec<Candidate> {
        let mut all = vec![
            member("a", &[(2, 1)], 100, 100, 50),
            member("b", &[(2, 1)], 101, 99, 50),
            member("c", &[(2, 1)], 99, 99, 50),
        ];
        let voters: Vec<_> = all
            .iter_mut()
            .map(|c| inspection(c).db.members[0].clone())
            .collect();
        for c in &mut all {
            inspection(c).db.members = voters.clone();
        }
        for c in &mut all {
            if absent.contains(&c.name.as_str()) {
                c.data = CandidateData::Absent;
            }
        }
        all
    }

    #[test]
    fn a_majority_of_voters_with_their_data_restarts_instead_of_forcing() {
        let all = three(&[]);
        let choice = choose_survivor(&all).unwrap();
        assert_eq!(intact_majority(&choice, &all).unwrap(), ["a", "b", "c"]);
        let two = three(&["c"]);
        let choice = choose_survivor(&two).unwrap();
        assert_eq!(intact_majority(&choice, &two).unwrap(), ["a", "b"]);
        // One of three: a majority is gone, the survivor is forced.
        let one = three(&["a", "c"]);
        let choice = choose_survivor(&one).unwrap();
        assert_eq!(choice.survivor, "b");
        assert_eq!(intact_majority(&choice, &one), None);
        // Two of a five-member membership are no majority, whatever the inventory says.
        let mut five = three(&["c"]);
        let extra: Vec<_> = ["d", "e"]
            .iter()
            .map(|n| inspection(&mut member(n, &[(2, 1)], 1, 1, 1)).db.members[0].clone())
            .collect();
        for c in &mut five {
            if let CandidateData::Inspected(i) = &mut c.data {
                i.db.members.extend(extra.clone());
            }
        }
        // d and e are gone for good (declared lost): given, no data.
        for name in ["d", "e"] {
            five.push(Candidate {
                name: name.into(),
                data: CandidateData::Lost,
            });
        }
        let choice = choose_survivor(&five).unwrap();
        assert_eq!(intact_majority(&choice, &five), None);
    }

    #[test]
    fn only_a_cluster_that_cannot_answer_counts_as_without_quorum() {
        let unreachable = EtcdError::Unreachable {
            endpoint: "http://127.0.0.1:1".into(),
            timeout: Duration::from_secs(2),
            reason: "connection refused".into(),
        };
        assert!(no_quorum(&unreachable));
        assert!(no_quorum(&EtcdError::NoEndpointAvailable {
            errors: vec![unreachable]
        }));
        let auth = EtcdError::AuthFailed {
            endpoint: "http://127.0.0.1:1".into(),
            user: "root".into(),
            detail: "bad password".into(),
        };
        assert!(!no_quorum(&auth), "a wrong password is not a lost quorum");
        let denied = EtcdError::Request {
            operation: "member list",
            endpoint: "e".into(),
            message: "etcdserver: permission denied".into(),
        };
        assert!(!no_quorum(&denied));
    }

    #[test]
    fn the_live_check_never_waits_longer_than_its_own_timeout() {
        let mut config = ClusterConfig {
            command_timeout: Duration::from_secs(60),
            ..ClusterConfig::default()
        };
        let live = live_config(&config);
        assert_eq!(live.command_timeout, LIVE_CHECK_TIMEOUT);
        config.command_timeout = Duration::from_secs(1);
        assert_eq!(live_config(&config).command_timeout, Duration::from_secs(1));
    }
}
