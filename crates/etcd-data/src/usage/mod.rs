//! What fills an etcd db: per group of keys (by prefix depth, or any other grouping a caller
//! brings, such as Kubernetes resources and namespaces), the number of live keys, their bytes,
//! the bytes held by older revisions and deletions (what a compaction frees), the largest
//! keys, the keys attached to leases, and the share of the db that is free pages (what a
//! defragmentation gives back).
//!
//! Bytes are counted as etcd's API shows them: the length of the key plus the length of the
//! value (`etcdctl get -w json` shows both, base64). The db holds more per revision: the
//! 17-byte revision key, the revision numbers and lease inside `mvccpb.KeyValue`, and page
//! overhead, so the bytes here add up to less than `dbSizeInUse`.
//!
//! The offline reading ([`usage_db`], [`usage_data_dir`], [`SnapshotFile::usage`]) walks a
//! snapshot or a stopped member's db page by page. [`Tally`] is the neutral aggregation a live
//! reader (paged reads through etcd's API, in etcd-k8s) feeds with the same meaning.

mod offline;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde::{Deserialize, Serialize};

pub use offline::{usage_data_dir, usage_db};

#[cfg(doc)]
use crate::file::SnapshotFile;

/// Largest keys and groups listed by default.
pub const DEFAULT_TOP: usize = 10;
/// Path segments after the prefix that make a group, by default.
pub const DEFAULT_DEPTH: usize = 2;
/// Most grouping dimensions a [`KeyGrouping`] may have.
pub const MAX_DIMENSIONS: usize = 3;

/// What to measure and how much to list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct UsageOptions {
    /// Only keys that start with this ("": every key).
    pub prefix: String,
    /// Keys are grouped by their first `depth` path segments after `prefix` (`/` separates
    /// segments; a leading `/` belongs to the first one).
    pub depth: usize,
    /// The largest keys, and the largest groups of each grouping, listed.
    pub top: usize,
}

impl Default for UsageOptions {
    fn default() -> Self {
        UsageOptions {
            prefix: String::new(),
            depth: DEFAULT_DEPTH,
            top: DEFAULT_TOP,
        }
    }
}

/// How keys fall into groups, along up to [`MAX_DIMENSIONS`] dimensions (e.g. `prefix`,
/// `resource`, `namespace`). A group is named by a slice of the key, so grouping costs no
/// allocation per key.
pub trait KeyGrouping {
    /// The names of the dimensions, at most [`MAX_DIMENSIONS`].
    fn dimensions(&self) -> &[&'static str];
    /// The group of `key` along dimension `dimension`; `None` when it is in none.
    fn group<'k>(&self, dimension: usize, key: &'k [u8]) -> Option<&'k [u8]>;
}

/// The group of `key` (which starts with `prefix`) by its first `depth` path segments after
/// `prefix`: up to and including the `depth`-th `/` after it (a `/` right at the start does
/// not end a segment), or the whole key when it has fewer segments.
pub fn prefix_group<'k>(prefix: &[u8], depth: usize, key: &'k [u8]) -> &'k [u8] {
    let start = prefix.len().min(key.len());
    if depth == 0 {
        return &key[..start];
    }
    let mut seen = 0;
    for (i, byte) in key.iter().enumerate().skip(start + 1) {
        if *byte == b'/' {
            seen += 1;
            if seen >= depth {
                return &key[..=i];
            }
        }
    }
    key
}

/// A key or group name as shown: its text, each byte that is not UTF-8 as `\xNN`, so
/// that two binary names never print the same (U+FFFD would merge them).
pub fn display_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// The plain grouping: one dimension, `prefix`, by path depth.
#[derive(Debug, Clone)]
pub struct PrefixDepth {
    prefix: Vec<u8>,
    depth: usize,
}

impl PrefixDepth {
    /// Groups of `options.depth` segments after `options.prefix`.
    pub fn new(options: &UsageOptions) -> Self {
        PrefixDepth {
            prefix: options.prefix.as_bytes().to_vec(),
            depth: options.depth,
        }
    }
}

