//! The distinct live keys of a db, counted in bounded memory: `snapshot status` walks the
//! `key` bucket in revision order, so telling a key's last revision needs every key seen. One
//! 64-bit entry per revision is kept; past [`RUN`] entries they are sorted, cut to each key's
//! last revision and spilled as a sorted run to an unnamed temporary file, and the runs are
//! merged at the end. Memory stays at about one run (8 MiB) whatever the db's size; the
//! temporary file takes 8 bytes per distinct key of each run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Entries kept in memory before a run is spilled (8 MiB).
const RUN: usize = 1 << 20;
/// Entries read at a time from each spilled run while merging (64 KiB).
const READ_AHEAD: usize = 8 << 10;

/// The live-key count being gathered during a walk.
#[derive(Debug)]
pub(crate) struct LiveKeys {
    current: Vec<u64>,
    /// Entries per run ([`RUN`]; smaller in tests).
    run: usize,
    /// Where the runs go (the system's temporary dir unless set).
    spill_dir: Option<PathBuf>,
    spill: Option<File>,
    /// Entries of each spilled run, in order (the file holds them one after the other).
    runs: Vec<u64>,
    /// The first error spilling a run met (reported by [`LiveKeys::count`]).
    failed: Option<io::Error>,
}

/// A revision's entry: a 64-bit hash of its key, the lowest bit set for a tombstone (a
/// collision would undercount by one).
pub(crate) fn entry(user_key: &[u8], tombstone: bool) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(user_key);
    (hasher.finish() & !1) | u64::from(tombstone)
}

impl LiveKeys {
    pub(crate) fn new() -> Self {
        Self::spilling_to(None, RUN)
    }

    fn spilling_to(spill_dir: Option<PathBuf>, run: usize) -> Self {
        LiveKeys {
            current: Vec::new(),
            run,
            spill_dir,
            spill: None,
            runs: Vec::new(),
            failed: None,
        }
    }

    /// The next revision's entry (see [`entry`]), in revision order.
    pub(crate) fn push(&mut self, entry: u64) {
        self.current.push(entry);
        if self.current.len() >= self.run && self.failed.is_none() {
            if let Err(e) = self.spill_run() {
                self.failed = Some(e);
            }
        }
    }

    fn spill_run(&mut self) -> io::Result<()> {
        last_per_key(&mut self.current);
        let file = match &mut self.spill {
            Some(file) => file,
            None => {
                let dir = self.spill_dir.clone().unwrap_or_else(std::env::temp_dir);
                let (file, _) = etcd_common::private::unnamed_file_in(&dir)?;
                self.spill.insert(file)
            }
        };
        let bytes: Vec<u8> = self.current.iter().flat_map(|e| e.to_le_bytes()).collect();
        file.write_all(&bytes)?;
        self.runs.push(self.current.len() as u64);
        self.current.clear();
        Ok(())
    }

    /// The keys whose last revision is not a tombstone.
    pub(crate) fn count(mut self) -> io::Result<u64> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        last_per_key(&mut self.current);
        let Some(file) = &self.spill else {
            return Ok(self.current.iter().filter(|e| *e & 1 == 0).count() as u64);
        };
        // Later runs hold later revisions: the last source holding a key has its last one.
        let mut sources = Vec::with_capacity(self.runs.len() + 1);
        let mut offset = 0;
        for &entries in &self.runs {
            sources.push(Run::spilled(file, offset, entries));
            offset += entries * 8;
        }
        sources.push(Run::in_memory(std::mem::take(&mut self.current)));
        let mut heads = BinaryHeap::new();
        for (index, source) in sources.iter_mut().enumerate() {
            if let Some(e) = source.next()? {
                heads.push(Reverse((e >> 1, index, e)));
            }
        }
        let mut live = 0;
        while let Some(Reverse((key, index, e))) = heads.pop() {
            let mut last = (index, e);
            if let Some(next) = sources[index].next()? {
                heads.push(Reverse((next >> 1, index, next)));
            }
            while let Some(&Reverse((same, other, e))) = heads.peek()
                && same == key
            {
                heads.pop();
                last = last.max((other, e));
                if let Some(next) = sources[other].next()? {
                    heads.push(Reverse((next >> 1, other, next)));
                }
            }
            if last.1 & 1 == 0 {
                live += 1;
            }
        }
        Ok(live)
    }
}

