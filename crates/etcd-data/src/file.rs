//! Opening a snapshot file for reading without holding it in memory: a plain file is read in
//! place, page by page; a zstd or age-encrypted file is decrypted and decompressed as a stream
//! into an unnamed temporary file (see [`crate::spool`]: hashed on another thread, written on
//! a third) and read from there. etcd's SHA-256 trailer is split off; the db's SHA-256 (and
//! that of the bytes as stored) is computed on the way when asked, else later, when needed.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};

use bbolt::{DbFile, PageSource};
use serde::{Deserialize, Serialize};

use crate::crypt::{AGE_MAGIC, DecryptFailure, Identities, decrypting_reader, is_age};
use crate::error::{Error, Result};
use crate::spool::{PIECE, Spool, SpoolOptions, StoredTap, link_unnamed};

/// Bytes of etcd's SHA-256 trailer at the end of a snapshot.
pub const TRAILER_LEN: usize = 32;

/// How a snapshot file is compressed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// zstd (the default).
    #[default]
    Zstd,
    /// Stored as etcd sent it.
    None,
}

impl Compression {
    /// File name suffix for snapshots of this compression.
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::Zstd => ".db.zst",
            Compression::None => ".db",
        }
    }
}

/// zstd frames start with these bytes.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Bytes read or written at a time when streaming a db.
pub const CHUNK: usize = 4 << 20;

/// A snapshot opened for reading: its db in a file (the snapshot itself, or a temporary
/// decompressed or downloaded copy that disappears when this is dropped), and etcd's trailer.
#[derive(Debug)]
pub struct SnapshotFile {
    db: DbFile,
    trailer: Option<[u8; TRAILER_LEN]>,
    sha256: Option<String>,
    compression: Compression,
    stored_size: u64,
    stored_sha256: Option<String>,
    encrypted: bool,
    spool: Option<SpoolState>,
}

/// A db spooled into an unnamed file: whether it can be given a name (`O_TMPFILE`), and
/// whether it was (see [`SnapshotFile::take_into`]).
#[derive(Debug)]
struct SpoolState {
    linkable: bool,
    consumed: AtomicBool,
}

impl SnapshotFile {
    /// A db spooled into the unnamed file of `db` (see [`crate::spool`]).
    pub(crate) fn spooled(
        db: DbFile,
        trailer: Option<[u8; TRAILER_LEN]>,
        sha256: Option<String>,
        compression: Compression,
        stored_size: u64,
        encrypted: bool,
        linkable: bool,
    ) -> Self {
        SnapshotFile {
            db,
            trailer,
            sha256,
            compression,
            stored_size,
            stored_sha256: None,
            encrypted,
            spool: Some(SpoolState {
                linkable,
                consumed: AtomicBool::new(false),
            }),
        }
    }

    /// Gives the spooled db (an unnamed file on `to`'s filesystem) the name `to`, without a
    /// copy: `Ok(false)` when it cannot be (a snapshot read in place, a spool elsewhere), then
    /// the caller copies. Once it has a name, the file is the caller's (a restore rewrites it
    /// in place): this snapshot is then [`consumed`](Self::consumed), and taking it again is
    /// an error.
    pub fn take_into(&self, to: &Path) -> std::io::Result<bool> {
        let Some(spool) = &self.spool else {
            return Ok(false);
        };
        if spool.consumed.load(Ordering::SeqCst) {
            return Err(std::io::Error::other(
                "its spooled db was given to a restore already; open the snapshot again",
            ));
        }
        if !spool.linkable || !link_unnamed(self.db.file(), to)? {
            return Ok(false);
        }
        spool.consumed.store(true, Ordering::SeqCst);
        Ok(true)
    }

    /// Whether the spooled db was given away ([`Self::take_into`]): its bytes may have
    /// changed since (a restore rewrites it), so nothing should read it as the snapshot.
    pub fn consumed(&self) -> bool {
        self.spool
            .as_ref()
            .is_some_and(|s| s.consumed.load(Ordering::SeqCst))
    }

