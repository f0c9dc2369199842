//! Writing a snapshot's bytes into a file in one pass, as a pipeline: the caller's thread
//! reads, decrypts and decompresses into pieces and writes each into the file while it is
//! still in the CPU's cache (the kernel's page cache takes it); a second thread hashes them
//! (the bytes as stored, and the db) and holds etcd's trailer back. Memory stays bounded: at
//! most [`POOL`] pieces of [`PIECE`] bytes are in flight.
//!
//! The file is unnamed (`O_TMPFILE`, mode 0600, gone when closed, even after a crash). A
//! restore gives it its name in the staging dir ([`crate::SnapshotFile::take_into`]): the
//! bytes are written once, where they stay.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

use bbolt::DbFile;

use crate::file::{Compression, SnapshotFile, TRAILER_LEN, TrailerHasher};
use crate::limit::{UnpackLimit, unpack_limit};

/// Bytes of one piece handed to the hashing thread: small enough to stay in a core's cache
/// between being decompressed and being written.
pub const PIECE: usize = 256 << 10;
/// Pieces in flight at most (memory: `POOL * PIECE`).
pub const POOL: usize = 32;

/// What a spool computes on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpoolOptions {
    /// The db's SHA-256 (what etcd's trailer holds); without it the db is only written (a
    /// reader computes it later if it needs it, say a status without `skip_hash_check`).
    pub hash_db: bool,
    /// The SHA-256 of the bytes as stored (compressed, encrypted), fed through
    /// [`Spool::stored_tap`]: what a manifest records.
    pub hash_stored: bool,
    /// Start writing the bytes to disk as they come (a sync on a thread of its own every
    /// 64 MiB), for a spool that becomes a restored db: its final sync then has little left
    /// to write. A spool thrown away after reading (a status) does not: its pages never need
    /// to reach the disk.
    pub write_back: bool,
    /// The db's size, from the snapshot's manifest: the spool takes no byte past it and etcd's
    /// trailer. `None`: the ceiling ([`crate::limit::max_db_size`]).
    pub db_size: Option<u64>,
}

/// Bytes a spool that writes back ([`SpoolOptions::write_back`]) writes between two syncs.
#[cfg(not(test))]
const WRITE_BACK_EVERY: u64 = 64 << 20;
/// Small in unit tests, so that their spools do sync while they are written.
#[cfg(test)]
const WRITE_BACK_EVERY: u64 = 1 << 20;

impl Default for SpoolOptions {
    fn default() -> Self {
        SpoolOptions {
            hash_db: true,
            hash_stored: false,
            write_back: false,
            db_size: None,
        }
    }
}

/// The pieces (each [`PIECE`] bytes long, zeroed once), taken by the caller's thread and
/// given back by the hashing thread. When that thread stops early it breaks the pool, so
/// nobody waits for a piece that will never come back.
struct Pool {
    state: Mutex<PoolState>,
    freed: Condvar,
}

struct PoolState {
    free: Vec<Vec<u8>>,
    allocated: usize,
    broken: bool,
}

impl Pool {
    fn new() -> Arc<Pool> {
        Arc::new(Pool {
            state: Mutex::new(PoolState {
                free: Vec::new(),
                allocated: 0,
                broken: false,
            }),
            freed: Condvar::new(),
        })
    }

    /// A piece, waiting for one when all are in flight; `None` when the pipeline broke.
    fn take(&self) -> Option<Vec<u8>> {
        let mut state = self.state.lock().ok()?;
        loop {
            if state.broken {
                return None;
            }
            if let Some(piece) = state.free.pop() {
                return Some(piece);
            }
            if state.allocated < POOL {
                state.allocated += 1;
                return Some(vec![0u8; PIECE]);
            }
            state = self.freed.wait(state).ok()?;
        }
    }

    fn give(&self, piece: Vec<u8>) {
        if let Ok(mut state) = self.state.lock() {
            state.free.push(piece);
        }
        self.freed.notify_one();
    }

    fn break_up(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.broken = true;
        }
        self.freed.notify_all();
    }
}

/// Breaks the pool when the hashing thread ends without its [`Piece::End`] (a panic).
struct BreakOnDrop(Arc<Pool>, bool);

impl Drop for BreakOnDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.break_up();
        }
    }
}

enum Piece {
    /// The first bytes of a piece, as stored: to hash.
    Stored(Vec<u8>, usize),
    /// The first bytes of a piece of the db (etcd's trailer at the very end): to hash.
    Db(Vec<u8>, usize),
    /// Nothing comes after.
    End,
}

