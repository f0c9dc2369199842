//! Reading a delta segment back from a store: its stored bytes are checked against its
//! manifest (size, SHA-256), decrypted when age-encrypted, decompressed (bounded) and every
//! record read, so what a restore replays is exactly what was published.

use std::io::Read;

use futures::StreamExt;
use sha2::{Digest, Sha256};

use etcd_store::Store;

use super::{DeltaManifest, SegmentReader};
use crate::crypt::{Identities, decrypting_reader, is_age, pump_error};
use crate::error::{Result, SnapshotError};

/// The most a segment may hold once decompressed (256 MiB); a larger one is refused.
pub const MAX_SEGMENT_BYTES: u64 = 256 << 20;

/// The most a segment's stored object may hold: zstd and age add a little to incompressible
/// data.
const MAX_STORED_BYTES: u64 = MAX_SEGMENT_BYTES + (MAX_SEGMENT_BYTES >> 6) + (1 << 20);

fn failed(object: &str, reason: String) -> SnapshotError {
    SnapshotError::VerifyFailed {
        name: object.to_string(),
        reason,
    }
}

/// Downloads the segment stored as `object` and checks its size and SHA-256 against its
/// manifest.
pub(crate) async fn fetch_stored(
    store: &Store,
    object: &str,
    manifest: &DeltaManifest,
) -> Result<Vec<u8>> {
    if manifest.object_size > MAX_STORED_BYTES {
        return Err(failed(
            object,
            format!(
                "its manifest records {} bytes, more than a delta segment may hold ({MAX_SEGMENT_BYTES} bytes decompressed)",
                manifest.object_size
            ),
        ));
    }
    let (_, mut chunks) = store.get(object).await?;
    let mut stored = Vec::with_capacity(usize::try_from(manifest.object_size).unwrap_or(0));
    let mut hasher = Sha256::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if (stored.len() + chunk.len()) as u64 > manifest.object_size {
            return Err(failed(
                object,
                format!(
                    "the store holds more than the {} bytes its manifest records",
                    manifest.object_size
                ),
            ));
        }
        hasher.update(&chunk);
        stored.extend_from_slice(&chunk);
    }
    if stored.len() as u64 != manifest.object_size {
        return Err(failed(
            object,
            format!(
                "its manifest records {} bytes, the store holds {}",
                manifest.object_size,
                stored.len()
            ),
        ));
    }
    let sha = hex::encode(hasher.finalize());
    if sha != manifest.object_sha256 {
        return Err(failed(
            object,
            format!(
                "stored bytes have SHA-256 {sha}, its manifest says {}: the object was changed or damaged",
                manifest.object_sha256
            ),
        ));
    }
    Ok(stored)
}

/// Decrypts (when needed) and decompresses a segment's checked stored bytes, then reads every
/// record: returns the decompressed segment. Without an identity for an encrypted segment,
/// [`etcd_data::Error::Encrypted`] (its stored bytes were checked).
pub(crate) fn decode_segment(
    name: &str,
    manifest: &DeltaManifest,
    stored: &[u8],
    identities: &Identities,
) -> Result<Vec<u8>> {
    let recipients = manifest
        .encryption
        .as_ref()
        .map(|e| e.recipients.clone())
        .unwrap_or_default();
    let encrypted = manifest.encryption.is_some() || is_age(stored);
    let plain: Box<dyn Read + '_> = if encrypted {
        if identities.is_empty() {
            return Err(SnapshotError::Data(etcd_data::Error::Encrypted {
                name: name.to_string(),
                recipients,
                stored_ok: true,
            }));
        }
        Box::new(
            decrypting_reader(stored, identities).map_err(|e| pump_error(name, &recipients, e))?,
        )
    } else {
        Box::new(stored)
    };
    let what = if encrypted {
        "cannot decrypt and decompress it"
    } else {
        "cannot decompress it"
    };
    let decoder = zstd::stream::read::Decoder::new(plain)
        .map_err(|e| failed(name, format!("{what}: {e}")))?;
    let mut bytes = Vec::new();
    decoder
        .take(MAX_SEGMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(name, format!("{what}: {e}")))?;
    if bytes.len() as u64 > MAX_SEGMENT_BYTES {
        return Err(failed(
            name,
            format!(
                "it decompresses to more than {MAX_SEGMENT_BYTES} bytes, more than a delta segment may hold"
            ),
        ));
    }
    check_records(name, manifest, &bytes)?;
    Ok(bytes)
}

