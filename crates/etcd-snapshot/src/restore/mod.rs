//! Native `snapshot restore`: turns a snapshot into the data dir of a member of a new cluster,
//! as `etcdutl snapshot restore` does, without etcd's tools.
//!
//! The db (copied as a stream, trailer checked and stripped, then checked as bbolt page by
//! page) gets the new membership, a consistent index equal to the number of members and term
//! 1, written copy-on-write in place: the db is never held in memory. Beside
//! it go the WAL (membership as raft conf changes, hard state, snapshot marker) and the raft
//! snap file (v2 store with the members). Everything is written to a temporary dir beside the
//! target (0700, see `staging`; those killed restores left are removed by the next), fsynced,
//! and renamed into place, the db never after the WAL (see `placement`); a non-empty data dir
//! or WAL dir is refused, or with `move_aside` renamed to `DIR.bak-<UTC time>` (never
//! deleted); a data dir a member runs on is refused (see `lock`). A marker,
//! `member/etcdops-restore.json`, makes repeating the same restore a no-op while the db, WAL
//! and snap file it vouches for are on disk (see `on_disk`).

mod bbolt_write;
mod ids;
mod lock;
mod on_disk;
mod pb;
mod placement;
mod selinux;
mod snap;
mod source;
mod staging;
mod v2store;
mod wal;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bbolt::{BoltDb, BoltError, DbFile, PageSource};
use crate::error::SnapshotError;
use crate::input::{SnapshotFile, sha256_of};
use crate::status::{Scan, StatusOptions, TrailerCheck, scan};

use crate::delta::{DeltaReplay, ReplaySummary, lease_entry};
pub use bbolt_write::{
    Append, AppendReport, BucketContents, append_sorted, last_key, replace_buckets, verify_rewrite,
};
pub use ids::{RestoredMember, cluster_id, member_id, parse_initial_cluster};
use placement::{Targets, WalPlacement};
pub use source::{
    PointInTimeSource, RestoreSource, open_point_in_time, open_restore_source, restore_to_point,
};
use staging::{Staging, remove_leftovers};

/// What to restore, and as which member of which new cluster.
#[derive(Debug, Clone, Default)]
pub struct RestoreRequest {
    /// This member's name; must appear in `initial_cluster`.
    pub name: String,
    /// `name=peer-url,...` for every member of the new cluster.
    pub initial_cluster: String,
    /// The new cluster's token (member IDs derive from it).
    pub initial_cluster_token: String,
    /// This member's peer URLs; must equal its URLs in `initial_cluster`.
    pub initial_advertise_peer_urls: Vec<String>,
    /// The data dir to create (absent or empty).
    pub data_dir: PathBuf,
    /// A separate WAL dir (absent or empty); default `<data dir>/member/wal`.
    pub wal_dir: Option<PathBuf>,
    /// Restore even when etcd's SHA-256 trailer does not match the db.
    pub skip_hash_check: bool,
    /// Raise the latest revision by this much (etcdutl's `--bump-revision`): a key with an
    /// empty value is put at (latest + N, 0). Needs `mark_compacted`.
    pub bump_revision: u64,
    /// Mark the (bumped) latest revision as scheduled for compaction, so clients watching
    /// older revisions are told to resync (etcdutl's `--mark-compacted`).
    pub mark_compacted: bool,
    /// Rename a non-empty data dir (and WAL dir) to `DIR.bak-<UTC time>` instead of refusing
    /// it; nothing is ever deleted.
    pub move_aside: bool,
    /// With `move_aside`: move it aside even when a member has run on a restored dir since.
    pub force: bool,
    /// `USER[:GROUP]` (names or numeric ids) to own the restored tree.
    pub owner: Option<String>,
    /// Run every check (source, options, target dirs) and report what would be written, but
    /// write nothing (check mode).
    pub dry_run: bool,
}

/// What a restore wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoreResult {
    /// The data dir written.
    pub data_dir: PathBuf,
    /// The WAL dir written.
    pub wal_dir: PathBuf,
    /// This member's name.
    pub name: String,
    /// This member's ID, hex.
    pub member_id: String,
    /// The new cluster's ID, hex.
    pub cluster_id: String,
    /// Members of the new cluster, by ID.
    pub members: Vec<RestoredMember>,
    /// MVCC revision of the snapshot (after --bump-revision).
    pub revision: i64,
    /// Consistent index and raft commit index written (the number of members).
    pub consistent_index: u64,
    /// Bytes of the db written.
    pub db_size: u64,
    /// What etcd's SHA-256 trailer said.
    pub trailer: TrailerCheck,
    /// SHA-256 of the snapshot's db (before the rewrite), hex.
    pub db_sha256: String,
    /// False when the data dir already held this very restore (nothing was touched).
    pub changed: bool,
    /// Where the previous data dir (and WAL dir) were moved with `move_aside`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved_aside: Vec<PathBuf>,
    /// A point-in-time restore: the full backup, the segments replayed, the revision
    /// reached and what happened to leases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point_in_time: Option<ReplaySummary>,
    /// Staging dirs of earlier restores of this target that were killed (each could hold a
    /// plaintext db), removed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub leftovers_removed: Vec<PathBuf>,
}

