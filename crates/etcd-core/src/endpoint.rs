//! Per-endpoint checks: health, status and KV hash. Each endpoint is asked over its own
//! connection, concurrently, and each gets its own row: one member down never hides the
//! others' answers.

use std::time::Instant;

use etcd_client::GetOptions;
use etcd_common::{ErrorKind, Hinted};
use serde::Serialize;

use crate::client::Client;
use crate::cluster::linearizable_read;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::header::ResponseHeader;
use crate::id::MemberId;
use crate::member::Targets;

/// Health of one endpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointHealth {
    /// The endpoint URL.
    pub endpoint: String,
    /// The endpoint as given (`--endpoints`, or a member's client URL under `--cluster`),
    /// not normalized: etcdctl prints it so (`127.0.0.1:2379`, no scheme). Not in our JSON,
    /// which shows `endpoint`.
    #[serde(skip)]
    pub given: String,
    /// The member's etcd version, when it is healthy and answered a status request
    /// (etcdctl's output differs between releases).
    pub server_version: Option<String>,
    /// True when a linearizable read succeeded and no alarm is raised.
    pub health: bool,
    /// The alarms the member reports (`NOSPACE`, `CORRUPT`): any makes it unhealthy here, as
    /// for etcdctl 3.5 and later; etcdctl 3.4 judged by the read alone
    /// ([`HealthReport::judged_as_release`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<String>,
    /// Milliseconds the check took.
    pub took_ms: f64,
    /// Why it is unhealthy.
    pub error: Option<String>,
    /// What kind of failure `error` is (a front-end's exit status follows it).
    #[serde(skip)]
    pub error_kind: Option<ErrorKind>,
}

/// Health of every addressed endpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthReport {
    /// One row per endpoint, in the order addressed.
    pub endpoints: Vec<EndpointHealth>,
    /// True when every endpoint is healthy.
    pub all_healthy: bool,
}

impl HealthReport {
    /// The verdicts etcdctl of each member's own release gives: etcdctl 3.4 calls a member
    /// whose read succeeds healthy whatever alarm it raises (3.5 added the alarm rule), so a
    /// readiness loop written for a 3.4 cluster behaves as it did. For the etcdctl
    /// personality; etcdops' own verdict counts alarms on every release.
    pub fn judged_as_release(mut self) -> HealthReport {
        for row in &mut self.endpoints {
            let alarms_only = !row.health && !row.alarms.is_empty();
            let release_3_4 = row.server_version.as_deref().is_some_and(is_release_3_4);
            if alarms_only && release_3_4 {
                row.health = true;
                row.error = None;
                row.error_kind = None;
            }
        }
        self.all_healthy = !self.endpoints.is_empty() && self.endpoints.iter().all(|r| r.health);
        self
    }
}

/// Each endpoint's health, status and KV hash ([`Client::endpoints`]), as `etcdctl endpoint`
/// reports them.
#[derive(Debug, Clone, Copy)]
pub struct Endpoints<'c>(&'c Client);

impl Client {
    /// Each endpoint's health, status and KV hash.
    pub fn endpoints(&self) -> Endpoints<'_> {
        Endpoints(self)
    }
}

