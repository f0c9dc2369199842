//! The manifest: a small JSON object beside each backup that says what it is. A backup exists
//! only when its manifest exists, and the manifest is written last.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use etcd_core::MemberId;
use serde::{Deserialize, Serialize};

use crate::crypt::Encryption;
use crate::error::{Result, SnapshotError};

/// The manifest format this build writes. Readers accept this and older versions.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// Suffix of manifest objects: `<object>.manifest.json`.
pub const MANIFEST_SUFFIX: &str = ".manifest.json";

/// Suffix added to the name of an age-encrypted backup object (`.db.zst.age`).
pub const ENCRYPTED_SUFFIX: &str = ".age";

/// How a backup's bytes are compressed: etcd-data's, which reads such files.
pub use etcd_data::Compression;

/// Everything known about one backup. Field names are part of the documented schema
/// (`docs/MANIFEST.md`); add fields, never rename them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Manifest schema version ([`MANIFEST_FORMAT_VERSION`]).
    pub format_version: u32,
    /// Tool that wrote it (`etcdops`).
    pub tool: String,
    /// Tool version.
    pub tool_version: String,
    /// When the snapshot was started, UTC.
    pub created_at: DateTime<Utc>,
    /// When the backup became complete (manifest written), UTC.
    pub completed_at: DateTime<Utc>,
    /// Cluster ID (hex).
    pub cluster_id: MemberId,
    /// Member the snapshot was streamed from (hex).
    pub member_id: MemberId,
    /// Its name.
    pub member_name: String,
    /// The endpoint streamed from.
    pub endpoint: String,
    /// etcd server version of that member.
    pub etcd_version: String,
    /// The store revision when the snapshot started; the snapshot holds at least this.
    pub revision: i64,
    /// Raft term when the snapshot started.
    pub raft_term: u64,
    /// Raft index when the snapshot started.
    pub raft_index: u64,
    /// Size of the db in bytes (without etcd's 32-byte trailer).
    pub db_size: u64,
    /// Bytes of the db in use, as the member reported before the snapshot.
    pub db_size_in_use: u64,
    /// SHA-256 of the db, hex: equal to etcd's own trailer.
    pub db_sha256: String,
    /// Name of the backup object in the store.
    pub object: String,
    /// SHA-256 of the stored object's bytes, hex.
    pub object_sha256: String,
    /// Size of the stored object in bytes.
    pub object_size: u64,
    /// Compression of the stored object.
    pub compression: Compression,
    /// zstd level, when compressed.
    pub compression_level: Option<i32>,
    /// Whether the object was read back and checked before the manifest was written.
    pub verified_after_upload: bool,
    /// User labels (`--label k=v`).
    pub labels: BTreeMap<String, String>,
    /// How the stored object is encrypted (`--encrypt-to`): the recipients' public keys.
    /// Absent for unencrypted backups (and in manifests written before encryption existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Encryption>,
    /// Set when this backup was made by `snapshot compact` from a chain (a full backup and
    /// its delta segments) rather than streamed from a member. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted_from: Option<CompactedFrom>,
    /// Set by `backup run` on a full backup it took while following the chain of an
    /// earlier full backup without a break: one history, whatever the two backups' dates say
    /// (a clock stepped back can date this one before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<Follows>,
    /// The S3 Object Lock retention the save set on the backup object and this manifest
    /// (`--object-lock-mode`, `--object-lock-retain`): prune keeps the backup, and delete
    /// refuses it, until the date. Absent when the save set none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_lock: Option<etcd_store::ObjectLock>,
}

/// The chain `backup run` was following when it took a full backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Follows {
    /// Object name of that chain's full backup.
    pub full_backup: String,
    /// The revision that chain had published up to when this backup started: this backup's
    /// own revision is at least that, or the cluster went back meanwhile and the link does
    /// not count.
    pub covered_revision: i64,
    /// The latest time that chain's stamps had shown by then: a time before it was passed
    /// before this backup was taken (its first showing is in that chain, even once the
    /// chain is pruned).
    pub highest_time: DateTime<Utc>,
}

