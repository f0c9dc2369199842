//! Maintenance: leadership moves, alarms, rolling defragmentation, compaction, versions.

use std::time::Instant;

use etcd_client::{AlarmAction, AlarmType, CompactionOptions, GetOptions};
use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::cluster::{ClusterView, linearizable_read};
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use etcd_common::InvalidOption;

use crate::guard::{Change, ChangeGuard};
use crate::header::ResponseHeader;
use crate::id::MemberId;
use crate::member::Targets;
use crate::membership::find_member;
use etcd_common::options::KEEP_REVISIONS;

fn refused(reason: String) -> Error {
    Error::Refused { reason }
}

/// What `move-leader` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MoveLeaderResult {
    /// Whether leadership moved (false when the target already led).
    pub changed: bool,
    /// The leader before.
    pub from: MemberId,
    /// The leader now.
    pub to: MemberId,
}

/// What [`Maintenance::move_leader`] is asked: the member to lead, and whether only to check.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct MoveLeaderRequest {
    /// The member to lead: its peer URL, ID (hex) or name.
    pub leader: String,
    /// Run every check, move nothing.
    #[serde(default)]
    #[schemars(skip)]
    pub dry_run: bool,
    /// etcdctl's rule: move only through a configured endpoint that is the leader, and refuse
    /// when none is ("no leader endpoint given"). Without it the leader is found wherever it is.
    #[serde(skip)]
    #[schemars(skip)]
    pub leader_endpoint_given: bool,
}

impl MoveLeaderRequest {
    /// Leadership to the member `leader` names (peer URL, ID or name).
    pub fn new(leader: impl Into<String>) -> MoveLeaderRequest {
        MoveLeaderRequest {
            leader: leader.into(),
            dry_run: false,
            leader_endpoint_given: false,
        }
    }

    /// etcdctl's rule (`true`): one of the configured endpoints must be the leader.
    pub fn leader_endpoint_given(mut self, required: bool) -> MoveLeaderRequest {
        self.leader_endpoint_given = required;
        self
    }

    /// Only check (`true`): say what would move, move nothing.
    pub fn dry_run(mut self, dry_run: bool) -> MoveLeaderRequest {
        self.dry_run = dry_run;
        self
    }
}

/// Maintenance of the cluster ([`Client::maintenance`]): alarms, compaction,
/// defragmentation, moving the leader, versions.
#[derive(Debug, Clone, Copy)]
pub struct Maintenance<'c>(&'c Client);

impl Client {
    /// Maintenance: alarms, compaction, defragmentation, moving the leader, versions.
    pub fn maintenance(&self) -> Maintenance<'_> {
        Maintenance(self)
    }
}

impl Maintenance<'_> {
    /// Moves leadership to the member the request names (peer URL, ID or name). The request
    /// goes to the current leader, as etcd requires. Refuses a learner or an unhealthy
    /// target; changes nothing when the target already leads.
    ///
    /// With `dry_run` every check runs and nothing moves.
    pub async fn move_leader(&self, request: &MoveLeaderRequest) -> Result<MoveLeaderResult> {
        let selector = request.leader.as_str();
        crate::membership::check_selector(selector)?;
        let view = self.0.cluster_view().await?;
        let target = find_member(&view, selector)
            .ok_or_else(|| refused(format!("no member matches '{selector}'")))?;
        let leader = view
            .leader_state()
            .ok_or_else(|| refused("the cluster has no reachable leader".into()))?;
        let unchanged = MoveLeaderResult {
            changed: false,
            from: leader.member.id,
            to: target.member.id,
        };
        if leader.member.id == target.member.id {
            return Ok(unchanged);
        }
        if target.member.is_learner {
            return Err(refused(format!(
                "member {} is a learner and cannot lead",
                target.member.id
            )));
        }
        if !target.healthy {
            return Err(refused(format!(
                "member {} is not healthy ({}); leadership would be lost",
                target.member.id,
                target.error.as_deref().unwrap_or("unreachable")
            )));
        }
        let moved = MoveLeaderResult {
            changed: true,
            ..unchanged
        };
        if request.dry_run {
            return Ok(moved);
        }
        let client = if request.leader_endpoint_given {
            self.configured_leader(leader.member.id).await?
        } else {
            let endpoint = leader
                .endpoint
                .clone()
                .ok_or_else(|| refused("the leader has no client URL".into()))?;
            self.0.endpoint(&endpoint).await?
        };
        let to = target.member.id;
        client
            .call(
                "move leader",
                |mut c| async move { c.move_leader(to.0).await },
            )
            .await?;
        Ok(moved)
    }
}

