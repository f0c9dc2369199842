//! Restore from any source: a snapshot file, a stored object, a surviving member's data dir,
//! or a point in time of a store `backup run` writes to. The OpenShift operator guard is
//! checked here, first, so no caller can skip it.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use etcd_common::{Hint, options};
pub use etcd_snapshot::V2Snapshot;
use etcd_snapshot::{
    PitrPlan, PointInTime, RestoreMarker, RestoreResult, RestoreSource, TrailerCheck,
    open_restore_source, read_marker, restore_snapshot, restore_to_point,
};
use serde::{Deserialize, Deserializer, Serialize};

use super::settings::{IdentitySettings, StoreSettings};
use crate::error::{Error, Result};
use crate::guard::{Force, Guards, Operation};

fn default_token() -> String {
    etcd_snapshot::restore_defaults::INITIAL_CLUSTER_TOKEN.into()
}

/// An RFC 3339 time (`2026-11-30T02:15:00Z`).
pub(super) fn rfc3339<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<DateTime<Utc>>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| {
            DateTime::parse_from_rfc3339(&text)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    serde::de::Error::custom(format!(
                        "to_time '{text}' is not an RFC 3339 time such as 2026-11-30T02:15:00Z: {e}"
                    ))
                })
        })
        .transpose()
}

/// What to restore from, into which data dir, as which member of which new cluster.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct RestoreRequest {
    /// A snapshot file, a stored object's URL, or (with `to_revision`/`to_time`) the store
    /// `backup run` writes to.
    pub snapshot: Option<String>,
    /// A stopped surviving member's data dir to restore its own db from (only read).
    pub from_data_dir: Option<PathBuf>,
    /// The data dir to create (absent or empty).
    pub data_dir: PathBuf,
    /// A separate WAL dir to create.
    pub wal_dir: Option<PathBuf>,
    /// This member's name, as in `initial_cluster`.
    pub name: String,
    /// Every member of the new cluster: `name=peer-url,...`.
    pub initial_cluster: String,
    /// The new cluster's token.
    #[serde(default = "default_token")]
    pub initial_cluster_token: String,
    /// This member's peer URLs.
    pub initial_advertise_peer_urls: Vec<String>,
    /// Restore even when etcd's SHA-256 trailer is missing or does not match.
    #[serde(default)]
    pub skip_hash_check: bool,
    /// Raise the latest revision by this much (needs `mark_compacted`).
    #[serde(default)]
    pub bump_revision: u64,
    /// Mark the bumped revision compacted.
    #[serde(default)]
    pub mark_compacted: bool,
    /// The raft `.snap` file (the v2 store) beside the db and WAL: written as the snapshot's
    /// own release's etcdutl does (`by_release`: every release before 3.8), always
    /// (`write`), or left out (`skip`: etcd 3.7 and later never read it; refused for older
    /// snapshots).
    #[serde(default)]
    pub v2_snapshot: V2Snapshot,
    /// Rename a non-empty data dir aside instead of refusing it.
    #[serde(default)]
    pub move_aside: bool,
    /// Go past the OpenShift operator guard, and move aside a dir a member ran on.
    #[serde(default)]
    pub force: Force,
    /// With `move_aside`, for a whole-cluster restore that has stopped every member: a
    /// restored dir a member has run on since is moved aside (never deleted) and restored
    /// anew, without `force` (which also goes past the OpenShift operator guard).
    #[serde(default)]
    pub replace_restored: bool,
    /// Do nothing when the cluster already runs from this very restore (see `in_service`).
    #[serde(default)]
    pub skip_in_service: bool,
    /// The cluster `skip_in_service` asks (the front-end's connection settings).
    #[serde(skip)]
    pub cluster: Option<etcd_core::ClusterConfig>,
    /// `USER[:GROUP]` to own the restored tree.
    pub owner: Option<String>,
    /// Point in time: every change up to this revision.
    pub to_revision: Option<i64>,
    /// Point in time: every change received by this time.
    #[serde(default, deserialize_with = "rfc3339")]
    pub to_time: Option<DateTime<Utc>>,
    /// Check everything, write nothing.
    #[serde(skip)]
    pub dry_run: bool,
    /// The identities of an encrypted snapshot.
    #[serde(flatten)]
    pub identity: IdentitySettings,
    /// How a store is reached.
    #[serde(flatten)]
    pub store: StoreSettings,
    /// The host's guards (its root, for the OpenShift operator guard).
    #[serde(skip)]
    pub guards: Guards,
}

