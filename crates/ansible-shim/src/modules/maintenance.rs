//! `etcd_maintenance`: one module for the cluster-wide chores, chosen by `action`: a rolling
//! defragmentation (followers first, the leader last), compaction, clearing alarms, moving
//! leadership. The arguments deserialize into `etcdops::maintenance::MaintenanceRequest`; the
//! workflows (the OpenShift guard of defrag included) run there; this turns results into
//! module output.

use etcdops::client::Client;
use etcdops::guard::Guards;
use etcdops::maintenance::Alarm;
use etcdops::maintenance::{
    AlarmDisarmRequest, CompactRequest, MaintenanceRequest, MoveLeaderRequest, alarm_disarm,
    compact, defrag, move_leader,
};
use schemars::JsonSchema;
use serde_json::json;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use etcdops::backup_before::{BackupBefore, BackupBeforeChange, change_with_backup};

/// The module's options: the library's request (one per `action`) and the backup before a
/// change.
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema: its fields are read as `MaintenanceRequest` and `BackupBefore`
pub(crate) struct Options {
    #[serde(flatten)]
    request: MaintenanceRequest,
    #[serde(flatten)]
    backup: BackupBefore,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let request: MaintenanceRequest = context.args()?;
    let backup: BackupBefore = context.args()?;
    let client = Client::new(context.cluster()?);
    let check_mode = context.check_mode;
    if backup.backup_to.is_some()
        && matches!(
            request,
            MaintenanceRequest::AlarmDisarm(_) | MaintenanceRequest::MoveLeader(_)
        )
    {
        return Err(ModuleError::new(
            "backup_to: only action defrag and compact rewrite data; drop backup_to for alarm_disarm and move_leader",
        ));
    }
    match request.dry_run(check_mode) {
        MaintenanceRequest::Defrag(r) => {
            let guards = Guards::on_host(context.platform_root()?);
            let (done, taken) =
                change_with_backup(client.config(), &backup, check_mode, |dry_run| {
                    let request = r.dry_run(dry_run);
                    let (client, guards) = (&client, &guards);
                    async move { defrag(client, guards, &request).await }
                })
                .await?;
            with_backup(defrag_outcome(done), taken)
        }
        MaintenanceRequest::Compact(r) => {
            let (result, taken) =
                change_with_backup(client.config(), &backup, check_mode, |dry_run| {
                    let request = r.dry_run(dry_run);
                    let client = &client;
                    async move { compact(client, &request).await }
                })
                .await?;
            with_backup(Ok(compact_outcome(&r, result)), taken)
        }
        MaintenanceRequest::AlarmDisarm(r) => run_alarm_disarm(&client, r).await,
        MaintenanceRequest::MoveLeader(r) => run_move_leader(&client, &r).await,
    }
}

/// The outcome with the backup taken (or, in check mode, to be taken) before the change.
fn with_backup(
    outcome: Result<Outcome, ModuleError>,
    taken: Option<BackupBeforeChange>,
) -> Result<Outcome, ModuleError> {
    let outcome = outcome?;
    Ok(match taken {
        Some(taken) => outcome.with("backup", taken),
        None => outcome,
    })
}

fn defrag_outcome(done: etcdops::maintenance::DefragOutcome) -> Result<Outcome, ModuleError> {
    let Some(report) = done.report else {
        let mut outcome = Outcome::unchanged(format!(
            "would defragment {} endpoint(s) one at a time, the leader last (check mode)",
            done.endpoints.len()
        ))
        .with("endpoints", &done.endpoints);
        outcome.changed = true;
        outcome.warnings.extend(done.warning);
        return Ok(outcome);
    };
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
    outcome.warnings.extend(done.warning);
    Ok(outcome.with_fields(&report))
}

fn compact_outcome(
    request: &CompactRequest,
    result: etcdops::maintenance::CompactResult,
) -> Outcome {
    let mut outcome = Outcome::unchanged(if result.changed {
        format!(
            "{}compacted the history up to revision {}",
            if request.dry_run { "would have " } else { "" },
            result.revision
        )
    } else {
        format!("already compacted up to revision {}", result.revision)
    });
    outcome.changed = result.changed;
    outcome.with_fields(&result)
}

async fn run_alarm_disarm(
    client: &Client,
    request: AlarmDisarmRequest,
) -> Result<Outcome, ModuleError> {
    let dry_run = request.dry_run;
    let result = alarm_disarm(client, request).await?;
    let alarm_lines = |alarms: &[Alarm]| {
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

async fn run_move_leader(
    client: &Client,
    request: &MoveLeaderRequest,
) -> Result<Outcome, ModuleError> {
    let result = move_leader(client, request).await?;
    let mut outcome = Outcome::unchanged(if result.changed {
        format!(
            "{}moved leadership from {} to {}",
            if request.dry_run { "would have " } else { "" },
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
