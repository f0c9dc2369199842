//! etcdutl's offline tools: `defrag --data-dir DIR` and `hashkv FILE|--data-dir DIR`, on a
//! stopped member or a snapshot, no cluster needed. Output: etcdutl's `-w simple` and JSON,
//! our table and JSON.

use anyhow::Result;
use etcdops::snapshot::{DefragRequest, HashKvFileRequest};

use super::ExitStatus;
use crate::flags::{DefragArgs, OfflineHashKvArgs};
use crate::output::warn;
use etcdops_printer::Printer;
use etcdops_printer::views::offline::*;

/// `defrag --data-dir DIR`.
pub fn defrag(args: &DefragArgs, printer: Printer) -> Result<ExitStatus> {
    let Some(data_dir) = &args.data_dir else {
        anyhow::bail!("defrag --data-dir needs a data dir");
    };
    let request = DefragRequest {
        data_dir: data_dir.clone(),
    };
    let done = etcdops::snapshot::defrag_data_dir(&request)?;
    for leftover in &done.removed_leftovers {
        crate::output::note(&format!(
            "removed {}, left by an interrupted defragmentation",
            leftover.display()
        ));
    }
    printer.print(&DefragView {
        data_dir: data_dir.display().to_string(),
        result: done,
    })?;
    Ok(ExitStatus::Success)
}

/// `hashkv FILE|--data-dir DIR [--rev REV]`.
pub async fn hashkv(args: &OfflineHashKvArgs, printer: Printer) -> Result<ExitStatus> {
    let request = HashKvFileRequest {
        snapshot: args.source.clone(),
        data_dir: args.data_dir.clone(),
        revision: args.rev,
        identity: etcdops::snapshot::IdentitySettings {
            identity_file: args.identity.identity.clone(),
            identity_content: None,
        },
        store: super::snapshot::settings(&args.store_flags),
    };
    let result = etcdops::snapshot::hash_kv(&request).await?;
    for warning in &result.warnings {
        warn(warning);
    }
    printer.print(&HashKvView(result))?;
    Ok(ExitStatus::Success)
}
