//! Fewer, larger reads for a walk over a whole db. A walk reads one page per call; on a file that
//! is one system call per 4 KiB page (370,000 for a 1.45 GiB db), which costs more than the
//! walk's own work. Leaves that bbolt wrote in key order lie one after the other in the file,
//! so a walk mostly reads forward: [`Readahead`] keeps two windows of the file, and a window
//! whose reads go on where it ends grows (up to [`MAX_WINDOW`]). A read elsewhere (a branch
//! page, a scattered leaf) replaces the window used longest ago and starts small again, so a
//! db whose pages are scattered is read about as it would be without it.

use std::sync::Mutex;

use crate::PageSource;

/// The largest window: bytes read at once while reads go on in order.
pub const MAX_WINDOW: usize = 256 << 10;

/// A page source read through two windows that grow while reads are sequential (see the
/// module's documentation). Reads larger than [`MAX_WINDOW`] go straight to the source.
pub struct Readahead<S> {
    source: S,
    windows: Mutex<[Window; 2]>,
}

#[derive(Default)]
struct Window {
    start: u64,
    bytes: Vec<u8>,
    /// Bytes the next read of this window asks for, when it goes on where this one ends.
    next_len: usize,
    /// When this window was last used (a counter): the older one is replaced.
    used: u64,
}

impl Window {
    fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    fn holds(&self, offset: u64, len: usize) -> bool {
        offset >= self.start && offset.saturating_add(len as u64) <= self.end()
    }
}

impl<S: PageSource> Readahead<S> {
    /// `source`, read through windows.
    pub fn new(source: S) -> Self {
        Readahead {
            source,
            windows: Mutex::new(Default::default()),
        }
    }
}

impl<S: PageSource> PageSource for Readahead<S> {
    fn size(&self) -> u64 {
        self.source.size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        if buf.len() > MAX_WINDOW {
            return self.source.read_exact_at(buf, offset);
        }
        // A poisoned lock only means another reader panicked: the windows are still whole
        // (they are replaced only once a read succeeded).
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let clock = windows[0].used.max(windows[1].used) + 1;
        if let Some(window) = windows.iter_mut().find(|w| w.holds(offset, buf.len())) {
            let at = (offset - window.start) as usize;
            buf.copy_from_slice(&window.bytes[at..at + buf.len()]);
            window.used = clock;
            return Ok(());
        }
        // Reads that go on where a window ends grow it; any other read replaces the older one.
        let (index, len) = match windows
            .iter()
            .position(|w| !w.bytes.is_empty() && offset == w.end())
        {
            Some(index) => (index, windows[index].next_len),
            None => {
                let older = usize::from(windows[1].used < windows[0].used);
                (older, buf.len())
            }
        };
        let left = self.source.size().saturating_sub(offset);
        let len = len.max(buf.len()).min(MAX_WINDOW);
        let len = usize::try_from(left).map_or(len, |left| len.min(left).max(buf.len()));
        let window = &mut windows[index];
        let mut bytes = std::mem::take(&mut window.bytes);
        bytes.resize(len, 0);
        if let Err(e) = self.source.read_exact_at(&mut bytes, offset) {
            *window = Window::default();
            return Err(e);
        }
        buf.copy_from_slice(&bytes[..buf.len()]);
        *window = Window {
            start: offset,
            bytes,
            next_len: (len * 2).min(MAX_WINDOW),
            used: clock,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Bytes in memory that count the reads made of them.
    struct Counted {
        bytes: Vec<u8>,
        reads: AtomicUsize,
    }

    impl PageSource for Counted {
        fn size(&self) -> u64 {
            self.bytes.size()
        }

        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.bytes.read_exact_at(buf, offset)
        }
    }

    fn counted(len: usize) -> Readahead<Counted> {
        Readahead::new(Counted {
            bytes: (0..len).map(|i| (i * 7 % 253) as u8).collect(),
            reads: AtomicUsize::new(0),
        })
    }

    fn read(source: &Readahead<Counted>, offset: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0; len];
        source.read_exact_at(&mut buf, offset).unwrap();
        buf
    }

    fn expected(source: &Readahead<Counted>, offset: u64, len: usize) -> Vec<u8> {
        let at = offset as usize;
        source.source.bytes[at..at + len].to_vec()
    }

    #[test]
    fn forward_reads_interrupted_by_others_take_few_reads_and_return_the_bytes() {
        let page = 4096;
        let source = counted(4 << 20);
        // Leaves in order, a "branch page" read far away every 50 leaves.
        let mut reads = 0;
        for leaf in 0..800u64 {
            if leaf % 50 == 0 {
                let branch = (4 << 20) - page as u64 * (1 + leaf / 50);
                assert_eq!(read(&source, branch, page), expected(&source, branch, page));
                reads += 1;
            }
            let at = leaf * page as u64;
            assert_eq!(read(&source, at, page), expected(&source, at, page));
            reads += 1;
        }
        let made = source.source.reads.load(Ordering::Relaxed);
        assert!(
            made * 10 < reads,
            "{made} reads of the source for {reads} page reads"
        );
    }

    #[test]
    fn scattered_reads_read_no_more_than_asked() {
        let page = 4096;
        let source = counted(4 << 20);
        let mut read_bytes = 0;
        for i in 0..200u64 {
            let at = (i * 7919 % 1000) * page as u64;
            assert_eq!(read(&source, at, page), expected(&source, at, page));
            read_bytes += page;
        }
        // Nothing went on where a window ended: every source read was one page.
        let held: usize = {
            let windows = source.windows.lock().unwrap();
            windows.iter().map(|w| w.bytes.len()).max().unwrap()
        };
        assert_eq!(held, page);
        assert!(source.source.reads.load(Ordering::Relaxed) <= read_bytes / page);
    }

    #[test]
    fn the_end_of_the_db_large_reads_and_errors_are_the_sources() {
        let source = counted(10_000);
        // Windows never reach past the end.
        assert_eq!(read(&source, 0, 4096), expected(&source, 0, 4096));
        assert_eq!(read(&source, 4096, 4096), expected(&source, 4096, 4096));
        assert_eq!(read(&source, 8192, 1808), expected(&source, 8192, 1808));
        let mut past = vec![0; 4096];
        assert!(source.read_exact_at(&mut past, 8192).is_err());
        assert!(source.read_exact_at(&mut past, u64::MAX - 10).is_err());
        // Larger than a window: read straight.
        let big = counted(MAX_WINDOW * 3);
        let len = MAX_WINDOW + 1;
        assert_eq!(read(&big, 5, len), expected(&big, 5, len));
        assert_eq!(big.size(), (MAX_WINDOW * 3) as u64);
    }
}
