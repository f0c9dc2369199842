//! Prints etcdops results: a table, etcdctl's `-w simple` lines, or JSON, in etcdops' own
//! conventions or etcdctl's (`--compat etcdctl`).
//!
//! The CLI parses its flags, calls the etcdops library, and hands the result to a
//! [`Printer`] chosen once from the command line: the etcdctl personality is this crate's
//! concern, not a branch in every command (ripgrep's split between argument parsing and its
//! printer crate). Any other tool built on etcdops can print the same way.
//!
//! ```no_run
//! use etcdops_printer::{Compat, OutputFormat, Printer};
//! use etcdops_printer::views::endpoint::StatusView;
//!
//! # async fn demo(client: &etcdops::client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let printer = Printer::new(Some(OutputFormat::Table), Compat::Etcdops, false);
//! let report = client.endpoints().status(etcdops::client::Targets::Configured).await?;
//! printer.print(&StatusView(report))?;
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod etcdctl;
pub mod etcdctl_table;
pub mod fields;
mod format;
pub mod output;
pub mod progress;
pub mod protobuf;
pub mod views;

pub use format::{Compat, OutputFormat};
pub use output::Render;

/// The output chosen once from the command line: its format and whose conventions it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Printer {
    format: OutputFormat,
    compat: Compat,
}

impl Printer {
    /// A printer for the format asked for (`-w`; none: `table`, or etcdctl's `simple` under
    /// its conventions) under `compat`'s conventions. `json` under etcdctl's is etcdctl's JSON,
    /// its IDs as hex strings with `hex` (etcdctl's `--hex`).
    pub fn new(requested: Option<OutputFormat>, compat: Compat, hex: bool) -> Self {
        let requested = requested.unwrap_or(match compat {
            Compat::Etcdops => OutputFormat::Table,
            Compat::Etcdctl => OutputFormat::Simple,
        });
        let format = match (compat, requested) {
            (Compat::Etcdctl, OutputFormat::Json) if hex => OutputFormat::EtcdctlJsonHex,
            (Compat::Etcdctl, OutputFormat::Json) => OutputFormat::EtcdctlJson,
            (Compat::Etcdctl, OutputFormat::Table) => OutputFormat::EtcdctlTable,
            (_, format) => format,
        };
        Printer { format, compat }
    }

    /// The format in force.
    pub fn format(&self) -> OutputFormat {
        self.format
    }

    /// Whose conventions the output follows.
    pub fn compat(&self) -> Compat {
        self.compat
    }

    /// Prints `value` to stdout in this printer's format, then its lines for stderr.
    pub fn print<T: Render>(&self, value: &T) -> std::io::Result<()> {
        output::print(self.format, value)?;
        for line in value.stderr_lines(self.format, self.compat) {
            eprintln!("{}", output::plain(&line));
        }
        Ok(())
    }

    /// Whether output follows etcdctl's conventions.
    pub fn is_etcdctl(&self) -> bool {
        self.compat == Compat::Etcdctl
    }
}