    /// The db's bytes (without the trailer).
    pub fn db(&self) -> &DbFile {
        &self.db
    }

    /// Bytes of the db, without the trailer.
    pub fn db_size(&self) -> u64 {
        self.db.size()
    }

    /// etcd's SHA-256 trailer, when the snapshot has one.
    pub fn trailer(&self) -> Option<[u8; TRAILER_LEN]> {
        self.trailer
    }

    /// The db's SHA-256, hex, when it was computed while streaming the snapshot in.
    pub fn known_sha256(&self) -> Option<&str> {
        self.sha256.as_deref()
    }

    /// The db's SHA-256, hex: the one computed while streaming the snapshot in, else read
    /// and hashed now.
    pub fn db_sha256(&self) -> std::io::Result<String> {
        match self.known_sha256() {
            Some(known) => Ok(known.to_string()),
            None => sha256_of(self.db()),
        }
    }

    /// Compression found.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Size as stored (compressed, encrypted).
    pub fn stored_size(&self) -> u64 {
        self.stored_size
    }

    /// SHA-256 (hex) of the bytes as stored, when they were hashed on the way in (a stored
    /// object).
    pub fn stored_sha256(&self) -> Option<&str> {
        self.stored_sha256.as_deref()
    }

    /// Whether it was stored age-encrypted (and was decrypted to be read).
    pub fn encrypted(&self) -> bool {
        self.encrypted
    }

    /// Records the SHA-256 (hex) of the bytes as stored, hashed on the way in.
    pub fn with_stored_sha256(mut self, sha256: String) -> Self {
        self.stored_sha256 = Some(sha256);
        self
    }

    /// Records the db's SHA-256 (hex), computed from this very file by the caller.
    pub fn with_known_sha256(mut self, sha256: String) -> Self {
        self.sha256 = Some(sha256);
        self
    }

    /// SHA-256 (hex) of the file as stored and of its db, read once, for a snapshot read in
    /// place (the file is its db and its trailer): (stored, db).
    pub fn stored_and_db_sha256(&self) -> std::io::Result<(String, String)> {
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; CHUNK];
        let size = self.db.size();
        let mut at = 0u64;
        while at < size {
            let n = usize::try_from((size - at).min(CHUNK as u64)).unwrap_or(CHUNK);
            self.db.read_exact_at(&mut buf[..n], at)?;
            hasher.update(&buf[..n]);
            at += n as u64;
        }
        let mut stored = hasher.clone();
        if let Some(trailer) = self.trailer {
            stored.update(trailer);
        }
        Ok((
            hex::encode(stored.finalize()),
            hex::encode(hasher.finalize()),
        ))
    }
}

/// Plain or zstd bytes (decided by their first bytes, or forced), unpacked into a writer as
/// they come.
pub struct Unpack<W: Write> {
    state: Option<UnpackState<W>>,
    forced: Option<Compression>,
}

enum UnpackState<W: Write> {
    Pending(Vec<u8>, W),
    Zstd(Box<zstd::stream::write::Decoder<'static, W>>),
    Plain(W),
}

impl<W: Write> Unpack<W> {
    /// Unpacks into `sink`; `forced` skips the detection.
    pub fn new(sink: W, forced: Option<Compression>) -> Self {
        Unpack {
            state: Some(UnpackState::Pending(Vec::new(), sink)),
            forced,
        }
    }

    fn gone() -> std::io::Error {
        std::io::Error::other("an earlier write failed")
    }