/// The marker a restore leaves in `<data dir>/member/`, so that repeating the same restore is
/// a no-op.
pub const MARKER_FILE: &str = "etcdops-restore.json";

/// What `<data dir>/member/etcdops-restore.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreMarker {
    /// SHA-256 of the snapshot's db (before the rewrite), hex.
    pub db_sha256: String,
    /// The member's name.
    pub name: String,
    /// `--initial-cluster` as given.
    pub initial_cluster: String,
    /// `--initial-cluster-token`.
    pub initial_cluster_token: String,
    /// The WAL dir written.
    pub wal_dir: PathBuf,
    /// Total bytes of the WAL files at restore time.
    pub wal_size: u64,
    /// Number of WAL files at restore time.
    pub wal_files: u64,
    /// Newest modification time of the WAL files at restore time (ns since the epoch).
    #[serde(default)]
    pub wal_modified_ns: u128,
    /// `--bump-revision`.
    #[serde(default)]
    pub bump_revision: u64,
    /// The member's ID, hex.
    pub member_id: String,
    /// The new cluster's ID, hex.
    pub cluster_id: String,
    /// MVCC revision restored (after --bump-revision).
    pub revision: i64,
    /// The revision of a point-in-time restore (`--to-revision`, or the one `--to-time`
    /// resolved to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_revision: Option<i64>,
    /// When the restore was done (UTC, RFC 3339).
    pub restored_at: String,
    /// A fingerprint of the db this restore wrote (SHA-256 of its size and first bytes, both
    /// meta pages among them): while no member has run on the dir, a db replaced since does
    /// not pass for this restore. Absent in markers of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_fingerprint: Option<String>,
}

/// Reads the restore marker of `data_dir`, if there is a readable one.
pub fn read_marker(data_dir: &Path) -> Option<RestoreMarker> {
    let bytes = fs::read(data_dir.join("member").join(MARKER_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Bytes and number of the files in `dir` (0, 0 when it is missing).
pub fn wal_usage(dir: &Path) -> (u64, u64) {
    let (size, files, _) = wal_state(dir);
    (size, files)
}

/// Bytes, number and newest modification time (ns) of the files in `dir`.
fn wal_state(dir: &Path) -> (u64, u64, u128) {
    let mut size = 0;
    let mut files = 0;
    let mut newest = 0;
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if let Ok(meta) = entry.metadata() {
                if meta.is_file() {
                    size += meta.len();
                    files += 1;
                    let modified = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map(|d| d.as_nanos())
                        .unwrap_or(0);
                    newest = newest.max(modified);
                }
            }
        }
    }
    (size, files, newest)
}

/// Whether a member has run on a restored data dir since the restore (its WAL changed).
fn ran_since_restore(marker: &RestoreMarker) -> bool {
    let (size, files, newest) = wal_state(&marker.wal_dir);
    size > marker.wal_size
        || files != marker.wal_files
        || (marker.wal_modified_ns > 0 && newest > marker.wal_modified_ns)
}

/// The id of `name` (or a number) in an `/etc/passwd`-like file (`name:x:id:...`).
fn lookup_id(file: &str, name: &str) -> Option<u32> {
    if let Ok(id) = name.parse::<u32>() {
        return Some(id);
    }
    let text = fs::read_to_string(file).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        (fields.next()? == name)
            .then(|| fields.nth(1)?.parse().ok())
            .flatten()
    })
}

/// Resolves `USER[:GROUP]` to ids via /etc/passwd and /etc/group (numbers accepted).
pub fn resolve_owner(spec: &str) -> Result<(u32, Option<u32>), RestoreError> {
    let (user, group) = match spec.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (spec, None),
    };
    if user.is_empty() {
        return Err(invalid("--owner")("USER must not be empty".into()));
    }
    let uid = lookup_id("/etc/passwd", user)
        .ok_or_else(|| invalid("--owner")(format!("no user {user:?}")))?;
    let gid = match group.filter(|g| !g.is_empty()) {
        Some(g) => Some(
            lookup_id("/etc/group", g)
                .ok_or_else(|| invalid("--owner")(format!("no group {g:?}")))?,
        ),
        None => None,
    };
    Ok((uid, gid))
}

