//! `etcdops watch`: etcdctl's watch (its simple lines, its JSON per response, its
//! `-- COMMAND` with ETCD_WATCH_* variables) plus our own bounds (--until-rev, --timeout).
//! Without a bound it runs until SIGINT or SIGTERM, which end it cleanly (exit code 0); a
//! signal while a `-- COMMAND` runs is passed on to the command, which gets [`GRACE`] to end
//! before it is killed, so the watch never hangs on a hook. A broken stream is resumed on
//! another endpoint by the library, with one warning line.

use std::io::{self, BufWriter, Stdout, Write};

use anyhow::Result;
use etcdops::client::ClusterConfig;
use etcdops::kv::{
    EventKind, KeyEvent, KeyValueView, WatchBatch, WatchBound, WatchRequest, WatchSummary,
    watch_batches,
};

use super::{redaction_status, stop};
use crate::commands::ExitStatus;
use crate::flags::{OutputFormat, WatchArgs};
use crate::output::{json_line, text, warn};
use etcdops_printer::Printer;
use etcdops_printer::views::kv::{Bytes, etcdctl_header, etcdctl_kv, etcdctl_kv_json, event_line};
use etcdops_printer::views::kv::{json_value_bytes, redacted_warning, redaction_fails};
use etcdops_printer::views::kv::{value_bytes, value_text, write_pair};
use tokio::signal::unix::{SignalKind, signal};

/// How long a `-- COMMAND` still running when the watch is interrupted gets to end after the
/// signal is passed on to it, before it is killed.
const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// SIGINT and SIGTERM, listened to while a command runs.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

/// Where the printed batches go, and what went wrong there.
struct BatchWriter<'a> {
    out: BufWriter<Stdout>,
    format: OutputFormat,
    bytes: Bytes,
    /// JSON Lines (an unbounded watch) rather than one document.
    lines: bool,
    first: bool,
    command: &'a [String],
    redacted: u64,
    /// Events printed.
    events: u64,
    io_error: Option<io::Error>,
    /// etcdctl's message when the command of `-- COMMAND` failed.
    command_failed: Option<String>,
    /// Signals to pass on to a running command.
    signals: Signals,
    /// A signal came while a command ran: the watch ends as interrupted.
    interrupted: bool,
}

