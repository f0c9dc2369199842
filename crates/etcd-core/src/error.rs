//! The one error type of etcd-core. Every variant a user can cause says what was wrong and
//! what to do, and carries the endpoint, path or option it is about.

use std::path::PathBuf;
use std::time::Duration;

use etcd_common::{ErrorKind, Hint, Hinted, OptionId, options};

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong talking to etcd.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting has a bad value or contradicts another; the connection or operation option
    /// it names (`cacert`, `dial_timeout`, `peer_urls`) is its hint.
    #[error(transparent)]
    InvalidOption(#[from] etcd_common::InvalidOption),

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
        /// Extra advice, or empty: that etcd may require a client certificate (then the
        /// error's [`Hinted::hint`] is the client certificate and key).
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

    /// DNS SRV discovery found no usable records (hint: give the endpoints instead).
    #[error(
        "DNS SRV discovery for '{domain}' found no etcd client endpoints (looked up {looked_up}): {reason}; check the domain and its SRV records, or give the endpoints instead"
    )]
    Discovery {
        /// The domain.
        domain: String,
        /// The record names asked for.
        looked_up: String,
        /// The resolver's answers.
        reason: String,
    },

    /// The operation was refused, and no option gets past it (see [`Error::Guarded`]).
    #[error("refused: {reason}")]
    Refused {
        /// Why, and what to do instead.
        reason: String,
    },

    /// A safety guard refused the operation; one of `hint`'s options gets past it (`force`)
    /// or takes a safe way around it.
    #[error("refused: {reason}")]
    Guarded {
        /// Why, and what to do instead.
        reason: String,
        /// The options that get past the guard.
        hint: Hint,
    },

    /// A request is wrong in a way that one of `hint`'s options fixes (two options that
    /// exclude each other, a missing one, an argument that needs a switch).
    #[error("invalid {what}: {reason}")]
    InvalidRequest {
        /// What is wrong: the argument or option, in words.
        what: &'static str,
        /// What was wrong and what to do, without a front-end's spelling of an option.
        reason: String,
        /// The options that fix it.
        hint: Hint,
    },

    /// etcd refused a request for lack of rights (hint: connect as another user).
    #[error("{operation} on {endpoint} failed: {message}")]
    PermissionDenied {
        /// What was asked.
        operation: &'static str,
        /// The endpoint.
        endpoint: String,
        /// etcd's message, with what rights it takes.
        message: String,
    },

    /// A file etcdops writes or reads for itself (the apiserver's encryption configuration)
    /// could not be handled.
    #[error(transparent)]
    FileIo(#[from] etcd_common::FileError),

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
    #[error("no endpoint answered: {}", endpoint_errors(.errors))]
    NoEndpointAvailable {
        /// One error per endpoint tried (none: no healthy member was left to try).
        errors: Vec<Error>,
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

pub(crate) use etcd_common::options::{
    COMMAND_TIMEOUT, DIAL_TIMEOUT, DISCOVERY_SRV, DNS_SERVER, PASSWORD, REV, SERVER_NAME,
};

/// The option that names the file a [`Error::ReadFile`] or [`Error::InvalidPem`] is about.
fn file_option(what: &str) -> Option<OptionId> {
    match what {
        "CA certificate" => Some(options::CACERT),
        "client certificate" => Some(options::CERT),
        "client key" => Some(options::KEY),
        crate::auth::PASSWORD_FILE_WHAT => Some(crate::auth::PASSWORD_FILE),
        _ => None,
    }
}

/// The endpoints' errors on one line.
fn endpoint_errors(errors: &[Error]) -> String {
    if errors.is_empty() {
        return "no healthy member to send the change to".into();
    }
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl Hinted for Error {
    fn hint(&self) -> Option<Hint> {
        match self {
            // The first endpoint's hint that has one (a wrong CA fails every endpoint alike).
            Error::NoEndpointAvailable { errors } => errors.iter().find_map(Hinted::hint),
            Error::InvalidOption(e) => e.hint(),
            Error::ReadFile { what, .. } | Error::InvalidPem { what, .. } => {
                file_option(what).map(Hint::option)
            }
            Error::InvalidRequest { hint, .. }
            | Error::Guarded { hint, .. }
            | Error::TlsSetting { hint, .. } => Some(hint.clone()),
            Error::Discovery { .. } => Some(Hint::option(options::ENDPOINTS)),
            Error::AuthFailed { .. } | Error::PermissionDenied { .. } => {
                Some(Hint::option(options::USER))
            }
            // The advice a timeout carries is that etcd may want a client certificate.
            Error::Timeout { hint, .. } if !hint.is_empty() => {
                Some(Hint::any_of(&[options::CERT, options::KEY]))
            }
            _ => None,
        }
    }

    /// An endpoint that cannot be reached or cannot serve now (no leader, leader changed,
    /// connection broken), a request that got no answer in time, or etcd saying it is
    /// overloaded: trying again later may work. Bad input, refused credentials or rights,
    /// TLS trouble and etcd's answers to the request itself are not transient.
    fn is_transient(&self) -> bool {
        match self {
            Error::Unreachable { .. } | Error::Unavailable { .. } | Error::Timeout { .. } => true,
            // Worth a retry only when every endpoint's failure is: a CA that signed none of
            // them stays wrong however often it is tried.
            Error::NoEndpointAvailable { errors } => errors.iter().all(Hinted::is_transient),
            Error::Request { message, .. } => message.contains("too many requests"),
            _ => false,
        }
    }

    fn kind(&self) -> Option<ErrorKind> {
        Some(match self {
            Error::InvalidOption(e) => return e.kind(),
            Error::InvalidEndpoint { .. } | Error::InvalidRequest { .. } => ErrorKind::InvalidInput,
            Error::ReadFile { .. } | Error::InvalidPem { .. } => ErrorKind::CredentialFile,
            Error::AuthFailed { .. } => ErrorKind::AuthFailed,
            Error::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Error::Unreachable { .. } | Error::Unavailable { .. } | Error::Timeout { .. } => {
                ErrorKind::Unreachable
            }
            Error::Refused { .. } | Error::Guarded { .. } => ErrorKind::Refused,
            // What the first endpoint ran into (every endpoint usually fails alike).
            Error::NoEndpointAvailable { errors } => {
                return errors.first().and_then(Hinted::kind);
            }
            // etcd overloaded: as transient as an endpoint that cannot serve now.
            Error::Request { message, .. } if message.contains("too many requests") => {
                ErrorKind::Unreachable
            }
            Error::Tls { .. }
            | Error::TlsSetting { .. }
            | Error::Request { .. }
            | Error::Discovery { .. }
            | Error::FileIo(_) => ErrorKind::Other,
        })
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
