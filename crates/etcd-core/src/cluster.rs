//! One look at the whole cluster: every member with its health and status, asked over its own
//! connection. The safety guards of member and maintenance operations decide from this.

use etcd_client::GetOptions;
use serde::Serialize;

use crate::client::Client;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::id::MemberId;
use crate::member::Member;

/// What one member reported, when it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberStatus {
    /// etcd version.
    pub version: String,
    /// db file size.
    pub db_size: i64,
    /// db bytes in use.
    pub db_size_in_use: i64,
    /// Whether it is the leader.
    pub is_leader: bool,
    /// The leader it knows of.
    pub leader: MemberId,
    /// Raft term.
    pub raft_term: u64,
    /// Raft index.
    pub raft_index: u64,
    /// Raft applied index.
    pub raft_applied_index: u64,
    /// Store revision.
    pub revision: i64,
    /// Errors it reports (alarms).
    pub errors: Vec<String>,
}

/// A member with what it says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberState {
    /// The member as the cluster records it.
    pub member: Member,
    /// The client URL used to reach it (its first), if it has one.
    pub endpoint: Option<String>,
    /// Healthy: status answered and (for voters) a linearizable read succeeded.
    pub healthy: bool,
    /// Its status, when it answered.
    pub status: Option<MemberStatus>,
    /// Why it is not healthy.
    pub error: Option<String>,
}

/// Every member's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterView {
    /// Cluster ID.
    pub cluster_id: MemberId,
    /// Members in ID order.
    pub members: Vec<MemberState>,
    /// The leader, as the healthy members agree on it.
    pub leader: Option<MemberId>,
}

impl ClusterView {
    /// Voting members (not learners).
    pub fn voters(&self) -> impl Iterator<Item = &MemberState> {
        self.members.iter().filter(|m| !m.member.is_learner)
    }

    /// How many voting members must be healthy for the cluster to have quorum.
    pub fn quorum(&self) -> usize {
        self.voters().count() / 2 + 1
    }

    /// Healthy voting members.
    pub fn healthy_voters(&self) -> usize {
        self.voters().filter(|m| m.healthy).count()
    }

    /// The state of the leader, if known.
    pub fn leader_state(&self) -> Option<&MemberState> {
        let leader = self.leader?;
        self.members.iter().find(|m| m.member.id == leader)
    }

    /// Members that are not healthy, with the reason.
    pub fn unhealthy(&self) -> Vec<&MemberState> {
        self.members.iter().filter(|m| !m.healthy).collect()
    }
}

/// etcdctl's health test: a linearizable read of the key `health` goes through raft, so it
/// succeeds only with a quorum and a leader. Permission denied counts as success (the read
/// was ordered by raft before auth refused it).
pub(crate) async fn linearizable_read(client: &EndpointClient) -> Result<()> {
    let read = client
        .call("health read", |mut c| async move {
            c.get("health", Some(GetOptions::new().with_count_only()))
                .await
        })
        .await;
    match read {
        Ok(_) => Ok(()),
        Err(Error::Request { message, .. }) if message.contains("permission denied") => Ok(()),
        Err(e) => Err(e),
    }
}

async fn probe(client: &Client, member: &Member) -> MemberState {
    let Some(endpoint) = member.client_urls.first().cloned() else {
        return MemberState {
            member: member.clone(),
            endpoint: None,
            healthy: false,
            status: None,
            error: Some(if member.started {
                "it advertises no client URL".into()
            } else {
                "it has not started yet".into()
            }),
        };
    };
    let answer = async {
        let client = client.endpoint(&endpoint).await?;
        let status = client
            .call("status", |mut c| async move { c.status().await })
            .await?;
        let member_id = status.header().map(|h| h.member_id()).unwrap_or_default();
        let member_status = MemberStatus {
            version: status.version().to_string(),
            db_size: status.db_size(),
            db_size_in_use: status.raft_used_db_size(),
            is_leader: status.leader() != 0 && status.leader() == member_id,
            leader: MemberId(status.leader()),
            raft_term: status.raft_term(),
            raft_index: status.raft_index(),
            raft_applied_index: status.raft_applied_index(),
            revision: status.header().map(|h| h.revision()).unwrap_or_default(),
            errors: status.errors().to_vec(),
        };
        if !member.is_learner
            && let Err(e) = linearizable_read(&client).await
        {
            return Ok::<_, Error>((member_status, Some(e.to_string())));
        }
        if !member_status.errors.is_empty() {
            let errors = member_status.errors.join("; ");
            return Ok((member_status, Some(format!("it reports: {errors}"))));
        }
        Ok((member_status, None))
    }
    .await;
    match answer {
        Ok((status, error)) => MemberState {
            member: member.clone(),
            endpoint: Some(endpoint),
            healthy: error.is_none(),
            status: Some(status),
            error,
        },
        Err(e) => MemberState {
            member: member.clone(),
            endpoint: Some(endpoint),
            healthy: false,
            status: None,
            error: Some(e.to_string()),
        },
    }
}

impl Client {
    /// Looks at every member concurrently: the member list, then each member's status and
    /// (for voters) a linearizable read, each over its own connection.
    pub async fn cluster_view(&self) -> Result<ClusterView> {
        let list = self.members().list().await?;
        let members = futures::future::join_all(list.members.iter().map(|m| probe(self, m))).await;
        let leader = members
            .iter()
            .filter_map(|m| m.status.as_ref())
            .find(|s| s.is_leader)
            .map(|s| s.leader)
            .or_else(|| {
                members
                    .iter()
                    .filter_map(|m| m.status.as_ref())
                    .map(|s| s.leader)
                    .find(|l| l.0 != 0)
            });
        Ok(ClusterView {
            cluster_id: list.cluster_id,
            members,
            leader,
        })
    }
}