impl Endpoints<'_> {
    /// Checks the health of each endpoint as etcdctl does: a linearizable read of the key
    /// `health` must succeed (permission denied counts as success: the read went through raft),
    /// and the member must report no alarm.
    pub async fn health(&self, targets: Targets) -> Result<HealthReport> {
        let endpoints = self.addressed(targets).await?;
        let rows =
            futures::future::join_all(endpoints.iter().map(|e| check_health(self.0, e))).await;
        Ok(HealthReport {
            all_healthy: !rows.is_empty() && rows.iter().all(|r| r.health),
            endpoints: rows,
        })
    }

    /// Reads the status of each endpoint.
    pub async fn status(&self, targets: Targets) -> Result<StatusReport> {
        let endpoints = self.addressed(targets).await?;
        let rows =
            futures::future::join_all(endpoints.iter().map(|e| read_status(self.0, e))).await;
        Ok(StatusReport {
            all_answered: !rows.is_empty() && rows.iter().all(|r| r.error.is_none()),
            endpoints: rows,
        })
    }

    /// Hashes each member's key space at one revision and says whether they agree.
    ///
    /// With `revision` 0 the revision is the lowest current revision among the endpoints
    /// that answer, so that every member hashes the same history even while writes go on
    /// (etcdctl would let each member hash up to its own latest revision, which differ under
    /// load).
    pub async fn hashkv(&self, targets: Targets, revision: i64) -> Result<HashKvReport> {
        if revision < 0 {
            return Err(etcd_common::InvalidOption::new(
                crate::error::REV,
                format!("{revision} is negative; give a revision of 0 (latest) or more"),
            )
            .into());
        }
        let endpoints = self.addressed(targets).await?;
        let urls: Vec<String> = endpoints.iter().map(|e| e.url.clone()).collect();
        let clients = self.0.each(&urls).await;
        let revision = if revision > 0 {
            revision
        } else {
            lowest_revision(&clients).await
        };
        let rows = futures::future::join_all(
            endpoints
                .iter()
                .zip(clients)
                .map(|(endpoint, client)| hash_one(endpoint, client, revision)),
        )
        .await;
        let first = rows.first().and_then(|r| r.hash);
        let all_agree = !rows.is_empty()
            && rows
                .iter()
                .all(|r| r.error.is_none() && r.hash.is_some() && r.hash == first);
        Ok(HashKvReport {
            revision,
            endpoints: rows,
            all_agree,
        })
    }

    /// The endpoints `targets` address, each with the text it was given as. Configured
    /// endpoints are checked and given a scheme, each once; discovered ones show as found.
    async fn addressed(&self, targets: Targets) -> Result<Vec<Addressed>> {
        let config = self.0.config();
        let given = match targets {
            Targets::Configured if config.discovery.is_none() => config.endpoints.clone(),
            _ => self.0.target_endpoints(targets).await?,
        };
        let mut out: Vec<Addressed> = Vec::with_capacity(given.len());
        for given in given {
            let url = config.normalize_endpoint(&given)?;
            if !out.iter().any(|a| a.url == url) {
                out.push(Addressed { url, given });
            }
        }
        Ok(out)
    }
}

/// One addressed endpoint: its URL and the text it was given as.
struct Addressed {
    url: String,
    given: String,
}

async fn check_health(client: &Client, addressed: &Addressed) -> EndpointHealth {
    let endpoint = addressed.url.as_str();
    let started = Instant::now();
    let verdict = async {
        let client = client.endpoint(endpoint).await?;
        linearizable_read(&client).await?;
        let alarms = client
            .call("alarm list", |mut c| async move {
                c.alarm(
                    etcd_client::AlarmAction::Get,
                    etcd_client::AlarmType::None,
                    None,
                )
                .await
            })
            .await
            .map_err(|e| format!("unable to fetch the alarm list: {e}"))
            .map_err(|reason| Error::Request {
                operation: "alarm list",
                endpoint: endpoint.to_string(),
                message: reason,
            })?;
        let names: Vec<String> = alarms
            .alarms()
            .iter()
            .map(|a| alarm_name(a.alarm()))
            .collect();
        Ok::<_, Error>((client, names))
    }
    .await;
    let took_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut row = EndpointHealth {
        endpoint: endpoint.to_string(),
        given: addressed.given.clone(),
        server_version: None,
        health: false,
        alarms: Vec::new(),
        took_ms,
        error: None,
        error_kind: None,
    };
    match verdict {
        Ok((answered, alarms)) => {
            // Outside the timing: which release answers (etcdctl's output and verdict
            // differ between releases).
            row.server_version = answered
                .call("status", |mut c| async move { c.status().await })
                .await
                .ok()
                .map(|s| s.version().to_string());
            row.health = alarms.is_empty();
            if !alarms.is_empty() {
                let raised = Error::Request {
                    operation: "alarm list",
                    endpoint: endpoint.to_string(),
                    message: format!("active alarm(s): {}", alarms.join(", ")),
                };
                row.error_kind = raised.kind();
                row.error = Some(raised.to_string());
            }
            row.alarms = alarms;
        }
        Err(e) => {
            row.error_kind = e.kind();
            row.error = Some(e.to_string());
        }
    }
    row
}

