//! The error type of etcd-k8s. No variant ever carries key material or Secret data.

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
    /// Bad input from the user.
    #[error("invalid {option}: {reason}")]
    InvalidOption {
        /// The option.
        option: &'static str,
        /// What was wrong and what to do.
        reason: String,
    },
    /// No Kubernetes data was found where it was looked for.
    #[error("{0}")]
    NoKubernetesData(String),
    /// A scan found no object at all: never a pass.
    #[error(
        "scanned 0 objects under {prefix} for {resources}: nothing proves encryption; check --prefix and --resource (and that this is the etcd of a Kubernetes cluster)"
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

impl etcd_common::Hinted for K8sError {}
