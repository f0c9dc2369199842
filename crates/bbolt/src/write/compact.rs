//! A compact copy of a db (what bbolt's `compact` and etcdutl's `defrag` make): every
//! top-level bucket's keys written afresh into full leaves, branch pages over them (a bucket
//! small enough inline in its parent, as bbolt keeps one: at most a quarter page), a new root,
//! and two meta pages, with no free pages at all. Written as a stream: memory holds one leaf
//! and one (first key, page id) pair per page written, whatever the db's size.

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::replace::meta_page;
use super::*;

/// What a compaction wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactReport {
    /// Bytes written (the new db's size).
    pub size: u64,
    /// Top-level buckets copied.
    pub buckets: u64,
    /// Key/value pairs copied.
    pub keys: u64,
}

/// Writes pages in order at their place in the file, counting page ids.
struct PageWriter<'a> {
    out: &'a File,
    next: u64,
    page_size: usize,
}

/// Writes `bytes` at `offset` of `out`.
fn write_at(out: &File, bytes: &[u8], offset: u64) -> Result<(), BoltError> {
    out.write_all_at(bytes, offset)
        .map_err(|e| BoltError::Write {
            offset,
            len: bytes.len(),
            reason: e.to_string(),
        })
}

impl PageWriter<'_> {
    fn push(&mut self, page: &[u8]) -> Result<u64, BoltError> {
        let pgid = self.next;
        write_at(self.out, page, pgid * self.page_size as u64)?;
        self.next += (page.len() / self.page_size) as u64;
        Ok(pgid)
    }
}

/// Room a leaf element takes: its header and its key and value.
fn leaf_cost(key: &[u8], value: &[u8]) -> usize {
    ELEMENT_LEN + key.len() + value.len()
}

/// One bucket's tree being written: the leaf filling up, and the pages written so far.
struct TreeBuilder {
    items: Vec<(u32, Vec<u8>, Vec<u8>)>,
    used: usize,
    /// (first key, pgid) of each page of the level below the next branch level.
    children: Vec<(Vec<u8>, u64)>,
}

impl TreeBuilder {
    fn new() -> Self {
        TreeBuilder {
            items: Vec::new(),
            used: PAGE_HEADER,
            children: Vec::new(),
        }
    }

    fn add(
        &mut self,
        writer: &mut PageWriter<'_>,
        flags: u32,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), BoltError> {
        let cost = leaf_cost(key, value);
        let full = self.used + cost > writer.page_size || self.items.len() >= usize::from(u16::MAX);
        if full && !self.items.is_empty() {
            self.flush(writer)?;
        }
        self.items.push((flags, key.to_vec(), value.to_vec()));
        self.used += cost;
        Ok(())
    }

    fn flush(&mut self, writer: &mut PageWriter<'_>) -> Result<(), BoltError> {
        let refs: Vec<(u32, &[u8], &[u8])> = self
            .items
            .iter()
            .map(|(f, k, v)| (*f, k.as_slice(), v.as_slice()))
            .collect();
        let page = leaf_page(writer.next, &refs, writer.page_size)?;
        let first = self
            .items
            .first()
            .map(|(_, k, _)| k.clone())
            .unwrap_or_default();
        let pgid = writer.push(&page)?;
        self.children.push((first, pgid));
        self.items.clear();
        self.used = PAGE_HEADER;
        Ok(())
    }

    /// Ends a bucket's tree: inline (the leaf's bytes, unpadded, after a root of 0) when it
    /// never filled a page and takes at most a quarter of one, as bbolt inlines it; else
    /// [`TreeBuilder::finish`]. Returns the bucket's value without its sequence.
    fn finish_bucket(self, writer: &mut PageWriter<'_>) -> Result<Vec<u8>, BoltError> {
        if self.children.is_empty() {
            let refs: Vec<(u32, &[u8], &[u8])> = self
                .items
                .iter()
                .map(|(f, k, v)| (*f, k.as_slice(), v.as_slice()))
                .collect();
            if let Some(page) = inline_leaf(&refs, writer.page_size)? {
                let mut value = 0u64.to_le_bytes().to_vec();
                value.extend(page);
                return Ok(value);
            }
        }
        Ok(self.finish(writer)?.to_le_bytes().to_vec())
    }

