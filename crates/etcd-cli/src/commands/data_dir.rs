//! `etcdops data-dir ...`: a member's data dir, offline. `inspect` prints what
//! `etcdops::data_dir::inspect_data_dir` reads (table, `-w simple` lines, or `-w json`: the struct
//! itself, which `etcdops quorum plan --inspection FILE` reads back); `backup` and
//! `move-aside` are the quorum recovery's (`commands::quorum`); `commit-tail` raises the
//! saved commit index to the WAL's last entry (`etcdops::data_dir::adopt_wal_tail`) before a
//! `--force-new-cluster` start.

use anyhow::Result;
use etcdops::data_dir::{adopt_wal_tail, inspect_data_dir};

use super::ExitStatus;
use etcdops::guard::Force;

use crate::flags::{CommitTailArgs, DataDirCommand, DataDirInspectArgs, GlobalFlags};
use crate::output::warn;
use etcdops_printer::Printer;
use etcdops_printer::views::data_dir::*;

/// Runs one `data-dir` subcommand.
pub async fn run(
    global: &GlobalFlags,
    command: &DataDirCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    match command {
        DataDirCommand::Inspect(args) => inspect(args, printer),
        DataDirCommand::Backup(args) => {
            super::quorum::run_data_dir_backup(&args.dir, args.dry_run, printer)
        }
        DataDirCommand::MoveAside(args) => {
            super::quorum::run_data_dir_move_aside(&args.dir, args.dry_run, printer)
        }
        DataDirCommand::CommitTail(args) => commit_tail(global, args, printer).await,
    }
}

/// `data-dir commit-tail DIR [--dry-run] [--force]`.
async fn commit_tail(
    global: &GlobalFlags,
    args: &CommitTailArgs,
    printer: Printer,
) -> Result<ExitStatus> {
    let guards = super::platform::guards(global);
    let force = Force(args.force.force);
    let adopted = adopt_wal_tail(&guards, &args.dir.dir, args.dir.dry_run, force).await?;
    if let Some(warning) = &adopted.forced {
        crate::output::warn(warning);
    }
    let done = adopted.result;
    let args = &args.dir;
    printer.print(&TailView {
        adoption: done,
        dir: args.dir.display().to_string(),
        dry_run: args.dry_run,
    })?;
    Ok(ExitStatus::Success)
}

/// `data-dir inspect DIR`.
fn inspect(args: &DataDirInspectArgs, printer: Printer) -> Result<ExitStatus> {
    let inspection = inspect_data_dir(&args.dir)?;
    if inspection.locked {
        warn(&format!(
            "a member is running on {} (its db is locked): these figures may be stale; stop it for a trustworthy reading",
            inspection.data_dir
        ));
    }
    if inspection.wal.torn_tail {
        warn(
            "the WAL's last record was cut by a crash and is ignored, as etcd does when it starts",
        );
    }
    printer.print(&InspectionView(inspection))?;
    Ok(ExitStatus::Success)
}
