//! [`append_sorted`]: any number of sorted keys streamed onto the end of one top-level bucket
//! as one transaction, leaves written to the file as they fill.

use super::replace::meta_page;
use super::*;

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
pub(super) type LeafItem = (u32, Vec<u8>, Vec<u8>);

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
pub(super) struct PageWriter<'f> {
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
pub(super) struct LeafLevel {
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
pub(super) fn branch_level(
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
pub(super) fn leaf_items(pgid: u64, page: &Page<'_>) -> Result<Vec<LeafItem>, BoltError> {
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
        Some(crate::Bucket::Page(root)) => {
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
#[path = "tests.rs"]
mod tests;
