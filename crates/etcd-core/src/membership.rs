//! Changing membership: add, remove, update, promote. Each is idempotent (asking for what is
//! already true changes nothing and says so) and asks the caller's [`ChangeGuard`] before it
//! changes anything (there is no way to call one without a guard; [`Unguarded`] is the named
//! "none"): the guard gets the cluster as the change is about to be made against it (the
//! same view, so nothing can change between the check and the change) and the member
//! concerned, and its refusal stops the change. The quorum guards themselves, with their
//! typed `force`, are the workflow layer's (`etcdops::guard::quorum`), which every
//! `etcdops::member` workflow passes here.
//!
//! Members are matched by peer URLs first, then by ID, then by name: a member added but not
//! yet started has no name, and peer URLs are what the operator actually knows. One rule
//! ([`match_member`]) finds the member of every change, so a removal or a promotion given the
//! name and peer URLs an addition was given finds what the addition found.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cluster::{ClusterView, MemberState};
use crate::config::ClusterConfig;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::member::Members;
use etcd_common::InvalidOption;

use crate::guard::{Change, ChangeGuard};
use crate::id::MemberId;
use crate::member::Member;
use etcd_common::options::{NAME, PEER_URLS};

/// Which member an operation is about: a peer URL, a hex ID or a name.
pub fn find_member<'a>(view: &'a ClusterView, selector: &str) -> Option<&'a MemberState> {
    find_position(view.members.iter().map(|m| &m.member), selector).map(|i| &view.members[i])
}

/// The position of the member `selector` names: by peer URL, then ID, then name.
fn find_position<'a>(
    members: impl Iterator<Item = &'a Member> + Clone,
    selector: &str,
) -> Option<usize> {
    let selector = selector.trim();
    let by_url = members.clone().position(|m| {
        m.peer_urls
            .iter()
            .any(|u| normalize_url(u) == normalize_url(selector))
    });
    let by_id = || {
        let id = selector.parse::<MemberId>().ok()?;
        members.clone().position(|m| m.id == id)
    };
    let by_name = || {
        members
            .clone()
            .position(|m| !m.name.is_empty() && m.name == selector)
    };
    by_url.or_else(by_id).or_else(by_name)
}

/// Which member a change is about: a selector (`member`: ID, name or peer URL), or a
/// member's name and peer URLs as `member add` was given them. One rule finds it for every
/// change ([`match_member`]), so a removal or promotion finds what an addition found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberQuery {
    /// Its ID (hex), name or peer URL; when given, the other fields are not used.
    pub member: Option<String>,
    /// Its name (empty until its etcd first starts).
    pub name: Option<String>,
    /// Its peer URLs.
    pub peer_urls: Vec<String>,
}

impl From<&str> for MemberQuery {
    fn from(selector: &str) -> MemberQuery {
        MemberQuery {
            member: Some(selector.to_string()),
            ..MemberQuery::default()
        }
    }
}

impl From<&String> for MemberQuery {
    fn from(selector: &String) -> MemberQuery {
        MemberQuery::from(selector.as_str())
    }
}

impl std::fmt::Display for MemberQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls = self.peer_urls.join(",");
        match (&self.member, &self.name, urls.is_empty()) {
            (Some(selector), _, _) => write!(f, "'{selector}'"),
            (None, Some(name), false) => write!(f, "'{name}' ({urls})"),
            (None, Some(name), true) => write!(f, "'{name}'"),
            (None, None, _) => write!(f, "'{urls}'"),
        }
    }
}

/// The member `query` names in `view`, or `None` when no member is it. A selector
/// (`member`) is found as [`find_member`] finds it. Otherwise the peer URLs decide (a peer
/// URL in common: a member added but not started has no name yet, and its peer URLs are
/// what the operator knows), then the name. Refused, as ambiguous, when the name and the
/// peer URLs are of different members, or the peer URLs of several.
pub fn match_member<'a>(
    view: &'a ClusterView,
    query: &MemberQuery,
) -> Result<Option<&'a MemberState>> {
    let members = view.members.iter().map(|m| &m.member);
    Ok(match_position(members, query)?.map(|i| &view.members[i]))
}

