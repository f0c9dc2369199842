//! `etcd_member`: a member present (added, optionally as a learner), absent (removed),
//! promoted, or updated (its peer URLs changed), through `etcdops::member::apply` and so with
//! its guards; returns what a new member needs to start.

use etcdops::member::Member;
use etcdops::member::{MemberRequest, Wanted, apply};
use schemars::JsonSchema;
use serde_json::json;

use crate::context::Context;
use crate::modules::WaitOptions;
use crate::outcome::{ModuleError, Outcome};
use etcdops::backup_before::{BackupBefore, change_with_backup};

/// The module's options: the library's request, the wait, and the backup before a change.
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema: its fields are read as `MemberRequest`, `WaitOptions`, `BackupBefore`
pub(crate) struct Options {
    #[serde(flatten)]
    request: MemberRequest,
    #[serde(flatten)]
    wait: WaitOptions,
    #[serde(flatten)]
    backup: BackupBefore,
}

fn member_lines(members: &[Member]) -> String {
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
    let mut request: MemberRequest = context.args()?;
    let wait: WaitOptions = context.args()?;
    if wait.wait {
        if request.state != Wanted::Promoted {
            return Err(ModuleError::new(
                "wait: only state promoted waits (for the learner to start and catch up); drop wait or set state: promoted",
            ));
        }
        request.wait = Some(std::time::Duration::from_secs(wait.wait_timeout));
    }
    request.dry_run = context.check_mode;
    request.diff = context.diff;
    let config = context.cluster()?;
    let guards = context.guards()?;
    let backup: BackupBefore = context.args()?;
    let (done, taken) = change_with_backup(&config, &backup, context.check_mode, |dry_run| {
        let request = MemberRequest {
            dry_run,
            ..request.clone()
        };
        let (config, guards) = (&config, &guards);
        async move { apply(config, guards, &request).await }
    })
    .await?;
    let mut outcome = Outcome::unchanged(done.message.clone()).with_fields(&done);
    if let Some(taken) = &taken {
        outcome = outcome.with("backup", taken);
    }
    outcome.values.remove("message");
    outcome.changed = done.changed;
    outcome.warnings = done.warnings;
    outcome.diff = done.diff.map(|diff| {
        json!({
            "before_header": "etcd members",
            "after_header": "etcd members",
            "before": member_lines(&diff.before),
            "after": member_lines(&diff.after),
        })
    });
    Ok(outcome)
}