/// Changes the owner of `path` and everything under it.
fn chown_tree(path: &Path, uid: u32, gid: Option<u32>) -> Result<(), RestoreError> {
    std::os::unix::fs::lchown(path, Some(uid), gid).map_err(io_err(path))?;
    let meta = fs::symlink_metadata(path).map_err(io_err(path))?;
    if meta.is_dir() {
        for entry in fs::read_dir(path).map_err(io_err(path))? {
            let entry = entry.map_err(io_err(path))?;
            chown_tree(&entry.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// Whether `dir` exists and holds something.
fn non_empty(dir: &Path) -> bool {
    fs::read_dir(dir)
        .map(|mut e| e.next().is_some())
        .unwrap_or(false)
}

/// Where a data or WAL dir really is, and whether it is a mount point.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DirLayout {
    /// The dir itself, its symlinks followed (it may not exist yet).
    real: PathBuf,
    /// It is the root of a mounted filesystem (its own disk): it cannot be renamed, only
    /// what is in it.
    mount_point: bool,
}

impl DirLayout {
    fn of(dir: &Path) -> Result<DirLayout, RestoreError> {
        let mut real = dir.to_path_buf();
        // Follow a chain of symlinks by hand, so that a link to a dir not created yet works.
        for _ in 0..40 {
            match fs::symlink_metadata(&real) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = fs::read_link(&real).map_err(io_err(&real))?;
                    real = match real.parent() {
                        Some(parent) if target.is_relative() => parent.join(target),
                        _ => target,
                    };
                }
                _ => {
                    let mount_point = is_mount_point(&real);
                    return Ok(DirLayout { real, mount_point });
                }
            }
        }
        Err(RestoreError::InvalidOption {
            option: "--data-dir",
            reason: format!("{}: too many levels of symbolic links", dir.display()),
        })
    }
}

/// Whether `dir` is the root of a filesystem mounted on its parent's.
fn is_mount_point(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let parent = match dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => parent,
        None => return false,
    };
    match (fs::metadata(dir), fs::metadata(parent)) {
        (Ok(d), Ok(p)) => d.is_dir() && d.dev() != p.dev(),
        _ => false,
    }
}

/// The owner (user and group) of an existing data dir, to give the restored one, when this
/// process may give files away (runs as root) and the dir belongs to someone else.
fn inherited_owner(data_dir: &Path) -> Option<(u32, Option<u32>)> {
    use std::os::unix::fs::MetadataExt;
    let existing = fs::metadata(data_dir).ok()?;
    (current_uid() == 0 && (existing.uid(), existing.gid()) != (0, 0))
        .then_some((existing.uid(), Some(existing.gid())))
}

/// This process's effective user id, from `/proc/self` (owned by it).
fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX)
}

/// `DIR.bak-<UTC time>` beside `dir`.
fn aside_path(dir: &Path, stamp: &str) -> PathBuf {
    let mut name = dir.as_os_str().to_os_string();
    name.push(format!(".bak-{stamp}"));
    PathBuf::from(name)
}

/// Why a restore failed. Nothing is left behind at the target when it does.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// Bad input from the user.
    #[error("invalid {option}: {reason}")]
    InvalidOption {
        /// The option.
        option: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The data dir already holds another etcdops restore (another snapshot or request).
    #[error(
        "'{path}' holds an etcdops restore of another snapshot or request (member {name} of \
         cluster {cluster_id}, restored at {restored_at}); restore only into a new or empty \
         directory, or move this one aside"
    )]
    HoldsOtherRestore {
        /// The data dir.
        path: PathBuf,
        /// The member it was restored as.
        name: String,
        /// The cluster it was restored into.
        cluster_id: String,
        /// When.
        restored_at: String,
    },
    /// The data dir or WAL dir already holds something.
    #[error("'{path}' is not empty; restore only into a new or empty directory")]
    NotEmpty {
        /// The directory.
        path: PathBuf,
    },
    /// `--move-aside` of a restored data dir a member has run on since.
    #[error(
        "'{path}' was restored by etcdops and a member has run on it since (its WAL changed); \
         force it to move it aside anyway"
    )]
    RanSinceRestore {
        /// The data dir.
        path: PathBuf,
    },
    /// etcd runs on the dir: it holds the lock on its db.
    #[error("the member at '{path}' is running (etcd holds a lock on its db); stop it first")]
    MemberRunning {
        /// The data dir.
        path: PathBuf,
    },
    /// The data dir holds an etcdops restore that is no longer whole (or never finished).
    #[error(
        "'{path}' holds an etcdops restore that is incomplete or damaged ({problem}); \
         restore again with the move-aside option to keep it aside and restore anew"
    )]
    Incomplete {
        /// The data dir.
        path: PathBuf,
        /// What is missing or damaged.
        problem: String,
    },
    /// A snapshot without etcd's SHA-256 trailer: its integrity cannot be checked.
    #[error(
        "'{name}' has no SHA-256 trailer (cut off, or a raw member db), so its integrity cannot \
         be checked; restore it with the hash check skipped only if you trust it"
    )]
    NoTrailer {
        /// The snapshot.
        name: String,
    },
    /// The snapshot is damaged or not etcd's.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// Rewriting the db failed.
    #[error("cannot rewrite the db of '{name}': {source}")]
    Rewrite {
        /// The snapshot.
        name: String,
        /// What the bbolt layer found.
        source: BoltError,
    },
    /// A file or directory could not be written.
    #[error("cannot write '{path}': {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl etcd_common::Hinted for RestoreError {
    fn hint(&self) -> Option<etcd_common::Hint> {
        use etcd_common::{Hint, options};
        match self {
            RestoreError::NoTrailer { .. } => Some(Hint::option(options::SKIP_HASH_CHECK)),
            RestoreError::Incomplete { .. } | RestoreError::HoldsOtherRestore { .. } => {
                Some(Hint::option(options::MOVE_ASIDE))
            }
            RestoreError::RanSinceRestore { .. } => Some(Hint::option(options::FORCE)),
            _ => None,
        }
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> RestoreError + '_ {
    move |source| RestoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `dir` is absent or an empty directory.
fn ensure_empty(dir: &Path) -> Result<(), RestoreError> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(RestoreError::NotEmpty {
                    path: dir.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Err(RestoreError::NotEmpty {
            path: dir.to_path_buf(),
        }),
        Err(e) => Err(io_err(dir)(e)),
    }
}

fn make_dir(path: &Path) -> Result<(), RestoreError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(io_err(path))
}