fn alarm_name(alarm: etcd_client::AlarmType) -> String {
    match alarm {
        etcd_client::AlarmType::Nospace => "NOSPACE".into(),
        etcd_client::AlarmType::Corrupt => "CORRUPT".into(),
        etcd_client::AlarmType::None => "NONE".into(),
    }
}

/// Status of one endpoint (etcd's Maintenance.Status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointStatus {
    /// The endpoint URL.
    pub endpoint: String,
    /// The endpoint as given, not normalized (see [`EndpointHealth::given`]).
    #[serde(skip)]
    pub given: String,
    /// The response's header, when it answered (for etcdctl's JSON; not in ours).
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
    /// The member behind it; `None` when it did not answer.
    pub member_id: Option<MemberId>,
    /// etcd server version.
    pub version: Option<String>,
    /// Size of the db file in bytes.
    pub db_size: Option<i64>,
    /// Bytes of the db file in use (the rest is free pages a defrag would reclaim).
    pub db_size_in_use: Option<i64>,
    /// The leader this member knows of.
    pub leader: Option<MemberId>,
    /// Whether this member is the leader.
    pub is_leader: Option<bool>,
    /// Whether this member is a learner.
    pub is_learner: Option<bool>,
    /// Current raft term.
    pub raft_term: Option<u64>,
    /// Last raft index in the log.
    pub raft_index: Option<u64>,
    /// Last raft index applied.
    pub raft_applied_index: Option<u64>,
    /// Errors the member reports about itself (such as alarms).
    pub errors: Vec<String>,
    /// The version of the db file's schema (etcd 3.6 and later; `None` before).
    pub storage_version: Option<String>,
    /// The member's `--quota-backend-bytes` (etcd 3.6 and later; `None` before).
    pub db_size_quota: Option<i64>,
    /// The cluster's downgrade state (etcd 3.6 and later; `None` before).
    pub downgrade: Option<DowngradeInfo>,
    /// Why the status could not be read.
    pub error: Option<String>,
    /// What kind of failure `error` is (a front-end's exit status follows it).
    #[serde(skip)]
    pub error_kind: Option<ErrorKind>,
}

/// A cluster's downgrade state, as etcd 3.6 reports it in every member's status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DowngradeInfo {
    /// Whether a downgrade is in progress (enabled).
    pub enabled: bool,
    /// The version the cluster is downgrading to; empty when none.
    pub target_version: String,
}

impl EndpointStatus {
    /// Whether the member runs etcd 3.6 or later, whose status has more fields (and whose
    /// etcdctl prints more columns).
    pub fn is_3_6_or_later(&self) -> bool {
        self.version.as_deref().is_some_and(is_3_6_or_later)
    }
}

/// Whether an etcd version (`3.6.14`, `3.5.1`) is 3.6 or later.
pub fn is_3_6_or_later(version: &str) -> bool {
    is_release_at_least(version, (3, 6))
}

/// Whether an etcd version (`3.7.1`) is release `major.minor` or later; `false` for a text
/// that is no version.
pub fn is_release_at_least(version: &str, (major, minor): (u64, u64)) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(have_major), Some(have_minor)) => (have_major, have_minor) >= (major, minor),
        _ => false,
    }
}

/// Whether an etcd version is a 3.4 release, whose etcdctl differs (its health verdict, where
/// it prints healthy lines).
pub fn is_release_3_4(version: &str) -> bool {
    version.starts_with("3.4.")
}

