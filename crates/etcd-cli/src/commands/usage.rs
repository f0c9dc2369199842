//! `usage`: what fills the db, live or offline. Table: a summary, a table per grouping, the
//! largest keys; `-w json`: the whole report.

use anyhow::Result;
use etcdops::client::ClusterConfig;
use etcdops::usage::UsageRequest;

use super::ExitStatus;
use crate::flags::UsageArgs;
use etcdops_printer::Printer;
use etcdops_printer::views::usage::*;

/// `usage [--prefix P] [--depth N] [--top N] [--snapshot FILE|URL | --data-dir DIR]`:
/// offline when a file is given (`config` unused), else live through `config`.
pub async fn run(
    config: Option<&ClusterConfig>,
    args: &UsageArgs,
    printer: Printer,
) -> Result<ExitStatus> {
    let request = UsageRequest {
        prefix: args.prefix.clone(),
        depth: Some(args.depth),
        top: Some(args.top),
        kubernetes_prefix: args.kubernetes_prefix.clone(),
        snapshot: args.snapshot.clone(),
        data_dir: args.data_dir.clone(),
        skip_hash_check: args.skip_hash_check,
        identity: etcdops::snapshot::IdentitySettings {
            identity_file: args.identity.identity.clone(),
            identity_content: None,
        },
        store: super::snapshot::settings(&args.store_flags),
    };
    let result = etcdops::usage::usage(config, &request).await?;
    for warning in &result.warnings {
        crate::output::warn(warning);
    }
    printer.print(&SummaryView(&result))?;
    if !printer.format().is_json() {
        for table in &result.report.groups {
            println!();
            printer.print(&GroupView(table))?;
        }
        if !result.report.largest_keys.is_empty() {
            println!();
            printer.print(&KeysView(&result.report.largest_keys))?;
        }
    }
    Ok(ExitStatus::Success)
}
