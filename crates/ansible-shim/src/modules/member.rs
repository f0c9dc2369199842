//! `etcd_member`: a member present (added, optionally as a learner), absent (removed),
//! promoted, or updated (its peer URLs changed), with the library's guards; returns what a
//! new member needs to start.

use etcd_core::{
    MemberAddRequest, member_add, member_list, member_promote, member_remove, member_update,
};
use serde::Deserialize;
use serde_json::json;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};

pub const OPTIONS: &[&[OptionSpec]] = &[&[
    opt("state", Kind::Str),
    opt("name", Kind::Str),
    opt("peer_urls", Kind::List),
    opt("learner", Kind::Bool),
    opt("member", Kind::Str),
    opt("force", Kind::Bool),
]];

#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum State {
    #[default]
    Present,
    Absent,
    Promoted,
    Updated,
}

#[derive(Debug, Deserialize)]
struct Args {
    #[serde(default)]
    state: State,
    name: Option<String>,
    #[serde(default)]
    peer_urls: Vec<String>,
    #[serde(default)]
    learner: bool,
    member: Option<String>,
    #[serde(default)]
    force: bool,
}

impl Args {
    /// Which member `absent`/`promoted` mean: `member`, else the name, else a peer URL.
    fn selector(&self) -> Result<String, ModuleError> {
        self.member
            .clone()
            .or_else(|| self.name.clone())
            .or_else(|| self.peer_urls.first().cloned())
            .ok_or_else(|| {
                ModuleError::new("etcd_member: give member, name or peer_urls to say which member")
            })
    }
}

fn member_lines(members: &[etcd_core::Member]) -> String {
    let mut lines: Vec<String> = members
        .iter()
        .map(|m| {
            format!(
                "{}{} {}\n",
                if m.name.is_empty() {
                    "(unstarted)"
                } else {
                    &m.name
                },
                if m.is_learner { " (learner)" } else { "" },
                m.peer_urls.join(",")
            )
        })
        .collect();
    lines.sort();
    lines.concat()
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let config = context.cluster()?;
    let before = if context.diff {
        Some(member_list(&config).await?.members)
    } else {
        None
    };
    let operation = match args.state {
        State::Present => "member add",
        State::Absent => "member remove",
        State::Promoted => "member promote",
        State::Updated => "member update",
    };
    let forced = context
        .operator_guard(Some(&config), operation, args.force)
        .await?;
    let dry_run = context.check_mode;
    let (mut outcome, concerned) = match args.state {
        State::Present => {
            let name = args.name.clone().ok_or_else(|| {
                ModuleError::new(
                    "etcd_member: state=present needs name (the new member's etcd --name)",
                )
            })?;
            let request = MemberAddRequest {
                name,
                peer_urls: args.peer_urls.clone(),
                learner: args.learner,
                force: args.force,
                dry_run,
            };
            let result = member_add(&config, &request).await?;
            let initial_cluster = result.env.get("ETCD_INITIAL_CLUSTER").cloned();
            let mut outcome = Outcome::unchanged(result.message.clone())
                .with("member", &result.member)
                .with("initial_cluster", initial_cluster)
                .with("initial_cluster_state", "existing")
                .with("env", &result.env);
            outcome.changed = result.changed;
            (outcome, Some(result.member))
        }
        State::Updated => {
            let selector = args
                .member
                .clone()
                .or_else(|| args.name.clone())
                .ok_or_else(|| {
                    ModuleError::new(
                        "etcd_member: state=updated needs member or name, and peer_urls",
                    )
                })?;
            let result = member_update(&config, &selector, &args.peer_urls, dry_run).await?;
            let mut outcome = Outcome::unchanged(result.message.clone())
                .with("member", &result.member)
                .with("leadership_moved_to", result.leadership_moved_to);
            outcome.changed = result.changed;
            (outcome, result.member)
        }
        State::Absent | State::Promoted => {
            let selector = args.selector()?;
            let result = if args.state == State::Absent {
                member_remove(&config, &selector, args.force, dry_run).await?
            } else {
                member_promote(&config, &selector, args.force, dry_run).await?
            };
            let mut outcome = Outcome::unchanged(result.message.clone())
                .with("member", &result.member)
                .with("leadership_moved_to", result.leadership_moved_to);
            outcome.changed = result.changed;
            (outcome, result.member)
        }
    };
    outcome.warnings.extend(forced);
    if let Some(before) = before {
        let mut after = before.clone();
        if let Some(member) = concerned.filter(|_| outcome.changed) {
            match args.state {
                State::Present => after.push(member),
                State::Absent => after.retain(|m| m.id != member.id),
                State::Promoted => after
                    .iter_mut()
                    .filter(|m| m.id == member.id)
                    .for_each(|m| m.is_learner = false),
                State::Updated => after
                    .iter_mut()
                    .filter(|m| m.id == member.id)
                    .for_each(|m| m.peer_urls = member.peer_urls.clone()),
            }
        }
        outcome.diff = Some(json!({
            "before_header": "etcd members",
            "after_header": "etcd members",
            "before": member_lines(&before),
            "after": member_lines(&after),
        }));
    }
    Ok(outcome)
}
