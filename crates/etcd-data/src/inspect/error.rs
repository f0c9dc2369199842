//! What can stop a data dir inspection.

/// Why a data dir cannot be inspected. Each message says what was wrong and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// The path does not exist or is not a directory.
    #[error("'{path}' is not a directory: give the member's data dir (etcd's --data-dir)")]
    NoSuchDir {
        /// The path given.
        path: String,
    },
    /// The directory has no `member/`: not (yet) an etcd data dir.
    #[error(
        "'{path}' is not an etcd data dir (it has no member/ directory): give the dir etcd's --data-dir names, the one holding member/"
    )]
    NotADataDir {
        /// The path given.
        path: String,
    },
    /// `member/wal` is missing or holds no segment.
    #[error(
        "'{path}' holds no WAL segment (member/wal/*.wal): if etcd runs with a dedicated --wal-dir, its log is there and this data dir cannot be inspected, copied or moved aside without it (not supported yet); otherwise the member's log is gone: recover from another member or a backup"
    )]
    NoWal {
        /// The WAL dir.
        path: String,
    },
    /// `member/snap/db` is missing.
    #[error("'{path}' is missing: the member has no db; recover from another member or a backup")]
    NoDb {
        /// The db path.
        path: String,
    },
    /// A file or directory cannot be read.
    #[error("cannot read '{path}': {source}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A WAL record is damaged where etcd would refuse to start (not a torn last write).
    #[error(
        "the WAL is damaged: segment '{segment}' at offset {offset}: {reason}; etcd would refuse to start on it: keep this dir as it is and recover from another member or a backup"
    )]
    Corrupt {
        /// The segment file name.
        segment: String,
        /// Byte offset of the record in the segment.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A segment of the sequence is missing.
    #[error(
        "the WAL is incomplete: segment '{found}' follows '{previous}', a segment is missing between them; etcd would refuse to start on it: recover from another member or a backup"
    )]
    SegmentGap {
        /// The segment before the gap.
        previous: String,
        /// The segment after it.
        found: String,
    },
    /// etcd runs on the data dir (it holds the lock of its db or of its last WAL segment).
    #[error(
        "etcd is running on '{path}' (it holds the lock of member/snap/db or of the last WAL segment): stop the member, then run this again"
    )]
    Running {
        /// The data dir.
        path: String,
    },
    /// A file cannot be written.
    #[error("cannot write '{path}': {source}")]
    Write {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The WAL's tail cannot be committed as it stands.
    #[error("not raising the commit index of the WAL in '{path}': {reason}")]
    TailRefused {
        /// The WAL dir.
        path: String,
        /// Why.
        reason: String,
    },
    /// The db cannot be read.
    #[error(transparent)]
    Db(#[from] crate::Error),
}

/// The db's own error keeps its hint and transience; the kind says what a caller may do.
impl etcd_common::Hinted for InspectError {
    fn hint(&self) -> Option<etcd_common::Hint> {
        match self {
            InspectError::Db(e) => e.hint(),
            _ => None,
        }
    }

    fn is_transient(&self) -> bool {
        matches!(self, InspectError::Db(e) if e.is_transient())
    }

    fn kind(&self) -> Option<etcd_common::ErrorKind> {
        use etcd_common::ErrorKind;
        Some(match self {
            InspectError::NoSuchDir { .. }
            | InspectError::NotADataDir { .. }
            | InspectError::NoWal { .. }
            | InspectError::NoDb { .. } => ErrorKind::NotFound,
            InspectError::Corrupt { .. } | InspectError::SegmentGap { .. } => ErrorKind::Damaged,
            InspectError::Running { .. } | InspectError::TailRefused { .. } => ErrorKind::Refused,
            InspectError::Read { .. } | InspectError::Write { .. } => ErrorKind::Other,
            InspectError::Db(e) => return e.kind(),
        })
    }
}
