//! Copy-on-write changes to top-level buckets of a bbolt db, as bbolt itself commits a
//! transaction: the changed buckets and a new root leaf are written as new pages after the
//! high-water mark, then a new meta page (txid + 1) is written to slot `txid % 2`. Only the
//! pages copied are read, so a db file of any size is rewritten in place in small memory. The old
//! pages are left in place, unreachable; etcd runs bbolt with NoFreelistSync, so the new meta
//! records no freelist (`u64::MAX`) and bbolt rebuilds the free list by scanning.
//!
//! Only flat buckets (no nested buckets) can be replaced, which is all etcd's are.
//!
//! [`append_sorted`] is the bulk form of [`Append`]: it streams any number of sorted keys onto
//! the end of one top-level bucket as one transaction, writing leaves to the file as they fill,
//! so that memory is bounded by the number of leaves rather than by the data.

use std::collections::BTreeMap;

use crate::bbolt::page::{
    BRANCH_PAGE, BUCKET_HEADER, BUCKET_LEAF_FLAG, ELEMENT_LEN, LEAF_PAGE, META_PAGE, PAGE_HEADER,
};
use crate::bbolt::{BoltDb, BoltError, Page, PageSource, fnv1a64};

/// Offset of the meta fields after the page header, and their length before the checksum.
const META_FIELDS: usize = 56;
/// Recorded as the freelist page when the freelist is not synced.
const NO_FREELIST: u64 = u64::MAX;

/// The new contents of one flat bucket, key to value.
pub type BucketContents = BTreeMap<Vec<u8>, Vec<u8>>;

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The raw fields (56 bytes) of the meta page bbolt would choose.
fn chosen_meta_fields<S: PageSource>(bolt: &BoltDb<S>) -> Result<Vec<u8>, BoltError> {
    let meta = bolt.meta();
    let page_size = meta.page_size as usize;
    let mut field = vec![0u8; META_FIELDS + 8];
    for at in [0, page_size] {
        let offset = (at + PAGE_HEADER) as u64;
        if bolt.source().read_exact_at(&mut field, offset).is_ok()
            && read_u64(&field, 48) == meta.txid
            && fnv1a64(&field[..META_FIELDS]) == read_u64(&field, 56)
        {
            field.truncate(META_FIELDS);
            return Ok(field);
        }
    }
    Err(BoltError::Meta(
        "the chosen meta page cannot be found again".into(),
    ))
}

/// A leaf page holding `items` (flags, key, value) in order, padded to whole pages, with its
/// header's overflow count set.
fn leaf_page(
    pgid: u64,
    items: &[(u32, &[u8], &[u8])],
    page_size: usize,
) -> Result<Vec<u8>, BoltError> {
    let too_big = || BoltError::Page {
        pgid,
        reason: "too many elements for one leaf page".into(),
    };
    let count = u16::try_from(items.len()).map_err(|_| too_big())?;
    let elements_end = PAGE_HEADER + items.len() * ELEMENT_LEN;
    let mut elements = Vec::with_capacity(items.len() * ELEMENT_LEN);
    let mut data = Vec::new();
    for (i, (flags, key, value)) in items.iter().enumerate() {
        let at = PAGE_HEADER + i * ELEMENT_LEN;
        let pos = u32::try_from(elements_end + data.len() - at).map_err(|_| too_big())?;
        let ksize = u32::try_from(key.len()).map_err(|_| too_big())?;
        let vsize = u32::try_from(value.len()).map_err(|_| too_big())?;
        elements.extend_from_slice(&flags.to_le_bytes());
        elements.extend_from_slice(&pos.to_le_bytes());
        elements.extend_from_slice(&ksize.to_le_bytes());
        elements.extend_from_slice(&vsize.to_le_bytes());
        data.extend_from_slice(key);
        data.extend_from_slice(value);
    }
    assemble_page(pgid, LEAF_PAGE, count, &elements, &data, page_size).ok_or_else(too_big)
}

/// A branch page holding `items` (first key of the child, child pgid) in order.
fn branch_page(pgid: u64, items: &[(&[u8], u64)], page_size: usize) -> Result<Vec<u8>, BoltError> {
    let too_big = || BoltError::Page {
        pgid,
        reason: "too many elements for one branch page".into(),
    };
    let count = u16::try_from(items.len()).map_err(|_| too_big())?;
    let elements_end = PAGE_HEADER + items.len() * ELEMENT_LEN;
    let mut elements = Vec::with_capacity(items.len() * ELEMENT_LEN);
    let mut data = Vec::new();
    for (i, (key, child)) in items.iter().enumerate() {
        let at = PAGE_HEADER + i * ELEMENT_LEN;
        let pos = u32::try_from(elements_end + data.len() - at).map_err(|_| too_big())?;
        let ksize = u32::try_from(key.len()).map_err(|_| too_big())?;
        elements.extend_from_slice(&pos.to_le_bytes());
        elements.extend_from_slice(&ksize.to_le_bytes());
        elements.extend_from_slice(&child.to_le_bytes());
        data.extend_from_slice(key);
    }
    assemble_page(pgid, BRANCH_PAGE, count, &elements, &data, page_size).ok_or_else(too_big)
}

/// Header, elements and data laid out on as many contiguous pages as they need (the extra
/// ones are the header's overflow count); `None` when the overflow count does not fit.
fn assemble_page(
    pgid: u64,
    flags: u16,
    count: u16,
    elements: &[u8],
    data: &[u8],
    page_size: usize,
) -> Option<Vec<u8>> {
    let len = PAGE_HEADER + elements.len() + data.len();
    let span = len.div_ceil(page_size).max(1);
    let overflow = u32::try_from(span - 1).ok()?;
    let mut page = Vec::with_capacity(span * page_size);
    page.extend_from_slice(&pgid.to_le_bytes());
    page.extend_from_slice(&flags.to_le_bytes());
    page.extend_from_slice(&count.to_le_bytes());
    page.extend_from_slice(&overflow.to_le_bytes());
    page.extend_from_slice(elements);
    page.extend_from_slice(data);
    page.resize(span * page_size, 0);
    Some(page)
}

/// A key to append to a page-rooted top-level bucket: it must sort after every key in it.
#[derive(Debug, Clone)]
pub struct Append {
    /// The top-level bucket.
    pub bucket: Vec<u8>,
    /// The key (greater than every key in the bucket).
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
}

/// Copies the rightmost path of the bucket rooted at `root` with `append` added to its last
/// leaf, writing new pages from `*next`; returns the new root pgid.
fn append_rightmost<S: PageSource>(
    bolt: &BoltDb<S>,
    root: u64,
    append: &Append,
    page_size: usize,
    next: &mut u64,
    out: &mut Vec<u8>,
) -> Result<u64, BoltError> {
    // Descend along the last child of each branch page, keeping a copy of each page.
    let mut path: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut pgid = root;
    loop {
        let mut buf = Vec::new();
        let len = bolt.read_page(pgid, &mut buf)?.len();
        buf.truncate(len);
        let page = Page::parse(&buf).map_err(|e| BoltError::Page { pgid, reason: e.0 })?;
        if path.len() > 64 {
            return Err(BoltError::Page {
                pgid,
                reason: "the tree is too deep".into(),
            });
        }
        if page.is_leaf() {
            path.push((pgid, buf));
            break;
        }
        if !page.is_branch() || page.count == 0 {
            return Err(BoltError::Page {
                pgid,
                reason: format!("a {} page on a bucket's rightmost path", page.kind()),
            });
        }
        let last = page
            .branch(page.count - 1)
            .map_err(|e| BoltError::Page { pgid, reason: e.0 })?
            .pgid;
        path.push((pgid, buf));
        pgid = last;
    }
    let mut child: Option<u64> = None;
    for (pgid, buf) in path.into_iter().rev() {
        let err = |e: crate::bbolt::PageError| BoltError::Page { pgid, reason: e.0 };
        let page = Page::parse(&buf).map_err(err)?;
        let new_pgid = *next;
        let bytes = if page.is_leaf() {
            let mut items = Vec::with_capacity(usize::from(page.count) + 1);
            for i in 0..page.count {
                let e = page.leaf(i).map_err(err)?;
                if e.key >= append.key.as_slice() {
                    return Err(BoltError::Page {
                        pgid,
                        reason: "the appended key does not sort after the bucket's keys".into(),
                    });
                }
                items.push((e.flags, e.key, e.value));
            }
            items.push((0, append.key.as_slice(), append.value.as_slice()));
            leaf_page(new_pgid, &items, page_size)?
        } else {
            let mut items = Vec::with_capacity(usize::from(page.count));
            for i in 0..page.count {
                let e = page.branch(i).map_err(err)?;
                items.push((e.key, e.pgid));
            }
            if let (Some(last), Some(child)) = (items.last_mut(), child) {
                last.1 = child;
            }
            branch_page(new_pgid, &items, page_size)?
        };
        *next += (bytes.len() / page_size) as u64;
        out.extend(bytes);
        child = Some(new_pgid);
    }
    child.ok_or_else(|| BoltError::Page {
        pgid: root,
        reason: "empty path".into(),
    })
}