/// The point in time of `to_revision` / `to_time` (at most one of them), as a restore and a
/// copy for one read them.
pub(crate) fn point_in_time(
    to_revision: Option<i64>,
    to_time: Option<DateTime<Utc>>,
) -> Result<Option<PointInTime>> {
    match (to_revision, to_time) {
        (Some(_), Some(_)) => Err(Error::invalid(
            "give at most one of to_revision and to_time",
            None,
        )),
        (Some(revision), None) => Ok(Some(PointInTime::Revision(revision))),
        (None, Some(time)) => Ok(Some(PointInTime::Time(time))),
        (None, None) => Ok(None),
    }
}

/// Where a restore reads from, as the request names it.
enum Source<'a> {
    Snapshot(&'a str),
    DataDir(&'a Path),
    Point(&'a str, PointInTime),
}

impl RestoreRequest {
    fn source(&self) -> Result<Source<'_>> {
        let point = point_in_time(self.to_revision, self.to_time)?;
        match (&self.snapshot, &self.from_data_dir, point) {
            (Some(_), Some(_), _) | (None, None, _) => Err(Error::invalid(
                "give exactly one source: a snapshot (a file or a store URL) or a surviving member's data dir",
                None,
            )),
            (None, Some(_), Some(_)) => Err(Error::invalid(
                "to_revision and to_time need the snapshot to be the store backup run writes to (a directory or URL), not a member's data dir",
                None,
            )),
            (Some(store), None, Some(point)) => Ok(Source::Point(store, point)),
            (Some(snapshot), None, None) => Ok(Source::Snapshot(snapshot)),
            (None, Some(dir), None) => Ok(Source::DataDir(dir)),
        }
    }

    fn library_request(&self) -> etcd_snapshot::RestoreRequest {
        etcd_snapshot::RestoreRequest {
            name: self.name.clone(),
            initial_cluster: self.initial_cluster.clone(),
            initial_cluster_token: self.initial_cluster_token.clone(),
            initial_advertise_peer_urls: self.initial_advertise_peer_urls.clone(),
            data_dir: self.data_dir.clone(),
            wal_dir: self.wal_dir.clone(),
            skip_hash_check: self.skip_hash_check,
            bump_revision: self.bump_revision,
            mark_compacted: self.mark_compacted,
            move_aside: self.move_aside,
            force: self.force.0,
            replace_ran: self.replace_restored,
            owner: self.owner.clone(),
            dry_run: self.dry_run,
            v2_snapshot: self.v2_snapshot,
        }
    }
}

/// What the data dir held before the restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Previous {
    /// Nothing (absent or empty).
    Empty,
    /// A restore, as its marker records it.
    Restore(Box<RestoreMarker>),
    /// Something not written by a restore.
    Other,
}

/// Something a front-end tells the user about a restore that went through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreWarning {
    /// The OpenShift operator guard was forced through.
    Forced(String),
    /// An identity file others can read.
    Identity(String),
    /// etcd's trailer did not match and `skip_hash_check` let it through.
    TrailerMismatchIgnored,
    /// The staging dir of a killed restore was removed.
    LeftoverRemoved(PathBuf),
    /// The previous data dir (or WAL dir) was moved aside to this path.
    MovedAside(PathBuf),
    /// A restore by time on a chain whose clock stepped back: the time was mapped to the
    /// revision the clock first reached it at; it may have been shown again later.
    ClockStepped {
        /// The revision restored.
        revision: i64,
        /// The steps, in words.
        steps: Vec<String>,
        /// The later revisions stamped at or before the time (not restored), when any.
        seen_again: Option<(i64, i64)>,
    },
    /// Changes replayed without their lease, which ended before `backup run` learned its TTL.
    LeasesDetached {
        /// How many changes.
        changes: u64,
        /// The leases, hex.
        leases: Vec<String>,
    },
}

