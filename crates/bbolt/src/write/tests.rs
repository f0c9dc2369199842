//! Tests of the writer: replaced buckets, single appends, bulk appends.

use super::*;

const PS: usize = 4096;

/// Rewrites a copy of `db` in memory and checks the result as a whole.
fn rewrite(
    db: &[u8],
    replace: &BTreeMap<Vec<u8>, BucketContents>,
    append: Option<&Append>,
) -> Result<Vec<u8>, BoltError> {
    let bolt = BoltDb::open(db)?;
    let (_, free) = bolt.walk_free_pages(|_, _| Ok::<(), BoltError>(()))?;
    let patch = replace_buckets(&bolt, replace, append, &free)?;
    let mut out = db.to_vec();
    patch.apply_to(&mut out);
    let written = BoltDb::open(out.as_slice())?;
    written.check()?;
    verify_rewrite(&written, replace, append)?;
    Ok(out)
}

fn keys(bolt: &BoltDb<&[u8]>, bucket: &crate::Bucket) -> Vec<Vec<u8>> {
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

use crate::page::build;
use crate::{Bucket, DbFile};
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

#[test]
fn a_compact_copy_holds_every_bucket_key_and_sequence_in_fewer_pages() {
    let root = leaf_page(2, &[], PS).unwrap();
    let mut db = meta(0, 2, 3, 2);
    db.extend(meta(1, 2, 3, 1));
    db.extend(root);
    // Enough keys for two branch levels, one value over several pages, an empty bucket.
    let mut many = BucketContents::new();
    for i in 0..20_000u32 {
        many.insert(i.to_be_bytes().to_vec(), vec![b'v'; (i % 90) as usize]);
    }
    let mut big = BucketContents::new();
    big.insert(b"huge".to_vec(), vec![9u8; 3 * PS + 17]);
    big.insert(b"small".to_vec(), b"s".to_vec());
    let mut replace = BTreeMap::new();
    replace.insert(b"many".to_vec(), many.clone());
    replace.insert(b"big".to_vec(), big.clone());
    replace.insert(b"empty".to_vec(), BucketContents::new());
    let mut tiny = BucketContents::new();
    tiny.insert(b"k".to_vec(), b"v".to_vec());
    replace.insert(b"tiny".to_vec(), tiny);
    // Rewritten twice: the first copy's pages are left behind, unreachable.
    let once = rewrite(&db, &replace, None).unwrap();
    let twice = rewrite(&once, &replace, None).unwrap();
    let source = BoltDb::open(twice.as_slice()).unwrap();
    let file = tempfile::tempfile().unwrap();
    let report = compact_into(&source, &file).unwrap();
    assert_eq!((report.buckets, report.keys), (4, 20_003));
    assert!(report.size < twice.len() as u64 * 2 / 3, "{report:?}");
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut bytes).unwrap();
    assert_eq!(bytes.len() as u64, report.size);
    let compact = BoltDb::open(bytes.as_slice()).unwrap();
    compact.check().unwrap();
    assert_eq!(compact.meta().page_size, PS as u32);
    for (name, contents) in &replace {
        let bucket = compact.bucket(&compact.root(), name).unwrap().unwrap();
        let mut got = BucketContents::new();
        compact
            .for_each(&bucket, |e| {
                got.insert(e.key.to_vec(), e.value.to_vec());
                Ok::<(), BoltError>(())
            })
            .unwrap();
        assert_eq!(&got, contents, "bucket {:?}", String::from_utf8_lossy(name));
        let sequence =
            |bolt: &BoltDb<&[u8]>| read_u64(&bolt.get(&bolt.root(), name).unwrap().unwrap().0, 8);
        assert_eq!(sequence(&compact), sequence(&source));
    }
    // Small buckets are inline, as bbolt keeps them: no page of their own.
    for name in [&b"tiny"[..], b"empty"] {
        let value = compact.get(&compact.root(), name).unwrap().unwrap().0;
        assert_eq!(
            read_u64(&value, 0),
            0,
            "{:?} is inline",
            String::from_utf8_lossy(name)
        );
    }
}

/// Root leaf at page 2 with bucket "keep" (page 3, sequence 5); pages 4 and 5 hold an old
/// leaf nothing references (free, as a db etcd wrote leaves them).
fn db_with_free_pages() -> Vec<u8> {
    let keep_leaf = leaf_page(3, &[(0, b"k", b"v")], PS).unwrap();
    let mut keep = 3u64.to_le_bytes().to_vec();
    keep.extend_from_slice(&5u64.to_le_bytes());
    let root = leaf_page(2, &[(BUCKET_LEAF_FLAG, b"keep", &keep)], PS).unwrap();
    let mut db = meta(0, 2, 6, 6);
    db.extend(meta(1, 2, 6, 5));
    db.extend(root);
    db.extend(keep_leaf);
    db.extend(leaf_page(4, &[(0, b"old", b"gone")], PS).unwrap());
    db.extend(leaf_page(5, &[(0, b"old", b"gone")], PS).unwrap());
    db
}

