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
//! # async fn demo(config: &etcdops::client::ClusterConfig) -> Result<(), Box<dyn std::error::Error>> {
//! let printer = Printer::new(OutputFormat::Table, Compat::Etcdops);
//! let report = etcdops::endpoint::endpoint_status(config, etcdops::client::Targets::Configured).await?;
//! printer.print(&StatusView(report))?;
//! # Ok(())
//! # }
//! ```

pub mod etcdctl;
mod format;
pub mod output;
pub mod progress;
pub mod views;

pub use format::{Compat, OutputFormat};
pub use output::Render;

/// The output chosen once from the command line: its format and whose conventions it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Printer {
    /// Table, JSON (ours or etcdctl's) or simple lines.
    pub format: OutputFormat,
    /// etcdops' conventions or etcdctl's.
    pub compat: Compat,
}

impl Printer {
    /// A printer for `format` under `compat`'s conventions.
    pub fn new(format: OutputFormat, compat: Compat) -> Self {
        Printer { format, compat }
    }

    /// Prints `value` to stdout in this printer's format.
    pub fn print<T: Render>(&self, value: &T) -> std::io::Result<()> {
        output::print(self.format, value)
    }

    /// Whether output follows etcdctl's conventions.
    pub fn is_etcdctl(&self) -> bool {
        self.compat == Compat::Etcdctl
    }
}
