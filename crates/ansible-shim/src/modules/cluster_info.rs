//! `etcd_cluster_info`: members, health, status, leader, alarms, hashkv agreement and the
//! `check` report, in one read-only call; `fail_on` turns findings into a failed task.

use etcd_core::{CheckOptions, Severity, check};
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};

pub const OPTIONS: &[&[OptionSpec]] =
    &[&[opt("fail_on", Kind::List), opt("quota_bytes", Kind::Int)]];

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FailOn {
    Unhealthy,
    Alarm,
    Inconsistent,
}

#[derive(Debug, Deserialize)]
struct Args {
    #[serde(default)]
    fail_on: Vec<FailOn>,
    quota_bytes: Option<i64>,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let config = context.cluster()?;
    let options = CheckOptions {
        quota_bytes: args.quota_bytes,
        ..CheckOptions::default()
    };
    let report = check(&config, &options).await?;
    let healthy = report.cluster.members.iter().all(|m| m.healthy);
    let consistent = report.hashkv.as_ref().is_some_and(|h| h.all_agree);
    let mut reasons = Vec::new();
    for condition in &args.fail_on {
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
                reasons.push(format!("unhealthy members: {}", names.join(", ")));
            }
            FailOn::Alarm if !report.alarms.is_empty() => {
                let alarms: Vec<String> = report
                    .alarms
                    .iter()
                    .map(|a| format!("{} on {}", a.alarm, a.member_id))
                    .collect();
                reasons.push(format!("active alarms: {}", alarms.join(", ")));
            }
            FailOn::Alarm if report.alarms_error.is_some() => {
                reasons.push(format!(
                    "the alarms could not be read ({}): an alarm may be active",
                    report.alarms_error.as_deref().unwrap_or_default()
                ));
            }
            FailOn::Inconsistent if !consistent => {
                reasons.push("members' KV hashes disagree (or could not all be read)".into());
            }
            _ => {}
        }
    }
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
    let mut outcome = if reasons.is_empty() {
        Outcome::unchanged(summary)
    } else {
        Outcome::failure(format!("{}; {summary}", reasons.join("; ")))
    };
    outcome = outcome
        .with("cluster_id", report.cluster_id)
        .with("leader", report.leader)
        .with("members", &report.cluster.members)
        .with("healthy", healthy)
        .with("alarms", &report.alarms)
        .with("hashkv", &report.hashkv)
        .with("consistent", consistent)
        .with("verdict", report.verdict)
        .with("findings", &report.findings);
    Ok(outcome)
}
