//! `check`: one report of everything an SRE looks at before and after touching a cluster,
//! with a verdict: ok, warning or critical.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::cluster::ClusterView;
use crate::endpoint::HashKvReport;
use crate::error::Result;
use crate::id::MemberId;
use crate::maintenance::Alarm;
use crate::member::Targets;

mod certs;
mod metrics;

pub use certs::{CertificateRole, CertificateStatus, certificates_finding};
pub use metrics::{Latency, MemberMetrics, churn_finding, latency_finding, parse_metrics};

/// etcd's default backend quota (`--quota-backend-bytes`), assumed when not given.
pub const DEFAULT_QUOTA_BYTES: i64 = 2 * 1024 * 1024 * 1024;

/// How bad a finding is. Ordered: the report's verdict is the worst finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Fine.
    Ok,
    /// Needs attention, not urgent.
    Warning,
    /// The cluster is down or at risk of losing data or writes.
    Critical,
}

/// One checked aspect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What was checked (`quorum`, `leader`, `members`, `alarms`, `hashkv`, `db_quota`,
    /// `fragmentation`, `versions`, `learners`, `progress`, `certificates`, `latency`,
    /// `churn`; the workflow layer adds `backup` and `disk`).
    pub check: &'static str,
    /// How bad.
    pub severity: Severity,
    /// What was found and what to do.
    pub message: String,
}

/// Thresholds of `check`. Deserializes from the field names, each optional.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CheckOptions {
    /// The backend quota; `None` uses the member's report (etcd 3.6) or etcd's 2 GiB default.
    pub quota_bytes: Option<i64>,
    /// A defrag pays when at least this share of the db (percent) is free...
    pub defrag_min_percent: i64,
    /// ...and at least this many bytes would be reclaimed.
    pub defrag_min_bytes: i64,
    /// A certificate expiring within this many days is a warning.
    pub cert_warn_days: i64,
    /// A certificate expiring within this many days (or expired) is critical.
    pub cert_critical_days: i64,
    /// Members' metrics URLs (etcd's `--listen-metrics-urls`) instead of their client URLs.
    pub metrics_urls: Vec<String>,
    /// Read no `/metrics` at all: no `latency` and `churn` findings.
    pub skip_metrics: bool,
    /// WAL fsync p99 above this many milliseconds is a warning (etcd's guidance: 10 ms).
    pub fsync_p99_warn_ms: f64,
    /// Backend commit p99 above this many milliseconds is a warning (etcd's guidance: 25 ms).
    pub commit_p99_warn_ms: f64,
    /// Histograms with fewer observations than this are not judged (a p99 of a handful of
    /// operations is only their maximum).
    pub latency_min_samples: u64,
    /// More leader changes than this since a member started is a warning.
    pub max_leader_changes: u64,
    /// More failed proposals than this since a member started is a warning.
    pub max_failed_proposals: u64,
    /// More slow applies than this since a member started is a warning.
    pub max_slow_applies: u64,
    /// A member (or learner) this many raft entries or more behind the leader is a warning.
    pub max_raft_index_gap: u64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            quota_bytes: None,
            defrag_min_percent: 50,
            defrag_min_bytes: 64 * 1024 * 1024,
            cert_warn_days: 30,
            cert_critical_days: 7,
            metrics_urls: Vec::new(),
            skip_metrics: false,
            fsync_p99_warn_ms: 10.0,
            commit_p99_warn_ms: 25.0,
            latency_min_samples: 100,
            max_leader_changes: 3,
            max_failed_proposals: 10,
            max_slow_applies: 100,
            max_raft_index_gap: 5000,
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    /// The worst finding.
    pub verdict: Severity,
    /// Every finding, in the order checked.
    pub findings: Vec<Finding>,
    /// Cluster ID.
    pub cluster_id: MemberId,
    /// The leader, when there is one.
    pub leader: Option<MemberId>,
    /// Every member's state.
    pub cluster: ClusterView,
    /// Active alarms.
    pub alarms: Vec<Alarm>,
    /// Why the alarms could not be read, when they could not: an alarm may then be active
    /// unseen, so this is a finding of its own, never "no alarm".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alarms_error: Option<String>,
    /// KV hashes of the healthy members at one revision.
    pub hashkv: Option<HashKvReport>,
    /// Every certificate looked at (client, serving, and those a caller adds from disk).
    pub certificates: Vec<CertificateStatus>,
    /// What each member's `/metrics` says (empty when metrics were skipped).
    pub metrics: Vec<MemberMetrics>,
}