/// [`match_member`] in a member list (as `member list` returns it).
pub fn match_listed<'a>(members: &'a [Member], query: &MemberQuery) -> Result<Option<&'a Member>> {
    Ok(match_position(members.iter(), query)?.map(|i| &members[i]))
}

fn match_position<'a>(
    members: impl Iterator<Item = &'a Member> + Clone,
    query: &MemberQuery,
) -> Result<Option<usize>> {
    if let Some(selector) = &query.member {
        check_selector(selector)?;
        return Ok(find_position(members, selector));
    }
    let members: Vec<&Member> = members.collect();
    let name = query.name.as_deref().filter(|n| !n.trim().is_empty());
    if name.is_none() && query.peer_urls.is_empty() {
        return Err(InvalidOption::input(
            "member",
            "say which member: give its ID, name or peer URL",
        )
        .into());
    }
    // Peer URLs are unique in a cluster: one in common names the member.
    let with_urls: Vec<usize> = (0..members.len())
        .filter(|&i| {
            members[i].peer_urls.iter().any(|u| {
                query
                    .peer_urls
                    .iter()
                    .any(|r| normalize_url(r) == normalize_url(u))
            })
        })
        .collect();
    match (with_urls.as_slice(), name) {
        ([], _) => {}
        ([index], Some(name)) if members[*index].started && members[*index].name != name => {
            let found = members[*index];
            return Err(refused(format!(
                "member {} with peer URLs {} is named '{}', not '{name}'; give the name and peer URLs of one member",
                found.id,
                found.peer_urls.join(","),
                found.name
            )));
        }
        ([index], Some(name))
            if members
                .iter()
                .any(|m| m.name == name && m.id != members[*index].id) =>
        {
            return Err(refused(format!(
                "the name '{name}' is another member's than the peer URLs {} ({}); give the name and peer URLs of one member",
                query.peer_urls.join(","),
                members[*index].id
            )));
        }
        ([index], _) => return Ok(Some(*index)),
        (several, _) => {
            let ids: Vec<String> = several.iter().map(|&i| members[i].id.to_string()).collect();
            return Err(refused(format!(
                "the peer URLs {} are of several members ({}); give one member's",
                query.peer_urls.join(","),
                ids.join(", ")
            )));
        }
    }
    let Some(name) = name else {
        return Ok(None);
    };
    match members.iter().position(|m| m.name == name) {
        Some(index) if !query.peer_urls.is_empty() => {
            let clash = members[index];
            Err(refused(format!(
                "a member named '{name}' ({}) has peer URLs {}, not {}; give the name and peer URLs of one member, or change its peer URLs",
                clash.id,
                clash.peer_urls.join(","),
                query.peer_urls.join(",")
            )))
        }
        other => Ok(other),
    }
}

/// Refuses a member selector that can match nothing: empty, blank, or with control
/// characters. (A well-formed selector that matches no member is not an error for a removal:
/// the member is already gone.)
pub(crate) fn check_selector(selector: &str) -> Result<()> {
    let reason = if selector.trim().is_empty() {
        "it is empty"
    } else if selector.chars().any(char::is_control) {
        "it contains control characters"
    } else {
        return Ok(());
    };
    Err(InvalidOption::input(
        "member",
        format!(
            "{reason}; give the member's ID (hex, as the member list prints it), name or peer URL"
        ),
    )
    .into())
}

fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_ascii_lowercase()
}

fn same_urls(a: &[String], b: &[String]) -> bool {
    let mut a: Vec<String> = a.iter().map(|u| normalize_url(u)).collect();
    let mut b: Vec<String> = b.iter().map(|u| normalize_url(u)).collect();
    a.sort();
    b.sort();
    a == b
}