/// The writes that turn a db into its rewritten self: new pages after the old high-water mark,
/// then the new meta page. Apply them in order; the meta page last makes them visible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Offset of the new pages (the old high-water mark times the page size).
    pub pages_at: u64,
    /// The new pages.
    pub pages: Vec<u8>,
    /// Offset of the new meta page (its slot: txid % 2).
    pub meta_at: u64,
    /// The new meta page, a whole page.
    pub meta: Vec<u8>,
}

impl Patch {
    /// Bytes of the db once patched.
    pub fn new_size(&self) -> u64 {
        self.pages_at + self.pages.len() as u64
    }

    /// Applies the patch to a db held in memory.
    #[cfg(test)]
    pub fn apply_to(&self, db: &mut Vec<u8>) {
        let end = usize::try_from(self.new_size()).unwrap_or(usize::MAX);
        let pages_at = usize::try_from(self.pages_at).unwrap_or(usize::MAX);
        db.resize(end, 0);
        db[pages_at..end].copy_from_slice(&self.pages);
        let meta_at = usize::try_from(self.meta_at).unwrap_or(usize::MAX);
        db[meta_at..meta_at + self.meta.len()].copy_from_slice(&self.meta);
    }

    /// Applies the patch to a db file (cutting off anything after the old high-water mark,
    /// such as etcd's trailer) and syncs it: the new pages first, then the meta page.
    pub fn apply_to_file(&self, file: &std::fs::File) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        file.set_len(self.pages_at)?;
        file.write_all_at(&self.pages, self.pages_at)?;
        file.sync_data()?;
        file.write_all_at(&self.meta, self.meta_at)?;
        file.sync_all()
    }
}

/// The writes ([`Patch`]) after which each top-level bucket of `bolt` named in `replace`
/// holds exactly the given contents (created when missing), with `append` added; every
/// other bucket is kept as it is. Reads only the pages it copies.
pub fn replace_buckets<S: PageSource>(
    bolt: &BoltDb<S>,
    replace: &BTreeMap<Vec<u8>, BucketContents>,
    append: Option<&Append>,
) -> Result<Patch, BoltError> {
    let meta = bolt.meta();
    let page_size = meta.page_size as usize;
    let old_fields = chosen_meta_fields(bolt)?;

    // Top-level entries: (flags, key, value), with replaced buckets pointing at new pages.
    let mut top: BTreeMap<Vec<u8>, (u32, Vec<u8>)> = BTreeMap::new();
    let root_bucket = bolt.root();
    bolt.for_each(&root_bucket, |entry| {
        let flags = if entry.is_bucket { BUCKET_LEAF_FLAG } else { 0 };
        top.insert(entry.key.to_vec(), (flags, entry.value.to_vec()));
        Ok::<(), BoltError>(())
    })?;

    let mut next = meta.high_water_pgid;
    let mut new_pages: Vec<u8> = Vec::new();
    for (name, contents) in replace {
        let sequence = top
            .get(name)
            .filter(|(flags, _)| flags & BUCKET_LEAF_FLAG != 0)
            .map_or(0, |(_, value)| read_u64(value, 8));
        let items: Vec<(u32, &[u8], &[u8])> = contents
            .iter()
            .map(|(k, v)| (0, k.as_slice(), v.as_slice()))
            .collect();
        let page = leaf_page(next, &items, page_size)?;
        let mut value = next.to_le_bytes().to_vec();
        value.extend_from_slice(&sequence.to_le_bytes());
        top.insert(name.clone(), (BUCKET_LEAF_FLAG, value));
        next += (page.len() / page_size) as u64;
        new_pages.extend(page);
    }
    if let Some(append) = append {
        let (flags, value) = top.get(&append.bucket).ok_or_else(|| BoltError::Page {
            pgid: 0,
            reason: format!(
                "no bucket {:?} to append to",
                String::from_utf8_lossy(&append.bucket)
            ),
        })?;
        let root = read_u64(value, 0);
        if flags & BUCKET_LEAF_FLAG == 0 {
            return Err(BoltError::Page {
                pgid: 0,
                reason: format!(
                    "{:?} is not a bucket",
                    String::from_utf8_lossy(&append.bucket)
                ),
            });
        }
        let sequence = read_u64(value, 8);
        let new_root = if root == 0 {
            // An inline bucket: write it out as a page-rooted leaf with the key added.
            let mut items: Vec<(u32, Vec<u8>, Vec<u8>)> = Vec::new();
            if let Some(bucket) = bolt.bucket(&root_bucket, &append.bucket)? {
                bolt.for_each(&bucket, |entry| {
                    let flags = if entry.is_bucket { BUCKET_LEAF_FLAG } else { 0 };
                    items.push((flags, entry.key.to_vec(), entry.value.to_vec()));
                    Ok::<(), BoltError>(())
                })?;
            }
            if items
                .last()
                .is_some_and(|(_, key, _)| key.as_slice() >= append.key.as_slice())
            {
                return Err(BoltError::Page {
                    pgid: 0,
                    reason: "the appended key does not sort after the bucket's keys".into(),
                });
            }
            items.push((0, append.key.clone(), append.value.clone()));
            let refs: Vec<(u32, &[u8], &[u8])> = items
                .iter()
                .map(|(f, k, v)| (*f, k.as_slice(), v.as_slice()))
                .collect();
            let pgid = next;
            let page = leaf_page(pgid, &refs, page_size)?;
            next += (page.len() / page_size) as u64;
            new_pages.extend(page);
            pgid
        } else {
            append_rightmost(bolt, root, append, page_size, &mut next, &mut new_pages)?
        };
        let mut value = new_root.to_le_bytes().to_vec();
        value.extend_from_slice(&sequence.to_le_bytes());
        top.insert(append.bucket.clone(), (BUCKET_LEAF_FLAG, value));
    }
    let root_items: Vec<(u32, &[u8], &[u8])> = top
        .iter()
        .map(|(k, (flags, v))| (*flags, k.as_slice(), v.as_slice()))
        .collect();
    let root_pgid = next;
    let root = leaf_page(root_pgid, &root_items, page_size)?;
    next += (root.len() / page_size) as u64;
    new_pages.extend(root);

    let pages_at = meta
        .high_water_pgid
        .checked_mul(u64::from(meta.page_size))
        .ok_or_else(|| BoltError::Meta("high-water mark overflows".into()))?;
    let (meta_at, page) = meta_page(old_fields, root_pgid, next, meta.txid + 1, page_size);
    Ok(Patch {
        pages_at,
        pages: new_pages,
        meta_at,
        meta: page,
    })
}

