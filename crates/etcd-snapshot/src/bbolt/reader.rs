//! Reading a whole bbolt db held in memory: buckets (page-rooted and inline), branch and leaf
//! pages, overflow pages, key/value pairs in key order, and an integrity check in the spirit
//! of bbolt's `tx.Check()`.
//!
//! Nothing read from the file is trusted: page IDs are checked against the high-water mark,
//! each page's header must name its own ID, offsets and lengths must stay inside their page,
//! and every walk remembers the pages it has entered, so a page referenced twice (or a cycle)
//! ends in an error instead of a loop.

use std::collections::HashSet;

use super::meta::{MetaSummary, check_meta_pages, chosen_freelist};
use super::page::{BUCKET_HEADER, BUCKET_LEAF_FLAG, FREELIST_PAGE, Page, PageError, u64_at};

/// Branch pages and nested buckets deeper than this are refused: a real db is a few levels
/// deep, and the limit keeps recursion off the end of a small thread stack.
const MAX_DEPTH: usize = 64;
/// The integrity check stops collecting problems after this many.
const MAX_PROBLEMS: usize = 100;

/// A db that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BoltError {
    /// The meta pages are unusable: not a bbolt file, damaged, or truncated.
    #[error("not a usable bbolt db: {0}")]
    Meta(String),
    /// A page (0 for an inline bucket's page) is damaged or out of place.
    #[error("page {pgid}: {reason}")]
    Page {
        /// The page ID.
        pgid: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The integrity check found problems.
    #[error("integrity check failed, {} problem(s): {}", problems.len(), problems.join("; "))]
    Check {
        /// One line per problem (at most 100).
        problems: Vec<String>,
    },
}

fn page_error(pgid: u64) -> impl Fn(PageError) -> BoltError {
    move |e| BoltError::Page { pgid, reason: e.0 }
}

/// A bbolt db read from memory, as seen through its newest valid meta page.
#[derive(Debug, Clone, Copy)]
pub struct BoltDb<'a> {
    data: &'a [u8],
    meta: MetaSummary,
    freelist: u64,
}

/// One key/value pair of a bucket.
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

#[derive(Debug, Clone, Copy)]
enum Root<'a> {
    Page(u64),
    Inline(Page<'a>),
}

/// A bucket: the root bucket of the db or one nested in it.
#[derive(Debug, Clone, Copy)]
pub struct Bucket<'a> {
    db: BoltDb<'a>,
    root: Root<'a>,
}

impl<'a> BoltDb<'a> {
    /// Opens the db held in `data` (the whole file, without etcd's SHA-256 trailer).
    pub fn new(data: &'a [u8]) -> Result<Self, BoltError> {
        let meta = check_meta_pages(data, data.len() as u64).map_err(BoltError::Meta)?;
        let freelist = chosen_freelist(data, &meta);
        Ok(BoltDb {
            data,
            meta,
            freelist,
        })
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
    pub fn root(&self) -> Bucket<'a> {
        Bucket {
            db: *self,
            root: Root::Page(self.meta.root_pgid),
        }
    }

