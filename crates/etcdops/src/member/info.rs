//! The cluster at a glance, with conditions that fail it: members, health, leader, alarms,
//! hashkv agreement and the `check` findings in one read-only call, and `fail_on` turning
//! what was found into failures (`etcd_cluster_info`'s `fail_on`).

use etcd_core::{
    Alarm, CheckReport, Client, ClusterConfig, Finding, HashKvReport, MemberId, MemberState,
    Severity,
};
use serde::{Deserialize, Serialize};

use crate::check::{BackupFreshness, CheckRequest, CheckResult, DiskSpace, check};
use crate::error::Result;

/// A condition that fails the cluster info.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// A member is not healthy.
    Unhealthy,
    /// An alarm is active, or the alarms could not be read.
    Alarm,
    /// The members' KV hashes disagree, or could not all be read.
    Inconsistent,
    /// The `certificates` finding is a warning or worse (expiring, wrong SANs, unreadable).
    Certificates,
    /// The `backup` finding is a warning or worse (old, missing, not verifying).
    Backup,
    /// The `latency` or `churn` finding is a warning or worse (slow disk, leader changes,
    /// failed proposals, slow applies).
    Latency,
}

/// What to read, and what fails it.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
pub struct ClusterInfoRequest {
    /// The conditions that fail it.
    #[serde(default)]
    pub fail_on: Vec<FailOn>,
    /// What `check` looks at, with its thresholds (the quota, certificates, latency, the
    /// backup store).
    #[serde(flatten)]
    pub check: CheckRequest,
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
    /// The certificates looked at.
    pub certificates: Vec<etcd_core::CertificateStatus>,
    /// What each member's `/metrics` says.
    pub metrics: Vec<etcd_core::MemberMetrics>,
    /// The newest backup of the cluster, when a store was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupFreshness>,
    /// Free space for the data dir, when one was given or detected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskSpace>,
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
    let result = check(&Client::new(config.clone()), &request.check).await?;
    Ok(summarize(result, &request.fail_on))
}

/// The info of `result`, failed by `fail_on`.
fn summarize(result: CheckResult, fail_on: &[FailOn]) -> ClusterInfo {
    let CheckResult {
        report,
        backup,
        disk,
        ..
    } = result;
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
        certificates: report.certificates,
        metrics: report.metrics,
        backup,
        disk,
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
        FailOn::Certificates => findings_failing(report, &["certificates"]),
        FailOn::Backup => findings_failing(report, &["backup"]),
        FailOn::Latency => findings_failing(report, &["latency", "churn"]),
        _ => None,
    }
}

/// The messages of the `checks` findings that are a warning or worse, if any.
fn findings_failing(report: &CheckReport, checks: &[&str]) -> Option<String> {
    let failing: Vec<String> = report
        .findings
        .iter()
        .filter(|f| checks.contains(&f.check) && f.severity >= Severity::Warning)
        .map(|f| format!("{}: {}", f.check, f.message))
        .collect();
    (!failing.is_empty()).then(|| failing.join("; "))
}

#[cfg(test)]
mod tests {
    use etcd_core::{ClusterView, Member};

    use super::*;

    fn report(alarms: Vec<Alarm>, alarms_error: Option<&str>, healthy: bool) -> CheckResult {
        let member = |id: u64, healthy: bool| MemberState {
            member: Member {
                id: MemberId(id),
                name: format!("m{id}"),
                peer_urls: vec![],
                client_urls: vec![],
                is_learner: false,
                started: true,
            },
            endpoint: None,
            healthy,
            status: None,
            error: (!healthy).then(|| "connection refused".to_string()),
        };
        let report = CheckReport {
            verdict: Severity::Warning,
            findings: Vec::new(),
            cluster_id: MemberId(9),
            leader: Some(MemberId(1)),
            cluster: ClusterView {
                cluster_id: MemberId(9),
                members: vec![member(1, true), member(2, healthy)],
                leader: Some(MemberId(1)),
            },
            alarms,
            alarms_error: alarms_error.map(str::to_string),
            hashkv: None,
            certificates: Vec::new(),
            metrics: Vec::new(),
        };
        CheckResult {
            report,
            platform: None,
            backup: None,
            disk: None,
        }
    }

    #[test]
    fn fail_on_certificates_backup_and_latency_follow_their_findings() {
        let mut result = report(Vec::new(), None, true);
        let add = |r: &mut CheckResult, check: &'static str, severity: Severity| {
            r.report.set_finding(Finding {
                check,
                severity,
                message: format!("{check} said so"),
            });
        };
        add(&mut result, "certificates", Severity::Critical);
        add(&mut result, "backup", Severity::Ok);
        add(&mut result, "latency", Severity::Ok);
        add(&mut result, "churn", Severity::Warning);
        let info = summarize(
            result,
            &[FailOn::Certificates, FailOn::Backup, FailOn::Latency],
        );
        assert_eq!(
            info.failures,
            vec![
                "certificates: certificates said so".to_string(),
                "churn: churn said so".to_string(),
            ]
        );
    }

    #[test]
    fn fail_on_names_what_failed_and_nothing_else() {
        let all = [FailOn::Unhealthy, FailOn::Alarm, FailOn::Inconsistent];
        let sick = summarize(report(Vec::new(), None, false), &all);
        assert_eq!(
            sick.failures,
            vec![
                "unhealthy members: m2 (connection refused)".to_string(),
                "members' KV hashes disagree (or could not all be read)".to_string(),
            ]
        );
        assert_eq!(
            sick.summary,
            "1 of 2 members healthy, leader 1, verdict warning"
        );
        assert!(!sick.healthy && !sick.consistent);
        // Without conditions nothing fails, whatever was found.
        assert!(
            summarize(report(Vec::new(), None, false), &[])
                .failures
                .is_empty()
        );
    }

    #[test]
    fn alarms_that_could_not_be_read_fail_fail_on_alarm() {
        let nospace = Alarm {
            member_id: MemberId(2),
            alarm: "NOSPACE".into(),
        };
        let active = summarize(report(vec![nospace], None, true), &[FailOn::Alarm]);
        assert_eq!(active.failures, vec!["active alarms: NOSPACE on 2"]);
        let unread = summarize(report(Vec::new(), Some("denied"), true), &[FailOn::Alarm]);
        assert_eq!(
            unread.failures,
            vec!["the alarms could not be read (denied): an alarm may be active"]
        );
        let quiet = summarize(report(Vec::new(), None, true), &[FailOn::Alarm]);
        assert!(quiet.failures.is_empty());
    }
}
