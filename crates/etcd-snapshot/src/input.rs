//! Opening a snapshot for reading without holding it in memory: a file through etcd-data
//! (read in place, or decrypted and decompressed into an unnamed temporary file), a stored
//! object downloaded the same way as it arrives (etcd-data's [`etcd_data::Spool`]: hashed on
//! a second thread, written on a third). [`SnapshotFile`] is etcd-data's, with the errors of
//! this crate and the manifest's [`Compression`].

use std::io::Write;
use std::ops::Deref;
use std::path::Path;

pub use etcd_data::SpoolOptions;
use etcd_store::{Location, Store, StoreOptions};

use crate::crypt::{Identities, PumpError, pump_error, pump_stored};
use crate::error::{Result, SnapshotError};
use crate::manifest::{Compression, Manifest};

/// SHA-256 (hex) of a snapshot read in place as stored and of its db, read once: (stored, db).
pub(crate) fn sha256_with_trailer(snapshot: &SnapshotFile) -> std::io::Result<(String, String)> {
    snapshot.stored_and_db_sha256()
}

/// A snapshot opened for reading: its db in a file (the snapshot itself, or a temporary
/// decompressed or downloaded copy that disappears when this is dropped), and etcd's trailer.
/// It reads as [`etcd_data::SnapshotFile`] (through `Deref`), which etcd-data's functions
/// take.
#[derive(Debug)]
pub struct SnapshotFile(etcd_data::SnapshotFile);

impl Deref for SnapshotFile {
    type Target = etcd_data::SnapshotFile;

    fn deref(&self) -> &etcd_data::SnapshotFile {
        &self.0
    }
}

impl From<etcd_data::SnapshotFile> for SnapshotFile {
    fn from(file: etcd_data::SnapshotFile) -> Self {
        SnapshotFile(file)
    }
}

impl SnapshotFile {
    /// Compression found.
    pub fn compression(&self) -> Compression {
        self.0.compression()
    }

    /// The etcd-data snapshot file.
    pub fn into_inner(self) -> etcd_data::SnapshotFile {
        self.0
    }

    /// Records the db's SHA-256 (hex), computed from this very file.
    pub(crate) fn with_sha256(self, sha256: String) -> Self {
        SnapshotFile(self.0.with_known_sha256(sha256))
    }
}

/// Plain or zstd bytes (decided by their first bytes, or forced), unpacked into a writer as
/// they come: [`etcd_data::Unpack`] with the manifest's [`Compression`].
pub(crate) struct Unpack<W: Write>(etcd_data::Unpack<W>);

impl<W: Write> Unpack<W> {
    /// Unpacks into `sink`; `forced` skips the detection.
    pub(crate) fn new(sink: W, forced: Option<Compression>) -> Self {
        Unpack(etcd_data::Unpack::new(sink, forced))
    }

    /// Takes the next bytes.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.0.write_all(bytes)
    }

    /// Flushes the decompressor: the writer, and the compression found.
    pub(crate) fn finish(self) -> std::io::Result<(W, Compression)> {
        let (sink, compression) = self.0.finish()?;
        Ok((sink, compression))
    }
}

/// The recipients an age-encrypted backup's manifest records, when it has one.
fn recipients_of(manifest: &[u8]) -> Vec<String> {
    Manifest::from_json("", manifest)
        .ok()
        .and_then(|m| m.encryption)
        .map(|e| e.recipients)
        .unwrap_or_default()
}

/// Opens a snapshot file, plain or zstd (detected from its first bytes). A zstd file is
/// decompressed into a temporary file in `spool_dir` (default: the system's temp dir).
/// An age-encrypted file is refused ([`etcd_data::Error::Encrypted`]): see
/// [`open_snapshot_file_decrypting`].
pub fn open_snapshot_file(path: &Path, spool_dir: Option<&Path>) -> Result<SnapshotFile> {
    open_snapshot_file_decrypting(path, spool_dir, &Identities::none())
}

/// [`open_snapshot_file`], decrypting an age-encrypted file (`.age`, detected from its first
/// bytes) with `identities` as it is read into the temporary file. An encrypted file that
/// cannot be decrypted is reported with the recipients its manifest (beside it) records.
pub fn open_snapshot_file_decrypting(
    path: &Path,
    spool_dir: Option<&Path>,
    identities: &Identities,
) -> Result<SnapshotFile> {
    open_snapshot_file_with(path, spool_dir, identities, SpoolOptions::default())
}