impl Maintenance<'_> {
    /// The configured endpoint that answers as the leader `leader`, as etcdctl looks for one
    /// (each endpoint's status); none is a refusal that names the endpoints given.
    async fn configured_leader(&self, leader: MemberId) -> Result<EndpointClient> {
        let endpoints = self.0.config().endpoints.clone();
        for endpoint in &endpoints {
            let url = self.0.config().normalize_endpoint(endpoint)?;
            let Ok(client) = self.0.endpoint(&url).await else {
                continue;
            };
            let status = client
                .call("status", |mut c| async move { c.status().await })
                .await;
            let member = status.ok().and_then(|s| s.header().map(|h| h.member_id()));
            if member == Some(leader.0) {
                return Ok(client);
            }
        }
        Err(refused(format!(
            "no leader endpoint given at [{}]",
            endpoints.join(" ")
        )))
    }
}

/// An active alarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Alarm {
    /// The member that raised it.
    pub member_id: MemberId,
    /// `NOSPACE` or `CORRUPT`.
    pub alarm: String,
}

fn alarm_name(alarm: AlarmType) -> &'static str {
    match alarm {
        AlarmType::Nospace => "NOSPACE",
        AlarmType::Corrupt => "CORRUPT",
        AlarmType::None => "NONE",
    }
}

/// The active alarms with the header of the response that listed them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlarmList {
    /// The response's header (for etcdctl's JSON; not in ours).
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
    /// The active alarms.
    pub alarms: Vec<Alarm>,
}

impl Alarm {
    /// etcd's number for the alarm type (`NONE` 0, `NOSPACE` 1, `CORRUPT` 2), which
    /// etcdctl's JSON shows.
    pub fn code(&self) -> i32 {
        match self.alarm.as_str() {
            "NOSPACE" => AlarmType::Nospace as i32,
            "CORRUPT" => AlarmType::Corrupt as i32,
            _ => AlarmType::None as i32,
        }
    }
}

/// What `alarm disarm` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlarmDisarmResult {
    /// Whether any alarm was cleared.
    pub changed: bool,
    /// The alarms cleared.
    pub disarmed: Vec<Alarm>,
    /// Alarms still active afterwards (a NOSPACE alarm comes back while the db is over quota).
    pub still_active: Vec<Alarm>,
}

/// What [`Maintenance::alarm_disarm`] is asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct AlarmDisarmRequest {
    /// List what would be cleared, clear nothing.
    #[serde(default)]
    #[schemars(skip)]
    pub dry_run: bool,
}

impl AlarmDisarmRequest {
    /// Clear every active alarm.
    pub fn new() -> AlarmDisarmRequest {
        AlarmDisarmRequest::default()
    }

    /// Only list (`true`) what would be cleared.
    pub fn dry_run(mut self, dry_run: bool) -> AlarmDisarmRequest {
        self.dry_run = dry_run;
        self
    }
}

impl Maintenance<'_> {
    /// Lists the cluster's active alarms.
    pub async fn alarm_list(&self) -> Result<Vec<Alarm>> {
        Ok(self.alarm_report().await?.alarms)
    }

    /// Lists the cluster's active alarms with the response's header.
    pub async fn alarm_report(&self) -> Result<AlarmList> {
        let response = self
            .0
            .read_any(|client| async move {
                client
                    .call("alarm list", |mut c| async move {
                        c.alarm(AlarmAction::Get, AlarmType::None, None).await
                    })
                    .await
            })
            .await?;
        Ok(AlarmList {
            header: ResponseHeader::of(response.header()),
            alarms: response
                .alarms()
                .iter()
                .map(|a| Alarm {
                    member_id: MemberId(a.member_id()),
                    alarm: alarm_name(a.alarm()).to_string(),
                })
                .collect(),
        })
    }

    /// Clears every active alarm, then lists what is still active (a NOSPACE alarm comes
    /// back while the db is over its quota).
    ///
    /// With `dry_run` it lists what it would clear and clears nothing.
    pub async fn alarm_disarm(&self, request: AlarmDisarmRequest) -> Result<AlarmDisarmResult> {
        let active = self.alarm_list().await?;
        if request.dry_run {
            return Ok(AlarmDisarmResult {
                changed: !active.is_empty(),
                still_active: active.clone(),
                disarmed: active,
            });
        }
        let client = self.0.any().await?;
        for alarm in &active {
            let member = alarm.member_id.0;
            let kind = match alarm.alarm.as_str() {
                "NOSPACE" => AlarmType::Nospace,
                "CORRUPT" => AlarmType::Corrupt,
                _ => AlarmType::None,
            };
            client
                .call("alarm disarm", |mut c| async move {
                    let mut options = etcd_client::AlarmOptions::new();
                    options.with_member(member);
                    c.alarm(AlarmAction::Deactivate, kind, Some(options)).await
                })
                .await?;
        }
        let still_active = self.alarm_list().await?;
        Ok(AlarmDisarmResult {
            changed: !active.is_empty(),
            disarmed: active,
            still_active,
        })
    }
}