fn refused(reason: String) -> Error {
    Error::Refused { reason }
}

/// Why an addition is refused when `existing` has its name or some of its peer URLs but not
/// all of them. A healthy member is never to be removed for it: its peer URLs are changed
/// with a member update; only a member that does not answer may be gone for good.
fn taken_by(existing: &MemberState) -> String {
    let member = &existing.member;
    let head = format!(
        "member {} ('{}', peer URLs {}) already has this name or some of these peer URLs",
        member.id,
        member.name,
        member.peer_urls.join(",")
    );
    if existing.healthy {
        format!(
            "{head}, and it is healthy: give all of its peer URLs to keep it as it is, or change them with a member update"
        )
    } else {
        format!(
            "{head}, and it does not answer: give all of its peer URLs, change them with a member update, or, once it is gone for good, remove it first"
        )
    }
}

/// A client to a healthy member other than `avoid`, preferring the leader (membership
/// changes are proposals; any healthy voter forwards them).
async fn client_for_change(
    config: &ClusterConfig,
    view: &ClusterView,
    avoid: Option<MemberId>,
) -> Result<EndpointClient> {
    let mut candidates: Vec<&MemberState> = view
        .members
        .iter()
        .filter(|m| m.healthy && Some(m.member.id) != avoid && m.endpoint.is_some())
        .collect();
    candidates.sort_by_key(|m| !m.status.as_ref().is_some_and(|s| s.is_leader));
    let mut errors = Vec::new();
    for m in candidates {
        if let Some(endpoint) = &m.endpoint {
            match config.connect_endpoint(endpoint).await {
                Ok(client) => return Ok(client),
                Err(e) => errors.push(e),
            }
        }
    }
    Err(Error::NoEndpointAvailable { errors })
}

/// How long a membership change waits out etcd's "unhealthy cluster" answer. etcd refuses
/// reconfiguration until the leader has been connected to enough members for 5 seconds: just
/// after a start, a restart or a leadership move.
pub const RECONFIG_SETTLE: std::time::Duration = std::time::Duration::from_secs(15);

/// Sends a membership change, retrying while etcd answers "unhealthy cluster" (its own
/// connectivity check that settles within seconds), up to [`RECONFIG_SETTLE`].
async fn reconfigure<T, F, Fut>(
    client: &EndpointClient,
    operation: &'static str,
    request: F,
) -> Result<T>
where
    F: Fn(etcd_client::Client) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, etcd_client::Error>>,
{
    let deadline = tokio::time::Instant::now() + RECONFIG_SETTLE;
    loop {
        match client.call(operation, &request).await {
            // etcd answers "unhealthy cluster" with gRPC's Unavailable code.
            Err(Error::Request { message, .. } | Error::Unavailable { message, .. })
                if message.contains("unhealthy cluster")
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            Err(
                Error::Request {
                    message, endpoint, ..
                }
                | Error::Unavailable {
                    message, endpoint, ..
                },
            ) if message.contains("unhealthy cluster") => {
                return Err(Error::Request {
                    operation,
                    endpoint,
                    message: format!(
                        "{message}: etcd still refuses membership changes after {RECONFIG_SETTLE:?}; it allows them only when the leader has been connected to a quorum for 5 seconds"
                    ),
                });
            }
            other => return other,
        }
    }
}

/// A request to add a member.
#[derive(Debug, Clone, Default)]
pub struct MemberAddRequest {
    /// Name the new member will start with (etcd's `ETCD_NAME`).
    pub name: String,
    /// Its peer URLs.
    pub peer_urls: Vec<String>,
    /// Add as a non-voting learner.
    pub learner: bool,
    /// Run every check and report what would change, but change nothing (check mode).
    pub dry_run: bool,
}

