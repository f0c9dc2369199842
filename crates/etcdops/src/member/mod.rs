//! Membership workflows: add (a voter or a learner), remove, update (peer URLs) and promote,
//! each one call with a typed request and a serde result, and [`apply`], the state form the
//! Ansible module uses (`present`, `absent`, `promoted`, `updated`, with the member named by
//! ID, name or peer URL, check mode and diff).
//!
//! Every workflow passes the guards itself: first the OpenShift operator guard
//! ([`Guards::check`]), then the quorum guards ([`crate::guard::quorum`]) on the cluster as the
//! change is about to be made against it. Each is refused unless `force`; a forced operator
//! guard's warning comes back in the result's `warnings`. Asking for what is already true
//! changes nothing and says so; a dry run runs every guard and changes nothing.
//!
//! ```no_run
//! use etcdops::guard::{Force, Guards};
//! use etcdops::member::{RemoveRequest, remove};
//!
//! # async fn example(config: &etcdops::client::ClusterConfig) -> Result<(), etcdops::Error> {
//! let request = RemoveRequest { member: "etcd-2".into(), ..Default::default() };
//! let done = remove(config, &Guards::on_host("/"), &request).await?;
//! println!("{} (changed: {})", done.result.message, done.result.changed);
//! # Ok(())
//! # }
//! ```

pub mod info;

use std::collections::BTreeMap;

use etcd_common::Hint;
use etcd_core::{Client, ClusterConfig, MemberAddRequest, MemberQuery};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::guard::{Force, Guards, Operation, Passed};
/// The membership as etcd reports it.
pub use etcd_core::{
    Member, MemberAddResult, MemberChangeResult, MemberId, MemberList, MemberListOptions,
};

pub use etcd_common::options::{MEMBER, NAME, PEER_URLS};

/// A workflow's result with the warnings of the guards it was forced past.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guarded<T> {
    /// What the operation did.
    #[serde(flatten)]
    pub result: T,
    /// The warnings to give: a guard forced through.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// A request to add a member (`learner`: as a non-voting learner).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct AddRequest {
    /// The name the new member starts with (its etcd's `ETCD_NAME`).
    pub name: String,
    /// Its peer URLs.
    #[serde(default)]
    pub peer_urls: Vec<String>,
    /// Add it as a non-voting learner.
    #[serde(default)]
    pub learner: bool,
    /// Go past the guards.
    #[serde(default)]
    pub force: Force,
    /// Run every guard, change nothing (check mode).
    #[serde(skip)]
    pub dry_run: bool,
}

/// A request to remove, or promote, the member named by ID, name or peer URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct RemoveRequest {
    /// The member: its ID (hex), name or peer URL.
    pub member: String,
    /// Go past the guards.
    #[serde(default)]
    pub force: Force,
    /// Run every guard, change nothing (check mode).
    #[serde(skip)]
    pub dry_run: bool,
}

/// A request to promote a learner: the same fields as a removal.
pub type PromoteRequest = RemoveRequest;

/// A request to change a member's peer URLs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct UpdateRequest {
    /// The member: its ID (hex), name or peer URL.
    pub member: String,
    /// Its new peer URLs.
    pub peer_urls: Vec<String>,
    /// Go past the guards.
    #[serde(default)]
    pub force: Force,
    /// Change nothing, say what would change (check mode).
    #[serde(skip)]
    pub dry_run: bool,
}

/// The operator guard of `operation`: the decision the primitive asks (it runs the quorum
/// guards), and its warning when forced through.
async fn operator(
    config: &ClusterConfig,
    guards: &Guards,
    operation: Operation,
    force: Force,
) -> Result<(Passed, Vec<String>)> {
    let passed = guards.check(operation, force, Some(config)).await?;
    let warnings = passed.warning().into_iter().collect();
    Ok((passed, warnings))
}