impl CheckReport {
    /// Puts `finding` in the report, in place of the finding of the same check when there is
    /// one, and judges the verdict again: how a caller (the workflow layer) adds what
    /// etcd-core cannot see (stores, this host's disk and files).
    pub fn set_finding(&mut self, finding: Finding) {
        match self.findings.iter_mut().find(|f| f.check == finding.check) {
            Some(old) => *old = finding,
            None => self.findings.push(finding),
        }
        self.verdict = self
            .findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Ok);
    }
}

fn finding(check: &'static str, severity: Severity, message: String) -> Finding {
    Finding {
        check,
        severity,
        message,
    }
}

/// The alarms finding: what was read, or that nothing could be (never "no alarm" then).
fn alarm_finding(alarms: &[Alarm], error: Option<&str>) -> Finding {
    if let Some(error) = error {
        return finding(
            "alarms",
            Severity::Warning,
            format!("the alarms could not be read ({error}): an alarm may be active"),
        );
    }
    if alarms.is_empty() {
        return finding("alarms", Severity::Ok, "no alarm".into());
    }
    let list = alarms
        .iter()
        .map(|a| format!("{} on {}", a.alarm, a.member_id))
        .collect::<Vec<_>>()
        .join(", ");
    finding(
        "alarms",
        Severity::Critical,
        format!(
            "active alarms: {list}; NOSPACE: compact, defragment, then disarm the alarms; CORRUPT: replace the member"
        ),
    )
}

fn mib(bytes: i64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
}