impl RestoreWarning {
    /// The warning in words, without a front-end's option spelling.
    pub fn message(&self) -> String {
        match self {
            RestoreWarning::Forced(text) | RestoreWarning::Identity(text) => text.clone(),
            RestoreWarning::TrailerMismatchIgnored => {
                "etcd's SHA-256 trailer does not match the db".into()
            }
            RestoreWarning::LeftoverRemoved(path) => format!(
                "removed {}, the staging dir of a restore that was killed",
                path.display()
            ),
            RestoreWarning::MovedAside(path) => {
                format!("moved the previous dir aside to {}", path.display())
            }
            RestoreWarning::ClockStepped {
                revision,
                steps,
                seen_again,
            } => {
                let mut text = format!(
                    "the chain's time stamps go back ({}): the time was mapped to revision {revision}, the last one received before the backup clock first went past it",
                    steps.join("; ")
                );
                if let Some((first, last)) = seen_again {
                    text.push_str(&format!(
                        "; the clock showed that time again after it stepped back, at revisions {first} to {last}, which were not restored: restore by revision to choose one of those instead"
                    ));
                }
                text
            }
            RestoreWarning::LeasesDetached { changes, leases } => format!(
                "{changes} changes were restored without their lease ({}): the lease ended before backup run learned its TTL, so those keys will not expire",
                leases.join(", ")
            ),
        }
    }

    /// The option that explains it (`skip_hash_check` for an ignored trailer).
    pub fn hint(&self) -> Option<Hint> {
        match self {
            RestoreWarning::TrailerMismatchIgnored => Some(Hint::option(options::SKIP_HASH_CHECK)),
            RestoreWarning::ClockStepped {
                seen_again: Some(_),
                ..
            } => Some(Hint::option(etcd_data::restore::opts::TO_REVISION)),
            _ => None,
        }
    }

    /// Whether it is a warning; else a note of what was done (moved aside, removed).
    pub fn is_warning(&self) -> bool {
        !matches!(
            self,
            RestoreWarning::LeftoverRemoved(_) | RestoreWarning::MovedAside(_)
        )
    }
}

/// What a restore did (or, in a dry run, would do).
#[derive(Debug, Clone, Serialize)]
pub struct Restored {
    /// The restored member and cluster.
    #[serde(flatten)]
    pub result: RestoreResult,
    /// For a point in time: the full backup and segments it read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PitrPlan>,
    /// What the data dir held before.
    #[serde(skip)]
    pub previous: Previous,
    /// What the front-end tells the user, in order.
    #[serde(skip)]
    pub warnings: Vec<RestoreWarning>,
    /// True when `skip_in_service` found the cluster running from this very restore, and
    /// nothing was done.
    pub in_service: bool,
}

/// What `data_dir` holds now.
fn previous(data_dir: &Path) -> Previous {
    match read_marker(data_dir) {
        Some(marker) => Previous::Restore(Box::new(marker)),
        None if std::fs::read_dir(data_dir).is_ok_and(|mut d| d.next().is_some()) => {
            Previous::Other
        }
        None => Previous::Empty,
    }
}

/// Restores the request's source into its data dir: refused first where OpenShift's
/// cluster-etcd-operator manages etcd (unless `force`), then every check of the source,
/// options and target dirs; a dry run writes nothing. With `skip_in_service`, nothing is
/// done (`in_service`, unchanged) when `in_service` says the cluster runs from this restore.
pub async fn restore(request: &RestoreRequest) -> Result<Restored> {
    if !request.skip_in_service {
        return restore_once(request, false).await;
    }
    // What this data dir holds: a dry run that neither replaces a restore a member ran on nor
    // stops at one (the ran-since guard answers for writes, and a dry run writes nothing).
    let mut probe = request.clone();
    probe.dry_run = true;
    probe.replace_restored = false;
    let mut found = restore_once(&probe, true).await?;
    if !found.result.changed
        && let Some(cluster) = &request.cluster
        && in_service(&found.result, cluster).await
    {
        found.in_service = true;
        return Ok(found);
    }
    // A dry run the probe already answers: replacing passes the ran-since guard as the probe
    // did, and changes only an unchanged answer.
    if request.dry_run && request.replace_restored && found.result.changed {
        return Ok(found);
    }
    restore_once(request, false).await
}

