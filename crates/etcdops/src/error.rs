//! The error of a workflow: the library error it came from (kept as its source, never
//! flattened into a string), its hint (the neutral option that gets past it) and whether it
//! is transient. The front-ends render [`hint_of`] in their own words.

use etcd_common::{ErrorKind, Hint, Hinted};

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a workflow could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Talking to etcd, or a cluster operation, failed.
    #[error(transparent)]
    Etcd(#[from] etcd_core::Error),
    /// Writing a host's etcd files (etcd's config file, certificates) failed.
    #[error(transparent)]
    Host(#[from] etcd_host::Error),
    /// A snapshot, backup or restore step failed.
    #[error(transparent)]
    Snapshot(#[from] etcd_snapshot::SnapshotError),
    /// A restore step failed.
    #[error(transparent)]
    Restore(#[from] etcd_snapshot::RestoreError),
    /// A store could not be reached or read.
    #[error(transparent)]
    Store(#[from] etcd_store::StoreError),
    /// A Kubernetes or OpenShift step (platform, guard, encryption config) failed.
    #[error(transparent)]
    K8s(#[from] etcd_k8s::K8sError),
    /// Reading or changing a data dir offline failed.
    #[error(transparent)]
    DataDir(#[from] etcd_data::InspectError),
    /// A guard refused the operation (a quorum check); `hint` names what gets past it.
    #[error("{reason}")]
    Refused {
        /// What the guard found and what to do, in neutral words.
        reason: String,
        /// The options that get past it (`force`, `learner`).
        hint: Hint,
    },
    /// A wait ended at its deadline with what it waited for still not ready.
    #[error("{message}")]
    TimedOut {
        /// What it waited for, how long, and what was still missing.
        message: String,
    },
    /// The request itself is wrong: two options that exclude each other, one missing.
    #[error("{message}")]
    InvalidRequest {
        /// What is wrong, without a front-end's option spelling.
        message: String,
        /// The options involved.
        hint: Option<Hint>,
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
}

impl Error {
    /// The library error this one wraps (its variants are transparent, so `source()` skips it).
    fn wrapped(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Etcd(e) => Some(e),
            Error::Host(e) => Some(e),
            Error::Snapshot(e) => Some(e),
            Error::Restore(e) => Some(e),
            Error::Store(e) => Some(e),
            Error::K8s(e) => Some(e),
            Error::DataDir(e) => Some(e),
            Error::InvalidRequest { .. } | Error::Refused { .. } | Error::TimedOut { .. } => None,
        }
    }
}

impl Hinted for Error {
    fn hint(&self) -> Option<Hint> {
        match self {
            Error::InvalidRequest { hint, .. } => hint.clone(),
            Error::Refused { hint, .. } => Some(hint.clone()),
            other => other.wrapped().and_then(hint_of),
        }
    }

    fn is_transient(&self) -> bool {
        self.wrapped().is_some_and(is_transient)
    }

    fn kind(&self) -> Option<ErrorKind> {
        match self {
            Error::InvalidRequest { .. } => Some(ErrorKind::InvalidInput),
            Error::Refused { .. } => Some(ErrorKind::Refused),
            // A wait for a state that did not come: the cluster answered.
            Error::TimedOut { .. } => Some(ErrorKind::Other),
            other => other.wrapped().map(kind_of),
        }
    }
}

/// `error` as one of the etcdops libraries' error types, if it is one.
fn as_hinted<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Hinted> {
    fn of<'a, E: Hinted + std::error::Error + 'static>(
        error: &'a (dyn std::error::Error + 'static),
    ) -> Option<&'a dyn Hinted> {
        error.downcast_ref::<E>().map(|e| e as &dyn Hinted)
    }
    type Of = for<'a> fn(&'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Hinted>;
    let types: [Of; 11] = [
        of::<Error>,
        of::<etcd_core::Error>,
        of::<etcd_host::Error>,
        of::<etcd_snapshot::SnapshotError>,
        of::<etcd_snapshot::RestoreError>,
        of::<etcd_snapshot::DataError>,
        of::<etcd_snapshot::BoltError>,
        of::<etcd_store::StoreError>,
        of::<etcd_k8s::K8sError>,
        of::<etcd_data::InspectError>,
        of::<etcd_common::InvalidOption>,
    ];
    types.iter().find_map(|of| of(error))
}

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
