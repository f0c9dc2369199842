//! `etcd_maintenance`: one module for the cluster-wide chores, chosen by `action`: a rolling
//! defragmentation (followers first, the leader last), compaction, clearing alarms, moving
//! leadership.

use etcd_core::{
    CompactTarget, Targets, alarm_disarm, compact, defrag, move_leader, target_endpoints,
};
use serde::Deserialize;
use serde_json::json;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};

pub const OPTIONS: &[&[OptionSpec]] = &[&[
    opt("action", Kind::Str),
    opt("cluster", Kind::Bool),
    opt("revision", Kind::Int),
    opt("keep_revisions", Kind::Int),
    opt("physical", Kind::Bool),
    opt("leader", Kind::Str),
    opt("force", Kind::Bool),
]];

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Action {
    Defrag,
    Compact,
    AlarmDisarm,
    MoveLeader,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
struct Args {
    action: Action,
    #[serde(default = "yes")]
    cluster: bool,
    revision: Option<i64>,
    keep_revisions: Option<i64>,
    #[serde(default)]
    physical: bool,
    leader: Option<String>,
    #[serde(default)]
    force: bool,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let config = context.cluster()?;
    let dry_run = context.check_mode;
    match args.action {
        Action::Defrag => {
            let targets = if args.cluster {
                Targets::Cluster
            } else {
                Targets::Configured
            };
            let forced = context
                .operator_guard(Some(&config), "defrag", args.force)
                .await?;
            if dry_run {
                let endpoints = target_endpoints(&config, targets).await?;
                let mut outcome = Outcome::unchanged(format!(
                    "would defragment {} endpoint(s) one at a time, the leader last (check mode)",
                    endpoints.len()
                ))
                .with("endpoints", &endpoints);
                outcome.changed = true;
                return Ok(outcome);
            }
            let report = defrag(&config, targets).await?;
            let mut outcome = if report.completed {
                Outcome::unchanged(format!(
                    "defragmented {} endpoint(s), the leader last",
                    report.steps.len()
                ))
            } else {
                Outcome::failure(format!(
                    "rolling defragmentation stopped: {}; not done: {}",
                    report
                        .steps
                        .iter()
                        .filter_map(|s| s.error.as_ref().map(|e| format!("{}: {e}", s.endpoint)))
                        .collect::<Vec<_>>()
                        .join("; "),
                    report.skipped.join(", ")
                ))
            };
            outcome.changed = report.steps.iter().any(|s| s.error.is_none());
            outcome.warnings.extend(forced);
            Ok(outcome.with_fields(&report))
        }
        Action::Compact => {
            let target = match (args.revision, args.keep_revisions) {
                (Some(r), None) => CompactTarget::Revision(r),
                (None, Some(n)) => CompactTarget::KeepRevisions(n),
                _ => {
                    return Err(ModuleError::new(
                        "etcd_maintenance: action=compact needs exactly one of revision or keep_revisions",
                    ));
                }
            };
            let result = compact(&config, target, args.physical, dry_run).await?;
            let mut outcome = Outcome::unchanged(if result.changed {
                format!(
                    "{}compacted the history up to revision {}",
                    if dry_run { "would have " } else { "" },
                    result.revision
                )
            } else {
                format!("already compacted up to revision {}", result.revision)
            });
            outcome.changed = result.changed;
            Ok(outcome.with_fields(&result))
        }
        Action::AlarmDisarm => {
            let result = alarm_disarm(&config, dry_run).await?;
            let alarm_lines = |alarms: &[etcd_core::Alarm]| {
                alarms
                    .iter()
                    .map(|a| format!("{} on {}\n", a.alarm, a.member_id))
                    .collect::<String>()
            };
            let after = if dry_run {
                Vec::new()
            } else {
                result.still_active.clone()
            };
            let diff = json!({
                "before_header": "active alarms",
                "after_header": "active alarms",
                "before": alarm_lines(&result.disarmed),
                "after": alarm_lines(&after),
            });
            let mut outcome = Outcome::unchanged(match (result.disarmed.len(), dry_run) {
                (0, _) => "no alarm was active".to_string(),
                (n, true) => format!("would clear {n} alarm(s) (check mode)"),
                (n, false) => format!("cleared {n} alarm(s)"),
            });
            outcome.changed = result.changed;
            outcome.diff = Some(diff);
            if !dry_run && !result.still_active.is_empty() {
                outcome.warnings.push(
                    "alarms are active again: a NOSPACE alarm returns while the db is over its quota; compact and defragment first".into(),
                );
            }
            Ok(outcome.with_fields(&result))
        }
        Action::MoveLeader => {
            let selector = args.leader.as_deref().ok_or_else(|| {
                ModuleError::new(
                    "etcd_maintenance: action=move_leader needs leader (the member's name, ID or peer URL)",
                )
            })?;
            let result = move_leader(&config, selector, dry_run).await?;
            let mut outcome = Outcome::unchanged(if result.changed {
                format!(
                    "{}moved leadership from {} to {}",
                    if dry_run { "would have " } else { "" },
                    result.from,
                    result.to
                )
            } else {
                format!("{} already leads", result.to)
            });
            outcome.changed = result.changed;
            outcome.diff = Some(json!({
                "before": format!("leader: {}\n", result.from),
                "after": format!("leader: {}\n", result.to),
            }));
            Ok(outcome.with_fields(&result))
        }
    }
}