/// What the hashing thread found.
struct Hashed {
    db_len: u64,
    db_sha256: Option<String>,
    trailer: Option<[u8; TRAILER_LEN]>,
    stored_sha256: Option<String>,
}

fn broken() -> std::io::Error {
    std::io::Error::other("the spool's hashing thread stopped")
}

/// A piece being filled.
struct Filling {
    piece: Option<Vec<u8>>,
    filled: usize,
}

impl Filling {
    fn new() -> Self {
        Filling {
            piece: None,
            filled: 0,
        }
    }

    /// The room left in the piece (taken from `pool` when there is none yet).
    fn room(&mut self, pool: &Pool) -> std::io::Result<&mut [u8]> {
        if self.piece.is_none() {
            self.piece = Some(pool.take().ok_or_else(broken)?);
            self.filled = 0;
        }
        match &mut self.piece {
            Some(piece) => Ok(&mut piece[self.filled..]),
            None => Err(broken()),
        }
    }

    /// The piece, when full (or `force`d and not empty), with its length.
    fn full(&mut self, force: bool) -> Option<(Vec<u8>, usize)> {
        let done = self
            .piece
            .as_ref()
            .is_some_and(|p| self.filled == p.len() || (force && self.filled > 0));
        if !done {
            return None;
        }
        let filled = std::mem::take(&mut self.filled);
        self.piece.take().map(|p| (p, filled))
    }
}

/// Feeds the bytes as stored to a spool's hashing thread (see [`SpoolOptions::hash_stored`]);
/// a clone feeds the same hash. Cheap to call with small pieces: they are gathered.
#[derive(Clone)]
pub struct StoredTap(Option<Arc<Mutex<Gather>>>);

struct Gather {
    filling: Filling,
    to_hasher: SyncSender<Piece>,
    pool: Arc<Pool>,
}

impl Gather {
    fn send(&mut self, force: bool) -> std::io::Result<()> {
        match self.filling.full(force) {
            Some((piece, len)) => self
                .to_hasher
                .send(Piece::Stored(piece, len))
                .map_err(|_| broken()),
            None => Ok(()),
        }
    }
}

impl StoredTap {
    /// Takes the next bytes as stored.
    pub fn update(&self, mut bytes: &[u8]) -> std::io::Result<()> {
        let Some(gather) = &self.0 else {
            return Ok(());
        };
        let mut gather = gather.lock().map_err(|_| broken())?;
        let gather = &mut *gather;
        while !bytes.is_empty() {
            let room = gather.filling.room(&gather.pool)?;
            let n = room.len().min(bytes.len());
            room[..n].copy_from_slice(&bytes[..n]);
            gather.filling.filled += n;
            bytes = &bytes[n..];
            gather.send(false)?;
        }
        Ok(())
    }

    fn flush(&self) -> std::io::Result<()> {
        match &self.0 {
            Some(gather) => gather.lock().map_err(|_| broken())?.send(true),
            None => Ok(()),
        }
    }
}

/// A snapshot's db written into an unnamed file as it comes ([`Write`], or
/// [`Spool::read_from`]), hashed and its trailer held back on a second thread:
/// [`Spool::finish`] makes it a [`SnapshotFile`].
pub struct Spool {
    file: File,
    filling: Filling,
    pool: Arc<Pool>,
    to_hasher: Option<SyncSender<Piece>>,
    hasher: Option<JoinHandle<Hashed>>,
    tap: StoredTap,
    linkable: bool,
    write_back: Option<WriteBack>,
    /// The most bytes the file takes ([`SpoolOptions::db_size`]).
    limit: UnpackLimit,
    /// Bytes written to the file.
    written: u64,
}

/// The thread that syncs a spool's file while it is written (see [`SpoolOptions::write_back`]).
struct WriteBack {
    /// Asks for a sync (never waits: one already asked for is enough).
    kick: SyncSender<()>,
    syncing: JoinHandle<std::io::Result<()>>,
    /// Bytes written since the last kick.
    since: u64,
}

impl WriteBack {
    fn start(file: &File) -> std::io::Result<Self> {
        let file = file.try_clone()?;
        let (kick, kicked) = sync_channel::<()>(1);
        let syncing = std::thread::Builder::new()
            .name("spool-sync".into())
            .spawn(move || {
                for () in kicked {
                    file.sync_data()?;
                }
                Ok(())
            })?;
        Ok(WriteBack {
            kick,
            syncing,
            since: 0,
        })
    }