/// Reads every record of a decompressed segment: the end record must be there and last, each
/// change's revision within (`after_revision`, `to_revision`] and not below the one before,
/// each time mark's and lease set's within [`after_revision`, `to_revision`], the number of
/// changes the manifest's, and the segment must end where its manifest says: `to_revision` is
/// the last revision its records reach (a change, a mark or a lease set; `after_revision` when
/// it holds none), so
/// a manifest edited to claim a longer reach is refused.
fn check_records(name: &str, manifest: &DeltaManifest, bytes: &[u8]) -> Result<()> {
    let unreadable = |e: super::SegmentError| failed(name, format!("unreadable segment: {e}"));
    let (after, to) = (manifest.after_revision, manifest.to_revision);
    let mut rest = bytes;
    let mut reader = SegmentReader::new(&mut rest).map_err(unreadable)?;
    let mut last = after;
    let mut end = after;
    let mut changes = 0u64;
    // The last lease set's revision: sets sit after the changes up to their revision and
    // before any change past it (a replay stops reading at the first change past its target).
    let mut lease_set: Option<i64> = None;
    while let Some(record) = reader.next_record().map_err(unreadable)? {
        if let super::DeltaRecord::Leases { revision, .. } = &record {
            if *revision < last {
                return Err(failed(
                    name,
                    format!(
                        "its lease set at revision {revision} follows a change at revision {last}"
                    ),
                ));
            }
            lease_set = Some(*revision);
        }
        let stamp = match &record {
            super::DeltaRecord::Mark { revision, .. } => Some(("a time mark", *revision)),
            super::DeltaRecord::Leases { revision, .. } => Some(("a lease set", *revision)),
            _ => None,
        };
        if let Some((what, revision)) = stamp {
            if revision < after || revision > to {
                return Err(failed(
                    name,
                    format!(
                        "it holds {what} at revision {revision}, outside its range [{after}, {to}]"
                    ),
                ));
            }
            end = end.max(revision);
            continue;
        }
        let Some(revision) = record.revision() else {
            continue;
        };
        if revision <= after || revision > to {
            return Err(failed(
                name,
                format!(
                    "it holds a change at revision {revision}, outside its range ({after}, {to}]"
                ),
            ));
        }
        if revision < last {
            return Err(failed(
                name,
                format!("its changes are out of order: revision {revision} follows {last}"),
            ));
        }
        if let Some(set) = lease_set
            && revision <= set
        {
            return Err(failed(
                name,
                format!("a change at revision {revision} follows the lease set at revision {set}"),
            ));
        }
        last = revision;
        end = end.max(revision);
        changes += 1;
    }
    if !rest.is_empty() {
        return Err(failed(
            name,
            format!("{} bytes follow its end record", rest.len()),
        ));
    }
    if changes != manifest.changes {
        return Err(failed(
            name,
            format!(
                "it holds {changes} changes, its manifest says {}",
                manifest.changes
            ),
        ));
    }
    if end != to {
        return Err(failed(
            name,
            format!(
                "its manifest says it reaches revision {to}, but its records end at revision {end}: the manifest was changed or damaged"
            ),
        ));
    }
    Ok(())
}

/// Downloads the segment `manifest` describes (`manifest.object`, a name relative to the
/// store it was published to), checks its size and SHA-256 against it, decrypts it when
/// encrypted (with `identities`; none: [`etcd_data::Error::Encrypted`]), decompresses it
/// (refusing more than [`MAX_SEGMENT_BYTES`]) and checks that its records read to the end,
/// every change's revision in (`after_revision`, `to_revision`], in order, as many as the
/// manifest says. Returns the decompressed segment: read it with [`super::SegmentReader`].
/// When `store` is opened at a folder below that store, use [`fetch_delta_segment_at`].
pub async fn fetch_delta_segment(
    store: &Store,
    manifest: &DeltaManifest,
    identities: &Identities,
) -> Result<Vec<u8>> {
    fetch_delta_segment_at(store, &manifest.object, manifest, identities).await
}

