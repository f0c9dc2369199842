//! The save pipeline: member -> etcd's SHA-256 trailer check -> zstd -> age encryption (with
//! `--encrypt-to`) -> SHA-256 of the stored bytes -> store, in bounded memory, with the
//! manifest written last.
//!
//! Receiving and hashing, compression and encryption, and storing run at the same time, in
//! bounded memory (see `save_stream`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Utc;
use etcd_core::ClusterConfig;
use etcd_store::Store;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::crypt::{Encryption, Identities, Recipients};
use crate::error::{Result, SnapshotError};
use crate::manifest::{Compression, MANIFEST_FORMAT_VERSION, Manifest, backup_object_name};
use crate::progress::Progress;
use crate::prune::PruneRequest;
use crate::retention::RetentionPolicy;
use crate::save_stream::{Streamed, stream_into};
use crate::source::{SnapshotSource, choose_source};
use crate::verify::{VerifyExpectation, verify_object};
use etcd_common::InvalidOption;

/// Length of etcd's SHA-256 trailer.
pub const TRAILER_LEN: usize = 32;

/// etcd's snapshot stream split as it goes into the db and its SHA-256 trailer (the last
/// [`TRAILER_LEN`] bytes), the db hashed on the way, for every save to check the trailer.
#[derive(Default)]
pub(crate) struct TrailerCheck {
    hasher: Sha256,
    db_size: u64,
    /// The last bytes seen: the trailer, once the stream ends.
    tail: Vec<u8>,
}

impl TrailerCheck {
    /// Takes the next bytes of the stream.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > TRAILER_LEN {
            let db_part = self.tail.len() - TRAILER_LEN;
            self.hasher.update(&self.tail[..db_part]);
            self.db_size += db_part as u64;
            self.tail.drain(..db_part);
        }
    }

    /// The db's size and SHA-256 once the stream has ended, or why etcd's trailer does not
    /// vouch for it (too short, or a different hash).
    pub(crate) fn finish(self, endpoint: String) -> Result<(u64, String)> {
        if self.tail.len() < TRAILER_LEN || self.db_size == 0 {
            return Err(SnapshotError::Truncated {
                endpoint,
                size: self.db_size + self.tail.len() as u64,
            });
        }
        let actual = hex::encode(self.hasher.finalize());
        let expected = hex::encode(&self.tail);
        if actual != expected {
            return Err(SnapshotError::TrailerMismatch {
                endpoint,
                expected,
                actual,
                size: self.db_size,
            });
        }
        Ok((self.db_size, actual))
    }
}
/// Default zstd level, chosen from the benchmark (docs/BENCHMARKS.md, #24): level 1 keeps the
/// stream from etcd the bottleneck, and on a 1.45 GiB db it stores within 1% of level 3 (JSON
/// values: 1.9% smaller; base64-of-random values: 0.8% larger) for half the CPU time.
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// What to save and how.
#[derive(Debug, Clone)]
pub struct SaveRequest {
    /// Force this member (`--endpoint`); by default a healthy follower is chosen.
    pub endpoint: Option<String>,
    /// Compression of the stored object.
    pub compression: Compression,
    /// zstd level (1-19).
    pub level: i32,
    /// User labels recorded in the manifest.
    pub labels: BTreeMap<String, String>,
    /// Read the object back and check it before writing the manifest. For an encrypted
    /// backup (no identity at hand) that checks the stored bytes' SHA-256 and size.
    pub verify_after_upload: bool,
    /// Encrypt the stored object with age to these recipients; none: not encrypted.
    pub encrypt_to: Recipients,
    /// The full backup whose chain `backup run` follows, unbroken, while it takes this one
    /// (recorded as the manifest's `follows`).
    pub follows: Option<crate::manifest::Follows>,
    /// Set this S3 Object Lock retention on the backup object and its manifest (recorded in
    /// the manifest as `object_lock`); `None`: no lock.
    pub object_lock: Option<crate::object_lock::LockRequest>,
}

impl Default for SaveRequest {
    fn default() -> Self {
        SaveRequest {
            endpoint: None,
            compression: Compression::Zstd,
            level: DEFAULT_ZSTD_LEVEL,
            labels: BTreeMap::new(),
            verify_after_upload: false,
            encrypt_to: Recipients::none(),
            follows: None,
            object_lock: None,
        }
    }
}

/// The outcome of a successful save.
#[derive(Debug, Clone, Serialize)]
pub struct SaveResult {
    /// The manifest written.
    pub manifest: Manifest,
    /// Name of the manifest object.
    pub manifest_name: String,
    /// The store's URL.
    pub store: String,
    /// Wall time of the whole save, in seconds.
    pub duration_seconds: f64,
}