    fn wrote(&mut self, len: usize) {
        self.since += len as u64;
        if self.since >= WRITE_BACK_EVERY {
            self.since = 0;
            // Full: a sync is asked for already. Gone: it failed, which `end` reports.
            let _ = self.kick.try_send(());
        }
    }

    /// Waits for the thread; a sync that failed is an error of the spool's (the kernel
    /// reports a write-back error once per open file, so it must not be lost here).
    fn end(self) -> std::io::Result<()> {
        drop(self.kick);
        match self.syncing.join() {
            Ok(result) => result,
            Err(_) => Err(std::io::Error::other("the spool's sync thread panicked")),
        }
    }
}

/// An unnamed file in `dir` (default: the system's temporary dir), mode 0600: `O_TMPFILE`
/// where the filesystem has it (it can be given a name later), else a file removed at once.
fn unnamed_file(dir: Option<&Path>) -> std::io::Result<(File, bool)> {
    let dir = dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
    etcd_common::private::unnamed_file_in(&dir)
}

impl Spool {
    /// A new spool in `dir` (default: the system's temporary dir), hashing the db on the way.
    pub fn new(dir: Option<&Path>) -> std::io::Result<Self> {
        Spool::with_options(dir, SpoolOptions::default())
    }

    /// A new spool in `dir` (default: the system's temporary dir) computing what `options`
    /// ask on the way.
    pub fn with_options(dir: Option<&Path>, options: SpoolOptions) -> std::io::Result<Self> {
        let limit = unpack_limit(options.db_size)?;
        let (file, linkable) = unnamed_file(dir)?;
        let pool = Pool::new();
        let (to_hasher, hasher_in) = sync_channel::<Piece>(POOL + 1);
        let hasher = {
            let pool = pool.clone();
            std::thread::Builder::new()
                .name("spool-hash".into())
                .spawn(move || hash_pieces(options, hasher_in, pool))?
        };
        let tap = StoredTap(options.hash_stored.then(|| {
            Arc::new(Mutex::new(Gather {
                filling: Filling::new(),
                to_hasher: to_hasher.clone(),
                pool: pool.clone(),
            }))
        }));
        let write_back = if options.write_back {
            Some(WriteBack::start(&file)?)
        } else {
            None
        };
        Ok(Spool {
            file,
            filling: Filling::new(),
            pool,
            to_hasher: Some(to_hasher),
            hasher: Some(hasher),
            tap,
            linkable,
            write_back,
            limit,
            written: 0,
        })
    }

    /// Where the bytes as stored go to be hashed (a no-op unless
    /// [`SpoolOptions::hash_stored`]).
    pub fn stored_tap(&self) -> StoredTap {
        self.tap.clone()
    }

    /// Writes the piece when it is full (or `force`d), then hands it to the hashing thread.
    fn send(&mut self, force: bool) -> std::io::Result<()> {
        let Some((piece, len)) = self.filling.full(force) else {
            return Ok(());
        };
        // Nothing past the limit reaches the file (a zstd bomb stops at its first piece too
        // many).
        if let Err(e) = self
            .limit
            .check(self.written, len)
            .and_then(|()| self.file.write_all(&piece[..len]))
        {
            self.pool.give(piece);
            return Err(e);
        }
        self.written += len as u64;
        if let Some(write_back) = &mut self.write_back {
            write_back.wrote(len);
        }
        match &self.to_hasher {
            Some(to) => to.send(Piece::Db(piece, len)).map_err(|_| broken()),
            None => Err(broken()),
        }
    }

