//! The error type of etcd-snapshot.

use etcd_common::{ErrorKind, Hint, Hinted};

/// Result with [`SnapshotError`].
pub type Result<T, E = SnapshotError> = std::result::Result<T, E>;

/// Everything that can go wrong saving, listing, verifying or pruning snapshots.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Talking to etcd failed.
    #[error(transparent)]
    Etcd(#[from] etcd_core::Error),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] etcd_store::StoreError),
    /// Another `backup run` holds (or took over) the writer lock of this cluster's chain.
    #[error("{reason}")]
    RunLocked {
        /// One line naming the lock and its holder (host, process ID, expiry).
        reason: String,
    },
    /// etcd's SHA-256 trailer does not match the db bytes received.
    #[error(
        "the snapshot from {endpoint} is corrupt: etcd's SHA-256 trailer does not match the {size} db bytes received (whose SHA-256 is {actual}); nothing was stored, try again or another member"
    )]
    TrailerMismatch {
        /// Member streamed from.
        endpoint: String,
        /// The trailer etcd sent.
        expected: String,
        /// What we computed.
        actual: String,
        /// db bytes received.
        size: u64,
    },
    /// The stream was too short to be a snapshot.
    #[error(
        "the snapshot stream from {endpoint} ended after {size} bytes, too short for a db; nothing was stored"
    )]
    Truncated {
        /// Member streamed from.
        endpoint: String,
        /// Bytes received.
        size: u64,
    },
    /// A stored backup does not match its manifest or is damaged.
    #[error("backup '{name}' failed verification: {reason}")]
    VerifyFailed {
        /// The object or manifest name.
        name: String,
        /// What did not match.
        reason: String,
    },
    /// A manifest cannot be read.
    #[error("manifest '{name}' is not a valid etcdops manifest: {reason}")]
    BadManifest {
        /// The manifest name.
        name: String,
        /// What was wrong.
        reason: String,
    },
    /// Bad input from the user. When it is an option (`keep_daily`, `chain`), that option is
    /// the error's hint; a positional argument (the backup, the source, the store) has none.
    #[error(transparent)]
    InvalidOption(#[from] etcd_common::InvalidOption),
    /// No suitable member to take the snapshot from.
    #[error("no member can serve a snapshot: {reason}")]
    NoSource {
        /// Why.
        reason: String,
    },
    /// A prune without any retention rule: it would not know what to keep.
    #[error("give at least one retention rule (how many backups to keep, or their maximum age)")]
    NoRetentionRule,
    /// No member could be asked for a snapshot: each one's error, kept.
    #[error("no member can serve a snapshot: {}", member_errors(.problems))]
    NoMemberAnswered {
        /// The endpoint tried and why it failed.
        problems: Vec<(String, SnapshotError)>,
    },
    /// Compression or decompression failed.
    #[error("{operation} failed: {reason}")]
    Codec {
        /// "compress" or "decompress".
        operation: &'static str,
        /// The cause.
        reason: String,
    },
    /// A prune named a cluster the store holds no folder of.
    #[error(
        "no backups of cluster {cluster} in {store}; listing the store shows the clusters it holds"
    )]
    NoSuchCluster {
        /// The cluster named.
        cluster: etcd_core::MemberId,
        /// The store's URL.
        store: String,
    },
    /// A save's object was deleted or replaced in the store before its manifest was in
    /// place (a concurrent prune took it for an orphan): nothing is saved.
    #[error(
        "the backup object '{object}' in {store} was {what} by another process (a concurrent prune with a short orphan grace?) before its manifest was written; its manifest was removed and nothing is saved: save again, and give prunes an orphan grace longer than a save takes"
    )]
    ObjectGoneBeforeManifest {
        /// The object.
        object: String,
        /// The store's URL.
        store: String,
        /// "deleted" or "replaced (N bytes, M expected)".
        what: String,
    },
    /// A snapshot file, its status, or an identity (etcd-data).
    #[error(transparent)]
    Data(#[from] etcd_data::Error),
    /// A backup whose S3 Object Lock retention (recorded in its manifest) still holds: S3
    /// would only hide it behind a delete marker, so it is not deleted.
    #[error(
        "backup {object} is held by its S3 Object Lock ({lock}): it cannot be deleted before that date; delete it after"
    )]
    ObjectLocked {
        /// The backup object.
        object: String,
        /// The retention (`compliance lock until 2026-12-31T23:59:59Z`).
        lock: String,
    },
}

/// Each member's failure on one line.
fn member_errors(problems: &[(String, SnapshotError)]) -> String {
    problems
        .iter()
        .map(|(endpoint, e)| format!("{endpoint}: {e}"))
        .collect::<Vec<_>>()
        .join("; ")
}

