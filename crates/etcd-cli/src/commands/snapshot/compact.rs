//! `snapshot compact`: flags in, the chain consolidation workflow called, what it did printed.

use anyhow::Result;
use etcdops::snapshot::ConsolidateRequest;
use etcdops::snapshot::{RestoreError, SnapshotError};

use super::{bar, identity_settings, progress, settings, warn_all};
use crate::commands::ExitStatus;
use crate::flags::SnapshotCompactArgs;
use etcdops_printer::Printer;
use etcdops_printer::views::snapshot::{CompactPreviewView, CompactView};

/// Compacts the chain and prints the new backup (or the one that already compacted it); with
/// `--dry-run`, prints what it would do.
pub(super) async fn compact(args: &SnapshotCompactArgs, printer: Printer) -> Result<ExitStatus> {
    let request = ConsolidateRequest {
        store: args.store.clone(),
        chain: args.chain.clone(),
        work_dir: args.work_dir.clone(),
        identity: identity_settings(&args.identity),
        settings: settings(&args.store_flags),
    };
    if args.dry_run {
        let preview = etcdops::snapshot::preview_consolidate(&request)
            .await
            .map_err(in_flag_words)?;
        warn_all(&preview.warnings);
        printer.print(&CompactPreviewView(preview))?;
        return Ok(ExitStatus::Success);
    }
    let bar = bar("compact", args.quiet, printer);
    let compacted = etcdops::snapshot::consolidate(&request, progress(&bar))
        .await
        .map_err(in_flag_words)?;
    warn_all(&compacted.warnings);
    printer.print(&CompactView(compacted.result))?;
    Ok(ExitStatus::Success)
}

/// A refusal naming the chain option in the flag's words.
fn in_flag_words(error: etcdops::Error) -> anyhow::Error {
    if let Some(RestoreError::Fetch(source)) = error.library::<RestoreError>()
        && let Some(SnapshotError::InvalidOption(invalid)) = source.downcast_ref::<SnapshotError>()
        && invalid.is_about(etcdops::snapshot::opts::CHAIN)
    {
        return anyhow::anyhow!("--chain: {}", invalid.reason);
    }
    super::in_flag_words(error)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::CompactView;
    use crate::output::Render;

    /// A run that lost the race to another compaction shows no backup as if it made or found
    /// one (its result's manifest is the chain's full backup's): it says it did not compact,
    /// and why.
    #[test]
    fn a_compaction_that_found_the_chain_busy_does_not_show_the_source_as_its_result() {
        let manifest = serde_json::json!({
            "format_version": 1, "tool": "etcdops", "tool_version": "0",
            "created_at": "2026-12-05T00:00:00Z", "completed_at": "2026-12-05T00:00:01Z",
            "cluster_id": "1", "member_id": "2", "member_name": "m0", "endpoint": "e",
            "etcd_version": "3.5.1", "revision": 100, "raft_term": 2, "raft_index": 10,
            "db_size": 1, "db_size_in_use": 1, "db_sha256": "", "object": "full.db.zst",
            "object_sha256": "", "object_size": 1, "compression": "zstd",
            "compression_level": 1, "verified_after_upload": true, "labels": {},
        });
        let result = etcdops::snapshot::ConsolidateResult {
            changed: false,
            store: "/s".into(),
            source: "full.db.zst".into(),
            segments: 3,
            changes_applied: 0,
            leases_recreated: Vec::new(),
            leases_removed: Vec::new(),
            leases_detached: Vec::new(),
            manifest: serde_json::from_value(manifest).unwrap(),
            manifest_name: String::new(),
            verify: None,
            warnings: Vec::new(),
            busy: Some(
                "another compaction of the chain of full.db.zst is in progress (pid 1)".into(),
            ),
            duration_seconds: 0.1,
        };
        let view = CompactView(result);
        let rows = view.rows();
        assert_eq!(rows[0], vec!["result", "not compacted (busy)"]);
        assert!(
            !rows.iter().any(|r| r[0] == "object" || r[0] == "revision"),
            "{rows:?}"
        );
        let line = view.simple_lines().join("\n");
        assert!(
            line.starts_with("did not compact the chain of full.db.zst"),
            "{line}"
        );
        assert!(!line.contains("already compacted"), "{line}");
    }

    use crate::flags::{BackupCommand, Cli, Command, SnapshotCommand};

    #[test]
    fn compact_takes_the_store_a_chain_a_work_dir_and_identities() {
        let cli = Cli::try_parse_from([
            "etcdops",
            "snapshot",
            "compact",
            "s3://b/etcd",
            "--chain",
            "etcd-abc/x.db.zst",
            "--work-dir",
            "/var/tmp",
            "--identity",
            "/k",
        ])
        .unwrap();
        let Command::Snapshot(SnapshotCommand::Compact(args)) = cli.command else {
            panic!("not compact");
        };
        assert_eq!(args.store, "s3://b/etcd");
        assert_eq!(args.chain.as_deref(), Some("etcd-abc/x.db.zst"));
        assert_eq!(args.work_dir, Some("/var/tmp".into()));
        assert_eq!(args.identity.identity, [std::path::PathBuf::from("/k")]);
        assert!(!args.dry_run);
        // Only the store is required.
        assert!(Cli::try_parse_from(["etcdops", "snapshot", "compact"]).is_err());
        let cli = Cli::try_parse_from(["etcdops", "snapshot", "compact", "/s", "--dry-run"]);
        let Command::Snapshot(SnapshotCommand::Compact(args)) = cli.unwrap().command else {
            panic!("not compact");
        };
        assert!(args.dry_run);
    }

    #[test]
    fn backup_run_compacts_only_when_asked_and_its_work_dir_needs_compact_after() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["etcdops", "backup", "run", "/b"];
            argv.extend(extra);
            Cli::try_parse_from(argv)
        };
        let Command::Backup(BackupCommand::Run(args)) = parse(&[]).unwrap().command else {
            panic!("not backup run");
        };
        assert_eq!(args.compact_after, None);
        let cli = parse(&["--compact-after", "10", "--compact-work-dir", "/w"]).unwrap();
        let Command::Backup(BackupCommand::Run(args)) = cli.command else {
            panic!("not backup run");
        };
        assert_eq!(args.compact_after, Some(10));
        assert_eq!(args.compact_work_dir, Some("/w".into()));
        assert!(parse(&["--compact-work-dir", "/w"]).is_err());
        assert!(parse(&["--compact-after", "x"]).is_err());
    }
}