/// Whether the cluster at `cluster` runs from `restored`, a restore this member's data dir
/// already holds whole (the same backup, revision, members and token: the library's
/// marker): the cluster answers with the restored cluster's ID, has exactly the restored
/// members (names, peer URLs, none a learner) and a quorum of them is healthy. A member
/// down does not make a cluster that runs from the restore need it again (restoring again
/// would throw away every write since: starting or replacing that member is the fix). A
/// cluster that cannot be reached is not in service.
pub async fn in_service(restored: &RestoreResult, cluster: &etcd_core::ClusterConfig) -> bool {
    etcd_core::Client::new(cluster.clone())
        .cluster_view()
        .await
        .is_ok_and(|view| runs_from(&view, restored))
}

/// Whether `view` is the cluster `restored` made, all of it voters, a quorum of them healthy.
fn runs_from(view: &etcd_core::ClusterView, restored: &RestoreResult) -> bool {
    let mut want: Vec<(String, String, Vec<String>)> = restored
        .members
        .iter()
        .map(|m| (format!("{:x}", m.id), m.name.clone(), m.peer_urls.clone()))
        .collect();
    let mut have: Vec<(String, String, Vec<String>)> = view
        .members
        .iter()
        .map(|m| {
            let mut peer_urls = m.member.peer_urls.clone();
            peer_urls.sort();
            (m.member.id.to_string(), m.member.name.clone(), peer_urls)
        })
        .collect();
    want.sort();
    have.sort();
    let healthy = view.members.iter().filter(|m| m.healthy).count();
    view.cluster_id.to_string() == restored.cluster_id
        && want == have
        && view.members.iter().all(|m| !m.member.is_learner)
        && healthy > view.members.len() / 2
}

/// At most this many clock steps are named in a warning (the rest are counted).
const STEPS_NAMED: usize = 3;

/// The warning of a restore by time on a chain whose clock stepped back (`None` otherwise).
fn clock_warning(pitr: &etcd_snapshot::ReplaySummary) -> Option<RestoreWarning> {
    if pitr.clock_steps.is_empty() && pitr.time_seen_again.is_none() {
        return None;
    }
    let mut steps: Vec<String> = pitr
        .clock_steps
        .iter()
        .take(STEPS_NAMED)
        .map(|s| s.describe())
        .collect();
    if pitr.clock_steps.len() > STEPS_NAMED {
        steps.push(format!(
            "{} more steps",
            pitr.clock_steps.len() - STEPS_NAMED
        ));
    }
    Some(RestoreWarning::ClockStepped {
        revision: pitr.target_revision,
        steps,
        seen_again: pitr
            .time_seen_again
            .map(|s| (s.first_revision, s.last_revision)),
    })
}

