//! Copy-on-write changes to top-level buckets of a bbolt db, as bbolt itself commits a
//! transaction: the changed buckets (inline when small, as bbolt keeps them) and a new root
//! leaf are written as new pages into the db's free pages (given by the caller, from a walk) or after the high-water mark, then a new
//! meta page (txid + 1) is written to slot `txid % 2`. Only the pages copied are read, so a db
//! file of any size is rewritten in place in small memory. The old pages are left in place,
//! unreachable; etcd runs bbolt with NoFreelistSync, so the new meta records no freelist
//! (`u64::MAX`) and bbolt rebuilds the free list by scanning.
//!
//! Only flat buckets (no nested buckets) can be replaced, which is all etcd's are.
//!
//! [`append_sorted`] is the bulk form of [`Append`]: it streams any number of sorted keys onto
//! the end of one top-level bucket as one transaction, writing leaves to the file as they fill,
//! so that memory is bounded by the number of leaves rather than by the data.

use std::collections::BTreeMap;

mod append;
mod compact;
mod replace;

pub use append::{AppendReport, append_sorted, last_key};
pub use compact::{CompactReport, compact_into};
pub use replace::{Append, Patch, replace_buckets, verify_rewrite};

#[allow(unused_imports)]
use crate::page::{
    BRANCH_PAGE, BUCKET_HEADER, BUCKET_LEAF_FLAG, ELEMENT_LEN, LEAF_PAGE, META_PAGE, PAGE_HEADER,
};
#[allow(unused_imports)]
use crate::{BoltDb, BoltError, FreePages, Page, PageSource, fnv1a64};

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

/// The leaf page (unpadded) of a bucket holding `items` when bbolt keeps the bucket inline
/// in its parent (its `inlineable`: no nested bucket, and header plus elements at most a
/// quarter page); `None` when it does not.
fn inline_leaf(
    items: &[(u32, &[u8], &[u8])],
    page_size: usize,
) -> Result<Option<Vec<u8>>, BoltError> {
    let size = PAGE_HEADER
        + items
            .iter()
            .map(|(_, k, v)| ELEMENT_LEN + k.len() + v.len())
            .sum::<usize>();
    if size > page_size / 4 || items.iter().any(|(f, _, _)| f & BUCKET_LEAF_FLAG != 0) {
        return Ok(None);
    }
    let mut page = leaf_page(0, items, page_size)?;
    page.truncate(size);
    Ok(Some(page))
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