/// [`fetch_delta_segment`] for the segment stored as `object` in `store` (as listed there,
/// e.g. [`crate::DeltaEntry::object`]): the same as `manifest.object` unless `store` is
/// opened at a folder below the store the segment was published to.
pub async fn fetch_delta_segment_at(
    store: &Store,
    object: &str,
    manifest: &DeltaManifest,
    identities: &Identities,
) -> Result<Vec<u8>> {
    let stored = fetch_stored(store, object, manifest).await?;
    decode_segment(object, manifest, &stored, identities)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::delta::{DeltaRecord, KeyValueFields, SegmentEncoder, revision_key};
    use bytes::Bytes;

    /// A segment's bytes (decompressed) with one put per revision, and a time mark at the
    /// last.
    pub(crate) fn segment_bytes(revisions: &[i64]) -> Vec<u8> {
        segment_bytes_to(revisions, revisions.last().copied())
    }

    /// [`segment_bytes`] with its time mark at `mark` (where the segment ends).
    pub(crate) fn segment_bytes_to(revisions: &[i64], mark: Option<i64>) -> Vec<u8> {
        let mut out = SegmentEncoder::header().to_vec();
        let mut encoder = SegmentEncoder::default();
        for &revision in revisions {
            let value = KeyValueFields {
                key: b"/k",
                create_revision: 2,
                mod_revision: revision,
                version: 1,
                value: b"v",
                lease: 0,
            }
            .encode();
            encoder.record(
                &DeltaRecord::Change {
                    key: revision_key(revision, 0, false),
                    value,
                },
                &mut out,
            );
        }
        if let Some(last) = mark {
            encoder.record(
                &DeltaRecord::Mark {
                    revision: last,
                    // 2026-11-30T01:00:00Z, the fixtures' day.
                    unix_ms: 1_796_000_400_000,
                },
                &mut out,
            );
        }
        encoder.end(&mut out);
        out
    }

    /// Publishes segment `sequence` of `base` (revision `base_revision`) holding one change
    /// per revision in `revisions`, covering (`after`, `to`]: the object, then its manifest.
    pub(crate) async fn publish_segment(
        store: &Store,
        base: &str,
        base_revision: i64,
        sequence: u64,
        (after, to): (i64, i64),
        revisions: &[i64],
    ) -> DeltaManifest {
        // Marked as caught up at `to`: the segment ends where its manifest says.
        let mark = (to > after).then_some(to);
        let stored = zstd::encode_all(&segment_bytes_to(revisions, mark)[..], 3).unwrap();
        let mut manifest = crate::delta::manifest::tests::sample(base, sequence, after, to);
        manifest.base_revision = base_revision;
        manifest.changes = revisions.len() as u64;
        manifest.object_sha256 = hex::encode(Sha256::digest(&stored));
        manifest.object_size = stored.len() as u64;
        store
            .put_small(&manifest.object, Bytes::from(stored))
            .await
            .unwrap();
        store
            .put_small(
                &crate::Manifest::name_for(&manifest.object),
                Bytes::from(manifest.to_json()),
            )
            .await
            .unwrap();
        manifest
    }

    fn local_store(dir: &tempfile::TempDir) -> Store {
        Store::open(
            &dir.path().display().to_string(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap()
    }

    const BASE: &str = "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst";

    #[tokio::test]
    async fn a_published_segment_reads_back_and_its_records_parse() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let manifest = publish_segment(&store, BASE, 10, 1, (10, 14), &[11, 12, 12, 14]).await;
        let bytes = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap();
        let mut reader = SegmentReader::new(&bytes[..]).unwrap();
        let mut revisions = Vec::new();
        while let Some(record) = reader.next_record().unwrap() {
            revisions.extend(record.revision());
        }
        assert_eq!(revisions, [11, 12, 12, 14]);
    }

    #[tokio::test]
    async fn a_change_outside_the_range_or_a_changed_byte_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        // Revision 16 is past the segment's end (15).
        let manifest = publish_segment(&store, BASE, 10, 1, (10, 15), &[11, 16]).await;
        let err = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("outside its range (10, 15]"), "{err}");
        assert!(err.contains(&manifest.object), "{err}");
        // Out of order.
        let manifest = publish_segment(&store, BASE, 10, 2, (15, 20), &[18, 17]).await;
        let err = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("out of order"), "{err}");
        // A flipped byte fails the SHA-256 check before anything is decompressed.
        let manifest = publish_segment(&store, BASE, 10, 3, (20, 25), &[21]).await;
        let path = dir.path().join(&manifest.object);
        let mut stored = std::fs::read(&path).unwrap();
        stored[5] ^= 1;
        std::fs::write(&path, stored).unwrap();
        let err = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("SHA-256"), "{err}");
        // A wrong change count.
        let mut manifest = publish_segment(&store, BASE, 10, 4, (25, 30), &[26]).await;
        manifest.changes = 2;
        let err = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds 1 changes"), "{err}");
    }

    #[tokio::test]
    async fn a_manifest_claiming_another_reach_than_its_records_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        // An empty segment (as `backup run` publishes when nothing changed) whose manifest
        // was edited to reach the largest revision there is.
        let mut manifest = publish_segment(&store, BASE, 10, 1, (10, 10), &[]).await;
        fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap();
        manifest.to_revision = i64::MAX;
        let err = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!(
                "its manifest says it reaches revision {}, but its records end at revision 10",
                i64::MAX
            )),
            "{err}"
        );
        // A segment with changes whose manifest claims less, or more, than they reach.
        let mut manifest = publish_segment(&store, BASE, 10, 2, (10, 14), &[11, 14]).await;
        manifest.to_revision = 20;
        let err = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("its records end at revision 14"), "{err}");
        // A time mark outside the segment's range.
        let stored = zstd::encode_all(&segment_bytes_to(&[11], Some(30))[..], 3).unwrap();
        let mut manifest = crate::delta::manifest::tests::sample(BASE, 3, 10, 11);
        manifest.changes = 1;
        manifest.object_sha256 = hex::encode(Sha256::digest(&stored));
        manifest.object_size = stored.len() as u64;
        store
            .put_small(&manifest.object, Bytes::from(stored))
            .await
            .unwrap();
        let err = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a time mark at revision 30, outside its range [10, 11]"),
            "{err}"
        );
    }

    #[test]
    fn a_lease_set_out_of_revision_order_is_refused() {
        let put = |revision: i64| DeltaRecord::Change {
            key: revision_key(revision, 0, false),
            value: KeyValueFields {
                key: b"/k",
                mod_revision: revision,
                ..Default::default()
            }
            .encode(),
        };
        let set = |revision: i64| DeltaRecord::Leases {
            revision,
            leases: vec![(7, 30)],
        };
        let check = |records: &[DeltaRecord]| {
            let mut manifest = crate::delta::manifest::tests::sample("b", 1, 10, 13);
            manifest.changes = 2;
            check_records(
                "s",
                &manifest,
                &crate::delta::format::tests::encode(records),
            )
        };
        check(&[put(11), set(12), put(13)]).unwrap();
        check(&[put(11), set(11), put(13)]).unwrap();
        let late = check(&[put(11), put(13), set(12)]).unwrap_err().to_string();
        assert!(
            late.contains("lease set at revision 12 follows a change at revision 13"),
            "{late}"
        );
        let early = check(&[set(12), put(11), put(13)]).unwrap_err().to_string();
        assert!(
            early.contains("change at revision 11 follows the lease set at revision 12"),
            "{early}"
        );
    }

    #[tokio::test]
    async fn encrypted_segments_need_an_identity() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let identity = age::x25519::Identity::generate();
        let mut recipients = crate::Recipients::none();
        recipients
            .add(&identity.to_public().to_string(), "test")
            .unwrap();
        let packed = zstd::encode_all(&segment_bytes(&[11, 12])[..], 3).unwrap();
        let mut writer = crate::crypt::encryptor(&recipients, Vec::new()).unwrap();
        std::io::Write::write_all(&mut writer, &packed).unwrap();
        let stored = writer.finish().unwrap();
        let mut manifest = crate::delta::manifest::tests::sample(BASE, 1, 10, 12);
        manifest.object = crate::delta::delta_object_name(BASE, 1, 10, 12, true);
        manifest.changes = 2;
        manifest.object_sha256 = hex::encode(Sha256::digest(&stored));
        manifest.object_size = stored.len() as u64;
        manifest.encryption = Some(crate::Encryption::age(&recipients));
        store
            .put_small(&manifest.object, Bytes::from(stored))
            .await
            .unwrap();
        let err = fetch_delta_segment(&store, &manifest, &Identities::none())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                SnapshotError::Data(etcd_data::Error::Encrypted {
                    stored_ok: true,
                    ..
                })
            ),
            "{err}"
        );
        // It names who can decrypt it (the option to pass is the error's hint, rendered by
        // each front-end).
        let public = identity.to_public().to_string();
        assert!(err.to_string().contains(&public), "{err}");
        let mut ids = Identities::none();
        ids.add_text(
            age::secrecy::ExposeSecret::expose_secret(&identity.to_string()),
            "test",
        )
        .unwrap();
        let bytes = fetch_delta_segment(&store, &manifest, &ids).await.unwrap();
        assert_eq!(bytes, segment_bytes(&[11, 12]));
    }
}
