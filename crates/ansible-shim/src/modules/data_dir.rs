//! `etcd_data_dir`: keeps a member's data dir before a recovery changes it
//! (`etcdops::quorum`): `copied` copies it to `DIR.bak-<UTC time>` (a `.part` name first,
//! renamed when flushed; an existing complete copy with the same db and WAL is reused),
//! `moved_aside` renames it so. Refused while etcd runs on it; nothing is deleted. Check
//! mode checks everything and writes nothing.

use std::path::PathBuf;

use etcdops::quorum::{copy_data_dir_aside, move_data_dir_aside};
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};

pub const OPTIONS: &[&[OptionSpec]] = &[&[
    opt("data_dir", Kind::Path).required(),
    opt("state", Kind::Str)
        .choices(&["copied", "moved_aside"])
        .required(),
]];

#[derive(Deserialize)]
struct Args {
    data_dir: PathBuf,
    state: String,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let dir = &args.data_dir;
    let copy = args.state == "copied";
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