/// Sorts `entries` (in revision order) by key, keeping only each key's last entry.
fn last_per_key(entries: &mut Vec<u64>) {
    // Stable: each key's entries stay in revision order, its last one last.
    entries.sort_by_key(|e| e >> 1);
    let mut kept = 0;
    for i in 0..entries.len() {
        if i + 1 < entries.len() && entries[i + 1] >> 1 == entries[i] >> 1 {
            continue;
        }
        entries[kept] = entries[i];
        kept += 1;
    }
    entries.truncate(kept);
}

/// One sorted run, read in order.
struct Run<'a> {
    file: Option<&'a File>,
    offset: u64,
    left: u64,
    buffer: Vec<u64>,
    at: usize,
}

impl<'a> Run<'a> {
    fn spilled(file: &'a File, offset: u64, entries: u64) -> Self {
        Run {
            file: Some(file),
            offset,
            left: entries,
            buffer: Vec::new(),
            at: 0,
        }
    }

    fn in_memory(entries: Vec<u64>) -> Self {
        Run {
            file: None,
            offset: 0,
            left: 0,
            buffer: entries,
            at: 0,
        }
    }

    fn next(&mut self) -> io::Result<Option<u64>> {
        if self.at == self.buffer.len() {
            let Some(file) = self.file else {
                return Ok(None);
            };
            if self.left == 0 {
                return Ok(None);
            }
            let take = self.left.min(READ_AHEAD as u64) as usize;
            let mut bytes = vec![0u8; take * 8];
            file.read_exact_at(&mut bytes, self.offset)?;
            self.offset += bytes.len() as u64;
            self.left -= take as u64;
            self.buffer = bytes
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
                .collect();
            self.at = 0;
        }
        let e = self.buffer[self.at];
        self.at += 1;
        Ok(Some(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of 1,000 entries: the tests spill without millions of entries.
    const TEST_RUN: usize = 1_000;

    fn count(entries: &[u64]) -> u64 {
        let mut live = LiveKeys::new();
        for &e in entries {
            live.push(e);
        }
        live.count().unwrap()
    }

    /// The count by brute force: each key's last entry.
    fn expected(entries: &[u64]) -> u64 {
        let mut last = std::collections::HashMap::new();
        for &e in entries {
            last.insert(e >> 1, e & 1);
        }
        last.values().filter(|&&t| t == 0).count() as u64
    }

    #[test]
    fn live_keys_are_the_keys_whose_last_revision_is_not_a_tombstone() {
        let (put, tomb) = (|k: u64| k << 1, |k: u64| (k << 1) | 1);
        // a: put, deleted. b: put, deleted, put again. c: put twice. d: only deleted.
        // e: deleted, then put. Keys whose hashes sort apart from their revision order.
        let revisions = [
            put(9),
            put(3),
            tomb(9),
            put(7),
            tomb(3),
            put(7),
            tomb(1),
            put(3),
            tomb(5),
            put(5),
        ];
        assert_eq!(count(&revisions), 3);
        assert_eq!(count(&[]), 0);
        assert_eq!(count(&[tomb(u64::MAX >> 1)]), 0);
        assert_eq!(count(&[put(0), put(u64::MAX >> 1)]), 2);
    }

    #[test]
    fn spilled_runs_count_the_same_as_memory_and_the_last_run_wins() {
        // 3.5 runs' worth over 600 keys: keys recur across runs, deleted in one run and
        // put again in a later one (and the other way round).
        let mut entries = Vec::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..(TEST_RUN * 7 / 2) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = x % 600;
            let tombstone = x % 5 == 0;
            entries.push((key << 1) | u64::from(tombstone));
        }
        let want = expected(&entries);
        let dir = tempfile::tempdir().unwrap();
        let mut live = LiveKeys::spilling_to(Some(dir.path().to_path_buf()), TEST_RUN);
        for &e in &entries {
            live.push(e);
        }
        assert_eq!(live.runs.len(), 3, "three runs spilled, the rest in memory");
        assert_eq!(live.count().unwrap(), want);
        // A key put in the first run and deleted in the last: not live.
        let mut live = LiveKeys::spilling_to(None, TEST_RUN);
        live.push(42 << 1);
        for k in 0..TEST_RUN as u64 {
            live.push((1_000 + k) << 1);
        }
        live.push((42 << 1) | 1);
        assert_eq!(live.runs.len(), 1);
        assert_eq!(live.count().unwrap(), TEST_RUN as u64);
    }

    #[test]
    fn a_spill_that_cannot_be_written_is_an_error_not_a_wrong_count() {
        let mut live = LiveKeys::spilling_to(Some(PathBuf::from("/nonexistent/etcdops")), TEST_RUN);
        for k in 0..=TEST_RUN as u64 {
            live.push(k << 1);
        }
        assert!(live.count().is_err());
    }
}
