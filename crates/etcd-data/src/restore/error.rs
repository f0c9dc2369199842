//! Why a restore failed.

use std::path::{Path, PathBuf};

use etcd_common::{InvalidOption, OptionId};

/// Why a restore failed. Nothing is left behind at the target when it does.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// Bad input from the user: an option of the restore, named in words (`invalid data dir:
    /// ...`), which is the error's hint ([`RestoreError::invalid_option`]).
    #[error(transparent)]
    InvalidOption(#[from] InvalidOption),
    /// The data dir already holds another etcdops restore (another snapshot or request).
    #[error(
        "'{path}' holds an etcdops restore of another snapshot or request (member {name} of \
         cluster {cluster_id}, restored at {restored_at}); restore only into a new or empty \
         directory, or move this one aside"
    )]
    HoldsOtherRestore {
        /// The data dir.
        path: PathBuf,
        /// The member it was restored as.
        name: String,
        /// The cluster it was restored into.
        cluster_id: String,
        /// When.
        restored_at: String,
    },
    /// The data dir or WAL dir already holds something.
    #[error("'{path}' is not empty; restore only into a new or empty directory")]
    NotEmpty {
        /// The directory.
        path: PathBuf,
    },
    /// Moving aside a restored data dir a member has run on since.
    #[error(
        "'{path}' was restored by etcdops and a member has run on it since (its WAL changed); \
         force it to move it aside anyway"
    )]
    RanSinceRestore {
        /// The data dir.
        path: PathBuf,
    },
    /// etcd runs on the dir: it holds the lock on its db.
    #[error("the member at '{path}' is running (etcd holds a lock on its db); stop it first")]
    MemberRunning {
        /// The data dir.
        path: PathBuf,
    },
    /// The data dir holds an etcdops restore that is no longer whole (or never finished).
    #[error(
        "'{path}' holds an etcdops restore that is incomplete or damaged ({problem}); \
         restore again with the move-aside option to keep it aside and restore anew"
    )]
    Incomplete {
        /// The data dir.
        path: PathBuf,
        /// What is missing or damaged.
        problem: String,
    },
    /// A snapshot without etcd's SHA-256 trailer: its integrity cannot be checked.
    #[error(
        "'{name}' has no SHA-256 trailer (cut off, or a raw member db), so its integrity cannot \
         be checked; restore it with the hash check skipped only if you trust it"
    )]
    NoTrailer {
        /// The snapshot.
        name: String,
    },
    /// Leaving out the raft `.snap` file was asked for a snapshot of a release that reads it
    /// on boot.
    #[error(
        "'{name}' is a snapshot of etcd {release}, which reads the raft .snap file on boot: \
         only a snapshot of etcd 3.7 or later can be restored without it"
    )]
    V2SnapshotNeeded {
        /// The snapshot.
        name: String,
        /// Its release (`3.6`).
        release: String,
    },
    /// The snapshot is damaged or not etcd's.
    #[error(transparent)]
    Snapshot(#[from] crate::Error),
    /// The snapshot could not be fetched or checked against what its source promises (a
    /// store, a manifest): the caller's error, kept as the source.
    #[error("{0}")]
    Fetch(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The restore's guard refused it (OpenShift's operator owns restores here): the
    /// guard's error, kept as the source with its hint. Nothing was written.
    #[error("{0}")]
    Refused(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Rewriting the db failed.
    #[error("cannot rewrite the db of '{name}': {source}")]
    Rewrite {
        /// The snapshot.
        name: String,
        /// What the bbolt layer found.
        source: bbolt::BoltError,
    },
    /// A file or directory could not be written.
    #[error("cannot write '{path}': {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl etcd_common::Hinted for RestoreError {
    fn hint(&self) -> Option<etcd_common::Hint> {
        use etcd_common::{Hint, options};
        match self {
            RestoreError::NoTrailer { .. } => Some(Hint::option(options::SKIP_HASH_CHECK)),
            RestoreError::Incomplete { .. } | RestoreError::HoldsOtherRestore { .. } => {
                Some(Hint::option(options::MOVE_ASIDE))
            }
            RestoreError::RanSinceRestore { .. } => Some(Hint::option(options::FORCE)),
            RestoreError::InvalidOption(e) => e.hint(),
            RestoreError::Snapshot(e) => e.hint(),
            RestoreError::Rewrite { source, .. } => source.hint(),
            _ => None,
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            RestoreError::Snapshot(e) => e.is_transient(),
            _ => false,
        }
    }

    fn kind(&self) -> Option<etcd_common::ErrorKind> {
        use etcd_common::ErrorKind;
        Some(match self {
            RestoreError::InvalidOption(e) => return e.kind(),
            RestoreError::V2SnapshotNeeded { .. } => ErrorKind::InvalidInput,
            // Each has a hint that gets past it (move aside, force, skip the hash check).
            RestoreError::HoldsOtherRestore { .. }
            | RestoreError::NotEmpty { .. }
            | RestoreError::RanSinceRestore { .. }
            | RestoreError::MemberRunning { .. }
            | RestoreError::Incomplete { .. }
            | RestoreError::NoTrailer { .. }
            | RestoreError::Refused(_) => ErrorKind::Refused,
            RestoreError::Snapshot(e) => return e.kind(),
            RestoreError::Rewrite { source, .. } => return source.kind(),
            // The caller's error, its source: its own kind.
            RestoreError::Fetch(_) => return None,
            RestoreError::Io { .. } => ErrorKind::Other,
        })
    }
}

pub(crate) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> RestoreError + '_ {
    move |source| RestoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl RestoreError {
    /// `option` of the restore has a bad value: the message names it in words (`invalid data
    /// dir: ...`), and it is the error's hint.
    pub fn invalid_option(option: OptionId, reason: impl Into<String>) -> RestoreError {
        InvalidOption::new(option, reason)
            .called(option.name.replace('_', " "))
            .into()
    }
}

pub(crate) fn invalid(option: OptionId) -> impl Fn(String) -> RestoreError {
    move |reason| RestoreError::invalid_option(option, reason)
}