    /// Ends the tree: the last leaf (an empty one for an empty bucket) and the branch levels
    /// over the leaves; returns the root's pgid.
    fn finish(mut self, writer: &mut PageWriter<'_>) -> Result<u64, BoltError> {
        if !self.items.is_empty() || self.children.is_empty() {
            self.flush(writer)?;
        }
        let mut level = std::mem::take(&mut self.children);
        while level.len() > 1 {
            let mut above = Vec::new();
            let mut chunk: Vec<(&[u8], u64)> = Vec::new();
            let mut used = PAGE_HEADER;
            for (key, pgid) in &level {
                let cost = ELEMENT_LEN + key.len();
                if !chunk.is_empty() && (used + cost > writer.page_size || chunk.len() >= 4096) {
                    let page = branch_page(writer.next, &chunk, writer.page_size)?;
                    let first = chunk[0].0.to_vec();
                    above.push((first, writer.push(&page)?));
                    chunk.clear();
                    used = PAGE_HEADER;
                }
                chunk.push((key.as_slice(), *pgid));
                used += cost;
            }
            let page = branch_page(writer.next, &chunk, writer.page_size)?;
            let first = chunk[0].0.to_vec();
            above.push((first, writer.push(&page)?));
            level = above;
        }
        Ok(level.first().map_or(0, |(_, pgid)| *pgid))
    }
}

/// Writes a compact copy of `bolt` into the empty file `out`: same page size, magic,
/// version and flags, every top-level bucket with its keys and sequence, no freelist (as etcd
/// runs bbolt, the free list is rebuilt by scanning), the meta pages last. Buckets nested
/// inside a top-level bucket are refused (etcd has none). The caller fsyncs.
pub fn compact_into<S: PageSource>(
    bolt: &BoltDb<S>,
    out: &File,
) -> Result<CompactReport, BoltError> {
    let meta = bolt.meta();
    let page_size = meta.page_size as usize;
    let fields = chosen_meta_fields(bolt)?;
    // Pages 0 and 1 are the meta pages, written last.
    let mut writer = PageWriter {
        out,
        next: 2,
        page_size,
    };
    let root = bolt.root();
    let mut names: Vec<(Vec<u8>, u64)> = Vec::new();
    bolt.for_each(&root, |entry| {
        if !entry.is_bucket {
            return Err(BoltError::Page {
                pgid: 0,
                reason: format!(
                    "the top level holds key {:?}, which is not a bucket",
                    String::from_utf8_lossy(entry.key)
                ),
            });
        }
        names.push((entry.key.to_vec(), read_u64(entry.value, 8)));
        Ok(())
    })?;
    let mut top: Vec<(Vec<u8>, Vec<u8>, u64)> = Vec::new();
    let mut keys = 0u64;
    for (name, sequence) in names {
        let Some(bucket) = bolt.bucket(&root, &name)? else {
            continue;
        };
        let mut tree = TreeBuilder::new();
        bolt.for_each(&bucket, |entry| {
            if entry.is_bucket {
                return Err(BoltError::Page {
                    pgid: 0,
                    reason: format!(
                        "bucket {:?} holds a nested bucket",
                        String::from_utf8_lossy(&name)
                    ),
                });
            }
            keys += 1;
            tree.add(&mut writer, 0, entry.key, entry.value)
        })?;
        top.push((name, tree.finish_bucket(&mut writer)?, sequence));
    }
    let mut root_tree = TreeBuilder::new();
    for (name, root_value, sequence) in &top {
        // The header (root, sequence), then an inline bucket's page.
        let mut value = root_value[..8].to_vec();
        value.extend_from_slice(&sequence.to_le_bytes());
        value.extend_from_slice(&root_value[8..]);
        root_tree.add(&mut writer, BUCKET_LEAF_FLAG, name, &value)?;
    }
    let root_pgid = root_tree.finish(&mut writer)?;
    let high_water = writer.next;
    for txid in [meta.txid + 1, meta.txid + 2] {
        let (at, page) = meta_page(fields.clone(), root_pgid, high_water, txid, page_size);
        write_at(out, &page, at)?;
    }
    Ok(CompactReport {
        size: high_water * page_size as u64,
        buckets: top.len() as u64,
        keys,
    })
}