/// The meta page of transaction `txid`, made from `fields` (the 56 fields bytes of the meta
/// page in use: same magic, version, page size and flags) with a new root, no freelist and a
/// new high-water mark; returned with its offset in the file (slot `txid % 2`).
fn meta_page(
    mut fields: Vec<u8>,
    root_pgid: u64,
    high_water: u64,
    txid: u64,
    page_size: usize,
) -> (u64, Vec<u8>) {
    fields.resize(META_FIELDS, 0);
    fields[16..24].copy_from_slice(&root_pgid.to_le_bytes());
    fields[32..40].copy_from_slice(&NO_FREELIST.to_le_bytes());
    fields[40..48].copy_from_slice(&high_water.to_le_bytes());
    fields[48..56].copy_from_slice(&txid.to_le_bytes());
    let checksum = fnv1a64(&fields);
    let slot = txid % 2;
    let mut page = Vec::with_capacity(page_size);
    page.extend_from_slice(&slot.to_le_bytes());
    page.extend_from_slice(&META_PAGE.to_le_bytes());
    page.extend_from_slice(&0u16.to_le_bytes());
    page.extend_from_slice(&0u32.to_le_bytes());
    page.extend(fields);
    page.extend_from_slice(&checksum.to_le_bytes());
    page.resize(page_size, 0);
    (slot * page_size as u64, page)
}

/// Reads back what a patch wrote: the new root and each replaced bucket must hold what was
/// asked, and the appended key must be found (the untouched buckets were checked before).
pub fn verify_rewrite<S: PageSource>(
    bolt: &BoltDb<S>,
    replace: &BTreeMap<Vec<u8>, BucketContents>,
    append: Option<&Append>,
) -> Result<(), BoltError> {
    let wrong = |what: String| BoltError::Check {
        problems: vec![format!("the rewritten db does not read back: {what}")],
    };
    let root = bolt.root();
    for (name, contents) in replace {
        let bucket = bolt.bucket(&root, name)?.ok_or_else(|| {
            wrong(format!(
                "bucket {:?} missing",
                String::from_utf8_lossy(name)
            ))
        })?;
        let mut found = BucketContents::new();
        bolt.for_each(&bucket, |entry| {
            found.insert(entry.key.to_vec(), entry.value.to_vec());
            Ok::<(), BoltError>(())
        })?;
        if &found != contents {
            return Err(wrong(format!(
                "bucket {:?} differs",
                String::from_utf8_lossy(name)
            )));
        }
    }
    if let Some(append) = append {
        let bucket = bolt
            .bucket(&root, &append.bucket)?
            .ok_or_else(|| wrong("the appended-to bucket is missing".into()))?;
        if bolt.get(&bucket, &append.key)? != Some((append.value.clone(), false)) {
            return Err(wrong("the appended key is missing".into()));
        }
    }
    Ok(())
}

/// What a bulk append wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendReport {
    /// Keys appended.
    pub appended: u64,
    /// Bytes of the db file afterwards (its new high-water mark times the page size).
    pub new_size: u64,
    /// The last key appended, if any.
    pub last_key: Option<Vec<u8>>,
}

/// New pages are gathered up to about this many bytes before each positioned write.
const WRITE_CHUNK: usize = 1 << 20;

/// One leaf element: flags, key, value.
type LeafItem = (u32, Vec<u8>, Vec<u8>);

/// A child of a branch page: its first key and its page ID.
type Child = (Vec<u8>, u64);

fn write_error(pgid: u64, what: &str, e: &std::io::Error) -> BoltError {
    BoltError::Page {
        pgid,
        reason: format!("{what}: {e}"),
    }
}

/// A key for a message: hex, cut after 64 bytes.
fn show_key(key: &[u8]) -> String {
    let shown = hex::encode(&key[..key.len().min(64)]);
    if key.len() > 64 {
        format!("{shown}... ({} bytes)", key.len())
    } else {
        shown
    }
}

/// New pages written one after the other from the old high-water mark on, gathered into
/// chunks of about [`WRITE_CHUNK`] bytes.
struct PageWriter<'f> {
    file: &'f std::fs::File,
    page_size: usize,
    /// The page ID the next page gets.
    next: u64,
    /// Pages not written yet, the first of them page `buf_at`.
    buf: Vec<u8>,
    buf_at: u64,
}

impl<'f> PageWriter<'f> {
    fn new(file: &'f std::fs::File, page_size: usize, next: u64) -> Self {
        PageWriter {
            file,
            page_size,
            next,
            buf: Vec::new(),
            buf_at: next,
        }
    }

    /// Adds `page` (built for page ID `self.next`, whole pages), returning its page ID.
    fn push(&mut self, page: &[u8]) -> Result<u64, BoltError> {
        let pgid = self.next;
        if self.buf.is_empty() {
            self.buf_at = pgid;
        }
        self.buf.extend_from_slice(page);
        self.next += page.len().div_ceil(self.page_size).max(1) as u64;
        if self.buf.len() >= WRITE_CHUNK {
            self.flush()?;
        }
        Ok(pgid)
    }

    fn flush(&mut self) -> Result<(), BoltError> {
        use std::os::unix::fs::FileExt;
        if !self.buf.is_empty() {
            let at = self.buf_at.saturating_mul(self.page_size as u64);
            self.file
                .write_all_at(&self.buf, at)
                .map_err(|e| write_error(self.buf_at, "cannot be written", &e))?;
            self.buf.clear();
        }
        self.buf_at = self.next;
        Ok(())
    }
}

/// The leaf level being written: the items of the leaf being filled, the page bytes they
/// take, and the first key and page ID of each leaf written so far.
struct LeafLevel {
    items: Vec<LeafItem>,
    bytes: usize,
    written: Vec<Child>,
}

impl LeafLevel {
    fn new(items: Vec<LeafItem>) -> Self {
        let bytes = PAGE_HEADER
            + items
                .iter()
                .map(|(_, k, v)| ELEMENT_LEN + k.len() + v.len())
                .sum::<usize>();
        LeafLevel {
            items,
            bytes,
            written: Vec::new(),
        }
    }

    /// Adds an item, first writing out the leaf being filled when the item would take it past
    /// one page (an item alone on its leaf may be larger: it gets overflow pages).
    fn push(&mut self, item: LeafItem, out: &mut PageWriter<'_>) -> Result<(), BoltError> {
        let size = ELEMENT_LEN + item.1.len() + item.2.len();
        if !self.items.is_empty() && self.bytes + size > out.page_size {
            self.flush(out)?;
        }
        self.bytes += size;
        self.items.push(item);
        Ok(())
    }

    /// Writes the leaf being filled, if it holds anything.
    fn flush(&mut self, out: &mut PageWriter<'_>) -> Result<(), BoltError> {
        let Some((_, first, _)) = self.items.first() else {
            return Ok(());
        };
        let first = first.clone();
        let refs: Vec<(u32, &[u8], &[u8])> = self
            .items
            .iter()
            .map(|(f, k, v)| (*f, k.as_slice(), v.as_slice()))
            .collect();
        let page = leaf_page(out.next, &refs, out.page_size)?;
        let pgid = out.push(&page)?;
        self.written.push((first, pgid));
        self.items.clear();
        self.bytes = PAGE_HEADER;
        Ok(())
    }
}

/// One branch level: the elements of the old branch page on the rightmost path (`old`, empty
/// for a new level), its last child replaced by the first of `children` and the others added
/// after it, written as as many branch pages as they need (at least two elements each but
/// the last, so that a level always has fewer pages than children). Returns the pages as the
/// children of the level above.
fn branch_level(
    old: Vec<Child>,
    children: Vec<Child>,
    out: &mut PageWriter<'_>,
) -> Result<Vec<Child>, BoltError> {
    let mut elements = old;
    let mut children = children.into_iter();
    if let Some(last) = elements.last_mut() {
        // The old key stays: it routes lookups as it did.
        if let Some((_, pgid)) = children.next() {
            last.1 = pgid;
        }
    }
    elements.extend(children);
    let mut pages = Vec::new();
    let mut write = |chunk: &[Child], out: &mut PageWriter<'_>| -> Result<(), BoltError> {
        let refs: Vec<(&[u8], u64)> = chunk.iter().map(|(k, p)| (k.as_slice(), *p)).collect();
        let page = branch_page(out.next, &refs, out.page_size)?;
        let pgid = out.push(&page)?;
        if let Some((first, _)) = chunk.first() {
            pages.push((first.clone(), pgid));
        }
        Ok(())
    };
    let mut start = 0;
    let mut bytes = PAGE_HEADER;
    for (i, (key, _)) in elements.iter().enumerate() {
        let size = ELEMENT_LEN + key.len();
        if i >= start + 2 && bytes + size > out.page_size {
            write(&elements[start..i], out)?;
            start = i;
            bytes = PAGE_HEADER;
        }
        bytes += size;
    }
    write(&elements[start..], out)?;
    Ok(pages)
}

