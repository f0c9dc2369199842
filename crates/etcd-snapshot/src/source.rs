//! Choosing the member to stream a snapshot from.
//!
//! Default: a healthy follower with the highest raft index (sparing the leader, whose disk and
//! network serve every write), ties broken by the lowest member ID so that the choice is the
//! same wherever the command runs. The leader serves only when no follower is healthy (a
//! one-member cluster). `--endpoint` forces one member.

use etcd_core::{Client, ClusterConfig, EndpointClient, MemberId};
use serde::Serialize;

use crate::error::{Result, SnapshotError};

/// The member chosen, with what it reported just before the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotSource {
    /// Endpoint streamed from.
    pub endpoint: String,
    /// Cluster ID.
    pub cluster_id: MemberId,
    /// Member ID.
    pub member_id: MemberId,
    /// Member name (empty when unknown).
    pub member_name: String,
    /// Whether it was the leader.
    pub is_leader: bool,
    /// etcd version.
    pub etcd_version: String,
    /// Store revision.
    pub revision: i64,
    /// Raft term.
    pub raft_term: u64,
    /// Raft index.
    pub raft_index: u64,
    /// db size in use.
    pub db_size_in_use: u64,
}

struct Candidate {
    source: SnapshotSource,
    client: EndpointClient,
}

async fn probe(config: &ClusterConfig, endpoint: &str, name: &str) -> Result<Candidate> {
    let client = config.connect_endpoint(endpoint).await?;
    let status = client
        .call("status", |mut c| async move { c.status().await })
        .await?;
    if !status.errors().is_empty() {
        return Err(SnapshotError::NoSource {
            reason: format!("{endpoint} reports errors: {}", status.errors().join("; ")),
        });
    }
    let header = status.header();
    let member_id = header.map(|h| h.member_id()).unwrap_or_default();
    Ok(Candidate {
        source: SnapshotSource {
            endpoint: client.endpoint().to_string(),
            cluster_id: MemberId(header.map(|h| h.cluster_id()).unwrap_or_default()),
            member_id: MemberId(member_id),
            member_name: name.to_string(),
            is_leader: status.leader() == member_id,
            etcd_version: status.version().to_string(),
            revision: header.map(|h| h.revision()).unwrap_or_default(),
            raft_term: status.raft_term(),
            raft_index: status.raft_index(),
            db_size_in_use: u64::try_from(status.raft_used_db_size()).unwrap_or(0),
        },
        client,
    })
}

/// Picks the member to snapshot and returns it with a client connected to exactly it.
pub async fn choose_source(
    config: &ClusterConfig,
    forced_endpoint: Option<&str>,
) -> Result<(SnapshotSource, EndpointClient)> {
    if let Some(endpoint) = forced_endpoint {
        let candidate = probe(config, endpoint, "").await?;
        let mut source = candidate.source;
        if let Ok(list) = Client::new(config.clone()).members().list().await
            && let Some(m) = list.members.iter().find(|m| m.id == source.member_id)
        {
            source.member_name = m.name.clone();
        }
        return Ok((source, candidate.client));
    }
    let members = Client::new(config.clone()).members().list().await?;
    let targets: Vec<(String, String)> = members
        .members
        .iter()
        .filter(|m| m.started && !m.is_learner)
        .filter_map(|m| m.client_urls.first().map(|u| (u.clone(), m.name.clone())))
        .collect();
    let probes = futures::future::join_all(
        targets
            .iter()
            .map(|(endpoint, name)| probe(config, endpoint, name)),
    )
    .await;
    let mut problems = Vec::new();
    let mut healthy = Vec::new();
    for (probe, (endpoint, _)) in probes.into_iter().zip(&targets) {
        match probe {
            Ok(c) => healthy.push(c),
            Err(e) => problems.push((endpoint.clone(), e)),
        }
    }
    healthy.sort_by(|a, b| {
        (
            a.source.is_leader,
            std::cmp::Reverse(a.source.raft_index),
            a.source.member_id,
        )
            .cmp(&(
                b.source.is_leader,
                std::cmp::Reverse(b.source.raft_index),
                b.source.member_id,
            ))
    });
    match healthy.into_iter().next() {
        Some(best) => Ok((best.source, best.client)),
        None if problems.is_empty() => Err(SnapshotError::NoSource {
            reason: "the member list has no started voting member with a client URL".into(),
        }),
        None => Err(SnapshotError::NoMemberAnswered { problems }),
    }
}
