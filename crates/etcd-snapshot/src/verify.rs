//! Verifying a stored backup: download as a stream, check the stored bytes' SHA-256,
//! decrypt (age, with an identity), decompress, check etcd's SHA-256 trailer against the db
//! and the manifest, and check the bbolt meta pages. Memory stays bounded whatever the size.

use std::io::Write;

use serde::Serialize;
use sha2::{Digest, Sha256};

use etcd_data::UnpackLimit;
use etcd_store::Store;

use crate::bbolt::{META_REGION, MetaSummary, check_meta_pages};
use crate::crypt::{Encryption, Identities, PumpError, pump_error, pump_stored};
use crate::error::{Result, SnapshotError};
use crate::input::Unpack;
use crate::manifest::{Compression, Manifest};
use crate::progress::Progress;
use crate::save::TRAILER_LEN;

/// What a backup is expected to be; `None` fields are not checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyExpectation {
    /// SHA-256 of the stored object.
    pub object_sha256: Option<String>,
    /// Size of the stored object.
    pub object_size: Option<u64>,
    /// SHA-256 of the db (etcd's trailer).
    pub db_sha256: Option<String>,
    /// Compression; detected from the bytes when `None`.
    pub compression: Option<Compression>,
    /// Encryption the manifest records (its recipients name who can decrypt).
    pub encryption: Option<Encryption>,
    /// Size of the db: nothing past it (and etcd's trailer) is unpacked; `None`: the ceiling
    /// ([`etcd_data::max_db_size`]).
    pub db_size: Option<u64>,
}

impl VerifyExpectation {
    /// Everything a manifest promises.
    pub fn from_manifest(manifest: &Manifest) -> Self {
        VerifyExpectation {
            object_sha256: Some(manifest.object_sha256.clone()),
            object_size: Some(manifest.object_size),
            db_sha256: Some(manifest.db_sha256.clone()),
            compression: Some(manifest.compression),
            encryption: manifest.encryption.clone(),
            db_size: Some(manifest.db_size),
        }
    }

    /// Whether a restore must hash the bytes as stored to prove the backup is the one the
    /// manifest records: only when it records their SHA-256 but not the db's. When it records
    /// the db's, the db's own SHA-256 (computed anyway, for etcd's trailer) proves the same
    /// for a restore, and the stored size is still checked; `verify` checks both sums.
    pub fn needs_stored_sha256(&self) -> bool {
        self.object_sha256.is_some() && self.db_sha256.is_none()
    }
}

/// The result of a successful verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The object checked.
    pub object: String,
    /// Whether a manifest was found and checked against.
    pub manifest_checked: bool,
    /// SHA-256 of the stored bytes.
    pub object_sha256: String,
    /// Stored size.
    pub object_size: u64,
    /// Compression found.
    pub compression: Compression,
    /// Whether the stored object is age-encrypted (and was decrypted to check it).
    pub encrypted: bool,
    /// db size (without the trailer).
    pub db_size: u64,
    /// SHA-256 of the db, equal to etcd's trailer.
    pub db_sha256: String,
    /// The newest valid bbolt meta page.
    pub bbolt: MetaSummary,
}

/// Receives decompressed bytes: hashes the db, keeps its start (meta pages) and its last
/// 32 bytes (the trailer); takes no byte past `limit`.
struct DbSink {
    hasher: Sha256,
    size: u64,
    head: Vec<u8>,
    tail: Vec<u8>,
    limit: UnpackLimit,
}

impl DbSink {
    fn new(limit: UnpackLimit) -> Self {
        DbSink {
            hasher: Sha256::new(),
            size: 0,
            head: Vec::new(),
            tail: Vec::with_capacity(TRAILER_LEN * 2),
            limit,
        }
    }
}