/// The leaf items of a leaf page.
fn leaf_items(pgid: u64, page: &Page<'_>) -> Result<Vec<LeafItem>, BoltError> {
    (0..page.count)
        .map(|i| {
            page.leaf(i)
                .map(|e| (e.flags, e.key.to_vec(), e.value.to_vec()))
                .map_err(|e| BoltError::Page { pgid, reason: e.0 })
        })
        .collect()
}

/// The rightmost path of the bucket tree rooted at page `root`: the elements of each branch
/// page on it from the root down (the last one leads down the path), and the items of the
/// last leaf.
fn rightmost_path<S: PageSource>(
    bolt: &BoltDb<S>,
    root: u64,
) -> Result<(Vec<Vec<Child>>, Vec<LeafItem>), BoltError> {
    let mut path = Vec::new();
    let mut pgid = root;
    let mut buf = Vec::new();
    loop {
        let bytes = bolt.read_page(pgid, &mut buf)?;
        let page = Page::parse(bytes).map_err(|e| BoltError::Page { pgid, reason: e.0 })?;
        if page.is_leaf() {
            return Ok((path, leaf_items(pgid, &page)?));
        }
        if !page.is_branch() || page.count == 0 {
            return Err(BoltError::Page {
                pgid,
                reason: format!("a {} page on a bucket's rightmost path", page.kind()),
            });
        }
        if path.len() >= 64 {
            return Err(BoltError::Page {
                pgid,
                reason: "the tree is too deep".into(),
            });
        }
        let elements = (0..page.count)
            .map(|i| {
                page.branch(i)
                    .map(|e| (e.key.to_vec(), e.pgid))
                    .map_err(|e| BoltError::Page { pgid, reason: e.0 })
            })
            .collect::<Result<Vec<Child>, BoltError>>()?;
        pgid = elements.last().map_or(0, |(_, child)| *child);
        path.push(elements);
    }
}

/// The last key of the top-level bucket `name` (`None` when it is missing or empty), reading
/// only its rightmost path.
pub fn last_key<S: PageSource>(
    bolt: &BoltDb<S>,
    name: &[u8],
) -> Result<Option<Vec<u8>>, BoltError> {
    match bolt.bucket(&bolt.root(), name)? {
        None => Ok(None),
        Some(crate::bbolt::Bucket::Page(root)) => {
            let (_, leaf) = rightmost_path(bolt, root)?;
            Ok(leaf.last().map(|(_, key, _)| key.clone()))
        }
        Some(inline) => {
            let mut last = None;
            bolt.for_each(&inline, |entry| {
                last = Some(entry.key.to_vec());
                Ok::<(), BoltError>(())
            })?;
            Ok(last)
        }
    }
}

/// Appends `items` (strictly increasing keys, all after the bucket's last key) to the top-level
/// bucket `bucket` of the db in `file`, as one new transaction: copy-on-write as bbolt commits,
/// so the db reads as before until the new meta page is written, and as after once it is.
///
/// `bolt` reads the same file as it was before the call. The file is first truncated to the
/// high-water mark (dropping etcd's trailer or anything else after the db; also when there is
/// nothing to append, in which case nothing else is written). The bucket's last leaf is
/// rewritten with the new items after its own (a nested bucket in it is kept, flags and all),
/// then new leaves follow, each written to the file as it fills (about one page each; an item
/// larger than a page gets a leaf of its own with overflow pages). Then each branch on the
/// rightmost path is rewritten with its last child replaced and the new children added, split
/// into several pages as needed, with new levels added up to a single root; every other page
/// of the bucket is shared with the old tree. An inline bucket (root page 0) has its items
/// written out as the first leaf. Last come a new root-bucket leaf (the top-level entries,
/// `bucket` pointing at its new root with its sequence kept), `sync_data`, the meta page of
/// transaction txid + 1 in slot `(txid + 1) % 2` (no freelist, as etcd runs bbolt), and
/// `sync_all`.
///
/// Memory is bounded by the number of leaves written, not by the data: the items of the leaf
/// being filled (one page, or one item larger than a page), a copy of the old rightmost path,
/// the first key and page ID of each new leaf and branch page, the top-level entries, and at
/// most about 1 MiB of pages waiting to be written.
///
/// A key that is not after the previous one (or the bucket's last key), an error from
/// `items`, or a failed write aborts before the meta page is written: the db then reads
/// exactly as before, and the pages already written after the old high-water mark are cut off
/// again (best effort; they are unreachable in any case). A missing bucket, or a top-level key
/// that is not a bucket, is an error before anything is written.
pub fn append_sorted<S: PageSource, I>(
    bolt: &BoltDb<S>,
    file: &std::fs::File,
    bucket: &[u8],
    items: I,
) -> Result<AppendReport, BoltError>
where
    I: IntoIterator<Item = Result<(Vec<u8>, Vec<u8>), BoltError>>,
{
    let meta = bolt.meta();
    let page_size = meta.page_size as usize;
    let old_fields = chosen_meta_fields(bolt)?;
    let old_size = meta
        .high_water_pgid
        .checked_mul(u64::from(meta.page_size))
        .ok_or_else(|| BoltError::Meta("high-water mark overflows".into()))?;

    // Everything read from the old tree is read before the file is touched.
    let mut top: Vec<LeafItem> = Vec::new();
    bolt.for_each(&bolt.root(), |entry| {
        let flags = if entry.is_bucket { BUCKET_LEAF_FLAG } else { 0 };
        top.push((flags, entry.key.to_vec(), entry.value.to_vec()));
        Ok::<(), BoltError>(())
    })?;
    let name = || String::from_utf8_lossy(bucket).into_owned();
    let index = top
        .iter()
        .position(|(_, key, _)| key.as_slice() == bucket)
        .ok_or_else(|| BoltError::Page {
            pgid: meta.root_pgid,
            reason: format!("no top-level bucket {:?} to append to", name()),
        })?;
    let (flags, _, value) = &top[index];
    if flags & BUCKET_LEAF_FLAG == 0 || value.len() < BUCKET_HEADER {
        return Err(BoltError::Page {
            pgid: meta.root_pgid,
            reason: format!("top-level key {:?} is not a bucket", name()),
        });
    }
    let root = read_u64(value, 0);
    let sequence = read_u64(value, 8);
    let (path, last_leaf) = if root == 0 {
        let inline = &value[BUCKET_HEADER..];
        let page = Page::parse(inline).map_err(|e| BoltError::Page {
            pgid: 0,
            reason: format!("inline bucket {:?}: {e}", name()),
        })?;
        if !page.is_leaf() {
            return Err(BoltError::Page {
                pgid: 0,
                reason: format!("inline bucket {:?} holds a {} page", name(), page.kind()),
            });
        }
        (Vec::new(), leaf_items(0, &page)?)
    } else {
        rightmost_path(bolt, root)?
    };

    file.set_len(old_size)
        .map_err(|e| write_error(meta.high_water_pgid, "cannot truncate the db file here", &e))?;
    let mut out = PageWriter::new(file, page_size, meta.high_water_pgid);
    let written = write_append(path, last_leaf, items, &mut out).and_then(|done| {
        let Some((new_root, appended, last_key)) = done else {
            return Ok(None);
        };
        // The new root-bucket leaf.
        let mut value = new_root.to_le_bytes().to_vec();
        value.extend_from_slice(&sequence.to_le_bytes());
        top[index] = (BUCKET_LEAF_FLAG, bucket.to_vec(), value);
        let refs: Vec<(u32, &[u8], &[u8])> = top
            .iter()
            .map(|(f, k, v)| (*f, k.as_slice(), v.as_slice()))
            .collect();
        let page = leaf_page(out.next, &refs, page_size)?;
        let root_pgid = out.push(&page)?;
        out.flush()?;
        file.sync_data()
            .map_err(|e| write_error(root_pgid, "cannot sync the new pages", &e))?;
        Ok(Some((root_pgid, appended, last_key)))
    });
    let (root_pgid, appended, last_key) = match written {
        Ok(Some(done)) => done,
        Ok(None) => {
            return Ok(AppendReport {
                appended: 0,
                new_size: old_size,
                last_key: None,
            });
        }
        Err(e) => {
            // Unreachable pages only; cutting them off is tidiness, not safety.
            let _ = file.set_len(old_size);
            return Err(e);
        }
    };

    let high_water = out.next;
    let (meta_at, page) = meta_page(old_fields, root_pgid, high_water, meta.txid + 1, page_size);
    {
        use std::os::unix::fs::FileExt;
        let slot = meta_at / meta.page_size.max(1) as u64;
        file.write_all_at(&page, meta_at)
            .map_err(|e| write_error(slot, "cannot write the new meta page", &e))?;
        file.sync_all()
            .map_err(|e| write_error(slot, "cannot sync the new meta page", &e))?;
    }
    Ok(AppendReport {
        appended,
        new_size: high_water.saturating_mul(u64::from(meta.page_size)),
        last_key: Some(last_key),
    })
}

