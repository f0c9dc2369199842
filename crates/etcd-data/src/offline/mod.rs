//! etcdutl's offline tools, natively, on a stopped member's data dir or a snapshot file:
//! [`hash_kv`] (etcdutl 3.6's `hashkv`: the hash `endpoint hashkv` gives for the member at
//! that revision) and [`defrag_data_dir`] (etcdutl's `defrag --data-dir`: the db rewritten
//! compactly, atomically). A data dir is refused while a member runs on it (bbolt's lock).

mod defrag;
mod hashkv;

use std::fs::File;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

use crate::error::{Error, Result};

pub use defrag::{DefragRequest, DefragResult, defrag_data_dir};
pub use hashkv::{HashKv, HashKvRequest, hash_kv, hash_kv_data_dir};

/// `DIR/member/snap/db`.
pub fn data_dir_db(data_dir: &Path) -> PathBuf {
    data_dir.join("member").join("snap").join("db")
}

/// Refuses ([`Error::MemberRunning`], naming `path`) a db file a running etcd holds locked
/// (a live member's `member/snap/db` given as a snapshot file), as a data dir is refused: its
/// pages change under the reader. Only probes: takes bbolt's shared lock and lets it go. A
/// file that cannot be opened, or a filesystem without locks, passes (the read that follows
/// says what is wrong).
pub fn refuse_locked_db(path: &Path) -> Result<()> {
    let Ok(file) = crate::file::open_regular(path) else {
        return Ok(());
    };
    match flock(&file, FlockOperation::NonBlockingLockShared) {
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(Error::MemberRunning {
            path: path.display().to_string(),
        }),
        _ => Ok(()),
    }
}

/// Opens the db of the stopped member at `data_dir` (`write`: for rewriting) and holds a
/// lock on it as bbolt does, so etcd cannot start on it meanwhile; refused
/// ([`Error::MemberRunning`]) while etcd holds it. A filesystem without locks cannot tell,
/// and passes.
pub(crate) fn open_stopped_db(data_dir: &Path, write: bool) -> Result<(File, PathBuf)> {
    let path = data_dir_db(data_dir);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .open(&path)
        .map_err(|source| Error::ReadFile {
            path: path.display().to_string(),
            source,
        })?;
    let operation = if write {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    match flock(&file, operation) {
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(Error::MemberRunning {
            path: data_dir.display().to_string(),
        }),
        _ => Ok((file, path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_db_locked_by_another_holder_is_refused_and_passes_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        std::fs::write(&db, b"bolt").unwrap();
        refuse_locked_db(&db).unwrap();
        // etcd (bbolt, read-write) holds an exclusive lock while it runs.
        let holder = File::open(&db).unwrap();
        flock(&holder, FlockOperation::NonBlockingLockExclusive).unwrap();
        match refuse_locked_db(&db) {
            Err(Error::MemberRunning { path }) => assert_eq!(path, db.display().to_string()),
            other => panic!("{other:?}"),
        }
        drop(holder);
        refuse_locked_db(&db).unwrap();
        refuse_locked_db(&dir.path().join("absent")).unwrap();
    }
}
