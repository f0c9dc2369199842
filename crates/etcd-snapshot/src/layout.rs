//! The store layout etcdops writes, and the only names it reads, lists or deletes:
//!
//! ```text
//! etcd-<cluster>/<time>-rev<N>-<tag>.db[.zst][.age]                full backup
//! etcd-<cluster>/<time>-rev<N>-<tag>.db[.zst][.age].manifest.json  its manifest
//! etcd-<cluster>/<time>-rev<N>-<tag>.deltas/<seq>-rev<A>-<B>.delta.zst[.age][.manifest.json]
//! etcd-<cluster>/backup-run.lock.json                              backup run's writer lock
//! etcd-<cluster>/<time>-rev<N>-<tag>.deltas/compact.lock.json      a compaction's claim on the chain
//! ```
//!
//! `<cluster>` is the cluster ID in lowercase hex as etcd prints it (no leading zeros),
//! `<time>` `YYYYMMDDTHHMMSS.mmmZ`, `<tag>` 8 lowercase hex digits (absent in names written
//! before it existed), `<seq>` at least 6 digits. The temporary files of uploads into these
//! names (`.NAME.partial-<hex>` beside them) are etcdops's too. Everything else under a store
//! (other folders, nested stores, `etcd-old/`, `etcd-<cluster>/notes.db`) is foreign: never
//! listed as a backup or an orphan, never deleted, renamed or overwritten.
//!
//! In a local store, a layout name (or a cluster or chain folder's) held by something that
//! is not a regular file or dir (a symbolic link, a FIFO, a device, a socket, a dir named
//! like an object) is foreign too: never read, copied or deleted, and reported
//! ([`LayoutListing::foreign`]) so that `list`, `prune` and `copy` can say why they left it.

use etcd_core::MemberId;
use etcd_store::{NotRegularEntry, ObjectInfo, Store, StoreKind, UnfinishedUpload};

use crate::consolidate_lock::COMPACT_LOCK_FILE;
use crate::delta::{DELTA_SUFFIX, DELTAS_DIR};
use crate::error::Result;
use crate::manifest::{ENCRYPTED_SUFFIX, MANIFEST_SUFFIX};
use crate::run_lock::RUN_LOCK_FILE;

/// What a name in the layout is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutKind {
    /// A full backup object.
    Full,
    /// A full backup's manifest.
    FullManifest,
    /// A delta segment object.
    Segment,
    /// A delta segment's manifest.
    SegmentManifest,
    /// The backup-run writer lock of a cluster folder.
    RunLock,
    /// A compaction's claim on a chain, in its `.deltas/` folder (deleted with the chain).
    ConsolidateLock,
}

/// A name of the layout, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutName {
    /// The cluster whose folder holds it.
    pub cluster: MemberId,
    /// What it is.
    pub kind: LayoutKind,
}

