//! `etcdops quorum plan|verify` and the data-dir steps of a quorum-loss recovery
//! (`data-dir backup DIR`, `data-dir move-aside DIR`), over `etcdops::quorum`.
//!
//! The `data-dir` command group and its flags belong to `commands/data_dir.rs`; its dispatch
//! calls [`run_data_dir_backup`] and [`run_data_dir_move_aside`] here.

use std::path::Path;

use anyhow::{Context as _, Result};
use etcdops::client::ClusterConfig;
use etcdops::quorum::{
    Candidate, DataDirAside, PlanOptions, candidate_from_report, copy_data_dir_aside,
    move_data_dir_aside, plan_recovery_with, verify_survivor,
};

use super::ExitStatus;
use crate::flags::QuorumCommand;
use crate::output::{note, warn};
use etcdops_printer::Printer;
use etcdops_printer::views::quorum::*;

/// Runs a `quorum` command.
pub async fn run(
    config: &ClusterConfig,
    command: &QuorumCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    match command {
        QuorumCommand::Plan(args) => {
            let candidates = args
                .inspections
                .iter()
                .map(|file| read_candidate(file))
                .collect::<Result<Vec<_>>>()?;
            let options = PlanOptions {
                restart_intact: !args.force_survivor,
            };
            match plan_recovery_with(config, &candidates, options).await {
                Ok(plan) => {
                    printer.print(&PlanView(plan))?;
                    Ok(ExitStatus::Success)
                }
                Err(etcdops::Error::NoSafeSurvivor(refusal)) => {
                    note(&format!("refused: {}", refusal.message));
                    printer.print(&RefusalView(*refusal))?;
                    Ok(ExitStatus::Failure)
                }
                Err(e) => Err(e.into()),
            }
        }
        QuorumCommand::Verify(args) => {
            let verified = verify_survivor(config, &args.member_id, args.min_revision).await?;
            printer.print(&VerifiedView(verified))?;
            Ok(ExitStatus::Success)
        }
    }
}

/// A candidate from a `data-dir inspect -w json` file.
fn read_candidate(file: &Path) -> Result<Candidate> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the inspection {}", file.display()))?;
    let report: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not JSON: give the output of `etcdops data-dir inspect DIR -w json`",
            file.display()
        )
    })?;
    candidate_from_report(None, &report).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))
}

/// `data-dir backup DIR`: a complete copy of the stopped member's data dir beside it
/// (`DIR.bak-<UTC time>`), reused when one with the same db and WAL exists; `dry_run`
/// checks and writes nothing.
pub fn run_data_dir_backup(dir: &Path, dry_run: bool, printer: Printer) -> Result<ExitStatus> {
    let done = copy_data_dir_aside(dir, dry_run)?;
    print_aside(&done, dry_run, printer)
}

/// `data-dir move-aside DIR`: renames the stopped member's data dir to
/// `DIR.bak-<UTC time>`; `dry_run` checks and moves nothing.
pub fn run_data_dir_move_aside(dir: &Path, dry_run: bool, printer: Printer) -> Result<ExitStatus> {
    let done = move_data_dir_aside(dir, dry_run)?;
    print_aside(&done, dry_run, printer)
}

fn print_aside(done: &DataDirAside, dry_run: bool, printer: Printer) -> Result<ExitStatus> {
    for part in &done.partial_copies {
        warn(&format!(
            "{} is a copy an interrupted run left unfinished: it is not a backup; remove it by hand",
            part.display()
        ));
    }
    printer.print(&AsideView {
        done: done.clone(),
        dry_run,
    })?;
    Ok(ExitStatus::Success)
}