/// [`open_snapshot_file_decrypting`], computing on the way (a zstd or age file) what
/// `options` ask: the db's SHA-256, the stored file's.
pub fn open_snapshot_file_with(
    path: &Path,
    spool_dir: Option<&Path>,
    identities: &Identities,
    options: SpoolOptions,
) -> Result<SnapshotFile> {
    let recipients = || {
        let name = Manifest::name_for(&path.display().to_string());
        etcd_data::read_small_regular(Path::new(&name), crate::restore::MAX_MANIFEST_BYTES)
            .map(|bytes| recipients_of(&bytes))
            .unwrap_or_default()
    };
    match etcd_data::open_snapshot_file_with(path, spool_dir, identities.as_data(), options) {
        Ok(file) => Ok(SnapshotFile(file)),
        Err(etcd_data::Error::Encrypted {
            name, stored_ok, ..
        }) => Err(SnapshotError::Data(etcd_data::Error::Encrypted {
            name,
            recipients: recipients(),
            stored_ok,
        })),
        Err(etcd_data::Error::WrongIdentity { name, .. }) => {
            Err(SnapshotError::Data(etcd_data::Error::WrongIdentity {
                name,
                recipients: recipients(),
            }))
        }
        Err(e) => Err(e.into()),
    }
}

/// The error of writing the spool of `name`: too large, a bad ceiling, or the spool dir.
fn spool_dir_failed(
    name: &str,
    spool_dir: Option<&Path>,
) -> impl Fn(std::io::Error) -> SnapshotError {
    let failed = etcd_data::spool_error(name, spool_dir);
    move |source| SnapshotError::Data(failed(source))
}

/// Opens "a snapshot file or a stored object" (the argument of every snapshot command, parsed
/// once by [`Location`]): an object of a store when `source` has a scheme, else a local file;
/// a zstd or age file or a stored object is decrypted and decompressed into an unnamed
/// temporary file. Nothing is hashed on the way: a reader that needs the db's SHA-256 (a
/// status that checks the trailer) computes it from the temporary file, on its own thread,
/// and one that does not (`skip_hash_check`) never pays for it.
pub async fn open_snapshot(
    source: &str,
    options: &StoreOptions,
    identities: &Identities,
) -> Result<SnapshotFile> {
    let spool = SpoolOptions {
        hash_db: false,
        hash_stored: false,
        write_back: false,
        db_size: None,
    };
    match Location::parse(source) {
        Location::Object { store, name } => {
            let store = Store::open(&store, options)?;
            let spool = SpoolOptions {
                db_size: recorded_db_size(&store, &name).await?,
                ..spool
            };
            open_snapshot_object_with(&store, &name, None, identities, spool).await
        }
        Location::File(path) => open_snapshot_file_with(&path, None, identities, spool),
    }
}

/// The db size the manifest of the stored object `name` records, bounding what it may unpack
/// to; `None` without a readable manifest (the ceiling bounds it then). A manifest that is
/// there but cannot be read is no error here: the object is read as a file without one.
async fn recorded_db_size(store: &Store, name: &str) -> Result<Option<u64>> {
    let manifest = Manifest::name_for(name);
    if store.head(&manifest).await?.is_none() {
        return Ok(None);
    }
    Ok(store
        .get_small(&manifest)
        .await
        .ok()
        .and_then(|bytes| Manifest::from_json(&manifest, &bytes).ok())
        .map(|m| m.db_size))
}

/// The manifest stored beside a backup (`source`: a store URL of the object, or a local file
/// with its `.manifest.json` beside it); `None` when there is none or it cannot be read (a
/// snapshot etcdctl saved has none).
pub async fn recorded_manifest(source: &str, options: &StoreOptions) -> Option<Manifest> {
    let (bytes, name) = match Location::parse(source) {
        Location::Object { store, name } => {
            let store = Store::open(&store, options).ok()?;
            let manifest = Manifest::name_for(&name);
            (store.get_small(&manifest).await.ok()?.to_vec(), manifest)
        }
        Location::File(path) => {
            let manifest = Manifest::name_for(&path.display().to_string());
            (std::fs::read(&manifest).ok()?, manifest)
        }
    };
    Manifest::from_json(&name, &bytes).ok()
}

