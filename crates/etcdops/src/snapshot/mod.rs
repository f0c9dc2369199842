//! The snapshot and backup workflows both front-ends run, one function each: [`save`] (save,
//! metrics file, OpenShift pair, retention) and its check-mode [`preview_save`], [`restore`]
//! from any source (file, stored object, a member's data dir, a point in time) with the
//! OpenShift operator guard inside, [`verify`] with the chain, [`status`] of a file or a stored
//! object, [`list`], [`delete`], [`prune`], [`copy`], [`consolidate`] (a chain into one full backup: the CLI's `snapshot compact`), [`copy_for_restore`] (a local copy of what one restore reads) and [`backup_run`]. Requests derive
//! `Deserialize`, so the shim reads a module's options straight into them; results are serde.
//!
//! The library's own types these workflows take and return (reports, events, errors, the
//! catalog) are re-exported here; the library crate itself is not.

mod against;
mod catalog;
mod consolidate;
mod drill;
mod local_copy;
mod offline;
mod restore;
mod run;
mod save;
mod settings;
mod status;
mod verify;

pub use against::{AgainstCluster, MemberHash, MemberOutcome, Verdict, verify_against_cluster};
pub use catalog::{
    CopyRequest, ListRequest, ListWarning, Listed, PruneRequest, copy, delete, list, prune,
};
pub use consolidate::{ConsolidateRequest, Consolidated, consolidate, preview_consolidate};
pub use drill::{DrillSettings, Drilled, RestoreDrill, drill};
/// The snapshot options errors name (`chain`, the retention rules).
pub use etcd_snapshot::opts;
/// etcdutl's defaults for the restore flags not given (`--name`, `--initial-cluster`, ...):
/// the one place they are written, for every front-end.
pub use etcd_snapshot::restore_defaults;
pub use etcd_snapshot::{SaveFileRequest, SaveFileResult};
pub use local_copy::{LocalCopy, LocalCopyRequest, copy_for_restore};
pub use offline::{
    DefragRequest, DefragResult, HashKv, HashKvFileRequest, HashKvRequest, HashKvResult,
    defrag_data_dir, hash_kv,
};
pub use restore::{Previous, RestoreRequest, RestoreWarning, Restored, V2Snapshot, restore};
pub use run::{BackupRunRequest, backup_run, event_line};
pub use save::{
    CopyRetention, Retention, SavePreview, SaveRequest, Saved, is_file_destination, preview_save,
    save, save_file,
};
pub use settings::{IdentitySettings, StoreSettings};

pub(crate) use etcd_common::options::SNAPSHOT;
pub use status::{StatusRequest, StatusResult, status};
pub use verify::{Verified, VerifyRequest, verify};

/// The snapshot library's own types that the workflows return or take.
pub use etcd_snapshot::{
    Catalog, ChainReport, ChainSummary, Compression, ConsolidatePreview, ConsolidateResult,
    CopyAction, CopyReport, DEFAULT_SEGMENT_BYTES, DEFAULT_ZSTD_LEVEL, Identities, NoProgress,
    Progress, PruneReport, RestoreError, RunEvent, RunObserver, SnapshotError, SnapshotStatus,
    TrailerCheck, VerifyReport, new_identity_file,
};
