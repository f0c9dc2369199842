//! The error of reading or writing a bbolt db.

/// A db that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BoltError {
    /// The meta pages are unusable: not a bbolt file, damaged, or truncated.
    #[error("not a usable bbolt db: {0}")]
    Meta(String),
    /// A page (0 for an inline bucket's page) is damaged or out of place.
    #[error("page {pgid}: {reason}")]
    Page {
        /// The page ID.
        pgid: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The integrity check found problems.
    #[error("integrity check failed, {} problem(s): {}", problems.len(), problems.join("; "))]
    Check {
        /// One line per problem (at most 100).
        problems: Vec<String>,
    },
    /// The db's bytes could not be read.
    #[error("cannot read {len} bytes at offset {offset}: {reason}")]
    Read {
        /// Where the read started.
        offset: u64,
        /// Bytes asked for.
        len: usize,
        /// The I/O error.
        reason: String,
    },
    /// A new db's bytes could not be written.
    #[error("cannot write {len} bytes at offset {offset}: {reason}")]
    Write {
        /// Where the write started.
        offset: u64,
        /// Bytes to write.
        len: usize,
        /// The I/O error.
        reason: String,
    },
}

impl etcd_common::Hinted for BoltError {
    /// A page or meta page that does not check is damage; a failed read or write is not.
    fn kind(&self) -> Option<etcd_common::ErrorKind> {
        Some(match self {
            BoltError::Meta { .. } | BoltError::Page { .. } | BoltError::Check { .. } => {
                etcd_common::ErrorKind::Damaged
            }
            BoltError::Read { .. } | BoltError::Write { .. } => etcd_common::ErrorKind::Other,
        })
    }
}