fn write_file(path: &Path, bytes: &[u8], size: Option<u64>) -> Result<(), RestoreError> {
    let err = io_err(path);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(&err)?;
    file.write_all(bytes).map_err(&err)?;
    if let Some(size) = size {
        file.set_len(size.max(bytes.len() as u64)).map_err(&err)?;
    }
    file.sync_all().map_err(&err)
}

fn sync_dir(path: &Path) -> Result<(), RestoreError> {
    File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(io_err(path))
}

fn invalid(option: &'static str) -> impl Fn(String) -> RestoreError {
    move |reason| RestoreError::InvalidOption { option, reason }
}

/// Checks a restore request before anything is read: the member list, this member's name and
/// URLs, the revision flags, the owner, where the WAL dir lies, and that no member runs on
/// the data dir. Front-ends call it before opening the snapshot, so a
/// mistyped flag is reported at once, not after a download.
pub fn validate_restore_request(request: &RestoreRequest) -> Result<(), RestoreError> {
    validate(request)?;
    Targets::of(request).map(|_| ())
}

/// The members of the new cluster, the index of this one, and the owner's ids.
type Validated = (Vec<RestoredMember>, usize, Option<(u32, Option<u32>)>);

fn validate(request: &RestoreRequest) -> Result<Validated, RestoreError> {
    if request.initial_cluster_token.is_empty() {
        return Err(invalid("--initial-cluster-token")(
            "must not be empty".into(),
        ));
    }
    let members = parse_initial_cluster(&request.initial_cluster, &request.initial_cluster_token)
        .map_err(invalid("--initial-cluster"))?;
    let me = members
        .iter()
        .position(|m| m.name == request.name)
        .ok_or_else(|| {
            invalid("--name")(format!(
                "{:?} is not in --initial-cluster {:?}",
                request.name, request.initial_cluster
            ))
        })?;
    let me_member = &members[me];
    let mut advertised = request.initial_advertise_peer_urls.clone();
    advertised.sort();
    advertised.dedup();
    if advertised != me_member.peer_urls {
        return Err(invalid("--initial-advertise-peer-urls")(format!(
            "{} does not match {}'s peer URLs in --initial-cluster ({})",
            advertised.join(","),
            me_member.name,
            me_member.peer_urls.join(",")
        )));
    }
    if (request.bump_revision > 0) != request.mark_compacted {
        return Err(invalid("--mark-compacted")(
            "--mark-compacted is required with --bump-revision > 0, and allowed only with it"
                .into(),
        ));
    }
    let owner = request.owner.as_deref().map(resolve_owner).transpose()?;
    Ok((members, me, owner))
}

/// Where to decompress or download a snapshot for a restore into `data_dir`: the dir that will
/// hold it (created, 0700, when missing), so the temporary copy sits on the target's
/// filesystem (`/var/lib/etcd` is often its own disk) and the copy into place stays local.
pub fn restore_spool_dir(data_dir: &Path) -> Result<PathBuf, RestoreError> {
    let parent = data_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    make_dir(&parent)?;
    Ok(parent)
}

/// Restores `snapshot` (`name` is for messages) into a new data dir. The db is copied as a
/// stream into a temporary dir beside the target (its SHA-256 computed on the way), checked
/// there page by page, and rewritten in place with copy-on-write pages: memory stays small
/// whatever the db's size.
pub fn restore_snapshot(
    name: &str,
    snapshot: &SnapshotFile,
    request: &RestoreRequest,
) -> Result<RestoreResult, RestoreError> {
    restore_point_in_time(name, snapshot, request, None)
}

