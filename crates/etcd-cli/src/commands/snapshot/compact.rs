//! `snapshot compact`: flags in, the workflow called, what it did printed.

use anyhow::Result;
use etcd_snapshot::{CompactResult, RestoreError, SnapshotError};
use etcdops::snapshot::CompactRequest;

use super::{bar, identity_settings, progress, settings, warn_all};
use crate::commands::ExitStatus;
use crate::flags::{OutputFormat, SnapshotCompactArgs};
use crate::output::{Render, print};

/// Compacts the chain and prints the new backup (or the one that already compacted it).
pub(super) async fn compact(
    args: &SnapshotCompactArgs,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let request = CompactRequest {
        store: args.store.clone(),
        chain: args.chain.clone(),
        work_dir: args.work_dir.clone(),
        identity: identity_settings(&args.identity),
        settings: settings(&args.store_flags),
    };
    let bar = bar("compact", args.quiet, format);
    let compacted = etcdops::snapshot::compact(&request, progress(&bar))
        .await
        .map_err(in_flag_words)?;
    warn_all(&compacted.warnings);
    print(format, &CompactView(compacted.result))?;
    Ok(ExitStatus::Success)
}

/// A refusal naming the chain option in the flag's words.
fn in_flag_words(error: etcdops::Error) -> anyhow::Error {
    if let etcdops::Error::Restore(RestoreError::Fetch(source)) = &error
        && let Some(SnapshotError::InvalidOption { option, reason }) =
            source.downcast_ref::<SnapshotError>()
        && *option == "chain"
    {
        return anyhow::anyhow!("--chain: {reason}");
    }
    super::in_flag_words(error)
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct CompactView(CompactResult);

impl Render for CompactView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.0;
        let m = &r.manifest;
        let mut rows = vec![
            vec![
                "result".into(),
                if r.changed {
                    "compacted".into()
                } else {
                    "already compacted".into()
                },
            ],
            vec!["chain".into(), r.source.clone()],
            vec!["segments".into(), r.segments.to_string()],
            vec!["object".into(), m.object.clone()],
            vec!["revision".into(), m.revision.to_string()],
            vec![
                "created (UTC)".into(),
                m.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            ],
            vec!["db size".into(), m.db_size.to_string()],
            vec!["stored size".into(), m.object_size.to_string()],
            vec!["encrypted (age)".into(), m.encryption.is_some().to_string()],
        ];
        if r.changed {
            rows.push(vec![
                "changes applied".into(),
                r.changes_applied.to_string(),
            ]);
            rows.push(vec!["verified".into(), r.verify.is_some().to_string()]);
        }
        if !r.leases_recreated.is_empty() {
            rows.push(vec![
                "leases recreated".into(),
                r.leases_recreated.join(", "),
            ]);
        }
        if !r.leases_detached.is_empty() {
            rows.push(vec!["leases detached".into(), r.leases_detached.join(", ")]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let r = &self.0;
        let verb = if r.changed {
            "compacted"
        } else {
            "already compacted"
        };
        vec![format!(
            "{verb} the chain of {} ({} segments) into {} at revision {}",
            r.source, r.segments, r.manifest.object, r.manifest.revision
        )]
    }
}