/// Downloads the object `name` from `store` into a temporary file in `spool_dir` (default: the
/// system's temp dir), decompressing zstd (detected from its first bytes) as it arrives. An
/// age-encrypted object is refused ([`etcd_data::Error::Encrypted`]): see
/// [`open_snapshot_object_decrypting`].
pub async fn open_snapshot_object(
    store: &Store,
    name: &str,
    spool_dir: Option<&Path>,
) -> Result<SnapshotFile> {
    open_snapshot_object_decrypting(store, name, spool_dir, &Identities::none()).await
}

/// [`open_snapshot_object`], decrypting an age-encrypted object (detected from its first
/// bytes) with `identities` as it arrives; the SHA-256 of the object and of its db are
/// computed on the way.
pub async fn open_snapshot_object_decrypting(
    store: &Store,
    name: &str,
    spool_dir: Option<&Path>,
    identities: &Identities,
) -> Result<SnapshotFile> {
    let options = SpoolOptions {
        hash_db: true,
        hash_stored: true,
        write_back: false,
        db_size: recorded_db_size(store, name).await?,
    };
    open_snapshot_object_with(store, name, spool_dir, identities, options).await
}

/// [`open_snapshot_object_decrypting`], computing on the way what `options` ask.
pub async fn open_snapshot_object_with(
    store: &Store,
    name: &str,
    spool_dir: Option<&Path>,
    identities: &Identities,
    options: SpoolOptions,
) -> Result<SnapshotFile> {
    let (_, chunks) = store.get(name).await?;
    let spool = etcd_data::Spool::with_options(spool_dir, options)
        .map_err(spool_dir_failed(name, spool_dir))?;
    let tap = spool.stored_tap();
    let mut unpack = etcd_data::Unpack::new(spool, None);
    let mut stored_size = 0u64;
    let mut tapped = Ok(());
    let pumped = pump_stored(
        chunks,
        identities,
        false,
        |chunk| {
            stored_size += chunk.len() as u64;
            if tapped.is_ok() {
                tapped = tap.update(chunk);
            }
        },
        |plain| unpack.write_all(plain),
    )
    .await;
    tapped.map_err(spool_dir_failed(name, spool_dir))?;
    let encrypted = match pumped {
        Ok(encrypted) => encrypted,
        Err(e @ (PumpError::Locked | PumpError::NoMatchingIdentity)) => {
            let recipients = match store.get_small(&Manifest::name_for(name)).await {
                Ok(bytes) => recipients_of(&bytes),
                Err(_) => Vec::new(),
            };
            return Err(pump_error(name, &recipients, e));
        }
        Err(e) => return Err(pump_error(name, &[], e)),
    };
    let (spool, compression) = unpack
        .finish()
        .map_err(|e| pump_error(name, &[], PumpError::Sink(e)))?;
    let opened = spool
        .finish(compression, stored_size, encrypted)
        .map_err(spool_dir_failed(name, spool_dir))?;
    Ok(SnapshotFile(opened))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encrypted_file_without_an_identity_is_refused_with_the_identity_hint() {
        let dir = tempfile::tempdir().unwrap();
        let identity = age::x25519::Identity::generate();
        let mut recipients = crate::Recipients::none();
        recipients
            .add(&identity.to_public().to_string(), "test")
            .unwrap();
        let mut writer = crate::crypt::encryptor(&recipients, Vec::new()).unwrap();
        writer.write_all(&[7u8; 1024]).unwrap();
        let path = dir.path().join("b.db.age");
        std::fs::write(&path, writer.finish().unwrap()).unwrap();
        let err = open_snapshot_file(&path, None).unwrap_err();
        assert!(
            matches!(
                &err,
                SnapshotError::Data(etcd_data::Error::Encrypted { .. })
            ),
            "{err}"
        );
        assert_eq!(
            etcd_common::Hinted::hint(&err),
            Some(etcd_common::Hint::option(etcd_common::options::IDENTITY))
        );
    }
}