    /// Reads `from` to its end straight into the spool's pieces (no copy in between); a
    /// read error is returned as `Err(Ok(e))`, a write error as `Err(Err(e))`.
    pub fn read_from(
        &mut self,
        from: &mut impl Read,
    ) -> Result<(), Result<std::io::Error, std::io::Error>> {
        loop {
            let room = self.filling.room(&self.pool).map_err(Err)?;
            let n = match from.read(room) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Ok(e)),
            };
            self.filling.filled += n;
            self.send(false).map_err(Err)?;
        }
    }

    /// The snapshot spooled: `compression` and `encrypted` as it was stored, `stored_size`
    /// bytes. The file is cut to the db (etcd's trailer off it).
    pub fn finish(
        mut self,
        compression: Compression,
        stored_size: u64,
        encrypted: bool,
    ) -> std::io::Result<SnapshotFile> {
        self.send(true)?;
        self.tap.flush()?;
        let ended = self
            .to_hasher
            .take()
            .is_some_and(|to| to.send(Piece::End).is_ok());
        self.tap = StoredTap(None);
        let hashed = match self.hasher.take().map(JoinHandle::join) {
            Some(Ok(hashed)) if ended => hashed,
            _ => return Err(broken()),
        };
        if let Some(write_back) = self.write_back.take() {
            write_back.end()?;
        }
        let file = self.file.try_clone()?;
        file.set_len(hashed.db_len)?;
        let mut opened = SnapshotFile::spooled(
            DbFile::new(file, hashed.db_len),
            hashed.trailer,
            hashed.db_sha256,
            compression,
            stored_size,
            encrypted,
            self.linkable,
        );
        if let Some(sha) = hashed.stored_sha256 {
            opened = opened.with_stored_sha256(sha);
        }
        Ok(opened)
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.filling.room(&self.pool)?;
        let n = room.len().min(buf.len());
        room[..n].copy_from_slice(&buf[..n]);
        self.filling.filled += n;
        self.send(false)?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // Unfinished: the hashing thread stops (its input gone), the unnamed file is closed.
        self.pool.break_up();
    }
}

/// The hashing thread: every piece hashed (the db's with its trailer held back) and given
/// back, until [`Piece::End`].
fn hash_pieces(options: SpoolOptions, pieces: Receiver<Piece>, pool: Arc<Pool>) -> Hashed {
    let mut guard = BreakOnDrop(pool.clone(), false);
    let mut db = if options.hash_db {
        TrailerHasher::default()
    } else {
        TrailerHasher::counting()
    };
    let mut stored = options.hash_stored.then(Sha256::new);
    while let Ok(piece) = pieces.recv() {
        match piece {
            Piece::Stored(bytes, len) => {
                if let Some(hasher) = stored.as_mut() {
                    hasher.update(&bytes[..len]);
                }
                pool.give(bytes);
            }
            Piece::Db(bytes, len) => {
                db.update(&bytes[..len]);
                pool.give(bytes);
            }
            Piece::End => {
                guard.1 = true;
                break;
            }
        }
    }
    let (db_len, db_sha256, trailer) = db.finish_hashed();
    Hashed {
        db_len,
        db_sha256,
        trailer,
        stored_sha256: stored.map(|h| hex::encode(h.finalize())),
    }
}