/// A random tag for a new object's name; without the OS generator, time and process id.
pub(crate) fn unique_tag() -> u32 {
    getrandom::u32().unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        nanos ^ std::process::id().rotate_left(16)
    })
}

impl SaveRequest {
    /// Refuses a request that no save could carry out (a zstd level outside 1..=19), before
    /// anything is read: a preview (check mode) refuses what the save would.
    pub fn validate(&self) -> Result<()> {
        if !(1..=19).contains(&self.level) && self.compression == Compression::Zstd {
            return Err(SnapshotError::from(InvalidOption::new(
                crate::opts::COMPRESSION_LEVEL,
                format!("{} is outside 1..=19", self.level),
            )));
        }
        Ok(())
    }
}

/// Takes a snapshot and stores it with its manifest. On any failure nothing is left under the
/// final names: the upload is aborted and no manifest is written.
pub async fn save_snapshot(
    config: &ClusterConfig,
    store: &Store,
    request: &SaveRequest,
    progress: &dyn Progress,
) -> Result<SaveResult> {
    request.validate()?;
    if let Some(lock) = &request.object_lock {
        lock.check(store)?;
    }
    let started = Instant::now();
    let (source, client) = choose_source(config, request.endpoint.as_deref()).await?;
    let created_at = Utc::now();
    let object = backup_object_name(
        source.cluster_id,
        created_at,
        source.revision,
        request.compression,
        !request.encrypt_to.is_empty(),
        unique_tag(),
    );
    let stream = client.snapshot_stream().await?;
    let mut upload = store.begin_upload(&object).await?;
    let streamed = stream_into(stream, &mut upload, request, progress).await;
    progress.finish();
    let streamed = match streamed {
        Ok(s) => s,
        Err(e) => {
            // Best effort: the error that matters is the one that stopped the save.
            let _ = upload.abort().await;
            return Err(e);
        }
    };
    let info = upload.complete().await?;
    if info.size != streamed.object_size {
        let _ = store.delete(&object).await;
        return Err(SnapshotError::VerifyFailed {
            name: object,
            reason: format!(
                "the store holds {} bytes but {} were written",
                info.size, streamed.object_size
            ),
        });
    }
    let mut manifest = build_manifest(&source, created_at, &object, &streamed, request);
    if request.verify_after_upload {
        let expectation = VerifyExpectation::from_manifest(&manifest);
        match verify_object(store, &object, &expectation, &Identities::none(), progress).await {
            Ok(_) => {}
            // Encrypted: no identity here, so the stored bytes' SHA-256 and size are what can
            // be checked, and they matched.
            Err(SnapshotError::Data(etcd_data::Error::Encrypted {
                stored_ok: true, ..
            })) => {}
            Err(e) => {
                let _ = store.delete(&object).await;
                return Err(e);
            }
        }
        manifest.verified_after_upload = true;
    }
    if let Some(request) = &request.object_lock {
        let lock = request.until(created_at);
        if let Err(e) = store.lock(&object, &lock).await {
            // Not locked, so it can go: without its retention it is not the backup asked for.
            let _ = store.delete(&object).await;
            return Err(e.into());
        }
        manifest.object_lock = Some(lock);
    }
    manifest.completed_at = Utc::now();
    let manifest_name = publish_manifest(store, &manifest).await?;
    if let Some(lock) = &manifest.object_lock {
        // The backup is complete and its object locked; a manifest left unlocked could be
        // deleted, which would leave the locked object an orphan: the save says so.
        store.lock(&manifest_name, lock).await?;
    }
    Ok(SaveResult {
        manifest,
        manifest_name,
        store: store.url().to_string(),
        duration_seconds: started.elapsed().as_secs_f64(),
    })
}

impl SaveResult {
    /// The prune a save applies after it (`--keep-*`): the saved cluster's folder, or every
    /// cluster folder with `all_clusters`; the backup just saved protected whatever the rules
    /// say (a backup dated in the future must not push it out).
    pub fn prune_request(
        &self,
        policy: RetentionPolicy,
        all_clusters: bool,
        orphan_grace: Duration,
    ) -> PruneRequest {
        PruneRequest {
            policy,
            cluster: (!all_clusters).then_some(self.manifest.cluster_id),
            orphan_grace,
            protected: vec![self.manifest.object.clone()],
            ..PruneRequest::default()
        }
    }
}

