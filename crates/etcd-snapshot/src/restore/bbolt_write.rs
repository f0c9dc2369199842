//! Copy-on-write changes to top-level buckets of a bbolt db, as bbolt itself commits a
//! transaction: the changed buckets and a new root leaf are written as new pages after the
//! high-water mark, then a new meta page (txid + 1) is written to slot `txid % 2`. Only the
//! pages copied are read, so a db file of any size is rewritten in place in small memory. The old
//! pages are left in place, unreachable; etcd runs bbolt with NoFreelistSync, so the new meta
//! records no freelist (`u64::MAX`) and bbolt rebuilds the free list by scanning.
//!
//! Only flat buckets (no nested buckets) can be replaced, which is all etcd's are.

use std::collections::BTreeMap;

use crate::bbolt::page::{
    BRANCH_PAGE, BUCKET_LEAF_FLAG, ELEMENT_LEN, LEAF_PAGE, META_PAGE, PAGE_HEADER,
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

    // The new meta: same magic, version, page size and flags; new root, no freelist, new
    // high-water mark, next txid.
    let txid = meta.txid + 1;
    let mut fields = old_fields;
    fields[16..24].copy_from_slice(&root_pgid.to_le_bytes());
    fields[32..40].copy_from_slice(&NO_FREELIST.to_le_bytes());
    fields[40..48].copy_from_slice(&next.to_le_bytes());
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
    Ok(Patch {
        pages_at,
        pages: new_pages,
        meta_at: slot * u64::from(meta.page_size),
        meta: page,
    })
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
}
