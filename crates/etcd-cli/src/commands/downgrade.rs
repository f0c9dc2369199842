//! `etcdops downgrade validate|enable|cancel`: etcdctl 3.6's commands over the guarded
//! workflow `etcdops::downgrade` (enable only with a verified recent backup, or --force).

use anyhow::Result;
use etcdops::client::{Client, ClusterConfig};
use etcdops::downgrade::{DowngradeCall, DowngradeRequest, downgrade};
use etcdops::guard::Guards;
use etcdops::snapshot::IdentitySettings;

use super::ExitStatus;
use crate::flags::DowngradeCommand;
use crate::output::warn;
use etcdops_printer::Printer;
use etcdops_printer::views::downgrade::*;

/// Runs a `downgrade` command.
pub async fn run(
    config: &ClusterConfig,
    guards: &Guards,
    command: &DowngradeCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    let request = match command {
        DowngradeCommand::Validate(args) => {
            DowngradeRequest::new(DowngradeCall::validate(&args.version))
        }
        DowngradeCommand::Cancel => DowngradeRequest::new(DowngradeCall::cancel()),
        DowngradeCommand::Enable(args) => {
            let mut request = DowngradeRequest::new(DowngradeCall::enable(&args.version))
                .max_backup_age(args.max_backup_age)
                .force(args.force);
            request.store = args.store.clone();
            request.backup_to = args.backup_to.clone();
            request.store_settings = super::snapshot::settings(&args.store_flags);
            request.identity = IdentitySettings {
                identity_file: args.identity.identity.clone(),
                identity_content: None,
            };
            request
        }
    };
    let done = downgrade(&Client::new(config.clone()), guards, &request).await?;
    super::member::note_backup(done.backup_taken.as_ref());
    for warning in &done.warnings {
        warn(warning);
    }
    printer.print(&DowngradeView(done))?;
    Ok(ExitStatus::Success)
}
