//! Store URLs: which backend, which bucket, which prefix. Credentials never belong in them.

use std::path::PathBuf;

use crate::error::StoreError;

/// The backend a store URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum StoreKind {
    /// A local (or NFS-mounted) directory: a plain path or `file://`.
    Local,
    /// Amazon S3 or an S3-compatible server: `s3://bucket/prefix`.
    S3,
    /// Google Cloud Storage: `gs://bucket/prefix`.
    Gcs,
    /// Azure Blob Storage: `az://container/prefix` or `azure://container/prefix`.
    Azure,
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreKind::Local => "local directory",
            StoreKind::S3 => "S3",
            StoreKind::Gcs => "GCS",
            StoreKind::Azure => "Azure",
        })
    }
}

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A local directory (absolute).
    Local {
        /// The directory.
        dir: PathBuf,
    },
    /// A bucket or container on an object store, with an optional prefix.
    Object {
        /// Which object store.
        kind: StoreKind,
        /// Bucket (S3, GCS) or container (Azure).
        bucket: String,
        /// Key prefix without leading or trailing `/` (`""` for the bucket's root).
        prefix: String,
    },
}

impl StoreLocation {
    /// The backend.
    pub fn kind(&self) -> StoreKind {
        match self {
            StoreLocation::Local { .. } => StoreKind::Local,
            StoreLocation::Object { kind, .. } => *kind,
        }
    }

    /// The canonical URL: the absolute directory for local stores,
    /// `SCHEME://bucket[/prefix]` for object stores (`azure://` becomes `az://`).
    pub fn canonical_url(&self) -> String {
        match self {
            StoreLocation::Local { dir } => dir.display().to_string(),
            StoreLocation::Object {
                kind,
                bucket,
                prefix,
            } => {
                let scheme = match kind {
                    StoreKind::S3 => "s3",
                    StoreKind::Gcs => "gs",
                    _ => "az",
                };
                if prefix.is_empty() {
                    format!("{scheme}://{bucket}")
                } else {
                    format!("{scheme}://{bucket}/{prefix}")
                }
            }
        }
    }
}

const SUPPORTED: &str = "use a local path, file:///dir, s3://bucket/prefix, gs://bucket/prefix \
                         or az://container/prefix (azure:// is accepted too)";

/// Parses a store URL. Refuses credentials, query strings and unknown schemes; the URL in the
/// error never contains what was refused.
pub fn parse_store_url(input: &str) -> Result<StoreLocation, StoreError> {
    let input = input.trim();
    let invalid = |reason: String| StoreError::InvalidUrl {
        url: redact_input(input),
        reason,
    };
    if input.is_empty() {
        return Err(invalid(format!("the URL is empty; {SUPPORTED}")));
    }
    let Some((scheme, _)) = input.split_once("://") else {
        if input.contains(':') && !input.starts_with('/') && !input.starts_with('.') {
            // `s3:bucket`, `c:\dir`, `host:/export` (NFS: mount it first).
            let scheme = input.split(':').next().unwrap_or_default();
            if ["s3", "gs", "az", "azure", "file"].contains(&scheme.to_ascii_lowercase().as_str()) {
                return Err(invalid(format!(
                    "write {scheme}:// with two slashes; {SUPPORTED}"
                )));
            }
        }
        return local_path(input).map_err(invalid);
    };
    let scheme = scheme.to_ascii_lowercase();
    let kind = match scheme.as_str() {
        "file" => None,
        "s3" | "s3a" => Some(StoreKind::S3),
        "gs" | "gcs" => Some(StoreKind::Gcs),
        "az" | "azure" => Some(StoreKind::Azure),
        "http" | "https" => {
            return Err(invalid(format!(
                "http(s) URLs are not store URLs; name the bucket with its scheme and set the \
                 endpoint separately (ETCDOPS_S3_ENDPOINT or ETCDOPS_STORE_ENDPOINT); {SUPPORTED}"
            )));
        }
        other => {
            return Err(invalid(format!("unknown scheme '{other}'; {SUPPORTED}")));
        }
    };
    // The URL parser resolves `.` and `..` silently; a store prefix must not have them.
    let raw_path = input
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map_or("", |(_, path)| path);
    let raw_path = raw_path.split(['?', '#']).next().unwrap_or_default();
    if raw_path.split('/').any(|seg| seg == "." || seg == "..") {
        return Err(invalid(
            "bad prefix: '.' and '..' segments are not allowed".into(),
        ));
    }
    let url = url::Url::parse(input).map_err(|e| invalid(format!("{e}; {SUPPORTED}")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "credentials in the URL are refused (they would end up in logs and manifests); \
             pass them in environment variables or options"
                .into(),
        ));
    }
    if url.query().is_some() {
        return Err(invalid(
            "query strings are refused (SAS tokens and keys belong in environment variables, \
             e.g. AZURE_STORAGE_SAS_TOKEN)"
                .into(),
        ));
    }
    if url.fragment().is_some() {
        return Err(invalid(
            "a '#' fragment has no meaning in a store URL".into(),
        ));
    }
    let Some(kind) = kind else {
        return match url.host_str() {
            None | Some("") | Some("localhost") => {
                let path = url.to_file_path().map_err(|()| {
                    invalid("not a usable local path; write file:///absolute/dir".into())
                })?;
                if is_filesystem_root(&path) {
                    return Err(invalid(
                        "the path is empty, which names the filesystem root /; write \
                         file:///absolute/dir"
                            .into(),
                    ));
                }
                local_path(&path.display().to_string()).map_err(invalid)
            }
            Some(host) => Err(invalid(format!(
                "file:// URLs name a local directory, not host '{host}'; mount the share \
                 (e.g. NFS) and use file:///mount/point"
            ))),
        };
    };
    let bucket = url.host_str().unwrap_or_default().to_string();
    if bucket.is_empty() {
        let what = if kind == StoreKind::Azure {
            "container"
        } else {
            "bucket"
        };
        return Err(invalid(format!(
            "no {what} name; write {}://{what}/prefix",
            if kind == StoreKind::Azure {
                "az"
            } else {
                &scheme
            }
        )));
    }
    if url.port().is_some() {
        return Err(invalid(
            "a port has no meaning here; set the endpoint separately (ETCDOPS_S3_ENDPOINT or \
             ETCDOPS_STORE_ENDPOINT)"
                .into(),
        ));
    }
    let raw_prefix = url.path().trim_matches('/');
    let prefix = percent_decode(raw_prefix).map_err(invalid)?;
    if !prefix.is_empty() {
        crate::validate_name(&prefix).map_err(|reason| invalid(format!("bad prefix: {reason}")))?;
    }
    Ok(StoreLocation::Object {
        kind,
        bucket,
        prefix,
    })
}

