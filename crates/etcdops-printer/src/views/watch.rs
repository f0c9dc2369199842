//! How `watch` prints its batches as they come: etcdctl's lines (exact bytes to a pipe,
//! escaped on a terminal, or hex), our event lines, JSON Lines for a watch without an end,
//! one JSON document for a bounded one, or etcdctl's JSON.

use std::io::{self, Write};

use etcdops::kv::{EventKind, KeyEvent, WatchBatch, WatchSummary};

use super::kv::{
    Bytes, etcdctl_header, etcdctl_kv, etcdctl_kv_json, event_line, json_value_bytes,
    redacted_warning, redaction_fails, value_bytes, value_text, write_pair, write_simple_kv,
};
use crate::output::{json_line, text, warn};
use crate::{OutputFormat, Printer};

/// Writes a watch's batches to `out` in one format, and counts what it wrote.
pub struct WatchPrinter<W: Write> {
    out: W,
    printer: Printer,
    bytes: Bytes,
    /// JSON Lines (a watch without an end) rather than one document.
    lines: bool,
    first: bool,
    redacted: u64,
    events: u64,
}

impl<W: Write> WatchPrinter<W> {
    /// A printer of batches to `out`; `unbounded` for a watch with no end (no revision or
    /// time to stop at), whose JSON is JSON Lines and whose redactions are told at once.
    pub fn new(out: W, printer: Printer, bytes: Bytes, unbounded: bool) -> Self {
        WatchPrinter {
            out,
            printer,
            bytes,
            lines: unbounded,
            first: true,
            redacted: 0,
            events: 0,
        }
    }

    /// Whether the output is one JSON document (opened by [`Self::begin`], closed by
    /// [`Self::end`]).
    fn document(&self) -> bool {
        let format = self.printer.format();
        format.is_json() && !format.is_etcdctl_json() && !self.lines
    }

    /// What comes before the first batch: the opening of our JSON document.
    pub fn begin(&mut self) -> io::Result<()> {
        if self.document() {
            write!(self.out, "{{\"events\":[")?;
        }
        Ok(())
    }

    /// What comes after the last batch: the end of our JSON document with the summary.
    pub fn end(&mut self, summary: &WatchSummary) -> io::Result<()> {
        if self.document() {
            let summary = serde_json::to_string(summary).map_err(io::Error::other)?;
            writeln!(self.out, "\n],\"summary\":{summary}}}")?;
        }
        self.out.flush()
    }

    /// Flushes what was written (before a message on stderr).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Events printed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Redacted Secret values so far.
    pub fn redacted(&self) -> u64 {
        self.redacted
    }

    /// Writes one batch (and a progress notification or etcd's cancellation) and flushes it.
    pub fn batch(&mut self, batch: &WatchBatch) -> io::Result<()> {
        let revision = batch.header.revision;
        let format = self.printer.format();
        // etcdctl's line, before the response (in its JSON too); our JSON has its own.
        let ours_json = format == OutputFormat::Json;
        if batch.progress_notify && !ours_json {
            writeln!(self.out, "progress notify: {revision}")?;
        }
        self.events += batch.events.len() as u64;
        for event in &batch.events {
            // The previous value (--prev-kv) counts too: its notice stands where its bytes
            // would, after a Secret's encryption or in its deletion.
            let redacted =
                |e: Option<etcdops::kv::Encoding>| e == Some(etcdops::kv::Encoding::Redacted);
            let prev_redacted = event
                .prev
                .as_ref()
                .is_some_and(|prev| redacted(prev.value_encoding));
            if !redacted(event.value_encoding) && !prev_redacted {
                continue;
            }
            self.redacted += 1;
            // A watch without an end cannot fail at its end: it says so at once.
            if self.lines && redaction_fails(self.printer) {
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
            write_simple_kv(&mut self.out, self.bytes, prev, false)?;
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
