//! Reading a bbolt db page by page from any [`PageSource`] (memory or a file read with
//! positioned reads): buckets (page-rooted and inline), branch and leaf pages, overflow pages,
//! key/value pairs in key order, and an integrity check in the spirit of bbolt's `tx.Check()`
//! done in the same pass as the walk. Memory stays bounded by the tree's depth times its
//! largest page (plus one bit per page for the check), whatever the db's size.
//!
//! Nothing read from the file is trusted: page IDs are checked against the high-water mark,
//! each page's header must name its own ID, offsets and lengths must stay inside their page,
//! and every walk remembers the pages it has entered, so a page referenced twice (or a cycle)
//! ends in an error instead of a loop.

use super::meta::{META_REGION, MetaSummary, check_meta_pages, chosen_freelist};
use super::page::{BUCKET_HEADER, BUCKET_LEAF_FLAG, FREELIST_PAGE, PAGE_HEADER, Page, u64_at};
use super::source::PageSource;
use crate::BoltError;

/// Branch pages and nested buckets deeper than this are refused: a real db is a few levels
/// deep, and the limit keeps recursion off the end of a small thread stack.
const MAX_DEPTH: usize = 64;
/// The integrity check stops collecting problems after this many.
const MAX_PROBLEMS: usize = 100;

/// A bbolt db, as seen through its newest valid meta page, read from `S`.
#[derive(Debug)]
pub struct BoltDb<S> {
    source: S,
    meta: MetaSummary,
    freelist: u64,
}

/// How the pages of a db are used, as one walk over every bucket finds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageUsage {
    /// The page size.
    pub page_size: u32,
    /// The high-water mark: pages the file holds (times `page_size`: bbolt's and etcd's
    /// db size).
    pub high_water: u64,
    /// Pages reached from the meta pages: the two meta pages, every bucket's branch, leaf
    /// and overflow pages, and the stored freelist page when there is one.
    pub reached: u64,
    /// Pages below the high-water mark that nothing reaches: free.
    pub free: u64,
}

/// At most this many runs of free pages are kept by [`BoltDb::walk_free_pages`]: a writer
/// needs a few, and a fragmented db of any size then costs at most 64 KiB to describe.
const MAX_FREE_RUNS: usize = 4096;

/// Pages below the high-water mark that nothing reaches (see [`BoltDb::walk_free_pages`]), as
/// runs of consecutive page IDs, lowest first (the first few thousand runs): where a writer
/// puts new pages, as bbolt reuses its free pages, rather than growing the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FreePages {
    runs: Vec<(u64, u64)>,
}

impl FreePages {
    /// Free pages from runs of (first page ID, page count).
    pub fn from_runs(runs: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut runs: Vec<(u64, u64)> = runs.into_iter().filter(|(_, n)| *n > 0).collect();
        runs.sort_unstable();
        FreePages { runs }
    }

    /// The runs left: (first page ID, page count), lowest first.
    pub fn runs(&self) -> &[(u64, u64)] {
        &self.runs
    }

    /// Pages left in the runs.
    pub fn count(&self) -> u64 {
        self.runs.iter().map(|(_, n)| n).sum()
    }

    /// Takes `pages` consecutive pages from the lowest run that holds them (as bbolt's
    /// freelist allocates); `None` when no run does.
    pub fn take(&mut self, pages: u64) -> Option<u64> {
        let at = self.runs.iter().position(|(_, n)| *n >= pages)?;
        let (start, n) = self.runs[at];
        if n == pages {
            self.runs.remove(at);
        } else {
            self.runs[at] = (start + pages, n - pages);
        }
        Some(start)
    }
}

/// One key/value pair of a bucket, borrowed from the page being walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The key.
    pub key: &'a [u8],
    /// The value; for a nested bucket, its bucket header (and inline page), which bbolt's
    /// `ForEach` hides (it passes a nil value).
    pub value: &'a [u8],
    /// Whether the value is a nested bucket.
    pub is_bucket: bool,
}

