//! Replacing whole flat top-level buckets, and appending one key to one, as one transaction
//! written as a [`Patch`].

use std::collections::BTreeMap;

use super::*;

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

/// Where a transaction's new pages go: into the db's free pages (the lowest run that holds
/// a page), as bbolt allocates from its free list, else after the high-water mark.
struct NewPages {
    free: FreePages,
    page_size: usize,
    /// The old high-water mark: pages below it are free ones reused.
    high_water: u64,
    /// The next page after the high-water mark (the new mark once done).
    next: u64,
    /// Free pages overwritten: (offset, bytes).
    reused: Vec<(u64, Vec<u8>)>,
    /// Pages after the old high-water mark, in order.
    appended: Vec<u8>,
}

impl NewPages {
    /// Places `page` (whole pages, its header's ID still to set) and returns its ID.
    fn put(&mut self, mut page: Vec<u8>) -> u64 {
        let span = (page.len() / self.page_size).max(1) as u64;
        let pgid = self.free.take(span).unwrap_or_else(|| {
            let pgid = self.next;
            self.next += span;
            pgid
        });
        page[..8].copy_from_slice(&pgid.to_le_bytes());
        if pgid < self.high_water {
            self.reused.push((pgid * self.page_size as u64, page));
        } else {
            self.appended.extend(page);
        }
        pgid
    }
}

/// Copies the rightmost path of the bucket rooted at `root` with `append` added to its last
/// leaf, placing the new pages with `pages`; returns the new root pgid.
fn append_rightmost<S: PageSource>(
    bolt: &BoltDb<S>,
    root: u64,
    append: &Append,
    pages: &mut NewPages,
) -> Result<u64, BoltError> {
    let page_size = pages.page_size;
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
        refuse_if_listed_free(&pages.free, pgid, page.overflow)?;
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
        let err = |e: crate::PageError| BoltError::Page { pgid, reason: e.0 };
        let page = Page::parse(&buf).map_err(err)?;
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
            leaf_page(pgid, &items, page_size)?
        } else {
            let mut items = Vec::with_capacity(usize::from(page.count));
            for i in 0..page.count {
                let e = page.branch(i).map_err(err)?;
                items.push((e.key, e.pgid));
            }
            if let (Some(last), Some(child)) = (items.last_mut(), child) {
                last.1 = child;
            }
            branch_page(pgid, &items, page_size)?
        };
        child = Some(pages.put(bytes));
    }
    child.ok_or_else(|| BoltError::Page {
        pgid: root,
        reason: "empty path".into(),
    })
}

/// Refuses free pages that include a page the tree uses (`pgid` and its overflow): they
/// were listed for another db, or for this one before a change.
fn refuse_if_listed_free(free: &FreePages, pgid: u64, overflow: u32) -> Result<(), BoltError> {
    let end = pgid.saturating_add(u64::from(overflow));
    if free
        .runs()
        .iter()
        .any(|(start, n)| *start <= end && pgid < start.saturating_add(*n))
    {
        return Err(BoltError::Page {
            pgid,
            reason: "the free pages given for the rewrite include a page in use".into(),
        });
    }
    Ok(())
}

/// The writes that turn a db into its rewritten self: new pages in free pages of the db and
/// after its old high-water mark, then the new meta page. Apply them in order; the meta page
/// last makes them visible (the pages reused are free under the meta page in use, which the
/// new one does not overwrite: bbolt's own discipline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// New pages written over free pages of the db: (offset, bytes), below `pages_at`.
    pub reused: Vec<(u64, Vec<u8>)>,
    /// Offset of the new pages after the old high-water mark (the mark times the page size).
    pub pages_at: u64,
    /// The new pages after the old high-water mark.
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
        for (at, page) in &self.reused {
            let at = usize::try_from(*at).unwrap_or(usize::MAX);
            db[at..at + page.len()].copy_from_slice(page);
        }
        db[pages_at..end].copy_from_slice(&self.pages);
        let meta_at = usize::try_from(self.meta_at).unwrap_or(usize::MAX);
        db[meta_at..meta_at + self.meta.len()].copy_from_slice(&self.meta);
    }

    /// Applies the patch to a db file (cutting off anything after the old high-water mark,
    /// such as etcd's trailer) and syncs it: the new pages first, then the meta page.
    pub fn apply_to_file(&self, file: &std::fs::File) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        file.set_len(self.pages_at)?;
        for (at, page) in &self.reused {
            file.write_all_at(page, *at)?;
        }
        file.write_all_at(&self.pages, self.pages_at)?;
        file.sync_data()?;
        file.write_all_at(&self.meta, self.meta_at)?;
        file.sync_all()
    }
}