    /// Page `pgid` with its overflow pages, after checking it lies below the high-water mark
    /// and its header names it.
    pub fn page(&self, pgid: u64) -> Result<Page<'a>, BoltError> {
        let err = |reason: String| BoltError::Page { pgid, reason };
        let hwm = self.meta.high_water_pgid;
        if pgid < 2 {
            return Err(err("a meta page is referenced as a data page".into()));
        }
        if pgid >= hwm {
            return Err(err(format!("beyond the high-water mark {hwm}")));
        }
        let page_size = u64::from(self.meta.page_size);
        let start = pgid
            .checked_mul(page_size)
            .and_then(|s| usize::try_from(s).ok())
            .ok_or_else(|| err("offset overflows".into()))?;
        let header =
            Page::parse(self.data.get(start..).unwrap_or_default()).map_err(page_error(pgid))?;
        if header.id != pgid {
            return Err(err(format!("its header says page {}", header.id)));
        }
        let span = 1 + u64::from(header.overflow);
        if pgid.saturating_add(span) > hwm {
            return Err(err(format!(
                "{} overflow pages run past the high-water mark {hwm}",
                header.overflow
            )));
        }
        // Below the high-water mark, and check_meta_pages made sure hwm pages fit the data.
        let end = usize::try_from((pgid + span) * page_size)
            .map_err(|_| err("offset overflows".into()))?;
        let bytes = self
            .data
            .get(start..end)
            .ok_or_else(|| err("runs past the end of the file".into()))?;
        Page::parse(bytes).map_err(page_error(pgid))
    }

    /// Checks the whole db as bbolt's `tx.Check()` does: every page below the high-water mark
    /// referenced once (or free, when the freelist is stored), pages of the right type, keys
    /// in order, every bucket readable.
    pub fn check(&self) -> Result<(), BoltError> {
        let hwm = usize::try_from(self.meta.high_water_pgid).unwrap_or(usize::MAX);
        let mut check = Check {
            reached: vec![false; hwm],
            problems: Vec::new(),
        };
        for meta in 0..2.min(hwm) {
            check.reached[meta] = true;
        }
        let mut free = HashSet::new();
        let synced = self.freelist != u64::MAX;
        if synced {
            match self.page(self.freelist) {
                Ok(page) if page.flags & FREELIST_PAGE != 0 => {
                    check.mark(self.freelist, page.overflow);
                    match page.freelist_ids() {
                        Ok(ids) => free.extend(ids),
                        Err(e) => check.problem(format!("page {}: {e}", self.freelist)),
                    }
                }
                Ok(page) => check.problem(format!(
                    "page {}: the freelist is a {} page",
                    self.freelist,
                    page.kind()
                )),
                Err(e) => check.problem(e.to_string()),
            }
        }
        self.check_bucket(Root::Page(self.meta.root_pgid), 0, &mut check);
        if synced {
            for (id, reached) in check.reached.clone().into_iter().enumerate() {
                let is_free = free.contains(&(id as u64));
                if !reached && !is_free {
                    check.problem(format!("page {id}: unreachable unfreed"));
                } else if reached && is_free && id >= 2 {
                    check.problem(format!("page {id}: reachable freed"));
                }
            }
        }
        if check.problems.is_empty() {
            Ok(())
        } else {
            Err(BoltError::Check {
                problems: check.problems,
            })
        }
    }

    fn check_bucket(&self, root: Root<'a>, depth: usize, check: &mut Check) {
        let mut last_key = None;
        match root {
            Root::Inline(page) => self.check_leaf(page, 0, depth, &mut last_key, check),
            Root::Page(pgid) => self.check_tree(pgid, depth, &mut last_key, check),
        }
    }

    fn check_tree(
        &self,
        pgid: u64,
        depth: usize,
        last_key: &mut Option<&'a [u8]>,
        check: &mut Check,
    ) {
        if check.full() {
            return;
        }
        if depth > MAX_DEPTH {
            check.problem(format!(
                "page {pgid}: nested deeper than {MAX_DEPTH} levels"
            ));
            return;
        }
        let page = match self.page(pgid) {
            Ok(page) => page,
            Err(e) => return check.problem(e.to_string()),
        };
        if !check.mark(pgid, page.overflow) {
            return;
        }
        if page.is_branch() {
            for i in 0..page.count {
                match page.branch(i) {
                    Ok(element) => self.check_tree(element.pgid, depth + 1, last_key, check),
                    Err(e) => return check.problem(format!("page {pgid}: {e}")),
                }
            }
        } else if page.is_leaf() {
            self.check_leaf(page, pgid, depth, last_key, check);
        } else {
            check.problem(format!(
                "page {pgid}: a {} page inside a bucket's tree",
                page.kind()
            ));
        }
    }

    fn check_leaf(
        &self,
        page: Page<'a>,
        pgid: u64,
        depth: usize,
        last_key: &mut Option<&'a [u8]>,
        check: &mut Check,
    ) {
        for i in 0..page.count {
            let element = match page.leaf(i) {
                Ok(e) => e,
                Err(e) => return check.problem(format!("page {pgid}: {e}")),
            };
            if let Some(previous) = *last_key
                && previous >= element.key
            {
                check.problem(format!("page {pgid}: keys out of order"));
            }
            *last_key = Some(element.key);
            if element.flags & BUCKET_LEAF_FLAG != 0 {
                match nested_root(element.value) {
                    Ok(root) => self.check_bucket(root, depth + 1, check),
                    Err(e) => check.problem(e.to_string()),
                }
            }
        }
    }
}