    /// Takes the next bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self.state.take().ok_or_else(Self::gone)? {
            UnpackState::Pending(mut head, sink) => {
                head.extend_from_slice(bytes);
                if head.len() < ZSTD_MAGIC.len() && self.forced.is_none() {
                    self.state = Some(UnpackState::Pending(head, sink));
                    return Ok(());
                }
                let is_zstd = match self.forced {
                    Some(c) => c == Compression::Zstd,
                    None => head.starts_with(&ZSTD_MAGIC),
                };
                self.state = Some(if is_zstd {
                    UnpackState::Zstd(Box::new(zstd::stream::write::Decoder::new(sink)?))
                } else {
                    UnpackState::Plain(sink)
                });
                self.write_all(&head)
            }
            UnpackState::Zstd(mut d) => {
                let written = d.write_all(bytes);
                self.state = Some(UnpackState::Zstd(d));
                written
            }
            UnpackState::Plain(mut w) => {
                let written = w.write_all(bytes);
                self.state = Some(UnpackState::Plain(w));
                written
            }
        }
    }

    /// Flushes the decompressor: the writer, and the compression found.
    pub fn finish(self) -> std::io::Result<(W, Compression)> {
        match self.state.ok_or_else(Self::gone)? {
            UnpackState::Zstd(mut d) => {
                d.flush()?;
                Ok((d.into_inner(), Compression::Zstd))
            }
            UnpackState::Plain(w) => Ok((w, Compression::None)),
            // Fewer bytes than a zstd magic: as they are.
            UnpackState::Pending(head, mut w) => {
                w.write_all(&head)?;
                Ok((w, Compression::None))
            }
        }
    }
}

/// SHA-256 of `bytes` fed in pieces, holding the last 32 bytes back: when the stream ends,
/// they are etcd's trailer if the total length says so (a bbolt file is a multiple of 512
/// bytes, a snapshot with a trailer 32 more), else they are hashed too.
pub struct TrailerHasher {
    hasher: Option<Sha256>,
    held: Vec<u8>,
    total: u64,
}

impl Default for TrailerHasher {
    fn default() -> Self {
        TrailerHasher {
            hasher: Some(Sha256::new()),
            held: Vec::new(),
            total: 0,
        }
    }
}

impl TrailerHasher {
    /// One that only counts the bytes and holds the trailer back, hashing nothing.
    pub fn counting() -> Self {
        TrailerHasher {
            hasher: None,
            ..TrailerHasher::default()
        }
    }

    /// Takes the next bytes.
    pub fn update(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let excess = (self.held.len() + data.len()).saturating_sub(TRAILER_LEN);
        let from_held = excess.min(self.held.len());
        let from_data = excess - from_held;
        if let Some(hasher) = self.hasher.as_mut() {
            hasher.update(&self.held[..from_held]);
            hasher.update(&data[..from_data]);
        }
        self.held.drain(..from_held);
        self.held.extend_from_slice(&data[from_data..]);
    }

    /// (bytes of the db, SHA-256 hex of the db, trailer); the SHA-256 is empty when
    /// [`Self::counting`].
    pub fn finish(self) -> (u64, String, Option<[u8; TRAILER_LEN]>) {
        let (len, sha, trailer) = self.finish_hashed();
        (len, sha.unwrap_or_default(), trailer)
    }

    /// (bytes of the db, SHA-256 hex of the db unless [`Self::counting`], trailer).
    pub fn finish_hashed(mut self) -> (u64, Option<String>, Option<[u8; TRAILER_LEN]>) {
        let finalize = |h: Option<Sha256>| h.map(|h| hex::encode(h.finalize()));
        if has_trailer(self.total)
            && let Ok(trailer) = <[u8; TRAILER_LEN]>::try_from(self.held.as_slice())
        {
            let db_len = self.total - TRAILER_LEN as u64;
            return (db_len, finalize(self.hasher), Some(trailer));
        }
        if let Some(hasher) = self.hasher.as_mut() {
            hasher.update(&self.held);
        }
        (self.total, finalize(self.hasher), None)
    }
}

/// Whether a snapshot of `len` bytes ends with etcd's trailer.
pub fn has_trailer(len: u64) -> bool {
    len % 512 == TRAILER_LEN as u64 && len > TRAILER_LEN as u64
}

