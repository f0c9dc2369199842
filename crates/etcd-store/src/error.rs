//! The error type, and the translation of I/O and object_store errors into it.
//!
//! Every message that leaves this crate goes through [`scrub`], which removes query strings
//! (where Azure SAS tokens live) and user-info from URLs, and any known secret value.

use std::io;

/// Everything that can go wrong with a store. Messages never contain credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The URL could not be understood.
    #[error("invalid store URL '{url}': {reason}")]
    InvalidUrl {
        /// The URL (credentials removed).
        url: String,
        /// What was wrong and what to do.
        reason: String,
    },
    /// An option is missing or has a bad value.
    #[error("invalid store option {option}: {reason}")]
    InvalidOption {
        /// The flag or variable.
        option: &'static str,
        /// What was wrong and what to do.
        reason: String,
    },
    /// An object name is not a relative, `/`-separated path.
    #[error("invalid object name '{name}': {reason}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// What was wrong.
        reason: String,
    },
    /// No object of that name.
    #[error("no object '{name}' in {store}")]
    NotFound {
        /// The store URL.
        store: String,
        /// The object name.
        name: String,
    },
    /// The bucket or container does not exist.
    #[error("bucket or container '{bucket}' does not exist at {store}; create it first")]
    MissingBucket {
        /// The store URL.
        store: String,
        /// Bucket or container name.
        bucket: String,
    },
    /// The store refused the credentials.
    #[error("{store} refused the credentials: {reason}")]
    Auth {
        /// The store URL.
        store: String,
        /// What the store said (credentials removed).
        reason: String,
    },
    /// The store could not be reached.
    #[error("cannot reach {store}: {reason}")]
    Unreachable {
        /// The store URL.
        store: String,
        /// The cause.
        reason: String,
    },
    /// The local disk is full.
    #[error(
        "no space left on the device holding '{path}'; free space or choose another destination"
    )]
    NoSpace {
        /// The file being written.
        path: String,
    },
    /// Any other failure of an operation.
    #[error("{operation} '{name}' in {store} failed: {reason}")]
    Operation {
        /// "upload", "download", "list", "delete", ...
        operation: &'static str,
        /// The store URL.
        store: String,
        /// The object name.
        name: String,
        /// The cause.
        reason: String,
    },
    /// A local store's directory does not exist (an object store's prefix cannot be told
    /// apart from an empty one; a missing bucket is [`StoreError::MissingBucket`]).
    #[error(
        "store {store} does not exist (no such directory); check the path (an empty store is \
         an existing directory)"
    )]
    StoreMissing {
        /// The store URL.
        store: String,
    },
}

/// Result with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// What an error message needs to know about where it happened.
#[derive(Clone, Default)]
pub(crate) struct ErrorContext {
    /// The store URL (already credential-free).
    pub store: String,
    /// Bucket or container, for object stores.
    pub bucket: String,
    /// Backend name for hints ("S3", "Azure", "GCS").
    pub backend: &'static str,
    /// What to do about refused credentials on this backend.
    pub auth_hint: String,
    /// Secret values that must never appear in a message.
    pub secrets: Vec<String>,
}

impl ErrorContext {
    /// Scrubs `text` of URLs' query strings and user-info and of every known secret.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = scrub(text);
        for secret in &self.secrets {
            if secret.len() >= 4 {
                out = out.replace(secret.as_str(), "<redacted>");
            }
        }
        out
    }
}

/// Removes query strings and user-info from every `http(s)://` URL in `text`, and the value
/// of any `sig=` parameter that appears outside a URL.
pub fn scrub(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = ["https://", "http://"]
            .iter()
            .filter_map(|scheme| rest.find(scheme).map(|i| (i, scheme.len())))
            .min();
        let Some((start, scheme_len)) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')' | ','))
            .unwrap_or(after.len());
        out.push_str(&scrub_url(&after[..end], scheme_len));
        rest = &after[end..];
    }
    redact_quoted_values(&redact_param(&out, "sig="))
}

