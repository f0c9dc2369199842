//! Incremental backups: delta segments of watched changes that continue a full backup (a
//! chain), published one by one beside it, and read back for a point-in-time restore.

mod chain;
mod compact_after;
mod copy_to;
mod events;
mod format;
mod history;
mod lease_looks;
mod lock;
mod manifest;
mod metrics;
mod metrics_server;
mod plan;
mod read;
mod replay;
mod resume;
mod run;
mod runner;
mod segment;
#[cfg(test)]
pub(crate) mod test_fixtures;
mod timeline;
mod watch_lag;

pub use compact_after::CompactAfter;
pub use copy_to::{CopyTarget, MAX_PENDING_CHAINS};
pub use format::{
    DeltaRecord, KeyValueFields, SEGMENT_MAGIC, SegmentEncoder, SegmentError, SegmentReader,
    key_value_lease, revision_key,
};
pub(crate) use lock::{host_name, process_gone, token};
pub use manifest::{
    DELTA_FORMAT_VERSION, DELTA_KIND, DELTA_SUFFIX, DELTAS_DIR, DeltaManifest, backup_stem,
    delta_object_name, deltas_prefix, is_delta_manifest, is_delta_object,
};
pub use metrics::{METRICS_CONTENT_TYPE, Readiness, RunMetrics};
pub use plan::{PitrPlan, plan_candidates};
#[cfg(test)]
pub(crate) use read::tests::publish_segment;
pub use read::{MAX_SEGMENT_BYTES, fetch_delta_segment, fetch_delta_segment_at};
pub(crate) use read::{decode_segment, fetch_stored};
pub use replay::{
    DeltaReplay, PlannedLeases, PointInTime, ReplayChanges, ReplaySummary, lease_entry,
    segment_needs_reading,
};
pub use run::{
    DEFAULT_SEGMENT_BYTES, FailureReason, RunEvent, RunObserver, RunRequest, RunState, run_backups,
};
pub use segment::{ChainPosition, SegmentBuilder, SegmentSource};
pub(crate) use timeline::Timeline;
pub use timeline::{ClockStep, TimeSeenAgain};