fn local_path(input: &str) -> Result<StoreLocation, String> {
    let path = PathBuf::from(input);
    let dir =
        std::path::absolute(&path).map_err(|e| format!("cannot make '{input}' absolute: {e}"))?;
    // Remove trailing slashes and `.` components; keep `..` (symlinks make it meaningful).
    let dir: PathBuf = dir.components().collect();
    if is_filesystem_root(&dir) {
        return Err(format!(
            "'{input}' is the filesystem root, which cannot be a store (an empty variable in a \
             path gives /); name a directory, e.g. /var/backups/etcd"
        ));
    }
    Ok(StoreLocation::Local { dir })
}

/// Whether a path names `/` (also as `/..` or `/./`).
fn is_filesystem_root(path: &std::path::Path) -> bool {
    use std::path::Component;
    path.components().all(|c| {
        matches!(
            c,
            Component::RootDir | Component::ParentDir | Component::CurDir
        )
    }) && path.has_root()
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent-escape in '{s}'"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{s}' is not UTF-8 once decoded"))
}

/// The input with user-info and query string removed, for messages.
pub(crate) fn redact_input(input: &str) -> String {
    let (without_query, had_query) = match input.split_once('?') {
        Some((head, _)) => (head, true),
        None => (input, false),
    };
    let redacted = match without_query.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let host = match authority.rsplit_once('@') {
                Some((_, host)) => format!("<redacted>@{host}"),
                None => authority.to_string(),
            };
            format!("{scheme}://{host}{path}")
        }
        None => without_query.to_string(),
    };
    if had_query {
        format!("{redacted}?<redacted>")
    } else {
        redacted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: StoreKind, bucket: &str, prefix: &str) -> StoreLocation {
        StoreLocation::Object {
            kind,
            bucket: bucket.into(),
            prefix: prefix.into(),
        }
    }

    #[test]
    fn good_urls() {
        let cwd = std::env::current_dir().unwrap();
        let table: Vec<(&str, StoreLocation, &str)> = vec![
            (
                "/var/backups/etcd",
                StoreLocation::Local {
                    dir: "/var/backups/etcd".into(),
                },
                "/var/backups/etcd",
            ),
            (
                "/var/backups/etcd/",
                StoreLocation::Local {
                    dir: "/var/backups/etcd".into(),
                },
                "/var/backups/etcd",
            ),
            (
                "file:///mnt/nfs/etcd",
                StoreLocation::Local {
                    dir: "/mnt/nfs/etcd".into(),
                },
                "/mnt/nfs/etcd",
            ),
            (
                "file://localhost/mnt/with%20space",
                StoreLocation::Local {
                    dir: "/mnt/with space".into(),
                },
                "/mnt/with space",
            ),
            (
                "backups",
                StoreLocation::Local {
                    dir: cwd.join("backups"),
                },
                "",
            ),
            (
                "s3://bucket",
                object(StoreKind::S3, "bucket", ""),
                "s3://bucket",
            ),
            (
                "s3://bucket/etcd/prod/",
                object(StoreKind::S3, "bucket", "etcd/prod"),
                "s3://bucket/etcd/prod",
            ),
            (
                "S3://my.bucket-1/x",
                object(StoreKind::S3, "my.bucket-1", "x"),
                "s3://my.bucket-1/x",
            ),
            (
                "gs://bkt/p",
                object(StoreKind::Gcs, "bkt", "p"),
                "gs://bkt/p",
            ),
            (
                "az://container/a/b",
                object(StoreKind::Azure, "container", "a/b"),
                "az://container/a/b",
            ),
            (
                "azure://container",
                object(StoreKind::Azure, "container", ""),
                "az://container",
            ),
        ];
        for (input, expected, canonical) in table {
            let got = parse_store_url(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(got, expected, "{input}");
            if !canonical.is_empty() {
                assert_eq!(got.canonical_url(), canonical, "{input}");
            }
        }
    }

    #[test]
    fn bad_urls() {
        // (input, text the message must contain, text it must not contain)
        let table = [
            ("", "empty", "\u{0}"),
            ("ftp://host/dir", "s3://bucket/prefix", "\u{0}"),
            ("ftp://host/dir", "unknown scheme 'ftp'", "\u{0}"),
            (
                "https://bucket.s3.amazonaws.com/x",
                "ETCDOPS_S3_ENDPOINT",
                "\u{0}",
            ),
            ("s3://", "no bucket name", "\u{0}"),
            ("az:///prefix", "no container name", "\u{0}"),
            (
                "s3://AKIA:wJalrSECRET@bucket/x",
                "credentials in the URL are refused",
                "wJalrSECRET",
            ),
            (
                "s3://AKIAONLYUSER@bucket/x",
                "credentials in the URL are refused",
                "AKIAONLYUSER",
            ),
            (
                "az://container/p?sv=2022&sig=SASSIGNATURE",
                "query strings are refused",
                "SASSIGNATURE",
            ),
            ("s3://bucket:9000/x", "port", "\u{0}"),
            ("s3://bucket/a/../b", "bad prefix", "\u{0}"),
            ("s3://bucket/a//b", "bad prefix", "\u{0}"),
            ("file://nfs-server/export", "mount the share", "\u{0}"),
            ("s3:bucket/x", "two slashes", "\u{0}"),
            ("s3://bucket/x#frag", "fragment", "\u{0}"),
            ("file://", "filesystem root", "\u{0}"),
            ("file:///", "filesystem root", "\u{0}"),
            ("file://localhost/", "filesystem root", "\u{0}"),
            ("/", "filesystem root", "\u{0}"),
            ("//", "filesystem root", "\u{0}"),
            ("/..", "filesystem root", "\u{0}"),
        ];
        for (input, must, must_not) in table {
            let err = parse_store_url(input).expect_err(input);
            assert!(
                matches!(err, StoreError::InvalidUrl { .. }),
                "{input}: {err:?}"
            );
            let msg = err.to_string();
            assert!(msg.contains(must), "{input}: '{msg}' lacks '{must}'");
            assert!(
                !msg.contains(must_not),
                "{input}: '{msg}' leaks '{must_not}'"
            );
        }
    }

    #[test]
    fn redact_input_hides_userinfo_and_query() {
        assert_eq!(
            redact_input("s3://key:secret@bucket/x?token=t"),
            "s3://<redacted>@bucket/x?<redacted>"
        );
        assert_eq!(redact_input("/plain/path"), "/plain/path");
    }
}

