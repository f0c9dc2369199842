//! Maintenance workflows: the rolling defragmentation (guarded: OpenShift's
//! cluster-etcd-operator owns defragmentation there), compaction, alarms, moving leadership
//! (the `check` report is [`crate::check`]). Each takes a [`Client`], so a front-end running several of them
//! connects to each member once, and a typed request that module arguments deserialize into
//! ([`MaintenanceRequest`] for `etcd_maintenance`).
//!
//! ```no_run
//! use etcdops::client::{Client, ClusterConfig};
//! use etcdops::guard::Guards;
//! use etcdops::maintenance::{CompactRequest, CompactTarget, DefragRequest, compact, defrag};
//!
//! # async fn example() -> Result<(), etcdops::Error> {
//! let client = Client::new(ClusterConfig::for_endpoints(["http://127.0.0.1:2379"])?);
//! compact(&client, &CompactRequest::new(CompactTarget::KeepRevisions(1000))).await?;
//! // Refused where OpenShift's operator manages etcd, unless forced.
//! let done = defrag(&client, &Guards::default(), &DefragRequest::cluster()).await?;
//! assert!(done.report.is_some_and(|r| r.completed));
//! # Ok(())
//! # }
//! ```

use etcd_core::{Client, Targets};
use serde::{Deserialize, Serialize};

pub use etcd_core::{AlarmDisarmRequest, CheckOptions, CompactRequest, MoveLeaderRequest};

use crate::error::Result;
use crate::guard::{Force, Guards, Operation};
/// What the maintenance calls return.
pub use etcd_core::{
    Alarm, AlarmDisarmResult, AlarmList, CompactResult, CompactTarget, DefragReport, DefragStep,
    MoveLeaderResult,
};

fn every_member() -> bool {
    true
}

/// What a rolling defragmentation is asked. Deserializes from `cluster` (default `true`:
/// every member) and `force`; `dry_run` is the caller's check mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub struct DefragRequest {
    /// Every member's client URLs (from the member list), not only the configured endpoints.
    #[serde(default = "every_member")]
    pub cluster: bool,
    /// Go past the OpenShift operator guard.
    #[serde(default)]
    pub force: Force,
    /// Run the guard and list the endpoints, defragment nothing.
    #[serde(default)]
    #[schemars(skip)]
    pub dry_run: bool,
}

impl DefragRequest {
    /// Defragment every member of the cluster.
    pub fn cluster() -> DefragRequest {
        DefragRequest {
            cluster: true,
            force: Force(false),
            dry_run: false,
        }
    }

    /// Defragment only the configured endpoints.
    pub fn configured() -> DefragRequest {
        DefragRequest {
            cluster: false,
            ..DefragRequest::cluster()
        }
    }

    /// Go past the OpenShift operator guard (`true`), with a warning.
    pub fn force(mut self, force: bool) -> DefragRequest {
        self.force = Force(force);
        self
    }

    /// Only check (`true`): run the guard, list the endpoints, defragment nothing.
    pub fn dry_run(mut self, dry_run: bool) -> DefragRequest {
        self.dry_run = dry_run;
        self
    }

    fn targets(&self) -> Targets {
        Targets::of(self.cluster)
    }
}

/// What a rolling defragmentation did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefragOutcome {
    /// The endpoints addressed: in a dry run, those it would defragment.
    pub endpoints: Vec<String>,
    /// The steps, followers first and the leader last; `None` in a dry run.
    pub report: Option<DefragReport>,
    /// The guard's warning when it was forced through.
    pub warning: Option<String>,
}

/// Defragments one member at a time, followers first and the leader last, stopping at the
/// first failure, after the OpenShift operator guard let it through (refused there unless
/// `force`). With `dry_run` only the guard runs and the endpoints are listed.
pub async fn defrag(
    client: &Client,
    guards: &Guards,
    request: &DefragRequest,
) -> Result<DefragOutcome> {
    let passed = guards
        .check(Operation::Defrag, request.force, Some(client.config()))
        .await?;
    let warning = passed.warning();
    if request.dry_run {
        return Ok(DefragOutcome {
            endpoints: client.target_endpoints(request.targets()).await?,
            report: None,
            warning,
        });
    }
    let report = client
        .maintenance()
        .defrag(request.targets(), &passed)
        .await?;
    Ok(DefragOutcome {
        endpoints: report
            .steps
            .iter()
            .map(|s| s.endpoint.clone())
            .chain(report.skipped.iter().cloned())
            .collect(),
        report: Some(report),
        warning,
    })
}

/// Compacts the key history; with `dry_run`, says whether that would change anything.
pub async fn compact(client: &Client, request: &CompactRequest) -> Result<CompactResult> {
    Ok(client.maintenance().compact(request).await?)
}

/// The cluster's active alarms.
pub async fn alarm_list(client: &Client) -> Result<Vec<Alarm>> {
    Ok(client.maintenance().alarm_list().await?)
}

/// Clears every active alarm and says which are still active; with `dry_run`, lists what it
/// would clear.
pub async fn alarm_disarm(
    client: &Client,
    request: AlarmDisarmRequest,
) -> Result<AlarmDisarmResult> {
    Ok(client.maintenance().alarm_disarm(request).await?)
}