impl KeyGrouping for PrefixDepth {
    fn dimensions(&self) -> &[&'static str] {
        &["prefix"]
    }

    fn group<'k>(&self, _dimension: usize, key: &'k [u8]) -> Option<&'k [u8]> {
        Some(prefix_group(&self.prefix, self.depth, key))
    }
}

/// One group's usage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GroupUsage {
    /// The group: a key prefix, a resource, a namespace ([`display_bytes`]).
    pub group: String,
    /// Live keys.
    pub keys: u64,
    /// Bytes of the live keys (key + value).
    pub live_bytes: u64,
    /// Older revisions and deletions still in the db; `None` when it cannot be seen (live).
    pub history_revisions: Option<u64>,
    /// Their bytes (key + value; a deletion: its key): what a compaction frees.
    pub history_bytes: Option<u64>,
    /// Live keys attached to a lease.
    pub leased_keys: u64,
}

/// The groups of one dimension, largest first (live plus history bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupTable {
    /// The dimension: `prefix`, `resource`, `namespace`.
    pub by: String,
    /// Groups found in all (`groups` lists at most `top` of them).
    pub groups_total: u64,
    /// The largest groups.
    pub groups: Vec<GroupUsage>,
}

/// One of the largest live keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyUsage {
    /// The key ([`display_bytes`]: bytes that are not UTF-8 shown as `\xNN`).
    pub key: String,
    /// Key plus value bytes.
    pub bytes: u64,
    /// Value bytes.
    pub value_bytes: u64,
    /// The revision that wrote it last.
    pub mod_revision: i64,
    /// Its lease (hex), if any.
    pub lease: Option<String>,
}

/// Where the db's size figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpaceSource {
    /// Counted from the db's pages (offline).
    Pages,
    /// etcd's endpoint status (`dbSize`, `dbSizeInUse`) of one member.
    EndpointStatus,
}

/// How much of the db is free pages: what a defragmentation gives back (at least: it also
/// packs half-empty pages).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbSpace {
    /// Where the figures come from.
    pub from: SpaceSource,
    /// The member whose status gave them (live).
    pub endpoint: Option<String>,
    /// The db's size: its pages (high-water mark) times the page size, etcd's `dbSize`.
    pub size: u64,
    /// Of which in use: what etcd reports as `dbSizeInUse` (offline: what it would report
    /// on opening this db, size minus free pages).
    pub in_use: u64,
    /// Free: `size - in_use`.
    pub free: u64,
    /// `free / size`, 0 to 1.
    pub free_share: f64,
    /// The page size (offline).
    pub page_size: Option<u32>,
    /// Free pages (offline).
    pub free_pages: Option<u64>,
}

impl DbSpace {
    /// The space of a db of `size` bytes with `in_use` in use.
    pub fn new(from: SpaceSource, size: u64, in_use: u64) -> Self {
        let free = size.saturating_sub(in_use);
        DbSpace {
            from,
            endpoint: None,
            size,
            in_use: in_use.min(size),
            free,
            free_share: if size == 0 {
                0.0
            } else {
                free as f64 / size as f64
            },
            page_size: None,
            free_pages: None,
        }
    }
}

/// What fills the db.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    /// `etcd` (live), or the snapshot or data dir read.
    pub source: String,
    /// Whether it was read from a file (history visible) rather than a live cluster.
    pub offline: bool,
    /// The revision read.
    pub revision: i64,
    /// The db's compaction revision, when known (offline; -1: never compacted).
    pub compact_revision: Option<i64>,
    /// The prefix measured ("": every key).
    pub prefix: String,
    /// Path segments per `prefix` group.
    pub depth: usize,
    /// Live keys.
    pub keys: u64,
    /// Their bytes (key + value).
    pub live_bytes: u64,
    /// Older revisions and deletions in the db (offline; `None` live: etcd's API does not
    /// show them).
    pub history_revisions: Option<u64>,
    /// Their bytes: what a compaction at the current revision frees (offline).
    pub history_bytes: Option<u64>,
    /// Live only, and only over every key: an estimate of `history_bytes` as `dbSizeInUse`
    /// minus the live bytes (it also counts etcd's per-revision overhead, other buckets and
    /// half-empty pages, so it is high).
    pub history_bytes_estimate: Option<u64>,
    /// Live keys attached to a lease.
    pub leased_keys: u64,
    /// Leases granted (the db's `lease` bucket; live: etcd's lease list).
    pub leases: Option<u64>,
    /// Free pages: what a defragmentation gives back.
    pub db: DbSpace,
    /// Groups by each dimension, largest first.
    pub groups: Vec<GroupTable>,
    /// The largest live keys, largest first.
    pub largest_keys: Vec<KeyUsage>,
}

