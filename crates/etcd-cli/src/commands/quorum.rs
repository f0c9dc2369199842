//! `etcdops quorum plan|verify` and the data-dir steps of a quorum-loss recovery
//! (`data-dir backup DIR`, `data-dir move-aside DIR`), over `etcdops::quorum`.
//!
//! The `data-dir` command group and its flags belong to `commands/data_dir.rs`; its dispatch
//! calls [`run_data_dir_backup`] and [`run_data_dir_move_aside`] here.

use std::path::Path;

use anyhow::{Context as _, Result};
use etcdops::client::ClusterConfig;
use etcdops::quorum::{
    Candidate, CandidateSummary, DataDirAside, PlanOptions, QuorumError, RecoveryPlan, Refusal,
    SurvivorVerified, candidate_from_report, copy_data_dir_aside, move_data_dir_aside,
    plan_recovery_with, verify_survivor,
};
use serde::Serialize;

use super::ExitStatus;
use crate::flags::{OutputFormat, QuorumCommand};
use crate::output::{Render, cell, note, plain, print, warn};

/// Runs a `quorum` command.
pub async fn run(
    config: &ClusterConfig,
    command: &QuorumCommand,
    format: OutputFormat,
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
                    print(format, &PlanView(plan))?;
                    Ok(ExitStatus::Success)
                }
                Err(QuorumError::Refused(refusal)) => {
                    note(&format!("refused: {}", refusal.message));
                    print(format, &RefusalView(*refusal))?;
                    Ok(ExitStatus::Failure)
                }
                Err(e) => Err(e.into()),
            }
        }
        QuorumCommand::Verify(args) => {
            let verified = verify_survivor(config, &args.member_id, args.min_revision).await?;
            print(format, &VerifiedView(verified))?;
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
pub fn run_data_dir_backup(dir: &Path, dry_run: bool, format: OutputFormat) -> Result<ExitStatus> {
    let done = copy_data_dir_aside(dir, dry_run)?;
    print_aside(&done, dry_run, format)
}

/// `data-dir move-aside DIR`: renames the stopped member's data dir to
/// `DIR.bak-<UTC time>`; `dry_run` checks and moves nothing.
pub fn run_data_dir_move_aside(
    dir: &Path,
    dry_run: bool,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let done = move_data_dir_aside(dir, dry_run)?;
    print_aside(&done, dry_run, format)
}

fn print_aside(done: &DataDirAside, dry_run: bool, format: OutputFormat) -> Result<ExitStatus> {
    for part in &done.partial_copies {
        warn(&format!(
            "{} is a copy an interrupted run left unfinished: it is not a backup; remove it by hand",
            part.display()
        ));
    }
    print(
        format,
        &AsideView {
            done: done.clone(),
            dry_run,
        },
    )?;
    Ok(ExitStatus::Success)
}

fn candidate_rows(candidates: &[CandidateSummary]) -> Vec<Vec<String>> {
    candidates
        .iter()
        .map(|c| {
            vec![
                plain(&c.name),
                cell(&c.member_id),
                match (c.committed_term, c.committed_index) {
                    (Some(t), Some(i)) => format!("{t}/{i}"),
                    _ => String::new(),
                },
                cell(&c.revision),
                cell(&c.committed_entries_beyond_db),
                if c.chosen {
                    "survivor".into()
                } else {
                    plain(c.why_not_chosen.as_deref().unwrap_or(""))
                },
            ]
        })
        .collect()
}

const CANDIDATE_HEADERS: [&str; 6] = [
    "MEMBER",
    "ID",
    "COMMITTED TERM/INDEX",
    "REVISION",
    "COMMITTED BEYOND DB",
    "CHOICE",
];

#[derive(Serialize)]
#[serde(transparent)]
struct PlanView(RecoveryPlan);

impl Render for PlanView {
    fn headers(&self) -> Vec<&'static str> {
        if self.0.candidates.is_empty() {
            vec!["ACTION", "REJOIN", "REASON"]
        } else {
            CANDIDATE_HEADERS.to_vec()
        }
    }

    fn rows(&self) -> Vec<Vec<String>> {
        if self.0.candidates.is_empty() {
            vec![vec![
                serde_json::to_value(self.0.action)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                plain(&self.0.rejoin.join(", ")),
                plain(&self.0.reason),
            ]]
        } else {
            candidate_rows(&self.0.candidates)
        }
    }

    fn simple_lines(&self) -> Vec<String> {
        let plan = &self.0;
        let mut lines = vec![plain(&plan.reason)];
        if let (Some(survivor), Some(id), Some(revision)) =
            (&plan.survivor, &plan.member_id, plan.min_revision)
        {
            lines.push(format!(
                "survivor {} (member {id}), revision at least {revision}",
                plain(survivor)
            ));
        }
        if !plan.restart.is_empty() {
            lines.push(format!("restart {}", plain(&plan.restart.join(", "))));
        }
        if !plan.rejoin.is_empty() {
            lines.push(format!("rejoin {}", plain(&plan.rejoin.join(", "))));
        }
        lines
    }
}

#[derive(Serialize)]
#[serde(transparent)]
struct RefusalView(Refusal);

impl Render for RefusalView {
    fn headers(&self) -> Vec<&'static str> {
        CANDIDATE_HEADERS.to_vec()
    }

    fn rows(&self) -> Vec<Vec<String>> {
        candidate_rows(&self.0.candidates)
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![plain(&self.0.message)]
    }
}

#[derive(Serialize)]
#[serde(transparent)]
struct VerifiedView(SurvivorVerified);

impl Render for VerifiedView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["MEMBER", "ID", "CLUSTER ID", "REVISION", "ENDPOINT"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let v = &self.0;
        vec![vec![
            plain(&v.name),
            v.member_id.clone(),
            v.cluster_id.clone(),
            v.revision.to_string(),
            cell(&v.endpoint),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        let v = &self.0;
        vec![format!(
            "{} ({}) runs alone and healthy at revision {}",
            plain(&v.name),
            v.member_id,
            v.revision
        )]
    }
}

#[derive(Serialize)]
struct AsideView {
    #[serde(flatten)]
    done: DataDirAside,
    #[serde(skip)]
    dry_run: bool,
}

impl AsideView {
    fn what(&self) -> String {
        match (&self.done.path, self.done.changed, self.done.reused) {
            (None, _, _) => "nothing to keep (no member data)".into(),
            (Some(_), false, true) => "complete copy already there".into(),
            (Some(_), false, false) => "unchanged".into(),
            (Some(_), true, _) if self.dry_run => "would be kept (dry run)".into(),
            (Some(_), true, _) => "kept".into(),
        }
    }
}

impl Render for AsideView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["DATA DIR", "KEPT AT", "RESULT"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            plain(&self.done.data_dir.display().to_string()),
            self.done
                .path
                .as_ref()
                .map(|p| plain(&p.display().to_string()))
                .unwrap_or_default(),
            self.what(),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![match &self.done.path {
            Some(path) => format!("{}: {}", self.what(), plain(&path.display().to_string())),
            None => self.what(),
        }]
    }
}