/// The cluster ID a folder name `etcd-<hex>` stands for: lowercase hex exactly as etcd
/// prints an ID (`MemberId`'s display), so `etcd-old`, `etcd-ABC` and `etcd-0abc` are not
/// cluster folders.
pub fn cluster_folder_id(folder: &str) -> Option<MemberId> {
    let hex = folder.strip_prefix("etcd-")?;
    if hex.is_empty()
        || hex.len() > 16
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let id = MemberId(u64::from_str_radix(hex, 16).ok()?);
    (id.to_string() == hex).then_some(id)
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `stem` is a full backup's name without its suffix:
/// `YYYYMMDDTHHMMSS.mmmZ-rev<N>[-<8 hex>]`.
fn is_full_stem(stem: &str) -> bool {
    let b = stem.as_bytes();
    if b.len() < 24 {
        return false;
    }
    let time_ok = b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'.'
        && b[16..19].iter().all(u8::is_ascii_digit)
        && b[19] == b'Z';
    // The first 20 bytes are ASCII once `time_ok`: slicing there is safe.
    let Some(rest) = time_ok.then(|| stem[20..].strip_prefix("-rev")).flatten() else {
        return false;
    };
    match rest.split_once('-') {
        None => digits(rest),
        Some((revision, tag)) => {
            digits(revision)
                && tag.len() == 8
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        }
    }
}

/// Whether `file` is a full backup object's file name.
fn is_full_file(file: &str) -> bool {
    let file = file.strip_suffix(ENCRYPTED_SUFFIX).unwrap_or(file);
    file.strip_suffix(".db.zst")
        .or_else(|| file.strip_suffix(".db"))
        .is_some_and(is_full_stem)
}

/// Whether `file` is a segment object's file name: `<seq>-rev<A>-<B>.delta.zst[.age]`.
fn is_segment_file(file: &str) -> bool {
    let file = file.strip_suffix(ENCRYPTED_SUFFIX).unwrap_or(file);
    let Some(body) = file.strip_suffix(DELTA_SUFFIX) else {
        return false;
    };
    let mut parts = body.split('-');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(seq), Some(after), Some(to), None) => {
            seq.len() >= 6
                && digits(seq)
                && after.strip_prefix("rev").is_some_and(digits)
                && digits(to)
        }
        _ => false,
    }
}

/// Parses a store-relative name of the layout; `None` for every foreign name.
pub fn classify(name: &str) -> Option<LayoutName> {
    let (folder, rest) = name.split_once('/')?;
    let cluster = cluster_folder_id(folder)?;
    let kind = match rest.split_once('/') {
        None if rest == RUN_LOCK_FILE => LayoutKind::RunLock,
        None => match rest.strip_suffix(MANIFEST_SUFFIX) {
            Some(object) if is_full_file(object) => LayoutKind::FullManifest,
            None if is_full_file(rest) => LayoutKind::Full,
            _ => return None,
        },
        Some((chain, file)) => {
            let stem = chain.strip_suffix(DELTAS_DIR.trim_end_matches('/'))?;
            if !is_full_stem(stem) {
                return None;
            }
            match file.strip_suffix(MANIFEST_SUFFIX) {
                Some(object) if is_segment_file(object) => LayoutKind::SegmentManifest,
                None if is_segment_file(file) => LayoutKind::Segment,
                None if file == COMPACT_LOCK_FILE => LayoutKind::ConsolidateLock,
                _ => return None,
            }
        }
    };
    Some(LayoutName { cluster, kind })
}

/// Whether `name` is a chain folder's name: `etcd-<cluster>/<full backup stem>.deltas`.
pub(crate) fn is_chain_folder(name: &str) -> bool {
    name.strip_suffix(DELTAS_DIR.trim_end_matches('/'))
        .is_some_and(|stem| {
            classify(&format!("{stem}.db")).map(|l| l.kind) == Some(LayoutKind::Full)
        })
}

/// Whether an entry named `name` would be etcdops's if it were a regular file (or, for a
/// cluster or chain folder, a dir): a layout name, the temporary name of an upload into one,
/// or a cluster or chain folder.
fn names_ours(name: &str) -> bool {
    let (dir, file) = name.rsplit_once('/').unwrap_or(("", name));
    let target = |target: &str| {
        if dir.is_empty() {
            target.to_string()
        } else {
            format!("{dir}/{target}")
        }
    };
    classify(name).is_some()
        || is_chain_folder(name)
        || (!name.contains('/') && cluster_folder_id(name).is_some())
        || Store::upload_target(file).is_some_and(|t| classify(&target(t)).is_some())
}

/// The cluster whose folder a layout name is in.
pub fn cluster_of(name: &str) -> Option<MemberId> {
    classify(name).map(|n| n.cluster)
}

