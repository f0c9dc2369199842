//! The manifest of a delta segment, and where segments live: beside their full backup, under
//! `<full backup's name without suffix>.deltas/`, so a chain is one prefix of the store.

use chrono::{DateTime, Utc};
use etcd_core::MemberId;
use serde::{Deserialize, Serialize};

use crate::crypt::Encryption;
use crate::error::{Result, SnapshotError};
use crate::manifest::{ENCRYPTED_SUFFIX, MANIFEST_SUFFIX, manifest_json};

/// The newest delta format this build reads and writes: 2 when a segment holds a leases
/// record (older etcdops refuse it, saying to upgrade).
pub const DELTA_FORMAT_VERSION: u32 = 2;

/// The format of a segment without a leases record: what etcdops before 2 read.
pub const DELTA_FORMAT_VERSION_WITHOUT_LEASES: u32 = 1;

/// `kind` of every delta manifest (full backups' manifests have none).
pub const DELTA_KIND: &str = "delta";

/// Suffix of a delta segment object (`.delta.zst`, `.delta.zst.age` when encrypted).
pub const DELTA_SUFFIX: &str = ".delta.zst";

/// Infix between a full backup's stem and its segments.
pub const DELTAS_DIR: &str = ".deltas/";

/// Everything known about one delta segment. Field names are part of the documented schema
/// (`docs/MANIFEST.md`); add fields, never rename them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaManifest {
    /// Schema version ([`DELTA_FORMAT_VERSION`]).
    pub format_version: u32,
    /// Always `delta`.
    pub kind: String,
    /// Tool that wrote it (`etcdops`).
    pub tool: String,
    /// Tool version.
    pub tool_version: String,
    /// Cluster ID (hex).
    pub cluster_id: MemberId,
    /// Member the changes were watched on (hex).
    pub member_id: MemberId,
    /// The endpoint watched.
    pub endpoint: String,
    /// Object name of the full backup this segment continues.
    pub base: String,
    /// That backup's revision (its manifest's `revision`).
    pub base_revision: i64,
    /// Position in the chain, from 1.
    pub sequence: u64,
    /// The segment holds every change after this revision (the previous segment's
    /// `to_revision`, or `base_revision` for the first)...
    pub after_revision: i64,
    /// ...up to and including this one.
    pub to_revision: i64,
    /// When the segment was opened (changes after `after_revision` were being received).
    pub from_time: DateTime<Utc>,
    /// When every change up to `to_revision` had been received.
    pub to_time: DateTime<Utc>,
    /// Number of changes (puts and deletes) in the segment.
    pub changes: u64,
    /// Object name of the segment.
    pub object: String,
    /// SHA-256 of the stored object's bytes, hex.
    pub object_sha256: String,
    /// Size of the stored object in bytes.
    pub object_size: u64,
    /// When the segment was published (manifest written), UTC.
    pub completed_at: DateTime<Utc>,
    /// How the stored object is encrypted, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Encryption>,
    /// The S3 Object Lock retention set on the segment and this manifest (`backup run
    /// --object-lock-mode`): its chain is kept, and not deleted, until the date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_lock: Option<etcd_store::ObjectLock>,
}

impl DeltaManifest {
    /// Serializes as pretty JSON.
    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Parses a delta manifest, refusing newer versions and other kinds.
    pub fn from_json(name: &str, bytes: &[u8]) -> Result<DeltaManifest> {
        let bad = |reason: String| SnapshotError::BadManifest {
            name: name.to_string(),
            reason,
        };
        let value = manifest_json(name, bytes, DELTA_FORMAT_VERSION)?;
        if value.get("kind").and_then(|k| k.as_str()) != Some(DELTA_KIND) {
            return Err(bad("not a delta manifest (no kind: delta)".into()));
        }
        serde_json::from_value(value).map_err(|e| bad(e.to_string()))
    }
}