/// Adds a member, or confirms it is there; refused by the OpenShift operator guard, and
/// (a voter) while any member is unhealthy, unless forced.
pub async fn add(
    config: &ClusterConfig,
    guards: &Guards,
    request: &AddRequest,
) -> Result<Guarded<MemberAddResult>> {
    let (passed, warnings) = operator(config, guards, Operation::MemberAdd, request.force).await?;
    let core = MemberAddRequest {
        name: request.name.clone(),
        peer_urls: request.peer_urls.clone(),
        learner: request.learner,
        dry_run: request.dry_run,
    };
    let result = Client::new(config.clone())
        .members()
        .add(&core, &passed)
        .await?;
    Ok(Guarded { result, warnings })
}

/// Removes a member, or confirms it is gone (a leader hands leadership over first); refused
/// by the OpenShift operator guard, and when the removal would leave no quorum of healthy
/// voters, unless forced.
pub async fn remove(
    config: &ClusterConfig,
    guards: &Guards,
    request: &RemoveRequest,
) -> Result<Guarded<MemberChangeResult>> {
    let query = MemberQuery::from(&request.member);
    remove_member(config, guards, query, request.force, request.dry_run).await
}

/// [`remove`] of the member `query` names.
async fn remove_member(
    config: &ClusterConfig,
    guards: &Guards,
    query: MemberQuery,
    force: Force,
    dry_run: bool,
) -> Result<Guarded<MemberChangeResult>> {
    let (passed, warnings) = operator(config, guards, Operation::MemberRemove, force).await?;
    let result = Client::new(config.clone())
        .members()
        .remove(query, dry_run, &passed)
        .await?;
    Ok(Guarded { result, warnings })
}

/// Changes a member's peer URLs, or confirms they are these; refused by the OpenShift
/// operator guard unless forced.
pub async fn update(
    config: &ClusterConfig,
    guards: &Guards,
    request: &UpdateRequest,
) -> Result<Guarded<MemberChangeResult>> {
    let (passed, warnings) =
        operator(config, guards, Operation::MemberUpdate, request.force).await?;
    let result = Client::new(config.clone())
        .members()
        .update(
            &request.member,
            &request.peer_urls,
            request.dry_run,
            &passed,
        )
        .await?;
    Ok(Guarded { result, warnings })
}

/// Promotes a learner, or confirms it votes; refused by the OpenShift operator guard, and
/// while the learner does not answer or is behind the leader, unless forced.
pub async fn promote(
    config: &ClusterConfig,
    guards: &Guards,
    request: &PromoteRequest,
) -> Result<Guarded<MemberChangeResult>> {
    let query = MemberQuery::from(&request.member);
    promote_member(config, guards, query, request.force, request.dry_run).await
}

/// [`promote`] of the member `query` names.
pub(crate) async fn promote_member(
    config: &ClusterConfig,
    guards: &Guards,
    query: MemberQuery,
    force: Force,
    dry_run: bool,
) -> Result<Guarded<MemberChangeResult>> {
    let (passed, warnings) = operator(config, guards, Operation::MemberPromote, force).await?;
    let result = Client::new(config.clone())
        .members()
        .promote(query, dry_run, &passed)
        .await?;
    Ok(Guarded { result, warnings })
}

/// The state a member is asked to be in.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Wanted {
    /// A member (added, as a learner when asked).
    #[default]
    Present,
    /// Not a member (removed).
    Absent,
    /// A voting member (promoted).
    Promoted,
    /// A member with these peer URLs (updated).
    Updated,
}

impl Wanted {
    /// The operation that brings a member into this state.
    pub fn operation(self) -> Operation {
        match self {
            Wanted::Present => Operation::MemberAdd,
            Wanted::Absent => Operation::MemberRemove,
            Wanted::Promoted => Operation::MemberPromote,
            Wanted::Updated => Operation::MemberUpdate,
        }
    }
}