/// Group ids of one key, one per dimension ([`NO_GROUP`]: none).
pub type GroupIds = [u32; MAX_DIMENSIONS];
/// No group along that dimension.
pub const NO_GROUP: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    keys: u64,
    live_bytes: u64,
    history_revisions: u64,
    history_bytes: u64,
    leased_keys: u64,
}

impl Counts {
    fn live(&mut self, bytes: u64, leased: bool) {
        self.keys += 1;
        self.live_bytes += bytes;
        self.leased_keys += u64::from(leased);
    }

    fn history(&mut self, bytes: u64) {
        self.history_revisions += 1;
        self.history_bytes += bytes;
    }
}

/// Interned groups of one dimension.
#[derive(Debug, Default)]
struct Dimension {
    ids: HashMap<Vec<u8>, u32>,
    names: Vec<Vec<u8>>,
    counts: Vec<Counts>,
}

/// Counts per group and overall, fed one key (or revision) at a time: memory is one entry
/// per distinct group, not per key.
#[derive(Debug)]
pub struct Tally {
    names: Vec<&'static str>,
    dimensions: Vec<Dimension>,
    total: Counts,
}

impl Tally {
    /// A tally along `grouping`'s dimensions (at most [`MAX_DIMENSIONS`]; more are ignored).
    pub fn new(grouping: &dyn KeyGrouping) -> Self {
        let names: Vec<&'static str> = grouping
            .dimensions()
            .iter()
            .take(MAX_DIMENSIONS)
            .copied()
            .collect();
        Tally {
            dimensions: names.iter().map(|_| Dimension::default()).collect(),
            names,
            total: Counts::default(),
        }
    }

    /// The groups `key` is in, interned.
    pub fn groups_of(&mut self, grouping: &dyn KeyGrouping, key: &[u8]) -> GroupIds {
        let mut ids = [NO_GROUP; MAX_DIMENSIONS];
        for (d, dimension) in self.dimensions.iter_mut().enumerate() {
            let Some(name) = grouping.group(d, key) else {
                continue;
            };
            ids[d] = match dimension.ids.get(name) {
                Some(id) => *id,
                None => {
                    let id = u32::try_from(dimension.names.len()).unwrap_or(NO_GROUP - 1);
                    dimension.ids.insert(name.to_vec(), id);
                    dimension.names.push(name.to_vec());
                    dimension.counts.push(Counts::default());
                    id
                }
            };
        }
        ids
    }

    fn each(&mut self, ids: &GroupIds, mut f: impl FnMut(&mut Counts)) {
        f(&mut self.total);
        for (dimension, id) in self.dimensions.iter_mut().zip(ids) {
            if let Some(counts) = dimension.counts.get_mut(*id as usize) {
                f(counts);
            }
        }
    }

    /// A live key of `bytes` (key + value).
    pub fn live(&mut self, ids: &GroupIds, bytes: u64, leased: bool) {
        self.each(ids, |c| c.live(bytes, leased));
    }

    /// An older revision or a deletion of `bytes`.
    pub fn history(&mut self, ids: &GroupIds, bytes: u64) {
        self.each(ids, |c| c.history(bytes));
    }

    /// Live keys so far.
    pub fn keys(&self) -> u64 {
        self.total.keys
    }

    /// Live bytes so far.
    pub fn live_bytes(&self) -> u64 {
        self.total.live_bytes
    }

    /// Live keys attached to a lease so far.
    pub fn leased_keys(&self) -> u64 {
        self.total.leased_keys
    }

