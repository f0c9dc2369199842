//! The recovery plan: ask the cluster first, choose a survivor only when no quorum serves.

use std::time::Duration;

use etcd_core::{Client, ClusterConfig, Consistency, Error as EtcdError, MemberListOptions};
use serde::Serialize;

use super::survivor::{CandidateSummary, choose_survivor};
use super::{Candidate, QuorumError};

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
    /// No quorum: start `survivor` once with `--force-new-cluster`, then rejoin the others.
    Recover,
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
    /// With `recover`: every candidate as judged (empty otherwise: none was judged).
    pub candidates: Vec<CandidateSummary>,
    /// The given members to re-add (fresh data dir, as learners): with `recover` every one
    /// but the survivor; with `regrow` those that are not healthy voters.
    pub rejoin: Vec<String>,
    /// With a quorum: the healthy voters by name.
    pub healthy_voters: Vec<String>,
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
/// quorum".
pub async fn plan_recovery(
    config: &ClusterConfig,
    candidates: &[Candidate],
) -> Result<RecoveryPlan, QuorumError> {
    let client = Client::new(live_config(config));
    let linearizable = MemberListOptions {
        consistency: Some(Consistency::Linearizable),
    };
    match client.member_list_with(linearizable).await {
        Ok(_) => regrow_plan(&client, candidates).await,
        Err(e) if no_quorum(&e) => {
            let choice = choose_survivor(candidates)?;
            Ok(RecoveryPlan {
                action: PlanAction::Recover,
                quorum: false,
                reason: format!(
                    "no quorum serves ({}); {}",
                    etcd_core::redact_urls(&e.to_string()),
                    choice.reason
                ),
                survivor: Some(choice.survivor),
                member_id: Some(choice.member_id),
                data_dir: Some(choice.data_dir),
                min_revision: Some(choice.min_revision),
                candidates: choice.candidates,
                rejoin: choice.rejoin,
                healthy_voters: Vec::new(),
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// The plan when a quorum serves: which given members are not healthy voters.
async fn regrow_plan(
    client: &Client,
    candidates: &[Candidate],
) -> Result<RecoveryPlan, QuorumError> {
    let view = client.cluster_view().await?;
    let healthy_voters: Vec<String> = view
        .voters()
        .filter(|m| m.healthy)
        .map(|m| m.member.name.clone())
        .collect();
    let rejoin: Vec<String> = candidates
        .iter()
        .filter(|c| !healthy_voters.contains(&c.name))
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
        (
            PlanAction::Regrow,
            format!(
                "a quorum serves ({} of {} voters healthy): no survivor to force; re-add {}",
                view.healthy_voters(),
                view.voters().count(),
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
        rejoin,
        healthy_voters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