/// One restore as the request asks; `probe` (a dry run) looks past the ran-since guard.
async fn restore_once(request: &RestoreRequest, probe: bool) -> Result<Restored> {
    let passed = request
        .guards
        .check(Operation::SnapshotRestore, request.force, None)
        .await?;
    let source = request.source()?;
    let (identities, identity_warnings) = request.identity.identities()?;
    let before = previous(&request.data_dir);
    let mut library = request.library_request();
    library.force |= probe && request.dry_run;
    let options = request.store.options();
    let (result, plan) = match source {
        Source::Point(store, point) => {
            let (result, plan) =
                restore_to_point(&mut library, store, point, &options, &identities, &passed)
                    .await?;
            (result, Some(plan))
        }
        Source::Snapshot(text) => {
            let from = RestoreSource::Snapshot(text);
            let (name, snapshot) =
                open_restore_source(&mut library, from, &options, &identities).await?;
            (restore_snapshot(&name, &snapshot, &library, &passed)?, None)
        }
        Source::DataDir(dir) => {
            let from = RestoreSource::DataDir(dir);
            let (name, snapshot) =
                open_restore_source(&mut library, from, &options, &identities).await?;
            (restore_snapshot(&name, &snapshot, &library, &passed)?, None)
        }
    };
    let mut warnings: Vec<RestoreWarning> = passed
        .warning()
        .map(RestoreWarning::Forced)
        .into_iter()
        .collect();
    warnings.extend(identity_warnings.into_iter().map(RestoreWarning::Identity));
    if result.trailer == TrailerCheck::MismatchIgnored {
        warnings.push(RestoreWarning::TrailerMismatchIgnored);
    }
    warnings.extend(
        result
            .leftovers_removed
            .iter()
            .cloned()
            .map(RestoreWarning::LeftoverRemoved),
    );
    warnings.extend(
        result
            .moved_aside
            .iter()
            .cloned()
            .map(RestoreWarning::MovedAside),
    );
    if let Some(warning) = result.point_in_time.as_ref().and_then(clock_warning) {
        warnings.push(warning);
    }
    if let Some(pitr) = &result.point_in_time
        && !pitr.leases_detached.is_empty()
    {
        warnings.push(RestoreWarning::LeasesDetached {
            changes: pitr.changes_detached,
            leases: pitr.leases_detached.clone(),
        });
    }
    Ok(Restored {
        result,
        plan,
        previous: before,
        warnings,
        in_service: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(extra: serde_json::Value) -> std::result::Result<RestoreRequest, String> {
        let mut args = serde_json::json!({
            "data_dir": "/var/lib/etcd", "name": "a",
            "initial_cluster": "a=https://10.0.0.1:2380",
            "initial_advertise_peer_urls": ["https://10.0.0.1:2380"],
        });
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(args).map_err(|e| e.to_string())
    }

    #[test]
    fn module_options_deserialize_into_a_restore_request() {
        let r = request(serde_json::json!({
            "snapshot": "s3://b/etcd-1", "to_time": "2026-11-30T02:15:00Z", "force": true,
            "identity_file": "/k", "s3_path_style": true
        }))
        .unwrap();
        assert_eq!(r.initial_cluster_token, "etcd-cluster");
        assert_eq!(r.force, Force(true));
        assert!(r.store.s3_path_style);
        assert!(matches!(
            r.source(),
            Ok(Source::Point("s3://b/etcd-1", PointInTime::Time(_)))
        ));
        assert_eq!(r.guards, Guards::default());
        let bad =
            request(serde_json::json!({"snapshot": "x", "to_time": "yesterday"})).unwrap_err();
        assert!(
            bad.contains("to_time 'yesterday' is not an RFC 3339 time"),
            "{bad}"
        );
    }

    fn view_of(restored: &RestoreResult) -> etcd_core::ClusterView {
        etcd_core::ClusterView {
            cluster_id: etcd_core::MemberId(u64::from_str_radix(&restored.cluster_id, 16).unwrap()),
            members: restored
                .members
                .iter()
                .map(|m| etcd_core::MemberState {
                    member: etcd_core::Member {
                        id: etcd_core::MemberId(m.id),
                        name: m.name.clone(),
                        peer_urls: m.peer_urls.iter().rev().cloned().collect(),
                        client_urls: vec![],
                        is_learner: false,
                        started: true,
                    },
                    endpoint: None,
                    healthy: true,
                    status: None,
                    error: None,
                })
                .collect(),
            leader: None,
        }
    }

    #[test]
    fn a_cluster_runs_from_a_restore_only_with_its_id_exactly_its_members_voters_a_quorum_healthy()
    {
        let members = etcd_snapshot::parse_initial_cluster(
            "a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,b=http://10.0.0.20:2380,c=http://10.0.0.3:2380",
            "t",
        )
        .unwrap();
        let ids: Vec<u64> = members.iter().map(|m| m.id).collect();
        let restored = RestoreResult {
            data_dir: "/d".into(),
            wal_dir: "/d/member/wal".into(),
            name: "a".into(),
            member_id: format!("{:x}", ids[0]),
            cluster_id: format!("{:x}", etcd_snapshot::cluster_id(&ids)),
            members,
            revision: 5,
            consistent_index: 2,
            db_size: 0,
            trailer: TrailerCheck::Verified,
            db_sha256: String::new(),
            changed: false,
            moved_aside: vec![],
            point_in_time: None,
            leftovers_removed: vec![],
        };
        assert!(runs_from(&view_of(&restored), &restored));
        let mut other = view_of(&restored);
        other.cluster_id = etcd_core::MemberId(1);
        assert!(!runs_from(&other, &restored), "another cluster");
        // One member down: the cluster still runs from the restore (a quorum serves it).
        let mut one_down = view_of(&restored);
        one_down.members[1].healthy = false;
        assert!(runs_from(&one_down, &restored), "one member down");
        let mut no_quorum = one_down.clone();
        no_quorum.members[2].healthy = false;
        assert!(!runs_from(&no_quorum, &restored), "no quorum");
        let mut learner = view_of(&restored);
        learner.members[1].member.is_learner = true;
        assert!(!runs_from(&learner, &restored), "a learner");
        let mut fewer = view_of(&restored);
        fewer.members.pop();
        assert!(!runs_from(&fewer, &restored), "a member missing");
        let mut renamed = view_of(&restored);
        renamed.members[0].member.name = "c".into();
        assert!(!runs_from(&renamed, &restored), "another name");
    }

    #[test]
    fn a_restore_by_time_on_a_stepped_clock_says_so_and_names_the_revisions_left_out() {
        let at = |s: i64| DateTime::<Utc>::from_timestamp(1_800_000_000 + s, 0).unwrap();
        let mut pitr = etcd_snapshot::ReplaySummary {
            target_revision: 4407,
            ..Default::default()
        };
        assert_eq!(clock_warning(&pitr), None, "a clock that never went back");
        pitr.clock_steps = (0..5)
            .map(|i| etcd_snapshot::ClockStep {
                revision: 4500 + i,
                before: at(30),
                after: at(10),
            })
            .collect();
        pitr.time_seen_again = Some(etcd_snapshot::TimeSeenAgain {
            first_revision: 4500,
            last_revision: 5100,
        });
        let warning = clock_warning(&pitr).unwrap();
        let text = warning.message();
        assert!(text.contains("mapped to revision 4407"), "{text}");
        assert!(
            text.contains("the backup clock went back 20.0 s at revision 4500"),
            "{text}"
        );
        assert!(text.contains("2 more steps"), "{text}");
        assert!(text.contains("at revisions 4500 to 5100"), "{text}");
        assert!(warning.is_warning());
        assert_eq!(
            warning.hint(),
            Some(Hint::option(etcd_data::restore::opts::TO_REVISION))
        );
        pitr.time_seen_again = None;
        assert_eq!(clock_warning(&pitr).unwrap().hint(), None);
    }

    #[test]
    fn exactly_one_source_is_taken() {
        let neither = request(serde_json::json!({})).unwrap();
        assert!(matches!(
            neither.source(),
            Err(Error::InvalidRequest { .. })
        ));
        let both = request(serde_json::json!({"snapshot": "x", "from_data_dir": "/d"})).unwrap();
        assert!(both.source().is_err());
        let dir = request(serde_json::json!({"from_data_dir": "/d"})).unwrap();
        assert!(matches!(dir.source(), Ok(Source::DataDir(_))));
        let point_from_dir =
            request(serde_json::json!({"from_data_dir": "/d", "to_revision": 5})).unwrap();
        let err = point_from_dir.source().err().unwrap().to_string();
        assert!(err.contains("to_revision and to_time need"), "{err}");
        let two_points = request(serde_json::json!({
            "snapshot": "s", "to_revision": 5, "to_time": "2026-11-30T02:15:00Z"
        }))
        .unwrap();
        assert!(two_points.source().is_err());
    }

    #[tokio::test]
    async fn a_library_caller_is_refused_by_the_openshift_guard_before_anything_is_read() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(
            root.path()
                .join("etc/kubernetes/static-pod-resources/etcd-certs"),
        )
        .unwrap();
        let target = root.path().join("restored");
        let mut r = request(serde_json::json!({"snapshot": "/nonexistent/backup.db"})).unwrap();
        r.data_dir = target.clone();
        r.guards = Guards::on_host(root.path());
        let refused = restore(&r).await.unwrap_err();
        assert!(
            matches!(
                refused.library::<etcd_k8s::K8sError>(),
                Some(etcd_k8s::K8sError::ManagedByOperator { .. })
            ),
            "{refused:?}"
        );
        assert!(!target.exists());
        // Forced, it goes on to the source (which is missing here).
        r.force = Force(true);
        let missing = restore(&r).await.unwrap_err();
        assert!(
            missing.library::<etcd_k8s::K8sError>().is_none(),
            "{missing:?}"
        );
    }
}