/// Gives the unnamed file `file` the name `to` (a hard link through `/proc/self/fd`): only
/// an `O_TMPFILE` file on `to`'s filesystem can be; `Ok(false)` when this one cannot.
pub(crate) fn link_unnamed(file: &File, to: &Path) -> std::io::Result<bool> {
    use rustix::fs::{AtFlags, CWD, linkat};
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    match linkat(CWD, proc_path.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::XDEV | rustix::io::Errno::NOENT | rustix::io::Errno::PERM) => {
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbolt::PageSource;

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    fn snapshot_bytes(len: usize) -> (Vec<u8>, Vec<u8>) {
        let db: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let mut with = db.clone();
        with.extend_from_slice(&Sha256::digest(&db));
        (db, with)
    }

    #[test]
    fn a_spool_writes_hashes_and_cuts_the_trailer_off_whatever_the_pieces() {
        let dir = tempfile::tempdir().unwrap();
        // Several pieces, and more than the pool holds.
        let (db, with) = snapshot_bytes(PIECE * (POOL + 3) + 4096);
        for write_size in [PIECE, 4096 * 3 + 1, PIECE * 2 + 5] {
            // Some of them synced while written (several times, with the unit tests' interval).
            let options = SpoolOptions {
                hash_db: true,
                hash_stored: true,
                write_back: write_size != PIECE,
                db_size: None,
            };
            let mut spool = Spool::with_options(Some(dir.path()), options).unwrap();
            let tap = spool.stored_tap();
            for chunk in with.chunks(write_size) {
                tap.update(&chunk[..chunk.len() / 2]).unwrap();
                tap.update(&chunk[chunk.len() / 2..]).unwrap();
                spool.write_all(chunk).unwrap();
            }
            let opened = spool.finish(Compression::None, 7, false).unwrap();
            assert_eq!(opened.db_size(), db.len() as u64);
            assert_eq!(opened.known_sha256(), Some(sha(&db).as_str()));
            assert_eq!(opened.stored_sha256(), Some(sha(&with).as_str()));
            assert_eq!(opened.trailer().unwrap()[..], Sha256::digest(&db)[..]);
            assert_eq!(
                opened.db().file().metadata().unwrap().len(),
                db.len() as u64
            );
            let mut back = vec![0u8; db.len()];
            opened.db().read_exact_at(&mut back, 0).unwrap();
            assert!(back == db, "{write_size}");
        }
        // Nothing named was left in the spool dir.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn without_hashes_a_spool_only_writes() {
        let (db, with) = snapshot_bytes(25 * 4096);
        let options = SpoolOptions {
            hash_db: false,
            hash_stored: false,
            write_back: false,
            db_size: None,
        };
        let mut spool = Spool::with_options(None, options).unwrap();
        spool.stored_tap().update(&with).unwrap();
        spool.write_all(&with).unwrap();
        let opened = spool.finish(Compression::Zstd, 1, false).unwrap();
        assert_eq!(
            (
                opened.db_size(),
                opened.known_sha256(),
                opened.stored_sha256()
            ),
            (db.len() as u64, None, None)
        );
        assert!(opened.trailer().is_some());
        assert_eq!(opened.db_sha256().unwrap(), sha(&db));
    }

    #[test]
    fn a_spooled_db_is_given_a_name_once_without_a_copy() {
        let dir = tempfile::tempdir().unwrap();
        let (db, with) = snapshot_bytes(3 * 4096);
        let mut spool = Spool::new(Some(dir.path())).unwrap();
        spool.write_all(&with).unwrap();
        let opened = spool.finish(Compression::Zstd, 1, false).unwrap();
        let to = dir.path().join("db");
        assert!(opened.take_into(&to).unwrap());
        assert_eq!(std::fs::read(&to).unwrap(), db);
        assert!(opened.consumed());
        // Once only: its db is the named file's now.
        assert!(opened.take_into(&dir.path().join("again")).is_err());
    }

    #[test]
    fn a_spool_reads_straight_into_its_pieces_and_reports_a_full_disk() {
        let (db, with) = snapshot_bytes(PIECE * 3 + 8192);
        let mut spool = Spool::new(None).unwrap();
        spool.read_from(&mut &with[..]).unwrap();
        let opened = spool.finish(Compression::Zstd, 1, false).unwrap();
        assert_eq!(opened.known_sha256(), Some(sha(&db).as_str()));
        // /dev/full: every write fails with ENOSPC, reported as the spool's write error.
        let mut spool = Spool::new(None).unwrap();
        spool.file = File::options().write(true).open("/dev/full").unwrap();
        match spool.read_from(&mut &with[..]) {
            Err(Err(e)) => assert_eq!(e.raw_os_error(), Some(28), "{e}"),
            other => panic!("{:?}", other.err()),
        }
    }

    /// The spool takes no byte past the db size a manifest records (and the trailer): a db
    /// of exactly that size is spooled, one byte more is refused at the piece that carries
    /// it, and the file never holds more than the limit, through either way in.
    #[test]
    fn a_spool_takes_nothing_past_the_db_size_it_is_given() {
        let db_size = 3 * PIECE as u64 + 4096;
        let limit = db_size + TRAILER_LEN as u64;
        let options = |db_size| SpoolOptions {
            db_size: Some(db_size),
            ..SpoolOptions::default()
        };
        let (db, with) = snapshot_bytes(db_size as usize);
        let mut spool = Spool::with_options(None, options(db_size)).unwrap();
        spool.write_all(&with).unwrap();
        let opened = spool.finish(Compression::Zstd, 1, false).unwrap();
        assert_eq!(opened.known_sha256(), Some(sha(&db).as_str()));

        let endless = vec![0u8; 10 * PIECE];
        for through_reads in [false, true] {
            let mut spool = Spool::with_options(None, options(db_size)).unwrap();
            let err = if through_reads {
                match spool.read_from(&mut std::io::Read::chain(&endless[..], &endless[..])) {
                    Err(Err(e)) => e,
                    other => panic!("{:?}", other.err()),
                }
            } else {
                (0..20)
                    .find_map(|_| spool.write_all(&endless[..PIECE + 1]).err())
                    .expect("refused")
            };
            let exceeded = crate::limit::limit_exceeded(&err).expect("the limit");
            assert_eq!(exceeded.0.bytes, limit);
            assert!(spool.written <= limit, "{} written", spool.written);
            assert!(spool.file.metadata().unwrap().len() <= limit);
        }
    }
}
