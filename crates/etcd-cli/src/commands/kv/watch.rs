//! `etcdops watch`: etcdctl's watch (its simple lines, its JSON per response, its
//! `-- COMMAND` with ETCD_WATCH_* variables) plus our own bounds (--until-rev, --timeout).
//! Without a bound it runs until SIGINT or SIGTERM, which end it cleanly (exit code 0); a
//! signal while a `-- COMMAND` runs is passed on to the command, which gets [`GRACE`] to end
//! before it is killed, so the watch never hangs on a hook. A broken stream is resumed on
//! another endpoint by the library, with one warning line.

use std::io::{self, BufWriter, Stdout};

use anyhow::Result;
use etcdops::client::{Client, ClusterConfig};
use etcdops::kv::{EventKind, WatchBatch, WatchBound, WatchRequest, WatchSummary};
use futures::StreamExt;

use super::redaction_status;
use crate::commands::ExitStatus;
use crate::flags::WatchArgs;
use crate::output::{text, warn};
use etcdops_printer::Printer;
use etcdops_printer::etcdctl::go_quote;
use etcdops_printer::views::kv::Bytes;
use etcdops_printer::views::kv::value_bytes;
use etcdops_printer::views::watch::WatchPrinter;
use tokio::signal::unix::{SignalKind, signal};

/// How long a `-- COMMAND` still running when the watch is interrupted gets to end after the
/// signal is passed on to it, before it is killed.
const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// SIGINT and SIGTERM, listened to while a command runs.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

/// Where the printed batches go, and the commands run for their events.
struct BatchWriter<'a> {
    /// The batches' printer.
    out: WatchPrinter<BufWriter<Stdout>>,
    command: &'a [String],
    /// Signals to pass on to a running command.
    signals: Signals,
}

impl BatchWriter<'_> {
    /// Runs `-- COMMAND` once per event of `batch`, as etcdctl does after printing it
    /// (ETCD_WATCH_VALUE left unset for a redacted Secret). `Ok(false)`: a signal came
    /// while it ran, and was passed on.
    async fn run_commands(&mut self, batch: &WatchBatch) -> std::result::Result<bool, String> {
        if self.command.is_empty() {
            return Ok(true);
        }
        for event in &batch.events {
            let kind = match event.kind {
                EventKind::Put => "PUT",
                EventKind::Delete => "DELETE",
            };
            let mut command = tokio::process::Command::new(&self.command[0]);
            // A process group of its own: a signal passed on reaches the whole hook (a shell
            // and what it runs), and none of it outlives the watch.
            command
                .process_group(0)
                .args(&self.command[1..])
                .env("ETCD_WATCH_REVISION", batch.header.revision.to_string())
                .env("ETCD_WATCH_EVENT_TYPE", go_quote(kind.as_bytes()))
                .env("ETCD_WATCH_KEY", go_quote(&event.bytes.key));
            if event.value_encoding == Some(etcdops::kv::Encoding::Redacted) {
                command.env_remove("ETCD_WATCH_VALUE");
            } else {
                let value = value_bytes(&event.bytes.value, &event.value);
                command.env("ETCD_WATCH_VALUE", go_quote(value));
            }
            let status = match command.spawn() {
                Ok(child) => match self.wait(child).await {
                    Some(status) => status,
                    None => return Ok(false),
                },
                Err(e) => Err(e),
            };
            let failure = match status {
                Ok(status) if status.success() => continue,
                Ok(status) => exit_text(status),
                Err(e) if e.kind() == io::ErrorKind::NotFound => format!(
                    "exec: {}: executable file not found in $PATH",
                    go_quote(self.command[0].as_bytes())
                ),
                Err(e) => e.to_string(),
            };
            let names: Vec<String> = self
                .command
                .iter()
                .map(|a| go_quote(a.as_bytes()))
                .collect();
            return Err(format!("command [{}] error ({failure})", names.join(" ")));
        }
        Ok(true)
    }

    /// Waits for `child`; on SIGINT or SIGTERM meanwhile, passes the signal on, gives the
    /// child [`GRACE`] to end, kills it after that, and answers `None`.
    async fn wait(
        &mut self,
        mut child: tokio::process::Child,
    ) -> Option<io::Result<std::process::ExitStatus>> {
        let signals = &mut self.signals;
        let name = tokio::select! {
            status = child.wait() => return Some(status),
            _ = signals.int.recv() => "INT",
            _ = signals.term.recv() => "TERM",
        };
        let group = child.id();
        let forwarded = group.is_some_and(|pid| signal_group(name, pid));
        let ended = forwarded
            && tokio::time::timeout(GRACE, child.wait())
                .await
                .is_ok_and(|s| s.is_ok());
        if !ended {
            if !group.is_some_and(|pid| signal_group("KILL", pid)) {
                let _ = child.start_kill();
            }
            let _ = child.wait().await;
        }
        None
    }
}

