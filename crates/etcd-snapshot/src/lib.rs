//! etcd snapshot streams and stored backups: the save pipeline, the manifest type, the backup
//! catalog (list, verify, copy, delete, prune) over `etcd-store`, incremental backups (delta
//! chains) and point-in-time restores. What needs no etcd and no store (snapshot files, their
//! status, the restore into a data dir) is etcd-data's, the db format the `bbolt` crate's;
//! both are re-exported here under the names this crate always had. Snapshots are read page
//! by page from a file (a zstd file or a stored object is first streamed into a temporary
//! file), so memory stays bounded whatever the db's size.
//!
//! ```no_run
//! use etcd_core::ConnectionOptions;
//! use etcd_snapshot::{NoProgress, SaveRequest, list_backups, save_snapshot};
//! use etcd_store::{Store, StoreOptions};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ConnectionOptions::default().or_env()?.build()?;
//! let store = Store::open("s3://backups/etcd", &StoreOptions::from_env())?;
//! let saved = save_snapshot(&config, &store, &SaveRequest::default(), &NoProgress).await?;
//! println!("saved {} at revision {}", saved.manifest.object, saved.manifest.revision);
//! for backup in list_backups(&store).await?.backups {
//!     println!("{} {}", backup.manifest.created_at, backup.object);
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod catalog;
mod consolidate;
mod consolidate_lock;
mod copy;
mod crypt;
mod delta;
mod error;
mod input;
mod layout;
mod manifest;
mod metrics;
mod object_lock;
pub mod opts;
mod progress;
mod prune;
mod restore;
mod retention;
mod run_lock;
mod save;
mod save_file;
mod save_stream;
mod source;
mod status;
mod verify;

/// The bbolt crate, where this crate's modules name it `crate::bbolt`.
pub(crate) use ::bbolt;
/// etcd-data's mvcc key formats, where this crate's modules name them `crate::mvcc`.
pub(crate) use etcd_data::mvcc;

pub use ::bbolt::{
    AppendReport, BoltDb, BoltError, BranchElement, Bucket, DbFile, Entry, LeafElement,
    MetaSummary, Page, PageError, PageSource, append_sorted, check_meta_pages, fnv1a64,
};
pub use catalog::{
    BackupEntry, BrokenManifest, Catalog, DEFAULT_ORPHAN_GRACE, DeleteReport, delete_backup,
    list_backups, object_name, verify_backup,
};
pub use catalog::{ChainReport, ChainSummary, DeltaEntry, SegmentCheck, verify_chain};
pub use consolidate::{
    ConsolidatePreview, ConsolidateRequest, ConsolidateResult, consolidate_chain,
    preview_consolidation,
};
pub use consolidate_lock::{
    COMPACT_LOCK_FILE, COMPACT_LOCK_FORMAT_VERSION, ConsolidateLock, consolidate_lock_name,
};
pub use copy::CopySegment;
pub use copy::{CopyAction, CopyEntry, CopyReport, CopyRequest, copy_backups, copy_saved};
pub use crypt::{AGE_MAGIC, Encryption, Identities, Recipients, is_age, new_identity_file};
pub use delta::{
    ChainPosition, CompactAfter, DEFAULT_SEGMENT_BYTES, FailureReason, METRICS_CONTENT_TYPE,
    Readiness, RunEvent, RunMetrics, RunObserver, RunRequest, RunState, SegmentBuilder,
    SegmentSource, run_backups,
};
pub use delta::{
    ClockStep, DeltaReplay, PitrPlan, PlannedLeases, PointInTime, ReplayChanges, ReplaySummary,
    TimeSeenAgain, lease_entry, plan_candidates, segment_needs_reading,
};
pub use delta::{CopyTarget, MAX_PENDING_CHAINS};
pub use delta::{
    DELTA_FORMAT_VERSION, DELTA_KIND, DELTA_SUFFIX, DELTAS_DIR, DeltaManifest, DeltaRecord,
    KeyValueFields, SEGMENT_MAGIC, SegmentEncoder, SegmentError, SegmentReader, backup_stem,
    delta_object_name, deltas_prefix, is_delta_manifest, is_delta_object, key_value_lease,
    revision_key,
};
pub use delta::{MAX_SEGMENT_BYTES, fetch_delta_segment, fetch_delta_segment_at};
pub use error::{Result, SnapshotError};
/// etcd-data's error (snapshot files, their status, identities), as [`SnapshotError::Data`]
/// and [`RestoreError::Snapshot`] hold it.
pub use etcd_data::Error as DataError;
/// etcdutl's offline tools (etcd-data's): `defrag --data-dir` and `hashkv`.
pub use etcd_data::offline::{
    DefragRequest, DefragResult, HashKv, HashKvRequest, data_dir_db, defrag_data_dir, hash_kv,
    hash_kv_data_dir, refuse_locked_db,
};
/// etcdutl's defaults for a restore's absent flags (etcd-data's).
pub use etcd_data::restore_defaults;
pub use input::{
    SnapshotFile, open_snapshot, open_snapshot_file, open_snapshot_file_decrypting,
    open_snapshot_object, open_snapshot_object_decrypting, recorded_manifest,
};
pub use layout::{
    LayoutKind, LayoutName, classify as classify_name, cluster_folder_id, cluster_of,
    split_backup_url,
};
pub use manifest::{
    CompactedFrom, Compression, ENCRYPTED_SUFFIX, MANIFEST_FORMAT_VERSION, MANIFEST_SUFFIX,
    Manifest, backup_object_name,
};
pub use metrics::write_save_metrics;
pub use mvcc::{REVISION_KEY_LEN, key_value_fields, parse_revision_key};
pub use object_lock::LockRequest;
pub use progress::{NoProgress, Progress};
pub use prune::{
    FUTURE_TOLERANCE, HeldBackup, PruneEntry, PruneReport, PruneRequest, prune_backups, prune_store,
};
pub use restore::{
    MARKER_FILE, PointInTimeSource, RestoreError, RestoreGuard, RestoreMarker, RestoreRequest,
    RestoreResult, RestoreSource, RestoredMember, Unguarded, V2Snapshot, cluster_id, member_id,
    open_chain_point, open_point_in_time, open_restore_source, parse_initial_cluster, read_marker,
    restore_point_in_time, restore_snapshot, restore_spool_dir, restore_to_point,
    validate_restore_request, wal_usage,
};
pub use retention::{RetentionDecision, RetentionItem, RetentionPolicy, apply_retention};
pub use run_lock::{RUN_LOCK_FILE, RUN_LOCK_FORMAT_VERSION, RunLock, is_run_lock, run_lock_name};
pub use save::{DEFAULT_ZSTD_LEVEL, SaveRequest, SaveResult, save_snapshot};
pub use save_file::{SaveFileRequest, SaveFileResult, part_path, save_snapshot_file};
pub use source::{SnapshotSource, choose_source};
pub use status::{
    BucketCount, DbMember, SnapshotStatus, StatusOptions, TrailerCheck, snapshot_status,
    split_trailer,
};
pub use verify::{VerifyExpectation, VerifyReport, verify_object};