/// [`restore_snapshot`], then the changes of `replay` (a chain's delta segments) appended to
/// the restored db's `key` bucket up to the replay's target revision, with their original
/// revisions; leases granted after the full backup are recreated (or detached, see
/// [`ReplaySummary`]). The db is rewritten before the WAL and snap files are made, so the
/// result is a plain restore of the state at the target revision.
pub fn restore_point_in_time(
    name: &str,
    snapshot: &SnapshotFile,
    request: &RestoreRequest,
    mut replay: Option<&mut DeltaReplay>,
) -> Result<RestoreResult, RestoreError> {
    let to_revision = replay.as_ref().map(|r| r.target_revision());
    let (members, me, owner) = validate(request)?;
    let me = &members[me];
    let member_ids: Vec<u64> = members.iter().map(|m| m.id).collect();
    let cluster = cluster_id(&member_ids);
    let node_id = me.id;

    let Targets {
        mount_point,
        data_dir,
        data_target,
        placement,
        wal_target,
        wal_final,
    } = Targets::of(request)?;
    // Without etcd's trailer nothing vouches for the db: refused before anything is written.
    if snapshot.trailer().is_none() && !request.skip_hash_check {
        return Err(RestoreError::NoTrailer {
            name: name.to_string(),
        });
    }
    // The owner the data dir has now, kept unless --owner says otherwise.
    let owner = owner.or_else(|| inherited_owner(&data_dir));
    // Staging dirs killed restores left beside the targets (a restore that writes removes
    // them; a dry run writes nothing).
    let leftovers = || -> Result<Vec<PathBuf>, RestoreError> {
        if request.dry_run {
            return Ok(Vec::new());
        }
        let mut beside = vec![data_target.as_path()];
        beside.extend(wal_target.as_deref());
        remove_leftovers(&beside)
    };

    let read_failed = |source: std::io::Error| {
        RestoreError::Snapshot(SnapshotError::ReadFile {
            path: name.to_string(),
            source,
        })
    };
    let trailer_check = |sha: &str| -> Result<TrailerCheck, RestoreError> {
        match snapshot.trailer() {
            None if request.skip_hash_check => Ok(TrailerCheck::Absent),
            None => Err(RestoreError::NoTrailer {
                name: name.to_string(),
            }),
            Some(t) if hex::encode(t) == sha => Ok(TrailerCheck::Verified),
            Some(_) if request.skip_hash_check => Ok(TrailerCheck::MismatchIgnored),
            Some(t) => Err(RestoreError::Snapshot(SnapshotError::HashMismatch {
                name: name.to_string(),
                expected: hex::encode(t),
                actual: sha.to_string(),
            })),
        }
    };

    // The very same restore already done, and still whole on disk: report it and touch
    // nothing. A marker whose db, WAL or snap file is gone is not trusted.
    let mut damaged = None;
    if let Some(marker) = read_marker(&data_dir) {
        damaged = on_disk::damage(&data_dir, &marker);
        let same_cluster =
            parse_initial_cluster(&marker.initial_cluster, &marker.initial_cluster_token)
                .map(|m| m == members)
                .unwrap_or(false);
        let same_request = marker.name == request.name
            && marker.initial_cluster_token == request.initial_cluster_token
            && same_cluster
            && marker.bump_revision == request.bump_revision
            && marker.to_revision == to_revision
            && marker.wal_dir == wal_final;
        let db_sha256 = match (same_request, snapshot.known_sha256()) {
            (false, _) => String::new(),
            (true, Some(known)) => known.to_string(),
            (true, None) => sha256_of(snapshot.db()).map_err(read_failed)?,
        };
        if same_request
            && marker.db_sha256 == db_sha256
            && let Some(problem) = &damaged
            && !request.move_aside
        {
            return Err(RestoreError::Incomplete {
                path: data_dir.clone(),
                problem: problem.clone(),
            });
        }
        if same_request && marker.db_sha256 == db_sha256 && damaged.is_none() {
            let trailer = trailer_check(&db_sha256)?;
            let db_size = fs::metadata(data_dir.join("member").join("snap").join("db"))
                .map(|m| m.len())
                .unwrap_or(0);
            return Ok(RestoreResult {
                wal_dir: wal_final,
                data_dir: request.data_dir.clone(),
                name: me.name.clone(),
                member_id: format!("{node_id:x}"),
                cluster_id: format!("{cluster:x}"),
                members: members.clone(),
                revision: marker.revision,
                consistent_index: members.len() as u64,
                db_size,
                trailer,
                db_sha256,
                changed: false,
                moved_aside: Vec::new(),
                point_in_time: replay.as_ref().map(|r| r.summary.clone()),
                leftovers_removed: leftovers()?,
            });
        }
    }
    let mut to_move: Vec<PathBuf> = Vec::new();
    let mut targets = vec![data_target.clone()];
    targets.extend(wal_target.clone());
    for target in targets {
        if request.move_aside && non_empty(&target) {
            to_move.push(target);
        } else if target == data_target
            && let Some(marker) = read_marker(&data_dir)
        {
            return Err(RestoreError::HoldsOtherRestore {
                path: data_dir.clone(),
                name: marker.name,
                cluster_id: marker.cluster_id,
                restored_at: marker.restored_at,
            });
        } else {
            ensure_empty(&target)?;
        }
    }
    // The WAL is moved aside before the data dir: never a WAL without its db meanwhile.
    to_move.reverse();
    // A damaged restore is moved aside whatever ran on it (a move deletes nothing).
    if to_move.contains(&data_target) && !request.force && damaged.is_none() {
        if let Some(marker) = read_marker(&data_dir) {
            if ran_since_restore(&marker) {
                return Err(RestoreError::RanSinceRestore {
                    path: data_dir.clone(),
                });
            }
        }
    }
    if request.dry_run {
        // Check mode: the source is read and checked (trailer, structure), nothing is written.
        let db_sha256 = match snapshot.known_sha256() {
            Some(known) => known.to_string(),
            None => sha256_of(snapshot.db()).map_err(read_failed)?,
        };
        let trailer = trailer_check(&db_sha256)?;
        let status = scan(
            name,
            snapshot.db(),
            None,
            Some(db_sha256.clone()),
            &StatusOptions::default(),
            Scan::CheckOnly,
        )?;
        let to_revision = settle_target(replay.as_deref_mut(), status.revision)?;
        return Ok(RestoreResult {
            wal_dir: wal_final,
            data_dir: request.data_dir.clone(),
            name: me.name.clone(),
            member_id: format!("{node_id:x}"),
            cluster_id: format!("{cluster:x}"),
            members: members.clone(),
            revision: status
                .revision
                .max(to_revision.unwrap_or(0))
                .saturating_add(i64::try_from(request.bump_revision).unwrap_or(i64::MAX)),
            consistent_index: members.len() as u64,
            db_size: snapshot.db_size(),
            trailer,
            db_sha256,
            changed: true,
            moved_aside: Vec::new(),
            point_in_time: replay.as_ref().map(|r| r.summary.clone()),
            leftovers_removed: Vec::new(),
        });
    }
    let leftovers_removed = leftovers()?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    // A name already taken (two restores in one second) gets a counter: never overwrite.
    let mut moves: Vec<(PathBuf, PathBuf)> = Vec::new();
    for dir in &to_move {
        let aside = (0..1000)
            .map(|n| {
                if n == 0 {
                    aside_path(dir, &stamp)
                } else {
                    aside_path(dir, &format!("{stamp}-{n}"))
                }
            })
            .find(|candidate| fs::symlink_metadata(candidate).is_err())
            .ok_or_else(|| RestoreError::NotEmpty {
                path: aside_path(dir, &stamp),
            })?;
        moves.push((dir.clone(), aside));
    }
    // Stage the db: copied as a stream beside the target, hashed on the way, then checked
    // there page by page (the revision read in the same pass).
    let data_stage = Staging::beside(&data_target)?;
    let member_stage = if mount_point {
        data_stage.path.clone()
    } else {
        data_stage.path.join("member")
    };
    let snap_dir = member_stage.join("snap");
    make_dir(&snap_dir)?;
    let db_path = snap_dir.join("db");
    let db_sha256 = copy_db(snapshot, &db_path, name)?;
    let trailer = trailer_check(&db_sha256)?;
    let db_file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&db_path)
        .map_err(io_err(&db_path))?;
    let db_len = snapshot.db_size();
    let status = scan(
        name,
        DbFile::new(db_file.try_clone().map_err(io_err(&db_path))?, db_len),
        None,
        Some(db_sha256.clone()),
        &StatusOptions::default(),
        Scan::CheckOnly,
    )?;
    let to_revision = settle_target(replay.as_deref_mut(), status.revision)?;
    let rewrite_failed = |source| RestoreError::Rewrite {
        name: name.to_string(),
        source,
    };
    let bolt = BoltDb::open(DbFile::new(db_file, db_len)).map_err(rewrite_failed)?;

    // Rewrite membership, consistent index and term.
    let commit = members.len() as u64;
    let term = 1u64;
    let mut replace: BTreeMap<Vec<u8>, BucketContents> = BTreeMap::new();
    let mut members_bucket = BucketContents::new();
    for member in &members {
        members_bucket.insert(
            format!("{:x}", member.id).into_bytes(),
            wal::member_json(member),
        );
    }
    replace.insert(b"members".to_vec(), members_bucket);
    replace.insert(b"members_removed".to_vec(), BucketContents::new());
    let mut meta = current_bucket(&bolt, b"meta").map_err(rewrite_failed)?;
    meta.insert(b"consistent_index".to_vec(), commit.to_be_bytes().to_vec());
    meta.insert(b"term".to_vec(), term.to_be_bytes().to_vec());
    // A point-in-time restore: leases its changes use that the db lacks are added (or, when
    // their TTL is unknown, taken off those changes).
    let mut detach = BTreeSet::new();
    if let Some(replay) = replay.as_deref_mut() {
        let mut leases = current_bucket(&bolt, b"lease").map_err(rewrite_failed)?;
        let existing: BTreeSet<i64> = leases
            .keys()
            .filter_map(|k| k.as_slice().try_into().ok().map(i64::from_be_bytes))
            .collect();
        let (recreate, detached) = replay
            .plan_leases(status.revision, &existing)
            .map_err(rewrite_failed)?;
        if !recreate.is_empty() {
            for (id, ttl) in recreate {
                let (key, value) = lease_entry(id, ttl);
                leases.insert(key, value);
            }
            replace.insert(b"lease".to_vec(), leases);
        }
        detach = detached;
    }
    let mut revision = status.revision.max(to_revision.unwrap_or(0));
    let append = if request.bump_revision > 0 {
        let bumped = i64::try_from(request.bump_revision)
            .ok()
            .and_then(|n| revision.checked_add(n))
            .ok_or_else(|| {
                invalid("--bump-revision")(format!(
                    "{} overflows the revision {revision}",
                    request.bump_revision
                ))
            })?;
        revision = bumped;
        let mut key = bumped.to_be_bytes().to_vec();
        key.push(b'_');
        key.extend_from_slice(&0i64.to_be_bytes());
        meta.insert(b"scheduledCompactRev".to_vec(), key.clone());
        Some(Append {
            bucket: b"key".to_vec(),
            key,
            value: Vec::new(),
        })
    } else {
        None
    };
    replace.insert(b"meta".to_vec(), meta);
    // With a replay, the bump key goes after the replayed changes, in the bulk append.
    let single_append = if replay.is_some() {
        None
    } else {
        append.as_ref()
    };
    let patch = replace_buckets(&bolt, &replace, single_append).map_err(rewrite_failed)?;
    let db_file = bolt.into_source();
    patch
        .apply_to_file(db_file.file())
        .map_err(io_err(&db_path))?;
    let written = BoltDb::open(DbFile::new(
        db_file.file().try_clone().map_err(io_err(&db_path))?,
        patch.new_size(),
    ))
    .map_err(rewrite_failed)?;
    verify_rewrite(&written, &replace, single_append).map_err(rewrite_failed)?;
    let mut db_size = patch.new_size();
    if let Some(replay) = replay.as_deref_mut() {
        let mut changes = replay.changes(status.revision, &detach);
        let bump = append.clone().map(|a| Ok((a.key, a.value))).into_iter();
        let report = append_sorted(
            &written,
            db_file.file(),
            b"key",
            changes.by_ref().chain(bump),
        )
        .map_err(rewrite_failed)?;
        let mut summary = replay.summary.clone();
        changes.record_in(&mut summary);
        replay.summary = summary;
        db_size = report.new_size;
        // Read the result back: the bucket must end with the last key appended.
        let reread = BoltDb::open(DbFile::new(
            db_file.file().try_clone().map_err(io_err(&db_path))?,
            db_size,
        ))
        .map_err(rewrite_failed)?;
        if report.last_key.is_some()
            && last_key(&reread, b"key").map_err(rewrite_failed)? != report.last_key
        {
            return Err(rewrite_failed(BoltError::Check {
                problems: vec!["the replayed changes do not read back".into()],
            }));
        }
    }

    let store = v2store::store_json(&members)
        .map_err(|e| invalid("--initial-cluster")(format!("cannot encode the v2 store: {e}")))?;
    let snap_bytes = snap::file_bytes(&store, &member_ids, commit, term);
    let wal_bytes = wal::first_segment(&members, node_id, cluster);

    // Stage everything else beside the targets, then rename into place.
    write_file(
        &snap_dir.join(snap::file_name(term, commit)),
        &snap_bytes,
        None,
    )?;
    sync_dir(&snap_dir)?;
    let wal_stage = match &wal_target {
        Some(wal) => Some(Staging::beside(wal)?),
        None => None,
    };
    let wal_dir_staged = match (&wal_stage, &placement) {
        (Some(stage), _) => stage.path.clone(),
        (None, WalPlacement::Inside(inside)) => data_stage.path.join(inside),
        (None, WalPlacement::Outside(_)) => member_stage.join("wal"),
    };
    make_dir(&wal_dir_staged)?;
    write_file(
        &wal_dir_staged.join(wal::FIRST_SEGMENT),
        &wal_bytes,
        Some(wal::SEGMENT_SIZE),
    )?;
    sync_dir(&wal_dir_staged)?;
    let (wal_size, wal_files, wal_modified_ns) = wal_state(&wal_dir_staged);
    let staged_db = member_stage.join("snap").join("db");
    let db_fingerprint = on_disk::db_fingerprint(&staged_db).map_err(io_err(&staged_db))?;
    let marker = RestoreMarker {
        db_sha256: db_sha256.clone(),
        name: me.name.clone(),
        initial_cluster: request.initial_cluster.clone(),
        initial_cluster_token: request.initial_cluster_token.clone(),
        wal_dir: wal_final.clone(),
        wal_size,
        wal_files,
        wal_modified_ns,
        bump_revision: request.bump_revision,
        to_revision,
        member_id: format!("{node_id:x}"),
        cluster_id: format!("{cluster:x}"),
        revision,
        restored_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        db_fingerprint: Some(db_fingerprint),
    };
    let marker_json = serde_json::to_vec_pretty(&marker)
        .map_err(|e| invalid("--data-dir")(format!("cannot encode the restore marker: {e}")))?;
    write_file(&member_stage.join(MARKER_FILE), &marker_json, None)?;
    sync_dir(&member_stage)?;
    if let Some((uid, gid)) = owner {
        chown_tree(&data_stage.path, uid, gid)?;
        if let Some(stage) = &wal_stage {
            chown_tree(&stage.path, uid, gid)?;
        }
    }
    // The SELinux label etcd's data dir would get from its parent, where SELinux is on.
    selinux::label_like_existing(&data_stage.path, &data_target)?;
    if let (Some(stage), Some(target)) = (&wal_stage, &wal_target) {
        selinux::label_like_existing(&stage.path, target)?;
    }
    for (dir, aside) in &moves {
        fs::rename(dir, aside).map_err(io_err(dir))?;
    }
    // The db before the WAL: etcd on a WAL without its db starts an empty member, on a db
    // without a WAL it starts with the data. A WAL inside the data dir comes with it.
    data_stage.commit(&data_target)?;
    if mount_point {
        // etcd 3.5 refuses a data dir others can read; a fresh filesystem's root often is.
        fs::set_permissions(&data_dir, fs::Permissions::from_mode(0o700))
            .map_err(io_err(&data_dir))?;
    }
    if let (Some(stage), Some(target)) = (wal_stage, &wal_target)
        && let Err(e) = stage.commit(target)
    {
        // Put the old state back: the new data dir out (it is ours), the old dirs in.
        if let Ok(undo) = Staging::beside(&data_target) {
            let _ = fs::remove_dir(&undo.path);
            let _ = fs::rename(&data_target, &undo.path);
        }
        for (dir, aside) in moves.iter().rev() {
            let _ = fs::rename(aside, dir);
        }
        return Err(e);
    }

    Ok(RestoreResult {
        wal_dir: wal_final,
        data_dir: request.data_dir.clone(),
        name: me.name.clone(),
        member_id: format!("{node_id:x}"),
        cluster_id: format!("{cluster:x}"),
        members,
        revision,
        consistent_index: commit,
        db_size,
        trailer,
        db_sha256,
        changed: true,
        moved_aside: moves.into_iter().map(|(_, aside)| aside).collect(),
        point_in_time: replay.map(|r| r.summary.clone()),
        leftovers_removed,
    })
}

