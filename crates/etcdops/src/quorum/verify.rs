//! Whether the survivor's force-new-cluster start took: one member, healthy, the survivor's
//! own member ID, its revision kept.

use etcd_core::{Client, ClusterConfig, MemberId};
use serde::Serialize;

use crate::Error;

/// The survivor running alone, as verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SurvivorVerified {
    /// Its member ID.
    pub member_id: String,
    /// Its name.
    pub name: String,
    /// The cluster ID (kept from before the recovery).
    pub cluster_id: String,
    /// The revision it serves.
    pub revision: i64,
    /// The endpoint it answered on.
    pub endpoint: Option<String>,
}

/// Checks, through `config`'s endpoints, that the cluster has exactly one member, healthy
/// (a linearizable read succeeds), with the member ID `member_id` (hex), serving a revision
/// of at least `min_revision`. Anything else is [`Error::NotVerified`] saying what is
/// still wrong (a caller retries while etcd starts); an unreachable endpoint is the
/// connection error.
pub async fn verify_survivor(
    config: &ClusterConfig,
    member_id: &str,
    min_revision: i64,
) -> Result<SurvivorVerified, Error> {
    let wanted: MemberId = member_id
        .parse()
        .map_err(|reason: String| Error::NotVerified {
            reason: format!("the survivor's member ID: {reason}"),
        })?;
    let view = Client::new(config.clone()).cluster_view().await?;
    let not = |reason: String| Err(Error::NotVerified { reason });
    let [only] = view.members.as_slice() else {
        let listed = view
            .members
            .iter()
            .map(|m| format!("{} ({})", m.member.name, m.member.id))
            .collect::<Vec<_>>()
            .join(", ");
        return not(format!(
            "the cluster has {} members ({listed}), not the survivor alone: it has not started with force-new-cluster yet",
            view.members.len()
        ));
    };
    if only.member.id != wanted {
        return not(format!(
            "the one member is {} ({}), not the survivor {wanted}: this is another cluster or another member's data dir",
            only.member.name, only.member.id
        ));
    }
    if !only.healthy {
        return not(format!(
            "the survivor {} is not healthy yet: {}",
            only.member.name,
            only.error.as_deref().unwrap_or("no answer")
        ));
    }
    let revision = only.status.as_ref().map_or(0, |s| s.revision);
    if revision < min_revision {
        return not(format!(
            "the survivor {} serves revision {revision}, below {min_revision} its db held: data is missing; do not go on, restore it from its data dir copy",
            only.member.name
        ));
    }
    Ok(SurvivorVerified {
        member_id: only.member.id.to_string(),
        name: only.member.name.clone(),
        cluster_id: view.cluster_id.to_string(),
        revision,
        endpoint: only.endpoint.clone(),
    })
}