/// Writes the bucket's new leaves and branches: the items of the old last leaf (`last_leaf`)
/// followed by `items`, then the branch pages of `path` (the old rightmost path, root first)
/// rewritten, then new levels up to a single root. Returns the new root, the number of items
/// appended and the last key, or `None` (nothing written) when `items` is empty.
fn write_append<I>(
    path: Vec<Vec<Child>>,
    last_leaf: Vec<LeafItem>,
    items: I,
    out: &mut PageWriter<'_>,
) -> Result<Option<(u64, u64, Vec<u8>)>, BoltError>
where
    I: IntoIterator<Item = Result<(Vec<u8>, Vec<u8>), BoltError>>,
{
    // An empty last leaf (not left by bbolt, but possible): its key in the parent bounds it.
    let floor = path.last().and_then(|b| b.last()).map(|(k, _)| k.clone());
    let mut leaves = LeafLevel::new(last_leaf);
    let mut appended = 0u64;
    for item in items {
        let (key, value) = item?;
        let previous = leaves
            .items
            .last()
            .map(|(_, k, _)| k.as_slice())
            .or(floor.as_deref());
        if let Some(previous) = previous.filter(|p| key.as_slice() <= *p) {
            let after = if appended == 0 {
                "the bucket's last key"
            } else {
                "the previous key"
            };
            return Err(BoltError::Page {
                pgid: 0,
                reason: format!(
                    "appended key {} (item {appended}) does not sort after {after} {}",
                    show_key(&key),
                    show_key(previous)
                ),
            });
        }
        leaves.push((0, key, value), out)?;
        appended += 1;
    }
    if appended == 0 {
        return Ok(None);
    }
    let last_key = leaves
        .items
        .last()
        .map(|(_, k, _)| k.clone())
        .unwrap_or_default();
    leaves.flush(out)?;
    let mut children = leaves.written;
    for old in path.into_iter().rev() {
        children = branch_level(old, children, out)?;
    }
    while children.len() > 1 {
        children = branch_level(Vec::new(), children, out)?;
    }
    let root = children
        .first()
        .map(|(_, pgid)| *pgid)
        .ok_or_else(|| BoltError::Page {
            pgid: 0,
            reason: "no pages were written".into(),
        })?;
    Ok(Some((root, appended, last_key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PS: usize = 4096;

    /// Rewrites a copy of `db` in memory and checks the result as a whole.
    fn rewrite(
        db: &[u8],
        replace: &BTreeMap<Vec<u8>, BucketContents>,
        append: Option<&Append>,
    ) -> Result<Vec<u8>, BoltError> {
        let bolt = BoltDb::open(db)?;
        let patch = replace_buckets(&bolt, replace, append)?;
        let mut out = db.to_vec();
        patch.apply_to(&mut out);
        let written = BoltDb::open(out.as_slice())?;
        written.check()?;
        verify_rewrite(&written, replace, append)?;
        Ok(out)
    }

    fn keys(bolt: &BoltDb<&[u8]>, bucket: &crate::bbolt::Bucket) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        bolt.for_each(bucket, |e| {
            out.push(e.key.to_vec());
            Ok::<(), BoltError>(())
        })
        .unwrap();
        out
    }

    fn meta(id: u64, root: u64, hwm: u64, txid: u64) -> Vec<u8> {
        let mut fields = Vec::new();
        fields.extend_from_slice(&0xED0C_DAEDu32.to_le_bytes());
        fields.extend_from_slice(&2u32.to_le_bytes());
        fields.extend_from_slice(&(PS as u32).to_le_bytes());
        fields.extend_from_slice(&0u32.to_le_bytes());
        fields.extend_from_slice(&root.to_le_bytes());
        fields.extend_from_slice(&0u64.to_le_bytes());
        fields.extend_from_slice(&NO_FREELIST.to_le_bytes());
        fields.extend_from_slice(&hwm.to_le_bytes());
        fields.extend_from_slice(&txid.to_le_bytes());
        let sum = fnv1a64(&fields);
        let mut page = id.to_le_bytes().to_vec();
        page.extend_from_slice(&META_PAGE.to_le_bytes());
        page.extend_from_slice(&[0; 6]);
        page.extend(fields);
        page.extend_from_slice(&sum.to_le_bytes());
        page.resize(PS, 0);
        page
    }

    #[test]
    fn replaced_buckets_read_back_and_the_rest_is_kept() {
        // Root leaf at page 2 with bucket "keep" (page 3) and inline bucket "meta".
        let keep_leaf = leaf_page(3, &[(0, b"k", b"v")], PS).unwrap();
        let mut inline = 0u64.to_le_bytes().to_vec();
        inline.extend_from_slice(&0u64.to_le_bytes());
        let inline_leaf = leaf_page(0, &[(0, b"old", b"1")], PS).unwrap();
        inline.extend_from_slice(&inline_leaf[..PAGE_HEADER + ELEMENT_LEN + 4]);
        let mut keep = 3u64.to_le_bytes().to_vec();
        keep.extend_from_slice(&5u64.to_le_bytes());
        let root = leaf_page(
            2,
            &[
                (BUCKET_LEAF_FLAG, b"keep", &keep),
                (BUCKET_LEAF_FLAG, b"meta", &inline),
            ],
            PS,
        )
        .unwrap();
        let mut db = meta(0, 2, 4, 6);
        db.extend(meta(1, 2, 4, 5));
        db.extend(root);
        db.extend(keep_leaf);
        BoltDb::open(db.as_slice()).unwrap().check().unwrap();

        let mut replace = BTreeMap::new();
        let mut contents = BucketContents::new();
        contents.insert(b"term".to_vec(), 1u64.to_be_bytes().to_vec());
        replace.insert(b"meta".to_vec(), contents);
        replace.insert(b"new".to_vec(), BucketContents::new());
        let out = rewrite(&db, &replace, None).unwrap();
        let bolt = BoltDb::open(out.as_slice()).unwrap();
        assert_eq!(bolt.meta().txid, 7);
        // Slot 7 % 2 = 1 was written; slot 0 still holds txid 6.
        assert_eq!(read_u64(&out, 0), 0);
        assert_eq!(read_u64(&out, PS), 1);
        let root = bolt.root();
        assert_eq!(
            keys(&bolt, &root),
            [b"keep".to_vec(), b"meta".to_vec(), b"new".to_vec()]
        );
        let meta_bucket = bolt.bucket(&root, b"meta").unwrap().unwrap();
        assert!(bolt.get(&meta_bucket, b"old").unwrap().is_none());
        assert_eq!(
            bolt.get(&meta_bucket, b"term").unwrap().unwrap().0,
            1u64.to_be_bytes()
        );
        let kept = bolt.bucket(&root, b"keep").unwrap().unwrap();
        assert_eq!(bolt.get(&kept, b"k").unwrap().unwrap().0, b"v");
        assert_eq!(
            read_u64(&bolt.get(&root, b"keep").unwrap().unwrap().0, 8),
            5
        );
    }

    #[test]
    fn a_bucket_larger_than_a_page_uses_overflow_pages() {
        let root = leaf_page(2, &[], PS).unwrap();
        let mut db = meta(0, 2, 3, 2);
        db.extend(meta(1, 2, 3, 1));
        db.extend(root);
        let mut contents = BucketContents::new();
        for i in 0..100u32 {
            contents.insert(i.to_be_bytes().to_vec(), vec![7u8; 100]);
        }
        let mut replace = BTreeMap::new();
        replace.insert(b"big".to_vec(), contents);
        let out = rewrite(&db, &replace, None).unwrap();
        let bolt = BoltDb::open(out.as_slice()).unwrap();
        let big = bolt.bucket(&bolt.root(), b"big").unwrap().unwrap();
        assert_eq!(keys(&bolt, &big).len(), 100);
    }

    #[test]
    fn a_key_appended_to_a_branched_bucket_copies_the_rightmost_path() {
        let mut bucket = 3u64.to_le_bytes().to_vec();
        bucket.extend_from_slice(&9u64.to_le_bytes());
        let root = leaf_page(2, &[(BUCKET_LEAF_FLAG, b"key", &bucket)], PS).unwrap();
        let branch = branch_page(3, &[(b"a", 4), (b"m", 5)], PS).unwrap();
        let left = leaf_page(4, &[(0, b"a", b"1"), (0, b"b", b"2")], PS).unwrap();
        let right = leaf_page(5, &[(0, b"m", b"3")], PS).unwrap();
        let mut db = meta(0, 2, 6, 4);
        db.extend(meta(1, 2, 6, 3));
        for page in [root, branch, left, right] {
            db.extend(page);
        }
        BoltDb::open(db.as_slice()).unwrap().check().unwrap();
        let append = Append {
            bucket: b"key".to_vec(),
            key: b"z".to_vec(),
            value: Vec::new(),
        };
        let out = rewrite(&db, &BTreeMap::new(), Some(&append)).unwrap();
        let bolt = BoltDb::open(out.as_slice()).unwrap();
        let key = bolt.bucket(&bolt.root(), b"key").unwrap().unwrap();
        assert_eq!(
            keys(&bolt, &key),
            [b"a".to_vec(), b"b".to_vec(), b"m".to_vec(), b"z".to_vec()]
        );
        assert_eq!(bolt.get(&key, b"z").unwrap().unwrap().0, b"");
        // The bucket's sequence is kept; a key that does not sort last is refused.
        let value = bolt.get(&bolt.root(), b"key").unwrap().unwrap().0;
        assert_eq!(read_u64(&value, 8), 9);
        let early = Append {
            key: b"c".to_vec(),
            ..append
        };
        assert!(rewrite(&db, &BTreeMap::new(), Some(&early)).is_err());
    }

    // ---- append_sorted ----

    use crate::bbolt::page::build;
    use crate::bbolt::{Bucket, DbFile};
    use std::io::Write as _;

    /// An item to append, as `append_sorted` takes it.
    type NewItem = Result<(Vec<u8>, Vec<u8>), BoltError>;

    /// Sequence of the target bucket "key" in the test dbs.
    const KEY_SEQUENCE: u64 = 9;
    /// Txid of the test dbs' newest meta page.
    const TXID: u64 = 10;
    const TRAILER: [u8; 32] = [0xAB; 32];

    /// An etcd revision key: 8-byte main, `_`, 8-byte sub (17 bytes), `t` for a tombstone.
    fn rev(main: u64, tombstone: bool) -> Vec<u8> {
        let mut key = main.to_be_bytes().to_vec();
        key.push(b'_');
        key.extend_from_slice(&0u64.to_be_bytes());
        if tombstone {
            key.push(b't');
        }
        key
    }

    /// The key of revision `i` in the test data (every 97th a tombstone).
    fn key_of(i: u64) -> Vec<u8> {
        rev(i, i % 97 == 0)
    }

    /// The value of revision `i`: 0..300 bytes, 10 KiB every 9973rd, 2 MiB at 50,000.
    fn value_of(i: u64) -> Vec<u8> {
        let len = match i {
            50_000 => 2 << 20,
            i if i % 9973 == 0 => 10 << 10,
            i => (i * 7919 % 300) as usize,
        };
        (0..len).map(|j| (i as u8).wrapping_add(j as u8)).collect()
    }

    fn bucket_value(root: u64, sequence: u64) -> Vec<u8> {
        let mut value = root.to_le_bytes().to_vec();
        value.extend_from_slice(&sequence.to_le_bytes());
        value
    }

    fn inline_value(items: &[(u32, &[u8], &[u8])]) -> Vec<u8> {
        let mut value = bucket_value(0, 3);
        value.extend(build::leaf(0, items));
        value
    }

    /// Pages laid out from page 2 on, each built knowing its page ID.
    struct Layout {
        pages: Vec<u8>,
        next: u64,
    }

    impl Layout {
        fn new() -> Self {
            Layout {
                pages: Vec::new(),
                next: 2,
            }
        }

        fn add(&mut self, page: Vec<u8>) -> u64 {
            let id = self.next;
            assert_eq!(read_u64(&page, 0), id);
            self.next += (page.len() / PS) as u64;
            self.pages.extend(page);
            id
        }

        /// A bucket tree over `items`: leaves of `per_leaf` items, branches of `per_branch`
        /// children, levels up to a single root; returns the root.
        fn tree(&mut self, items: &[LeafItem], per_leaf: usize, per_branch: usize) -> u64 {
            let mut children: Vec<Child> = Vec::new();
            for chunk in items.chunks(per_leaf) {
                let refs: Vec<(u32, &[u8], &[u8])> = chunk
                    .iter()
                    .map(|(f, k, v)| (*f, k.as_slice(), v.as_slice()))
                    .collect();
                let page = leaf_page(self.next, &refs, PS).unwrap();
                children.push((chunk[0].1.clone(), self.add(page)));
            }
            while children.len() > 1 {
                let mut level = Vec::new();
                for chunk in children.chunks(per_branch) {
                    let refs: Vec<(&[u8], u64)> =
                        chunk.iter().map(|(k, p)| (k.as_slice(), *p)).collect();
                    let page = branch_page(self.next, &refs, PS).unwrap();
                    level.push((chunk[0].0.clone(), self.add(page)));
                }
                children = level;
            }
            children[0].1
        }

        /// The db: meta pages (txid TXID in slot 0, TXID - 1 in slot 1) and the pages.
        fn db(self, root: u64) -> Vec<u8> {
            let mut db = meta(0, root, self.next, TXID);
            db.extend(meta(1, root, self.next, TXID - 1));
            db.extend(self.pages);
            db
        }
    }

    /// The items of the old "key" bucket: revisions 1..=old, then a nested inline bucket as
    /// the last item of the last leaf.
    fn old_key_items(old: u64) -> Vec<LeafItem> {
        let mut items: Vec<LeafItem> = (1..=old).map(|i| (0, key_of(i), value_of(i))).collect();
        items.push((BUCKET_LEAF_FLAG, nested_key(old), nested_value()));
        items
    }

    /// Sorts after revision `old` and before revision `old + 1`.
    fn nested_key(old: u64) -> Vec<u8> {
        let mut key = rev(old, false);
        key.push(b'n');
        key
    }

    fn nested_value() -> Vec<u8> {
        inline_value(&[(0, b"x", b"y")])
    }

    /// A db with buckets "empty" (inline, no items), "key" (a four-level tree over `old`
    /// revisions and a nested bucket, sequence 9), "lease" (inline, with a nested bucket
    /// last), "meta" (one page-rooted leaf, sequence 5) and "paged" (an empty page-rooted
    /// leaf).
    fn sample_db(old: u64) -> Vec<u8> {
        let mut layout = Layout::new();
        let key_root = layout.tree(&old_key_items(old), 16, 8);
        let meta_root = layout.add(leaf_page(layout.next, &[(0, b"term", b"1")], PS).unwrap());
        let paged_root = layout.add(leaf_page(layout.next, &[], PS).unwrap());
        let lease = inline_value(&[
            (0, b"a", b"1"),
            (
                BUCKET_LEAF_FLAG,
                b"b",
                &inline_value(&[(0, b"in", b"side")]),
            ),
        ]);
        let root_items: [(u32, &[u8], &[u8]); 5] = [
            (BUCKET_LEAF_FLAG, b"empty", &inline_value(&[])),
            (
                BUCKET_LEAF_FLAG,
                b"key",
                &bucket_value(key_root, KEY_SEQUENCE),
            ),
            (BUCKET_LEAF_FLAG, b"lease", &lease),
            (BUCKET_LEAF_FLAG, b"meta", &bucket_value(meta_root, 5)),
            (BUCKET_LEAF_FLAG, b"paged", &bucket_value(paged_root, 0)),
        ];
        let root = layout.add(leaf_page(layout.next, &root_items, PS).unwrap());
        layout.db(root)
    }

    /// `db` in a temporary file, followed by a trailer as etcd's snapshot has.
    fn db_file(db: &[u8]) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(db).unwrap();
        file.write_all(&TRAILER).unwrap();
        file
    }

    /// The db in `file`, ignoring any partial page at its end (such as a trailer).
    fn open_file(file: &std::fs::File) -> BoltDb<DbFile> {
        let len = file.metadata().unwrap().len();
        BoltDb::open(DbFile::new(
            file.try_clone().unwrap(),
            len - len % PS as u64,
        ))
        .unwrap()
    }

    /// Every top-level entry, and every entry of each bucket, as the db reads.
    type Dump = Vec<(Vec<u8>, Vec<u8>, Vec<(Vec<u8>, Vec<u8>, bool)>)>;

    fn dump(bolt: &BoltDb<DbFile>) -> (u64, Dump) {
        let mut out = Dump::new();
        bolt.for_each(&bolt.root(), |entry| {
            let bucket = entry.bucket()?;
            let mut entries = Vec::new();
            bolt.for_each(&bucket, |e| {
                entries.push((e.key.to_vec(), e.value.to_vec(), e.is_bucket));
                Ok::<(), BoltError>(())
            })?;
            out.push((entry.key.to_vec(), entry.value.to_vec(), entries));
            Ok::<(), BoltError>(())
        })
        .unwrap();
        (bolt.meta().txid, out)
    }

    fn new_items(range: std::ops::RangeInclusive<u64>) -> impl Iterator<Item = NewItem> {
        range.map(|i| Ok((key_of(i), value_of(i))))
    }

    fn top_value(bolt: &BoltDb<DbFile>, name: &[u8]) -> Vec<u8> {
        bolt.get(&bolt.root(), name).unwrap().unwrap().0
    }

    fn bucket(bolt: &BoltDb<DbFile>, name: &[u8]) -> Bucket {
        bolt.bucket(&bolt.root(), name).unwrap().unwrap()
    }

    #[test]
    fn a_hundred_thousand_items_append_to_a_multi_level_bucket_and_read_back() {
        const OLD: u64 = 2000;
        const NEW: u64 = 100_000;
        let db = sample_db(OLD);
        let file = db_file(&db);
        let before = open_file(&file);
        before.check().unwrap();
        let (_, old_dump) = dump(&before);
        let old_meta = before.meta();

        let report = append_sorted(&before, &file, b"key", new_items(OLD + 1..=OLD + NEW)).unwrap();
        assert_eq!(report.appended, NEW);
        assert_eq!(report.last_key, Some(key_of(OLD + NEW)));
        // The trailer is gone: the file ends with the db's last page.
        assert_eq!(file.metadata().unwrap().len(), report.new_size);
        assert_eq!(report.new_size % PS as u64, 0);
        let mut at_trailer = [0u8; TRAILER.len()];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut at_trailer, db.len() as u64).unwrap();
        assert_ne!(at_trailer, TRAILER);

        let after = BoltDb::open(DbFile::whole(file.try_clone().unwrap()).unwrap()).unwrap();
        after.check().unwrap();
        let meta = after.meta();
        assert_eq!(meta.txid, old_meta.txid + 1);
        assert_eq!(meta.high_water_pgid * PS as u64, report.new_size);
        assert!(meta.high_water_pgid > old_meta.high_water_pgid);

        // Every key, old and new, in order with its value; the nested bucket kept as one.
        let mut expected = old_key_items(OLD)
            .into_iter()
            .chain((OLD + 1..=OLD + NEW).map(|i| (0, key_of(i), value_of(i))));
        let key = bucket(&after, b"key");
        let mut seen = 0u64;
        after
            .for_each(&key, |e| {
                let (flags, k, v) = expected.next().unwrap();
                assert_eq!(e.key, k.as_slice(), "entry {seen}");
                assert_eq!(e.value, v.as_slice(), "entry {seen}");
                assert_eq!(e.is_bucket, flags == BUCKET_LEAF_FLAG, "entry {seen}");
                seen += 1;
                Ok::<(), BoltError>(())
            })
            .unwrap();
        assert!(expected.next().is_none());
        assert_eq!(seen, OLD + 1 + NEW);
        for i in [1, 1000, OLD, OLD + 1, 9973, 50_000, 77_777, OLD + NEW] {
            assert_eq!(
                after.get(&key, &key_of(i)).unwrap(),
                Some((value_of(i), false)),
                "{i}"
            );
        }
        assert_eq!(after.get(&key, &key_of(OLD + NEW + 1)).unwrap(), None);
        assert_eq!(
            after.get(&key, &nested_key(OLD)).unwrap(),
            Some((nested_value(), true))
        );
        let nested = after.bucket(&key, &nested_key(OLD)).unwrap().unwrap();
        assert_eq!(
            after.get(&nested, b"x").unwrap(),
            Some((b"y".to_vec(), false))
        );

        // Off the rightmost path, pages are shared: the leftmost leaf is still page 2.
        let Bucket::Page(mut pgid) = key else {
            panic!("inline")
        };
        let mut buf = Vec::new();
        let mut depth = 0;
        loop {
            let page = Page::parse(after.read_page(pgid, &mut buf).unwrap()).unwrap();
            if page.is_leaf() {
                break;
            }
            pgid = page.branch(0).unwrap().pgid;
            depth += 1;
        }
        assert_eq!(pgid, 2);
        assert!(depth >= 3, "a tree of {depth} branch levels");

        // The bucket's sequence, and the other buckets, are kept as they were.
        assert_eq!(read_u64(&top_value(&after, b"key"), 8), KEY_SEQUENCE);
        let (_, new_dump) = dump(&after);
        let untouched = |d: &Dump| -> Dump {
            d.iter()
                .filter(|(name, _, _)| name != b"key")
                .cloned()
                .collect()
        };
        assert_eq!(untouched(&new_dump), untouched(&old_dump));
    }

    #[test]
    fn an_inline_bucket_is_written_out_with_its_items_and_nested_bucket() {
        let db = sample_db(40);
        let file = db_file(&db);
        let bolt = open_file(&file);
        let items = (0..300u32).map(|i| Ok((format!("c{i:04}").into_bytes(), vec![i as u8; 100])));
        let report = append_sorted(&bolt, &file, b"lease", items).unwrap();
        assert_eq!(report.appended, 300);
        assert_eq!(report.last_key, Some(b"c0299".to_vec()));
        let after = open_file(&file);
        after.check().unwrap();
        assert_eq!(after.meta().txid, TXID + 1);
        let lease = bucket(&after, b"lease");
        assert!(matches!(lease, Bucket::Page(_)));
        let (_, dumped) = dump(&after);
        let (_, _, entries) = dumped.iter().find(|(n, _, _)| n == b"lease").unwrap();
        assert_eq!(entries.len(), 302);
        assert_eq!(entries[0], (b"a".to_vec(), b"1".to_vec(), false));
        assert_eq!(entries[1].0, b"b");
        assert!(entries[1].2, "the nested bucket keeps its flag");
        for (i, (k, v, is_bucket)) in entries[2..].iter().enumerate() {
            assert_eq!(k, format!("c{i:04}").as_bytes());
            assert_eq!((v, *is_bucket), (&vec![i as u8; 100], false));
        }
        let nested = after.bucket(&lease, b"b").unwrap().unwrap();
        assert_eq!(
            after.get(&nested, b"in").unwrap(),
            Some((b"side".to_vec(), false))
        );
        // The inline bucket's sequence (3) is kept.
        assert_eq!(read_u64(&top_value(&after, b"lease"), 8), 3);
    }

    #[test]
    fn empty_inline_and_empty_page_rooted_buckets_take_appends() {
        let db = sample_db(40);
        let file = db_file(&db);
        for name in [&b"empty"[..], b"paged"] {
            let bolt = open_file(&file);
            let report = append_sorted(&bolt, &file, name, new_items(1..=5000)).unwrap();
            assert_eq!(report.appended, 5000);
            let after = open_file(&file);
            after.check().unwrap();
            let b = bucket(&after, name);
            let mut expected = 1..=5000u64;
            after
                .for_each(&b, |e| {
                    let i = expected.next().unwrap();
                    assert_eq!(
                        (e.key, e.value),
                        (key_of(i).as_slice(), value_of(i).as_slice())
                    );
                    Ok::<(), BoltError>(())
                })
                .unwrap();
            assert!(expected.next().is_none());
            assert_eq!(
                after.get(&b, &key_of(2500)).unwrap(),
                Some((value_of(2500), false))
            );
        }
        assert_eq!(open_file(&file).meta().txid, TXID + 2);
    }

    #[test]
    fn two_appends_in_a_row_are_two_transactions_and_read_back() {
        let file = db_file(&sample_db(100));
        let first = append_sorted(&open_file(&file), &file, b"key", new_items(101..=3000)).unwrap();
        let bolt = open_file(&file);
        assert_eq!(bolt.meta().txid, TXID + 1);
        let second = append_sorted(&bolt, &file, b"key", new_items(3001..=6000)).unwrap();
        assert!(second.new_size > first.new_size);
        let after = open_file(&file);
        after.check().unwrap();
        assert_eq!(after.meta().txid, TXID + 2);
        // Both meta slots hold valid metas now: 11 in slot 1, 12 in slot 0.
        let mut slot0 = [0u8; 8];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut slot0, (PAGE_HEADER + 48) as u64)
            .unwrap();
        assert_eq!(u64::from_le_bytes(slot0), TXID + 2);
        let key = bucket(&after, b"key");
        let mut keys = Vec::new();
        after
            .for_each(&key, |e| {
                if !e.is_bucket {
                    keys.push(e.key.to_vec());
                    assert_eq!(e.value, value_of(keys.len() as u64).as_slice());
                }
                Ok::<(), BoltError>(())
            })
            .unwrap();
        assert_eq!(keys, (1..=6000).map(key_of).collect::<Vec<_>>());
    }

    /// Runs a failing append on a fresh sample db and checks it reads exactly as before.
    fn fails_and_leaves_the_db_as_it_was(name: &[u8], items: Vec<NewItem>) -> BoltError {
        let file = db_file(&sample_db(200));
        let bolt = open_file(&file);
        let before = dump(&bolt);
        let err = append_sorted(&bolt, &file, name, items).unwrap_err();
        let after = open_file(&file);
        after.check().unwrap();
        assert_eq!(dump(&after), before, "after {err}");
        assert_eq!(after.meta(), bolt.meta());
        err
    }

    #[test]
    fn keys_out_of_order_leave_the_db_as_it_was() {
        // Not after the bucket's last key (the nested bucket after revision 200).
        for first in [rev(100, false), nested_key(200), rev(200, false)] {
            let items = vec![Ok((first, b"v".to_vec()))];
            let err = fails_and_leaves_the_db_as_it_was(b"key", items).to_string();
            assert!(
                err.contains("does not sort after the bucket's last key"),
                "{err}"
            );
        }
        // Enough good items to have written leaves, then one out of order, then a repeat.
        for bad in [1500, 1999] {
            let mut items: Vec<_> = new_items(201..=2000).collect();
            items.push(Ok((key_of(bad), Vec::new())));
            let err = fails_and_leaves_the_db_as_it_was(b"key", items).to_string();
            assert!(
                err.contains("does not sort after the previous key"),
                "{err}"
            );
            assert!(err.contains(&hex::encode(key_of(bad))), "{err}");
        }
        let items = vec![Ok((b"a".to_vec(), Vec::new()))];
        let err = fails_and_leaves_the_db_as_it_was(b"lease", items).to_string();
        assert!(err.contains("last key"), "{err}");
    }

    #[test]
    fn an_iterator_error_leaves_the_db_as_it_was() {
        let mut items: Vec<_> = new_items(201..=3000).collect();
        items.push(Err(BoltError::Meta("the source broke".into())));
        items.extend(new_items(3001..=3010));
        let err = fails_and_leaves_the_db_as_it_was(b"key", items);
        assert_eq!(err, BoltError::Meta("the source broke".into()));
    }

    #[test]
    fn a_missing_bucket_or_a_plain_value_is_refused_before_writing() {
        let err = fails_and_leaves_the_db_as_it_was(b"nope", new_items(1..=3).collect());
        assert!(
            err.to_string().contains("no top-level bucket \"nope\""),
            "{err}"
        );
        // A top-level key that is not a bucket.
        let mut layout = Layout::new();
        let root = layout.add(leaf_page(2, &[(0, b"plain", b"v")], PS).unwrap());
        let file = db_file(&layout.db(root));
        let len = file.metadata().unwrap().len();
        let err = append_sorted(&open_file(&file), &file, b"plain", new_items(1..=3)).unwrap_err();
        assert!(err.to_string().contains("not a bucket"), "{err}");
        assert_eq!(file.metadata().unwrap().len(), len, "nothing touched");
    }

    #[test]
    fn zero_items_write_nothing_but_cut_the_trailer() {
        let db = sample_db(200);
        let file = db_file(&db);
        let bolt = open_file(&file);
        let before = dump(&bolt);
        let report = append_sorted(&bolt, &file, b"key", std::iter::empty()).unwrap();
        assert_eq!(
            report,
            AppendReport {
                appended: 0,
                new_size: db.len() as u64,
                last_key: None,
            }
        );
        assert_eq!(file.metadata().unwrap().len(), db.len() as u64);
        assert_eq!(dump(&open_file(&file)), before);
    }

    #[test]
    fn branch_levels_split_and_grow_to_a_single_root() {
        // 2,000 children with 300-byte keys: 12 per branch page, so 167, 14, 2 and 1 pages.
        let children: Vec<Child> = (0..2000u64)
            .map(|i| {
                let mut key = i.to_be_bytes().to_vec();
                key.resize(300, 0);
                (key, i + 1000)
            })
            .collect();
        let file = tempfile::tempfile().unwrap();
        let mut out = PageWriter::new(&file, PS, 2);
        let mut level = children.clone();
        let mut levels = 0;
        while level.len() > 1 {
            let next = branch_level(Vec::new(), level.clone(), &mut out).unwrap();
            assert!(next.len() < level.len());
            assert_eq!(next[0].0, level[0].0);
            level = next;
            levels += 1;
        }
        assert_eq!(levels, 4);
        // Huge keys still make progress: two per page at least.
        let huge: Vec<Child> = (0..5u8).map(|i| (vec![i; 3 * PS], 9)).collect();
        let next = branch_level(Vec::new(), huge, &mut out).unwrap();
        assert_eq!(next.len(), 3);
        // An old branch keeps its keys and gets its last child replaced.
        let old = vec![(b"a".to_vec(), 4), (b"m".to_vec(), 5)];
        let new = vec![(b"n".to_vec(), 40), (b"x".to_vec(), 41)];
        let start = out.next;
        let pages = branch_level(old, new, &mut out).unwrap();
        out.flush().unwrap();
        assert_eq!(pages, [(b"a".to_vec(), start)]);
        let mut page = vec![0u8; PS];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut page, start * PS as u64).unwrap();
        let page = Page::parse(&page).unwrap();
        let elements: Vec<_> = (0..page.count).map(|i| page.branch(i).unwrap()).collect();
        let got: Vec<(&[u8], u64)> = elements.iter().map(|e| (e.key, e.pgid)).collect();
        assert_eq!(got, [(&b"a"[..], 4), (b"m", 40), (b"x", 41)]);
    }
}