/// A member in the state asked for: the Ansible module's arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct MemberRequest {
    /// The state asked for (default present).
    #[serde(default)]
    pub state: Wanted,
    /// The member's name (a new member's, or which member).
    pub name: Option<String>,
    /// Its peer URLs (a new member's, or an updated one's new ones).
    #[serde(default)]
    pub peer_urls: Vec<String>,
    /// Add as a learner.
    #[serde(default)]
    pub learner: bool,
    /// Which member: its ID, name or peer URL (absent, promoted, updated).
    pub member: Option<String>,
    /// Go past the guards.
    #[serde(default)]
    pub force: Force,
    /// Run every guard, change nothing (check mode).
    #[serde(skip)]
    pub dry_run: bool,
    /// Also return the member list before and after.
    #[serde(skip)]
    pub diff: bool,
    /// Promoted: wait at most this long for the learner to start and catch up, then promote
    /// it (`crate::wait::promote_when_ready`); in a dry run, look once and say what a real run
    /// would wait for.
    #[serde(skip)]
    pub wait: Option<std::time::Duration>,
}

impl MemberRequest {
    /// Which member a removal or promotion means: `member` (its ID, name or peer URL), else
    /// the name and peer URLs, matched as an addition matches them
    /// ([`etcd_core::match_member`]): a learner that has not started has no name yet, and
    /// `present` found it by its peer URLs, so `absent` and `promoted` find it the same way.
    fn query(&self) -> Result<MemberQuery> {
        if self.member.is_none() && self.name.is_none() && self.peer_urls.is_empty() {
            return Err(Error::invalid(
                "say which member: give its ID, name or peer URL",
                Some(Hint::any_of(&[MEMBER, NAME, PEER_URLS])),
            ));
        }
        Ok(MemberQuery {
            member: self.member.clone(),
            name: self.name.clone(),
            peer_urls: self.peer_urls.clone(),
        })
    }
}

/// The member list before and after a change (after: as it will be, in a dry run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MembersDiff {
    /// Before the change.
    pub before: Vec<Member>,
    /// After it.
    pub after: Vec<Member>,
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberOutcome {
    /// Whether the cluster changed (or would, in a dry run).
    pub changed: bool,
    /// Not checked (a dry run that cannot tell what a real run would do): Ansible's
    /// `skipped`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// What happened, in words.
    pub message: String,
    /// The member concerned (none when it was not a member).
    pub member: Option<Member>,
    /// Where leadership moved first (removals); `null` when it did not move, as documented.
    pub leadership_moved_to: Option<MemberId>,
    /// A new member's `ETCD_INITIAL_CLUSTER` (additions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_cluster: Option<String>,
    /// A new member's `ETCD_INITIAL_CLUSTER_STATE`, `existing` (additions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_cluster_state: Option<String>,
    /// The settings a new member starts with (additions).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The member list before and after, when asked for.
    #[serde(skip)]
    pub diff: Option<MembersDiff>,
    /// The warnings to give: a guard forced through.
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// How the wait before a promotion went, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited: Option<crate::wait::Waited>,
}

impl MemberOutcome {
    fn changed(result: Guarded<MemberChangeResult>) -> MemberOutcome {
        let Guarded { result, warnings } = result;
        MemberOutcome {
            changed: result.changed,
            skipped: false,
            message: result.message,
            member: result.member,
            leadership_moved_to: result.leadership_moved_to,
            initial_cluster: None,
            initial_cluster_state: None,
            env: BTreeMap::new(),
            diff: None,
            warnings,
            waited: None,
        }
    }

    fn added(result: Guarded<MemberAddResult>) -> MemberOutcome {
        let Guarded { result, warnings } = result;
        MemberOutcome {
            changed: result.changed,
            skipped: false,
            message: result.message,
            member: Some(result.member),
            leadership_moved_to: None,
            initial_cluster: result.env.get("ETCD_INITIAL_CLUSTER").cloned(),
            initial_cluster_state: Some("existing".into()),
            env: result.env,
            diff: None,
            warnings,
            waited: None,
        }
    }
}

