//! `backup run`: parses the flags, runs the library loop until SIGTERM or Ctrl-C, and prints
//! one line per thing it did.

use std::io::Write;

use anyhow::Result;
use etcdops::client::ClusterConfig;
use etcdops::snapshot::{BackupRunRequest, backup_run};
use etcdops::snapshot::{RunEvent, RunObserver};

use super::ExitStatus;
use super::snapshot::{
    copy_retention, identity_settings, in_flag_words, lock_mode, retention, settings,
};
use crate::flags::{BackupCommand, RunArgs};
use crate::output::{json_line, plain};
use etcdops_printer::Printer;

/// Runs a `backup` subcommand.
pub async fn run(
    config: &ClusterConfig,
    command: &BackupCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    match command {
        BackupCommand::Run(args) => run_loop(config, args, printer).await,
    }
}

/// Prints each event as one line: JSON with `-w json`, else a sentence.
struct LinePrinter {
    json: bool,
}

impl RunObserver for LinePrinter {
    fn on_event(&self, event: &RunEvent) {
        // Events quote etcd's answers and the store's names: never raw on a terminal.
        let line = if self.json {
            json_line(event).unwrap_or_default()
        } else {
            plain(&etcdops::snapshot::event_line(event))
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// SIGTERM or SIGINT. The handlers are installed here, at once, so a signal that arrives
/// before the future is first polled (during the first full backup) is caught too, instead
/// of killing the process.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}

async fn run_loop(config: &ClusterConfig, args: &RunArgs, printer: Printer) -> Result<ExitStatus> {
    let stop = stop_signal()?;
    let request = BackupRunRequest {
        store: args.store.clone(),
        full_every: args.full_every,
        delta_every: args.delta_every,
        segment_bytes: args.segment_bytes,
        endpoint: args.endpoint.clone(),
        compression_level: args.compression_level,
        labels: args.labels.iter().cloned().collect(),
        encrypt_to: args.encrypt_to.clone(),
        encrypt_to_file: args.encrypt_to_file.clone(),
        retention: retention(&args.retention),
        all_clusters: args.all_clusters,
        metrics_file: args.metrics_file.clone(),
        metrics_addr: args.metrics_addr,
        stop_grace: args.stop_grace,
        settings: settings(&args.store_flags),
        compact_after: args.compact_after,
        identity: identity_settings(&args.identity),
        compact_work_dir: args.compact_work_dir.clone(),
        object_lock_mode: lock_mode(&args.object_lock),
        object_lock_retain: args.object_lock.object_lock_retain,
        copy_to: args.copy.copy_to.clone(),
        copy_retention: copy_retention(&args.copy),
    };
    let printer = LinePrinter {
        json: printer.format().is_json(),
    };
    backup_run(config, &request, &printer, stop)
        .await
        .map_err(in_flag_words)?;
    Ok(ExitStatus::Success)
}
