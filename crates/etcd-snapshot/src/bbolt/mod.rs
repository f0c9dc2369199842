//! A reader for bbolt, the db file inside every etcd snapshot: the meta pages, pages and their
//! elements, buckets (nested and inline), and an integrity check. Read-only, page by page from
//! memory or from a file with positioned reads, no unsafe code; every offset from the file is
//! checked, so a damaged file is an error.
//!
//! Layout (little-endian): pages of the size meta page 0 gives; page header `id u64, flags
//! u16, count u16, overflow u32`; meta pages 0 and 1; a bucket value is `{root pgid u64,
//! sequence u64}`, with `root == 0` meaning an inline bucket whose leaf page follows.

mod meta;
pub(crate) mod page;
mod reader;
mod source;

pub(crate) use meta::META_REGION;
pub use meta::{MetaSummary, check_meta_pages, fnv1a64};
pub use page::{BranchElement, LeafElement, Page, PageError};
pub use reader::{BoltDb, BoltError, Bucket, Entry};
pub use source::{DbFile, PageSource};