/// Opens a snapshot file, plain or zstd (detected from its first bytes). A zstd file is
/// decompressed into a temporary file in `spool_dir` (default: the system's temp dir).
/// An age-encrypted file is refused ([`Error::Encrypted`]): see
/// [`open_snapshot_file_decrypting`].
pub fn open_snapshot_file(path: &Path, spool_dir: Option<&Path>) -> Result<SnapshotFile> {
    open_snapshot_file_decrypting(path, spool_dir, &Identities::none())
}

/// [`open_snapshot_file`], decrypting an age-encrypted file (`.age`, detected from its first
/// bytes) with `identities` as it is read into the temporary file.
pub fn open_snapshot_file_decrypting(
    path: &Path,
    spool_dir: Option<&Path>,
    identities: &Identities,
) -> Result<SnapshotFile> {
    open_snapshot_file_with(path, spool_dir, identities, SpoolOptions::default())
}

/// Opens `path` for reading when it is a regular file (through a symbolic link, as a path
/// given by the user may be). A FIFO, a device or a dir is refused without being waited on:
/// the open does not block (`O_NONBLOCK`) and the descriptor's type is checked before a read.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Looked at first, so a device is not even opened (opening a tape or a watchdog acts),
    // then checked again on the descriptor, which is what is read.
    refuse_special(std::fs::metadata(path)?.file_type())?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    refuse_special(file.metadata()?.file_type())?;
    Ok(file)
}

/// Opens a snapshot file named by the user: a regular file, or a pipe (a backup streamed
/// through a FIFO or `/dev/stdin`, waited on as `cat` would); a dir or a device is refused
/// without being opened.
fn open_snapshot_path(path: &Path) -> std::io::Result<File> {
    let kind = std::fs::metadata(path)?.file_type();
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return File::open(path);
        }
    }
    open_regular(path)
}

/// Refuses anything but a regular file, in words.
fn refuse_special(kind: std::fs::FileType) -> std::io::Result<()> {
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_block_device() || kind.is_char_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a special file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("it is {what}, not a regular file; name the snapshot file itself"),
        ));
    }
    Ok(())
}

/// The bytes of a small regular file beside a snapshot (its manifest): a FIFO or a device is
/// refused without blocking, and more than `cap` bytes is an error, not a read without end.
pub fn read_small_regular(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it is larger than {cap} bytes: not a manifest etcdops wrote"),
        ));
    }
    Ok(bytes)
}

/// [`open_snapshot_file_decrypting`], computing on the way what `options` ask (a zstd or age
/// file: the db's SHA-256, and that of the file as stored). A plain file is read in place:
/// nothing is computed, [`SnapshotFile::db_sha256`] reads it when asked.
pub fn open_snapshot_file_with(
    path: &Path,
    spool_dir: Option<&Path>,
    identities: &Identities,
    options: SpoolOptions,
) -> Result<SnapshotFile> {
    let failed = |source: std::io::Error| Error::ReadFile {
        path: path.display().to_string(),
        source,
    };
    let mut file = open_snapshot_path(path).map_err(failed)?;
    let stored_size = file.metadata().map_err(failed)?.len();
    let mut head = Vec::with_capacity(AGE_MAGIC.len());
    (&mut file)
        .take(AGE_MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(failed)?;
    let encrypted = is_age(&head);
    if encrypted && identities.is_empty() {
        return Err(Error::Encrypted {
            name: path.display().to_string(),
            recipients: Vec::new(),
            stored_ok: false,
        });
    }
    if !encrypted && !head.starts_with(&ZSTD_MAGIC) {
        let (db_len, trailer) = if has_trailer(stored_size) {
            let mut trailer = [0u8; TRAILER_LEN];
            let at = stored_size - TRAILER_LEN as u64;
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut trailer, at).map_err(failed)?;
            (at, Some(trailer))
        } else {
            (stored_size, None)
        };
        return Ok(SnapshotFile {
            db: DbFile::new(file, db_len),
            trailer,
            sha256: None,
            compression: Compression::None,
            stored_size,
            stored_sha256: None,
            encrypted: false,
            spool: None,
        });
    }
    let name = path.display().to_string();
    let spool = Spool::with_options(spool_dir, options).map_err(spool_error(&name, spool_dir))?;
    let tap = spool.stored_tap();
    tap.update(&head).map_err(spool_error(&name, spool_dir))?;
    let input = BufReader::with_capacity(
        PIECE,
        std::io::Cursor::new(head).chain(Tapped { inner: file, tap }),
    );
    if encrypted {
        spool_encrypted(name, input, stored_size, spool, spool_dir, identities)
    } else {
        spool_zstd(name, input, stored_size, spool, spool_dir)
    }
}

