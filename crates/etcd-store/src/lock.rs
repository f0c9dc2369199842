//! S3 Object Lock: a retention (governance or compliance, until a date) set on an object just
//! written, so that no one (compliance) or no one without a special permission (governance)
//! can delete that object version or shorten its retention before the date.
//!
//! object_store has no Object Lock API: the retention is set with S3's PutObjectRetention
//! call (`PUT /KEY?retention`), signed with object_store's own SigV4 signer and credentials
//! and sent through its HTTP client (the same CA bundle), right after the upload completes.
//! A bucket only takes it when it was created with Object Lock enabled (which turns
//! versioning on). On such a bucket a DELETE without a version id still succeeds: it adds a
//! delete marker and keeps the locked version. So the caller (the backup catalog) must know a
//! retention before it deletes; it records what it set in the backup's manifest.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use chrono::{DateTime, SecondsFormat, Utc};
use md5::Digest;
use object_store::aws::{AmazonS3, AwsAuthorizer};
use object_store::client::{HttpClient, HttpConnector, ReqwestConnector};
use object_store::path::Path;
use serde::{Deserialize, Serialize};

/// How strictly a locked object is held.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LockMode {
    /// Only an identity with `s3:BypassGovernanceRetention` may delete the version or shorten
    /// the retention.
    Governance,
    /// No one, the account's root user included, may delete the version or shorten the
    /// retention until the date.
    Compliance,
}

impl LockMode {
    /// S3's spelling (`GOVERNANCE`, `COMPLIANCE`).
    pub fn s3_name(self) -> &'static str {
        match self {
            LockMode::Governance => "GOVERNANCE",
            LockMode::Compliance => "COMPLIANCE",
        }
    }
}

impl std::fmt::Display for LockMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LockMode::Governance => "governance",
            LockMode::Compliance => "compliance",
        })
    }
}

/// A retention set on an object: its mode and the date until which it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectLock {
    /// Governance or compliance.
    pub mode: LockMode,
    /// Until when (UTC, whole seconds): the object version cannot be deleted before.
    pub retain_until: DateTime<Utc>,
}

impl ObjectLock {
    /// Whether the retention still holds at `now`.
    pub fn holds_at(&self, now: DateTime<Utc>) -> bool {
        self.retain_until > now
    }

    /// The body of a PutObjectRetention request.
    fn retention_xml(&self) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Mode>{}</Mode><RetainUntilDate>{}</RetainUntilDate></Retention>",
            self.mode.s3_name(),
            self.retain_until.to_rfc3339_opts(SecondsFormat::Secs, true)
        )
    }
}

/// What sets retentions on one S3 bucket: its client, credentials and URL.
pub(crate) struct S3Retention {
    s3: Arc<AmazonS3>,
    /// The HTTP client's options (the CA bundle); the client is made on the first lock only,
    /// so that a store that never locks pays nothing for it.
    client: object_store::ClientOptions,
    http: std::sync::OnceLock<HttpClient>,
    /// `https://bucket.s3.region.amazonaws.com`, `http://endpoint/bucket`: where keys are.
    bucket_url: String,
    region: String,
}

/// How many times a request that failed on the way (no answer, or a 5xx) is sent.
const ATTEMPTS: usize = 3;

impl S3Retention {
    pub fn new(
        s3: Arc<AmazonS3>,
        client: object_store::ClientOptions,
        bucket_url: String,
        region: String,
    ) -> S3Retention {
        S3Retention {
            s3,
            client,
            http: std::sync::OnceLock::new(),
            bucket_url,
            region,
        }
    }

    fn http(&self) -> Result<&HttpClient, (Option<String>, String)> {
        if let Some(http) = self.http.get() {
            return Ok(http);
        }
        let http = ReqwestConnector::default()
            .connect(&self.client)
            .map_err(|e| (None, e.to_string()))?;
        Ok(self.http.get_or_init(|| http))
    }

