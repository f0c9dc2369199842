//! The one error type of etcd-core. Every variant a user can cause says what was wrong and
//! what to do, and carries the endpoint, path or option it is about.

use std::path::PathBuf;
use std::time::Duration;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong talking to etcd.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting has a bad value or contradicts another.
    #[error("invalid {option}: {reason}")]
    InvalidOption {
        /// The flag or variable name.
        option: &'static str,
        /// What was wrong and what to do.
        reason: String,
    },

    /// An endpoint could not be parsed.
    #[error("invalid endpoint '{endpoint}': {reason}")]
    InvalidEndpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What was wrong and what to do.
        reason: String,
    },

    /// A certificate or key file could not be read.
    #[error("cannot read {what} '{path}': {source}")]
    ReadFile {
        /// "CA certificate", "client certificate" or "client key".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A certificate or key is not usable PEM.
    #[error("invalid {what} in {source_name}: {reason}")]
    InvalidPem {
        /// "CA certificate", "client certificate" or "client key".
        what: &'static str,
        /// The path, or "inline PEM data".
        source_name: String,
        /// What was wrong.
        reason: String,
    },

    /// No connection within the dial timeout, or the connection was refused.
    #[error(
        "cannot connect to {endpoint} within {timeout:?} (dial timeout): {reason}; check that etcd listens there and that the address is right"
    )]
    Unreachable {
        /// The endpoint.
        endpoint: String,
        /// The dial timeout in force.
        timeout: Duration,
        /// The underlying cause (refused, timed out, no route).
        reason: String,
    },

    /// The TLS handshake failed (server certificate, CA, client certificate).
    #[error("TLS with {endpoint} failed: {reason}")]
    Tls {
        /// The endpoint.
        endpoint: String,
        /// What failed and what to do.
        reason: String,
    },

    /// etcd refused the user name or password.
    #[error(
        "authentication as '{user}' at {endpoint} failed: wrong user name or password (etcd said: {detail})"
    )]
    AuthFailed {
        /// The endpoint.
        endpoint: String,
        /// The user name (never the password).
        user: String,
        /// etcd's own message.
        detail: String,
    },

    /// A request got no answer within the command timeout.
    #[error("{operation} on {endpoint} timed out after {timeout:?} (command timeout){hint}")]
    Timeout {
        /// What was asked.
        operation: &'static str,
        /// The endpoint.
        endpoint: String,
        /// The timeout in force.
        timeout: Duration,
        /// Extra advice, such as a client certificate that may be required.
        hint: String,
    },

    /// etcd answered a request with an error.
    #[error("{operation} on {endpoint} failed: {message}")]
    Request {
        /// What was asked.
        operation: &'static str,
        /// The endpoint.
        endpoint: String,
        /// etcd's message.
        message: String,
    },

    /// DNS SRV discovery found no usable records.
    #[error(
        "DNS SRV discovery for '{domain}' found no etcd client endpoints (looked up {looked_up}): {reason}; check the domain and its SRV records, or give --endpoints"
    )]
    Discovery {
        /// The domain.
        domain: String,
        /// The record names asked for.
        looked_up: String,
        /// The resolver's answers.
        reason: String,
    },

    /// A safety guard refused the operation; `--force` overrides where that is sane.
    #[error("refused: {reason}")]
    Refused {
        /// Why, and what to do instead.
        reason: String,
    },

    /// A file etcdops writes or reads for itself (etcd's config file, certificates) could
    /// not be handled.
    #[error("cannot {operation} '{path}': {source}")]
    FileIo {
        /// What was being done ("read", "write", "rename into", ...).
        operation: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// The endpoint could not serve a request: the connection broke (reset, closed) or etcd
    /// said it is unavailable (no leader, leader changed). Another endpoint may serve it.
    #[error("{operation} on {endpoint} failed: {message}")]
    Unavailable {
        /// What was asked.
        operation: &'static str,
        /// The endpoint.
        endpoint: String,
        /// What happened.
        message: String,
    },

    /// None of the endpoints could be reached.
    #[error("no endpoint answered: {}", .errors.join("; "))]
    NoEndpointAvailable {
        /// One message per endpoint tried.
        errors: Vec<String>,
    },

    /// The TLS handshake failed in a way one of `hint`'s connection options fixes: the CA
    /// that signed etcd's certificate, a client certificate and key, the expected name.
    #[error("TLS with {endpoint} failed: {reason}")]
    TlsSetting {
        /// The endpoint.
        endpoint: String,
        /// What failed and what to do, without a front-end's spelling of an option.
        reason: String,
        /// The options that fix it.
        hint: etcd_common::Hint,
    },
}

impl Error {
    /// Whether the endpoint, not the request, failed (unreachable, connection broken,
    /// unavailable, no answer in time, TLS with that member): an idempotent read may go on to
    /// the next endpoint. An answer from etcd (permission denied, compacted, bad request), an
    /// authentication failure or a bad setting is not an endpoint failure.
    pub fn is_endpoint_failure(&self) -> bool {
        matches!(
            self,
            Error::Unreachable { .. }
                | Error::Unavailable { .. }
                | Error::Timeout { .. }
                | Error::Tls { .. }
                | Error::TlsSetting { .. }
        )
    }
}

impl From<etcd_common::FileError> for Error {
    fn from(e: etcd_common::FileError) -> Self {
        Error::FileIo {
            operation: e.operation,
            path: e.path,
            source: e.source,
        }
    }
}

impl etcd_common::Hinted for Error {}