/// A reader whose bytes also go to a spool's hash of the bytes as stored.
struct Tapped<R> {
    inner: R,
    tap: StoredTap,
}

impl<R: Read> Read for Tapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tap.update(&buf[..n])?;
        Ok(n)
    }
}

/// Decompresses a local zstd file into `spool`.
fn spool_zstd(
    name: String,
    input: impl std::io::BufRead,
    stored_size: u64,
    mut spool: Spool,
    spool_dir: Option<&Path>,
) -> Result<SnapshotFile> {
    let mut decoder =
        zstd::stream::read::Decoder::with_buffer(input).map_err(|source| Error::Decompress {
            name: name.clone(),
            source,
        })?;
    match spool.read_from(&mut decoder) {
        Ok(()) => {}
        Err(Ok(source)) => return Err(Error::Decompress { name, source }),
        Err(Err(source)) => return Err(spool_error(&name, spool_dir)(source)),
    }
    drop(decoder);
    spool
        .finish(Compression::Zstd, stored_size, false)
        .map_err(spool_error(&name, spool_dir))
}

/// The error of writing the spool of `name` in `spool_dir`: [`Error::TooLarge`] when the
/// snapshot unpacked past its limit, else a write error naming the dir.
pub fn spool_error(name: &str, spool_dir: Option<&Path>) -> impl Fn(std::io::Error) -> Error {
    let path = spool_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
        .display()
        .to_string();
    let name = name.to_string();
    move |source| {
        if let Some(limit) = crate::limit::limit_exceeded(&source) {
            return Error::TooLarge {
                name: name.clone(),
                source: limit,
            };
        }
        if let Some(bad) = source
            .get_ref()
            .and_then(|e| e.downcast_ref::<crate::limit::BadMaxDbSize>())
        {
            return Error::InvalidSetting(bad.clone());
        }
        Error::WriteFile {
            path: path.clone(),
            source,
        }
    }
}

/// Decrypts (and decompresses) a local age file into `spool`.
fn spool_encrypted(
    name: String,
    input: impl std::io::BufRead,
    stored_size: u64,
    spool: Spool,
    spool_dir: Option<&Path>,
    identities: &Identities,
) -> Result<SnapshotFile> {
    let mut plain = decrypting_reader(input, identities).map_err(|e| match e {
        DecryptFailure::NoMatchingIdentity => Error::WrongIdentity {
            name: name.clone(),
            recipients: Vec::new(),
        },
        DecryptFailure::Damaged(e) => Error::Damaged {
            name: name.clone(),
            source: Box::new(e),
        },
    })?;
    let mut unpack = Unpack::new(spool, None);
    let mut buf = vec![0u8; PIECE];
    loop {
        let n = match plain.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(Error::Damaged {
                    name,
                    source: Box::new(e),
                });
            }
        };
        unpack
            .write_all(&buf[..n])
            .map_err(|source| unpack_error(&name, source))?;
    }
    drop(plain);
    let (spool, compression) = unpack
        .finish()
        .map_err(|source| unpack_error(&name, source))?;
    spool
        .finish(compression, stored_size, true)
        .map_err(spool_error(&name, spool_dir))
}