/// serde's messages quote the offending value (`invalid type: string "..."`, `invalid value:
/// string "..."`): in a credentials file that value may be the key itself.
fn redact_quoted_values(text: &str) -> String {
    const MARK: &str = "string \"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        let value_start = i + MARK.len();
        out.push_str(&rest[..value_start]);
        let value = &rest[value_start..];
        let mut end = value.len();
        let mut escaped = false;
        for (j, c) in value.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    end = j;
                    break;
                }
                _ => escaped = false,
            }
        }
        out.push_str("<redacted>");
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// One URL token: drop user-info and replace a query string with `?<redacted>`.
fn scrub_url(url: &str, scheme_len: usize) -> String {
    let (scheme, tail) = url.split_at(scheme_len);
    let authority_end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    let (authority, path) = tail.split_at(authority_end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let path = match path.find('?') {
        Some(i) => format!("{}?<redacted>", &path[..i]),
        None => path.to_string(),
    };
    format!("{scheme}{host}{path}")
}

fn redact_param(text: &str, param: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(param) {
        let value_start = i + param.len();
        out.push_str(&rest[..value_start]);
        let value = &rest[value_start..];
        let end = value
            .find(|c: char| c == '&' || c.is_whitespace() || c == '"')
            .unwrap_or(value.len());
        if end > 0 && !value.starts_with("<redacted>") {
            out.push_str("<redacted>");
        } else {
            out.push_str(&value[..end]);
        }
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// Whether an I/O error means the disk (or the quota) is full.
pub(crate) fn is_no_space(err: &io::Error) -> bool {
    // ENOSPC = 28, EDQUOT = 122 on Linux.
    err.kind() == io::ErrorKind::StorageFull || matches!(err.raw_os_error(), Some(28 | 122))
}

/// Maps a local I/O error for `operation` on `name` (file `path`).
pub(crate) fn map_io(
    err: io::Error,
    operation: &'static str,
    store: &str,
    name: &str,
    path: &std::path::Path,
) -> StoreError {
    if is_no_space(&err) {
        return StoreError::NoSpace {
            path: path.display().to_string(),
        };
    }
    if err.kind() == io::ErrorKind::NotFound && matches!(operation, "download" | "head") {
        return StoreError::NotFound {
            store: store.to_string(),
            name: name.to_string(),
        };
    }
    let reason = match err.kind() {
        io::ErrorKind::PermissionDenied => format!(
            "{err} ({}): check the permissions of the directory, or run as a user who may write it",
            path.display()
        ),
        io::ErrorKind::ReadOnlyFilesystem => format!(
            "{err} ({}): the file system is mounted read-only; choose another destination",
            path.display()
        ),
        _ => format!("{err} ({})", path.display()),
    };
    StoreError::Operation {
        operation,
        store: store.to_string(),
        name: name.to_string(),
        reason,
    }
}

/// Maps an object_store error for `operation` on `name`.
pub(crate) fn map_object(
    err: object_store::Error,
    operation: &'static str,
    ctx: &ErrorContext,
    name: &str,
) -> StoreError {
    use object_store::Error as E;

    let info = ErrorInfo::from_chain(&err);
    let text = ctx.scrub(&err.to_string());
    let store = ctx.store.clone();

    if info.body_has(&[
        "NoSuchBucket",
        "ContainerNotFound",
        "The specified bucket does not exist",
        "bucket does not exist",
    ]) {
        return StoreError::MissingBucket {
            store,
            bucket: ctx.bucket.clone(),
        };
    }
    if info.body_has(&[
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AuthenticationFailed",
        "AuthorizationFailure",
        "AccessDenied",
        "ExpiredToken",
        "InvalidToken",
        "InvalidClientTokenId",
        "AuthorizationPermissionMismatch",
    ]) || matches!(info.status, Some(401 | 403))
        || matches!(err, E::Unauthenticated { .. } | E::PermissionDenied { .. })
    {
        return StoreError::Auth {
            store,
            reason: format!("{}; {}", short_reason(&info, &text, ctx), ctx.auth_hint),
        };
    }
    if let E::NotFound { .. } = err {
        return StoreError::NotFound {
            store,
            name: name.to_string(),
        };
    }
    if info.connect {
        return StoreError::Unreachable {
            store,
            reason: format!(
                "{}; check the {} endpoint, the network and any proxy settings",
                short_reason(&info, &text, ctx),
                ctx.backend
            ),
        };
    }
    let lower = text.to_ascii_lowercase();
    if lower.contains("credential") || lower.contains("token") && lower.contains("fetch") {
        return StoreError::Auth {
            store,
            reason: format!("{text}; {}", ctx.auth_hint),
        };
    }
    StoreError::Operation {
        operation,
        store,
        name: name.to_string(),
        reason: text,
    }
}

/// The useful part of an error: the HTTP status with the store's error code and message when
/// present, else the scrubbed text.
fn short_reason(info: &ErrorInfo, text: &str, ctx: &ErrorContext) -> String {
    let Some(status) = info.status else {
        return match &info.http_message {
            Some(m) => ctx.scrub(m),
            None => text.to_string(),
        };
    };
    let detail = match (info.xml("Code"), info.xml("Message")) {
        (Some(code), Some(message)) => format!(" {code}: {message}"),
        (Some(code), None) => format!(" {code}"),
        _ => {
            // Not XML (GCS JSON, plain text): the first line of the body, shortened.
            let body = info.body.as_deref().unwrap_or_default();
            let body = body
                .get(3..)
                .unwrap_or_default()
                .trim_start_matches([' ', ':']);
            let body = body.lines().next().unwrap_or_default().trim();
            let short: String = body.chars().take(200).collect();
            if short.is_empty() {
                String::new()
            } else {
                format!(" {short}")
            }
        }
    };
    ctx.scrub(&format!("HTTP {status}{detail}"))
}

/// What the source chain of an object_store error tells.
#[derive(Debug, Default)]
struct ErrorInfo {
    status: Option<u16>,
    body: Option<String>,
    connect: bool,
    http_message: Option<String>,
}

impl ErrorInfo {
    fn from_chain(err: &object_store::Error) -> ErrorInfo {
        use object_store::client::{HttpError, HttpErrorKind};

        let mut info = ErrorInfo::default();
        // object_store's retry error type is private: read status and body from its text,
        // "Server returned non-2xx status code: 404 Not Found: <body>" or
        // "Server returned error response: <body>".
        let text = err.to_string();
        const STATUS: &str = "status code: ";
        if let Some(i) = text.find(STATUS) {
            let rest = &text[i + STATUS.len()..];
            info.status = rest.get(..3).and_then(|s| s.parse().ok());
            info.body = Some(rest.to_string());
        } else if let Some(i) = text.find("error response: ") {
            info.body = Some(text[i..].to_string());
        }
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
        while let Some(e) = current {
            if let Some(http) = e.downcast_ref::<HttpError>() {
                if matches!(http.kind(), HttpErrorKind::Connect | HttpErrorKind::Timeout) {
                    info.connect = true;
                }
                // The innermost cause (e.g. "Connection refused") is the most useful.
                let mut inner: Option<&(dyn std::error::Error + 'static)> = Some(http);
                let mut last = http.to_string();
                while let Some(i) = inner {
                    last = i.to_string();
                    inner = i.source();
                }
                info.http_message = Some(last);
            }
            let io_connect = e.downcast_ref::<io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::HostUnreachable
                        | io::ErrorKind::NetworkUnreachable
                )
            });
            if io_connect {
                info.connect = true;
            }
            current = e.source();
        }
        if !info.connect && info.status.is_none() && info.body.is_none() {
            let lower = text.to_ascii_lowercase();
            if lower.contains("error trying to connect")
                || lower.contains("connection refused")
                || lower.contains("dns error")
                || lower.contains("failed to lookup address")
            {
                info.connect = true;
            }
        }
        info
    }

    fn body_has(&self, needles: &[&str]) -> bool {
        self.body
            .as_deref()
            .is_some_and(|b| needles.iter().any(|n| b.contains(n)))
    }

    /// The text of `<tag>...</tag>` in an S3/Azure XML error body.
    fn xml(&self, tag: &str) -> Option<String> {
        let body = self.body.as_deref()?;
        let open = format!("<{tag}>");
        let start = body.find(&open)? + open.len();
        let end = body[start..].find(&format!("</{tag}>"))? + start;
        Some(body[start..end].trim().to_string())
    }
}

impl etcd_common::Hinted for StoreError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_values_quoted_by_serde() {
        let text = r#"Unable to decode service account file: invalid type: string "-----BEGIN PRIVATE KEY-----\"x", expected a map at line 1 column 40"#;
        let out = scrub(text);
        assert!(!out.contains("PRIVATE"), "{out}");
        assert!(
            out.contains("string \"<redacted>\", expected a map"),
            "{out}"
        );
    }

    #[test]
    fn scrub_removes_query_strings_and_userinfo() {
        let text = "Error performing GET https://acct.blob.core.windows.net/c/x?sv=2020&sig=SECRET%2B in 1s, \
                    then http://user:pass@host:9000/b?X-Amz-Signature=abc done";
        let out = scrub(text);
        assert!(!out.contains("SECRET"), "{out}");
        assert!(!out.contains("pass"), "{out}");
        assert!(!out.contains("X-Amz-Signature=abc"), "{out}");
        assert!(
            out.contains("https://acct.blob.core.windows.net/c/x?<redacted>"),
            "{out}"
        );
        assert!(out.contains("http://host:9000/b?<redacted> done"), "{out}");
    }

    #[test]
    fn scrub_redacts_sig_outside_urls_and_known_secrets() {
        let ctx = ErrorContext {
            secrets: vec!["hunter22".into()],
            ..ErrorContext::default()
        };
        let out = ctx.scrub("token sv=1&sig=abc%3D&se=2 and key hunter22");
        assert_eq!(out, "token sv=1&sig=<redacted>&se=2 and key <redacted>");
    }

    #[test]
    fn enospc_and_edquot_are_no_space() {
        for code in [28, 122] {
            let err = map_io(
                io::Error::from_raw_os_error(code),
                "upload",
                "/backups",
                "x.db",
                std::path::Path::new("/backups/.x.db.partial-1"),
            );
            assert!(matches!(err, StoreError::NoSpace { .. }), "{code}: {err:?}");
            assert!(err.to_string().contains("free space"), "{err}");
        }
    }

    fn generic(text: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: text.to_string().into(),
        }
    }

    fn ctx() -> ErrorContext {
        ErrorContext {
            store: "s3://b".into(),
            bucket: "b".into(),
            backend: "S3",
            auth_hint: "set AWS_ACCESS_KEY_ID".into(),
            secrets: vec!["topsecretkey".into()],
        }
    }

    #[test]
    fn object_errors_map_to_variants() {
        let missing = generic(
            "Error performing PUT http://h/b/x in 1ms - Server returned non-2xx status code: \
             404 Not Found: <Error><Code>NoSuchBucket</Code><Message>The specified bucket does \
             not exist</Message></Error>",
        );
        assert!(matches!(
            map_object(missing, "upload", &ctx(), "x"),
            StoreError::MissingBucket { .. }
        ));
        let denied = generic(
            "Error performing GET https://h/b?sig=topsecretkey in 1ms - Server returned non-2xx \
             status code: 403 Forbidden: <Error><Code>SignatureDoesNotMatch</Code><Message>key \
             topsecretkey bad</Message></Error>",
        );
        let err = map_object(denied, "download", &ctx(), "x");
        let text = err.to_string();
        assert!(matches!(err, StoreError::Auth { .. }), "{err:?}");
        assert!(text.contains("SignatureDoesNotMatch"), "{text}");
        assert!(text.contains("set AWS_ACCESS_KEY_ID"), "{text}");
        assert!(!text.contains("topsecretkey"), "{text}");
        let not_found = object_store::Error::NotFound {
            path: "x".into(),
            source: "404".into(),
        };
        assert!(matches!(
            map_object(not_found, "download", &ctx(), "x"),
            StoreError::NotFound { .. }
        ));
        let other = generic("Server returned non-2xx status code: 500 Internal: boom");
        assert!(matches!(
            map_object(other, "list", &ctx(), ""),
            StoreError::Operation {
                operation: "list",
                ..
            }
        ));
    }
}
