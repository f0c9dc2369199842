//! How `quorum` results are printed.

use crate::output::{Render, cell, plain};
use etcdops::quorum::{CandidateSummary, DataDirAside, RecoveryPlan, Refusal, SurvivorVerified};
use serde::Serialize;

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

/// `quorum plan`: the survivor chosen, why, and the steps.
#[derive(Serialize)]
#[serde(transparent)]
pub struct PlanView(pub RecoveryPlan);

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

/// `quorum plan` refused: why no survivor can be chosen safely.
#[derive(Serialize)]
#[serde(transparent)]
pub struct RefusalView(pub Refusal);

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

/// `quorum verify`: the survivor serves as a one-member cluster.
#[derive(Serialize)]
#[serde(transparent)]
pub struct VerifiedView(pub SurvivorVerified);

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

/// `data-dir backup|move-aside`: where the data dir was copied or moved.
#[derive(Serialize)]
pub struct AsideView {
    /// What the library did (or would).
    #[serde(flatten)]
    pub done: DataDirAside,
    /// Whether nothing was written (`--dry-run`).
    #[serde(skip)]
    pub dry_run: bool,
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
