//! The one error type of etcd-host. Every variant a user can cause says what was wrong and
//! what to do, and carries the path or option it is about.

use etcd_common::{ErrorKind, Hint, Hinted, options};

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong writing or reading a host's etcd files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting has a bad value or contradicts another; the option it names (`name`,
    /// `validity_days`, `initial_cluster`) is its hint.
    #[error(transparent)]
    InvalidOption(#[from] etcd_common::InvalidOption),

    /// A certificate or key on disk is not usable PEM.
    #[error("invalid {what} in {source_name}: {reason}")]
    InvalidPem {
        /// "CA certificate", "CA key", "certificate" or "key".
        what: &'static str,
        /// The path.
        source_name: String,
        /// What was wrong.
        reason: String,
    },

    /// The change was refused, and no option gets past it (a CA that is half there or has
    /// expired).
    #[error("refused: {reason}")]
    Refused {
        /// Why, and what to do instead.
        reason: String,
    },

    /// A file (etcd's config file, a certificate, a key) could not be read or written.
    #[error(transparent)]
    FileIo(#[from] etcd_common::FileError),
}

/// The `map_err` of an I/O error while doing `operation` on `path`.
pub(crate) fn io(
    operation: &'static str,
    path: &std::path::Path,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| {
        Error::FileIo(etcd_common::FileError {
            operation,
            path,
            source,
        })
    }
}

impl Hinted for Error {
    fn hint(&self) -> Option<Hint> {
        match self {
            Error::InvalidOption(e) => e.hint(),
            // The PKI's own options for its CA files (`ca_cert`, `ca_key`), as a missing one is
            // hinted; not the connection's `cacert`, which no PKI command or module takes.
            Error::InvalidPem { what, .. } if *what == "CA certificate" => {
                Some(Hint::option(options::CA_CERT))
            }
            Error::InvalidPem { what, .. } if *what == "CA key" => {
                Some(Hint::option(options::CA_KEY))
            }
            _ => None,
        }
    }

    fn kind(&self) -> Option<ErrorKind> {
        Some(match self {
            Error::InvalidOption(e) => return e.kind(),
            Error::InvalidPem { .. } => ErrorKind::CredentialFile,
            Error::Refused { .. } => ErrorKind::Refused,
            Error::FileIo(_) => ErrorKind::Other,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_ca_certificate_is_a_credential_file_hinted_as_ca_cert_and_a_refusal_is_refused() {
        let pem = |what| Error::InvalidPem {
            what,
            source_name: "/etc/etcd/pki/ca.crt".into(),
            reason: "not an X.509 certificate".into(),
        };
        let ca = pem("CA certificate");
        assert_eq!(
            ca.to_string(),
            "invalid CA certificate in /etc/etcd/pki/ca.crt: not an X.509 certificate"
        );
        assert_eq!(ca.hint(), Some(Hint::option(options::CA_CERT)));
        assert_eq!(pem("CA key").hint(), Some(Hint::option(options::CA_KEY)));
        assert_eq!(ca.kind(), Some(ErrorKind::CredentialFile));
        assert_eq!(pem("key").hint(), None);
        let refused = Error::Refused {
            reason: "only the CA key exists".into(),
        };
        assert_eq!(refused.to_string(), "refused: only the CA key exists");
        assert_eq!(refused.kind(), Some(ErrorKind::Refused));
        assert!(!refused.is_transient());
    }
}