/// Where a compacted backup came from: the chain whose segments were replayed into its full
/// backup's db. The segments are those of sequence 1 to `last_sequence` under the full
/// backup's `.deltas/` prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactedFrom {
    /// Object name of the chain's full backup.
    pub full_backup: String,
    /// That backup's manifest revision.
    pub full_revision: i64,
    /// The last segment replayed (segments 1 to this one were).
    pub last_sequence: u64,
    /// The chain's last published revision, which this backup holds (its `revision`).
    pub to_revision: i64,
    /// When every change up to `to_revision` had been received (the last segment's
    /// `to_time`; this backup's `created_at`).
    pub to_time: DateTime<Utc>,
    /// The latest time the chain's stamps showed, when it is after `to_time` (the backup's
    /// clock stepped back inside the chain): a point-in-time restore must know the clock had
    /// passed it, at that revision, after the chain itself is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_stamp: Option<Stamp>,
}

/// A time a chain's stamps showed and the revision stamped with it: every change up to
/// `revision` had been received when the backup's clock showed `time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// The revision.
    pub revision: i64,
    /// The time.
    pub time: DateTime<Utc>,
}

impl CompactedFrom {
    /// The latest stamp of a chain: its full backup's (and what it carries of the chains before
    /// it: a compacted copy's chain, the chain `backup run` followed), then each segment's `from_time` and `to_time`; at equal times the lowest
    /// revision.
    pub fn highest_of<'a>(
        full: &Manifest,
        segments: impl IntoIterator<Item = &'a crate::delta::DeltaManifest>,
    ) -> Stamp {
        let mut highest = Stamp {
            revision: full.revision,
            time: full.created_at,
        };
        let earlier = full
            .compacted_from
            .as_ref()
            .and_then(|from| from.highest_stamp)
            .into_iter()
            .chain(full.follows.as_ref().map(|f| Stamp {
                revision: full.revision,
                time: f.highest_time,
            }));
        let stamps = segments.into_iter().flat_map(|m| {
            [
                Stamp {
                    revision: m.after_revision,
                    time: m.from_time,
                },
                Stamp {
                    revision: m.to_revision,
                    time: m.to_time,
                },
            ]
        });
        for stamp in earlier.chain(stamps) {
            if stamp.time > highest.time
                || (stamp.time == highest.time && stamp.revision < highest.revision)
            {
                highest = stamp;
            }
        }
        highest
    }
}

impl Manifest {
    /// Whether `snapshot compact` made this backup from a chain.
    pub fn is_compacted(&self) -> bool {
        self.compacted_from.is_some()
    }

    /// The manifest object's name for a backup object.
    pub fn name_for(object: &str) -> String {
        format!("{object}{MANIFEST_SUFFIX}")
    }

    /// Serializes as pretty JSON.
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing plain data into a Vec cannot fail.
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Parses a manifest, refusing versions newer than this build understands.
    pub fn from_json(name: &str, bytes: &[u8]) -> Result<Manifest> {
        let value = manifest_json(name, bytes, MANIFEST_FORMAT_VERSION)?;
        serde_json::from_value(value).map_err(|e| SnapshotError::BadManifest {
            name: name.to_string(),
            reason: e.to_string(),
        })
    }
}