/// What a store holds of the layout.
#[derive(Debug, Default)]
pub(crate) struct LayoutListing {
    /// Objects with layout names, in name order.
    pub objects: Vec<ObjectInfo>,
    /// Temporary files of uploads into layout names that never completed.
    pub unfinished: Vec<UnfinishedUpload>,
    /// Entries with layout names (or cluster or chain folder names) that are not regular
    /// files (dirs, for folders): never read, copied or deleted (local stores only).
    pub foreign: Vec<NotRegularEntry>,
}

/// Lists the layout of `store`: its cluster folders only, and in them only layout names.
/// Nothing outside a cluster folder is read.
pub(crate) async fn list_layout(store: &Store) -> Result<LayoutListing> {
    let mut listing = LayoutListing::default();
    // Only a local store has entries that are not files (an object store has objects only).
    let local = store.kind() == StoreKind::Local;
    if local {
        listing.foreign.extend(foreign_in(store, "").await?);
    }
    for folder in store.list_folders("").await? {
        if cluster_folder_id(&folder).is_none() {
            continue;
        }
        let prefix = format!("{folder}/");
        if local {
            listing
                .foreign
                .extend(foreign_in_cluster(store, &folder).await?);
        }
        listing.objects.extend(
            store
                .list(&prefix)
                .await?
                .into_iter()
                .filter(|o| classify(&o.name).is_some()),
        );
        listing.unfinished.extend(
            store
                .list_unfinished(&prefix)
                .await?
                .into_iter()
                .filter(|u| classify(&u.target).is_some()),
        );
    }
    listing.objects.sort_by(|a, b| a.name.cmp(&b.name));
    listing.foreign.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(listing)
}

/// What in a local store's cluster folder `folder` (and in its chain folders) has a name of
/// etcdops's but is not a regular file: links, FIFOs, sockets, devices, and dirs where a file
/// of the layout belongs (`X.db.zst/`).
async fn foreign_in_cluster(store: &Store, folder: &str) -> Result<Vec<NotRegularEntry>> {
    let dir_entry = |name: String| {
        classify(&name).is_some().then_some(NotRegularEntry {
            name,
            kind: "a directory",
        })
    };
    let mut found = foreign_in(store, folder).await?;
    for dir in store.list_folders(folder).await? {
        if is_chain_folder(&dir) {
            found.extend(foreign_in(store, &dir).await?);
            found.extend(
                store
                    .list_folders(&dir)
                    .await?
                    .into_iter()
                    .filter_map(dir_entry),
            );
        } else {
            found.extend(dir_entry(dir));
        }
    }
    Ok(found)
}

/// The entries directly in `folder` that are not regular files or dirs and have names of
/// etcdops's.
async fn foreign_in(store: &Store, folder: &str) -> Result<Vec<NotRegularEntry>> {
    Ok(store
        .list_not_regular(folder)
        .await?
        .into_iter()
        .filter(|e| names_ours(&e.name))
        .collect())
}