    /// Older revisions and their bytes so far.
    pub fn history_totals(&self) -> (u64, u64) {
        (self.total.history_revisions, self.total.history_bytes)
    }

    /// The group tables, at most `top` groups each, largest (live plus history bytes)
    /// first; history figures shown only when `history` (offline).
    pub fn tables(self, top: usize, history: bool) -> Vec<GroupTable> {
        self.names
            .iter()
            .zip(self.dimensions)
            .filter(|(_, dimension)| !dimension.names.is_empty())
            .map(|(name, dimension)| {
                let mut order: Vec<usize> = (0..dimension.names.len()).collect();
                let weight = |i: &usize| {
                    let c = &dimension.counts[*i];
                    c.live_bytes + if history { c.history_bytes } else { 0 }
                };
                order.sort_by(|a, b| {
                    weight(b)
                        .cmp(&weight(a))
                        .then_with(|| dimension.names[*a].cmp(&dimension.names[*b]))
                });
                order.truncate(top);
                GroupTable {
                    by: name.to_string(),
                    groups_total: dimension.names.len() as u64,
                    groups: order
                        .into_iter()
                        .map(|i| {
                            let c = dimension.counts[i];
                            GroupUsage {
                                group: display_bytes(&dimension.names[i]),
                                keys: c.keys,
                                live_bytes: c.live_bytes,
                                history_revisions: history.then_some(c.history_revisions),
                                history_bytes: history.then_some(c.history_bytes),
                                leased_keys: c.leased_keys,
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// Where a key stands among keys of the same size in a [`TopN`]: its last revision, then
/// its [`key_hash`]. The key written first wins a tie; keys written in one transaction (one
/// revision) are ordered by hash, the one thing a live reading (which does not see sub
/// revisions) and an offline one (which does not keep keys) both have, so both list the
/// same keys.
pub type TieBreak = (i64, u64);

/// A 64-bit hash of a key: its identity in an offline reading, and the last tie-break of
/// [`TopN`]. Fixed keys, so the same in every run.
pub fn key_hash(key: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(key);
    hasher.finish()
}

/// One candidate of a [`TopN`]: ranked by bytes, then by [`TieBreak`] (lower wins a tie).
#[derive(Debug)]
struct Ranked<T> {
    bytes: u64,
    order: Reverse<TieBreak>,
    item: T,
}

impl<T> Ranked<T> {
    fn rank(&self) -> (u64, Reverse<TieBreak>) {
        (self.bytes, self.order)
    }
}

impl<T> PartialEq for Ranked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.rank() == other.rank()
    }
}
impl<T> Eq for Ranked<T> {}
impl<T> PartialOrd for Ranked<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Ranked<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

/// The `n` largest items offered, in memory for `n` of them only; the same set and order
/// whatever order they are offered in.
#[derive(Debug)]
pub struct TopN<T> {
    n: usize,
    heap: BinaryHeap<Reverse<Ranked<T>>>,
}

impl<T> TopN<T> {
    /// Keeps the `n` largest.
    pub fn new(n: usize) -> Self {
        TopN {
            n,
            heap: BinaryHeap::new(),
        }
    }

    /// Whether an item of `bytes` with `tie` would be kept (so a caller can skip building it).
    pub fn wants(&self, bytes: u64, tie: TieBreak) -> bool {
        self.n > 0
            && (self.heap.len() < self.n
                || self
                    .heap
                    .peek()
                    .is_some_and(|Reverse(low)| (bytes, Reverse(tie)) > low.rank()))
    }

    /// Offers an item of `bytes`, ranked among items of the same size by `tie`.
    pub fn offer(&mut self, bytes: u64, tie: TieBreak, item: T) {
        if !self.wants(bytes, tie) {
            return;
        }
        self.heap.push(Reverse(Ranked {
            bytes,
            order: Reverse(tie),
            item,
        }));
        if self.heap.len() > self.n {
            self.heap.pop();
        }
    }

    /// The items kept, largest first.
    pub fn into_sorted(self) -> Vec<T> {
        let mut items: Vec<Ranked<T>> = self.heap.into_iter().map(|Reverse(r)| r).collect();
        items.sort_by(|a, b| b.cmp(a));
        items.into_iter().map(|r| r.item).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_the_first_segments_after_the_prefix() {
        let g = |prefix: &str, depth, key: &'static str| {
            String::from_utf8_lossy(prefix_group(prefix.as_bytes(), depth, key.as_bytes()))
                .into_owned()
        };
        assert_eq!(g("", 1, "/registry/pods/ns/p"), "/registry/");
        assert_eq!(g("", 2, "/registry/pods/ns/p"), "/registry/pods/");
        assert_eq!(g("/registry/", 1, "/registry/pods/ns/p"), "/registry/pods/");
        assert_eq!(
            g("/registry/", 2, "/registry/pods/ns/p"),
            "/registry/pods/ns/"
        );
        assert_eq!(g("", 2, "a/b/c"), "a/b/");
        assert_eq!(g("", 2, "plain"), "plain");
        assert_eq!(g("", 3, "/short/key"), "/short/key");
        assert_eq!(g("/x", 1, "/x/y/z"), "/x/y/");
        assert_eq!(g("/registry/", 0, "/registry/pods/x"), "/registry/");
        assert_eq!(
            display_bytes(b"/bin/\xff\xfe/a\xc3\xa9"),
            "/bin/\\xff\\xfe/a\u{e9}"
        );
        assert_ne!(display_bytes(b"/\xff"), display_bytes(b"/\xfe"));
    }

    #[test]
    fn the_tally_ranks_groups_and_the_top_keeps_the_largest() {
        let grouping = PrefixDepth::new(&UsageOptions {
            depth: 1,
            ..Default::default()
        });
        let mut tally = Tally::new(&grouping);
        let a = tally.groups_of(&grouping, b"/a/1");
        let b = tally.groups_of(&grouping, b"/b/1");
        assert_eq!(tally.groups_of(&grouping, b"/a/2"), a);
        tally.live(&a, 10, false);
        tally.live(&a, 10, true);
        tally.live(&b, 15, false);
        tally.history(&b, 100);
        assert_eq!(
            (tally.keys(), tally.live_bytes(), tally.leased_keys()),
            (3, 35, 1)
        );
        assert_eq!(tally.history_totals(), (1, 100));
        let tables = tally.tables(1, true);
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].groups_total, 2);
        assert_eq!(tables[0].groups[0].group, "/b/");
        assert_eq!(tables[0].groups[0].history_bytes, Some(100));

        let mut top = TopN::new(2);
        for (i, (bytes, name)) in [(5, "a"), (9, "b"), (1, "c"), (9, "d"), (7, "e")]
            .into_iter()
            .enumerate()
        {
            top.offer(bytes, (i as i64, 0), name);
        }
        assert_eq!(top.into_sorted(), ["b", "d"]);
        let mut none = TopN::new(0);
        none.offer(1, (0, 0), ());
        assert!(none.into_sorted().is_empty());
    }

    #[test]
    fn ties_in_the_top_go_to_the_earliest_revision_whatever_the_arrival_order() {
        // Four keys of one size, revisions 13 to 16: offered in key order (live) or in
        // any other (offline: hash order), the two written first are kept, first first.
        let keys = [(16, "w"), (15, "x"), (14, "y"), (13, "z")];
        let mut orders = vec![keys.to_vec()];
        orders.push(keys.iter().rev().copied().collect());
        orders.push(vec![keys[1], keys[3], keys[0], keys[2]]);
        for order in orders {
            let mut top = TopN::new(2);
            for (revision, key) in order {
                top.offer(17, (revision, 0), key);
            }
            assert_eq!(top.into_sorted(), ["z", "y"]);
        }
        // Within one revision (a transaction), the lower hash.
        let mut top = TopN::new(1);
        top.offer(5, (9, 2), "second");
        top.offer(5, (9, 1), "first");
        assert!(!top.wants(5, (9, 3)));
        assert_eq!(top.into_sorted(), ["first"]);
        assert_eq!(key_hash(b"/a"), key_hash(b"/a"));
        assert_ne!(key_hash(b"/a"), key_hash(b"/b"));
    }
}