    /// Sets `lock` on the current version of `key`. Errors are text (what S3 said, with its
    /// code), for the caller to wrap.
    pub async fn put(&self, key: &Path, lock: &ObjectLock) -> Result<(), (Option<String>, String)> {
        let body = Bytes::from(lock.retention_xml());
        let md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(&body));
        let client = self.http()?;
        let url = format!("{}/{}?retention", self.bucket_url, encode_key(key.as_ref()));
        let mut last = (None, String::new());
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(200 << attempt)).await;
            }
            let credential = self
                .s3
                .credentials()
                .get_credential()
                .await
                .map_err(|e| (None, format!("no credentials: {e}")))?;
            let mut request = http::Request::builder()
                .method(http::Method::PUT)
                .uri(&url)
                .header("content-md5", &md5)
                .header("content-type", "application/xml")
                .body(object_store::client::HttpRequestBody::from(body.clone()))
                .map_err(|e| (None, e.to_string()))?;
            AwsAuthorizer::new(&credential, "s3", &self.region)
                .try_authorize(&mut request, None)
                .map_err(|e| (None, e.to_string()))?;
            let response = match client.execute(request).await {
                Ok(response) => response,
                Err(e) => {
                    last = (None, e.to_string());
                    continue;
                }
            };
            let status = response.status();
            if status.is_success() {
                return Ok(());
            }
            let text = response
                .into_body()
                .bytes()
                .await
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let code = xml_value(&text, "Code");
            let message = xml_value(&text, "Message").unwrap_or_default();
            last = (code.clone(), format!("HTTP {status}: {message}"));
            if !status.is_server_error() {
                break;
            }
        }
        Err(last)
    }
}

/// A key as S3 wants it in a URL: each byte but `A-Z a-z 0-9 - . _ ~ /` percent-encoded.
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The text of the first `<tag>` of an S3 error body.
fn xml_value(xml: &str, tag: &str) -> Option<String> {
    let start = xml.find(&format!("<{tag}>"))? + tag.len() + 2;
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(xml[start..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retention_body_is_what_s3_reads() {
        let lock = ObjectLock {
            mode: LockMode::Compliance,
            retain_until: "2026-12-31T23:59:59Z".parse().unwrap(),
        };
        let xml = lock.retention_xml();
        assert!(
            xml.contains(
                "<Mode>COMPLIANCE</Mode><RetainUntilDate>2026-12-31T23:59:59Z</RetainUntilDate>"
            ),
            "{xml}"
        );
        assert!(lock.holds_at("2026-12-31T23:59:58Z".parse().unwrap()));
        assert!(!lock.holds_at("2026-12-31T23:59:59Z".parse().unwrap()));
    }

    #[test]
    fn keys_are_encoded_as_s3_signs_them() {
        assert_eq!(
            encode_key("p/etcd-1/20261130T010000.000Z-rev10.db.zst"),
            "p/etcd-1/20261130T010000.000Z-rev10.db.zst"
        );
        assert_eq!(encode_key("a b+c"), "a%20b%2Bc");
    }

    #[test]
    fn error_codes_are_read_from_the_body() {
        let body = "<Error><Code>InvalidRequest</Code><Message>Bucket is missing \
                    ObjectLockConfiguration</Message></Error>";
        assert_eq!(xml_value(body, "Code").as_deref(), Some("InvalidRequest"));
        assert_eq!(
            xml_value(body, "Message").as_deref(),
            Some("Bucket is missing ObjectLockConfiguration")
        );
        assert_eq!(xml_value(body, "Nope"), None);
    }

    #[test]
    fn modes_read_as_users_write_them() {
        let mode: LockMode = serde_json::from_str("\"governance\"").unwrap();
        assert_eq!(mode, LockMode::Governance);
        assert_eq!(LockMode::Compliance.s3_name(), "COMPLIANCE");
        assert!(serde_json::from_str::<LockMode>("\"GOVERNANCE\"").is_err());
    }
}