/// Splits a backup's URL (`STORE/etcd-<cluster>/<object>`, or a manifest's, or a segment's)
/// into its store and its layout name there, so that one argument names a backup in its
/// store; `None` when the URL does not end in a layout name.
pub fn split_backup_url(url: &str) -> Option<(String, String)> {
    let trimmed = url.trim_end_matches('/');
    // The cluster folder is the second-last segment, or the third-last for a segment.
    let mut cuts: Vec<usize> = trimmed.match_indices('/').map(|(i, _)| i).collect();
    cuts.reverse();
    for &cut in cuts.iter().skip(1).take(2) {
        let name = &trimmed[cut + 1..];
        if classify(name).is_some() {
            let store = &trimmed[..cut];
            let store = if store.is_empty() || store.ends_with(':') {
                format!("{store}/")
            } else {
                store.to_string()
            };
            return Some((store, name.to_string()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst";

    #[test]
    fn cluster_folders_are_ids_as_etcd_prints_them() {
        assert_eq!(cluster_folder_id("etcd-abc"), Some(MemberId(0xabc)));
        assert_eq!(cluster_folder_id("etcd-0"), Some(MemberId(0)));
        assert_eq!(
            cluster_folder_id("etcd-cdf818194e3a8c32"),
            Some(MemberId(0xcdf8_1819_4e3a_8c32))
        );
        for foreign in [
            "etcd-old",
            "etcd-",
            "etcd",
            "etcd-ABC",
            "etcd-0abc",
            "etcd-0x1",
            "etcd-10000000000000000",
            "xetcd-abc",
            "etcd-abc ",
        ] {
            assert_eq!(cluster_folder_id(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn layout_names_and_foreign_names() {
        use LayoutKind::*;
        let good = [
            (FULL, Full),
            ("etcd-abc/20261130T010000.000Z-rev10-0000000a.db", Full),
            ("etcd-abc/20261130T010000.000Z-rev10-0000000a.db.age", Full),
            (
                "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst.age",
                Full,
            ),
            ("etcd-abc/20261129T173000.000Z-rev51.db.zst", Full),
            (
                "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst.manifest.json",
                FullManifest,
            ),
            (
                "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/000001-rev11-15.delta.zst",
                Segment,
            ),
            (
                "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/compact.lock.json",
                ConsolidateLock,
            ),
            (
                "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/1234567-rev11-15.delta.zst.age",
                Segment,
            ),
            (
                "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/000001-rev11-15.delta.zst.manifest.json",
                SegmentManifest,
            ),
            ("etcd-abc/backup-run.lock.json", RunLock),
        ];
        for (name, kind) in good {
            assert_eq!(
                classify(name),
                Some(LayoutName {
                    cluster: MemberId(0xabc),
                    kind
                }),
                "{name}"
            );
        }
        let foreign = [
            "manual/x.db",
            "app/app.db",
            "x.db.zst",
            "a.age",
            "etcd-abc/notes.db",
            "etcd-abc/notes.db.zst.age",
            "etcd-abc/notes.db.manifest.json",
            "etcd-abc/README.txt",
            "etcd-old/20261130T010000.000Z-rev10-0000000a.db.zst",
            "etcd/etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst",
            "etcd-abc/sub/20261130T010000.000Z-rev10-0000000a.db.zst",
            "etcd-abc/etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst",
            "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst.bak",
            "etcd-abc/20261130T010000.000Z-rev10-0000000A.db.zst",
            "etcd-abc/20261130T010000.000Z-rev10-00a.db.zst",
            "etcd-abc/20261130T010000Z-rev10-0000000a.db.zst",
            "etcd-abc/20261130T010000.000Z-revx-0000000a.db.zst",
            "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst.manifest.json.manifest.json",
            "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/notes.delta.zst",
            "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/001-rev11-15.delta.zst",
            "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/x/000001-rev11-15.delta.zst",
            "etcd-abc/other.deltas/000001-rev11-15.delta.zst",
            "etcd-abc/backup-run.lock.json.bak",
            "backup-run.lock.json",
            "etcd-abc/.20261130T010000.000Z-rev10-0000000a.db.zst.partial-1f",
        ];
        for name in foreign {
            assert_eq!(classify(name), None, "{name}");
        }
    }

    #[test]
    fn backup_urls_split_before_the_cluster_folder() {
        let segment =
            "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/000001-rev11-15.delta.zst";
        let cases = [
            (format!("s3://b/p/{FULL}"), ("s3://b/p", FULL)),
            (format!("s3://b/{FULL}"), ("s3://b", FULL)),
            (format!("/var/backups/{FULL}"), ("/var/backups", FULL)),
            (format!("/{FULL}"), ("/", FULL)),
            (format!("/srv/{segment}"), ("/srv", segment)),
        ];
        for (url, (store, name)) in cases {
            assert_eq!(
                split_backup_url(&url),
                Some((store.to_string(), name.to_string())),
                "{url}"
            );
        }
        assert_eq!(split_backup_url("/srv/manual/x.db"), None);
        assert_eq!(split_backup_url("s3://b/etcd-old/x.db"), None);
    }
}
