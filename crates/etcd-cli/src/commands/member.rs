//! `etcdops member ...`

use anyhow::Result;
use etcdops::client::{Client, ClusterConfig};
use etcdops::guard::{Force, Guards};
use etcdops::kv::Consistency;
use etcdops::member::MemberListOptions;
use etcdops::member::{self, AddRequest, Guarded, RemoveRequest, UpdateRequest};

use super::ExitStatus;
use crate::flags::{BackupToFlags, ConsistencyFlag, MemberCommand};
use crate::output::warn;
use etcdops::backup_before::{BackupBefore, BackupBeforeChange, change_with_backup};
use etcdops_printer::Printer;
use etcdops_printer::views::member::*;

/// Runs a member command; `guards` look at the host (for the OpenShift operator).
pub async fn run(
    config: &ClusterConfig,
    guards: &Guards,
    command: &MemberCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    match command {
        MemberCommand::List(args) => {
            let options = MemberListOptions {
                consistency: args.consistency.map(|c| match c {
                    ConsistencyFlag::L => Consistency::Linearizable,
                    ConsistencyFlag::S => Consistency::Serializable,
                }),
            };
            let list = Client::new(config.clone())
                .members()
                .list_with(options)
                .await?;
            printer.print(&MemberListView(list))?;
        }
        MemberCommand::Add(args) => {
            let request = AddRequest {
                name: args.name.clone(),
                peer_urls: args.peer_urls.clone(),
                learner: args.learner,
                force: Force(args.force),
                dry_run: false,
            };
            let (done, taken) =
                change_with_backup(config, &backup_before(&args.backup), false, |dry_run| {
                    let request = AddRequest {
                        dry_run,
                        ..request.clone()
                    };
                    async move { member::add(config, guards, &request).await }
                })
                .await?;
            note_backup(taken.as_ref());
            let done = warned(done);
            crate::output::note(&done.message);
            printer.print(&AddView(done))?;
        }
        MemberCommand::Remove(args) => {
            let request = select(&args.member, args.force);
            let (done, taken) =
                change_with_backup(config, &backup_before(&args.backup), false, |dry_run| {
                    let request = RemoveRequest {
                        dry_run,
                        ..request.clone()
                    };
                    async move { member::remove(config, guards, &request).await }
                })
                .await?;
            note_backup(taken.as_ref());
            printer.print(&ChangeView(warned(done)))?;
        }
        MemberCommand::Update(args) => {
            let request = UpdateRequest {
                member: args.member.clone(),
                peer_urls: args.peer_urls.clone(),
                force: Force(args.force),
                dry_run: false,
            };
            let (done, taken) =
                change_with_backup(config, &backup_before(&args.backup), false, |dry_run| {
                    let request = UpdateRequest {
                        dry_run,
                        ..request.clone()
                    };
                    async move { member::update(config, guards, &request).await }
                })
                .await?;
            note_backup(taken.as_ref());
            printer.print(&ChangeView(warned(done)))?;
        }
        MemberCommand::Promote(args) => {
            let request = select(&args.member, args.force);
            if args.backup.backup_to.is_some() && args.wait.is_none() {
                let (done, taken) =
                    change_with_backup(config, &backup_before(&args.backup), false, |dry_run| {
                        let request = RemoveRequest {
                            dry_run,
                            ..request.clone()
                        };
                        async move { member::promote(config, guards, &request).await }
                    })
                    .await?;
                note_backup(taken.as_ref());
                printer.print(&ChangeView(warned(done)))?;
                return Ok(ExitStatus::Success);
            }
            if args.backup.backup_to.is_some() {
                // The backup just before the promotion, once the learner is ready.
                let backup = backup_before(&args.backup);
                let timeout = args.wait.unwrap_or_default();
                let ready = etcdops::wait::learner_ready_within(config, &request, timeout).await?;
                let taken =
                    etcdops::backup_before::backup_before_change(config, &backup, false).await?;
                note_backup(taken.as_ref());
                let done = warned(member::promote(config, guards, &request).await?);
                crate::output::note(&format!("waited {}s for the learner", ready.seconds));
                printer.print(&ChangeView(done))?;
                return Ok(ExitStatus::Success);
            }
            match args.wait {
                Some(timeout) => {
                    let done = etcdops::wait::promote_when_ready(config, guards, &request, timeout)
                        .await?;
                    done.warnings.iter().for_each(|w| warn(w));
                    printer.print(&PromotedView(done))?;
                }
                None => {
                    let done = warned(member::promote(config, guards, &request).await?);
                    printer.print(&ChangeView(done))?;
                }
            }
        }
    }
    Ok(ExitStatus::Success)
}

fn select(member: &str, force: bool) -> RemoveRequest {
    RemoveRequest {
        member: member.to_string(),
        force: Force(force),
        dry_run: false,
    }
}

/// The backup before a change the flags ask for.
pub(crate) fn backup_before(flags: &BackupToFlags) -> BackupBefore {
    BackupBefore {
        backup_to: flags.backup_to.clone(),
        store: super::snapshot::settings(&flags.store_flags),
    }
}

/// Names the backup taken before a change, on stderr.
pub(crate) fn note_backup(taken: Option<&BackupBeforeChange>) {
    if let Some(taken) = taken {
        crate::output::note(&format!(
            "backed up to {} at revision {} and verified it, before the change",
            taken.object_url.as_deref().unwrap_or(&taken.store),
            taken.revision.unwrap_or_default()
        ));
    }
}

/// Prints the warnings of the guards forced through; the result.
fn warned<T>(done: Guarded<T>) -> T {
    done.warnings.iter().for_each(|w| warn(w));
    done.result
}
