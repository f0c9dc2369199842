//! The error type of etcd-k8s. No variant ever carries key material or Secret data.

use etcd_common::{ErrorKind, Hint, Hinted, options};

/// Result with [`K8sError`].
pub type Result<T, E = K8sError> = std::result::Result<T, E>;

/// Everything that can go wrong auditing encryption, writing its configuration or decoding
/// stored values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum K8sError {
    /// Talking to etcd failed.
    #[error(transparent)]
    Etcd(#[from] etcd_core::Error),
    /// Reading a snapshot failed.
    #[error(transparent)]
    Snapshot(#[from] etcd_snapshot::SnapshotError),
    /// The store holding a snapshot failed.
    #[error(transparent)]
    Store(#[from] etcd_store::StoreError),
    /// Bad input from the user. When it is an option (`prefix`, `resources`, `key_name`),
    /// that option is the error's hint.
    #[error(transparent)]
    InvalidOption(#[from] etcd_common::InvalidOption),
    /// A request is wrong in a way one of `hint`'s options fixes.
    #[error("invalid {what}: {reason}")]
    InvalidRequest {
        /// What is wrong, in words.
        what: &'static str,
        /// What was wrong and what to do, without a front-end's spelling of an option.
        reason: String,
        /// The options that fix it.
        hint: Hint,
    },
    /// No known prefix holds Kubernetes data (hint: give the prefix).
    #[error(
        "no Kubernetes data found: no key under {looked}; give the prefix kube-apiserver \
         stores under (its etcd-prefix setting)"
    )]
    NoPrefixFound {
        /// The prefixes looked under, `/registry/ or /kubernetes.io/`.
        looked: String,
    },
    /// Platform detection found no etcd, so no connection settings (hint: give them).
    #[error(
        "platform auto: no etcd found under {root} ({looked}); give the endpoints and TLS \
         files instead"
    )]
    NoEtcdFound {
        /// The root looked under.
        root: String,
        /// Where it looked.
        looked: String,
    },
    /// No Kubernetes data was found where it was looked for.
    #[error("{0}")]
    NoKubernetesData(String),
    /// A scan found no object at all: never a pass.
    #[error(
        "scanned 0 objects under {prefix} for {resources}: nothing proves encryption; check the prefix and the resources (and that this is the etcd of a Kubernetes cluster)"
    )]
    NothingScanned {
        /// The prefix scanned.
        prefix: String,
        /// The resources scanned, comma-separated.
        resources: String,
    },
    /// A snapshot's db does not hold what etcd writes.
    #[error("'{name}' does not hold etcd data: {reason}")]
    NotEtcdData {
        /// The file or object.
        name: String,
        /// What was unexpected.
        reason: String,
    },
    /// An EncryptionConfiguration file cannot be used.
    #[error("{path}: {reason}")]
    BadConfig {
        /// The file.
        path: String,
        /// What was wrong and what to do (never a key's material).
        reason: String,
    },
    /// `generate` would replace a file that holds other keys (hint: force it).
    #[error(
        "{path}: exists with other keys ({keys}); change keys with the rotation steps, or \
         replace the file, forced (objects written with the keys it holds become unreadable)"
    )]
    WouldReplace {
        /// The file.
        path: String,
        /// The file's key names, per entry.
        keys: String,
    },
    /// No entry of the file covers the resources asked for (hint: give an entry's resources).
    #[error(
        "{path}: no entry for resources {resources}; give the resources of one of its entries \
         (the file has: {entries})"
    )]
    NoEntry {
        /// The file.
        path: String,
        /// The resources asked for, comma-separated.
        resources: String,
        /// The resources of each entry of the file.
        entries: String,
    },
    /// A key-rotation step was asked for out of order, or the file is in no state for it.
    #[error("{path}: refusing rotation step {step}: {reason}")]
    OutOfOrder {
        /// The file.
        path: String,
        /// The step asked for.
        step: &'static str,
        /// Why, and which step comes next.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("cannot {operation} '{path}': {source}")]
    Io {
        /// What was being done: "read", "write", ...
        operation: &'static str,
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// OpenShift's cluster-etcd-operator manages this etcd and the operation was not forced.
    #[error("refusing `{operation}` ({evidence}): {procedure}")]
    ManagedByOperator {
        /// The operation refused.
        operation: String,
        /// What showed the operator is in charge.
        evidence: String,
        /// What to do instead.
        procedure: String,
    },
    /// The OS random number generator failed.
    #[error("the OS random number generator failed: {0}")]
    Random(String),
}

pub(crate) use etcd_common::options::{
    ENCRYPT_TO, KEY_NAME, OPENSHIFT_BACKUP_DIR, PLATFORM_ROOT, PREFIX, RESOURCES, SNAPSHOT,
};

impl Hinted for K8sError {
    fn hint(&self) -> Option<Hint> {
        match self {
            K8sError::Etcd(e) => e.hint(),
            K8sError::Snapshot(e) => e.hint(),
            K8sError::Store(e) => e.hint(),
            K8sError::InvalidOption(e) => e.hint(),
            K8sError::InvalidRequest { hint, .. } => Some(hint.clone()),
            K8sError::NoPrefixFound { .. } => Some(Hint::option(PREFIX)),
            K8sError::NoEtcdFound { .. } => Some(Hint::any_of(&[
                options::ENDPOINTS,
                options::CACERT,
                options::CERT,
                options::KEY,
            ])),
            K8sError::NothingScanned { .. } => Some(Hint::any_of(&[PREFIX, RESOURCES])),
            K8sError::WouldReplace { .. } | K8sError::ManagedByOperator { .. } => {
                Some(Hint::option(options::FORCE))
            }
            K8sError::NoEntry { .. } => Some(Hint::option(RESOURCES)),
            _ => None,
        }
    }

    /// Transient when the etcd, snapshot or store error it wraps is.
    fn is_transient(&self) -> bool {
        match self {
            K8sError::Etcd(e) => e.is_transient(),
            K8sError::Snapshot(e) => e.is_transient(),
            K8sError::Store(e) => e.is_transient(),
            _ => false,
        }
    }

    fn kind(&self) -> Option<ErrorKind> {
        Some(match self {
            K8sError::Etcd(e) => return e.kind(),
            K8sError::Snapshot(e) => return e.kind(),
            K8sError::Store(e) => return e.kind(),
            K8sError::InvalidOption(e) => return e.kind(),
            K8sError::InvalidRequest { .. }
            | K8sError::NotEtcdData { .. }
            | K8sError::BadConfig { .. }
            | K8sError::OutOfOrder { .. } => ErrorKind::InvalidInput,
            K8sError::NoPrefixFound { .. }
            | K8sError::NoEtcdFound { .. }
            | K8sError::NoKubernetesData(_)
            | K8sError::NothingScanned { .. }
            | K8sError::NoEntry { .. } => ErrorKind::NotFound,
            K8sError::WouldReplace { .. } | K8sError::ManagedByOperator { .. } => {
                ErrorKind::Refused
            }
            K8sError::Io { .. } | K8sError::Random(_) => ErrorKind::Other,
        })
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