/// What `member add` did, and what the new member needs to start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberAddResult {
    /// Whether the cluster changed (false when the member was already there).
    pub changed: bool,
    /// What happened, in words.
    pub message: String,
    /// The member.
    pub member: Member,
    /// Settings for the new member's etcd: ETCD_NAME, ETCD_INITIAL_CLUSTER,
    /// ETCD_INITIAL_ADVERTISE_PEER_URLS, ETCD_INITIAL_CLUSTER_STATE.
    pub env: BTreeMap<String, String>,
}

fn initial_cluster(members: &[Member], new_id: MemberId, new_name: &str) -> String {
    let mut parts = Vec::new();
    for m in members {
        let name = if m.id == new_id { new_name } else { &m.name };
        for url in &m.peer_urls {
            parts.push(format!("{name}={url}"));
        }
    }
    parts.join(",")
}

fn start_env(members: &[Member], member: &Member, name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("ETCD_NAME".to_string(), name.to_string()),
        (
            "ETCD_INITIAL_CLUSTER".to_string(),
            initial_cluster(members, member.id, name),
        ),
        (
            "ETCD_INITIAL_ADVERTISE_PEER_URLS".to_string(),
            member.peer_urls.join(","),
        ),
        (
            "ETCD_INITIAL_CLUSTER_STATE".to_string(),
            "existing".to_string(),
        ),
    ])
}