/// Writes the manifest of an object already in the store, then checks that the object is
/// still there with the size the manifest records. Until the manifest exists the object is
/// an orphan, which a concurrent prune may delete (with a short orphan grace, or on an object
/// store where a multipart object's Last-Modified is its upload's start); then the manifest
/// is removed again and the save fails, instead of reporting a backup that is not there.
pub(crate) async fn publish_manifest(store: &Store, manifest: &Manifest) -> Result<String> {
    let object = &manifest.object;
    let manifest_name = Manifest::name_for(object);
    store
        .put_small(&manifest_name, Bytes::from(manifest.to_json()))
        .await?;
    let what = match store.head(object).await {
        Ok(Some(info)) if info.size == manifest.object_size => return Ok(manifest_name),
        Ok(Some(info)) => format!(
            "replaced ({} bytes, {} expected)",
            info.size, manifest.object_size
        ),
        Ok(None) => "deleted".to_string(),
        Err(e) => {
            // Unknown whether it is there: the manifest stays (prune treats a manifest
            // without its object as an incomplete backup), the save fails.
            return Err(e.into());
        }
    };
    // Best effort: the error that matters is the missing object.
    let _ = store.delete(&manifest_name).await;
    Err(SnapshotError::ObjectGoneBeforeManifest {
        object: object.clone(),
        store: store.url().to_string(),
        what,
    })
}

fn build_manifest(
    source: &SnapshotSource,
    created_at: chrono::DateTime<Utc>,
    object: &str,
    streamed: &Streamed,
    request: &SaveRequest,
) -> Manifest {
    Manifest {
        format_version: MANIFEST_FORMAT_VERSION,
        tool: "etcdops".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        created_at,
        completed_at: created_at,
        cluster_id: source.cluster_id,
        member_id: source.member_id,
        member_name: source.member_name.clone(),
        endpoint: source.endpoint.clone(),
        etcd_version: source.etcd_version.clone(),
        revision: source.revision,
        raft_term: source.raft_term,
        raft_index: source.raft_index,
        db_size: streamed.db_size,
        db_size_in_use: source.db_size_in_use,
        db_sha256: streamed.db_sha256.clone(),
        object: object.to_string(),
        object_sha256: streamed.object_sha256.clone(),
        object_size: streamed.object_size,
        compression: request.compression,
        compression_level: (request.compression == Compression::Zstd).then_some(request.level),
        verified_after_upload: false,
        labels: request.labels.clone(),
        encryption: (!request.encrypt_to.is_empty()).then(|| Encryption::age(&request.encrypt_to)),
        compacted_from: None,
        follows: request.follows.clone(),
        object_lock: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::list_backups;
    use crate::catalog::tests::{local_store, names};

    /// An object in the store and a manifest describing it, not yet published.
    async fn stored_object(store: &Store) -> Manifest {
        let mut manifest = crate::manifest::tests::sample();
        manifest.object = "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst".into();
        let bytes = Bytes::from_static(b"the snapshot's stored bytes");
        manifest.object_size = bytes.len() as u64;
        store.put_small(&manifest.object, bytes).await.unwrap();
        manifest
    }

    #[tokio::test]
    async fn a_manifest_is_published_only_over_its_object() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let manifest = stored_object(&store).await;
        let name = publish_manifest(&store, &manifest).await.unwrap();
        assert_eq!(name, Manifest::name_for(&manifest.object));
        assert!(list_backups(&store).await.unwrap().backups[0].complete);
    }

    #[tokio::test]
    async fn an_object_deleted_before_its_manifest_fails_the_save_and_leaves_no_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let manifest = stored_object(&store).await;
        // A concurrent prune with a short orphan grace removes it as an orphan.
        store.delete(&manifest.object).await.unwrap();
        let err = publish_manifest(&store, &manifest).await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(
            err,
            SnapshotError::ObjectGoneBeforeManifest { .. }
        ));
        assert!(text.contains("was deleted by another process"), "{text}");
        assert!(
            text.contains(&manifest.object) && !text.contains('\n'),
            "{text}"
        );
        assert!(
            names(&store).await.is_empty(),
            "the manifest is removed again"
        );

        // Replaced by other bytes: the same.
        let manifest = stored_object(&store).await;
        store
            .put_small(&manifest.object, Bytes::from_static(b"short"))
            .await
            .unwrap();
        let text = publish_manifest(&store, &manifest)
            .await
            .unwrap_err()
            .to_string();
        assert!(text.contains("was replaced (5 bytes"), "{text}");
        assert_eq!(names(&store).await, [manifest.object.as_str()]);
    }
}
