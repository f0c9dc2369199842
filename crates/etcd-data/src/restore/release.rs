//! Which etcd release a restore writes for, and what of its files that release reads.
//!
//! The snapshot's db names its release: its storage version (meta bucket `storageVersion`,
//! written from etcd 3.6 on; none: 3.5 or older). A restore writes what that release's own
//! `etcdutl snapshot restore` writes, byte for byte where the bytes differ between releases
//! (raftpb's zero fields, the v2 store's stats), and the raft `.snap` file only where a
//! release might read it (see [`V2Snapshot`]).

use super::pb::Zeros;

/// The release a snapshot's db was written by (the storage version's major.minor; `(3, 5)`
/// for a db without one: 3.5 or older).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Release(u64, u64);

impl Release {
    /// etcd 3.6: the first release with a storage version.
    pub(crate) const V3_6: Release = Release(3, 6);
    /// etcd 3.7: boots from the WAL's snapshot record, never reads a `.snap` file.
    pub(crate) const V3_7: Release = Release(3, 7);
    /// etcd 3.8: neither writes nor reads `.snap` files (etcd's main branch since
    /// 5d1a827c1, "Stop generating v2 snapshot files, nor load v2 snapshot files").
    pub(crate) const V3_8: Release = Release(3, 8);

    /// The release whose storage version is `storage_version` (`3.7.0`).
    pub(crate) fn of(storage_version: Option<&str>) -> Release {
        let mut parts = storage_version
            .unwrap_or_default()
            .split('.')
            .map(|p| p.parse::<u64>().ok());
        match (parts.next().flatten(), parts.next().flatten()) {
            (Some(major), Some(minor)) => Release(major, minor),
            _ => Release(3, 5),
        }
    }

    /// How this release's raftpb writes zero fields.
    pub(crate) fn zeros(self) -> Zeros {
        if self >= Release::V3_7 {
            Zeros::Omitted
        } else {
            Zeros::Written
        }
    }

    /// `major.minor`, for messages.
    pub(crate) fn name(self) -> String {
        format!("{}.{}", self.0, self.1)
    }
}

/// Whether a restore writes the raft `.snap` file (the v2 store holding the members) beside
/// the db and the WAL.
///
/// etcd 3.4 and 3.5 read it on boot (`NewServer`: `Snapshotter.LoadNewestAvailable`, then
/// `v2store.Recovery`) and take the membership from it (`RaftCluster.Recover`:
/// `membersFromStore`); 3.6 still loads it (`bootstrap.go` `recoverSnapshot`), with the
/// membership from the db. 3.7 builds its raft snapshot from the WAL's last snapshot record
/// (`recoverSnapshot`: `wal.ValidSnapshotEntries`) and never opens a `.snap` file, though
/// its etcdutl still writes one; 3.8 neither writes nor reads it.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum V2Snapshot {
    /// As the snapshot's own release's etcdutl does: written for every release before 3.8.
    #[default]
    ByRelease,
    /// Written, whatever the release.
    Write,
    /// Left out: only for a snapshot of etcd 3.7 or later (an older release reads the file
    /// on boot; refused for its snapshots).
    Skip,
}

impl V2Snapshot {
    /// Whether the `.snap` file is written for a snapshot of `release`; `Err` with the
    /// release's name when leaving it out is refused.
    pub(crate) fn writes(self, release: Release) -> Result<bool, String> {
        match self {
            V2Snapshot::ByRelease => Ok(release < Release::V3_8),
            V2Snapshot::Write => Ok(true),
            V2Snapshot::Skip if release >= Release::V3_7 => Ok(false),
            V2Snapshot::Skip => Err(release.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_come_from_the_storage_version_and_order_by_number() {
        assert_eq!(Release::of(Some("3.7.0")), Release::V3_7);
        assert_eq!(Release::of(Some("3.10.1")), Release(3, 10));
        assert!(Release::of(Some("3.10.1")) > Release::V3_8);
        assert_eq!(Release::of(None), Release(3, 5));
        assert_eq!(Release::of(Some("junk")), Release(3, 5));
        assert!(Release::of(Some("3.6.0")) < Release::V3_7);
        assert_eq!(Release::of(Some("3.6.0")).zeros(), Zeros::Written);
        assert_eq!(Release::V3_7.zeros(), Zeros::Omitted);
    }

    #[test]
    fn the_snap_file_is_left_out_only_for_releases_that_never_read_it() {
        let (v35, v36) = (Release::of(None), Release::V3_6);
        for release in [v35, v36, Release::V3_7] {
            assert_eq!(V2Snapshot::ByRelease.writes(release), Ok(true));
            assert_eq!(V2Snapshot::Write.writes(release), Ok(true));
        }
        assert_eq!(V2Snapshot::ByRelease.writes(Release::V3_8), Ok(false));
        assert_eq!(V2Snapshot::Write.writes(Release::V3_8), Ok(true));
        assert_eq!(V2Snapshot::Skip.writes(Release::V3_7), Ok(false));
        assert_eq!(V2Snapshot::Skip.writes(v36), Err("3.6".to_string()));
        assert_eq!(V2Snapshot::Skip.writes(v35), Err("3.5".to_string()));
    }
}