/// The error of unpacking `name`: [`Error::TooLarge`] when it went past its limit.
pub fn unpack_error(name: &str, source: std::io::Error) -> Error {
    match crate::limit::limit_exceeded(&source) {
        Some(limit) => Error::TooLarge {
            name: name.to_string(),
            source: limit,
        },
        None => Error::Decompress {
            name: name.to_string(),
            source,
        },
    }
}

/// SHA-256 (hex) of everything `source` holds, read in large sequential pieces.
pub fn sha256_of<S: PageSource + ?Sized>(source: &S) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let size = source.size();
    let mut at = 0u64;
    while at < size {
        let n = usize::try_from((size - at).min(CHUNK as u64)).unwrap_or(CHUNK);
        source.read_exact_at(&mut buf[..n], at)?;
        hasher.update(&buf[..n]);
        at += n as u64;
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    #[test]
    fn the_trailer_is_held_back_whatever_the_pieces() {
        let db: Vec<u8> = (0..1024u32).map(|i| i as u8).collect();
        let trailer = Sha256::digest(&db);
        let mut snapshot = db.clone();
        snapshot.extend_from_slice(&trailer);
        for piece in [1, 7, 31, 32, 33, 500, 5000] {
            let mut hasher = TrailerHasher::default();
            for chunk in snapshot.chunks(piece) {
                hasher.update(chunk);
            }
            let (len, digest, held) = hasher.finish();
            assert_eq!((len, digest.as_str()), (1024, sha(&db).as_str()), "{piece}");
            assert_eq!(held.as_ref().map(|t| &t[..]), Some(&trailer[..]));
            // Without a trailer, the last 32 bytes are part of the db.
            let mut hasher = TrailerHasher::default();
            for chunk in db.chunks(piece) {
                hasher.update(chunk);
            }
            assert_eq!(hasher.finish(), (1024, sha(&db), None), "{piece}");
        }
        let mut hasher = TrailerHasher::default();
        hasher.update(b"ab");
        assert_eq!(hasher.finish(), (2, sha(b"ab"), None));
    }

    #[test]
    fn age_files_are_decrypted_with_an_identity_and_refused_without() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..10_240u32).map(|i| (i * 7) as u8).collect();
        let mut with_trailer = payload.clone();
        with_trailer.extend_from_slice(&Sha256::digest(&payload));
        let identity = age::x25519::Identity::generate();
        let recipient = identity.to_public();
        let encryptor =
            age::Encryptor::with_recipients(std::iter::once(&recipient as &dyn age::Recipient))
                .unwrap();
        let mut writer = encryptor.wrap_output(Vec::new()).unwrap();
        writer
            .write_all(&zstd::encode_all(&with_trailer[..], 3).unwrap())
            .unwrap();
        let path = dir.path().join("b.db.zst.age");
        std::fs::write(&path, writer.finish().unwrap()).unwrap();

        assert!(matches!(
            open_snapshot_file(&path, None),
            Err(Error::Encrypted { .. })
        ));
        let mut ids = Identities::none();
        ids.add_text(
            age::secrecy::ExposeSecret::expose_secret(&identity.to_string()),
            "test",
        )
        .unwrap();
        let opened = open_snapshot_file_decrypting(&path, Some(dir.path()), &ids).unwrap();
        assert!(opened.encrypted());
        assert_eq!(
            (opened.db_size(), opened.compression()),
            (10_240, Compression::Zstd)
        );
        assert_eq!(opened.known_sha256(), Some(sha(&payload).as_str()));
        let other = age::x25519::Identity::generate();
        let mut wrong = Identities::none();
        wrong
            .add_text(
                age::secrecy::ExposeSecret::expose_secret(&other.to_string()),
                "test",
            )
            .unwrap();
        assert!(matches!(
            open_snapshot_file_decrypting(&path, None, &wrong),
            Err(Error::WrongIdentity { .. })
        ));
    }

    #[test]
    fn files_are_read_plain_or_zstd() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..10_240u32).map(|i| (i * 7) as u8).collect();
        let mut with_trailer = payload.clone();
        with_trailer.extend_from_slice(&Sha256::digest(&payload));
        let plain = dir.path().join("plain.db");
        std::fs::write(&plain, &with_trailer).unwrap();
        let opened = open_snapshot_file(&plain, None).unwrap();
        assert_eq!(
            (
                opened.db_size(),
                opened.compression(),
                opened.known_sha256()
            ),
            (10_240, Compression::None, None)
        );
        assert_eq!(opened.trailer().unwrap()[..], Sha256::digest(&payload)[..]);
        assert_eq!(sha256_of(opened.db()).unwrap(), sha(&payload));

        let packed = dir.path().join("packed.db.zst");
        std::fs::write(&packed, zstd::encode_all(&with_trailer[..], 3).unwrap()).unwrap();
        let opened = open_snapshot_file(&packed, Some(dir.path())).unwrap();
        assert_eq!(
            (opened.db_size(), opened.compression()),
            (10_240, Compression::Zstd)
        );
        assert_eq!(opened.known_sha256(), Some(sha(&payload).as_str()));
        let mut back = vec![0u8; 10_240];
        opened.db().read_exact_at(&mut back, 0).unwrap();
        assert_eq!(back, payload);
        // The temporary copy has no name in the spool dir.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2);

        let tiny = dir.path().join("tiny");
        std::fs::write(&tiny, b"ab").unwrap();
        assert_eq!(open_snapshot_file(&tiny, None).unwrap().db_size(), 2);
        assert!(matches!(
            open_snapshot_file(&dir.path().join("missing"), None),
            Err(Error::ReadFile { .. })
        ));
        // A damaged zstd frame is a decompression error.
        let mut broken = zstd::encode_all(&payload[..], 3).unwrap();
        broken.truncate(broken.len() / 2);
        std::fs::write(&packed, broken).unwrap();
        assert!(matches!(
            open_snapshot_file(&packed, None),
            Err(Error::Decompress { .. })
        ));
    }

    /// A zstd file of a few KiB that decompresses to 64 MiB, read with a manifest's db size
    /// of 1 MiB (plain zstd and inside age): refused as too large at once, nothing left in
    /// the spool dir.
    #[test]
    fn a_zstd_bomb_stops_at_the_db_size_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let spool_dir = dir.path().join("spool");
        std::fs::create_dir(&spool_dir).unwrap();
        let bomb = zstd::encode_all(&vec![0u8; 64 << 20][..], 3).unwrap();
        assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
        let identity = age::x25519::Identity::generate();
        let recipient = identity.to_public();
        let encryptor =
            age::Encryptor::with_recipients(std::iter::once(&recipient as &dyn age::Recipient))
                .unwrap();
        let mut writer = encryptor.wrap_output(Vec::new()).unwrap();
        writer.write_all(&bomb).unwrap();
        let sealed = writer.finish().unwrap();
        let mut ids = Identities::none();
        ids.add_text(
            age::secrecy::ExposeSecret::expose_secret(&identity.to_string()),
            "test",
        )
        .unwrap();
        for (name, bytes) in [("bomb.db.zst", bomb), ("bomb.db.zst.age", sealed)] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let options = SpoolOptions {
                db_size: Some(1 << 20),
                ..SpoolOptions::default()
            };
            let err = open_snapshot_file_with(&path, Some(&spool_dir), &ids, options)
                .map(|_| ())
                .unwrap_err();
            assert!(matches!(err, Error::TooLarge { .. }), "{name}: {err:?}");
            let text = err.to_string();
            assert!(text.contains("1048576 bytes its manifest"), "{text}");
            assert!(text.contains("nothing was kept"), "{text}");
            assert_eq!(std::fs::read_dir(&spool_dir).unwrap().count(), 0, "{name}");
        }
    }
}
