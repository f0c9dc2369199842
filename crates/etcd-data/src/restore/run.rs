//! A restore, step by step: check the request and the targets, recognise a restore already
//! done, pick the dirs to move aside, stage the db (copied, checked, rewritten), the snap file,
//! the WAL and the marker beside the targets, and put them in place.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bbolt::DbFile;

use super::db::{Rewrite, copy_db};
use super::dirs::{
    aside_stamp, chown_tree, ensure_empty, free_aside_path, inherited_owner, make_dir, non_empty,
    sync_dir, write_file,
};
use super::marker::{ran_since_restore, wal_state};
use super::placement::{Targets, WalPlacement};
use super::release::Release;
use super::staging::{Staging, remove_leftovers};
use super::validate::validate;
use super::{
    MARKER_FILE, NoReplay, Replay, RestoreError, RestoreGuard, RestoreMarker, RestoreRequest,
    RestoreResult, RestoredMember, V2Snapshot, cluster_id, invalid, io_err, on_disk, opts,
    parse_initial_cluster, read_marker, selinux, snap, v2store, wal,
};
use crate::file::{SnapshotFile, sha256_of};
use crate::status::{Scan, StatusOptions, TrailerCheck, scan, scan_free_pages};

/// Restores `snapshot` (`name` is for messages) into a new data dir. The db is put into a
/// temporary dir beside the target (a db spooled there is given its name, written once; a
/// plain file is copied by the kernel while it is hashed), checked there page by page, and
/// rewritten in place with copy-on-write pages: memory stays small whatever the db's size.
/// `guard` is asked first: its refusal ([`RestoreError::Refused`] holding it) writes nothing.
pub fn restore_snapshot(
    name: &str,
    snapshot: &SnapshotFile,
    request: &RestoreRequest,
    guard: &dyn RestoreGuard,
) -> Result<RestoreResult, RestoreError> {
    restore_with_replay::<NoReplay>(name, snapshot, request, None, guard)
}

/// [`restore_snapshot`], then the changes of `replay` appended to the restored db's `key`
/// bucket up to the replay's target revision, with their original revisions; the leases they
/// use are added (or taken off them, see [`Replay::plan_leases`]). The db is rewritten before
/// the WAL and snap files are made, so the result is a plain restore of the state at the
/// target revision. `guard` is asked first, as by [`restore_snapshot`].
pub fn restore_with_replay<R: Replay>(
    name: &str,
    snapshot: &SnapshotFile,
    request: &RestoreRequest,
    mut replay: Option<&mut R>,
    guard: &dyn RestoreGuard,
) -> Result<RestoreResult<R::Summary>, RestoreError> {
    guard.check_restore().map_err(RestoreError::Refused)?;
    // A spooled db given to an earlier restore is that restore's db now.
    if snapshot.consumed() {
        return Err(RestoreError::Snapshot(crate::Error::ReadFile {
            path: name.to_string(),
            source: std::io::Error::other(
                "it was restored from already, and its spooled db became that restore's; open it again",
            ),
        }));
    }
    let job = Job::new(
        name,
        snapshot,
        request,
        replay.as_deref().map(Replay::target_revision),
    )?;
    // Without etcd's trailer nothing vouches for the db: refused before anything is written.
    if snapshot.trailer().is_none() && !request.skip_hash_check {
        return Err(RestoreError::NoTrailer {
            name: name.to_string(),
        });
    }
    // A release that reads the .snap file, asked to go without it: refused before anything
    // is written (the staging of the db would make the data dir's parents and copy the db).
    job.v2_snapshot_early()?;
    let damaged = match job.already_done()? {
        Done::Whole(result) => {
            return Ok(job.result(result, replay.as_deref(), job.leftovers()?));
        }
        Done::Damaged(problem) => problem,
    };
    let to_move = job.dirs_to_move(damaged.is_some())?;
    if request.dry_run {
        return job.dry_run(replay);
    }
    let leftovers_removed = job.leftovers()?;
    let moves = aside_names(&to_move)?;
    let Staged {
        data,
        wal,
        revision,
        db_size,
        trailer,
        db_sha256,
    } = job.stage(replay.as_deref_mut())?;
    job.place(data, wal, &moves)?;
    let written = Written {
        revision,
        db_size,
        trailer,
        db_sha256,
        changed: true,
        moved_aside: moves.into_iter().map(|(_, aside)| aside).collect(),
    };
    Ok(job.result(written, replay.as_deref(), leftovers_removed))
}