/// Status of every addressed endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusReport {
    /// One row per endpoint.
    pub endpoints: Vec<EndpointStatus>,
    /// True when every endpoint answered.
    pub all_answered: bool,
}

async fn read_status(client: &Client, addressed: &Addressed) -> EndpointStatus {
    let endpoint = addressed.url.as_str();
    let answer = async {
        let client: EndpointClient = client.endpoint(endpoint).await?;
        client
            .call("status", |mut c| async move { c.status().await })
            .await
    }
    .await;
    match answer {
        Ok(s) => {
            let member = s.header().map(|h| h.member_id()).unwrap_or_default();
            EndpointStatus {
                endpoint: endpoint.to_string(),
                given: addressed.given.clone(),
                header: ResponseHeader::of(s.header()),
                member_id: Some(MemberId(member)),
                version: Some(s.version().to_string()),
                db_size: Some(s.db_size()),
                db_size_in_use: Some(s.raft_used_db_size()),
                leader: Some(MemberId(s.leader())),
                is_leader: Some(s.leader() != 0 && s.leader() == member),
                is_learner: Some(s.is_learner()),
                raft_term: Some(s.raft_term()),
                raft_index: Some(s.raft_index()),
                raft_applied_index: Some(s.raft_applied_index()),
                errors: s.errors().to_vec(),
                storage_version: Some(s.storage_version().to_string()).filter(|v| !v.is_empty()),
                db_size_quota: Some(s.db_size_quota()).filter(|q| *q != 0),
                downgrade: s.downgrade_info().map(|d| DowngradeInfo {
                    enabled: d.enabled(),
                    target_version: d.target_version().to_string(),
                }),
                error: None,
                error_kind: None,
            }
        }
        Err(e) => EndpointStatus {
            endpoint: endpoint.to_string(),
            given: addressed.given.clone(),
            header: None,
            member_id: None,
            version: None,
            db_size: None,
            db_size_in_use: None,
            leader: None,
            is_leader: None,
            is_learner: None,
            raft_term: None,
            raft_index: None,
            raft_applied_index: None,
            errors: Vec::new(),
            storage_version: None,
            db_size_quota: None,
            downgrade: None,
            error_kind: e.kind(),
            error: Some(e.to_string()),
        },
    }
}

/// KV hash of one endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointHashKv {
    /// The endpoint URL.
    pub endpoint: String,
    /// The endpoint as given, not normalized (see [`EndpointHealth::given`]).
    #[serde(skip)]
    pub given: String,
    /// The response's header, when it answered (for etcdctl's JSON; not in ours).
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
    /// The member behind it.
    pub member_id: Option<MemberId>,
    /// Hash of the MVCC key space up to `hash_revision`.
    pub hash: Option<u32>,
    /// The revision the hash covers.
    pub hash_revision: Option<i64>,
    /// The member's compacted revision at the time (-1 when never compacted).
    pub compact_revision: Option<i64>,
    /// The revision the member says the hash covers (etcd 3.6 and later; `None` before,
    /// and then left out of the JSON, as before 3.6 support).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_hash_revision: Option<i64>,
    /// Why the hash could not be read.
    pub error: Option<String>,
    /// What kind of failure `error` is (a front-end's exit status follows it).
    #[serde(skip)]
    pub error_kind: Option<ErrorKind>,
}

/// KV hashes of every addressed endpoint at one revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HashKvReport {
    /// The revision every member was asked to hash.
    pub revision: i64,
    /// One row per endpoint.
    pub endpoints: Vec<EndpointHashKv>,
    /// True when every endpoint answered and all hashes are equal.
    pub all_agree: bool,
}

/// The lowest current revision among the endpoints that answer (0 when none does).
async fn lowest_revision(clients: &[Result<EndpointClient>]) -> i64 {
    let mut lowest: Option<i64> = None;
    for client in clients.iter().flatten() {
        let current = client
            .call("read revision", |mut c| async move {
                c.get("health", Some(GetOptions::new().with_count_only()))
                    .await
            })
            .await;
        if let Ok(response) = current {
            let rev = response.header().map(|h| h.revision()).unwrap_or(0);
            lowest = Some(lowest.map_or(rev, |l| l.min(rev)));
        }
    }
    lowest.unwrap_or(0)
}

