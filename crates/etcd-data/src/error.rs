//! The error of reading snapshot files and identities.

use etcd_common::{ErrorKind, Hint, Hinted, options};

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong opening, decrypting or reading a snapshot file, or reading an identity.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A local file could not be read.
    #[error("cannot read '{path}': {source}")]
    ReadFile {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A local file (a temporary copy, an identity file) could not be written.
    #[error("cannot write '{path}': {source}")]
    WriteFile {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A zstd snapshot cannot be decompressed.
    #[error("decompress failed: {name}: {source}")]
    Decompress {
        /// The file.
        name: String,
        /// What the decompressor (or the temporary copy) said.
        source: std::io::Error,
    },
    /// An age file is damaged or was changed: it fails authentication.
    #[error(
        "decrypt failed: '{name}' is damaged or was changed (age authentication failed: {source})"
    )]
    Damaged {
        /// The file.
        name: String,
        /// What age said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A snapshot unpacks to more bytes than its db may have (its manifest's `db_size`, or the
    /// ceiling without one): stopped at the first byte past it, nothing kept.
    #[error("'{name}' was not read: {source}; nothing was kept")]
    TooLarge {
        /// The file or object.
        name: String,
        /// The limit that was reached.
        source: crate::limit::LimitExceeded,
    },
    /// A setting from the environment is not valid.
    #[error(transparent)]
    InvalidSetting(crate::limit::BadMaxDbSize),
    /// A snapshot's SHA-256 trailer does not match its db.
    #[error(
        "'{name}' is damaged: etcd's SHA-256 trailer (its last 32 bytes) does not match the db (whose SHA-256 is {actual}); use another copy, or skip the hash check to read it anyway"
    )]
    HashMismatch {
        /// The file or object.
        name: String,
        /// The trailer, hex: the file's last 32 bytes, which are not shown in the message (a
        /// file that is not a snapshot may hold anything there).
        expected: String,
        /// SHA-256 of the db bytes.
        actual: String,
    },
    /// The db inside a snapshot cannot be read as bbolt.
    #[error("'{name}' is not a readable etcd db: {source}")]
    BadDb {
        /// The file or object.
        name: String,
        /// What the bbolt reader found.
        source: bbolt::BoltError,
    },
    /// The db is sound bbolt but does not hold what etcd writes.
    #[error("'{name}' does not hold etcd data: {reason}")]
    NotEtcdData {
        /// The file or object.
        name: String,
        /// What was unexpected.
        reason: String,
    },
    /// A member runs on the data dir (its db is locked): offline tools need it stopped.
    #[error("a member is running on '{path}' (its db is locked): stop it first")]
    MemberRunning {
        /// The data dir.
        path: String,
    },
    /// A revision asked of a db that has compacted it away.
    #[error(
        "'{name}': revision {revision} has been compacted (the db is compacted at {compacted})"
    )]
    Compacted {
        /// The file or data dir.
        name: String,
        /// The revision asked.
        revision: i64,
        /// The db's compaction revision.
        compacted: i64,
    },
    /// A revision asked of a db that has not reached it.
    #[error("'{name}': revision {revision} is past the db's latest revision {latest}")]
    FutureRevision {
        /// The file or data dir.
        name: String,
        /// The revision asked.
        revision: i64,
        /// The db's latest revision.
        latest: i64,
    },
    /// The file is age-encrypted and no identity was given.
    #[error("{}", encrypted_message(name, recipients, *stored_ok))]
    Encrypted {
        /// The file.
        name: String,
        /// Its recipients' public keys, when known (empty otherwise).
        recipients: Vec<String>,
        /// Whether the stored bytes were read and matched a recorded SHA-256.
        stored_ok: bool,
    },
    /// None of the identities given can decrypt the file.
    #[error("{}", wrong_identity_message(name, recipients))]
    WrongIdentity {
        /// The file.
        name: String,
        /// Its recipients' public keys, when known (empty otherwise).
        recipients: Vec<String>,
    },
    /// An identity (file) cannot be used. Never holds key material.
    #[error("{origin}: {reason}")]
    BadKey {
        /// Where it came from: an option, a file and line.
        origin: String,
        /// What was wrong and what to do.
        reason: String,
    },
}

impl Hinted for Error {
    fn hint(&self) -> Option<Hint> {
        match self {
            Error::HashMismatch { .. } => Some(Hint::option(options::SKIP_HASH_CHECK)),
            Error::Encrypted { .. } | Error::WrongIdentity { .. } => {
                Some(Hint::option(options::IDENTITY))
            }
            Error::BadDb { source, .. } => source.hint(),
            _ => None,
        }
    }

    fn kind(&self) -> Option<ErrorKind> {
        Some(match self {
            Error::Decompress { .. } | Error::Damaged { .. } | Error::HashMismatch { .. } => {
                ErrorKind::Damaged
            }
            // A page that does not check, or a read that failed: bbolt says which.
            Error::BadDb { source, .. } => return source.kind(),
            Error::Encrypted { .. } | Error::WrongIdentity { .. } => ErrorKind::NeedsIdentity,
            Error::InvalidSetting(_)
            | Error::NotEtcdData { .. }
            | Error::Compacted { .. }
            | Error::FutureRevision { .. }
            | Error::BadKey { .. } => ErrorKind::InvalidInput,
            Error::MemberRunning { .. } => ErrorKind::Refused,
            Error::ReadFile { .. } | Error::WriteFile { .. } | Error::TooLarge { .. } => {
                ErrorKind::Other
            }
        })
    }
}

/// The recipients list as messages show it.
pub fn recipients_text(recipients: &[String]) -> String {
    if recipients.is_empty() {
        "recipients not recorded (no manifest found)".into()
    } else {
        recipients.join(", ")
    }
}

/// The message of an encrypted file or object read without an identity.
pub fn encrypted_message(name: &str, recipients: &[String], stored_ok: bool) -> String {
    let checked = if stored_ok {
        "its stored bytes match the manifest's SHA-256, but its contents were not checked: "
    } else {
        ""
    };
    // The option that gives an identity is the error's hint (IDENTITY).
    format!(
        "'{name}' is encrypted with age to {}; {checked}give the identity of one of them",
        recipients_text(recipients)
    )
}

/// The message of an encrypted file or object none of the identities given decrypts.
pub fn wrong_identity_message(name: &str, recipients: &[String]) -> String {
    format!(
        "none of the given identities can decrypt '{name}': it is encrypted to {}; give the identity of one of them",
        recipients_text(recipients)
    )
}
