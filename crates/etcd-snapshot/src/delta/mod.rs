//! Incremental backups: delta segments of watched changes that continue a full backup (a
//! chain), published one by one beside it, and read back for a point-in-time restore.

mod format;
mod manifest;

pub use format::{
    DeltaRecord, KeyValueFields, SEGMENT_MAGIC, SegmentEncoder, SegmentError, SegmentReader,
    key_value_lease, revision_key,
};
pub use manifest::{
    DELTA_FORMAT_VERSION, DELTA_KIND, DELTA_SUFFIX, DELTAS_DIR, DeltaManifest, backup_stem,
    delta_object_name, deltas_prefix, is_delta_manifest, is_delta_object,
};
