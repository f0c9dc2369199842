//! `etcd_data_dir`: keeps a member's data dir before a recovery changes it
//! (`etcdops::quorum`): `copied` copies it to `DIR.bak-<UTC time>` (a `.part` name first,
//! renamed when flushed; an existing complete copy with the same db and WAL is reused),
//! `moved_aside` renames it so; `tail_committed` raises the saved commit index to the WAL's
//! last entry (`etcdops::data_dir::adopt_wal_tail`) so that a `--force-new-cluster` start keeps every
//! entry. Refused while etcd runs on it; nothing is deleted. Check mode checks everything and
//! writes nothing.

use std::path::PathBuf;

use etcdops::data_dir::adopt_wal_tail;
use etcdops::guard::{Force, Guards};
use etcdops::quorum::{copy_data_dir_aside, move_data_dir_aside};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// What to do with the data dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum State {
    /// A complete copy beside it.
    Copied,
    /// Renamed aside.
    MovedAside,
    /// The WAL's tail past the saved commit index adopted.
    TailCommitted,
}

/// The module's options.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Args {
    data_dir: PathBuf,
    state: State,
    #[serde(default)]
    force: Force,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let dir = &args.data_dir;
    if args.state == State::TailCommitted {
        return tail_committed(dir, context.check_mode, &context.guards()?, args.force).await;
    }
    let copy = args.state == State::Copied;
    let done = if copy {
        copy_data_dir_aside(dir, context.check_mode)
    } else {
        move_data_dir_aside(dir, context.check_mode)
    }
    .map_err(|e| ModuleError::from_library(&e))?;
    let shown = dir.display();
    let msg = match (&done.path, done.changed, copy) {
        (None, _, _) => {
            format!("{shown} holds no member data (no {shown}/member); nothing to keep")
        }
        (Some(path), false, _) => format!(
            "{} is already a complete copy of {shown} (same db and WAL); nothing copied",
            path.display()
        ),
        (Some(path), true, true) if context.check_mode => format!(
            "would copy {shown} to {} (check mode: nothing written)",
            path.display()
        ),
        (Some(path), true, true) => format!("copied {shown} to {}", path.display()),
        (Some(path), true, false) if context.check_mode => format!(
            "would move {shown} aside to {} (check mode: nothing moved)",
            path.display()
        ),
        (Some(path), true, false) => format!("moved {shown} aside to {}", path.display()),
    };
    let mut outcome = Outcome::unchanged(msg);
    outcome.changed = done.changed;
    outcome.warnings = done
        .partial_copies
        .iter()
        .map(|p| {
            format!(
                "{} is a copy a killed earlier run left unfinished: it is not a backup; remove it by hand",
                p.display()
            )
        })
        .collect();
    Ok(outcome.with_fields(&done))
}

/// `state: tail_committed`.
async fn tail_committed(
    dir: &std::path::Path,
    check_mode: bool,
    guards: &Guards,
    force: Force,
) -> Result<Outcome, ModuleError> {
    let adopted = adopt_wal_tail(guards, dir, check_mode, force).await?;
    let done = adopted.result;
    let shown = dir.display();
    let msg = match (done.changed, check_mode) {
        (false, _) => format!(
            "{shown}: nothing in the WAL past its saved commit index {}; nothing to do",
            done.commit_before
        ),
        (true, true) => format!(
            "would raise the saved commit index of {shown} from {} to {} ({} entries past it kept by a forced start) (check mode: nothing written)",
            done.commit_before, done.commit_after, done.entries_adopted
        ),
        (true, false) => format!(
            "raised the saved commit index of {shown} from {} to {} ({} entries past it now kept by a forced start)",
            done.commit_before, done.commit_after, done.entries_adopted
        ),
    };
    let mut outcome = Outcome::unchanged(msg);
    outcome.changed = done.changed;
    outcome.warnings.extend(adopted.forced);
    Ok(outcome
        .with_fields(serde_json::json!({ "data_dir": dir }))
        .with_fields(&done))
}
