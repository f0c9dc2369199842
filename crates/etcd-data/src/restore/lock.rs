//! Whether etcd runs on a data dir: bbolt holds an exclusive `flock(2)` on `member/snap/db`
//! for as long as etcd has the db open (`bolt.Open` without `ReadOnly` takes `LOCK_EX`), so a
//! non-blocking shared lock that would block means a member is running there.

use std::fs::File;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

use super::RestoreError;

/// `DIR/member/snap/db`.
pub fn db_of(data_dir: &Path) -> PathBuf {
    data_dir.join("member").join("snap").join("db")
}

/// Takes a shared lock on the open db `file` of the data dir `dir` without waiting: refused
/// when a running etcd holds its lock. The lock lasts as long as `file` (or a clone of it) is
/// open, so etcd cannot start on the db while it is read. A filesystem without locks (some
/// network ones) cannot tell, and passes.
pub fn lock_shared(file: &File, dir: &Path) -> Result<(), RestoreError> {
    match flock(file, FlockOperation::NonBlockingLockShared) {
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(RestoreError::MemberRunning {
            path: dir.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// Refuses `data_dir` when a member runs on it (its db is locked); absent db: nothing to say.
pub fn refuse_if_running(data_dir: &Path) -> Result<(), RestoreError> {
    match File::open(db_of(data_dir)) {
        Ok(file) => lock_shared(&file, data_dir),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_db_locked_as_bbolt_locks_it_is_a_running_member() {
        let dir = tempfile::tempdir().unwrap();
        let db = db_of(dir.path());
        std::fs::create_dir_all(db.parent().unwrap()).unwrap();
        std::fs::write(&db, b"db").unwrap();
        refuse_if_running(dir.path()).unwrap();
        // What etcd's bbolt does: an exclusive lock on its own open file.
        let held = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&db)
            .unwrap();
        flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
        let err = refuse_if_running(dir.path()).unwrap_err().to_string();
        assert!(err.contains("is running"), "{err}");
        drop(held);
        refuse_if_running(dir.path()).unwrap();
        refuse_if_running(&dir.path().join("missing")).unwrap();
    }
}