/// Sends the signal `name` (`TERM`) to the process group `group`; whether it was sent.
fn signal_group(name: &str, group: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-s", name, "--", &format!("-{group}")])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// How Go's `os/exec` describes a command's failure (`exit status 1`, `signal: killed`).
fn exit_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => {
            let name = match signal {
                1 => "hangup".to_string(),
                2 => "interrupt".to_string(),
                9 => "killed".to_string(),
                13 => "broken pipe".to_string(),
                15 => "terminated".to_string(),
                other => format!("signal {other}"),
            };
            format!("signal: {name}")
        }
        (None, None) => status.to_string(),
    }
}

/// Resolves on SIGINT or SIGTERM (registered at once, so no signal in between is missed).
fn interrupted() -> Result<impl std::future::Future<Output = ()>> {
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}

/// The key and range of `watch`: the arguments, else etcdctl's ETCDCTL_WATCH_KEY and
/// ETCDCTL_WATCH_RANGE_END.
fn key_and_range(args: &WatchArgs) -> Result<(String, Option<String>)> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (&args.key, env("ETCDCTL_WATCH_KEY")) {
        (Some(key), _) => Ok((key.clone(), args.range_end.clone())),
        (None, Some(key)) => Ok((key, env("ETCDCTL_WATCH_RANGE_END"))),
        (None, None) => anyhow::bail!("bad number of arguments: give the key to watch"),
    }
}

/// `watch`; `hex` is the global `--hex` (keys and values as `\xNN` in simple).
pub async fn run_watch(
    config: &ClusterConfig,
    args: &WatchArgs,
    printer: Printer,
    hex: bool,
) -> Result<ExitStatus> {
    let output = printer;
    // No fields or protobuf output of a watch here: refused, in both modes, as other commands
    // without one.
    match printer.format() {
        etcdops_printer::OutputFormat::Fields => {
            return Err(etcdops_printer::output::no_fields().into());
        }
        etcdops_printer::OutputFormat::Protobuf => {
            return Err(etcdops_printer::output::no_protobuf().into());
        }
        _ => {}
    }
    // clap takes `--` with nothing after it for no command at all: etcdctl refuses it.
    if args.command.is_empty() && std::env::args_os().skip(1).any(|a| a == "--") {
        anyhow::bail!("bad arguments: `--` must be followed by the command to run for each event");
    }
    let (key, range_end) = key_and_range(args)?;
    let unbounded = args.until_rev.is_none() && args.timeout.is_none();
    let request = WatchRequest {
        key: key.into_bytes(),
        range_end: range_end.map(String::into_bytes),
        prefix: args.prefix,
        start_revision: args.rev,
        bound: WatchBound {
            until_revision: args.until_rev,
            timeout: args.timeout,
        },
        unbounded,
        prev_kv: args.prev_kv,
        progress_notify: args.progress_notify,
        show_secrets: args.show_secrets,
        on_resume: Some(|message: &str| warn(message)),
    };
    let mut stopped = std::pin::pin!(interrupted()?);
    let mut printer = BatchWriter {
        signals: Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        },
        out: WatchPrinter::new(
            BufWriter::new(io::stdout()),
            printer,
            Bytes::of_stdout(hex),
            unbounded,
        ),
        command: &args.command,
    };
    printer.out.begin()?;
    // An error, of etcd or of the output, returns at once: the stream dropped, the watch ends.
    let client = Client::new(config.clone());
    let mut batches = client.kv().watch_batches(&request);
    let ended = loop {
        let batch = tokio::select! {
            batch = batches.next() => batch,
            _ = &mut stopped => break None,
        };
        let Some(batch) = batch else {
            break batches.summary();
        };
        let batch = batch?;
        printer.out.batch(&batch)?;
        match printer.run_commands(&batch).await {
            Ok(true) => {}
            // A signal came while a command ran, and was passed on to it.
            Ok(false) => break None,
            Err(message) => {
                printer.out.flush()?;
                eprintln!("{}", text(&message, etcdops::kv::Encoding::Text));
                return Ok(ExitStatus::Failure);
            }
        }
    };
    // Interrupted (while a command ran too): what was printed stands, and the document is
    // closed; a clean end.
    let summary = ended.unwrap_or_else(|| WatchSummary {
        events: printer.out.events(),
        ended_by: "interrupted",
    });
    printer.out.end(&summary)?;
    if unbounded {
        // Each redaction was told as it came.
        return Ok(ExitStatus::Success);
    }
    Ok(redaction_status(printer.out.redacted(), output))
}