impl Write for DbSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.limit
            .check(self.size + self.tail.len() as u64, buf.len())?;
        if self.head.len() < META_REGION {
            let take = (META_REGION - self.head.len()).min(buf.len());
            self.head.extend_from_slice(&buf[..take]);
        }
        self.tail.extend_from_slice(buf);
        if self.tail.len() > TRAILER_LEN {
            let db_part = self.tail.len() - TRAILER_LEN;
            self.hasher.update(&self.tail[..db_part]);
            self.size += db_part as u64;
            self.tail.drain(..db_part);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Verifies the object `name` in `store` against `expect`. An age-encrypted object is
/// decrypted with `identities`; without any, its stored bytes are checked against `expect`
/// and [`etcd_data::Error::Encrypted`] returned (`stored_ok` when they matched a manifest).
pub async fn verify_object(
    store: &Store,
    name: &str,
    expect: &VerifyExpectation,
    identities: &Identities,
    progress: &dyn Progress,
) -> Result<VerifyReport> {
    let failed = |reason: String| SnapshotError::VerifyFailed {
        name: name.to_string(),
        reason,
    };
    let limit = etcd_data::unpack_limit(expect.db_size)
        .map_err(|e| SnapshotError::Data(etcd_data::spool_error(name, None)(e)))?;
    let (info, bytes) = store.get(name).await?;
    check_stored_size(name, expect, info.size)?;
    progress.start(Some(info.size));
    let mut object_hasher = Sha256::new();
    let mut object_size = 0u64;
    let mut decoder = Unpack::new(DbSink::new(limit), expect.compression);
    let pumped = pump_stored(
        bytes,
        identities,
        true,
        |chunk| {
            progress.advance(chunk.len() as u64);
            object_hasher.update(chunk);
            object_size += chunk.len() as u64;
        },
        |plain| decoder.write_all(plain),
    )
    .await;
    progress.finish();
    let recipients = expect
        .encryption
        .as_ref()
        .map(|e| e.recipients.clone())
        .unwrap_or_default();
    let encrypted = match pumped {
        Ok(encrypted) => encrypted,
        // Read to the end: the stored bytes are checked below, then the caller told why the
        // contents were not.
        Err(PumpError::Locked) => true,
        Err(PumpError::Damaged(reason)) => {
            return Err(failed(format!(
                "the encrypted bytes fail age's authentication, the object was changed or damaged ({reason})"
            )));
        }
        Err(PumpError::Sink(e)) => return Err(unpack_failed(name, e)),
        Err(e) => return Err(pump_error(name, &recipients, e)),
    };
    let object_sha256 = hex::encode(object_hasher.finalize());
    stored_as_expected(expect, object_size, &object_sha256).map_err(failed)?;
    if encrypted && identities.is_empty() {
        return Err(SnapshotError::Data(etcd_data::Error::Encrypted {
            name: name.to_string(),
            recipients,
            stored_ok: expect.object_sha256.is_some(),
        }));
    }
    let (sink, compression) = decoder.finish().map_err(|e| unpack_failed(name, e))?;
    if sink.tail.len() < TRAILER_LEN || sink.size == 0 {
        return Err(failed("too short to be an etcd snapshot".into()));
    }
    let db_sha256 = hex::encode(sink.hasher.finalize());
    // The trailer's bytes are not shown: until they match, they are just the last 32 bytes
    // of something that is not a verified backup.
    if db_sha256 != hex::encode(&sink.tail) {
        return Err(failed(format!(
            "the db's SHA-256 {db_sha256} does not match etcd's trailer (the last 32 bytes)"
        )));
    }
    db_as_expected(expect, &db_sha256).map_err(failed)?;
    let bbolt = check_meta_pages(&sink.head, sink.size)
        .map_err(|e| failed(format!("the db is not a sound bbolt file: {e}")))?;
    Ok(VerifyReport {
        object: name.to_string(),
        manifest_checked: expect.object_sha256.is_some(),
        object_sha256,
        object_size,
        compression,
        encrypted,
        db_size: sink.size,
        db_sha256,
        bbolt,
    })
}

/// A failure to unpack the object `name`: past its size limit (reported as such), or not a
/// stream the decompressor reads.
fn unpack_failed(name: &str, e: std::io::Error) -> SnapshotError {
    match etcd_data::limit_exceeded(&e) {
        Some(_) => SnapshotError::Data(etcd_data::unpack_error(name, e)),
        None => SnapshotError::VerifyFailed {
            name: name.to_string(),
            reason: format!("cannot decompress: {e}"),
        },
    }
}

/// Whether the stored bytes (`size`, `sha256`) are what `expect` says.
fn stored_as_expected(
    expect: &VerifyExpectation,
    size: u64,
    sha256: &str,
) -> std::result::Result<(), String> {
    if let Some(expected) = expect.object_size
        && expected != size
    {
        return Err(format!(
            "the manifest says {expected} bytes, the store holds {size}"
        ));
    }
    if let Some(expected) = &expect.object_sha256
        && expected != sha256
    {
        return Err(format!(
            "stored bytes have SHA-256 {sha256}, the manifest says {expected}: the object was changed or damaged"
        ));
    }
    Ok(())
}

/// Whether the db's SHA-256 is what `expect` says.
fn db_as_expected(expect: &VerifyExpectation, db_sha256: &str) -> std::result::Result<(), String> {
    match &expect.db_sha256 {
        Some(expected) if expected != db_sha256 => Err(format!(
            "the db's SHA-256 {db_sha256} differs from the manifest's {expected}"
        )),
        _ => Ok(()),
    }
}

/// Checks the size of a stored backup against `expect` before anything is unpacked: an object
/// of another size is not the backup the manifest describes, whatever it unpacks to (and a
/// larger db in it would otherwise be reported as past the manifest's db size first).
pub fn check_stored_size(name: &str, expect: &VerifyExpectation, size: u64) -> Result<()> {
    let sizes_only = VerifyExpectation {
        object_sha256: None,
        ..expect.clone()
    };
    stored_as_expected(&sizes_only, size, "").map_err(|reason| SnapshotError::VerifyFailed {
        name: name.to_string(),
        reason,
    })
}

/// Checks a backup opened for a restore against `expect` (its manifest), as
/// [`verify_object`] does: the stored object's size and SHA-256 (`stored_sha256`, when known)
/// and the db's SHA-256. An object replaced by another valid backup is refused here.
pub fn check_opened_backup(
    name: &str,
    expect: &VerifyExpectation,
    stored_size: u64,
    stored_sha256: Option<&str>,
    db_sha256: &str,
) -> Result<()> {
    let failed = |reason: String| SnapshotError::VerifyFailed {
        name: name.to_string(),
        reason,
    };
    match stored_sha256 {
        Some(sha) => stored_as_expected(expect, stored_size, sha).map_err(failed)?,
        None => stored_as_expected(
            &VerifyExpectation {
                object_sha256: None,
                ..expect.clone()
            },
            stored_size,
            "",
        )
        .map_err(failed)?,
    }
    db_as_expected(expect, db_sha256).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opened_backup_is_checked_against_every_manifest_field() {
        let expect = VerifyExpectation {
            object_sha256: Some("aa".into()),
            object_size: Some(10),
            db_sha256: Some("bb".into()),
            ..Default::default()
        };
        check_opened_backup("b", &expect, 10, Some("aa"), "bb").unwrap();
        check_opened_backup("b", &expect, 10, None, "bb").unwrap();
        for (size, sha, db, why) in [
            (11, Some("aa"), "bb", "the manifest says 10 bytes"),
            (10, Some("ab"), "bb", "the object was changed or damaged"),
            (10, Some("aa"), "bc", "differs from the manifest's bb"),
            (10, None, "bc", "differs from the manifest's bb"),
        ] {
            let err = check_opened_backup("b", &expect, size, sha, db)
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{err}");
        }
        check_opened_backup("b", &VerifyExpectation::default(), 1, Some("x"), "y").unwrap();
    }

    #[test]
    fn a_restore_hashes_the_stored_bytes_only_when_the_db_sum_is_not_recorded() {
        let both = VerifyExpectation {
            object_sha256: Some("aa".into()),
            db_sha256: Some("bb".into()),
            ..Default::default()
        };
        assert!(!both.needs_stored_sha256());
        let stored_only = VerifyExpectation {
            db_sha256: None,
            ..both.clone()
        };
        assert!(stored_only.needs_stored_sha256());
        assert!(!VerifyExpectation::default().needs_stored_sha256());
        // Without the stored sum, a db that is not the recorded one is still refused.
        let err = check_opened_backup("b", &both, 10, None, "bc")
            .unwrap_err()
            .to_string();
        assert!(err.contains("differs from the manifest's bb"), "{err}");
    }
}
