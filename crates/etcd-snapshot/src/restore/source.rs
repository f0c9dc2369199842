//! Where a restore reads from, opened the same way for every front-end.

use std::path::Path;

use etcd_data::restore::opts;
use etcd_store::{Location, Store, StoreOptions};

use super::{
    RestoreError, RestoreGuard, RestoreRequest, db_revision, restore_spool_dir,
    validate_restore_request,
};
use crate::catalog::object_name;
use crate::crypt::Identities;
use crate::delta::{
    DeltaReplay, PitrPlan, PointInTime, fetch_delta_segment_at, plan_candidates,
    segment_needs_reading,
};
use crate::error::SnapshotError;
use crate::input::{
    SnapshotFile, SpoolOptions, open_snapshot_file_decrypting, open_snapshot_file_with,
    open_snapshot_object_with,
};
use crate::manifest::Manifest;
use crate::verify::{VerifyExpectation, check_opened_backup, check_stored_size};
use etcd_common::InvalidOption;

/// What the manifest of the stored backup `object` promises (nothing without a manifest).
async fn expectation_in_store(
    store: &Store,
    object: &str,
) -> Result<VerifyExpectation, RestoreError> {
    let manifest = Manifest::name_for(object);
    if store
        .head(&manifest)
        .await
        .map_err(SnapshotError::from)?
        .is_none()
    {
        return Ok(VerifyExpectation::default());
    }
    let bytes = store
        .get_small(&manifest)
        .await
        .map_err(SnapshotError::from)?;
    Ok(VerifyExpectation::from_manifest(&Manifest::from_json(
        &manifest, &bytes,
    )?))
}

/// Opens the stored backup `object` and checks it against its manifest, as `verify` does: an
/// object replaced by another valid backup (or damaged) is refused before the restore.
pub(crate) async fn open_checked_object(
    store: &Store,
    object: &str,
    spool: Option<&Path>,
    identities: &Identities,
) -> Result<SnapshotFile, RestoreError> {
    let expect = expectation_in_store(store, object).await?;
    if let Some(info) = store.head(object).await.map_err(SnapshotError::from)? {
        check_stored_size(object, &expect, info.size)?;
    }
    let options = restore_spool_options(spool, Some(&expect));
    let snapshot = open_snapshot_object_with(store, object, spool, identities, options).await?;
    let db_sha256 = snapshot.db_sha256().map_err(|source| {
        SnapshotError::Data(etcd_data::Error::ReadFile {
            path: object.to_string(),
            source,
        })
    })?;
    check_opened_backup(
        object,
        &expect,
        snapshot.stored_size(),
        snapshot.stored_sha256(),
        &db_sha256,
    )?;
    Ok(snapshot)
}

/// How a restore spools a zstd, age or stored snapshot: the db hashed (for etcd's trailer and
/// the manifest), the stored bytes too only when that is the one sum a manifest records (see
/// [`VerifyExpectation::needs_stored_sha256`]); spooled beside the target
/// (`spool`), the file becomes the restored db, so it is written to disk as it comes; no more
/// than the db size the manifest records is unpacked (the ceiling without one).
fn restore_spool_options(spool: Option<&Path>, expect: Option<&VerifyExpectation>) -> SpoolOptions {
    SpoolOptions {
        hash_db: true,
        hash_stored: expect.is_some_and(VerifyExpectation::needs_stored_sha256),
        write_back: spool.is_some(),
        db_size: expect.and_then(|e| e.db_size),
    }
}

