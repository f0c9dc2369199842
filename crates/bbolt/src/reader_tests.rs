//! Tests of the reader: walks, the integrity check, damaged files.

use super::super::meta::fnv1a64;
use super::super::page::build::{branch, header, leaf};
use super::super::page::{BRANCH_PAGE, LEAF_PAGE};
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

fn keys<S: PageSource>(db: &BoltDb<S>, bucket: &Bucket) -> Result<Vec<Vec<u8>>, BoltError> {
    let mut out = Vec::new();
    db.for_each(bucket, |e| {
        out.push(e.key.to_vec());
        Ok::<(), BoltError>(())
    })?;
    Ok(out)
}

fn open(data: &[u8]) -> BoltDb<&[u8]> {
    BoltDb::open(data).unwrap()
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
    let db = open(&data);
    assert_eq!(db.size(), 6 * PS as u64);
    db.check().unwrap();
    let root = db.root();
    assert_eq!(keys(&db, &root).unwrap(), [b"a".to_vec(), b"b".to_vec()]);
    let a = db.bucket(&root, b"a").unwrap().unwrap();
    assert_eq!(
        keys(&db, &a).unwrap(),
        [b"k1".to_vec(), b"k2".to_vec(), b"k3".to_vec()]
    );
    assert_eq!(db.get(&a, b"k2").unwrap(), Some((b"v2".to_vec(), false)));
    assert_eq!(db.get(&a, b"k3").unwrap(), Some((b"v3".to_vec(), false)));
    assert_eq!(db.get(&a, b"k0").unwrap(), None);
    let b = db.bucket(&root, b"b").unwrap().unwrap();
    assert!(matches!(b, Bucket::Inline(_)));
    assert_eq!(keys(&db, &b).unwrap(), [b"x".to_vec(), b"y".to_vec()]);
    assert_eq!(db.get(&b, b"y").unwrap(), Some((b"2".to_vec(), false)));
    assert!(db.bucket(&root, b"missing").unwrap().is_none());
    // The walk visits buckets, then their entries, depth first.
    let mut seen = Vec::new();
    db.walk(|depth, e| {
        seen.push((depth, String::from_utf8_lossy(e.key).into_owned()));
        Ok::<(), BoltError>(())
    })
    .unwrap();
    let expected = [
        (0, "a"),
        (1, "k1"),
        (1, "k2"),
        (1, "k3"),
        (0, "b"),
        (1, "x"),
        (1, "y"),
    ];
    let expected: Vec<_> = expected.iter().map(|(d, k)| (*d, k.to_string())).collect();
    assert_eq!(seen, expected);
}

#[test]
fn a_file_reads_like_memory() {
    let data = sample();
    let mut file = tempfile::tempfile().unwrap();
    std::io::Write::write_all(&mut file, &data).unwrap();
    // A trailer after the db is not part of it.
    std::io::Write::write_all(&mut file, &[9u8; 32]).unwrap();
    let db = BoltDb::open(super::super::DbFile::new(file, data.len() as u64)).unwrap();
    db.check().unwrap();
    let a = db.bucket(&db.root(), b"a").unwrap().unwrap();
    assert_eq!(keys(&db, &a).unwrap().len(), 3);
}

#[test]
fn overflow_pages_hold_large_values() {
    let big = vec![7u8; 3 * PS];
    let a = bucket_value(3);
    let mut overflowing = leaf(3, &[(0, b"big", &big)]);
    let span = overflowing.len().div_ceil(PS);
    overflowing[12..16].copy_from_slice(&((span - 1) as u32).to_le_bytes());
    let data = db(&[leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)]), overflowing]);
    let db = open(&data);
    db.check().unwrap();
    let a = db.bucket(&db.root(), b"a").unwrap().unwrap();
    assert_eq!(db.get(&a, b"big").unwrap(), Some((big, false)));
}

#[test]
fn a_cycle_of_branch_pages_ends_in_an_error() {
    let a = bucket_value(3);
    let data = db(&[
        leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)]),
        branch(3, &[(b"k", 4)]),
        branch(4, &[(b"k", 3)]),
    ]);
    let db = open(&data);
    let a = db.bucket(&db.root(), b"a").unwrap().unwrap();
    let err = keys(&db, &a).unwrap_err();
    assert!(err.to_string().contains("multiple references"), "{err}");
    assert!(db.get(&a, b"k").is_err());
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
    let err = open(&data).check().unwrap_err();
    assert!(err.to_string().contains("multiple references"), "{err}");
}

#[test]
fn inline_buckets_nested_very_deep_are_refused_not_recursed() {
    // Each level is an inline bucket holding the next one.
    let mut value = inline_bucket(&[(0, b"k", b"v")]);
    for _ in 0..200 {
        value = inline_bucket(&[(BUCKET_LEAF_FLAG, b"n", &value)]);
    }
    let mut root = leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &value)]);
    let span = root.len().div_ceil(PS);
    root[12..16].copy_from_slice(&((span - 1) as u32).to_le_bytes());
    let data = db(&[root]);
    let err = open(&data).check().unwrap_err();
    assert!(err.to_string().contains("nested deeper"), "{err}");
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
        let db = open(&data);
        let a = db.bucket(&db.root(), b"a").unwrap().unwrap();
        let err = keys(&db, &a).unwrap_err();
        assert!(err.to_string().contains(needle), "{target}: {err}");
        assert!(db.check().is_err());
    }
}