/// One member's defragmentation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefragStep {
    /// Endpoint.
    pub endpoint: String,
    /// The endpoint as given (`--endpoints`, or a member's client URL under `--cluster`), not
    /// normalized: etcdctl prints it so (`127.0.0.1:2379`, no scheme). Not in our JSON.
    #[serde(skip)]
    pub given: String,
    /// Member.
    pub member_id: Option<MemberId>,
    /// Whether it led the cluster (defragmented last).
    pub was_leader: bool,
    /// db size before.
    pub db_size_before: Option<i64>,
    /// db size after.
    pub db_size_after: Option<i64>,
    /// Seconds the defragmentation took.
    pub took_seconds: f64,
    /// Why it failed; the rolling defrag stops at the first failure.
    pub error: Option<String>,
}

/// A rolling defragmentation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefragReport {
    /// Steps in the order run: followers first, the leader last.
    pub steps: Vec<DefragStep>,
    /// Endpoints not defragmented because an earlier step failed.
    pub skipped: Vec<String>,
    /// The same endpoints as given (see [`DefragStep::given`]), in the same order.
    #[serde(skip)]
    pub skipped_given: Vec<String>,
    /// True when every endpoint was defragmented and healthy afterwards.
    pub completed: bool,
}

/// An endpoint to defragment, with what its status said before.
struct Planned {
    endpoint: String,
    given: String,
    client: Result<EndpointClient>,
    member_id: Option<MemberId>,
    is_leader: bool,
    db_size: Option<i64>,
}

impl Maintenance<'_> {
    /// Defragments one endpoint at a time: followers first, the leader last, checking health
    /// after each and stopping at the first failure. A defragmenting member stops serving
    /// for a while; doing them one by one keeps the quorum. Every step reuses this handle's
    /// connection to that member. Asks `guard` first, before any member is dialled: its
    /// refusal is the error.
    ///
    /// A member that does not answer its status request goes first, so that its failure
    /// stops the run before any healthy member is defragmented: defragmenting one member
    /// while another is down can cost the quorum (etcdctl defragments the others anyway).
    pub async fn defrag<G: ChangeGuard>(
        &self,
        targets: Targets,
        guard: &G,
    ) -> std::result::Result<DefragReport, G::Error> {
        guard.check(Change::Defrag { targets })?;
        let endpoints = self.defrag_endpoints(targets).await?;
        let mut planned = Vec::with_capacity(endpoints.len());
        for (endpoint, given) in endpoints {
            planned.push(self.plan_defrag(endpoint, given).await);
        }
        // Stable: the silent ones first, followers in their order, the leader last.
        planned.sort_by_key(|p| (p.member_id.is_some(), p.is_leader));
        let mut steps = Vec::new();
        let mut skipped = Vec::new();
        let mut skipped_given = Vec::new();
        for plan in planned {
            if steps.iter().any(|s: &DefragStep| s.error.is_some()) {
                skipped.push(plan.endpoint);
                skipped_given.push(plan.given);
                continue;
            }
            steps.push(defrag_one(plan).await);
        }
        let failed = steps.iter().any(|s| s.error.is_some());
        Ok(DefragReport {
            completed: !failed && skipped.is_empty() && !steps.is_empty(),
            steps,
            skipped,
            skipped_given,
        })
    }

    /// The endpoints `targets` address, normalized, each once, with the text it was given
    /// as: configured endpoints as on the command line, discovered ones as found.
    async fn defrag_endpoints(&self, targets: Targets) -> Result<Vec<(String, String)>> {
        let config = self.0.config();
        let given = match targets {
            Targets::Configured if config.discovery.is_none() => config.endpoints.clone(),
            _ => self.0.target_endpoints(targets).await?,
        };
        let mut out: Vec<(String, String)> = Vec::with_capacity(given.len());
        for given in given {
            let url = config.normalize_endpoint(&given)?;
            if !out.iter().any(|(u, _)| *u == url) {
                out.push((url, given));
            }
        }
        Ok(out)
    }

    /// Connects to `endpoint` and reads its status (who it is, whether it leads, its size).
    async fn plan_defrag(&self, endpoint: String, given: String) -> Planned {
        let client = self.0.endpoint(&endpoint).await;
        let status = match &client {
            Ok(c) => c
                .call("status", |mut c| async move { c.status().await })
                .await
                .ok(),
            Err(_) => None,
        };
        let (member_id, is_leader, db_size) = match &status {
            Some(s) => {
                let id = s.header().map(|h| h.member_id()).unwrap_or_default();
                (Some(MemberId(id)), s.leader() == id, Some(s.db_size()))
            }
            None => (None, false, None),
        };
        Planned {
            endpoint,
            given,
            client,
            member_id,
            is_leader,
            db_size,
        }
    }
}