fn validate_peer_urls(urls: &[String]) -> Result<()> {
    if urls.is_empty() {
        return Err(InvalidOption::new(
            PEER_URLS,
            "give at least one peer URL, e.g. https://10.0.0.4:2380",
        )
        .into());
    }
    for u in urls {
        let parsed = url::Url::parse(u).map_err(|e| {
            InvalidOption::new(
                PEER_URLS,
                format!("'{u}' is not a URL ({e}); write it as https://HOST:2380"),
            )
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.port().is_none() {
            return Err(InvalidOption::new(
                PEER_URLS,
                format!("'{u}' must be http(s)://HOST:PORT"),
            )
            .into());
        }
    }
    Ok(())
}

impl Members<'_> {
    /// Adds a member, or confirms it is there. Refuses a name or peer URLs another member has;
    /// asks `guard` (with the cluster as read) before adding, also in a dry run.
    pub async fn add<G: ChangeGuard>(
        &self,
        request: &MemberAddRequest,
        guard: &G,
    ) -> std::result::Result<MemberAddResult, G::Error> {
        validate_peer_urls(&request.peer_urls)?;
        if request.name.trim().is_empty() {
            return Err(Error::from(InvalidOption::new(
                NAME,
                "give the new member's name (the name its etcd starts with, ETCD_NAME)",
            ))
            .into());
        }
        let view = self.0.cluster_view().await?;
        let members: Vec<Member> = view.members.iter().map(|m| m.member.clone()).collect();
        let query = MemberQuery {
            member: None,
            name: Some(request.name.clone()),
            peer_urls: request.peer_urls.clone(),
        };
        if let Some(existing) = match_member(&view, &query)? {
            let member = existing.member.clone();
            if !same_urls(&member.peer_urls, &request.peer_urls) {
                return Err(refused(taken_by(existing)).into());
            }
            if member.is_learner && !request.learner {
                return Err(refused(format!(
                    "member {} with these peer URLs exists as a learner; promote it instead",
                    member.id
                ))
                .into());
            }
            return Ok(MemberAddResult {
                changed: false,
                message: format!(
                    "member {} already has these peer URLs; nothing changed",
                    member.id
                ),
                env: start_env(&members, &member, &request.name),
                member,
            });
        }
        guard.check(Change::MemberAdd {
            view: &view,
            learner: request.learner,
        })?;
        if request.dry_run && request.learner {
            // etcd refuses a second learner ("too many learner members in cluster") unless its
            // max-learners setting was raised: the prediction says what the default does.
            if let Some(waiting) = view.members.iter().find(|m| m.member.is_learner) {
                return Err(refused(format!(
                "etcd allows one learner at a time by default, and learner {} ({}) is still a learner; the addition would be refused: promote or remove it first",
                waiting.member.id,
                waiting.member.peer_urls.join(",")
            ))
            .into());
            }
        }
        if request.dry_run {
            let member = Member {
                id: MemberId(0),
                name: request.name.clone(),
                peer_urls: request.peer_urls.clone(),
                client_urls: Vec::new(),
                is_learner: request.learner,
                started: false,
            };
            let mut all = members;
            all.push(member.clone());
            return Ok(MemberAddResult {
                changed: true,
                message: format!(
                    "would add {} '{}' (dry run: nothing changed; etcd assigns the ID when it is added)",
                    if request.learner { "learner" } else { "member" },
                    request.name
                ),
                env: start_env(&all, &member, &request.name),
                member,
            });
        }
        let client = client_for_change(self.0.config(), &view, None).await?;
        let urls = request.peer_urls.clone();
        let learner = request.learner;
        let response = reconfigure(&client, "member add", |mut c| {
            let urls = urls.clone();
            async move {
                let options = etcd_client::MemberAddOptions::new();
                let options = if learner {
                    options.with_is_learner()
                } else {
                    options
                };
                c.member_add(urls, Some(options)).await
            }
        })
        .await?;
        let added = response.member().ok_or_else(|| {
            G::Error::from(Error::Request {
                operation: "member add",
                endpoint: client.endpoint().to_string(),
                message: "etcd did not return the new member".into(),
            })
        })?;
        let member = Member {
            id: MemberId(added.id()),
            name: String::new(),
            peer_urls: added.peer_urls().to_vec(),
            client_urls: Vec::new(),
            is_learner: added.is_learner(),
            started: false,
        };
        let all: Vec<Member> = response.member_list().iter().map(Member::from).collect();
        Ok(MemberAddResult {
            changed: true,
            message: format!(
                "added {} {} ; start it with ETCD_INITIAL_CLUSTER_STATE=existing",
                if member.is_learner {
                    "learner"
                } else {
                    "member"
                },
                member.id
            ),
            env: start_env(&all, &member, &request.name),
            member,
        })
    }

    /// Removes a member, or confirms it is gone; a leader hands leadership to a healthy
    /// follower first. Asks `guard` (with the cluster as read and the member) before removing,
    /// also in a dry run.
    pub async fn remove<G: ChangeGuard>(
        &self,
        query: impl Into<MemberQuery>,
        dry_run: bool,
        guard: &G,
    ) -> std::result::Result<MemberChangeResult, G::Error> {
        let query = query.into();
        if let Some(selector) = &query.member {
            check_selector(selector)?;
        }
        let view = self.0.cluster_view().await?;
        let Some(target) = match_member(&view, &query)? else {
            return Ok(MemberChangeResult {
                changed: false,
                message: format!(
                    "no member matches {query}; nothing to remove{}",
                    unnamed_note(&view, &query)
                ),
                member: None,
                leadership_moved_to: None,
            });
        };
        let target = target.clone();
        guard.check(Change::MemberRemove {
            view: &view,
            member: &target,
        })?;
        let is_leader = view.leader == Some(target.member.id);
        if dry_run {
            return Ok(MemberChangeResult {
                changed: true,
                message: format!(
                    "would remove member {}{} (dry run: nothing changed)",
                    target.member.id,
                    if is_leader {
                        " after moving leadership to a healthy follower"
                    } else {
                        ""
                    }
                ),
                member: Some(target.member),
                leadership_moved_to: None,
            });
        }
        let moved_to = if is_leader && view.voters().count() > 1 {
            Some(move_leadership_off(self.0.config(), &view, &target).await?)
        } else {
            None
        };
        // Send the removal through another member: the removed one stops serving.
        let client = client_for_change(self.0.config(), &view, Some(target.member.id)).await?;
        let id = target.member.id.0;
        reconfigure(&client, "member remove", |mut c| async move {
            c.member_remove(id).await
        })
        .await?;
        Ok(MemberChangeResult {
            changed: true,
            message: format!(
                "removed member {}{}; stop its etcd and drop it from clients' endpoints and DNS",
                target.member.id,
                moved_to
                    .map(|m| format!(" after moving leadership to {m}"))
                    .unwrap_or_default()
            ),
            member: Some(target.member),
            leadership_moved_to: moved_to,
        })
    }

    /// Changes a member's peer URLs, or confirms they are already these (`dry_run`: only says).
    /// Asks `guard` (with the cluster as read and the member) before changing, also in a dry run.
    pub async fn update<G: ChangeGuard>(
        &self,
        selector: &str,
        peer_urls: &[String],
        dry_run: bool,
        guard: &G,
    ) -> std::result::Result<MemberChangeResult, G::Error> {
        validate_peer_urls(peer_urls)?;
        check_selector(selector)?;
        let view = self.0.cluster_view().await?;
        let target = find_member(&view, selector)
            .ok_or_else(|| refused(format!("no member matches '{selector}'")))?
            .clone();
        if same_urls(&target.member.peer_urls, peer_urls) {
            return Ok(MemberChangeResult {
                changed: false,
                message: format!(
                    "member {} already has these peer URLs; nothing changed",
                    target.member.id
                ),
                member: Some(target.member),
                leadership_moved_to: None,
            });
        }
        guard.check(Change::MemberUpdate {
            view: &view,
            member: &target,
        })?;
        if dry_run {
            return Ok(MemberChangeResult {
                changed: true,
                message: format!(
                    "would update the peer URLs of member {} (dry run: nothing changed)",
                    target.member.id
                ),
                member: Some(target.member),
                leadership_moved_to: None,
            });
        }
        let client = client_for_change(self.0.config(), &view, None).await?;
        let id = target.member.id.0;
        let urls = peer_urls.to_vec();
        reconfigure(&client, "member update", |mut c| {
            let urls = urls.clone();
            async move { c.member_update(id, urls).await }
        })
        .await?;
        let mut member = target.member;
        member.peer_urls = peer_urls.to_vec();
        Ok(MemberChangeResult {
            changed: true,
            message: format!(
                "updated the peer URLs of member {}; restart it advertising the new peer URLs (ETCD_INITIAL_ADVERTISE_PEER_URLS)",
                member.id
            ),
            member: Some(member),
            leadership_moved_to: None,
        })
    }

    /// Promotes a learner to a voter, or confirms it is one. Asks `guard` (with the cluster as
    /// read and the learner) before promoting, also in a dry run.
    pub async fn promote<G: ChangeGuard>(
        &self,
        query: impl Into<MemberQuery>,
        dry_run: bool,
        guard: &G,
    ) -> std::result::Result<MemberChangeResult, G::Error> {
        let query = query.into();
        if let Some(selector) = &query.member {
            check_selector(selector)?;
        }
        let view = self.0.cluster_view().await?;
        let target = match_member(&view, &query)?
            .ok_or_else(|| refused(no_member_to_promote(&view, &query)))?
            .clone();
        if target.member.is_learner && !target.member.started {
            // etcd refuses it too: a learner is promoted only once in sync with the leader.
            return Err(refused(waiting_to_start(&target.member)).into());
        }
        if !target.member.is_learner {
            return Ok(MemberChangeResult {
                changed: false,
                message: format!(
                    "member {} is already a voting member; nothing changed",
                    target.member.id
                ),
                member: Some(target.member),
                leadership_moved_to: None,
            });
        }
        guard.check(Change::MemberPromote {
            view: &view,
            member: &target,
        })?;
        if dry_run {
            return Ok(MemberChangeResult {
                changed: true,
                message: format!(
                    "would promote learner {} (dry run: nothing changed)",
                    target.member.id
                ),
                member: Some(target.member),
                leadership_moved_to: None,
            });
        }
        let client = client_for_change(self.0.config(), &view, Some(target.member.id)).await?;
        let id = target.member.id.0;
        reconfigure(&client, "member promote", |mut c| async move {
            c.member_promote(id).await
        })
        .await?;
        let mut member = target.member;
        member.is_learner = false;
        Ok(MemberChangeResult {
            changed: true,
            message: format!("promoted learner {} to a voting member", member.id),
            member: Some(member),
            leadership_moved_to: None,
        })
    }
}

/// What a removal, update or promotion did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberChangeResult {
    /// Whether the cluster changed.
    pub changed: bool,
    /// What happened, in words.
    pub message: String,
    /// The member concerned (`None` when it was not a member).
    pub member: Option<Member>,
    /// Where leadership moved first, when the leader was removed.
    pub leadership_moved_to: Option<MemberId>,
}