#[test]
fn overflow_past_the_high_water_mark_is_refused() {
    let mut page = leaf(2, &[]);
    page[12..16].copy_from_slice(&1000u32.to_le_bytes());
    let data = db(&[page]);
    let db = open(&data);
    let err = keys(&db, &db.root()).unwrap_err();
    assert!(err.to_string().contains("overflow"), "{err}");
}

#[test]
fn unsorted_keys_and_wrong_page_types_fail_the_check() {
    let a = inline_bucket(&[(0, b"b", b""), (0, b"a", b"")]);
    let data = db(&[leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)])]);
    let err = open(&data).check().unwrap_err();
    assert!(err.to_string().contains("out of order"), "{err}");

    let a = bucket_value(3);
    let data = db(&[
        leaf(2, &[(BUCKET_LEAF_FLAG, b"a", &a)]),
        header(3, 0x10, 0, 0),
    ]);
    let db = open(&data);
    let err = db.check().unwrap_err();
    assert!(err.to_string().contains("freelist page inside"), "{err}");
    let bucket = db.bucket(&db.root(), b"a").unwrap().unwrap();
    assert!(keys(&db, &bucket).is_err());
}

#[test]
fn errors_from_the_visitor_stop_the_walk() {
    let data = sample();
    let db = open(&data);
    let mut visited = 0;
    let err = db
        .walk(|_, _| {
            visited += 1;
            Err(BoltError::Meta("stop".into()))
        })
        .unwrap_err();
    assert_eq!((visited, err), (1, BoltError::Meta("stop".into())));
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
    let err = open(&data).check().unwrap_err();
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
    let Root::Inline(bytes) = nested_root(&v).unwrap() else {
        panic!("not inline")
    };
    assert!(Page::parse(bytes).unwrap().leaf(0).is_err());
    assert_eq!(bytes.len(), PAGE_HEADER);
}

#[test]
fn every_truncation_and_every_flipped_byte_is_an_error_or_a_value_never_a_panic() {
    let data = sample();
    for cut in (0..data.len()).step_by(509) {
        let _ = BoltDb::open(&data[..cut]).map(|db| db.check());
    }
    // Flip each byte of the data pages (meta pages stay valid), then read everything.
    for at in 2 * PS..data.len() {
        let mut damaged = data.clone();
        damaged[at] ^= 0xA5;
        let Ok(db) = BoltDb::open(damaged.as_slice()) else {
            continue;
        };
        let _ = db.check();
        let root = db.root();
        let _ = db.for_each(&root, |entry| {
            if let Ok(bucket) = entry.bucket() {
                let _ = keys(&db, &bucket);
                let _ = db.get(&bucket, b"k2");
            }
            Ok::<(), BoltError>(())
        });
    }
}

#[test]
fn pages_nothing_reaches_are_counted_free() {
    let mut data = sample();
    // Two more pages after the tree, which nothing references (as etcd leaves them).
    let orphan = |id| {
        let mut p = leaf(id, &[(0, b"old", b"gone")]);
        p.resize(PS, 0);
        p
    };
    data.extend(orphan(6));
    data.extend(orphan(7));
    for (id, txid) in [(0u64, 4u64), (1, 5)] {
        let m = meta_page(id, 2, u64::MAX, 8, txid);
        data[id as usize * PS..id as usize * PS + m.len()].copy_from_slice(&m);
    }
    let usage = open(&data)
        .walk_pages(|_, _| Ok::<(), BoltError>(()))
        .unwrap();
    assert_eq!(
        usage,
        PageUsage {
            page_size: PS as u32,
            high_water: 8,
            reached: 6,
            free: 2,
        }
    );
    let (listed_usage, free) = open(&data)
        .walk_free_pages(|_, _| Ok::<(), BoltError>(()))
        .unwrap();
    assert_eq!(listed_usage, usage);
    assert_eq!(free.runs(), [(6, 2)]);
    let whole = open(&sample())
        .walk_pages(|_, _| Ok::<(), BoltError>(()))
        .unwrap();
    assert_eq!((whole.reached, whole.free), (6, 0));
}

#[test]
fn free_runs_cross_whole_words_and_stop_at_the_mark_or_the_limit() {
    let mut set = PageSet::new(200);
    for id in (0..190).filter(|id| !(70..75).contains(id) && *id != 130) {
        set.insert(id);
    }
    assert_eq!(set.clear_runs(200, 10), [(70, 5), (130, 1), (190, 10)]);
    assert_eq!(set.clear_runs(195, 10), [(70, 5), (130, 1), (190, 5)]);
    assert_eq!(set.clear_runs(200, 2), [(70, 5), (130, 1)]);
    // Pages 0 and 1 are the meta pages, never free.
    assert_eq!(PageSet::new(4).clear_runs(4, 10), [(2, 2)]);
}