/// The manifest beside a local backup file, when there is one (a FIFO or a device there is
/// refused, not waited on; more than [`super::MAX_MANIFEST_BYTES`] is refused).
fn local_manifest(path: &Path) -> Result<Option<(String, Vec<u8>)>, RestoreError> {
    let manifest = Manifest::name_for(&path.display().to_string());
    match etcd_data::read_small_regular(Path::new(&manifest), super::MAX_MANIFEST_BYTES) {
        Ok(bytes) => Ok(Some((manifest, bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SnapshotError::Data(etcd_data::Error::ReadFile {
            path: manifest,
            source,
        })
        .into()),
    }
}

/// Opens a local backup file and checks it against its manifest (`manifest`, read beside it):
/// a zstd or age file is checked by its db's SHA-256, hashed on the way; a plain one is read
/// once for both its SHA-256 and its db's.
fn open_checked_file(
    path: &Path,
    manifest: Option<(String, Vec<u8>)>,
    spool: Option<&Path>,
    identities: &Identities,
) -> Result<SnapshotFile, RestoreError> {
    let expect = match &manifest {
        Some((name, bytes)) => Some(VerifyExpectation::from_manifest(&Manifest::from_json(
            name, bytes,
        )?)),
        None => None,
    };
    if let Some(expect) = &expect {
        let size = std::fs::metadata(path)
            .map_err(|source| {
                SnapshotError::Data(etcd_data::Error::ReadFile {
                    path: path.display().to_string(),
                    source,
                })
            })?
            .len();
        check_stored_size(&path.display().to_string(), expect, size)?;
    }
    let options = restore_spool_options(spool, expect.as_ref());
    let snapshot = open_snapshot_file_with(path, spool, identities, options)?;
    let Some(expect) = expect else {
        return Ok(snapshot);
    };
    let name = path.display().to_string();
    let read_failed = |source| {
        SnapshotError::Data(etcd_data::Error::ReadFile {
            path: name.clone(),
            source,
        })
    };
    let (stored_sha256, db_sha256) = match snapshot.known_sha256() {
        // Spooled: the db was hashed on the way (and the stored bytes, when asked).
        Some(db) => (snapshot.stored_sha256().map(str::to_string), db.to_string()),
        // Read in place: the file is the db and its trailer, both hashed in one read.
        None => {
            let (stored, db) = crate::input::sha256_with_trailer(&snapshot).map_err(read_failed)?;
            (Some(stored), db)
        }
    };
    check_opened_backup(
        &name,
        &expect,
        snapshot.stored_size(),
        stored_sha256.as_deref(),
        &db_sha256,
    )?;
    Ok(snapshot.with_sha256(db_sha256))
}

/// Checks the request; where to spool what is downloaded: beside the target, or (a dry run,
/// which creates nothing there) nowhere named.
fn checked_spool(request: &RestoreRequest) -> Result<Option<std::path::PathBuf>, RestoreError> {
    validate_restore_request(request)?;
    if request.dry_run {
        Ok(None)
    } else {
        Ok(Some(restore_spool_dir(&request.data_dir)?))
    }
}

/// What to restore from.
#[derive(Debug, Clone, Copy)]
pub enum RestoreSource<'a> {
    /// A snapshot file (plain or zstd), or a backup URL `STORE/OBJECT` when it has a scheme.
    Snapshot(&'a str),
    /// A stopped surviving member's data dir: its own `member/snap/db` (the quorum-loss fix).
    DataDir(&'a Path),
}

/// Checks the request, then opens its source: the name to report and the snapshot to pass to
/// [`super::restore_snapshot`]. Bad options are refused before anything is downloaded. A zstd
/// file or a stored object is decompressed beside the target (same filesystem), except in a
/// dry run, which creates nothing there and uses an unnamed temporary file. A member's db has
/// no trailer, so `request.skip_hash_check` is set for it; a member running on that data dir
/// (etcd holds the lock on its db) is refused, and the lock is shared for as long as the
/// snapshot is open. A stored backup (or a local file with its manifest beside it) is checked
/// against its manifest. An age-encrypted snapshot is decrypted with `identities` as it is
/// spooled.
pub async fn open_restore_source(
    request: &mut RestoreRequest,
    source: RestoreSource<'_>,
    store_options: &StoreOptions,
    identities: &Identities,
) -> Result<(String, SnapshotFile), RestoreError> {
    let spool = checked_spool(request)?;
    let spool = spool.as_deref();
    match source {
        RestoreSource::DataDir(dir) => {
            // Only read, never modified.
            let db = dir.join("member").join("snap").join("db");
            let snapshot = open_snapshot_file_decrypting(&db, spool, &Identities::none())?;
            etcd_data::restore::lock_shared(snapshot.db().file(), dir)?;
            request.skip_hash_check = true;
            Ok((db.display().to_string(), snapshot))
        }
        RestoreSource::Snapshot(text) => match Location::parse(text) {
            Location::Object { store, name } => {
                let store = Store::open(&store, store_options).map_err(SnapshotError::from)?;
                let snapshot =
                    open_checked_object(&store, object_name(&name), spool, identities).await?;
                Ok((text.to_string(), snapshot))
            }
            Location::File(path) => {
                let manifest = local_manifest(&path)?;
                let snapshot = open_checked_file(&path, manifest, spool, identities)?;
                Ok((text.to_string(), snapshot))
            }
        },
    }
}

/// What a point-in-time restore reads, opened: the plan, the full backup's snapshot and the
/// segments spooled for replay.
pub struct PointInTimeSource {
    /// The name to report (the full backup's URL).
    pub name: String,
    /// The full backup.
    pub snapshot: SnapshotFile,
    /// The segments to replay.
    pub replay: DeltaReplay,
    /// What was chosen.
    pub plan: PitrPlan,
}

/// Checks the request, plans a restore of the backups in `store_url` to `point`, then opens
/// the full backup and fetches (checking each against its manifest) and spools the segments
/// beside the target, as [`open_restore_source`] does for a single backup. Pass the result to
/// [`super::restore_point_in_time`].
pub async fn open_point_in_time(
    request: &mut RestoreRequest,
    store_url: &str,
    point: PointInTime,
    store_options: &StoreOptions,
    identities: &Identities,
) -> Result<PointInTimeSource, RestoreError> {
    open_planned(request, store_url, None, point, store_options, identities).await
}

/// [`open_point_in_time`] over the chain of one full backup only: `full`, its object name in
/// the store at `store_url` (as the catalog lists it). A point its chain does not reach is
/// refused, even when another chain reaches it: what a drill of that very chain needs.
pub async fn open_chain_point(
    request: &mut RestoreRequest,
    store_url: &str,
    full: &str,
    point: PointInTime,
    store_options: &StoreOptions,
    identities: &Identities,
) -> Result<PointInTimeSource, RestoreError> {
    open_planned(
        request,
        store_url,
        Some(full),
        point,
        store_options,
        identities,
    )
    .await
}

async fn open_planned(
    request: &mut RestoreRequest,
    store_url: &str,
    only: Option<&str>,
    point: PointInTime,
    store_options: &StoreOptions,
    identities: &Identities,
) -> Result<PointInTimeSource, RestoreError> {
    // A backup's own URL names one full backup; a point in time is planned over the store's
    // chains.
    if let Some((store, _)) = crate::layout::split_backup_url(store_url) {
        let reason = format!(
            "'{store_url}' is a backup; a point-in-time restore takes the store that holds it: '{store}'"
        );
        return Err(SnapshotError::from(InvalidOption::input("source", reason)).into());
    }
    let spool = checked_spool(request)?;
    let spool = spool.as_deref();
    let store = Store::open(store_url, store_options).map_err(SnapshotError::from)?;
    // Best first; a full backup that already holds changes past the point gives way to the
    // chain before it (consecutive chains overlap for that).
    let mut last_refusal = None;
    let plans = plan_candidates(&store, point).await?;
    for plan in plans
        .into_iter()
        .filter(|plan| only.is_none_or(|full| plan.full == full))
    {
        let snapshot = open_checked_object(&store, &plan.full, spool, identities).await?;
        let holds = db_revision(&snapshot).map_err(|source| RestoreError::Rewrite {
            name: plan.full.clone(),
            source,
        })?;
        if let PointInTime::Revision(r) = point
            && r < holds
        {
            last_refusal = Some((plan.full.clone(), holds));
            continue;
        }
        let mut replay = DeltaReplay::new(&plan.full, point, plan.full_revision)
            .starting_at(plan.full_created_at, plan.prior_time);
        for (object, manifest) in plan.segments.iter().zip(&plan.segment_manifests) {
            let bytes = if segment_needs_reading(manifest) {
                Some(fetch_delta_segment_at(&store, object, manifest, identities).await?)
            } else {
                None
            };
            replay.add_segment(manifest, object, bytes.as_deref(), spool)?;
        }
        replay.note_later(&plan.later_stamps);
        // What the segments prove, not what their manifests claim.
        replay.check_reach()?;
        if replay.target_revision() < holds {
            last_refusal = Some((plan.full.clone(), holds));
            continue;
        }
        return Ok(PointInTimeSource {
            name: format!("{}/{}", store.url().trim_end_matches('/'), plan.full),
            snapshot,
            replay,
            plan,
        });
    }
    let option = match point {
        PointInTime::Revision(_) => opts::TO_REVISION,
        PointInTime::Time(_) => opts::TO_TIME,
    };
    let (full, holds) = match (last_refusal, only) {
        (Some(refused), _) => refused,
        (None, Some(full)) => {
            return Err(RestoreError::invalid_option(
                option,
                format!("the chain of the full backup {full} does not reach the point"),
            ));
        }
        (None, None) => Default::default(),
    };
    Err(RestoreError::invalid_option(
        option,
        format!(
            "the full backup {full} already holds changes up to revision {holds}, past the point, and no earlier chain reaches it"
        ),
    ))
}

/// A whole point-in-time restore: [`open_point_in_time`], then
/// [`super::restore_point_in_time`]. Returns what was restored and the plan it followed.
/// `guard` is asked first, before the store is read.
pub async fn restore_to_point(
    request: &mut RestoreRequest,
    store_url: &str,
    point: PointInTime,
    store_options: &StoreOptions,
    identities: &Identities,
    guard: &(dyn RestoreGuard + Sync),
) -> Result<(super::RestoreResult, PitrPlan), RestoreError> {
    guard.check_restore().map_err(RestoreError::Refused)?;
    let mut opened =
        open_point_in_time(request, store_url, point, store_options, identities).await?;
    let result = super::restore_point_in_time(
        &opened.name,
        &opened.snapshot,
        request,
        Some(&mut opened.replay),
        guard,
    )?;
    Ok((result, opened.plan))
}
