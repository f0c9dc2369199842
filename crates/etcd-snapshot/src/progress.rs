//! Progress reporting without printing: the library calls a [`Progress`]; the CLI draws a bar.

/// Receives progress of a long transfer (save, verify, download).
pub trait Progress: Send + Sync {
    /// The transfer starts; `total` bytes are expected when known.
    fn start(&self, total: Option<u64>);
    /// `bytes` more bytes were processed.
    fn advance(&self, bytes: u64);
    /// The transfer ended (successfully or not).
    fn finish(&self);
}

/// A [`Progress`] that shows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _total: Option<u64>) {}
    fn advance(&self, _bytes: u64) {}
    fn finish(&self) {}
}
