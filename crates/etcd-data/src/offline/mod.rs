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
