//! The error type, and the translation of I/O and object_store errors into it.
//!
//! Every message that leaves this crate goes through [`scrub`], which removes query strings
//! (where Azure SAS tokens live) and user-info from URLs, and any known secret value.

use std::io;
use std::path::PathBuf;

use etcd_common::{ErrorKind, Hint, Hinted, InvalidOption, OptionId};

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
    /// An option is missing or has a bad value (`invalid store option {option}: {reason}`).
    /// When it is a store option (`part_size`, `s3_endpoint`), that option is the error's
    /// hint; the backend's own settings ("s3") and environment variables have none.
    #[error(transparent)]
    InvalidOption(#[from] InvalidOption),
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
    /// No credentials for an object store were given, and none of the fallbacks (a profile,
    /// a web identity, instance metadata) gave any: the request was never signed, so the store
    /// refused nothing.
    #[error("no {backend} credentials found for {store}: looked in {details}")]
    NoCredentials {
        /// The store URL.
        store: String,
        /// "S3", "Azure", "GCS".
        backend: &'static str,
        /// Where credentials are looked up, in order, what the last place answered, and how
        /// to give credentials.
        details: String,
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
    /// A store endpoint is plain http, which is refused unless allowed (hint: `allow_http`).
    #[error(
        "invalid store option {option}: '{endpoint}' is plain http; allow plain http to use it"
    )]
    PlainHttp {
        /// The option that gave the endpoint.
        option: &'static str,
        /// The endpoint (credentials removed).
        endpoint: String,
    },
    /// The store answered with a server error (5xx) or throttled the request (429, SlowDown,
    /// ServerBusy) after the client's own retries: trying again later may work.
    #[error("{operation} '{name}' in {store} failed: {reason}")]
    Unavailable {
        /// "upload", "download", "list", "delete", ...
        operation: &'static str,
        /// The store URL.
        store: String,
        /// The object name.
        name: String,
        /// What the store said (credentials removed).
        reason: String,
    },
    /// A local store's file or directory could not be handled.
    #[error("{operation} '{name}' in {store} failed: {source} ({}){advice}", .path.display())]
    LocalIo {
        /// "upload", "download", "list", "delete", ...
        operation: &'static str,
        /// The store URL.
        store: String,
        /// The object name.
        name: String,
        /// The file or directory.
        path: PathBuf,
        /// What to do about it, or empty.
        advice: &'static str,
        /// The I/O error.
        source: io::Error,
    },
    /// Any other failure of an operation. An object store's error is kept as text, scrubbed
    /// of credentials, not as a source: its own text may hold a SAS token or a key.
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
    /// An entry inside a local store that is not a regular file (a symbolic link, a FIFO, a
    /// socket, a device, a dir where a file belongs), or a path through a symbolic link below
    /// the store's root: etcdops never reads, copies, overwrites or deletes it.
    #[error(
        "'{name}' in {store} is {kind}, not a file etcdops wrote: it is never read, copied or \
         deleted; move it out of the store if it is not meant to be there"
    )]
    NotRegular {
        /// The store URL.
        store: String,
        /// The entry's name in the store.
        name: String,
        /// What it is: "a symbolic link", "a FIFO", ...
        kind: &'static str,
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
    /// Where this backend looks for credentials when none were given (the environment
    /// variables, files and metadata services, in order); `None` when credentials were given.
    pub looked_up: Option<String>,
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
    if let Some(crate::local_fs::NotRegular(entry)) = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<crate::local_fs::NotRegular>())
    {
        return StoreError::NotRegular {
            store: store.to_string(),
            name: entry.name.clone(),
            kind: entry.kind,
        };
    }
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
    let advice = match err.kind() {
        io::ErrorKind::PermissionDenied => {
            ": check the permissions of the directory, or run as a user who may write it"
        }
        io::ErrorKind::ReadOnlyFilesystem => {
            ": the file system is mounted read-only; choose another destination"
        }
        _ => "",
    };
    StoreError::LocalIo {
        operation,
        store: store.to_string(),
        name: name.to_string(),
        path: path.to_path_buf(),
        advice,
        source: err,
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
    // Without credentials of its own the client asked the instance metadata service for
    // some: its failure (refused, unreachable) means none were found, not a store problem.
    let lower = text.to_ascii_lowercase();
    if (lower.contains("169.254.169.254") || lower.contains("metadata"))
        && let Some(no_credentials) = no_credentials(ctx, &short_reason(&info, &text, ctx))
    {
        return no_credentials;
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
        // Without credentials of its own, a refusal that is not the store's (no S3 error
        // code: the metadata service's, or a proxy's) means none were found.
        if info.xml("Code").is_none()
            && let Some(no_credentials) = no_credentials(ctx, &short_reason(&info, &text, ctx))
        {
            return no_credentials;
        }
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
    if lower.contains("credential") || lower.contains("token") && lower.contains("fetch") {
        if let Some(no_credentials) = no_credentials(ctx, &short_reason(&info, &text, ctx)) {
            return no_credentials;
        }
        return StoreError::Auth {
            store,
            reason: format!("{text}; {}", ctx.auth_hint),
        };
    }
    if info.is_server_trouble() {
        return StoreError::Unavailable {
            operation,
            store,
            name: name.to_string(),
            reason: text,
        };
    }
    StoreError::Operation {
        operation,
        store,
        name: name.to_string(),
        reason: text,
    }
}

/// [`StoreError::NoCredentials`] when the context says no credentials were given.
fn no_credentials(ctx: &ErrorContext, answer: &str) -> Option<StoreError> {
    let looked = ctx.looked_up.clone()?;
    let answer = if answer.is_empty() {
        String::new()
    } else {
        format!(" (the last one answered: {answer})")
    };
    Some(StoreError::NoCredentials {
        store: ctx.store.clone(),
        backend: ctx.backend,
        details: format!("{looked}{answer}; {}", ctx.auth_hint),
    })
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

    /// A server error or throttling: 5xx, 429, or the stores' own words for them.
    fn is_server_trouble(&self) -> bool {
        matches!(self.status, Some(429 | 500..=599))
            || self.body_has(&[
                "SlowDown",
                "ServerBusy",
                "ServiceUnavailable",
                "InternalError",
                "OperationTimedOut",
                "RequestTimeout",
                "TooManyRequests",
                "rateLimitExceeded",
            ])
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

pub(crate) use etcd_common::options::{
    ALLOW_HTTP, OBJECT_LOCK_MODE, PART_SIZE, S3_ENDPOINT, STORE_CA_BUNDLE, STORE_ENDPOINT,
};

/// Object Lock asked of a store that is not S3.
pub(crate) fn lock_unsupported(store: &str) -> StoreError {
    InvalidOption::new(
        OBJECT_LOCK_MODE,
        format!(
            "needs an S3 store: {store} is not one (Object Lock is set on S3 buckets only, not \
             on local dirs, GCS or Azure); save to an s3:// bucket created with Object Lock, \
             or drop the lock"
        ),
    )
    .into()
}

/// A retention S3 did not set: a bucket without Object Lock is bad input (the option's
/// hint); anything else is said as S3 said it.
pub(crate) fn lock_failed(
    ctx: &ErrorContext,
    name: &str,
    code: Option<&str>,
    reason: &str,
) -> StoreError {
    let reason = ctx.scrub(reason);
    if code == Some("InvalidRequest") && reason.contains("ObjectLockConfiguration") {
        return InvalidOption::new(
            OBJECT_LOCK_MODE,
            format!(
                "bucket '{}' of {} has no Object Lock enabled ({reason}): create the bucket \
                 with Object Lock enabled, or drop the lock",
                ctx.bucket, ctx.store
            ),
        )
        .into();
    }
    let advice = if code == Some("AccessDenied") {
        "; the identity needs s3:PutObjectRetention (and s3:BypassGovernanceRetention to \
         shorten a governance retention)"
    } else {
        ""
    };
    StoreError::Operation {
        operation: "lock",
        store: ctx.store.clone(),
        name: name.to_string(),
        reason: format!(
            "{}{reason}{advice}",
            code.map(|c| format!("{c}: ")).unwrap_or_default()
        ),
    }
}

/// An invalid store option: the message calls it a store option, and it is the hint.
pub(crate) fn invalid_option(option: OptionId, reason: impl Into<String>) -> StoreError {
    invalid_named(option.name, option, reason)
}

/// An invalid store option that the message calls `shown` (the endpoint override is the
/// `store_endpoint` option); `option` is the hint.
pub(crate) fn invalid_named(
    shown: &'static str,
    option: OptionId,
    reason: impl Into<String>,
) -> StoreError {
    InvalidOption::new(option, reason)
        .called(format!("store option {shown}"))
        .into()
}

/// A bad setting that is no option of the operation (a backend's own setting, an environment
/// variable): no hint.
pub(crate) fn invalid_setting(what: &'static str, reason: impl Into<String>) -> StoreError {
    InvalidOption::input(what, reason)
        .called(format!("store option {what}"))
        .into()
}

impl Hinted for StoreError {
    fn hint(&self) -> Option<Hint> {
        match self {
            StoreError::InvalidOption(e) => e.hint(),
            StoreError::PlainHttp { .. } => Some(Hint::option(ALLOW_HTTP)),
            _ => None,
        }
    }

    /// An unreachable store, a server error or throttling, or a local I/O timeout may pass
    /// if tried again; bad input, refused credentials, a missing object or bucket, a full
    /// disk do not.
    fn is_transient(&self) -> bool {
        match self {
            StoreError::Unreachable { .. } | StoreError::Unavailable { .. } => true,
            StoreError::LocalIo { source, .. } => matches!(
                source.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ),
            _ => false,
        }
    }

    fn kind(&self) -> Option<ErrorKind> {
        Some(match self {
            StoreError::InvalidOption(e) => return e.kind(),
            StoreError::InvalidUrl { .. }
            | StoreError::InvalidName { .. }
            | StoreError::NotRegular { .. } => ErrorKind::InvalidInput,
            StoreError::NotFound { .. }
            | StoreError::MissingBucket { .. }
            | StoreError::StoreMissing { .. } => ErrorKind::NotFound,
            StoreError::Auth { .. } => ErrorKind::AuthFailed,
            // Nothing was signed, so nothing was refused: credentials are to be given.
            StoreError::NoCredentials { .. } => ErrorKind::InvalidInput,
            StoreError::Unreachable { .. } | StoreError::Unavailable { .. } => {
                ErrorKind::Unreachable
            }
            StoreError::PlainHttp { .. } => ErrorKind::Refused,
            StoreError::NoSpace { .. }
            | StoreError::LocalIo { .. }
            | StoreError::Operation { .. } => ErrorKind::Other,
        })
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