impl Hinted for SnapshotError {
    fn hint(&self) -> Option<Hint> {
        match self {
            SnapshotError::Etcd(e) => e.hint(),
            SnapshotError::Store(e) => e.hint(),
            SnapshotError::Data(e) => e.hint(),
            SnapshotError::NoMemberAnswered { problems } => {
                problems.iter().find_map(|(_, e)| e.hint())
            }
            SnapshotError::NoRetentionRule => Some(Hint::any_of(&crate::opts::RETENTION_RULES)),
            SnapshotError::InvalidOption(e) => e.hint(),
            _ => None,
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            SnapshotError::Etcd(e) => e.is_transient(),
            SnapshotError::Store(e) => e.is_transient(),
            SnapshotError::Data(e) => e.is_transient(),
            // A stream cut or damaged on the way: another try (or member) may succeed.
            SnapshotError::TrailerMismatch { .. } | SnapshotError::Truncated { .. } => true,
            SnapshotError::NoMemberAnswered { problems } => {
                problems.iter().all(|(_, e)| e.is_transient())
            }
            _ => false,
        }
    }

    fn kind(&self) -> Option<ErrorKind> {
        Some(match self {
            SnapshotError::Etcd(e) => return e.kind(),
            SnapshotError::Store(e) => return e.kind(),
            SnapshotError::Data(e) => return e.kind(),
            SnapshotError::NoMemberAnswered { problems } => {
                return problems.first().and_then(|(_, e)| e.kind());
            }
            SnapshotError::InvalidOption(e) => return e.kind(),
            SnapshotError::NoRetentionRule => ErrorKind::InvalidInput,
            SnapshotError::RunLocked { .. } | SnapshotError::ObjectLocked { .. } => {
                ErrorKind::Refused
            }
            SnapshotError::TrailerMismatch { .. }
            | SnapshotError::Truncated { .. }
            | SnapshotError::VerifyFailed { .. }
            | SnapshotError::BadManifest { .. } => ErrorKind::Damaged,
            SnapshotError::NoSuchCluster { .. } => ErrorKind::NotFound,
            SnapshotError::NoSource { .. }
            | SnapshotError::Codec { .. }
            | SnapshotError::ObjectGoneBeforeManifest { .. } => ErrorKind::Other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcd_common::options;

    #[test]
    fn members_that_all_failed_keep_their_errors_hints_and_transience() {
        let down = |e: &str| {
            (
                e.to_string(),
                SnapshotError::Etcd(etcd_core::Error::Unreachable {
                    endpoint: e.into(),
                    timeout: std::time::Duration::from_secs(5),
                    reason: "connection refused".into(),
                }),
            )
        };
        let all_down = SnapshotError::NoMemberAnswered {
            problems: vec![down("http://a:2379"), down("http://b:2379")],
        };
        assert!(all_down.is_transient());
        assert!(all_down.to_string().contains("http://b:2379"));
        let with_bad_input = SnapshotError::NoMemberAnswered {
            problems: vec![
                down("http://a:2379"),
                (
                    "http://b:2379".into(),
                    SnapshotError::Data(etcd_data::Error::HashMismatch {
                        name: "x".into(),
                        expected: "1".into(),
                        actual: "2".into(),
                    }),
                ),
            ],
        };
        assert!(!with_bad_input.is_transient());
        assert_eq!(
            with_bad_input.hint(),
            Some(Hint::option(options::SKIP_HASH_CHECK))
        );
        assert!(
            SnapshotError::Truncated {
                endpoint: "e".into(),
                size: 3
            }
            .is_transient()
        );
    }

    #[test]
    fn hints_come_from_the_error_or_the_one_it_wraps() {
        let mismatch = SnapshotError::Data(etcd_data::Error::HashMismatch {
            name: "b".into(),
            expected: "aa".into(),
            actual: "bb".into(),
        });
        assert_eq!(
            mismatch.hint(),
            Some(Hint::option(options::SKIP_HASH_CHECK))
        );
        assert!(!mismatch.to_string().contains("--"), "{mismatch}");
        let wrapped = SnapshotError::Data(etcd_data::Error::WrongIdentity {
            name: "b".into(),
            recipients: vec!["age1aaa".into()],
        });
        assert_eq!(wrapped.hint(), Some(Hint::option(options::IDENTITY)));
        assert!(!wrapped.to_string().contains("--"), "{wrapped}");
        let encrypted = SnapshotError::Data(etcd_data::Error::Encrypted {
            name: "b".into(),
            recipients: Vec::new(),
            stored_ok: false,
        });
        assert_eq!(encrypted.hint(), Some(Hint::option(options::IDENTITY)));
        assert!(!wrapped.is_transient() && !encrypted.is_transient());
    }
}
