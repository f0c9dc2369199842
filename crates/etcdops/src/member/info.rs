//! The cluster at a glance, with conditions that fail it: members, health, leader, alarms,
//! hashkv agreement and the `check` findings in one read-only call, and `fail_on` turning
//! what was found into failures (`etcd_cluster_info`'s `fail_on`).

use etcd_core::{
    Alarm, CheckOptions, CheckReport, ClusterConfig, Finding, HashKvReport, MemberId, MemberState,
    Severity, check,
};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// A condition that fails the cluster info.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// A member is not healthy.
    Unhealthy,
    /// An alarm is active, or the alarms could not be read.
    Alarm,
    /// The members' KV hashes disagree, or could not all be read.
    Inconsistent,
}

/// What to read, and what fails it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ClusterInfoRequest {
    /// The conditions that fail it.
    #[serde(default)]
    pub fail_on: Vec<FailOn>,
    /// The backend quota, for the db size findings (default: the member's, or etcd's).
    pub quota_bytes: Option<i64>,
}

/// The cluster at a glance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterInfo {
    /// Cluster ID.
    pub cluster_id: MemberId,
    /// The leader, when there is one.
    pub leader: Option<MemberId>,
    /// Every member with its health and status.
    pub members: Vec<MemberState>,
    /// Whether every member is healthy.
    pub healthy: bool,
    /// Active alarms.
    pub alarms: Vec<Alarm>,
    /// KV hashes of the healthy members at one revision.
    pub hashkv: Option<HashKvReport>,
    /// Whether every member's KV hash agrees.
    pub consistent: bool,
    /// The worst finding.
    pub verdict: Severity,
    /// Every finding of `check`.
    pub findings: Vec<Finding>,
    /// `N of M members healthy, leader L, verdict V`.
    #[serde(skip)]
    pub summary: String,
    /// Why the request's `fail_on` conditions fail it (empty: it passes).
    #[serde(skip)]
    pub failures: Vec<String>,
}

/// Reads the cluster (see [`check`]) and tells which of `fail_on` it meets.
pub async fn cluster_info(
    config: &ClusterConfig,
    request: &ClusterInfoRequest,
) -> Result<ClusterInfo> {
    let options = CheckOptions {
        quota_bytes: request.quota_bytes,
        ..CheckOptions::default()
    };
    let report = check(config, &options).await?;
    Ok(summarize(report, &request.fail_on))
}

/// The info of `report`, failed by `fail_on`.
fn summarize(report: CheckReport, fail_on: &[FailOn]) -> ClusterInfo {
    let healthy = report.cluster.members.iter().all(|m| m.healthy);
    let consistent = report.hashkv.as_ref().is_some_and(|h| h.all_agree);
    let failures = fail_on
        .iter()
        .filter_map(|condition| failure(&report, *condition, healthy, consistent))
        .collect();
    let summary = format!(
        "{} of {} members healthy, leader {}, verdict {}",
        report.cluster.members.iter().filter(|m| m.healthy).count(),
        report.cluster.members.len(),
        report
            .leader
            .map(|l| l.to_string())
            .unwrap_or_else(|| "none".into()),
        match report.verdict {
            Severity::Ok => "ok",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    );
    ClusterInfo {
        cluster_id: report.cluster_id,
        leader: report.leader,
        members: report.cluster.members,
        healthy,
        alarms: report.alarms,
        hashkv: report.hashkv,
        consistent,
        verdict: report.verdict,
        findings: report.findings,
        summary,
        failures,
    }
}

/// Why `report` meets `condition`, if it does.
fn failure(
    report: &CheckReport,
    condition: FailOn,
    healthy: bool,
    consistent: bool,
) -> Option<String> {
    match condition {
        FailOn::Unhealthy if !healthy => {
            let names: Vec<String> = report
                .cluster
                .unhealthy()
                .iter()
                .map(|m| {
                    format!(
                        "{} ({})",
                        if m.member.name.is_empty() {
                            m.member.id.to_string()
                        } else {
                            m.member.name.clone()
                        },
                        m.error.as_deref().unwrap_or("unhealthy")
                    )
                })
                .collect();
            Some(format!("unhealthy members: {}", names.join(", ")))
        }
        FailOn::Alarm if !report.alarms.is_empty() => {
            let alarms: Vec<String> = report
                .alarms
                .iter()
                .map(|a| format!("{} on {}", a.alarm, a.member_id))
                .collect();
            Some(format!("active alarms: {}", alarms.join(", ")))
        }
        FailOn::Alarm => report
            .alarms_error
            .as_deref()
            .map(|error| format!("the alarms could not be read ({error}): an alarm may be active")),
        FailOn::Inconsistent if !consistent => {
            Some("members' KV hashes disagree (or could not all be read)".into())
        }
        _ => None,
    }
}
