//! `snapshot status`, natively: etcd-data's, with this crate's errors (see
//! [`etcd_data::status`]).

use crate::error::Result;
use crate::input::SnapshotFile;

pub use etcd_data::{
    BucketCount, DbMember, SnapshotStatus, StatusOptions, TrailerCheck, split_trailer,
};

/// The status of the snapshot `bytes` held in memory (decompressed, trailer optional); `name`
/// is for errors. [`SnapshotFile::status`] reads a file without holding it in memory.
pub fn snapshot_status(
    name: &str,
    bytes: &[u8],
    options: &StatusOptions,
) -> Result<SnapshotStatus> {
    Ok(etcd_data::snapshot_status(name, bytes, options)?)
}

impl SnapshotFile {
    /// The status of this snapshot, read page by page: memory stays bounded whatever the
    /// db's size. `name` is for errors.
    pub fn status(&self, name: &str, options: &StatusOptions) -> Result<SnapshotStatus> {
        Ok(etcd_data::SnapshotFile::status(self, name, options)?)
    }
}
