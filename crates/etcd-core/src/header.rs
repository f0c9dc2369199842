//! The header etcd puts on every response, kept as typed data so that front-ends can print
//! it as etcdctl does (`-w json`'s `header`) and callers can see the revision they read at.

use serde::Serialize;

/// Which cluster and member answered, at which revision and raft term.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ResponseHeader {
    /// The cluster's ID.
    pub cluster_id: u64,
    /// The ID of the member that answered.
    pub member_id: u64,
    /// The store's revision when the request was served (0 where etcd leaves it out, as in
    /// member list).
    pub revision: i64,
    /// The raft term of the member that answered.
    pub raft_term: u64,
}

impl ResponseHeader {
    /// The header of a response (`None` when etcd sent none).
    pub fn of(header: Option<&etcd_client::ResponseHeader>) -> Option<ResponseHeader> {
        header.map(|h| ResponseHeader {
            cluster_id: h.cluster_id(),
            member_id: h.member_id(),
            revision: h.revision(),
            raft_term: h.raft_term(),
        })
    }
}
