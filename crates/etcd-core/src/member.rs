//! Cluster membership: listing members, and which endpoints a command addresses (adding,
//! removing, updating and promoting are in `membership`).

use serde::Serialize;

use crate::client::Client;
use crate::cluster::linearizable_read;
use crate::error::Result;
use crate::header::ResponseHeader;
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
    /// The response's header (for etcdctl's JSON; not in ours).
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
    /// The etcd version of the member that answered, when the list was read with
    /// [`Members::list_with`] and its status request answered; `None` otherwise.
    pub server_version: Option<String>,
    /// Whether the list was read linearizably (after a read through raft on the same member).
    pub linearizable: bool,
}

/// How a member list is read: etcdctl 3.6's `member list --consistency l|s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    /// After a linearizable read on the same member, so the list is at least as new as the
    /// leader's at that moment; needs a quorum.
    Linearizable,
    /// As the answering member knows it, even without a quorum.
    Serializable,
}

/// What [`Members::list_with`] is asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberListOptions {
    /// `None`: as the server's own etcdctl reads it: linearizable from etcd 3.5 on (etcdctl
    /// 3.5 always asks so, 3.6's `--consistency` defaults to `l`), serializable from etcd
    /// 3.4 (whose servers have no linearizable member list).
    pub consistency: Option<Consistency>,
}

/// The cluster's members ([`Client::members`]): the list, and adding, removing, updating
/// and promoting members, each checked against the cluster as read.
#[derive(Debug, Clone, Copy)]
pub struct Members<'c>(pub(crate) &'c Client);

impl Client {
    /// The cluster's members.
    pub fn members(&self) -> Members<'_> {
        Members(self)
    }
}

impl Members<'_> {
    /// The cluster's members, from the first endpoint that answers (the next one when an
    /// endpoint fails, see [`Client::read_any`]).
    pub async fn list(&self) -> Result<MemberList> {
        let response = self
            .0
            .read_any(|client| async move {
                client
                    .call("member list", |mut c| async move { c.member_list().await })
                    .await
            })
            .await?;
        Ok(MemberList::of(&response))
    }

    /// The client URLs of every started member, each once, in member order: what `--cluster`
    /// expands to.
    pub async fn client_urls(&self) -> Result<Vec<String>> {
        let list = self.list().await?;
        let mut urls = Vec::new();
        for url in list.members.iter().flat_map(|m| m.client_urls.iter()) {
            if !urls.contains(url) {
                urls.push(url.clone());
            }
        }
        Ok(urls)
    }

    /// The member list read as `options` ask, from the first endpoint that answers, with
    /// the answering member's version.
    ///
    /// etcd 3.5 and 3.6 read a linearizable list with a read barrier
    /// (`LinearizableReadNotify`) before listing; the etcd client library here cannot set the
    /// request's `linearizable` field, so the barrier is a linearizable read on the same
    /// member, which gives the same guarantee (and works on etcd 3.4 too, when asked).
    pub async fn list_with(&self, options: MemberListOptions) -> Result<MemberList> {
        let consistency = options.consistency;
        let (response, version, linearizable) = self
            .0
            .read_any(|client| async move {
                // For the default and for etcdctl's output of this release; the list does not
                // depend on it.
                let version = match client
                    .call("status", |mut c| async move { c.status().await })
                    .await
                {
                    Ok(status) => Some(status.version().to_string()),
                    // An unreachable member: on to the next endpoint.
                    Err(e) if e.is_endpoint_failure() => return Err(e),
                    Err(_) => None,
                };
                let linearizable = match consistency {
                    Some(Consistency::Linearizable) => true,
                    Some(Consistency::Serializable) => false,
                    None => version.as_deref().is_none_or(linearizable_member_list),
                };
                if linearizable {
                    linearizable_read(&client).await?;
                }
                let response = client
                    .call("member list", |mut c| async move { c.member_list().await })
                    .await?;
                Ok((response, version, linearizable))
            })
            .await?;
        let mut list = MemberList::of(&response);
        list.server_version = version;
        list.linearizable = linearizable;
        Ok(list)
    }
}

/// Whether a member of this etcd version serves a linearizable member list when asked
/// (3.5 and later: the request's `linearizable` field).
fn linearizable_member_list(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (3, 5),
        _ => true,
    }
}

impl MemberList {
    /// The list in a member list response, members in ID order.
    pub fn of(response: &etcd_client::MemberListResponse) -> MemberList {
        let header = response.header();
        let mut members: Vec<Member> = response.members().iter().map(Member::from).collect();
        members.sort_by_key(|m| m.id);
        MemberList {
            cluster_id: MemberId(header.map(|h| h.cluster_id()).unwrap_or_default()),
            answered_by: MemberId(header.map(|h| h.member_id()).unwrap_or_default()),
            members,
            header: ResponseHeader::of(header),
            server_version: None,
            linearizable: false,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_lists_are_linearizable_by_default_from_etcd_3_5() {
        assert!(!linearizable_member_list("3.4.23"));
        assert!(linearizable_member_list("3.5.1"));
        assert!(linearizable_member_list("3.6.14"));
        assert!(linearizable_member_list("4.0.0"));
    }
}