/// Brings a member into the state asked for: adds, removes, promotes or updates it through
/// the workflows above (so with every guard), and with `diff` also returns the member list
/// before and after.
pub async fn apply(
    config: &ClusterConfig,
    guards: &Guards,
    request: &MemberRequest,
) -> Result<MemberOutcome> {
    let (dry_run, force) = (request.dry_run, request.force);
    let before = match request.diff {
        true => Some(Client::new(config.clone()).members().list().await?.members),
        false => None,
    };
    let mut outcome = match request.state {
        Wanted::Present => {
            let name = request.name.clone().ok_or_else(|| {
                Error::invalid(
                    "adding a member needs its name (the name its etcd starts with)",
                    Some(Hint::option(NAME)),
                )
            })?;
            let add_request = AddRequest {
                name,
                peer_urls: request.peer_urls.clone(),
                learner: request.learner,
                force,
                dry_run,
            };
            MemberOutcome::added(add(config, guards, &add_request).await?)
        }
        Wanted::Updated => {
            let member = request.member.clone().or_else(|| request.name.clone());
            let member = member.ok_or_else(|| {
                Error::invalid(
                    "updating a member needs which member (its ID, name or peer URL) and its new peer URLs",
                    Some(Hint::any_of(&[MEMBER, NAME])),
                )
            })?;
            let update_request = UpdateRequest {
                member,
                peer_urls: request.peer_urls.clone(),
                force,
                dry_run,
            };
            MemberOutcome::changed(update(config, guards, &update_request).await?)
        }
        Wanted::Absent => {
            let query = request.query()?;
            MemberOutcome::changed(remove_member(config, guards, query, force, dry_run).await?)
        }
        Wanted::Promoted => {
            let query = request.query()?;
            if let Some(skipped) = not_added_yet(config, &query, dry_run).await? {
                return Ok(skipped);
            }
            match request.wait {
                Some(timeout) if !dry_run => {
                    let done = crate::wait::promote_query_when_ready(
                        config, guards, query, force, timeout,
                    )
                    .await?;
                    let mut outcome = MemberOutcome::changed(Guarded {
                        result: done.result,
                        warnings: done.warnings,
                    });
                    outcome.waited = Some(done.waited);
                    outcome
                }
                Some(timeout) => {
                    check_waited_promotion(config, guards, query, force, timeout).await?
                }
                None => MemberOutcome::changed(
                    promote_member(config, guards, query, force, dry_run).await?,
                ),
            }
        }
    };
    outcome.diff = before.map(|before| MembersDiff {
        after: after_change(&before, request.state, &outcome),
        before,
    });
    Ok(outcome)
}

/// In check mode, the promotion of a new member (named by its name and peer URLs, as its
/// addition is) that is not in the cluster: it cannot be checked, since the addition before
/// it in the same check run was not made. Skipped, saying so; a real run refuses it until
/// the member has been added and started.
async fn not_added_yet(
    config: &ClusterConfig,
    query: &MemberQuery,
    dry_run: bool,
) -> Result<Option<MemberOutcome>> {
    let (true, None, Some(name), false) = (
        dry_run,
        &query.member,
        &query.name,
        query.peer_urls.is_empty(),
    ) else {
        return Ok(None);
    };
    let list = Client::new(config.clone()).members().list().await?;
    if etcd_core::match_listed(&list.members, query)?.is_some() {
        return Ok(None);
    }
    // A learner already waits under other URLs: an addition earlier in this run would be
    // refused (one learner at a time), so the real run fails here as the check must.
    if list.members.iter().any(|m| m.is_learner) {
        return Ok(None);
    }
    Ok(Some(MemberOutcome {
        changed: false,
        skipped: true,
        message: format!(
            "'{name}' ({}) is not a member, so its promotion cannot be checked (check mode: an addition before this is not made); a real run promotes it once it has been added as a learner, its etcd has started and it has caught up",
            query.peer_urls.join(",")
        ),
        member: None,
        leadership_moved_to: None,
        initial_cluster: None,
        initial_cluster_state: None,
        env: BTreeMap::new(),
        diff: None,
        warnings: Vec::new(),
        waited: None,
    }))
}