/// Moves leadership to the member the request names (refusing a learner or an unhealthy
/// member); with `dry_run`, only checks.
pub async fn move_leader(client: &Client, request: &MoveLeaderRequest) -> Result<MoveLeaderResult> {
    Ok(client.maintenance().move_leader(request).await?)
}

/// The `etcd_maintenance` module's arguments: one request, chosen by `action`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum MaintenanceRequest {
    /// A rolling defragmentation.
    Defrag(DefragRequest),
    /// A compaction.
    Compact(CompactRequest),
    /// Clearing every alarm.
    AlarmDisarm(AlarmDisarmRequest),
    /// Moving leadership.
    MoveLeader(MoveLeaderRequest),
}

impl MaintenanceRequest {
    /// The same request, only checking (`true`) or for real.
    pub fn dry_run(self, dry_run: bool) -> MaintenanceRequest {
        match self {
            MaintenanceRequest::Defrag(r) => MaintenanceRequest::Defrag(r.dry_run(dry_run)),
            MaintenanceRequest::Compact(r) => MaintenanceRequest::Compact(r.dry_run(dry_run)),
            MaintenanceRequest::AlarmDisarm(r) => {
                MaintenanceRequest::AlarmDisarm(r.dry_run(dry_run))
            }
            MaintenanceRequest::MoveLeader(r) => MaintenanceRequest::MoveLeader(r.dry_run(dry_run)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcd_core::{ClusterConfig, CompactTarget};
    use serde_json::json;

    fn request(args: serde_json::Value) -> std::result::Result<MaintenanceRequest, String> {
        serde_json::from_value(args).map_err(|e| e.to_string())
    }

    #[test]
    fn module_arguments_deserialize_straight_into_the_requests() {
        assert_eq!(
            request(json!({"action": "defrag"})),
            Ok(MaintenanceRequest::Defrag(DefragRequest::cluster()))
        );
        assert_eq!(
            request(json!({"action": "defrag", "cluster": false, "force": true})),
            Ok(MaintenanceRequest::Defrag(
                DefragRequest::configured().force(true)
            ))
        );
        assert_eq!(
            request(json!({"action": "compact", "keep_revisions": 5, "physical": true})),
            Ok(MaintenanceRequest::Compact(
                CompactRequest::new(CompactTarget::KeepRevisions(5)).physical(true)
            ))
        );
        assert_eq!(
            request(json!({"action": "compact", "revision": 9})),
            Ok(MaintenanceRequest::Compact(CompactRequest::new(
                CompactTarget::Revision(9)
            )))
        );
        assert_eq!(
            request(json!({"action": "alarm_disarm"})),
            Ok(MaintenanceRequest::AlarmDisarm(AlarmDisarmRequest::new()))
        );
        assert_eq!(
            request(json!({"action": "move_leader", "leader": "m1"})).map(|r| r.dry_run(true)),
            Ok(MaintenanceRequest::MoveLeader(
                MoveLeaderRequest::new("m1").dry_run(true)
            ))
        );
    }

    #[test]
    fn a_compaction_needs_exactly_one_target_and_a_leader_move_a_member() {
        for both_or_none in [
            json!({"action": "compact"}),
            json!({"action": "compact", "revision": 3, "keep_revisions": 2}),
        ] {
            let err = request(both_or_none).unwrap_err();
            assert!(
                err.contains("exactly one of revision or keep_revisions"),
                "{err}"
            );
        }
        let err = request(json!({"action": "move_leader"})).unwrap_err();
        assert!(err.contains("missing field `leader`"), "{err}");
        let err = request(json!({"action": "reboot"})).unwrap_err();
        assert!(err.contains("unknown variant `reboot`"), "{err}");
    }

    #[tokio::test]
    async fn the_defrag_workflow_itself_refuses_on_openshift_without_force() {
        // An OpenShift host (its static pod manifest), and an etcd no one listens for: the
        // guard refuses before anything connects.
        let root = tempfile::tempdir().unwrap();
        let manifests = root.path().join("etc/kubernetes/manifests");
        std::fs::create_dir_all(&manifests).unwrap();
        std::fs::write(
            manifests.join("etcd-pod.yaml"),
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: openshift-etcd\n",
        )
        .unwrap();
        let config = ClusterConfig::for_endpoints(["http://127.0.0.1:9"]).unwrap();
        let client = Client::new(config);
        let guards = Guards::on_host(root.path());
        let err = defrag(&client, &guards, &DefragRequest::cluster().dry_run(true))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("refusing `defrag`"), "{err}");
        assert_eq!(client.dials(), 0, "refused before connecting");

        let forced = defrag(
            &client,
            &guards,
            &DefragRequest::configured().force(true).dry_run(true),
        )
        .await
        .unwrap();
        assert!(forced.warning.is_some_and(|w| w.contains("defrag")));
        assert_eq!(forced.endpoints, ["http://127.0.0.1:9"]);
        assert_eq!(forced.report, None, "a dry run defragments nothing");
        assert_eq!(client.dials(), 0);
    }
}