impl BatchWriter<'_> {
    fn batch(&mut self, batch: &WatchBatch) -> io::Result<()> {
        let revision = batch.header.revision;
        let format = self.format;
        // etcdctl's line, before the response (in its JSON too); our JSON has its own.
        let ours_json = format == OutputFormat::Json;
        if batch.progress_notify && !ours_json {
            writeln!(self.out, "progress notify: {revision}")?;
        }
        self.events += batch.events.len() as u64;
        for event in &batch.events {
            if event.value_encoding != Some(etcdops::kv::Encoding::Redacted) {
                continue;
            }
            self.redacted += 1;
            // A watch without an end cannot fail at its end: it says so at once.
            if self.lines && redaction_fails(format) {
                self.out.flush()?;
                warn(&format!(
                    "{} ({})",
                    redacted_warning(1),
                    text(&event.key, event.key_encoding)
                ));
            }
        }
        if batch.compact_revision != 0 {
            // etcd's cancellation: etcdctl prints it in its JSON only.
            if format.is_etcdctl_json() {
                writeln!(self.out, "{}", etcdctl_watch_json(batch, false))?;
            }
            return self.out.flush();
        }
        match format {
            _ if format.is_etcdctl_json() => {
                // etcdctl's --hex leaves watch's JSON as it is (numeric IDs).
                writeln!(self.out, "{}", etcdctl_watch_json(batch, false))?;
            }
            _ if format.is_json() && self.lines => {
                if batch.progress_notify {
                    let progress = serde_json::json!({"kind": "progress", "revision": revision});
                    writeln!(self.out, "{progress}")?;
                }
                for event in &batch.events {
                    writeln!(self.out, "{}", json_line(event)?)?;
                }
            }
            _ if format.is_json() => {
                for event in &batch.events {
                    let sep = if self.first { "" } else { "," };
                    self.first = false;
                    write!(self.out, "{sep}\n{}", json_line(event)?)?;
                }
            }
            OutputFormat::Simple => {
                for event in &batch.events {
                    self.simple_event(event)?;
                }
            }
            _ => {
                for event in &batch.events {
                    writeln!(self.out, "{}", event_line(event))?;
                    if let Some(prev) = &event.prev {
                        let value = prev.value.as_deref().unwrap_or_default();
                        writeln!(
                            self.out,
                            "  was: {}",
                            value_text(value, prev.value_encoding)
                        )?;
                    }
                }
            }
        }
        self.out.flush()
    }

    /// etcdctl's lines of one event: its type, the previous pair (--prev-kv), the pair.
    fn simple_event(&mut self, event: &KeyEvent) -> io::Result<()> {
        let kind = match event.kind {
            EventKind::Put => "PUT",
            EventKind::Delete => "DELETE",
        };
        writeln!(self.out, "{kind}")?;
        if let Some(prev) = &event.prev {
            write_view(&mut self.out, self.bytes, prev)?;
        }
        write_pair(
            &mut self.out,
            self.bytes,
            (&event.key, event.key_encoding, &event.bytes.key),
            (
                event.value.as_deref(),
                event.value_encoding,
                value_bytes(&event.bytes.value, &event.value),
            ),
            false,
        )
    }

    /// Runs `-- COMMAND` once per event of `batch`, as etcdctl does after printing it
    /// (ETCD_WATCH_VALUE left unset for a redacted Secret). `Ok(false)`: a signal came
    /// while it ran, and was passed on.
    fn run_commands(&mut self, batch: &WatchBatch) -> std::result::Result<bool, String> {
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
                Ok(child) => match self.wait(child) {
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
    fn wait(
        &mut self,
        mut child: tokio::process::Child,
    ) -> Option<io::Result<std::process::ExitStatus>> {
        let handle = tokio::runtime::Handle::current();
        let signals = &mut self.signals;
        let signal = tokio::task::block_in_place(|| {
            handle.block_on(async {
                tokio::select! {
                    status = child.wait() => Err(status),
                    _ = signals.int.recv() => Ok("INT"),
                    _ = signals.term.recv() => Ok("TERM"),
                }
            })
        });
        let name = match signal {
            Err(status) => return Some(status),
            Ok(name) => name,
        };
        self.interrupted = true;
        let group = child.id();
        let forwarded = group.is_some_and(|pid| signal_group(name, pid));
        tokio::task::block_in_place(|| {
            handle.block_on(async {
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
            })
        });
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

/// A key-value pair (a previous one) as etcdctl's simple printer writes it.
fn write_view(out: &mut impl Write, bytes: Bytes, kv: &KeyValueView) -> io::Result<()> {
    write_pair(
        out,
        bytes,
        (&kv.key, kv.key_encoding, &kv.bytes.key),
        (
            kv.value.as_deref(),
            kv.value_encoding,
            value_bytes(&kv.bytes.value, &kv.value),
        ),
        false,
    )
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

/// Bytes as Go's `%q` writes them: double-quoted, `\"` and `\\`, `\n` and the other C escapes,
/// `\xNN` for bytes that are not UTF-8 and for other ASCII controls, `\uNNNN` for
/// non-printable characters beyond ASCII (controls, separators, format marks).
pub(crate) fn go_quote(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                }
                c if is_go_printable(c) => out.push(c),
                c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push_str(&format!("\\U{:08x}", c as u32)),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint` as far as std can tell: letters, marks, numbers, punctuation,
/// symbols and the ASCII space; not controls, other spaces, format marks or private use.
fn is_go_printable(c: char) -> bool {
    let code = c as u32;
    let format_mark = matches!(code,
        0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e | 0x200b..=0x200f
        | 0x202a..=0x202e | 0x2060..=0x206f | 0xfeff | 0xfff9..=0xfffb);
    let private = matches!(code, 0xe000..=0xf8ff | 0xf0000..);
    c == ' ' || !(c.is_control() || c.is_whitespace() || format_mark || private)
}

/// One watch response as etcdctl's `-w json` prints it (`clientv3.WatchResponse`): Go field
/// names, events' `type` left out for PUT (0), bytes as base64.
fn etcdctl_watch_json(batch: &WatchBatch, hex: bool) -> String {
    let events: Vec<String> = batch
        .events
        .iter()
        .map(|e| {
            let mut fields = Vec::new();
            if e.kind == EventKind::Delete {
                fields.push("\"type\":1".to_string());
            }
            let kv = etcdctl_kv_json(
                &e.bytes.key,
                (e.create_revision, e.revision, e.version),
                json_value_bytes(&e.bytes.value),
                e.bytes.lease,
            );
            fields.push(format!("\"kv\":{kv}"));
            if let Some(prev) = &e.prev {
                fields.push(format!("\"prev_kv\":{}", etcdctl_kv(prev)));
            }
            format!("{{{}}}", fields.join(","))
        })
        .collect();
    let events = format!("[{}]", events.join(","));
    let canceled = batch.compact_revision != 0;
    format!(
        "{{\"Header\":{},\"Events\":{events},\"CompactRevision\":{},\"Canceled\":{canceled},\"Created\":false}}",
        etcdctl_header(&batch.header, hex),
        batch.compact_revision,
    )
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
    let format = printer.format;
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
    let stopped = interrupted()?;
    let mut printer = BatchWriter {
        signals: Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        },
        interrupted: false,
        out: BufWriter::new(io::stdout()),
        format,
        bytes: Bytes::of_stdout(hex),
        lines: unbounded,
        first: true,
        command: &args.command,
        redacted: 0,
        events: 0,
        io_error: None,
        command_failed: None,
    };
    let document = format.is_json() && !format.is_etcdctl_json() && !unbounded;
    if document {
        write!(printer.out, "{{\"events\":[")?;
    }
    let result = {
        let mut on_batch = |batch: WatchBatch| {
            if let Err(e) = printer.batch(&batch) {
                return Err(stop(&mut printer.io_error, e));
            }
            match printer.run_commands(&batch) {
                Ok(true) => Ok(()),
                Ok(false) => Err(etcdops::client::ClientError::Refused {
                    reason: "interrupted".into(),
                }),
                Err(message) => {
                    printer.command_failed = Some(message);
                    Err(etcdops::client::ClientError::Refused {
                        reason: "the command failed".into(),
                    })
                }
            }
        };
        let watching = watch_batches(config, &request, &mut on_batch);
        tokio::select! {
            result = watching => Some(result),
            _ = stopped => None,
        }
    };
    if let Some(e) = printer.io_error {
        return Err(e.into());
    }
    if let Some(message) = printer.command_failed {
        printer.out.flush()?;
        eprintln!("{}", text(&message, etcdops::kv::Encoding::Text));
        return Ok(ExitStatus::Failure);
    }
    let summary = match result {
        Some(result) if !printer.interrupted => result?,
        // Interrupted (while a command ran too): what was printed stands, and the document
        // is closed; a clean end.
        _ => WatchSummary {
            events: printer.events,
            ended_by: "interrupted",
        },
    };
    if document {
        writeln!(
            printer.out,
            "\n],\"summary\":{}}}",
            serde_json::to_string(&summary)?
        )?;
    }
    printer.out.flush()?;
    if unbounded {
        // Each redaction was told as it came.
        return Ok(ExitStatus::Success);
    }
    Ok(redaction_status(printer.redacted, format))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_as_go_quotes_them() {
        assert_eq!(go_quote(b"PUT"), "\"PUT\"");
        assert_eq!(go_quote(b"a\"b\nc"), "\"a\\\"b\\nc\"");
        assert_eq!(go_quote(b"k\x00\xff\x1b\\"), "\"k\\x00\\xff\\x1b\\\\\"");
        assert_eq!(
            go_quote("ü\u{202e}\u{a0}".as_bytes()),
            "\"ü\\u202e\\u00a0\""
        );
        assert_eq!(go_quote(b""), "\"\"");
    }
}