/// A waited promotion in a dry run: nothing is waited for. A learner ready now is checked as
/// a promotion is; one not ready yet is what a real run would wait for, said so.
async fn check_waited_promotion(
    config: &ClusterConfig,
    guards: &Guards,
    query: MemberQuery,
    force: Force,
    timeout: std::time::Duration,
) -> Result<MemberOutcome> {
    let note = "(dry run: not waited)";
    match crate::wait::learner_ready(config, &query).await? {
        crate::wait::Poll::Ready(()) => {
            let mut outcome =
                MemberOutcome::changed(promote_member(config, guards, query, force, true).await?);
            outcome.message = format!("{} {note}", outcome.message);
            Ok(outcome)
        }
        crate::wait::Poll::Pending(_, why) => {
            let listed = Client::new(config.clone()).members().list().await?;
            let member = etcd_core::match_listed(&listed.members, &query)?.cloned();
            Ok(MemberOutcome {
                changed: true,
                skipped: false,
                message: format!(
                    "would wait up to {}s for the learner to start and catch up (now: {why}), then promote it {note}",
                    timeout.as_secs()
                ),
                member,
                leadership_moved_to: None,
                initial_cluster: None,
                initial_cluster_state: None,
                env: BTreeMap::new(),
                diff: None,
                warnings: Vec::new(),
                waited: None,
            })
        }
    }
}

/// The member list once `outcome` is done.
fn after_change(before: &[Member], state: Wanted, outcome: &MemberOutcome) -> Vec<Member> {
    let mut after = before.to_vec();
    let Some(member) = outcome.member.as_ref().filter(|_| outcome.changed) else {
        return after;
    };
    match state {
        Wanted::Present => after.push(member.clone()),
        Wanted::Absent => after.retain(|m| m.id != member.id),
        Wanted::Promoted => after
            .iter_mut()
            .filter(|m| m.id == member.id)
            .for_each(|m| m.is_learner = false),
        Wanted::Updated => after
            .iter_mut()
            .filter(|m| m.id == member.id)
            .for_each(|m| m.peer_urls = member.peer_urls.clone()),
    }
    after
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, learner: bool) -> Member {
        Member {
            id: MemberId(id),
            name: format!("m{id}"),
            peer_urls: vec![format!("http://10.0.0.{id}:2380")],
            client_urls: vec![],
            is_learner: learner,
            started: true,
        }
    }

    #[test]
    fn the_member_is_named_by_member_else_by_name_and_peer_urls() {
        let mut request = MemberRequest {
            member: Some("5f62".into()),
            name: Some("m2".into()),
            peer_urls: vec!["http://10.0.0.2:2380".into()],
            ..Default::default()
        };
        let query = request.query().unwrap();
        assert_eq!(query.member.as_deref(), Some("5f62"));
        request.member = None;
        let query = request.query().unwrap();
        assert_eq!(
            (query.name.as_deref(), query.peer_urls.len()),
            (Some("m2"), 1)
        );
        request.name = None;
        request.peer_urls.clear();
        let error = request.query().unwrap_err();
        assert_eq!(
            crate::hint_of(&error).unwrap().options,
            vec![MEMBER, NAME, PEER_URLS]
        );
    }

    #[test]
    fn the_diff_shows_the_members_as_the_change_leaves_them() {
        let before = vec![member(1, false), member(2, true)];
        let outcome = |changed: bool, member: Member| MemberOutcome {
            changed,
            skipped: false,
            message: String::new(),
            member: Some(member),
            leadership_moved_to: None,
            initial_cluster: None,
            initial_cluster_state: None,
            env: BTreeMap::new(),
            diff: None,
            warnings: Vec::new(),
            waited: None,
        };
        let added = after_change(&before, Wanted::Present, &outcome(true, member(3, true)));
        assert_eq!(added.len(), 3);
        let removed = after_change(&before, Wanted::Absent, &outcome(true, member(2, true)));
        assert_eq!(removed, vec![member(1, false)]);
        let promoted = after_change(&before, Wanted::Promoted, &outcome(true, member(2, true)));
        assert!(!promoted[1].is_learner);
        let mut moved = member(1, false);
        moved.peer_urls = vec!["http://10.0.0.9:2380".into()];
        let updated = after_change(&before, Wanted::Updated, &outcome(true, moved.clone()));
        assert_eq!(updated[0].peer_urls, moved.peer_urls);
        // Nothing changed: the same list.
        let same = after_change(&before, Wanted::Absent, &outcome(false, member(2, true)));
        assert_eq!(same, before);
    }
}