impl Entry<'_> {
    /// The root of the nested bucket this entry holds.
    pub fn bucket(&self) -> Result<Bucket, BoltError> {
        if !self.is_bucket {
            return Err(BoltError::Page {
                pgid: 0,
                reason: format!(
                    "key {:?} is not a bucket",
                    String::from_utf8_lossy(self.key)
                ),
            });
        }
        Ok(match nested_root(self.value)? {
            Root::Page(pgid) => Bucket::Page(pgid),
            Root::Inline(page) => Bucket::Inline(page.to_vec()),
        })
    }
}

/// A bucket: the root bucket of the db or one nested in it, by its root page (or, for an
/// inline bucket, a copy of its leaf page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bucket {
    /// Rooted at this page.
    Page(u64),
    /// An inline bucket's leaf page.
    Inline(Vec<u8>),
}

impl Bucket {
    fn as_root(&self) -> Root<'_> {
        match self {
            Bucket::Page(pgid) => Root::Page(*pgid),
            Bucket::Inline(bytes) => Root::Inline(bytes),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Root<'a> {
    Page(u64),
    Inline(&'a [u8]),
}

/// One bit per page.
struct PageSet(Vec<u64>);

impl PageSet {
    fn new(pages: u64) -> Self {
        PageSet(vec![0; usize::try_from(pages.div_ceil(64)).unwrap_or(0)])
    }

    fn get(&self, pgid: u64) -> Option<bool> {
        let word = self.0.get(usize::try_from(pgid / 64).ok()?)?;
        Some(word & (1 << (pgid % 64)) != 0)
    }

    /// Runs of clear bits from 2 (past the meta pages) to `end`, the first `max` of them.
    fn clear_runs(&self, end: u64, max: usize) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut id = 2;
        while id < end && runs.len() <= max {
            let word = self.0.get(usize::try_from(id / 64).unwrap_or(usize::MAX));
            if id % 64 == 0 && word == Some(&u64::MAX) {
                id += 64;
                continue;
            }
            if !self.get(id).unwrap_or(true) {
                match runs.last_mut() {
                    Some((start, n)) if *start + *n == id => *n += 1,
                    _ => runs.push((id, 1)),
                }
            }
            id += 1;
        }
        runs.truncate(max);
        runs
    }

    /// How many bits are set below `end`.
    fn count_below(&self, end: u64) -> u64 {
        let mut count = 0u64;
        for (i, word) in self.0.iter().enumerate() {
            let start = i as u64 * 64;
            if start >= end {
                break;
            }
            let kept = if end - start >= 64 {
                *word
            } else {
                word & ((1u64 << (end - start)) - 1)
            };
            count += u64::from(kept.count_ones());
        }
        count
    }

    /// Sets the bit; false when it was set already or lies outside the set.
    fn insert(&mut self, pgid: u64) -> bool {
        let Some(word) = usize::try_from(pgid / 64)
            .ok()
            .and_then(|i| self.0.get_mut(i))
        else {
            return false;
        };
        let bit = 1 << (pgid % 64);
        let fresh = *word & bit == 0;
        *word |= bit;
        fresh
    }
}

impl<S: PageSource> BoltDb<S> {
    /// Opens the db `source` holds (the whole file, without etcd's SHA-256 trailer).
    pub fn open(source: S) -> Result<Self, BoltError> {
        let size = source.size();
        let head_len = usize::try_from(size.min(META_REGION as u64)).unwrap_or(META_REGION);
        let mut head = vec![0u8; head_len];
        source
            .read_exact_at(&mut head, 0)
            .map_err(|e| read_error(0, head_len, &e))?;
        let meta = check_meta_pages(&head, size).map_err(BoltError::Meta)?;
        let freelist = chosen_freelist(&head, &meta);
        Ok(BoltDb {
            source,
            meta,
            freelist,
        })
    }

    /// Where the db's bytes come from.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Gives the source back.
    pub fn into_source(self) -> S {
        self.source
    }

    /// The meta page in use.
    pub fn meta(&self) -> MetaSummary {
        self.meta
    }

    /// The size bbolt reports for the db: high-water mark times page size.
    pub fn size(&self) -> u64 {
        self.meta.high_water_pgid * u64::from(self.meta.page_size)
    }

    /// The root bucket, whose entries are the top-level buckets.
    pub fn root(&self) -> Bucket {
        Bucket::Page(self.meta.root_pgid)
    }

