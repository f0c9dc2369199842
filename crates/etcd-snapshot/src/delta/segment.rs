//! Building one delta segment in memory (compressed as it grows, so its memory is bounded by
//! the cut size) and publishing it: the object first, then its manifest, so a segment is
//! listed only when complete. A publication that fails can be tried again with the same bytes
//! under the same name.

use std::io::Write;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use etcd_core::MemberId;
use etcd_store::Store;
use sha2::{Digest, Sha256};

use super::format::{DeltaRecord, SegmentEncoder};
use super::manifest::{
    DELTA_FORMAT_VERSION, DELTA_FORMAT_VERSION_WITHOUT_LEASES, DELTA_KIND, DeltaManifest,
    delta_object_name,
};
use crate::crypt::{Encryption, Recipients, encryptor};
use crate::error::{Result, SnapshotError};
use crate::manifest::Manifest;

/// zstd level of delta segments: small and quick, they are written continuously.
const SEGMENT_ZSTD_LEVEL: i32 = 3;

fn codec(operation: &'static str) -> impl Fn(std::io::Error) -> SnapshotError {
    move |e| SnapshotError::Codec {
        operation,
        reason: e.to_string(),
    }
}

/// Where a chain stands: what the next segment continues from.
#[derive(Debug, Clone)]
pub struct ChainPosition {
    /// The full backup's object name.
    pub base: String,
    /// The latest stamp of the chain so far (the full backup's `created_at`, each published
    /// segment's `from_time` and `to_time`).
    pub highest_time: DateTime<Utc>,
    /// The full backup's revision.
    pub base_revision: i64,
    /// Cluster ID.
    pub cluster_id: MemberId,
    /// The next segment's sequence number.
    pub next_sequence: u64,
    /// Every change up to this revision is in a published segment (or the full backup).
    pub covered_revision: i64,
}

impl ChainPosition {
    /// The start of a chain continuing `full`.
    pub fn after_full(full: &Manifest) -> Self {
        ChainPosition {
            base: full.object.clone(),
            // What the full backup carries of the chains before it (a clock step's evidence).
            highest_time: crate::manifest::CompactedFrom::highest_of(full, []).time,
            base_revision: full.revision,
            cluster_id: full.cluster_id,
            next_sequence: 1,
            covered_revision: full.revision,
        }
    }
}

/// The largest record a segment takes (a change of etcd is at most its request size limit,
/// 1.5 MiB by default); readers refuse larger ones.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// One segment being filled.
pub struct SegmentBuilder {
    encoder: SegmentEncoder,
    /// `None` once sealed.
    zstd: Option<zstd::stream::write::Encoder<'static, Vec<u8>>>,
    /// The stored bytes (compressed, encrypted when asked), once sealed.
    sealed: Option<Vec<u8>>,
    scratch: Vec<u8>,
    raw_bytes: u64,
    changes: u64,
    /// Whether a leases record is in it (it then needs a reader of format version 2).
    lease_sets: bool,
    after_revision: i64,
    to_revision: i64,
    from_time: DateTime<Utc>,
    to_time: DateTime<Utc>,
}

impl SegmentBuilder {
    /// A new segment holding the changes after `after_revision`, opened at `now`.
    pub fn new(after_revision: i64, now: DateTime<Utc>) -> Result<Self> {
        let mut zstd = zstd::stream::write::Encoder::new(Vec::new(), SEGMENT_ZSTD_LEVEL)
            .map_err(codec("compress"))?;
        zstd.write_all(SegmentEncoder::header())
            .map_err(codec("compress"))?;
        Ok(SegmentBuilder {
            encoder: SegmentEncoder::default(),
            zstd: Some(zstd),
            sealed: None,
            scratch: Vec::new(),
            raw_bytes: 0,
            changes: 0,
            lease_sets: false,
            after_revision,
            to_revision: after_revision,
            from_time: now,
            to_time: now,
        })
    }