struct Check {
    reached: Vec<bool>,
    problems: Vec<String>,
}

impl Check {
    fn full(&self) -> bool {
        self.problems.len() >= MAX_PROBLEMS
    }

    fn problem(&mut self, text: String) {
        if !self.full() {
            self.problems.push(text);
        }
    }

    /// Marks `pgid` and its overflow pages as reached; false (and a problem) when one was
    /// reached before.
    fn mark(&mut self, pgid: u64, overflow: u32) -> bool {
        for id in pgid..=pgid.saturating_add(u64::from(overflow)) {
            let slot = usize::try_from(id)
                .ok()
                .and_then(|i| self.reached.get_mut(i));
            match slot {
                Some(seen) if *seen => {
                    self.problem(format!("page {id}: multiple references"));
                    return false;
                }
                Some(seen) => *seen = true,
                None => {
                    self.problem(format!("page {id}: beyond the high-water mark"));
                    return false;
                }
            }
        }
        true
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
    let page = Page::parse(value.get(BUCKET_HEADER..).unwrap_or_default()).map_err(|e| {
        BoltError::Page {
            pgid: 0,
            reason: format!("inline bucket: {e}"),
        }
    })?;
    if !page.is_leaf() {
        return Err(BoltError::Page {
            pgid: 0,
            reason: format!("an inline bucket holds a {} page", page.kind()),
        });
    }
    Ok(Root::Inline(page))
}

impl<'a> Bucket<'a> {
    /// The nested bucket `entry` of this bucket describes.
    pub fn open(&self, entry: &Entry<'a>) -> Result<Bucket<'a>, BoltError> {
        if !entry.is_bucket {
            return Err(BoltError::Page {
                pgid: 0,
                reason: format!(
                    "key {:?} is not a bucket",
                    String::from_utf8_lossy(entry.key)
                ),
            });
        }
        Ok(Bucket {
            db: self.db,
            root: nested_root(entry.value)?,
        })
    }

    /// The nested bucket `name`, if there is one.
    pub fn bucket(&self, name: &[u8]) -> Result<Option<Bucket<'a>>, BoltError> {
        match self.get(name)? {
            Some(entry) if entry.is_bucket => self.open(&entry).map(Some),
            _ => Ok(None),
        }
    }

    /// The entry for `key`, found by descending the tree.
    pub fn get(&self, key: &[u8]) -> Result<Option<Entry<'a>>, BoltError> {
        let (mut page, mut pgid) = match self.root {
            Root::Inline(page) => (page, 0),
            Root::Page(pgid) => (self.db.page(pgid)?, pgid),
        };
        for _ in 0..=MAX_DEPTH {
            if page.is_leaf() {
                for i in 0..page.count {
                    let element = page.leaf(i).map_err(page_error(pgid))?;
                    if element.key == key {
                        return Ok(Some(Entry {
                            key: element.key,
                            value: element.value,
                            is_bucket: element.flags & BUCKET_LEAF_FLAG != 0,
                        }));
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
                let element = page.branch(i).map_err(page_error(pgid))?;
                if child.is_some() && element.key > key {
                    break;
                }
                child = Some(element.pgid);
            }
            let Some(next) = child else {
                return Ok(None);
            };
            pgid = next;
            page = self.db.page(pgid)?;
        }
        Err(BoltError::Page {
            pgid,
            reason: format!("the tree is deeper than {MAX_DEPTH} levels"),
        })
    }

    /// The bucket's entries in key order. The iterator ends after the first error.
    pub fn iter(&self) -> Cursor<'a> {
        Cursor {
            db: self.db,
            start: Some(self.root),
            stack: Vec::new(),
            entered: HashSet::new(),
        }
    }
}

/// Iterates a bucket's entries in key order, depth first through its branch pages.
#[derive(Debug)]
pub struct Cursor<'a> {
    db: BoltDb<'a>,
    start: Option<Root<'a>>,
    /// Pages being walked, with the next element to visit; the page ID is 0 when inline.
    stack: Vec<(Page<'a>, u64, u16)>,
    /// Pages entered so far: entering one twice means a damaged db (or a cycle).
    entered: HashSet<u64>,
}

impl<'a> Cursor<'a> {
    fn enter(&mut self, pgid: u64) -> Result<(), BoltError> {
        let err = |reason: String| BoltError::Page { pgid, reason };
        if self.stack.len() >= MAX_DEPTH {
            return Err(err(format!("the tree is deeper than {MAX_DEPTH} levels")));
        }
        if !self.entered.insert(pgid) {
            return Err(err("referenced twice in one bucket".into()));
        }
        let page = self.db.page(pgid)?;
        if !page.is_leaf() && !page.is_branch() {
            return Err(err(format!(
                "a {} page inside a bucket's tree",
                page.kind()
            )));
        }
        self.stack.push((page, pgid, 0));
        Ok(())
    }