    /// Reads page `pgid` with its overflow pages into `buf` (grown as needed, never shrunk, so
    /// a buffer reused from page to page costs no allocation) after checking it lies below
    /// the high-water mark and its header names it; returns the page's bytes, to parse with
    /// [`Page::parse`].
    pub fn read_page<'b>(&self, pgid: u64, buf: &'b mut Vec<u8>) -> Result<&'b [u8], BoltError> {
        let err = |reason: String| BoltError::Page { pgid, reason };
        let hwm = self.meta.high_water_pgid;
        if pgid < 2 {
            return Err(err("a meta page is referenced as a data page".into()));
        }
        if pgid >= hwm {
            return Err(err(format!("beyond the high-water mark {hwm}")));
        }
        let page_size = usize::try_from(self.meta.page_size).unwrap_or(usize::MAX);
        // Below the high-water mark, and check_meta_pages made sure hwm pages fit the data.
        let start = pgid * u64::from(self.meta.page_size);
        if buf.len() < page_size {
            buf.resize(page_size, 0);
        }
        self.source
            .read_exact_at(&mut buf[..page_size], start)
            .map_err(|e| read_error(start, page_size, &e))?;
        let header = Page::parse(&buf[..page_size]).map_err(|e| err(e.0))?;
        if header.id != pgid {
            return Err(err(format!("its header says page {}", header.id)));
        }
        let overflow = header.overflow;
        let span = 1 + u64::from(overflow);
        if pgid.saturating_add(span) > hwm {
            return Err(err(format!(
                "{overflow} overflow pages run past the high-water mark {hwm}"
            )));
        }
        let total = usize::try_from(span * u64::from(self.meta.page_size))
            .map_err(|_| err("too large for this machine".into()))?;
        if overflow > 0 {
            if buf.len() < total {
                buf.resize(total, 0);
            }
            let at = start + page_size as u64;
            self.source
                .read_exact_at(&mut buf[page_size..total], at)
                .map_err(|e| read_error(at, total - page_size, &e))?;
        }
        Ok(&buf[..total])
    }

    /// The entry for `key` in `bucket`, found by descending the tree, with its value copied.
    pub fn get(&self, bucket: &Bucket, key: &[u8]) -> Result<Option<(Vec<u8>, bool)>, BoltError> {
        let mut buf = Vec::new();
        let (mut pgid, mut inline) = match bucket.as_root() {
            Root::Inline(page) => (0, Some(page)),
            Root::Page(pgid) => (pgid, None),
        };
        for _ in 0..=MAX_DEPTH {
            let page = match inline.take() {
                Some(bytes) => Page::parse(bytes),
                None => Page::parse(self.read_page(pgid, &mut buf)?),
            }
            .map_err(|e| BoltError::Page { pgid, reason: e.0 })?;
            if page.is_leaf() {
                for i in 0..page.count {
                    let element = page
                        .leaf(i)
                        .map_err(|e| BoltError::Page { pgid, reason: e.0 })?;
                    if element.key == key {
                        return Ok(Some((
                            element.value.to_vec(),
                            element.flags & BUCKET_LEAF_FLAG != 0,
                        )));
                    }
                }
                return Ok(None);
            }
            if !page.is_branch() {
                return Err(BoltError::Page {
                    pgid,
                    reason: format!("a {} page inside a bucket's tree", page.kind()),
                });
            }
            // The last child whose first key is <= key (or the first child).
            let mut child = None;
            for i in 0..page.count {
                let element = page
                    .branch(i)
                    .map_err(|e| BoltError::Page { pgid, reason: e.0 })?;
                if child.is_some() && element.key > key {
                    break;
                }
                child = Some(element.pgid);
            }
            let Some(next) = child else {
                return Ok(None);
            };
            pgid = next;
        }
        Err(BoltError::Page {
            pgid,
            reason: format!("the tree is deeper than {MAX_DEPTH} levels"),
        })
    }

    /// The nested bucket `name` of `parent`, if there is one.
    pub fn bucket(&self, parent: &Bucket, name: &[u8]) -> Result<Option<Bucket>, BoltError> {
        match self.get(parent, name)? {
            Some((value, true)) => Entry {
                key: name,
                value: &value,
                is_bucket: true,
            }
            .bucket()
            .map(Some),
            _ => Ok(None),
        }
    }

    /// Calls `visit` with each entry of `bucket` in key order, as bbolt's `ForEach` (nested
    /// buckets are passed, not entered). Stops at the first error, from the db or `visit`.
    pub fn for_each<E, F>(&self, bucket: &Bucket, mut visit: F) -> Result<(), E>
    where
        E: From<BoltError>,
        F: FnMut(Entry<'_>) -> Result<(), E>,
    {
        let mut walker = Walker::new(self, 1, false);
        walker.bucket(bucket.as_root(), 0, 0, &mut |_, entry| visit(entry))?;
        walker.finish()
    }

    /// Walks the whole db depth first, keys in order, nested buckets entered after the entry
    /// that holds them, calling `visit(depth, entry)` (depth 0: the top-level buckets), and
    /// checks it as bbolt's `tx.Check()` does in the same pass: every page below the
    /// high-water mark referenced once (or free, when the freelist is stored), pages of the
    /// right type, keys in order, every bucket readable. Errors from `visit` stop the walk;
    /// problems found in the db are collected (up to 100) and returned at the end.
    pub fn walk<E, F>(&self, visit: F) -> Result<(), E>
    where
        E: From<BoltError>,
        F: FnMut(usize, Entry<'_>) -> Result<(), E>,
    {
        self.walk_pages(visit).map(|_| ())
    }

    /// [`BoltDb::walk`], also counting the pages the tree reaches and those it does not:
    /// the free pages bbolt finds on open (etcd opens its db without a stored freelist, so
    /// bbolt rebuilds it as exactly these pages), which etcd reports as `dbSize -
    /// dbSizeInUse` and a defragmentation gives back.
    pub fn walk_pages<E, F>(&self, visit: F) -> Result<PageUsage, E>
    where
        E: From<BoltError>,
        F: FnMut(usize, Entry<'_>) -> Result<(), E>,
    {
        self.walk_collecting(visit, false).map(|(usage, _)| usage)
    }

    /// [`BoltDb::walk_pages`], also listing the free pages it counts (see [`FreePages`]): the
    /// pages a writer of the next transaction may overwrite, as bbolt, having rebuilt its
    /// free list on open, does.
    pub fn walk_free_pages<E, F>(&self, visit: F) -> Result<(PageUsage, FreePages), E>
    where
        E: From<BoltError>,
        F: FnMut(usize, Entry<'_>) -> Result<(), E>,
    {
        self.walk_collecting(visit, true)
    }

    fn walk_collecting<E, F>(
        &self,
        mut visit: F,
        list_free: bool,
    ) -> Result<(PageUsage, FreePages), E>
    where
        E: From<BoltError>,
        F: FnMut(usize, Entry<'_>) -> Result<(), E>,
    {
        let mut walker = Walker::new(self, MAX_PROBLEMS, true);
        let mut free = PageSet::new(0);
        let synced = self.freelist != u64::MAX;
        if synced {
            free = PageSet::new(self.meta.high_water_pgid);
            let mut buf = Vec::new();
            match self.read_page(self.freelist, &mut buf).and_then(|bytes| {
                Page::parse(bytes).map_err(|e| BoltError::Page {
                    pgid: self.freelist,
                    reason: e.0,
                })
            }) {
                Ok(page) if page.flags & FREELIST_PAGE != 0 => {
                    walker.mark(self.freelist, page.overflow);
                    match page.freelist_ids() {
                        Ok(ids) => {
                            for id in ids {
                                free.insert(id);
                            }
                        }
                        Err(e) => walker.problem(format!("page {}: {e}", self.freelist)),
                    }
                }
                Ok(page) => walker.problem(format!(
                    "page {}: the freelist is a {} page",
                    self.freelist,
                    page.kind()
                )),
                Err(e) => walker.problem(e.to_string()),
            }
        }
        walker.bucket(Root::Page(self.meta.root_pgid), 0, 0, &mut visit)?;
        if synced {
            for id in 0..self.meta.high_water_pgid {
                let reached = walker.reached.get(id).unwrap_or(false);
                let is_free = free.get(id).unwrap_or(false);
                if !reached && !is_free {
                    walker.problem(format!("page {id}: unreachable unfreed"));
                } else if reached && is_free && id >= 2 {
                    walker.problem(format!("page {id}: reachable freed"));
                }
                if walker.full() {
                    break;
                }
            }
        }
        let high_water = self.meta.high_water_pgid;
        let reached = walker.reached.count_below(high_water);
        let free_pages = if list_free {
            FreePages {
                runs: walker.reached.clear_runs(high_water, MAX_FREE_RUNS),
            }
        } else {
            FreePages::default()
        };
        walker.finish()?;
        let usage = PageUsage {
            page_size: self.meta.page_size,
            high_water,
            reached,
            free: high_water.saturating_sub(reached),
        };
        Ok((usage, free_pages))
    }

    /// Checks the whole db (see [`BoltDb::walk`]).
    pub fn check(&self) -> Result<(), BoltError> {
        self.walk(|_, _| Ok::<(), BoltError>(()))
    }
}

fn read_error(offset: u64, len: usize, e: &std::io::Error) -> BoltError {
    BoltError::Read {
        offset,
        len,
        reason: if e.kind() == std::io::ErrorKind::UnexpectedEof {
            "the db ends before it".into()
        } else {
            e.to_string()
        },
    }
}

/// One walk over a bucket's tree: the pages entered, the problems found, and a page buffer
/// per level of the tree (reused from page to page).
struct Walker<'d, S> {
    db: &'d BoltDb<S>,
    reached: PageSet,
    problems: Vec<String>,
    limit: usize,
    descend: bool,
    buffers: Vec<Vec<u8>>,
}

impl<'d, S: PageSource> Walker<'d, S> {
    fn new(db: &'d BoltDb<S>, limit: usize, descend: bool) -> Self {
        let mut reached = PageSet::new(db.meta.high_water_pgid);
        reached.insert(0);
        reached.insert(1);
        Walker {
            db,
            reached,
            problems: Vec::new(),
            limit,
            descend,
            buffers: Vec::new(),
        }
    }

    fn full(&self) -> bool {
        self.problems.len() >= self.limit
    }

    fn problem(&mut self, text: String) {
        if !self.full() {
            self.problems.push(text);
        }
    }

    fn finish<E: From<BoltError>>(self) -> Result<(), E> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(BoltError::Check {
                problems: self.problems,
            }
            .into())
        }
    }

    /// Marks `pgid` and its overflow pages as reached; false (and a problem) when one was
    /// reached before.
    fn mark(&mut self, pgid: u64, overflow: u32) -> bool {
        for id in pgid..=pgid.saturating_add(u64::from(overflow)) {
            match self.reached.get(id) {
                Some(true) => {
                    self.problem(format!("page {id}: multiple references"));
                    return false;
                }
                Some(false) => {
                    self.reached.insert(id);
                }
                None => {
                    self.problem(format!("page {id}: beyond the high-water mark"));
                    return false;
                }
            }
        }
        true
    }

    fn bucket<E, F>(
        &mut self,
        root: Root<'_>,
        depth: usize,
        level: usize,
        visit: &mut F,
    ) -> Result<(), E>
    where
        E: From<BoltError>,
        F: FnMut(usize, Entry<'_>) -> Result<(), E>,
    {
        if level > MAX_DEPTH {
            self.problem(format!("buckets nested deeper than {MAX_DEPTH} levels"));
            return Ok(());
        }
        let mut last_key = None;
        match root {
            Root::Inline(bytes) => match Page::parse(bytes) {
                Ok(page) => self.leaf(page, 0, depth, level, &mut last_key, visit),
                Err(e) => {
                    self.problem(format!("inline bucket: {e}"));
                    Ok(())
                }
            },
            Root::Page(pgid) => self.tree(pgid, depth, level, &mut last_key, visit),
        }
    }

    fn tree<E, F>(
        &mut self,
        pgid: u64,
        depth: usize,
        level: usize,
        last_key: &mut Option<Vec<u8>>,
        visit: &mut F,
    ) -> Result<(), E>
    where
        E: From<BoltError>,
        F: FnMut(usize, Entry<'_>) -> Result<(), E>,
    {
        if self.full() {
            return Ok(());
        }
        if level > MAX_DEPTH {
            self.problem(format!(
                "page {pgid}: nested deeper than {MAX_DEPTH} levels"
            ));
            return Ok(());
        }
        if self.buffers.len() <= level {
            self.buffers.resize_with(level + 1, Vec::new);
        }
        let mut buf = std::mem::take(&mut self.buffers[level]);
        let result = self.tree_in(pgid, depth, level, last_key, visit, &mut buf);
        self.buffers[level] = buf;
        result
    }

    fn tree_in<E, F>(
        &mut self,
        pgid: u64,
        depth: usize,
        level: usize,
        last_key: &mut Option<Vec<u8>>,
        visit: &mut F,
        buf: &mut Vec<u8>,
    ) -> Result<(), E>
    where
        E: From<BoltError>,
        F: FnMut(usize, Entry<'_>) -> Result<(), E>,
    {
        let bytes = match self.db.read_page(pgid, buf) {
            Ok(bytes) => bytes,
            Err(e) => {
                self.problem(e.to_string());
                return Ok(());
            }
        };
        let page = match Page::parse(bytes) {
            Ok(page) => page,
            Err(e) => {
                self.problem(format!("page {pgid}: {e}"));
                return Ok(());
            }
        };
        if !self.mark(pgid, page.overflow) {
            return Ok(());
        }
        if page.is_branch() {
            for i in 0..page.count {
                match page.branch(i) {
                    Ok(element) => {
                        self.tree(element.pgid, depth, level + 1, last_key, visit)?;
                    }
                    Err(e) => {
                        self.problem(format!("page {pgid}: {e}"));
                        return Ok(());
                    }
                }
            }
            Ok(())
        } else if page.is_leaf() {
            self.leaf(page, pgid, depth, level, last_key, visit)
        } else {
            self.problem(format!(
                "page {pgid}: a {} page inside a bucket's tree",
                page.kind()
            ));
            Ok(())
        }
    }

    fn leaf<E, F>(
        &mut self,
        page: Page<'_>,
        pgid: u64,
        depth: usize,
        level: usize,
        last_key: &mut Option<Vec<u8>>,
        visit: &mut F,
    ) -> Result<(), E>
    where
        E: From<BoltError>,
        F: FnMut(usize, Entry<'_>) -> Result<(), E>,
    {
        for i in 0..page.count {
            if self.full() {
                return Ok(());
            }
            let element = match page.leaf(i) {
                Ok(e) => e,
                Err(e) => {
                    self.problem(format!("page {pgid}: {e}"));
                    return Ok(());
                }
            };
            match last_key {
                Some(previous) if previous.as_slice() >= element.key => {
                    self.problem(format!("page {pgid}: keys out of order"));
                    return Ok(());
                }
                Some(previous) => {
                    previous.clear();
                    previous.extend_from_slice(element.key);
                }
                None => *last_key = Some(element.key.to_vec()),
            }
            let is_bucket = element.flags & BUCKET_LEAF_FLAG != 0;
            visit(
                depth,
                Entry {
                    key: element.key,
                    value: element.value,
                    is_bucket,
                },
            )?;
            if is_bucket && self.descend {
                match nested_root(element.value) {
                    Ok(root) => self.bucket(root, depth + 1, level + 1, visit)?,
                    Err(e) => self.problem(e.to_string()),
                }
            }
        }
        Ok(())
    }
}

/// The root of the bucket whose header (and inline page) is `value`.
fn nested_root(value: &[u8]) -> Result<Root<'_>, BoltError> {
    let root = u64_at(value, 0).ok_or_else(|| BoltError::Page {
        pgid: 0,
        reason: format!(
            "a bucket value of {} bytes is shorter than a bucket header",
            value.len()
        ),
    })?;
    if root != 0 {
        return Ok(Root::Page(root));
    }
    let bytes = value.get(BUCKET_HEADER..).unwrap_or_default();
    let page = Page::parse(bytes).map_err(|e| BoltError::Page {
        pgid: 0,
        reason: format!("inline bucket: {e}"),
    })?;
    if !page.is_leaf() {
        return Err(BoltError::Page {
            pgid: 0,
            reason: format!("an inline bucket holds a {} page", page.kind()),
        });
    }
    debug_assert!(bytes.len() >= PAGE_HEADER);
    Ok(Root::Inline(bytes))
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