/// The revision a point-in-time restore stops at, once the full backup's own revision is
/// known: a point before what the full backup holds cannot be reached from it (refused; the
/// planner tries an earlier chain first, so this is a last guard).
fn settle_target(
    replay: Option<&mut DeltaReplay>,
    db_revision: i64,
) -> Result<Option<i64>, RestoreError> {
    let Some(replay) = replay else {
        return Ok(None);
    };
    let target = replay.target_revision();
    if target < db_revision {
        let option = if replay.summary.target_time.is_some() {
            "--to-time"
        } else {
            "--to-revision"
        };
        return Err(invalid(option)(format!(
            "the full backup {} already holds revision {db_revision}, after the target {target}; no earlier chain reaches the target",
            replay.summary.full
        )));
    }
    Ok(Some(target))
}

/// The revision of a snapshot's db: the main revision of the last key of its `key` bucket
/// (0 when it has none).
pub fn db_revision(snapshot: &SnapshotFile) -> Result<i64, BoltError> {
    let bolt = BoltDb::open(snapshot.db())?;
    Ok(last_key(&bolt, b"key")?
        .and_then(|key| crate::mvcc::parse_revision_key(&key))
        .map_or(0, |(main, _)| main))
}

/// Copies the db of `snapshot` (without its trailer) to a new file `to` and returns its
/// SHA-256: the kernel copies (`copy_file_range`) while a second thread hashes, unless the hash
/// is known already.
fn copy_db(snapshot: &SnapshotFile, to: &Path, name: &str) -> Result<String, RestoreError> {
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(to)
        .map_err(io_err(to))?;
    let db = snapshot.db();
    let mut source = db.file().try_clone().map_err(io_err(to))?;
    let mut copy = |out: &mut File| -> std::io::Result<u64> {
        source.seek(SeekFrom::Start(0))?;
        std::io::copy(&mut (&mut source).take(db.size()), out)
    };
    let (copied, sha) = std::thread::scope(|scope| {
        let hashing = match snapshot.known_sha256() {
            Some(known) => Ok(Ok(known.to_string())),
            None => Err(scope.spawn(|| sha256_of(db))),
        };
        let copied = copy(&mut out);
        let sha = match hashing {
            Ok(known) => known,
            Err(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the hashing thread panicked"))),
        };
        (copied, sha)
    });
    let copied = copied.map_err(io_err(to))?;
    if copied != db.size() {
        return Err(io_err(to)(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("copied {copied} of the db's {} bytes", db.size()),
        )));
    }
    sha.map_err(|source| {
        RestoreError::Snapshot(SnapshotError::ReadFile {
            path: name.to_string(),
            source,
        })
    })
}