    fn step(&mut self) -> Result<Option<Entry<'a>>, BoltError> {
        if let Some(root) = self.start.take() {
            match root {
                Root::Inline(page) => self.stack.push((page, 0, 0)),
                Root::Page(pgid) => self.enter(pgid)?,
            }
        }
        while let Some((page, pgid, next)) = self.stack.last_mut() {
            let (page, pgid, index) = (*page, *pgid, *next);
            if index >= page.count {
                self.stack.pop();
                continue;
            }
            *next += 1;
            if page.is_leaf() {
                let element = page.leaf(index).map_err(page_error(pgid))?;
                return Ok(Some(Entry {
                    key: element.key,
                    value: element.value,
                    is_bucket: element.flags & BUCKET_LEAF_FLAG != 0,
                }));
            }
            let element = page.branch(index).map_err(page_error(pgid))?;
            self.enter(element.pgid)?;
        }
        Ok(None)
    }
}

impl<'a> Iterator for Cursor<'a> {
    type Item = Result<Entry<'a>, BoltError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.step() {
            Ok(entry) => entry.map(Ok),
            Err(e) => {
                // Fused: nothing after an error.
                self.stack.clear();
                self.start = None;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::meta::fnv1a64;
    use super::super::page::build::{branch, header, leaf};
    use super::super::page::{BRANCH_PAGE, LEAF_PAGE, PAGE_HEADER};
    use super::*;

    const PS: usize = 4096;

    fn meta_page(id: u64, root: u64, freelist: u64, hwm: u64, txid: u64) -> Vec<u8> {
        let mut page = header(id, 0x04, 0, 0);
        let mut meta = Vec::new();
        meta.extend_from_slice(&0xED0C_DAEDu32.to_le_bytes());
        meta.extend_from_slice(&2u32.to_le_bytes());
        meta.extend_from_slice(&(PS as u32).to_le_bytes());
        meta.extend_from_slice(&0u32.to_le_bytes());
        meta.extend_from_slice(&root.to_le_bytes());
        meta.extend_from_slice(&0u64.to_le_bytes());
        meta.extend_from_slice(&freelist.to_le_bytes());
        meta.extend_from_slice(&hwm.to_le_bytes());
        meta.extend_from_slice(&txid.to_le_bytes());
        let sum = fnv1a64(&meta);
        meta.extend_from_slice(&sum.to_le_bytes());
        page.extend(meta);
        page
    }

    /// A db of `pages` (page 2 onwards), root bucket at page 2, no freelist.
    fn db(pages: &[Vec<u8>]) -> Vec<u8> {
        let spans: usize = pages.iter().map(|p| p.len().div_ceil(PS).max(1)).sum();
        let hwm = 2 + spans as u64;
        let mut out = Vec::new();
        for (id, txid) in [(0, 4), (1, 5)] {
            let mut m = meta_page(id, 2, u64::MAX, hwm, txid);
            m.resize(PS, 0);
            out.extend(m);
        }
        for page in pages {
            let mut p = page.clone();
            let span = p.len().div_ceil(PS).max(1);
            p.resize(span * PS, 0);
            out.extend(p);
        }
        out
    }

    fn bucket_value(root: u64) -> Vec<u8> {
        let mut v = root.to_le_bytes().to_vec();
        v.extend_from_slice(&0u64.to_le_bytes());
        v
    }

    fn inline_bucket(items: &[(u32, &[u8], &[u8])]) -> Vec<u8> {
        let mut v = bucket_value(0);
        v.extend(leaf(0, items));
        v
    }

    fn keys(bucket: &Bucket<'_>) -> Vec<Vec<u8>> {
        bucket.iter().map(|e| e.unwrap().key.to_vec()).collect()
    }

    /// Root (page 2) with buckets "a" (page-rooted: branch 3 over leaves 4, 5) and "b"
    /// (inline).
    fn sample() -> Vec<u8> {
        let a = bucket_value(3);
        let b = inline_bucket(&[(0, b"x", b"1"), (0, b"y", b"2")]);
        db(&[
            leaf(
                2,
                &[(BUCKET_LEAF_FLAG, b"a", &a), (BUCKET_LEAF_FLAG, b"b", &b)],
            ),
            branch(3, &[(b"k1", 4), (b"k3", 5)]),
            leaf(4, &[(0, b"k1", b"v1"), (0, b"k2", b"v2")]),
            leaf(5, &[(0, b"k3", b"v3")]),
        ])
    }

    #[test]
    fn buckets_branches_and_inline_buckets_iterate_in_key_order() {
        let data = sample();
        let db = BoltDb::new(&data).unwrap();
        assert_eq!(db.size(), 6 * PS as u64);
        db.check().unwrap();
        let root = db.root();
        assert_eq!(keys(&root), [b"a".to_vec(), b"b".to_vec()]);
        let a = root.bucket(b"a").unwrap().unwrap();
        assert_eq!(keys(&a), [b"k1".to_vec(), b"k2".to_vec(), b"k3".to_vec()]);
        assert_eq!(a.get(b"k2").unwrap().unwrap().value, b"v2");
        assert_eq!(a.get(b"k3").unwrap().unwrap().value, b"v3");
        assert_eq!(a.get(b"k0").unwrap(), None);
        let b = root.bucket(b"b").unwrap().unwrap();
        assert_eq!(keys(&b), [b"x".to_vec(), b"y".to_vec()]);
        assert_eq!(b.get(b"y").unwrap().unwrap().value, b"2");
        assert!(root.bucket(b"missing").unwrap().is_none());
    }

    #[test]
    fn overflow_pages_hold_large_values() {
        let big = vec![7u8; 3 * PS];
        let a = bucket_value(3);
        let mut overflowing = leaf(3, &[(0, b"big", &big)]);
        let span = overflowing.len().div_ceil(PS);
        overflowing[12..16].copy_from_slice(&((span - 1) as u32).to_le_bytes());
        let data = db(&[leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)]), overflowing]);
        let db = BoltDb::new(&data).unwrap();
        db.check().unwrap();
        let a = db.root().bucket(b"a").unwrap().unwrap();
        assert_eq!(a.get(b"big").unwrap().unwrap().value, &big[..]);
    }

    #[test]
    fn a_cycle_of_branch_pages_ends_in_an_error() {
        let a = bucket_value(3);
        let data = db(&[
            leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)]),
            branch(3, &[(b"k", 4)]),
            branch(4, &[(b"k", 3)]),
        ]);
        let db = BoltDb::new(&data).unwrap();
        let a = db.root().bucket(b"a").unwrap().unwrap();
        let items: Vec<_> = a.iter().collect();
        assert_eq!(items.len(), 1);
        assert!(items[0].is_err(), "{items:?}");
        assert!(a.get(b"k").is_err());
        let err = db.check().unwrap_err();
        assert!(err.to_string().contains("multiple references"), "{err}");
    }

    #[test]
    fn a_bucket_nested_in_itself_does_not_loop() {
        // Bucket "a" at page 3 holds a bucket "self" rooted at page 3 again.
        let a = bucket_value(3);
        let data = db(&[
            leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)]),
            leaf(3, &[(BUCKET_LEAF_FLAG, b"self", &a)]),
        ]);
        let db = BoltDb::new(&data).unwrap();
        let err = db.check().unwrap_err();
        assert!(err.to_string().contains("multiple references"), "{err}");
    }

    #[test]
    fn bad_page_references_are_errors() {
        let cases: [(u64, &str); 3] = [
            (1, "meta page"),
            (99, "high-water mark"),
            (4, "header says page 3"),
        ];
        for (target, needle) in cases {
            let a = bucket_value(target);
            let mut pages = vec![leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)])];
            pages.push(leaf(3, &[(0, b"k", b"v")]));
            if target == 4 {
                // Page 4 whose header claims to be page 3.
                pages.push(leaf(3, &[(0, b"k", b"v")]));
            }
            let data = db(&pages);
            let db = BoltDb::new(&data).unwrap();
            let a = db.root().bucket(b"a").unwrap().unwrap();
            let err = a.iter().find_map(Result::err).unwrap();
            assert!(err.to_string().contains(needle), "{target}: {err}");
            assert!(db.check().is_err());
        }
    }

    #[test]
    fn overflow_past_the_high_water_mark_is_refused() {
        let mut page = leaf(2, &[]);
        page[12..16].copy_from_slice(&1000u32.to_le_bytes());
        let data = db(&[page]);
        let db = BoltDb::new(&data).unwrap();
        let err = db.root().iter().next().unwrap().unwrap_err();
        assert!(err.to_string().contains("overflow"), "{err}");
    }

    #[test]
    fn unsorted_keys_and_wrong_page_types_fail_the_check() {
        let a = inline_bucket(&[(0, b"b", b""), (0, b"a", b"")]);
        let data = db(&[leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)])]);
        let err = BoltDb::new(&data).unwrap().check().unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");

        let a = bucket_value(3);
        let data = db(&[
            leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)]),
            header(3, 0x10, 0, 0),
        ]);
        let db = BoltDb::new(&data).unwrap();
        let err = db.check().unwrap_err();
        assert!(err.to_string().contains("freelist page inside"), "{err}");
        let bucket = db.root().bucket(b"a").unwrap().unwrap();
        assert!(bucket.iter().next().unwrap().is_err());
    }

    #[test]
    fn a_synced_freelist_accounts_for_every_page() {
        // Page 3 is the freelist listing page 4; page 5 is neither reachable nor free.
        let mut data = db(&[
            leaf(2, &[]),
            {
                let mut f = header(3, 0x10, 1, 0);
                f.extend_from_slice(&4u64.to_le_bytes());
                f
            },
            leaf(4, &[]),
            leaf(5, &[]),
        ]);
        for (id, txid) in [(0u64, 4u64), (1, 5)] {
            let m = meta_page(id, 2, 3, 6, txid);
            data[id as usize * PS..id as usize * PS + m.len()].copy_from_slice(&m);
        }
        let err = BoltDb::new(&data).unwrap().check().unwrap_err();
        let BoltError::Check { problems } = err else {
            panic!("{err:?}")
        };
        assert_eq!(problems, ["page 5: unreachable unfreed"]);
    }

    #[test]
    fn inline_bucket_value_too_short_or_not_a_leaf() {
        assert!(nested_root(&[0u8; 8]).is_err());
        let mut v = bucket_value(0);
        v.extend(header(0, BRANCH_PAGE, 0, 0));
        assert!(nested_root(&v).is_err());
        let mut v = bucket_value(0);
        v.extend(header(0, LEAF_PAGE, 3, 0));
        // Three elements promised, none present.
        let Root::Inline(page) = nested_root(&v).unwrap() else {
            panic!("not inline")
        };
        assert!(page.leaf(0).is_err());
        assert_eq!(page.bytes().len(), PAGE_HEADER);
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_an_error_or_a_value_never_a_panic() {
        let data = sample();
        for cut in (0..data.len()).step_by(509) {
            let _ = BoltDb::new(&data[..cut]).map(|db| db.check());
        }
        // Flip each byte of the data pages (meta pages stay valid), then read everything.
        for at in 2 * PS..data.len() {
            let mut damaged = data.clone();
            damaged[at] ^= 0xA5;
            let Ok(db) = BoltDb::new(&damaged) else {
                continue;
            };
            let _ = db.check();
            for entry in db.root().iter().take(1000) {
                let Ok(entry) = entry else { break };
                if entry.is_bucket
                    && let Ok(bucket) = db.root().open(&entry)
                {
                    let _ = bucket.iter().take(1000).count();
                }
            }
        }
    }
}