/// A checked request and where it writes.
struct Job<'a> {
    name: &'a str,
    snapshot: &'a SnapshotFile,
    request: &'a RestoreRequest,
    members: Vec<RestoredMember>,
    me: usize,
    cluster: u64,
    owner: Option<(u32, Option<u32>)>,
    targets: Targets,
    /// A point-in-time restore's target, as the request asks it.
    to_revision: Option<i64>,
}

/// What a restore found or wrote, for its result.
struct Written {
    revision: i64,
    db_size: u64,
    trailer: TrailerCheck,
    db_sha256: String,
    changed: bool,
    moved_aside: Vec<PathBuf>,
}

/// What the marker in the data dir says of this very restore.
enum Done {
    /// Done, and still whole on disk.
    Whole(Written),
    /// Not done, or done and damaged since (what is wrong).
    Damaged(Option<String>),
}

/// What was staged beside the targets.
struct Staged {
    data: Staging,
    wal: Option<Staging>,
    revision: i64,
    db_size: u64,
    trailer: TrailerCheck,
    db_sha256: String,
}

impl<'a> Job<'a> {
    fn new(
        name: &'a str,
        snapshot: &'a SnapshotFile,
        request: &'a RestoreRequest,
        to_revision: Option<i64>,
    ) -> Result<Self, RestoreError> {
        let (members, me, owner) = validate(request)?;
        let member_ids: Vec<u64> = members.iter().map(|m| m.id).collect();
        let cluster = cluster_id(&member_ids);
        let targets = Targets::of(request)?;
        // The owner the data dir has now, kept unless the request says otherwise.
        let owner = owner.or_else(|| inherited_owner(&targets.data_dir));
        Ok(Job {
            name,
            snapshot,
            request,
            members,
            me,
            cluster,
            owner,
            targets,
            to_revision,
        })
    }

    fn me(&self) -> &RestoredMember {
        &self.members[self.me]
    }