/// Defragments one member, then checks it serves again (a linearizable read) and reads its
/// new size.
async fn defrag_one(plan: Planned) -> DefragStep {
    let started = Instant::now();
    let outcome = async {
        let client = plan.client?;
        client
            .call("defragment", |mut c| async move { c.defragment().await })
            .await?;
        linearizable_read(&client).await?;
        let after = client
            .call("status", |mut c| async move { c.status().await })
            .await?;
        Ok::<_, Error>(after.db_size())
    }
    .await;
    let error = outcome.as_ref().err().map(ToString::to_string);
    DefragStep {
        endpoint: plan.endpoint,
        given: plan.given,
        member_id: plan.member_id,
        was_leader: plan.is_leader,
        db_size_before: plan.db_size,
        db_size_after: outcome.ok(),
        took_seconds: started.elapsed().as_secs_f64(),
        error,
    }
}

/// How far to compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTarget {
    /// Up to this revision.
    Revision(i64),
    /// Keep this many revisions before the current one.
    KeepRevisions(i64),
}

/// What [`Maintenance::compact`] is asked: how far, whether to wait for the backend, whether only to
/// check. Deserializes from `revision` or `keep_revisions` (exactly one), `physical`.
///
/// ```
/// use etcd_core::{CompactRequest, CompactTarget};
///
/// let request = CompactRequest::new(CompactTarget::KeepRevisions(1000)).physical(true);
/// assert!(request.physical && !request.dry_run);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "CompactFields")]
pub struct CompactRequest {
    /// How far.
    pub target: CompactTarget,
    /// Wait until the compaction is applied to the backend.
    pub physical: bool,
    /// Say whether compacting would change anything, compact nothing.
    pub dry_run: bool,
}

impl CompactRequest {
    /// Compact to `target`, not waiting for the backend.
    pub fn new(target: CompactTarget) -> CompactRequest {
        CompactRequest {
            target,
            physical: false,
            dry_run: false,
        }
    }

    /// Wait (`true`) until the compaction is applied to the backend.
    pub fn physical(mut self, physical: bool) -> CompactRequest {
        self.physical = physical;
        self
    }

    /// Only check (`true`) whether compacting would change anything.
    pub fn dry_run(mut self, dry_run: bool) -> CompactRequest {
        self.dry_run = dry_run;
        self
    }
}

/// A compaction's options are those its module arguments spell (`CompactFields`).
impl schemars::JsonSchema for CompactRequest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        CompactFields::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        CompactFields::json_schema(generator)
    }
}

/// [`CompactRequest`] as a module's arguments spell it.
#[derive(Deserialize, schemars::JsonSchema)]
struct CompactFields {
    revision: Option<i64>,
    keep_revisions: Option<i64>,
    #[serde(default)]
    physical: bool,
    #[serde(default)]
    #[schemars(skip)]
    dry_run: bool,
}

impl TryFrom<CompactFields> for CompactRequest {
    type Error = String;

    fn try_from(fields: CompactFields) -> std::result::Result<CompactRequest, String> {
        let target = match (fields.revision, fields.keep_revisions) {
            (Some(r), None) => CompactTarget::Revision(r),
            (None, Some(n)) => CompactTarget::KeepRevisions(n),
            _ => return Err("compact needs exactly one of revision or keep_revisions".into()),
        };
        Ok(CompactRequest {
            target,
            physical: fields.physical,
            dry_run: fields.dry_run,
        })
    }
}

