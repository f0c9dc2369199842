//! bbolt, the B+tree file format of Go's `go.etcd.io/bbolt` (etcd's db), read and written
//! without Go and without unsafe code.
//!
//! The reader opens a db from memory or a file with positioned reads ([`PageSource`],
//! [`DbFile`]): the meta pages, pages and their elements, buckets (nested and inline), key/value
//! pairs in key order, and an integrity check in the spirit of bbolt's `tx.Check()`. Every
//! offset read from the file is checked, so a damaged file is an error, never a panic or a
//! loop. The writer ([`replace_buckets`], [`append_sorted`]) changes top-level buckets
//! copy-on-write, as bbolt commits a transaction: new pages after the high-water mark, then a
//! new meta page. Memory stays bounded by the tree's depth and the pages copied, whatever the
//! db's size.
//!
//! Layout (little-endian): pages of the size meta page 0 gives; page header `id u64, flags
//! u16, count u16, overflow u32`; meta pages 0 and 1; a bucket value is `{root pgid u64,
//! sequence u64}`, with `root == 0` meaning an inline bucket whose leaf page follows.
//!
//! ```no_run
//! use bbolt::{BoltDb, DbFile};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let file = std::fs::File::open("member/snap/db")?;
//! let size = file.metadata()?.len();
//! let db = BoltDb::open(DbFile::new(file, size))?;
//! db.check()?;
//! if let Some(bucket) = db.bucket(&db.root(), b"meta")? {
//!     db.for_each(&bucket, |entry| {
//!         println!("{} = {} bytes", String::from_utf8_lossy(entry.key), entry.value.len());
//!         Ok::<(), bbolt::BoltError>(())
//!     })?;
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod error;
mod meta;
mod page;
mod readahead;
mod reader;
mod source;
mod write;

pub use error::BoltError;
pub use meta::{META_REGION, MetaSummary, check_meta_pages, fnv1a64};
pub use page::{BranchElement, LeafElement, Page, PageError};
pub use readahead::{MAX_WINDOW, Readahead};
pub use reader::{BoltDb, Bucket, Entry, FreePages, PageUsage};
pub use source::{DbFile, PageSource};
pub use write::{
    Append, AppendReport, BucketContents, CompactReport, Patch, append_sorted, compact_into,
    last_key, replace_buckets, verify_rewrite,
};
