//! The membership changes a WAL holds (its `EntryConfChange` entries), so a data dir whose db
//! has not been written yet (a member killed within etcd's 100 ms backend commit interval of
//! its start) still tells which members its cluster has: a guard that reads the membership
//! must never take "the db names none" for "there are no others".

use serde::{Deserialize, Serialize};

use super::pb;
use crate::status::DbMember;

/// What one membership change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MembershipChangeKind {
    /// A voter added (or a learner promoted: `promote`).
    Add,
    /// A learner added.
    AddLearner,
    /// A learner promoted to voter.
    Promote,
    /// A member removed.
    Remove,
    /// A member's peer URLs changed.
    Update,
}

/// One membership change found in the WAL, at its raft index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MembershipChange {
    /// Raft index of the entry.
    pub index: u64,
    /// What it did.
    pub kind: MembershipChangeKind,
    /// Member ID, lowercase hex.
    pub member_id: String,
    /// The member's name, when the change carries it (additions made at bootstrap or by
    /// `member add`; empty otherwise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Peer URLs, when the change carries them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_urls: Vec<String>,
}

/// The member JSON etcd puts in a change's context (`ConfigChangeContext`: a member's
/// fields, flattened, and `isPromote`). Every field is optional: a removal carries none.
#[derive(Debug, Default, Deserialize)]
struct Context {
    #[serde(default)]
    name: String,
    #[serde(default, rename = "peerURLs")]
    peer_urls: Vec<String>,
    #[serde(default, rename = "isPromote")]
    is_promote: bool,
}

/// The change an `EntryConfChange` entry's data holds; `None` for data that does not decode
/// (the inspection reports the membership it can read, the WAL's checksums already passed).
pub(super) fn decode_change(index: u64, entry: &[u8]) -> Option<MembershipChange> {
    use prost::Message;
    let data = pb::EntryData::decode(entry).ok()?.data;
    let change = pb::ConfChange::decode(data.as_slice()).ok()?;
    let context: Context = if change.context.is_empty() {
        Context::default()
    } else {
        serde_json::from_slice(&change.context).unwrap_or_default()
    };
    let kind = match change.kind {
        0 if context.is_promote => MembershipChangeKind::Promote,
        0 => MembershipChangeKind::Add,
        1 => MembershipChangeKind::Remove,
        2 => MembershipChangeKind::Update,
        3 => MembershipChangeKind::AddLearner,
        _ => return None,
    };
    Some(MembershipChange {
        index,
        kind,
        member_id: format!("{:x}", change.node_id),
        name: context.name,
        peer_urls: context.peer_urls,
    })
}

/// The members after applying `changes` up to raft index `commit` (committed ones only: an
/// appended change may yet be overwritten), in the order they were first added.
pub(super) fn members_after(changes: &[MembershipChange], commit: u64) -> Vec<DbMember> {
    let mut members: Vec<DbMember> = Vec::new();
    for change in changes.iter().filter(|c| c.index <= commit) {
        let at = members.iter().position(|m| m.id == change.member_id);
        match (change.kind, at) {
            // A promotion of a member this WAL never saw added (added before its start) adds
            // it as the voter it now is.
            (
                MembershipChangeKind::Add
                | MembershipChangeKind::AddLearner
                | MembershipChangeKind::Promote,
                None,
            ) => members.push(DbMember {
                id: change.member_id.clone(),
                name: change.name.clone(),
                peer_urls: change.peer_urls.clone(),
                client_urls: Vec::new(),
                is_learner: change.kind == MembershipChangeKind::AddLearner,
            }),
            (MembershipChangeKind::Promote | MembershipChangeKind::Add, Some(at)) => {
                members[at].is_learner = false;
            }
            (MembershipChangeKind::Remove, Some(at)) => {
                members.remove(at);
            }
            (MembershipChangeKind::Update, Some(at)) => {
                if !change.peer_urls.is_empty() {
                    members[at].peer_urls = change.peer_urls.clone();
                }
            }
            (MembershipChangeKind::AddLearner, Some(_))
            | (MembershipChangeKind::Remove | MembershipChangeKind::Update, None) => {}
        }
    }
    members
}