/// The value of a top-level bucket holding `items` with `sequence`: inline (root 0, the
/// leaf page unpadded) when bbolt would keep it inline in its parent, else rooted at a new
/// leaf placed with `pages`.
fn bucket_value(
    items: &[(u32, &[u8], &[u8])],
    sequence: u64,
    pages: &mut NewPages,
) -> Result<Vec<u8>, BoltError> {
    let mut value = Vec::new();
    match inline_leaf(items, pages.page_size)? {
        Some(leaf) => {
            value.extend_from_slice(&0u64.to_le_bytes());
            value.extend_from_slice(&sequence.to_le_bytes());
            value.extend(leaf);
        }
        None => {
            let pgid = pages.put(leaf_page(0, items, pages.page_size)?);
            value.extend_from_slice(&pgid.to_le_bytes());
            value.extend_from_slice(&sequence.to_le_bytes());
        }
    }
    Ok(value)
}

/// The writes ([`Patch`]) after which each top-level bucket of `bolt` named in `replace`
/// holds exactly the given contents (created when missing), with `append` added; every
/// other bucket is kept as it is. Reads only the pages it copies. A bucket written afresh is
/// kept inline when bbolt would keep it so (at most a quarter page, no nested bucket).
/// New pages go into `free` (the free pages of `bolt` as [`BoltDb::walk_free_pages`] lists
/// them; empty: none) before the file grows, as bbolt reuses its free pages: the rewritten
/// db is no larger than bbolt's own transaction would leave it.
pub fn replace_buckets<S: PageSource>(
    bolt: &BoltDb<S>,
    replace: &BTreeMap<Vec<u8>, BucketContents>,
    append: Option<&Append>,
    free: &FreePages,
) -> Result<Patch, BoltError> {
    let meta = bolt.meta();
    let page_size = meta.page_size as usize;
    let old_fields = chosen_meta_fields(bolt)?;
    if free
        .runs()
        .iter()
        .any(|(start, n)| *start < 2 || start.saturating_add(*n) > meta.high_water_pgid)
    {
        return Err(BoltError::Page {
            pgid: 0,
            reason: "the free pages given for the rewrite lie outside the db".into(),
        });
    }
    refuse_if_listed_free(free, meta.root_pgid, 0)?;
    let mut pages = NewPages {
        free: free.clone(),
        page_size,
        high_water: meta.high_water_pgid,
        next: meta.high_water_pgid,
        reused: Vec::new(),
        appended: Vec::new(),
    };

    // Top-level entries: (flags, key, value), with replaced buckets pointing at new pages.
    let mut top: BTreeMap<Vec<u8>, (u32, Vec<u8>)> = BTreeMap::new();
    let root_bucket = bolt.root();
    bolt.for_each(&root_bucket, |entry| {
        let flags = if entry.is_bucket { BUCKET_LEAF_FLAG } else { 0 };
        top.insert(entry.key.to_vec(), (flags, entry.value.to_vec()));
        Ok::<(), BoltError>(())
    })?;

    for (name, contents) in replace {
        let sequence = top
            .get(name)
            .filter(|(flags, _)| flags & BUCKET_LEAF_FLAG != 0)
            .map_or(0, |(_, value)| read_u64(value, 8));
        let items: Vec<(u32, &[u8], &[u8])> = contents
            .iter()
            .map(|(k, v)| (0, k.as_slice(), v.as_slice()))
            .collect();
        let value = bucket_value(&items, sequence, &mut pages)?;
        top.insert(name.clone(), (BUCKET_LEAF_FLAG, value));
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
        let value = if root == 0 {
            // An inline bucket: written afresh with the key added (inline again if it fits).
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
            bucket_value(&refs, sequence, &mut pages)?
        } else {
            let new_root = append_rightmost(bolt, root, append, &mut pages)?;
            let mut value = new_root.to_le_bytes().to_vec();
            value.extend_from_slice(&sequence.to_le_bytes());
            value
        };
        top.insert(append.bucket.clone(), (BUCKET_LEAF_FLAG, value));
    }
    let root_items: Vec<(u32, &[u8], &[u8])> = top
        .iter()
        .map(|(k, (flags, v))| (*flags, k.as_slice(), v.as_slice()))
        .collect();
    let root_pgid = pages.put(leaf_page(0, &root_items, page_size)?);

    let pages_at = meta
        .high_water_pgid
        .checked_mul(u64::from(meta.page_size))
        .ok_or_else(|| BoltError::Meta("high-water mark overflows".into()))?;
    let (meta_at, page) = meta_page(old_fields, root_pgid, pages.next, meta.txid + 1, page_size);
    Ok(Patch {
        reused: pages.reused,
        pages_at,
        pages: pages.appended,
        meta_at,
        meta: page,
    })
}

/// The meta page of transaction `txid`, made from `fields` (the 56 fields bytes of the meta
/// page in use: same magic, version, page size and flags) with a new root, no freelist and a
/// new high-water mark; returned with its offset in the file (slot `txid % 2`).
pub(super) fn meta_page(
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