/// The key/value pairs of the top-level bucket `name` (empty when it is missing).
fn current_bucket<S: PageSource>(
    bolt: &BoltDb<S>,
    name: &[u8],
) -> Result<BucketContents, BoltError> {
    let mut contents = BucketContents::new();
    if let Some(bucket) = bolt.bucket(&bolt.root(), name)? {
        bolt.for_each(&bucket, |entry| {
            if entry.is_bucket {
                return Err(BoltError::Page {
                    pgid: 0,
                    reason: format!(
                        "bucket {:?} holds a nested bucket",
                        String::from_utf8_lossy(name)
                    ),
                });
            }
            contents.insert(entry.key.to_vec(), entry.value.to_vec());
            Ok(())
        })?;
    }
    Ok(contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_dir_resolves_to_its_target_even_before_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("other disk");
        fs::create_dir_all(&disk).unwrap();
        // data -> relative link -> link2 -> "other disk/etcd" (not created yet)
        std::os::unix::fs::symlink(disk.join("etcd"), dir.path().join("link2")).unwrap();
        std::os::unix::fs::symlink("link2", dir.path().join("data")).unwrap();
        let layout = DirLayout::of(&dir.path().join("data")).unwrap();
        assert_eq!(layout.real, disk.join("etcd"));
        assert!(!layout.mount_point);
        let plain = DirLayout::of(&disk).unwrap();
        assert_eq!(plain.real, disk);
        assert!(!plain.mount_point);
    }

    #[test]
    fn a_symlink_loop_is_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let err = DirLayout::of(&dir.path().join("a"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("too many levels of symbolic links"), "{err}");
    }

    #[test]
    fn proc_is_a_mount_point_and_a_plain_dir_is_not() {
        assert!(is_mount_point(Path::new("/proc")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_mount_point(dir.path()));
    }
}