/// Hands leadership from `target` (the leader) to its healthy follower with the highest raft index.
async fn move_leadership_off(
    config: &ClusterConfig,
    view: &ClusterView,
    target: &MemberState,
) -> Result<MemberId> {
    let successor = view
        .voters()
        .filter(|m| m.healthy && m.member.id != target.member.id)
        .max_by_key(|m| m.status.as_ref().map(|s| s.raft_index).unwrap_or(0))
        .ok_or_else(|| {
            refused("the leader has no healthy follower to hand leadership to".into())
        })?;
    let successor_id = successor.member.id;
    let endpoint = target
        .endpoint
        .clone()
        .ok_or_else(|| refused("the leader has no client URL".into()))?;
    let leader_client = config.connect_endpoint(&endpoint).await?;
    leader_client
        .call("move leader", |mut c| async move {
            c.move_leader(successor_id.0).await
        })
        .await?;
    Ok(successor_id)
}

/// Why nothing can be promoted for `query`: no member is it; a learner added but not started
/// is named, as the one the caller may mean (it has no name until its etcd starts).
fn no_member_to_promote(view: &ClusterView, query: &MemberQuery) -> String {
    let waiting: Vec<String> = view
        .members
        .iter()
        .filter(|m| m.member.is_learner && !m.member.started)
        .map(|m| format!("{} ({})", m.member.id, m.member.peer_urls.join(",")))
        .collect();
    if waiting.is_empty() {
        return format!("no member matches {query}; add it first (as a learner), then promote it");
    }
    format!(
        "no member matches {query}; learner {} was added and is waiting for its etcd to start: a member has no name until its etcd first starts, so name it by its peer URL, start its etcd (initial cluster state existing, with the initial cluster its addition returned), then promote it once it has caught up",
        waiting.join(", ")
    )
}

/// For a name that matched nothing: the members that have no name yet (added, not
/// started), one of which the caller may mean.
fn unnamed_note(view: &ClusterView, query: &MemberQuery) -> String {
    let unnamed: Vec<String> = view
        .members
        .iter()
        .filter(|m| !m.member.started)
        .map(|m| format!("{} ({})", m.member.id, m.member.peer_urls.join(",")))
        .collect();
    if unnamed.is_empty() || !query.peer_urls.is_empty() {
        return String::new();
    }
    format!(
        " (member {} has not started and has no name yet: name it by its peer URL)",
        unnamed.join(", ")
    )
}

/// A learner added whose etcd has not started: what to do before it can be promoted.
fn waiting_to_start(member: &Member) -> String {
    format!(
        "learner {} with peer URLs {} exists and is waiting for its etcd to start; start its etcd (initial cluster state existing, with the initial cluster its addition returned), then promote it once it has caught up",
        member.id,
        member.peer_urls.join(",")
    )
}

/// How close a learner must be to the leader's raft index to be promoted, as etcd checks.
pub const LEARNER_READY_PERCENT: u64 = 90;

#[cfg(test)]
#[path = "membership_tests.rs"]
mod tests;