impl Client {
    /// Looks at the cluster and judges it: one look at every member, the alarms and the KV
    /// hashes, over one connection per member (reused by every step), then one finding per
    /// aspect. Alarms that could not be read are a warning of their own, never "no alarm".
    pub async fn check(&self, options: &CheckOptions) -> Result<CheckReport> {
        let view = self.cluster_view().await?;
        let (alarms, alarms_error) = match self.maintenance().alarm_list().await {
            Ok(alarms) => (alarms, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        let hashkv = self.endpoints().hashkv(Targets::Cluster, 0).await.ok();
        let certificates = self.certificates(&view).await;
        let metrics = if options.skip_metrics {
            Vec::new()
        } else {
            self.member_metrics(&view, &options.metrics_urls).await
        };
        let mut findings = vec![
            quorum_finding(&view),
            leader_finding(&view),
            members_finding(&view),
            alarm_finding(&alarms, alarms_error.as_deref()),
            hashkv_finding(hashkv.as_ref()),
        ]
        .into_iter()
        .chain(size_findings(&view, options))
        .chain([
            versions_finding(&view),
            learners_finding(&view),
            progress_finding(&view, options),
            certificates_finding(&certificates, options),
        ])
        .collect::<Vec<_>>();
        if !options.skip_metrics {
            findings.push(latency_finding(&metrics, options));
            findings.push(churn_finding(&metrics, options));
        }
        let verdict = findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Ok);
        Ok(CheckReport {
            verdict,
            findings,
            cluster_id: view.cluster_id,
            leader: view.leader,
            cluster: view,
            alarms,
            alarms_error,
            hashkv,
            certificates,
            metrics,
        })
    }
}

/// Whether enough voting members are healthy for the cluster to accept writes.
fn quorum_finding(view: &ClusterView) -> Finding {
    let voters = view.voters().count();
    let healthy = view.healthy_voters();
    let quorum = view.quorum();
    if healthy >= quorum {
        finding(
            "quorum",
            Severity::Ok,
            format!("{healthy} of {voters} voting members healthy; quorum is {quorum}"),
        )
    } else {
        finding(
            "quorum",
            Severity::Critical,
            format!(
                "only {healthy} of {voters} voting members healthy, quorum needs {quorum}: the cluster cannot accept writes; bring members back or restore"
            ),
        )
    }
}

/// Whether the healthy members agree on one leader.
fn leader_finding(view: &ClusterView) -> Finding {
    let leaders: BTreeSet<MemberId> = view
        .members
        .iter()
        .filter(|m| m.healthy)
        .filter_map(|m| m.status.as_ref().map(|s| s.leader))
        .filter(|l| l.0 != 0)
        .collect();
    match (view.leader, leaders.len()) {
        (Some(leader), 1) => finding("leader", Severity::Ok, format!("member {leader} leads")),
        (Some(leader), _) => finding(
            "leader",
            Severity::Warning,
            format!(
                "members disagree on the leader ({}); {leader} claims it",
                leaders
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        (None, _) => finding(
            "leader",
            Severity::Critical,
            "no member knows a leader".into(),
        ),
    }
}

/// Every member that is unhealthy or not started, with why.
fn members_finding(view: &ClusterView) -> Finding {
    let unhealthy = view.unhealthy();
    if unhealthy.is_empty() {
        return finding(
            "members",
            Severity::Ok,
            format!("all {} members healthy", view.members.len()),
        );
    }
    let list = unhealthy
        .iter()
        .map(|m| {
            format!(
                "{} ({}): {}",
                m.member.id,
                if m.member.started {
                    m.member.name.as_str()
                } else {
                    "not started"
                },
                m.error.as_deref().unwrap_or("unhealthy")
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    finding(
        "members",
        Severity::Warning,
        format!(
            "{} member(s) unhealthy or not started: {list}",
            unhealthy.len()
        ),
    )
}

/// Whether the members hash the same key space (different hashes: data inconsistency).
fn hashkv_finding(hashkv: Option<&HashKvReport>) -> Finding {
    let Some(h) = hashkv else {
        return finding(
            "hashkv",
            Severity::Warning,
            "could not compare KV hashes".into(),
        );
    };
    if h.all_agree {
        return finding(
            "hashkv",
            Severity::Ok,
            format!(
                "all members hash the same key space at revision {}",
                h.revision
            ),
        );
    }
    let answered: BTreeSet<Option<u32>> = h
        .endpoints
        .iter()
        .filter(|e| e.error.is_none())
        .map(|e| e.hash)
        .collect();
    if answered.len() > 1 {
        finding(
            "hashkv",
            Severity::Critical,
            format!(
                "members hold DIFFERENT data at revision {}: data inconsistency; stop writes and investigate (etcd 3.5.0-3.5.2 have a known bug)",
                h.revision
            ),
        )
    } else {
        finding(
            "hashkv",
            Severity::Warning,
            format!(
                "not every member could be hashed at revision {}",
                h.revision
            ),
        )
    }
}

/// The db size against the quota, and whether a defrag would pay.
fn size_findings(view: &ClusterView, options: &CheckOptions) -> [Finding; 2] {
    let quota = options.quota_bytes.unwrap_or(DEFAULT_QUOTA_BYTES);
    let mut quota_notes = Vec::new();
    let mut quota_severity = Severity::Ok;
    let mut frag_notes = Vec::new();
    for m in view.members.iter() {
        let Some(s) = &m.status else { continue };
        let used = s.db_size * 100 / quota.max(1);
        let severity = if used >= 95 {
            Severity::Critical
        } else if used >= 80 {
            Severity::Warning
        } else {
            Severity::Ok
        };
        quota_severity = quota_severity.max(severity);
        quota_notes.push(format!("{} {}% of {}", m.member.id, used, mib(quota)));
        let free = s.db_size - s.db_size_in_use;
        if s.db_size > 0
            && free * 100 / s.db_size >= options.defrag_min_percent
            && free >= options.defrag_min_bytes
        {
            frag_notes.push(format!(
                "{}: {} of {} free",
                m.member.id,
                mib(free),
                mib(s.db_size)
            ));
        }
    }
    let quota_finding = finding(
        "db_quota",
        quota_severity,
        format!(
            "db size against quota{}: {}",
            if options.quota_bytes.is_none() {
                " (etcd's default 2 GiB assumed; give the members' quota if it differs)"
            } else {
                ""
            },
            quota_notes.join(", ")
        ),
    );
    let frag_finding = if frag_notes.is_empty() {
        finding(
            "fragmentation",
            Severity::Ok,
            "no member would gain much from a defrag".into(),
        )
    } else {
        finding(
            "fragmentation",
            Severity::Warning,
            format!(
                "a defrag pays: {}; defragment every member, one at a time, the leader last",
                frag_notes.join("; ")
            ),
        )
    };
    [quota_finding, frag_finding]
}

/// Whether every member runs the same etcd version.
fn versions_finding(view: &ClusterView) -> Finding {
    let versions: BTreeSet<&str> = view
        .members
        .iter()
        .filter_map(|m| m.status.as_ref().map(|s| s.version.as_str()))
        .collect();
    if versions.len() <= 1 {
        finding(
            "versions",
            Severity::Ok,
            format!(
                "all members run {}",
                versions.iter().next().copied().unwrap_or("unknown")
            ),
        )
    } else {
        finding(
            "versions",
            Severity::Warning,
            format!(
                "members run different versions ({}); finish the upgrade",
                versions.iter().copied().collect::<Vec<_>>().join(", ")
            ),
        )
    }
}

/// Learners waiting to be promoted.
fn learners_finding(view: &ClusterView) -> Finding {
    let learners: Vec<String> = view
        .members
        .iter()
        .filter(|m| m.member.is_learner)
        .map(|m| m.member.id.to_string())
        .collect();
    if learners.is_empty() {
        finding("learners", Severity::Ok, "no learner waiting".into())
    } else {
        finding(
            "learners",
            Severity::Warning,
            format!(
                "learners not promoted: {}; promote each once it is in sync",
                learners.join(", ")
            ),
        )
    }
}

/// How far each member's raft log is behind the leader's; learners far behind are not ready
/// to be promoted.
fn progress_finding(view: &ClusterView, options: &CheckOptions) -> Finding {
    let Some(leader_index) = view
        .leader_state()
        .and_then(|l| l.status.as_ref())
        .map(|s| s.raft_index)
    else {
        return finding(
            "progress",
            Severity::Warning,
            "no leader status to compare the members' raft indexes with".into(),
        );
    };
    let mut behind = Vec::new();
    let mut widest = 0;
    for m in &view.members {
        let Some(status) = &m.status else { continue };
        let gap = leader_index.saturating_sub(status.raft_index);
        widest = widest.max(gap);
        if gap >= options.max_raft_index_gap {
            behind.push(if m.member.is_learner {
                format!(
                    "learner {} is {gap} entries behind the leader: wait for it to catch up before promoting it",
                    m.member.id
                )
            } else {
                format!(
                    "{} ({}) is {gap} entries behind the leader: look at its disk, network and load",
                    m.member.id, m.member.name
                )
            });
        }
    }
    if behind.is_empty() {
        finding(
            "progress",
            Severity::Ok,
            format!(
                "every member within {widest} raft entries of the leader (limit {})",
                options.max_raft_index_gap
            ),
        )
    } else {
        finding("progress", Severity::Warning, behind.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alarms_that_could_not_be_read_are_a_warning_never_no_alarm() {
        let unread = alarm_finding(&[], Some("deadline exceeded"));
        assert_eq!(unread.severity, Severity::Warning);
        assert!(unread.message.contains("could not be read"), "{unread:?}");
        assert_eq!(alarm_finding(&[], None).severity, Severity::Ok);
        let active = [Alarm {
            member_id: MemberId(7),
            alarm: "NOSPACE".into(),
        }];
        let raised = alarm_finding(&active, None);
        assert_eq!(raised.severity, Severity::Critical);
        assert!(raised.message.contains("NOSPACE on 7"), "{raised:?}");
    }

    fn view_with_indexes(indexes: &[(u64, bool, u64)]) -> ClusterView {
        use crate::cluster::{MemberState, MemberStatus};
        use crate::member::Member;
        let members = indexes
            .iter()
            .map(|&(id, learner, raft_index)| MemberState {
                member: Member {
                    id: MemberId(id),
                    name: format!("m{id}"),
                    peer_urls: vec![],
                    client_urls: vec![],
                    is_learner: learner,
                    started: true,
                },
                endpoint: None,
                healthy: true,
                status: Some(MemberStatus {
                    version: "3.5.1".into(),
                    db_size: 0,
                    db_size_in_use: 0,
                    is_leader: id == 1,
                    leader: MemberId(1),
                    raft_term: 2,
                    raft_index,
                    raft_applied_index: raft_index,
                    revision: 1,
                    errors: vec![],
                }),
                error: None,
            })
            .collect();
        ClusterView {
            cluster_id: MemberId(9),
            members,
            leader: Some(MemberId(1)),
        }
    }

    #[test]
    fn members_and_learners_far_behind_the_leader_are_a_progress_warning() {
        let options = CheckOptions {
            max_raft_index_gap: 100,
            ..CheckOptions::default()
        };
        let close = progress_finding(
            &view_with_indexes(&[(1, false, 1000), (2, false, 990)]),
            &options,
        );
        assert_eq!(close.severity, Severity::Ok, "{close:?}");
        assert!(
            close.message.contains("within 10 raft entries"),
            "{close:?}"
        );
        let far = progress_finding(
            &view_with_indexes(&[(1, false, 1000), (2, false, 800), (3, true, 10)]),
            &options,
        );
        assert_eq!(far.severity, Severity::Warning);
        assert!(
            far.message.contains("2 (m2) is 200 entries behind"),
            "{far:?}"
        );
        assert!(
            far.message.contains("learner 3 is 990 entries behind"),
            "{far:?}"
        );
    }

    #[test]
    fn set_finding_replaces_by_name_and_judges_again() {
        let mut report = CheckReport {
            verdict: Severity::Ok,
            findings: vec![finding("quorum", Severity::Ok, "fine".into())],
            cluster_id: MemberId(9),
            leader: None,
            cluster: view_with_indexes(&[(1, false, 1)]),
            alarms: vec![],
            alarms_error: None,
            hashkv: None,
            certificates: vec![],
            metrics: vec![],
        };
        report.set_finding(finding("backup", Severity::Warning, "old".into()));
        assert_eq!(report.verdict, Severity::Warning);
        report.set_finding(finding("backup", Severity::Ok, "fresh".into()));
        assert_eq!(report.findings.len(), 2);
        assert_eq!(report.verdict, Severity::Ok);
    }
}