/// One endpoint's row of the hash report.
async fn hash_one(
    addressed: &Addressed,
    client: Result<EndpointClient>,
    revision: i64,
) -> EndpointHashKv {
    let endpoint = addressed.url.as_str();
    let answer = match client {
        Ok(client) => {
            client
                .call("hashkv", |mut c| async move { c.hash_kv(revision).await })
                .await
        }
        Err(e) => Err(e),
    };
    match answer {
        Ok(h) => EndpointHashKv {
            endpoint: endpoint.to_string(),
            given: addressed.given.clone(),
            header: ResponseHeader::of(h.header()),
            member_id: h.header().map(|hd| MemberId(hd.member_id())),
            hash: Some(h.hash()),
            hash_revision: Some(if revision > 0 {
                revision
            } else {
                h.header().map(|hd| hd.revision()).unwrap_or(0)
            }),
            compact_revision: Some(h.compact_version()),
            server_hash_revision: Some(h.hash_revision()).filter(|r| *r != 0),
            error: None,
            error_kind: None,
        },
        Err(e) => EndpointHashKv {
            endpoint: endpoint.to_string(),
            given: addressed.given.clone(),
            header: None,
            member_id: None,
            hash: None,
            hash_revision: None,
            compact_revision: None,
            server_hash_revision: None,
            error_kind: e.kind(),
            error: Some(e.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(version: &str, alarms: &[&str], error: Option<&str>) -> EndpointHealth {
        EndpointHealth {
            endpoint: "http://10.0.0.1:2379".into(),
            given: "10.0.0.1:2379".into(),
            server_version: Some(version.into()).filter(|v: &String| !v.is_empty()),
            health: error.is_none(),
            alarms: alarms.iter().map(|a| a.to_string()).collect(),
            took_ms: 1.0,
            error: error.map(Into::into),
            error_kind: error.map(|_| ErrorKind::Unreachable),
        }
    }

    #[test]
    fn etcdctl_3_4_calls_a_member_with_an_alarm_healthy_and_later_releases_do_not() {
        let alarm = Some("active alarm(s): NOSPACE");
        let report = HealthReport {
            endpoints: vec![
                row("3.4.23", &["NOSPACE"], alarm),
                row("3.5.1", &["NOSPACE"], alarm),
            ],
            all_healthy: false,
        };
        let judged = report.clone().judged_as_release();
        assert!(judged.endpoints[0].health && judged.endpoints[0].error.is_none());
        assert!(!judged.endpoints[1].health, "3.5's etcdctl counts alarms");
        assert!(!judged.all_healthy);
        // All on 3.4: healthy, while etcdops' own verdict stays unhealthy.
        let all_3_4 = HealthReport {
            endpoints: vec![row("3.4.23", &["NOSPACE"], alarm)],
            all_healthy: false,
        };
        assert!(all_3_4.clone().judged_as_release().all_healthy);
        assert!(!all_3_4.all_healthy);
        // A 3.4 member that did not answer stays unhealthy: only alarms are forgiven.
        let down = HealthReport {
            endpoints: vec![row("", &[], Some("connection refused"))],
            all_healthy: false,
        };
        assert!(!down.judged_as_release().all_healthy);
    }

    #[test]
    fn etcd_3_6_is_told_from_its_version() {
        assert!(is_3_6_or_later("3.6.14"));
        assert!(is_3_6_or_later("3.7.0-alpha.0"));
        assert!(is_3_6_or_later("4.0.0"));
        assert!(!is_3_6_or_later("3.5.1"));
        assert!(!is_3_6_or_later("3.4.23"));
        assert!(!is_3_6_or_later(""));
    }
}
