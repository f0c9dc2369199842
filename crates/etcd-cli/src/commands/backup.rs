//! `backup run`: parses the flags, runs the library loop until SIGTERM or Ctrl-C, and prints
//! one line per thing it did.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use etcd_core::ClusterConfig;
use etcd_snapshot::{Compression, RunEvent, RunObserver, RunRequest, SaveRequest, run_backups};

use super::ExitStatus;
use super::snapshot::{open_store, policy, recipients};
use crate::flags::{BackupCommand, OutputFormat, RunArgs};

/// Runs a `backup` subcommand.
pub async fn run(
    config: &ClusterConfig,
    command: &BackupCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        BackupCommand::Run(args) => run_loop(config, args, format).await,
    }
}

/// Prints each event as one line: JSON with `-w json`, else a sentence.
struct LinePrinter {
    json: bool,
}

impl RunObserver for LinePrinter {
    fn on_event(&self, event: &RunEvent) {
        let line = if self.json {
            serde_json::to_string(event).unwrap_or_default()
        } else {
            match event {
                RunEvent::FullSaved { object, revision } => {
                    format!("full backup {object} at revision {revision}")
                }
                RunEvent::SegmentPublished {
                    object,
                    changes,
                    after_revision,
                    to_revision,
                    ..
                } => format!(
                    "segment {object}: {changes} changes, revisions {}..={to_revision}",
                    after_revision + 1
                ),
                RunEvent::Gap {
                    base,
                    covered_revision,
                    reason,
                } => format!(
                    "gap: the chain of {base} ends at revision {covered_revision} ({reason}); a new full backup follows"
                ),
                RunEvent::Reconnected { endpoint, reason } => {
                    format!("watching {endpoint} now ({reason})")
                }
                RunEvent::Resumed {
                    base,
                    covered_revision,
                } => format!("continuing the chain of {base} after revision {covered_revision}"),
                RunEvent::Pruned { deleted } => format!("pruned {}", deleted.join(", ")),
                RunEvent::Failed { error } => format!("failed, will retry: {error}"),
            }
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

async fn run_loop(
    config: &ClusterConfig,
    args: &RunArgs,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let store = open_store(&args.store, &args.store_flags)?;
    let request = RunRequest {
        full_every: args.full_every,
        delta_every: args.delta_every,
        segment_bytes: args.segment_bytes,
        save: SaveRequest {
            endpoint: args.endpoint.clone(),
            compression: Compression::Zstd,
            level: args.compression_level,
            labels: args.labels.iter().cloned().collect::<BTreeMap<_, _>>(),
            verify_after_upload: false,
            encrypt_to: recipients(&args.encrypt_to, &args.encrypt_to_file)?,
        },
        metrics_file: args.metrics_file.clone(),
        retention: policy(&args.retention),
        orphan_grace: args.retention.orphan_grace,
        ..RunRequest::default()
    };
    let printer = LinePrinter {
        json: matches!(format, OutputFormat::Json),
    };
    run_backups(config, &store, &request, &printer, stop_signal()).await?;
    Ok(ExitStatus::Success)
}
