//! Printing results: one `Serialize` value per command, shown as a table, JSON or simple lines.
//! Data goes to stdout; warnings and errors go to stderr.

use std::io::{self, Write};

use comfy_table::Table;
use serde::Serialize;

use crate::flags::OutputFormat;

/// Borders as etcdctl draws them: `+---+` lines around the header and the table, `|` between
/// columns, no lines between rows.
const TABLE_STYLE: &str = "||--+-++|    ++++++";

/// A result that can be shown as a table and as etcdctl-style simple lines.
pub trait Render: Serialize {
    /// Column headers.
    fn headers(&self) -> Vec<&'static str>;
    /// Table rows, one cell per header.
    fn rows(&self) -> Vec<Vec<String>>;
    /// etcdctl-style `-w simple` lines.
    fn simple_lines(&self) -> Vec<String>;
}

/// Prints `value` in `format` to stdout.
pub fn print<T: Render>(format: OutputFormat, value: &T) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match format {
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut out, value)?;
            writeln!(out)?;
        }
        OutputFormat::Table => {
            let mut table = Table::new();
            table.load_preset(TABLE_STYLE);
            table.set_header(value.headers());
            for row in value.rows() {
                table.add_row(row);
            }
            writeln!(out, "{table}")?;
        }
        OutputFormat::Simple => {
            for line in value.simple_lines() {
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()
}

/// Bytes in SI units as etcdctl prints them (`20 kB`, `3.1 MB`).
pub fn human_bytes(bytes: i64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

/// An optional value as a cell: empty when absent.
pub fn cell<T: ToString>(value: &Option<T>) -> String {
    value.as_ref().map(ToString::to_string).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_print_like_etcdctl() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(20480), "20 kB");
        assert_eq!(human_bytes(3_145_728), "3.1 MB");
        assert_eq!(human_bytes(2_147_483_648), "2.1 GB");
    }
}
