//! `etcd_quorum_recovery`: the decisions of a quorum-loss recovery (`etcdops::quorum`).
//! `step: plan` asks the cluster first (a quorum serving: `none` or `regrow`), else chooses
//! the survivor from each member's `etcd_data_dir_info` result, refusing split history, a
//! member still running and a cluster with nothing to recover from. `step: verify_survivor`
//! checks that the survivor runs alone, healthy, with its member ID and revision. Both are
//! read-only, in check mode too.

use etcdops::quorum::{
    Candidate, CandidateData, PlanAction, PlanOptions, candidate_from_report, plan_recovery_with,
    verify_survivor,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// Which decision to make.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Step {
    /// Choose what to do, and the survivor.
    #[default]
    Plan,
    /// Check that the survivor runs alone and healthy.
    VerifySurvivor,
}

fn restart_intact() -> bool {
    PlanOptions::default().restart_intact
}

/// The module's options.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Args {
    #[serde(default)]
    step: Step,
    members: Option<Vec<Value>>,
    survivor: Option<String>,
    member_id: Option<String>,
    #[serde(default)]
    min_revision: i64,
    #[serde(default = "restart_intact")]
    restart_intact: bool,
}

/// `members` as candidates: each `{name, info}`.
fn candidates(members: &[Value]) -> Result<Vec<Candidate>, ModuleError> {
    members
        .iter()
        .enumerate()
        .map(|(n, member)| {
            let name = member.get("name").and_then(Value::as_str).ok_or_else(|| {
                ModuleError::new(format!(
                    "members[{n}]: give its etcd member name as 'name' and the registered result of etcd_data_dir_info on its host as 'info'"
                ))
            })?;
            if member.get("lost").and_then(Value::as_bool) == Some(true) {
                return Ok(Candidate {
                    name: name.to_string(),
                    data: CandidateData::Lost,
                });
            }
            let info = member.get("info").ok_or_else(|| {
                ModuleError::new(format!(
                    "members[{n}] ({name}): give the registered result of etcd_data_dir_info on its host as 'info'"
                ))
            })?;
            candidate_from_report(Some(name), info)
                .map_err(|e| ModuleError::new(format!("members[{n}]: {e}")))
        })
        .collect()
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let config = context.cluster()?;
    if args.step == Step::VerifySurvivor {
        let member_id = args.member_id.ok_or_else(|| {
            ModuleError::new(
                "step verify_survivor needs member_id: the survivor's member ID, as the plan returned it",
            )
        })?;
        let verified = verify_survivor(&config, &member_id, args.min_revision)
            .await
            .map_err(|e| ModuleError::from_library(&e))?;
        if let Some(survivor) = args.survivor.filter(|s| *s != verified.name) {
            return Ok(Outcome::failure(format!(
                "the one member is named {}, not {survivor}",
                verified.name
            )));
        }
        return Ok(Outcome::unchanged(format!(
            "{} ({}) runs alone and healthy at revision {}",
            verified.name, verified.member_id, verified.revision
        ))
        .with_fields(&verified));
    }
    let members = args.members.ok_or_else(|| {
        ModuleError::new(
            "step plan needs members: each member's name and the registered result of etcd_data_dir_info on its host",
        )
    })?;
    let candidates = candidates(&members)?;
    let options = PlanOptions {
        restart_intact: args.restart_intact,
    };
    match plan_recovery_with(&config, &candidates, options).await {
        Ok(plan) => {
            let msg = match plan.action {
                PlanAction::Recover => format!(
                    "recover from {}: {}",
                    plan.survivor.as_deref().unwrap_or(""),
                    plan.reason
                ),
                PlanAction::None | PlanAction::Regrow | PlanAction::Restart => plan.reason.clone(),
            };
            Ok(Outcome::unchanged(msg).with_fields(&plan))
        }
        Err(etcdops::Error::NoSafeSurvivor(refusal)) => {
            Ok(Outcome::failure(refusal.message.clone())
                .with("refusal", &refusal.kind)
                .with("candidates", &refusal.candidates))
        }
        Err(e) => Err(ModuleError::from_library(&e)),
    }
}