/// Splits the URL of one object (`s3://bucket/prefix/name`, `/var/backups/etcd/name`) at the
/// last `/` into the store holding it and its name there, so one argument can name a backup.
pub fn split_object_url(url: &str) -> (String, String) {
    let trimmed = url.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((store, name)) if !store.is_empty() && !store.ends_with(':') => {
            (store.to_string(), name.to_string())
        }
        Some((_, name)) => ("/".to_string(), name.to_string()),
        None => (".".to_string(), trimmed.to_string()),
    }
}

#[cfg(test)]
mod split_tests {
    use super::split_object_url;

    #[test]
    fn object_urls_split_into_store_and_name() {
        let cases = [
            (
                "s3://b/p/etcd-abc/x.db.zst",
                ("s3://b/p/etcd-abc", "x.db.zst"),
            ),
            ("s3://b/x.db.zst", ("s3://b", "x.db.zst")),
            (
                "/var/backups/etcd-abc/x.db",
                ("/var/backups/etcd-abc", "x.db"),
            ),
            ("/x.db", ("/", "x.db")),
            ("x.db", (".", "x.db")),
        ];
        for (url, (store, name)) in cases {
            assert_eq!(
                split_object_url(url),
                (store.to_string(), name.to_string()),
                "{url}"
            );
        }
    }
}
