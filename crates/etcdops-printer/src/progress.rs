//! A progress bar on stderr (bytes, rate, ETA), shown only on a terminal.

use std::io::IsTerminal;

use etcdops::snapshot::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Draws an indicatif bar for a transfer.
pub struct BarProgress {
    bar: ProgressBar,
}

impl BarProgress {
    /// A bar labelled `what`, or `None` when stderr is not a terminal or output must stay quiet.
    pub fn for_terminal(what: &'static str, quiet: bool) -> Option<BarProgress> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(what);
        Some(BarProgress { bar })
    }
}

impl Progress for BarProgress {
    fn start(&self, total: Option<u64>) {
        if let Some(total) = total {
            self.bar.set_length(total);
        }
        self.bar.reset();
    }

    fn advance(&self, bytes: u64) {
        self.bar.inc(bytes);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