/// A full backup's object name without its `.db[.zst][.age]` suffix.
pub fn backup_stem(object: &str) -> &str {
    let name = object.strip_suffix(ENCRYPTED_SUFFIX).unwrap_or(object);
    name.strip_suffix(".db.zst")
        .or_else(|| name.strip_suffix(".db"))
        .unwrap_or(name)
}

/// The prefix under which the segments of `base`'s chain live.
pub fn deltas_prefix(base: &str) -> String {
    format!("{}{DELTAS_DIR}", backup_stem(base))
}

/// Object name of segment `sequence` of `base`'s chain:
/// `<stem>.deltas/<sequence, 6 digits>-rev<after + 1>-<to>.delta.zst[.age]`. Names sort by
/// sequence.
pub fn delta_object_name(
    base: &str,
    sequence: u64,
    after_revision: i64,
    to_revision: i64,
    encrypted: bool,
) -> String {
    format!(
        "{}{sequence:06}-rev{}-{to_revision}{DELTA_SUFFIX}{}",
        deltas_prefix(base),
        after_revision + 1,
        if encrypted { ENCRYPTED_SUFFIX } else { "" }
    )
}

/// Whether an object name is a delta segment (with or without its manifest suffix stripped).
pub fn is_delta_object(name: &str) -> bool {
    let name = name.strip_suffix(ENCRYPTED_SUFFIX).unwrap_or(name);
    name.ends_with(DELTA_SUFFIX) && name.contains(DELTAS_DIR)
}

/// Whether a manifest name is a delta segment's manifest.
pub fn is_delta_manifest(name: &str) -> bool {
    name.strip_suffix(MANIFEST_SUFFIX)
        .is_some_and(is_delta_object)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use chrono::TimeZone;

    pub(crate) fn sample(base: &str, sequence: u64, after: i64, to: i64) -> DeltaManifest {
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 1, 0, 0).unwrap();
        DeltaManifest {
            format_version: DELTA_FORMAT_VERSION_WITHOUT_LEASES,
            kind: DELTA_KIND.into(),
            tool: "etcdops".into(),
            tool_version: "0.1.0".into(),
            cluster_id: MemberId(0xabc),
            member_id: MemberId(0xdef),
            endpoint: "http://127.0.0.1:2379".into(),
            base: base.into(),
            base_revision: 10,
            sequence,
            after_revision: after,
            to_revision: to,
            from_time: at,
            to_time: at,
            changes: 3,
            object: delta_object_name(base, sequence, after, to, false),
            object_sha256: "22".repeat(32),
            object_size: 99,
            completed_at: at,
            encryption: None,
            object_lock: None,
        }
    }

    #[test]
    fn segments_live_under_their_full_backup_and_sort_by_sequence() {
        let base = "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst";
        let first = delta_object_name(base, 1, 10, 25, false);
        assert_eq!(
            first,
            "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/000001-rev11-25.delta.zst"
        );
        assert!(first.starts_with(&deltas_prefix(base)));
        assert!(first < delta_object_name(base, 2, 25, 30, false));
        assert!(is_delta_object(&first));
        assert!(is_delta_object(&delta_object_name(base, 1, 10, 25, true)));
        assert!(is_delta_manifest(&format!("{first}{MANIFEST_SUFFIX}")));
        assert!(!is_delta_object(base));
        assert_eq!(
            backup_stem("x/a.db.zst.age"),
            backup_stem("x/a.db"),
            "every suffix is stripped"
        );
    }

    #[test]
    fn delta_manifests_round_trip_and_full_manifests_are_not_deltas() {
        let m = sample("etcd-abc/a.db.zst", 1, 10, 25);
        assert_eq!(DeltaManifest::from_json("m", &m.to_json()).unwrap(), m);
        let full = crate::manifest::tests::sample().to_json();
        let err = DeltaManifest::from_json("m", &full).unwrap_err();
        assert!(err.to_string().contains("not a delta manifest"), "{err}");
    }
}