#[test]
fn new_pages_go_into_free_pages_and_small_buckets_stay_inline() {
    let db = db_with_free_pages();
    let bolt = BoltDb::open(db.as_slice()).unwrap();
    let (usage, free) = bolt
        .walk_free_pages(|_, _| Ok::<(), BoltError>(()))
        .unwrap();
    assert_eq!((usage.high_water, usage.free), (6, 2));
    assert_eq!(free.runs(), [(4, 2)]);
    // A small bucket replaced and a key appended to a page-rooted one: the copied leaf and
    // the new root take the two free pages, the small bucket is inline, the file keeps its
    // size.
    let mut replace = BTreeMap::new();
    let mut contents = BucketContents::new();
    contents.insert(b"term".to_vec(), 1u64.to_be_bytes().to_vec());
    replace.insert(b"meta".to_vec(), contents);
    let append = Append {
        bucket: b"keep".to_vec(),
        key: b"l".to_vec(),
        value: b"w".to_vec(),
    };
    let patch = replace_buckets(&bolt, &replace, Some(&append), &free).unwrap();
    assert!(patch.pages.is_empty(), "nothing after the high-water mark");
    let offsets: Vec<u64> = patch.reused.iter().map(|(at, _)| *at).collect();
    assert_eq!(offsets, [4 * PS as u64, 5 * PS as u64]);
    assert_eq!(patch.new_size(), 6 * PS as u64);
    let out = rewrite(&db, &replace, Some(&append)).unwrap();
    assert_eq!(out.len(), db.len());
    let written = BoltDb::open(out.as_slice()).unwrap();
    let usage = written.walk_pages(|_, _| Ok::<(), BoltError>(())).unwrap();
    // The old root and "keep" leaf are the free pages now; "meta" takes no page.
    assert_eq!((usage.high_water, usage.reached, usage.free), (6, 4, 2));
    let root = written.root();
    assert_eq!(
        read_u64(&written.get(&root, b"meta").unwrap().unwrap().0, 0),
        0
    );
    let kept = written.bucket(&root, b"keep").unwrap().unwrap();
    assert_eq!(keys(&written, &kept), [b"k".to_vec(), b"l".to_vec()]);
    assert_eq!(
        read_u64(&written.get(&root, b"keep").unwrap().unwrap().0, 8),
        5
    );
}

#[test]
fn a_page_too_long_for_a_free_run_goes_after_the_high_water_mark() {
    let db = db_with_free_pages();
    let bolt = BoltDb::open(db.as_slice()).unwrap();
    let free = FreePages::from_runs([(4, 1)]);
    // Over a quarter page: page-rooted, on a leaf with one overflow page (two pages).
    let mut contents = BucketContents::new();
    for i in 0..50u32 {
        contents.insert(i.to_be_bytes().to_vec(), vec![7u8; 100]);
    }
    let mut replace = BTreeMap::new();
    replace.insert(b"big".to_vec(), contents);
    let patch = replace_buckets(&bolt, &replace, None, &free).unwrap();
    // The two-page leaf after the mark (pages 6 and 7), the root in free page 4.
    assert_eq!(patch.pages_at, 6 * PS as u64);
    assert_eq!(patch.pages.len(), 2 * PS);
    assert_eq!(read_u64(&patch.pages, 0), 6);
    let offsets: Vec<u64> = patch.reused.iter().map(|(at, _)| *at).collect();
    assert_eq!(offsets, [4 * PS as u64]);
    let mut out = db.clone();
    patch.apply_to(&mut out);
    BoltDb::open(out.as_slice()).unwrap().check().unwrap();
}

#[test]
fn free_pages_that_are_in_use_or_outside_the_db_are_refused() {
    let db = db_with_free_pages();
    let bolt = BoltDb::open(db.as_slice()).unwrap();
    let append = Append {
        bucket: b"keep".to_vec(),
        key: b"l".to_vec(),
        value: b"w".to_vec(),
    };
    for (runs, says) in [
        (vec![(2, 1)], "in use"),
        (vec![(3, 2)], "in use"),
        (vec![(5, 4)], "outside"),
        (vec![(0, 1)], "outside"),
    ] {
        let free = FreePages::from_runs(runs.clone());
        let err = replace_buckets(&bolt, &BTreeMap::new(), Some(&append), &free).unwrap_err();
        assert!(err.to_string().contains(says), "{runs:?}: {err}");
    }
}

#[test]
fn free_runs_are_taken_lowest_first_and_only_whole() {
    let mut free = FreePages::from_runs([(9, 3), (4, 1), (20, 0)]);
    assert_eq!(free.runs(), [(4, 1), (9, 3)]);
    assert_eq!(free.count(), 4);
    assert_eq!(free.take(2), Some(9));
    assert_eq!(free.take(2), None);
    assert_eq!(free.take(1), Some(4));
    assert_eq!(free.take(1), Some(11));
    assert_eq!(free.count(), 0);
}