    /// Adds a record. A change raises `to_revision` to its revision; a mark raises it to the
    /// mark's revision and sets `to_time`; a leases record (pushed only once every change up to
    /// its revision was received) raises it to its revision.
    pub fn push(&mut self, record: &DeltaRecord) -> Result<()> {
        let Some(zstd) = self.zstd.as_mut() else {
            return Err(SnapshotError::Codec {
                operation: "compress",
                reason: "a record was added to a sealed segment".into(),
            });
        };
        self.scratch.clear();
        self.encoder.record(record, &mut self.scratch);
        if self.scratch.len() > MAX_RECORD_BYTES {
            return Err(SnapshotError::Codec {
                operation: "compress",
                reason: format!(
                    "a change of {} bytes is larger than a segment record may be ({MAX_RECORD_BYTES})",
                    self.scratch.len()
                ),
            });
        }
        zstd.write_all(&self.scratch).map_err(codec("compress"))?;
        self.raw_bytes += self.scratch.len() as u64;
        match record {
            DeltaRecord::Change { .. } => {
                self.changes += 1;
                if let Some(revision) = record.revision() {
                    self.to_revision = self.to_revision.max(revision);
                }
            }
            DeltaRecord::Mark { revision, unix_ms } => {
                self.to_revision = self.to_revision.max(*revision);
                if let Some(at) = DateTime::<Utc>::from_timestamp_millis(*unix_ms) {
                    self.to_time = self.to_time.max(at);
                }
            }
            DeltaRecord::Leases { revision, .. } => {
                self.lease_sets = true;
                self.to_revision = self.to_revision.max(*revision);
            }
            DeltaRecord::Lease { .. } => {}
        }
        Ok(())
    }

    /// Uncompressed bytes so far (what the size cut compares).
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
    }

    /// Changes so far.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The last revision covered so far.
    pub fn to_revision(&self) -> i64 {
        self.to_revision
    }

    /// Ends the segment: the end record, the rest compressed, encrypted when asked. Nothing
    /// can be added after; sealing again does nothing.
    fn seal(&mut self, recipients: &Recipients) -> Result<&[u8]> {
        if let Some(mut zstd) = self.zstd.take() {
            self.scratch.clear();
            self.encoder.end(&mut self.scratch);
            zstd.write_all(&self.scratch).map_err(codec("compress"))?;
            let compressed = zstd.finish().map_err(codec("compress"))?;
            let stored = if recipients.is_empty() {
                compressed
            } else {
                let mut writer = encryptor(recipients, Vec::new())?;
                writer.write_all(&compressed).map_err(codec("encrypt"))?;
                writer.finish().map_err(codec("encrypt"))?
            };
            self.sealed = Some(stored);
        }
        Ok(self.sealed.as_deref().unwrap_or_default())
    }

    /// Seals the segment, uploads the object and then its manifest (with `lock`, each locked
    /// until now plus its period once written), and moves `chain` on past it. When it fails,
    /// nothing is listed and it can be called again (same bytes, same name).
    pub async fn publish(
        &mut self,
        store: &Store,
        chain: &mut ChainPosition,
        source: &SegmentSource,
        recipients: &Recipients,
        lock: Option<&crate::object_lock::LockRequest>,
    ) -> Result<DeltaManifest> {
        let stored = self.seal(recipients)?.to_vec();
        let object = delta_object_name(
            &chain.base,
            chain.next_sequence,
            self.after_revision,
            self.to_revision,
            !recipients.is_empty(),
        );
        let object_sha256 = hex::encode(Sha256::digest(&stored));
        let object_size = stored.len() as u64;
        store.put_small(&object, Bytes::from(stored)).await?;
        let object_lock = lock.map(|lock| lock.until(Utc::now()));
        if let Some(lock) = &object_lock {
            store.lock(&object, lock).await?;
        }
        let manifest = DeltaManifest {
            // Readable by older etcdops unless it holds a leases record.
            format_version: if self.lease_sets {
                DELTA_FORMAT_VERSION
            } else {
                DELTA_FORMAT_VERSION_WITHOUT_LEASES
            },
            kind: DELTA_KIND.into(),
            tool: "etcdops".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            cluster_id: chain.cluster_id,
            member_id: source.member_id,
            endpoint: source.endpoint.clone(),
            base: chain.base.clone(),
            base_revision: chain.base_revision,
            sequence: chain.next_sequence,
            after_revision: self.after_revision,
            to_revision: self.to_revision,
            from_time: self.from_time,
            to_time: self.to_time,
            changes: self.changes,
            object: object.clone(),
            object_sha256,
            object_size,
            completed_at: Utc::now(),
            encryption: (!recipients.is_empty()).then(|| Encryption::age(recipients)),
            object_lock,
        };
        let manifest_name = Manifest::name_for(&object);
        store
            .put_small(&manifest_name, Bytes::from(manifest.to_json()))
            .await?;
        if let Some(lock) = &object_lock {
            store.lock(&manifest_name, lock).await?;
        }
        chain.next_sequence += 1;
        chain.covered_revision = self.to_revision;
        chain.highest_time = chain.highest_time.max(self.from_time).max(self.to_time);
        Ok(manifest)
    }
}

/// The member a segment's changes were watched on.
#[derive(Debug, Clone)]
pub struct SegmentSource {
    /// Its ID.
    pub member_id: MemberId,
    /// The endpoint watched.
    pub endpoint: String,
}
