//! The one error type of the workflows: the library error it came from (passed on whole,
//! never flattened into a string), or the workflow's own refusal, with its kind, its hint
//! (the neutral option that gets past it) and whether it is transient. The front-ends match
//! on [`kind_of`] and render [`hint_of`] in their own words.

use std::path::PathBuf;

use etcd_common::{ErrorKind, Hint, Hinted};

use crate::quorum::Refusal;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a workflow could not do its job. Match on [`kind_of`] (and read [`hint_of`]), not on
/// the library an error came from: a library's error is passed on whole, as
/// [`Error::Library`], with its own kind, hint and transience.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A library step failed: talking to etcd, a host's etcd files, a snapshot, backup or
    /// restore step, a store, a Kubernetes or OpenShift step, a data dir read offline.
    /// [`Error::library`] reads it as its own type.
    Library(Box<dyn LibraryError>),
    /// A guard refused the operation (a quorum check); `hint` names what gets past it.
    Refused {
        /// What the guard found and what to do, in neutral words.
        reason: String,
        /// The options that get past it (`force`, `learner`).
        hint: Hint,
    },
    /// No survivor can be chosen safely to recover a quorum (split history, a member still
    /// running, no data): what to do instead is in the message; the candidates as they were
    /// judged are kept for the front-ends to show.
    NoSafeSurvivor(Box<Refusal>),
    /// The recovered survivor does not run as a healthy one-member cluster with its revision
    /// (yet); `reason` says what is still wrong.
    NotVerified {
        /// What is still wrong.
        reason: String,
    },
    /// A wait ended at its deadline with what it waited for still not ready.
    TimedOut {
        /// What it waited for, how long, and what was still missing.
        message: String,
    },
    /// The request itself is wrong: two options that exclude each other, one missing.
    InvalidRequest {
        /// What is wrong, without a front-end's option spelling.
        message: String,
        /// The options involved.
        hint: Option<Hint>,
    },
    /// A file or dir the workflow itself copies or moves (a data dir kept aside) could not be.
    Io {
        /// What was being done (`copy`, `rename`, `read`).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl Error {
    /// A request that is wrong, with the options that would fix it.
    pub fn invalid(message: impl Into<String>, hint: Option<Hint>) -> Error {
        Error::InvalidRequest {
            message: message.into(),
            hint,
        }
    }

    /// The library error this one passes on, as its own type `E`, if it is one: for a
    /// front-end that words one refusal its own way.
    pub fn library<E: LibraryError>(&self) -> Option<&E> {
        match self {
            Error::Library(e) => e.as_error().downcast_ref::<E>(),
            _ => None,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Passed on whole: its own message, not a line about it.
            Error::Library(e) => std::fmt::Display::fmt(e, f),
            Error::Refused { reason, .. } => f.write_str(reason),
            Error::NoSafeSurvivor(refusal) => f.write_str(&refusal.message),
            Error::NotVerified { reason } => f.write_str(reason),
            Error::TimedOut { message } | Error::InvalidRequest { message, .. } => {
                f.write_str(message)
            }
            Error::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Transparent: the library error's own source comes next, as if it were this one.
            Error::Library(e) => e.source(),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl<E: LibraryError> From<E> for Error {
    fn from(e: E) -> Self {
        Error::Library(Box::new(e))
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        Error::NoSafeSurvivor(Box::new(r))
    }
}

impl Hinted for Error {
    fn hint(&self) -> Option<Hint> {
        match self {
            Error::Library(e) => hint_of(e.as_error()),
            Error::InvalidRequest { hint, .. } => hint.clone(),
            Error::Refused { hint, .. } => Some(hint.clone()),
            _ => None,
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Error::Library(e) => is_transient(e.as_error()),
            _ => false,
        }
    }

    fn kind(&self) -> Option<ErrorKind> {
        match self {
            Error::Library(e) => Some(kind_of(e.as_error())),
            Error::InvalidRequest { .. } => Some(ErrorKind::InvalidInput),
            Error::Refused { .. } | Error::NoSafeSurvivor(_) => Some(ErrorKind::Refused),
            // A wait for a state that did not come: the cluster answered.
            Error::TimedOut { .. } | Error::NotVerified { .. } | Error::Io { .. } => {
                Some(ErrorKind::Other)
            }
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// One of the etcdops libraries' own error types, which a workflow passes on whole as
/// [`Error::Library`]. Sealed: the list is [`library_errors!`]'s.
pub trait LibraryError:
    Hinted + std::error::Error + Send + Sync + 'static + sealed::Sealed
{
    /// This error as a plain error, to downcast or to walk its sources.
    fn as_error(&self) -> &(dyn std::error::Error + 'static);
}

/// Declares the library error types once: each is a [`LibraryError`], and [`as_hinted`]
/// recognizes it anywhere in a chain of sources.
macro_rules! library_errors {
    ($($error:ty),* $(,)?) => {
        $(
            impl sealed::Sealed for $error {}
            impl LibraryError for $error {
                fn as_error(&self) -> &(dyn std::error::Error + 'static) {
                    self
                }
            }
        )*

        /// `error` as one of the etcdops libraries' error types (or a workflow's), if it is one.
        fn as_hinted<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Hinted> {
            if let Some(e) = error.downcast_ref::<Error>() {
                return Some(e);
            }
            $(
                if let Some(e) = error.downcast_ref::<$error>() {
                    return Some(e);
                }
            )*
            None
        }
    };
}

library_errors!(
    etcd_core::Error,
    etcd_host::Error,
    etcd_snapshot::SnapshotError,
    etcd_snapshot::RestoreError,
    etcd_snapshot::DataError,
    etcd_snapshot::BoltError,
    etcd_store::StoreError,
    etcd_k8s::K8sError,
    etcd_data::InspectError,
    etcd_common::InvalidOption,
);

/// Runs `f` on the first library error found in `error`'s chain (itself, then its sources).
fn find<T>(
    error: &(dyn std::error::Error + 'static),
    f: &dyn Fn(&dyn Hinted) -> Option<T>,
) -> Option<T> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(found) = as_hinted(e).and_then(f) {
            return Some(found);
        }
        current = e.source();
    }
    None
}

/// The hint of an error from any etcdops library (or of one of its sources): the options
/// that get past it. The CLI renders it as flags, the shim as module options.
pub fn hint_of(error: &(dyn std::error::Error + 'static)) -> Option<Hint> {
    find(error, &|e| e.hint())
}

/// Whether an error from any etcdops library (or one of its sources) may pass if retried.
pub fn is_transient(error: &(dyn std::error::Error + 'static)) -> bool {
    find(error, &|e| e.is_transient().then_some(())).is_some()
}

/// The kind of any error: the first kind its chain says (a workflow error, the library error
/// it wraps, that one's source), else [`ErrorKind::Other`]. Front-ends match on this, not on
/// library variants: the CLI's etcdctl exit codes, the backup check's "could not verify".
pub fn kind_of(error: &(dyn std::error::Error + 'static)) -> ErrorKind {
    find(error, &|e| e.kind()).unwrap_or(ErrorKind::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_library_error_keeps_its_hint_and_transience() {
        let restore = Error::from(etcd_snapshot::RestoreError::NoTrailer { name: "x".into() });
        assert_eq!(
            hint_of(&restore),
            Some(Hint::option(etcd_common::options::SKIP_HASH_CHECK))
        );
        let invalid = Error::invalid("bad", Some(Hint::option(etcd_common::options::FORCE)));
        assert_eq!(
            hint_of(&invalid),
            Some(Hint::option(etcd_common::options::FORCE))
        );
        assert!(!is_transient(&invalid));
    }

    #[test]
    fn a_bare_invalid_option_is_read_too() {
        let invalid = etcd_common::InvalidOption::new(etcd_common::options::CACERT, "bad");
        assert_eq!(
            hint_of(&invalid),
            Some(Hint::option(etcd_common::options::CACERT))
        );
        assert_eq!(kind_of(&invalid), ErrorKind::InvalidInput);
        assert!(!is_transient(&invalid));
    }

    #[test]
    fn the_kind_is_found_through_every_wrapper() {
        let auth = || etcd_core::Error::AuthFailed {
            endpoint: "https://a:2379".into(),
            user: "root".into(),
            detail: "authentication failed".into(),
        };
        // A workflow error around a client error around the first endpoint's.
        let all_failed = Error::from(etcd_core::Error::NoEndpointAvailable {
            errors: vec![auth(), auth()],
        });
        assert_eq!(kind_of(&all_failed), ErrorKind::AuthFailed);
        // An encrypted file found by the data layer, reported by the backup layer.
        let encrypted = Error::from(etcd_snapshot::SnapshotError::Data(
            etcd_data::Error::Encrypted {
                name: "b".into(),
                recipients: Vec::new(),
                stored_ok: false,
            },
        ));
        assert_eq!(kind_of(&encrypted), ErrorKind::NeedsIdentity);
        // A store's answer inside a backup error inside a restore's fetch (a boxed source).
        let gone = etcd_snapshot::SnapshotError::Store(etcd_store::StoreError::NotFound {
            store: "s3://b".into(),
            name: "x".into(),
        });
        let fetch = Error::from(etcd_snapshot::RestoreError::Fetch(Box::new(gone)));
        assert_eq!(kind_of(&fetch), ErrorKind::NotFound);
        // The workflow's own.
        assert_eq!(
            kind_of(&Error::invalid("bad", None)),
            ErrorKind::InvalidInput
        );
        let io = std::io::Error::other("disk");
        assert_eq!(kind_of(&io), ErrorKind::Other);
    }
}