/// What `compact` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactResult {
    /// Whether anything was compacted (false when already compacted that far).
    pub changed: bool,
    /// The compaction revision.
    pub revision: i64,
    /// The current revision when it ran.
    pub current_revision: i64,
    /// Whether it waited for the compaction to be applied on disk.
    pub physical: bool,
}

/// The revision to compact to: refuses a negative count, nothing to compact and a revision
/// in the future.
fn compaction_revision(target: CompactTarget, current: i64) -> Result<i64> {
    let revision = match target {
        CompactTarget::Revision(r) => r,
        CompactTarget::KeepRevisions(n) if n >= 0 => current - n,
        CompactTarget::KeepRevisions(n) => {
            return Err(InvalidOption::new(KEEP_REVISIONS, format!("{n} is negative")).into());
        }
    };
    if revision <= 0 {
        return Err(InvalidOption::input(
            "revision",
            format!("nothing to compact: revision {revision} (current {current})"),
        )
        .into());
    }
    if revision > current {
        return Err(InvalidOption::input(
            "revision",
            format!("{revision} is in the future; the current revision is {current}"),
        )
        .into());
    }
    Ok(revision)
}

/// Whether etcd answered that the revision asked for is compacted already.
fn already_compacted<T>(result: &Result<T>) -> bool {
    matches!(result, Err(Error::Request { message, .. }) if message.contains("has been compacted"))
}

impl Maintenance<'_> {
    /// Compacts the key history. Refuses a revision in the future; compacting again to an
    /// already compacted revision changes nothing.
    ///
    /// With `dry_run` it says whether compacting would change anything (reading one revision
    /// below the target answers "compacted" when it already was) and compacts nothing.
    pub async fn compact(&self, request: &CompactRequest) -> Result<CompactResult> {
        let client = self.0.any().await?;
        let current = client
            .call("read revision", |mut c| async move {
                c.get("health", Some(GetOptions::new().with_count_only()))
                    .await
            })
            .await?
            .header()
            .map(|h| h.revision())
            .unwrap_or_default();
        let revision = compaction_revision(request.target, current)?;
        let physical = request.physical;
        let result = |changed| CompactResult {
            changed,
            revision,
            current_revision: current,
            physical,
        };
        if request.dry_run {
            let below = revision - 1;
            if below == 0 {
                return Ok(result(true));
            }
            let probe = client
                .call("read revision", |mut c| async move {
                    c.get(
                        "health",
                        Some(GetOptions::new().with_count_only().with_revision(below)),
                    )
                    .await
                })
                .await;
            if already_compacted(&probe) {
                return Ok(result(false));
            }
            return probe.map(|_| result(true));
        }
        let compacted = client
            .call("compact", |mut c| async move {
                let options = physical.then(|| CompactionOptions::new().with_physical());
                c.compact(revision, options).await
            })
            .await;
        if already_compacted(&compacted) {
            return Ok(result(false));
        }
        compacted.map(|_| result(true))
    }
}

/// Versions of this tool and of every member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionReport {
    /// This library's version.
    pub client_version: String,
    /// The newest etcd API version this library speaks (etcdctl's `API version`).
    pub api_version: String,
    /// Each member: ID, name, version (`None` when it did not answer).
    pub members: Vec<MemberVersion>,
}

/// One member's server version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberVersion {
    /// Member ID.
    pub member_id: MemberId,
    /// Name.
    pub name: String,
    /// etcd version, when it answered.
    pub version: Option<String>,
}

/// Reports versions, from one look at the cluster.
pub fn versions(view: &ClusterView) -> VersionReport {
    VersionReport {
        members: view
            .members
            .iter()
            .map(|m| MemberVersion {
                member_id: m.member.id,
                name: m.member.name.clone(),
                version: m.status.as_ref().map(|s| s.version.clone()),
            })
            .collect(),
        ..own_version()
    }
}

/// The newest etcd API version this library speaks.
pub const API_VERSION: &str = "3.6";

/// This tool's version alone, without asking any member (etcdctl's `version`).
pub fn own_version() -> VersionReport {
    VersionReport {
        client_version: env!("CARGO_PKG_VERSION").to_string(),
        api_version: API_VERSION.to_string(),
        members: Vec::new(),
    }
}

impl Maintenance<'_> {
    /// Versions of this tool and of every member.
    pub async fn version(&self) -> Result<VersionReport> {
        Ok(versions(&self.0.cluster_view().await?))
    }
}