    fn read_failed(&self) -> impl Fn(std::io::Error) -> RestoreError + '_ {
        |source| {
            RestoreError::Snapshot(crate::Error::ReadFile {
                path: self.name.to_string(),
                source,
            })
        }
    }

    /// The db's SHA-256: known from streaming it in, or read now.
    fn db_sha256(&self) -> Result<String, RestoreError> {
        match self.snapshot.known_sha256() {
            Some(known) => Ok(known.to_string()),
            None => sha256_of(self.snapshot.db()).map_err(self.read_failed()),
        }
    }

    /// What etcd's trailer says of the db whose SHA-256 is `sha`.
    fn trailer_check(&self, sha: &str) -> Result<TrailerCheck, RestoreError> {
        let skip = self.request.skip_hash_check;
        match self.snapshot.trailer() {
            None if skip => Ok(TrailerCheck::Absent),
            None => Err(RestoreError::NoTrailer {
                name: self.name.to_string(),
            }),
            Some(t) if hex::encode(t) == sha => Ok(TrailerCheck::Verified),
            Some(_) if skip => Ok(TrailerCheck::MismatchIgnored),
            Some(t) => Err(RestoreError::Snapshot(crate::Error::HashMismatch {
                name: self.name.to_string(),
                expected: hex::encode(t),
                actual: sha.to_string(),
            })),
        }
    }

    /// Staging dirs killed restores left beside the targets, removed (a dry run writes
    /// nothing).
    fn leftovers(&self) -> Result<Vec<PathBuf>, RestoreError> {
        if self.request.dry_run {
            return Ok(Vec::new());
        }
        let mut beside = vec![self.targets.data_target.as_path()];
        beside.extend(self.targets.wal_target.as_deref());
        remove_leftovers(&beside)
    }

    /// The very same restore already done, and still whole on disk: reported, nothing
    /// touched. A marker whose db, WAL or snap file is gone is not trusted.
    fn already_done(&self) -> Result<Done, RestoreError> {
        let request = self.request;
        let data_dir = &self.targets.data_dir;
        let Some(marker) = read_marker(data_dir) else {
            return Ok(Done::Damaged(None));
        };
        // A whole-cluster restore does not keep one member's dir that ran on without the rest.
        if request.replace_ran && ran_since_restore(&marker) {
            return Ok(Done::Damaged(None));
        }
        let damaged = on_disk::damage(data_dir, &marker);
        let same_cluster =
            parse_initial_cluster(&marker.initial_cluster, &marker.initial_cluster_token)
                .map(|m| m == self.members)
                .unwrap_or(false);
        let same_request = marker.name == request.name
            && marker.initial_cluster_token == request.initial_cluster_token
            && same_cluster
            && marker.bump_revision == request.bump_revision
            && marker.to_revision == self.to_revision
            && marker.wal_dir == self.targets.wal_final
            && match request.v2_snapshot {
                V2Snapshot::ByRelease => true,
                V2Snapshot::Write => !marker.no_snap_file,
                V2Snapshot::Skip => marker.no_snap_file,
            };
        if !same_request {
            return Ok(Done::Damaged(damaged));
        }
        let db_sha256 = self.db_sha256()?;
        if marker.db_sha256 != db_sha256 {
            return Ok(Done::Damaged(damaged));
        }
        match damaged {
            Some(problem) if !request.move_aside => Err(RestoreError::Incomplete {
                path: data_dir.clone(),
                problem,
            }),
            Some(problem) => Ok(Done::Damaged(Some(problem))),
            None => {
                let trailer = self.trailer_check(&db_sha256)?;
                let db_size = fs::metadata(data_dir.join("member").join("snap").join("db"))
                    .map(|m| m.len())
                    .unwrap_or(0);
                Ok(Done::Whole(Written {
                    revision: marker.revision,
                    db_size,
                    trailer,
                    db_sha256,
                    changed: false,
                    moved_aside: Vec::new(),
                }))
            }
        }
    }

    /// The non-empty targets to move aside (the WAL first: never a WAL without its db
    /// meanwhile); a target that cannot be is refused.
    fn dirs_to_move(&self, damaged: bool) -> Result<Vec<PathBuf>, RestoreError> {
        let request = self.request;
        let Targets {
            data_dir,
            data_target,
            wal_target,
            ..
        } = &self.targets;
        let mut to_move: Vec<PathBuf> = Vec::new();
        let mut targets = vec![data_target.clone()];
        targets.extend(wal_target.clone());
        for target in targets {
            if request.move_aside && non_empty(&target) {
                to_move.push(target);
            } else if target == *data_target
                && let Some(marker) = read_marker(data_dir)
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
        to_move.reverse();
        // A damaged restore is moved aside whatever ran on it (a move deletes nothing).
        if to_move.contains(data_target)
            && !request.force
            && !request.replace_ran
            && !damaged
            && read_marker(data_dir).is_some_and(|marker| ran_since_restore(&marker))
        {
            return Err(RestoreError::RanSinceRestore {
                path: data_dir.clone(),
            });
        }
        Ok(to_move)
    }

    /// Check mode: the source is read and checked (trailer, structure), nothing is written.
    fn dry_run<R: Replay>(
        &self,
        mut replay: Option<&mut R>,
    ) -> Result<RestoreResult<R::Summary>, RestoreError> {
        let db_sha256 = self.db_sha256()?;
        let trailer = self.trailer_check(&db_sha256)?;
        let status = scan(
            self.name,
            self.snapshot.db(),
            None,
            Some(db_sha256.clone()),
            &StatusOptions::default(),
            Scan::CheckOnly,
        )?;
        let to_revision = settle_target(replay.as_deref_mut(), status.revision)?;
        self.writes_snap_file(Release::of(status.storage_version.as_deref()))?;
        let bump = i64::try_from(self.request.bump_revision).unwrap_or(i64::MAX);
        let written = Written {
            revision: status
                .revision
                .max(to_revision.unwrap_or(0))
                .saturating_add(bump),
            db_size: self.snapshot.db_size(),
            trailer,
            db_sha256,
            changed: true,
            moved_aside: Vec::new(),
        };
        Ok(self.result(written, replay.as_deref(), Vec::new()))
    }

    /// The db staged beside the data dir target: a spooled db given its name there, else
    /// copied and hashed on the way; checked page by page (the revision read in the same pass), rewritten; then the snap
    /// file, the WAL and the marker.
    fn stage<R: Replay>(&self, mut replay: Option<&mut R>) -> Result<Staged, RestoreError> {
        let data = Staging::beside(&self.targets.data_target)?;
        let member_stage = self.member_stage(&data);
        let snap_dir = member_stage.join("snap");
        make_dir(&snap_dir)?;
        let db_path = snap_dir.join("db");
        let db_sha256 = copy_db(self.snapshot, &db_path, self.name)?;
        let trailer = self.trailer_check(&db_sha256)?;
        let db_file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&db_path)
            .map_err(io_err(&db_path))?;
        let db_len = self.snapshot.db_size();
        let walked = DbFile::new(db_file.try_clone().map_err(io_err(&db_path))?, db_len);
        // The db's bytes go to disk while its pages are checked (reads from the page cache):
        // the rewrite's own sync then has only its few pages left to write.
        let (status, flushed) = std::thread::scope(|scope| {
            let flushing = scope.spawn(|| db_file.sync_data());
            let status = scan_free_pages(self.name, walked, Some(db_sha256.clone()));
            let flushed = flushing
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the sync thread panicked")));
            (status, flushed)
        });
        let (status, free_pages) = status?;
        flushed.map_err(io_err(&db_path))?;
        let to_revision = settle_target(replay.as_deref_mut(), status.revision)?;
        let release = Release::of(status.storage_version.as_deref());
        // Refused before the db is rewritten.
        self.writes_snap_file(release)?;
        let rewritten = Rewrite {
            name: self.name,
            db_path: &db_path,
            members: Some(&self.members),
            db_revision: status.revision,
            to_revision,
            bump_revision: self.request.bump_revision,
            free_pages,
        }
        .apply(db_file, db_len, replay)?;
        let wal = self.stage_files(
            &data,
            &snap_dir,
            rewritten.revision,
            to_revision,
            &db_sha256,
            release,
        )?;
        Ok(Staged {
            data,
            wal,
            revision: rewritten.revision,
            db_size: rewritten.db_size,
            trailer,
            db_sha256,
        })
    }

    /// The refusal of [`Self::writes_snap_file`] found from the snapshot's own db, before
    /// anything is written: its storage version read from the meta bucket (a few pages). A db
    /// that cannot be read here is checked again, in full, once staged.
    fn v2_snapshot_early(&self) -> Result<(), RestoreError> {
        if self.request.v2_snapshot != V2Snapshot::Skip {
            return Ok(());
        }
        match crate::status::storage_version(self.snapshot.db()) {
            Ok(version) => self
                .writes_snap_file(Release::of(version.as_deref()))
                .map(|_| ()),
            Err(_) => Ok(()),
        }
    }

    /// Whether the raft `.snap` file is written for a snapshot of `release`, as the request
    /// asks; leaving it out for a release that reads it is refused.
    fn writes_snap_file(&self, release: Release) -> Result<bool, RestoreError> {
        self.request
            .v2_snapshot
            .writes(release)
            .map_err(|release| RestoreError::V2SnapshotNeeded {
                name: self.name.to_string(),
                release,
            })
    }

    /// Where `member/` is staged: the staging dir itself for a mount point.
    fn member_stage(&self, data: &Staging) -> PathBuf {
        if self.targets.mount_point {
            data.path.clone()
        } else {
            data.path.join("member")
        }
    }

    /// The snap file, the WAL (in its own staging dir when it lies outside the data dir)
    /// and the marker, beside the staged db; the staged trees chowned and labelled.
    fn stage_files(
        &self,
        data: &Staging,
        snap_dir: &Path,
        revision: i64,
        to_revision: Option<i64>,
        db_sha256: &str,
        release: Release,
    ) -> Result<Option<Staging>, RestoreError> {
        let snap_file = self.writes_snap_file(release)?;
        let commit = self.members.len() as u64;
        let term = 1u64;
        let member_ids: Vec<u64> = self.members.iter().map(|m| m.id).collect();
        let node_id = self.me().id;
        let zeros = release.zeros();
        if snap_file {
            let store =
                v2store::store_json(&self.members, release >= Release::V3_6).map_err(|e| {
                    invalid(opts::INITIAL_CLUSTER)(format!("cannot encode the v2 store: {e}"))
                })?;
            let snap_bytes = snap::file_bytes(&store, &member_ids, commit, term, zeros);
            write_file(
                &snap_dir.join(snap::file_name(term, commit)),
                &snap_bytes,
                None,
            )?;
        }
        sync_dir(snap_dir)?;
        let wal_bytes = wal::first_segment(&self.members, node_id, self.cluster, zeros);
        let member_stage = self.member_stage(data);
        let wal_stage = match &self.targets.wal_target {
            Some(wal) => Some(Staging::beside(wal)?),
            None => None,
        };
        let wal_dir_staged = match (&wal_stage, &self.targets.placement) {
            (Some(stage), _) => stage.path.clone(),
            (None, WalPlacement::Inside(inside)) => data.path.join(inside),
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
        let staged_db = snap_dir.join("db");
        let db_fingerprint = on_disk::db_fingerprint(&staged_db).map_err(io_err(&staged_db))?;
        let request = self.request;
        let marker = RestoreMarker {
            db_sha256: db_sha256.to_string(),
            name: self.me().name.clone(),
            initial_cluster: request.initial_cluster.clone(),
            initial_cluster_token: request.initial_cluster_token.clone(),
            wal_dir: self.targets.wal_final.clone(),
            wal_size,
            wal_files,
            wal_modified_ns,
            bump_revision: request.bump_revision,
            to_revision,
            member_id: format!("{node_id:x}"),
            cluster_id: format!("{:x}", self.cluster),
            revision,
            restored_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            db_fingerprint: Some(db_fingerprint),
            no_snap_file: !snap_file,
        };
        let marker_json = serde_json::to_vec_pretty(&marker).map_err(|e| {
            invalid(opts::DATA_DIR)(format!("cannot encode the restore marker: {e}"))
        })?;
        write_file(&member_stage.join(MARKER_FILE), &marker_json, None)?;
        sync_dir(&member_stage)?;
        if let Some((uid, gid)) = self.owner {
            chown_tree(&data.path, uid, gid)?;
            if let Some(stage) = &wal_stage {
                chown_tree(&stage.path, uid, gid)?;
            }
        }
        // The SELinux label etcd's data dir would get from its parent, where SELinux is on.
        selinux::label_like_existing(&data.path, &self.targets.data_target)?;
        if let (Some(stage), Some(target)) = (&wal_stage, &self.targets.wal_target) {
            selinux::label_like_existing(&stage.path, target)?;
        }
        Ok(wal_stage)
    }

    /// Moves the old dirs aside and renames the staged ones into place: the db before the
    /// WAL (etcd on a WAL without its db starts an empty member, on a db without a WAL it
    /// starts with the data); a WAL inside the data dir comes with it. A WAL that cannot be
    /// placed puts the old state back.
    fn place(
        &self,
        data: Staging,
        wal: Option<Staging>,
        moves: &[(PathBuf, PathBuf)],
    ) -> Result<(), RestoreError> {
        for (dir, aside) in moves {
            fs::rename(dir, aside).map_err(io_err(dir))?;
        }
        let Targets {
            mount_point,
            data_dir,
            data_target,
            wal_target,
            ..
        } = &self.targets;
        data.commit(data_target)?;
        if *mount_point {
            // etcd 3.5 refuses a data dir others can read; a fresh filesystem's root often is.
            fs::set_permissions(data_dir, fs::Permissions::from_mode(0o700))
                .map_err(io_err(data_dir))?;
        }
        if let (Some(stage), Some(target)) = (wal, wal_target)
            && let Err(e) = stage.commit(target)
        {
            // Put the old state back: the new data dir out (it is ours), the old dirs in.
            if let Ok(undo) = Staging::beside(data_target) {
                let _ = fs::remove_dir(&undo.path);
                let _ = fs::rename(data_target, &undo.path);
            }
            for (dir, aside) in moves.iter().rev() {
                let _ = fs::rename(aside, dir);
            }
            return Err(e);
        }
        Ok(())
    }

    /// The result of this restore.
    fn result<R: Replay>(
        &self,
        written: Written,
        replay: Option<&R>,
        leftovers_removed: Vec<PathBuf>,
    ) -> RestoreResult<R::Summary> {
        let me = self.me();
        RestoreResult {
            wal_dir: self.targets.wal_final.clone(),
            data_dir: self.request.data_dir.clone(),
            name: me.name.clone(),
            member_id: format!("{:x}", me.id),
            cluster_id: format!("{:x}", self.cluster),
            members: self.members.clone(),
            revision: written.revision,
            consistent_index: self.members.len() as u64,
            db_size: written.db_size,
            trailer: written.trailer,
            db_sha256: written.db_sha256,
            changed: written.changed,
            moved_aside: written.moved_aside,
            point_in_time: replay.map(Replay::summary),
            leftovers_removed,
        }
    }
}

/// `DIR.bak-<UTC time>` for each dir to move aside; a name already taken (two restores in one
/// second) gets a counter: never overwrite.
fn aside_names(to_move: &[PathBuf]) -> Result<Vec<(PathBuf, PathBuf)>, RestoreError> {
    let stamp = aside_stamp();
    to_move
        .iter()
        .map(|dir| Ok((dir.clone(), free_aside_path(dir, &stamp)?)))
        .collect()
}

/// The revision a point-in-time restore stops at, once the snapshot's own revision is known:
/// a point before what the snapshot holds cannot be reached from it (refused; a planner
/// tries an earlier snapshot first, so this is a last guard).
pub(super) fn settle_target<R: Replay>(
    replay: Option<&mut R>,
    db_revision: i64,
) -> Result<Option<i64>, RestoreError> {
    let Some(replay) = replay else {
        return Ok(None);
    };
    let target = replay.target_revision();
    if target < db_revision {
        return Err(invalid(replay.target_option())(format!(
            "the full backup {} already holds revision {db_revision}, after the target {target}; no earlier chain reaches the target",
            replay.base_name()
        )));
    }
    Ok(Some(target))
}