/// The JSON of manifest `name`, once its `format_version` is known to be at most `newest`.
pub(crate) fn manifest_json(name: &str, bytes: &[u8], newest: u32) -> Result<serde_json::Value> {
    let bad = |reason: String| SnapshotError::BadManifest {
        name: name.to_string(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    let version = value
        .get("format_version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| bad("no format_version".into()))?;
    if version > u64::from(newest) {
        return Err(bad(format!(
            "format_version {version} is newer than this etcdops understands ({newest}); upgrade etcdops"
        )));
    }
    Ok(value)
}

/// Object name for a new backup:
/// `etcd-<cluster>/<UTC time>-rev<revision>-<unique>.db.zst` (`.db.zst.age` when encrypted).
///
/// Within one cluster's folder names sort by time (the timestamp comes first, fixed width),
/// and each name still says which cluster and revision it holds. `unique` (random, 8 hex
/// digits) keeps two saves started in the same millisecond at the same revision from taking
/// the same name, where the second would silently replace the first.
pub fn backup_object_name(
    cluster_id: MemberId,
    created_at: DateTime<Utc>,
    revision: i64,
    compression: Compression,
    encrypted: bool,
    unique: u32,
) -> String {
    format!(
        "etcd-{cluster_id}/{}-rev{revision}-{unique:08x}{}{}",
        created_at.format("%Y%m%dT%H%M%S%.3fZ"),
        compression.suffix(),
        if encrypted { ENCRYPTED_SUFFIX } else { "" }
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use chrono::TimeZone;

    pub(crate) fn sample() -> Manifest {
        let at = Utc.with_ymd_and_hms(2026, 11, 29, 17, 30, 0).unwrap();
        Manifest {
            format_version: MANIFEST_FORMAT_VERSION,
            tool: "etcdops".into(),
            tool_version: "0.1.0".into(),
            created_at: at,
            completed_at: at,
            cluster_id: MemberId(0xcdf8_1819_4e3a_8c32),
            member_id: MemberId(0x8e9e_05c5_2164_694d),
            member_name: "m0".into(),
            endpoint: "https://10.0.0.1:2379".into(),
            etcd_version: "3.5.1".into(),
            revision: 51,
            raft_term: 2,
            raft_index: 60,
            db_size: 20480,
            db_size_in_use: 16384,
            db_sha256: "00".repeat(32),
            object: "etcd-cdf818194e3a8c32/20261129T173000.000Z-rev51.db.zst".into(),
            object_sha256: "11".repeat(32),
            object_size: 1234,
            compression: Compression::Zstd,
            compression_level: Some(3),
            verified_after_upload: false,
            labels: BTreeMap::from([("env".into(), "prod".into())]),
            encryption: None,
            compacted_from: None,
            follows: None,
            object_lock: None,
        }
    }

    #[test]
    fn manifest_round_trips_with_hex_ids() {
        let m = sample();
        let json = m.to_json();
        let text = String::from_utf8(json.clone()).unwrap();
        assert!(
            text.contains("\"cluster_id\": \"cdf818194e3a8c32\""),
            "{text}"
        );
        assert!(text.contains("\"compression\": \"zstd\""), "{text}");
        assert_eq!(Manifest::from_json("m", &json).unwrap(), m);
    }

    #[test]
    fn encrypted_manifests_record_public_keys_and_old_manifests_still_parse() {
        let mut m = sample();
        let plain = String::from_utf8(m.to_json()).unwrap();
        assert!(!plain.contains("encryption"), "{plain}");
        // A manifest written before encryption existed has no such field.
        assert_eq!(Manifest::from_json("m", plain.as_bytes()).unwrap(), m);
        m.encryption = Some(Encryption {
            scheme: "age".into(),
            recipients: vec!["age1abc".into(), "age1def".into()],
        });
        let json = m.to_json();
        let text = String::from_utf8(json.clone()).unwrap();
        assert!(text.contains("\"scheme\": \"age\""), "{text}");
        assert!(text.contains("\"age1def\""), "{text}");
        assert_eq!(Manifest::from_json("m", &json).unwrap(), m);
    }

    #[test]
    fn newer_or_broken_manifests_are_refused() {
        let mut value: serde_json::Value = serde_json::from_slice(&sample().to_json()).unwrap();
        value["format_version"] = 99.into();
        let err = Manifest::from_json("m", value.to_string().as_bytes()).unwrap_err();
        assert!(err.to_string().contains("upgrade etcdops"), "{err}");
        assert!(Manifest::from_json("m", b"{").is_err());
        assert!(Manifest::from_json("m", b"{\"format_version\": 1}").is_err());
    }

    #[test]
    fn names_sort_by_time_and_carry_cluster_and_revision() {
        let c = MemberId(0xabc);
        let early = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let late = Utc.with_ymd_and_hms(2026, 11, 2, 3, 4, 5).unwrap();
        let a = backup_object_name(c, early, 99999, Compression::Zstd, false, 0xff);
        let b = backup_object_name(c, late, 1, Compression::None, false, 7);
        assert_eq!(a, "etcd-abc/20260102T030405.000Z-rev99999-000000ff.db.zst");
        assert!(a < b);
        assert!(b.ends_with("-rev1-00000007.db"));
        assert_ne!(
            backup_object_name(c, early, 1, Compression::Zstd, false, 1),
            backup_object_name(c, early, 1, Compression::Zstd, false, 2)
        );
        assert!(
            backup_object_name(c, early, 1, Compression::Zstd, true, 1).ends_with(".db.zst.age")
        );
        assert!(backup_object_name(c, early, 1, Compression::None, true, 1).ends_with(".db.age"));
    }
}
