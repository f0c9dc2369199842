//! `etcdops move-leader | alarm | defrag | compact | check | version`: parse the flags into
//! the maintenance workflows' requests (`etcdops::maintenance`), print their results.

use anyhow::Result;
use etcdops::check::{CheckRequest, check};
use etcdops::client::{Client, ClusterConfig};
use etcdops::endpoint::{Severity, VersionReport, own_version};
use etcdops::guard::Guards;
use etcdops::maintenance::{
    AlarmDisarmRequest, CheckOptions, CompactRequest, DefragRequest, MoveLeaderRequest,
    alarm_disarm, compact, defrag, move_leader,
};
use etcdops::maintenance::{CompactTarget, DefragReport};

use super::ExitStatus;
use crate::flags::{AlarmCommand, CheckArgs, CompactArgs, DefragArgs, GlobalFlags, OutputFormat};
use crate::output::plain;
use etcdops_printer::Printer;
use etcdops_printer::views::maintenance::*;

/// `move-leader MEMBER`
pub async fn run_move_leader(
    config: &ClusterConfig,
    member: &str,
    printer: Printer,
) -> Result<ExitStatus> {
    let client = Client::new(config.clone());
    // etcdctl moves leadership only through a given endpoint that leads; etcdops finds it.
    let request = MoveLeaderRequest::new(member).leader_endpoint_given(printer.is_etcdctl());
    let result = move_leader(&client, &request).await?;
    printer.print(&MoveView(result))?;
    Ok(ExitStatus::Success)
}

/// `alarm list|disarm`
pub async fn run_alarm(
    config: &ClusterConfig,
    command: &AlarmCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    let client = Client::new(config.clone());
    match command {
        AlarmCommand::List => {
            printer.print(&AlarmsView(client.maintenance().alarm_report().await?))?
        }
        AlarmCommand::Disarm => {
            let result = alarm_disarm(&client, AlarmDisarmRequest::new()).await?;
            let clear = result.still_active.is_empty();
            printer.print(&DisarmView(result))?;
            if !clear {
                eprintln!(
                    "etcdops: alarms are still active: free space (compact, defrag) and disarm again"
                );
                return Ok(ExitStatus::Failure);
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// `defrag [--cluster] [--force]`: the rolling defragmentation, which passes the OpenShift
/// operator guard of `guards` (the host under `--platform-root`) itself.
pub async fn run_defrag_guarded(
    config: &ClusterConfig,
    guards: &Guards,
    args: &DefragArgs,
    printer: Printer,
) -> Result<ExitStatus> {
    let request = if args.cluster.cluster {
        DefragRequest::cluster()
    } else {
        DefragRequest::configured()
    }
    .force(args.force);
    let client = Client::new(config.clone());
    let backup = super::member::backup_before(&args.backup);
    let (outcome, taken) =
        etcdops::backup_before::change_with_backup(config, &backup, false, |dry_run| {
            let request = request.dry_run(dry_run);
            let client = &client;
            async move { defrag(client, guards, &request).await }
        })
        .await?;
    super::member::note_backup(taken.as_ref());
    if let Some(warning) = &outcome.warning {
        crate::output::warn(warning);
    }
    print_defrag(outcome.report.unwrap_or_else(empty_report), printer)
}

fn empty_report() -> DefragReport {
    DefragReport {
        steps: Vec::new(),
        skipped: Vec::new(),
        skipped_given: Vec::new(),
        completed: false,
    }
}

/// Prints the report; in `simple`, as etcdctl: `Finished defragmenting etcd member[EP]` on
/// stdout, `Failed to defragment etcd member[EP] (ERR)` on stderr (EP as given), and, as
/// etcdctl has no such case, one `etcdops:` line on stderr per member skipped after the
/// failure, saying why.
fn print_defrag(report: DefragReport, printer: Printer) -> Result<ExitStatus> {
    let completed = report.completed;
    let view = DefragView(report);
    if printer.format() == OutputFormat::Simple {
        for line in view.failure_lines() {
            eprintln!("{}", plain(&line));
        }
    }
    printer.print(&view)?;
    Ok(ExitStatus::from_ok(completed))
}

/// `compact REV | --keep-revisions N`
pub async fn run_compact(
    config: &ClusterConfig,
    args: &CompactArgs,
    printer: Printer,
) -> Result<ExitStatus> {
    let target = match (args.revision, args.keep_revisions) {
        (Some(rev), _) => CompactTarget::Revision(rev),
        (None, Some(n)) => CompactTarget::KeepRevisions(n),
        (None, None) => anyhow::bail!("give a revision or --keep-revisions N"),
    };
    let request = CompactRequest::new(target).physical(args.physical);
    let result = compact(&Client::new(config.clone()), &request).await?;
    printer.print(&CompactView(result))?;
    Ok(ExitStatus::Success)
}

/// `check`: exit code 0 ok, 1 warnings, 2 critical.
pub async fn run_check(
    config: &ClusterConfig,
    args: &CheckArgs,
    platform_root: Option<&std::path::Path>,
    printer: Printer,
) -> Result<ExitStatus> {
    let request = CheckRequest {
        options: CheckOptions {
            quota_bytes: args.quota_bytes.map(|b| b as i64),
            defrag_min_bytes: args.defrag_min_bytes as i64,
            cert_warn_days: args.cert_warn_days,
            cert_critical_days: args.cert_critical_days,
            metrics_urls: args.metrics_urls.clone(),
            skip_metrics: args.skip_metrics,
            fsync_p99_warn_ms: args.fsync_p99_warn_ms,
            commit_p99_warn_ms: args.commit_p99_warn_ms,
            latency_min_samples: args.latency_min_samples,
            max_leader_changes: args.max_leader_changes,
            max_failed_proposals: args.max_failed_proposals,
            max_slow_applies: args.max_slow_applies,
            max_raft_index_gap: args.max_raft_index_gap,
            ..CheckOptions::default()
        },
        store: args.store.clone(),
        store_settings: super::snapshot::settings(&args.store_flags),
        identity: super::snapshot::identity_settings(&args.identity),
        max_backup_age: args.max_backup_age,
        skip_backup_verify: args.skip_backup_verify,
        platform_root: platform_root.map(std::path::Path::to_path_buf),
        data_dir: args.data_dir.clone(),
    };
    let result = check(&Client::new(config.clone()), &request).await?;
    let verdict = result.report.verdict;
    printer.print(&CheckView(result))?;
    Ok(match verdict {
        Severity::Ok => ExitStatus::Success,
        Severity::Warning => ExitStatus::Failure,
        Severity::Critical => ExitStatus::Error,
    })
}

/// `version`: etcdops' own version and API version, which need no cluster (as etcdctl's);
/// the table and our JSON add every member's version when the cluster answers.
pub async fn run_version(global: &GlobalFlags, printer: Printer) -> Result<ExitStatus> {
    let report = match printer.format() {
        OutputFormat::Table | OutputFormat::Json => members_version(global).await,
        _ => None,
    };
    printer.print(&VersionView(report.unwrap_or_else(own_version)))?;
    Ok(ExitStatus::Success)
}

/// Every member's version, or `None` when the cluster cannot be reached (or configured).
async fn members_version(global: &GlobalFlags) -> Option<VersionReport> {
    let config = super::platform::connection_options(global)
        .ok()?
        .build()
        .ok()?;
    Client::new(config).maintenance().version().await.ok()
}
