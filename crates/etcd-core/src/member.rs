//! Cluster membership: listing members, and which endpoints a command addresses (adding,
//! removing, updating and promoting are in `membership`).

use serde::Serialize;

use crate::config::ClusterConfig;
use crate::error::Result;
use crate::id::MemberId;

/// One member as the cluster records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    /// Member ID.
    pub id: MemberId,
    /// Name; empty for a member added but never started.
    pub name: String,
    /// URLs its peers reach it on.
    pub peer_urls: Vec<String>,
    /// URLs clients reach it on; empty until it starts.
    pub client_urls: Vec<String>,
    /// Whether it is a non-voting learner.
    pub is_learner: bool,
    /// Whether it has started (etcd learns its name when it first starts).
    pub started: bool,
}

impl From<&etcd_client::Member> for Member {
    fn from(m: &etcd_client::Member) -> Self {
        Member {
            id: MemberId(m.id()),
            name: m.name().to_string(),
            peer_urls: m.peer_urls().to_vec(),
            client_urls: m.client_urls().to_vec(),
            is_learner: m.is_learner(),
            started: !m.name().is_empty(),
        }
    }
}

/// The member list with the cluster it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberList {
    /// Cluster ID.
    pub cluster_id: MemberId,
    /// The member that answered.
    pub answered_by: MemberId,
    /// Members in ID order.
    pub members: Vec<Member>,
}

/// Lists the cluster's members, asking the first endpoint that answers (the next one when an
/// endpoint fails, see [`ClusterConfig::read_any`]).
pub async fn member_list(config: &ClusterConfig) -> Result<MemberList> {
    crate::client::Client::new(config.clone())
        .member_list()
        .await
}

/// The client URLs of every started member, each once, in member order: what `--cluster`
/// expands to.
pub async fn cluster_client_urls(config: &ClusterConfig) -> Result<Vec<String>> {
    let list = member_list(config).await?;
    let mut urls = Vec::new();
    for url in list.members.iter().flat_map(|m| m.client_urls.iter()) {
        if !urls.contains(url) {
            urls.push(url.clone());
        }
    }
    Ok(urls)
}

/// Which endpoints an endpoint command addresses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Targets {
    /// The configured (or discovered) endpoints.
    #[default]
    Configured,
    /// Every member's client URLs, from the member list.
    Cluster,
}

impl Targets {
    /// Every member's client URLs when `cluster` (a `--cluster` switch or `cluster: true`
    /// option), else the configured endpoints.
    pub fn of(cluster: bool) -> Targets {
        if cluster {
            Targets::Cluster
        } else {
            Targets::Configured
        }
    }
}

/// Resolves [`Targets`] to endpoint URLs.
pub async fn target_endpoints(config: &ClusterConfig, targets: Targets) -> Result<Vec<String>> {
    match targets {
        Targets::Configured => config.resolve_endpoints().await,
        Targets::Cluster => cluster_client_urls(config).await,
    }
}
