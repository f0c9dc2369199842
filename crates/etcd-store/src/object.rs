//! The object-store backends (S3, GCS, Azure), built on the `object_store` crate.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};

use crate::error::{
    ErrorContext, PART_SIZE, S3_ENDPOINT, STORE_CA_BUNDLE, STORE_ENDPOINT, invalid_named,
    invalid_option, invalid_setting, map_object,
};
use crate::lock::{ObjectLock, S3Retention};
use crate::options::{MAX_PART_SIZE, MIN_S3_PART_SIZE, StoreOptions};
use crate::parse::StoreKind;
use crate::{ByteStream, ObjectInfo, Result, StoreError};
use etcd_common::OptionId;

/// The Azurite emulator's well-known account.
const EMULATOR_ACCOUNT: &str = "devstoreaccount1";
/// The Azurite emulator's well-known key (public, documented by Microsoft).
const EMULATOR_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const EMULATOR_DEFAULT_URL: &str = "http://127.0.0.1:10000";

/// A bucket or container, with the prefix every name lives under.
#[derive(Clone)]
pub(crate) struct ObjectBackend {
    store: Arc<dyn ObjectStore>,
    /// Prefix without leading or trailing `/`, `""` for the bucket's root.
    prefix: String,
    part_size: usize,
    /// S3 only: what sets Object Lock retentions (boxed: its client options are large).
    retention: Option<Arc<S3Retention>>,
    pub ctx: ErrorContext,
}

impl std::fmt::Debug for ObjectBackend {
    // object_store's own Debug of a store can include static credentials: never print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectBackend")
            .field("store", &self.ctx.store)
            .field("part_size", &self.part_size)
            .finish_non_exhaustive()
    }
}

/// The backend each config-key prefix belongs to.
fn key_backend(key: &str) -> Option<StoreKind> {
    let key = key.to_ascii_lowercase();
    if key.starts_with("aws_") {
        Some(StoreKind::S3)
    } else if key.starts_with("azure_") {
        Some(StoreKind::Azure)
    } else if key.starts_with("google_") {
        Some(StoreKind::Gcs)
    } else {
        None
    }
}

/// The `extra` pairs meant for `kind`, parsed as its config keys; others are skipped.
fn extra_for<K: std::str::FromStr>(options: &StoreOptions, kind: StoreKind) -> Vec<(K, String)> {
    options
        .extra
        .iter()
        .filter(|(k, _)| key_backend(k).is_none_or(|b| b == kind))
        .filter_map(|(k, v)| {
            k.to_ascii_lowercase()
                .parse::<K>()
                .ok()
                .map(|key| (key, v.clone()))
        })
        .collect()
}

fn extra_value<'a>(options: &'a StoreOptions, keys: &[&str]) -> Option<&'a str> {
    options
        .extra
        .iter()
        .find(|(k, _)| keys.iter().any(|want| k.eq_ignore_ascii_case(want)))
        .map(|(_, v)| v.as_str())
}

fn retry_config(options: &StoreOptions) -> RetryConfig {
    let mut retry = RetryConfig::default();
    if let Some(n) = options.max_retries {
        retry.max_retries = n;
    }
    if let Some(t) = options.retry_timeout {
        retry.retry_timeout = t;
    }
    retry
}

/// HTTP client options: the CA bundle's certificates trusted besides the system's.
fn client_options(options: &StoreOptions) -> Result<object_store::ClientOptions> {
    let mut client = object_store::ClientOptions::new().with_allow_http(options.allow_http);
    let Some(path) = &options.ca_bundle else {
        return Ok(client);
    };
    let invalid = |reason: String| invalid_option(STORE_CA_BUNDLE, reason);
    let pem = std::fs::read(path)
        .map_err(|e| invalid(format!("cannot read the CA bundle {}: {e}", path.display())))?;
    let certificates = object_store::Certificate::from_pem_bundle(&pem)
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            invalid(format!(
                "{} holds no PEM certificate; give a file of -----BEGIN CERTIFICATE----- blocks",
                path.display()
            ))
        })?;
    for certificate in certificates {
        client = client.with_root_certificate(certificate);
    }
    Ok(client)
}

/// Checks the endpoint that option `hint` gives, which messages call `option`.
fn check_endpoint(
    option: &'static str,
    hint: OptionId,
    endpoint: &str,
    allow_http: bool,
) -> Result<String> {
    let url = url::Url::parse(endpoint).map_err(|e| {
        invalid_named(
            option,
            hint,
            format!(
                "'{}' is not a URL ({e}); write e.g. https://host:port",
                crate::error::scrub(endpoint)
            ),
        )
    })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid_named(
            option,
            hint,
            "credentials in the endpoint URL are refused; give them through the environment",
        ));
    }
    match url.scheme() {
        "https" => {}
        "http" if allow_http => {}
        "http" => {
            return Err(StoreError::PlainHttp {
                option,
                endpoint: crate::error::scrub(endpoint),
            });
        }
        other => {
            return Err(invalid_named(
                option,
                hint,
                format!("scheme '{other}' is not http or https"),
            ));
        }
    }
    Ok(endpoint.trim_end_matches('/').to_string())
}

/// Checks the endpoint override, which is the `store_endpoint` option.
fn check_override(endpoint: &str, allow_http: bool) -> Result<String> {
    check_endpoint("endpoint_override", STORE_ENDPOINT, endpoint, allow_http)
}

impl ObjectBackend {
    /// Builds the store for `kind` without any network access.
    pub fn open(
        kind: StoreKind,
        bucket: &str,
        prefix: &str,
        url: &str,
        options: &StoreOptions,
    ) -> Result<ObjectBackend> {
        let part_size = options.effective_part_size();
        if matches!(kind, StoreKind::S3 | StoreKind::Gcs) && part_size < MIN_S3_PART_SIZE {
            return Err(invalid_option(
                PART_SIZE,
                format!(
                    "{part_size} bytes is below the {kind} minimum of 5 MiB ({MIN_S3_PART_SIZE} \
                     bytes) for multipart parts; use at least 5MiB (default 8MiB)"
                ),
            ));
        }
        if part_size > MAX_PART_SIZE {
            return Err(invalid_option(
                PART_SIZE,
                format!("{part_size} bytes is above the 5 GiB maximum part size"),
            ));
        }
        let mut secrets = options.secret_values();
        let mut retention = None;
        let (store, auth_hint): (Arc<dyn ObjectStore>, String) = match kind {
            StoreKind::S3 => {
                let (s3, bucket_url) = build_s3(bucket, options)?;
                let region = options.s3_region.as_deref().unwrap_or(DEFAULT_REGION);
                retention = Some(Arc::new(S3Retention::new(
                    s3.clone(),
                    client_options(options)?,
                    bucket_url,
                    region.to_string(),
                )));
                (s3, s3_hint(options))
            }
            StoreKind::Azure => {
                if options.azure_use_emulator {
                    secrets.push(EMULATOR_KEY.to_string());
                }
                (
                    build_azure(bucket, options)?,
                    "set AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or \
                     AZURE_STORAGE_SAS_TOKEN (a SAS token needs read, write, list and delete \
                     permissions on the container), or a service principal \
                     (AZURE_CLIENT_ID, AZURE_CLIENT_SECRET, AZURE_TENANT_ID)"
                        .to_string(),
                )
            }
            StoreKind::Gcs => (
                build_gcs(bucket, options)?,
                "set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT) to a service \
                 account key file whose account may read and write objects in the bucket"
                    .to_string(),
            ),
            StoreKind::Local => {
                return Err(StoreError::InvalidUrl {
                    url: url.to_string(),
                    reason: "not an object store URL".into(),
                });
            }
        };
        Ok(ObjectBackend {
            store,
            prefix: prefix.to_string(),
            part_size,
            retention,
            ctx: ErrorContext {
                store: url.to_string(),
                bucket: bucket.to_string(),
                backend: match kind {
                    StoreKind::S3 => "S3",
                    StoreKind::Azure => "Azure",
                    _ => "GCS",
                },
                auth_hint,
                looked_up: credentials_looked_up(kind, options),
                secrets,
            },
        })
    }

    fn path(&self, name: &str) -> Result<Path> {
        let full = if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.prefix)
        };
        Path::parse(&full).map_err(|e| StoreError::InvalidName {
            name: name.to_string(),
            reason: e.to_string(),
        })
    }

    /// The name relative to the prefix of an object the store listed.
    fn relative<'a>(&self, location: &'a str) -> Option<&'a str> {
        if self.prefix.is_empty() {
            Some(location)
        } else {
            location
                .strip_prefix(self.prefix.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
        }
    }

    fn info(&self, name: &str, meta: &ObjectMeta) -> ObjectInfo {
        ObjectInfo {
            name: name.to_string(),
            size: meta.size,
            last_modified: meta
                .last_modified
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }
    }

    fn err(&self, e: object_store::Error, operation: &'static str, name: &str) -> StoreError {
        map_object(e, operation, &self.ctx, name)
    }

    pub async fn begin_upload(&self, name: &str) -> Result<ObjectUpload> {
        let path = self.path(name)?;
        let upload = self
            .store
            .put_multipart(&path)
            .await
            .map_err(|e| self.err(e, "upload", name))?;
        Ok(ObjectUpload {
            writer: Some(object_store::WriteMultipart::new_with_chunk_size(
                upload,
                self.part_size,
            )),
            backend: self.clone(),
            name: name.to_string(),
            path,
            buffered: 0,
            size: 0,
        })
    }

    pub async fn put_small(&self, name: &str, bytes: Bytes) -> Result<ObjectInfo> {
        let path = self.path(name)?;
        let size = bytes.len() as u64;
        self.store
            .put(&path, PutPayload::from_bytes(bytes))
            .await
            .map_err(|e| self.err(e, "upload", name))?;
        Ok(self.info_after_write(name, &path, size).await)
    }

    /// Metadata of an object just written; when the HEAD fails, the known size and now.
    async fn info_after_write(&self, name: &str, path: &Path, size: u64) -> ObjectInfo {
        match self.store.head(path).await {
            Ok(meta) => self.info(name, &meta),
            Err(_) => ObjectInfo {
                name: name.to_string(),
                size,
                last_modified: chrono::Utc::now()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            },
        }
    }

    pub async fn get_small(&self, name: &str) -> Result<Bytes> {
        let path = self.path(name)?;
        let result = self
            .store
            .get(&path)
            .await
            .map_err(|e| self.err(e, "download", name))?;
        result
            .bytes()
            .await
            .map_err(|e| self.err(e, "download", name))
    }

    pub async fn get(&self, name: &str) -> Result<(ObjectInfo, ByteStream)> {
        let path = self.path(name)?;
        let result = self
            .store
            .get(&path)
            .await
            .map_err(|e| self.err(e, "download", name))?;
        let info = self.info(name, &result.meta);
        let ctx = self.ctx.clone();
        let owned_name = name.to_string();
        let stream = result
            .into_stream()
            .map_err(move |e| map_object(e, "download", &ctx, &owned_name));
        Ok((info, stream.boxed()))
    }

    pub async fn head(&self, name: &str) -> Result<Option<ObjectInfo>> {
        let path = self.path(name)?;
        match self.store.head(&path).await {
            Ok(meta) => Ok(Some(self.info(name, &meta))),
            Err(e) => match self.err(e, "head", name) {
                StoreError::NotFound { .. } => Ok(None),
                other => Err(other),
            },
        }
    }

    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        // object_store lists by whole path segments: list the deepest directory the prefix
        // names completely, then filter by the string prefix.
        let dir = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let full_dir = match (self.prefix.is_empty(), dir.is_empty()) {
            (true, _) => dir.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{dir}", self.prefix),
        };
        let list_path = if full_dir.is_empty() {
            None
        } else {
            Some(Path::parse(&full_dir).map_err(|e| StoreError::InvalidName {
                name: prefix.to_string(),
                reason: e.to_string(),
            })?)
        };
        let mut stream = self.store.list(list_path.as_ref());
        let mut out = Vec::new();
        while let Some(meta) = stream.next().await {
            let meta = meta.map_err(|e| self.err(e, "list", prefix))?;
            let location = meta.location.as_ref();
            match self.relative(location) {
                Some(name) if name.starts_with(prefix) => out.push(self.info(name, &meta)),
                _ => {}
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The folders (common prefixes) directly inside `folder` (`""`: the prefix itself), as
    /// names relative to the prefix, sorted.
    pub async fn list_folders(&self, folder: &str) -> Result<Vec<String>> {
        let full = match (self.prefix.is_empty(), folder.is_empty()) {
            (true, _) => folder.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{folder}", self.prefix),
        };
        let path = if full.is_empty() {
            None
        } else {
            Some(Path::parse(&full).map_err(|e| StoreError::InvalidName {
                name: folder.to_string(),
                reason: e.to_string(),
            })?)
        };
        let listed = self
            .store
            .list_with_delimiter(path.as_ref())
            .await
            .map_err(|e| self.err(e, "list", folder))?;
        let mut out: Vec<String> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| self.relative(p.as_ref()).map(str::to_string))
            .collect();
        out.sort();
        Ok(out)
    }

    /// Whether retentions can be set here (S3).
    pub fn supports_object_lock(&self) -> bool {
        self.retention.is_some()
    }

    /// Sets `lock` on the current version of `name` (S3 only).
    pub async fn lock(&self, name: &str, lock: &ObjectLock) -> Result<()> {
        let path = self.path(name)?;
        let Some(retention) = &self.retention else {
            return Err(crate::error::lock_unsupported(&self.ctx.store));
        };
        retention.put(&path, lock).await.map_err(|(code, reason)| {
            crate::error::lock_failed(&self.ctx, name, code.as_deref(), &reason)
        })
    }

    pub async fn delete(&self, name: &str) -> Result<()> {
        let path = self.path(name)?;
        match self.store.delete(&path).await {
            Ok(()) => Ok(()),
            Err(e) => match self.err(e, "delete", name) {
                StoreError::NotFound { .. } => Ok(()),
                other => Err(other),
            },
        }
    }
}

/// Where a backend looks for credentials, when `options` hold none of its own (no key, token,
/// key file or identity in the environment or a profile): what a "no credentials found"
/// message lists. `None` when credentials were given.
fn credentials_looked_up(kind: StoreKind, options: &StoreOptions) -> Option<String> {
    let has = |keys: &[&str]| {
        options
            .extra
            .iter()
            .any(|(k, _)| keys.contains(&k.as_str()))
    };
    match kind {
        StoreKind::S3
            if !has(&[
                "aws_access_key_id",
                "aws_web_identity_token_file",
                "aws_container_credentials_relative_uri",
                "aws_container_credentials_full_uri",
            ]) =>
        {
            let profile = options.aws_profile.as_deref().unwrap_or("default");
            Some(format!(
                "the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), the profile \
                 '{profile}' of ~/.aws/credentials (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE), a \
                 web identity (AWS_WEB_IDENTITY_TOKEN_FILE), container credentials \
                 (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI) and the instance metadata service"
            ))
        }
        StoreKind::Azure
            if !options.azure_use_emulator
                && !has(&[
                    "azure_storage_account_key",
                    "azure_storage_sas_token",
                    "azure_client_secret",
                    "azure_federated_token_file",
                ]) =>
        {
            Some(
                "the environment (AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_TOKEN, a service \
                 principal's AZURE_CLIENT_ID, AZURE_CLIENT_SECRET and AZURE_TENANT_ID, a \
                 workload identity's AZURE_FEDERATED_TOKEN_FILE) and the instance metadata \
                 service"
                    .into(),
            )
        }
        StoreKind::Gcs
            if !has(&[
                "google_application_credentials",
                "google_service_account",
                "google_service_account_key",
            ]) =>
        {
            Some(
                "the environment (GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_SERVICE_ACCOUNT, \
                 GOOGLE_SERVICE_ACCOUNT_KEY) and the instance metadata service"
                    .into(),
            )
        }
        _ => None,
    }
}

fn s3_hint(options: &StoreOptions) -> String {
    let mut hint = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for \
                    temporary credentials), or run where an instance or pod role applies; the \
                    identity needs s3:PutObject, s3:GetObject, s3:ListBucket, s3:DeleteObject \
                    and s3:AbortMultipartUpload on the bucket"
        .to_string();
    if let Some(profile) = &options.aws_profile
        && !options.profile_has_keys()
    {
        hint.push_str(&format!(
            "; note: AWS_PROFILE={profile} has no static keys in ~/.aws/credentials (SSO, role \
             and credential_process profiles are not supported): export its credentials into \
             the environment first (the AWS CLI's configure export-credentials, in env format, \
             prints them for profile {profile})"
        ));
    }
    hint
}

/// The region of S3 when none is given.
const DEFAULT_REGION: &str = "us-east-1";

/// The S3 client of `bucket`, and the URL its keys are under (as object_store addresses
/// them: `endpoint/bucket` path style, `bucket.endpoint` virtual-hosted style).
fn build_s3(bucket: &str, options: &StoreOptions) -> Result<(Arc<AmazonS3>, String)> {
    let region = options.s3_region.as_deref().unwrap_or(DEFAULT_REGION);
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_client_options(client_options(options)?)
        .with_retry(retry_config(options))
        .with_allow_http(options.allow_http);
    for (key, value) in extra_for::<AmazonS3ConfigKey>(options, StoreKind::S3) {
        builder = builder.with_config(key, value);
    }
    builder = builder.with_region(region);
    let bucket_url;
    let endpoint = options
        .s3_endpoint
        .as_deref()
        .or(options.endpoint_override.as_deref());
    match endpoint {
        Some(endpoint) => {
            let endpoint =
                check_endpoint("s3_endpoint", S3_ENDPOINT, endpoint, options.allow_http)?;
            // An endpoint by IP address has no host name to put the bucket in: path style
            // is the only way to address it (as AWS's own SDKs fall back to it).
            let by_ip = url::Url::parse(&endpoint)
                .ok()
                .and_then(|u| u.host().map(|h| !matches!(h, url::Host::Domain(_))))
                .unwrap_or(false);
            if options.s3_path_style || by_ip {
                bucket_url = format!("{endpoint}/{bucket}");
                builder = builder
                    .with_endpoint(endpoint)
                    .with_virtual_hosted_style_request(false);
            } else {
                // Virtual-hosted style: object_store wants the bucket in the endpoint.
                let (scheme, host) = endpoint.split_once("://").unwrap_or(("https", &endpoint));
                bucket_url = format!("{scheme}://{bucket}.{host}");
                builder = builder
                    .with_endpoint(bucket_url.clone())
                    .with_virtual_hosted_style_request(true);
            }
        }
        None => {
            bucket_url = if options.s3_path_style {
                format!("https://s3.{region}.amazonaws.com/{bucket}")
            } else {
                format!("https://{bucket}.s3.{region}.amazonaws.com")
            };
            builder = builder.with_virtual_hosted_style_request(!options.s3_path_style);
        }
    }
    let store = builder
        .build()
        .map_err(|e| invalid_setting("s3", crate::error::scrub(&e.to_string())))?;
    Ok((Arc::new(store), bucket_url))
}

fn build_azure(container: &str, options: &StoreOptions) -> Result<Arc<dyn ObjectStore>> {
    let mut builder = MicrosoftAzureBuilder::new()
        .with_container_name(container)
        .with_client_options(client_options(options)?)
        .with_retry(retry_config(options))
        .with_allow_http(options.allow_http);
    for (key, value) in extra_for::<AzureConfigKey>(options, StoreKind::Azure) {
        builder = builder.with_config(key, value);
    }
    if options.azure_use_emulator {
        // Path-style emulator URLs: http://HOST:PORT/ACCOUNT/CONTAINER/BLOB. Instead of
        // object_store's emulator mode (which reads AZURITE_BLOB_STORAGE_URL from the process
        // environment) the account URL is given as the endpoint.
        let account = extra_value(options, &["azure_storage_account_name", "account_name"])
            .unwrap_or(EMULATOR_ACCOUNT)
            .to_string();
        let base = options
            .endpoint_override
            .as_deref()
            .unwrap_or(EMULATOR_DEFAULT_URL);
        let base = check_override(base, true)?;
        builder = builder
            .with_account(&account)
            .with_endpoint(format!("{base}/{account}"))
            .with_allow_http(true);
        if extra_value(
            options,
            &[
                "azure_storage_account_key",
                "azure_storage_access_key",
                "azure_storage_sas_token",
                "azure_storage_sas_key",
            ],
        )
        .is_none()
        {
            builder = builder.with_access_key(EMULATOR_KEY);
        }
    } else if let Some(endpoint) = &options.endpoint_override {
        let endpoint = check_override(endpoint, options.allow_http)?;
        builder = builder.with_endpoint(endpoint);
    }
    let store = builder.build().map_err(|e| {
        invalid_setting(
            "azure",
            format!(
                "{}; set AZURE_STORAGE_ACCOUNT_NAME and a credential (AZURE_STORAGE_ACCOUNT_KEY \
                 or AZURE_STORAGE_SAS_TOKEN)",
                crate::error::scrub(&e.to_string())
            ),
        )
    })?;
    Ok(Arc::new(store))
}

fn build_gcs(bucket: &str, options: &StoreOptions) -> Result<Arc<dyn ObjectStore>> {
    let mut builder = GoogleCloudStorageBuilder::new()
        .with_bucket_name(bucket)
        .with_client_options(client_options(options)?)
        .with_retry(retry_config(options));
    builder = builder.with_config(
        GoogleConfigKey::Client(object_store::ClientConfigKey::AllowHttp),
        options.allow_http.to_string(),
    );
    for (key, value) in extra_for::<GoogleConfigKey>(options, StoreKind::Gcs) {
        builder = builder.with_config(key, value);
    }
    if let Some(endpoint) = &options.endpoint_override {
        let endpoint = check_override(endpoint, options.allow_http)?;
        builder = builder.with_config(GoogleConfigKey::BaseUrl, endpoint);
    }
    let store = builder.build().map_err(|e| {
        invalid_setting(
            "gcs",
            format!(
                "{}; set GOOGLE_APPLICATION_CREDENTIALS to a service account key file",
                crate::error::scrub(&e.to_string())
            ),
        )
    })?;
    Ok(Arc::new(store))
}

/// At most this many parts upload at once; with the part being filled, memory stays at
/// about three part sizes.
const MAX_PARTS_IN_FLIGHT: usize = 2;

/// A multipart upload in progress.
pub(crate) struct ObjectUpload {
    writer: Option<object_store::WriteMultipart>,
    backend: ObjectBackend,
    name: String,
    path: Path,
    /// Bytes in the part being filled.
    buffered: usize,
    size: u64,
}

impl std::fmt::Debug for ObjectUpload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectUpload")
            .field("store", &self.backend.ctx.store)
            .field("name", &self.name)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl ObjectUpload {
    fn finished(&self) -> StoreError {
        StoreError::Operation {
            operation: "upload",
            store: self.backend.ctx.store.clone(),
            name: self.name.clone(),
            reason: "the upload already failed or finished".into(),
        }
    }

    pub async fn write(&mut self, mut chunk: Bytes) -> Result<()> {
        let part_size = self.backend.part_size;
        while !chunk.is_empty() {
            let room = part_size - self.buffered;
            let piece = chunk.split_to(room.min(chunk.len()));
            let fills_part = piece.len() == room;
            let Some(writer) = self.writer.as_mut() else {
                return Err(self.finished());
            };
            if fills_part {
                // This piece completes a part, which starts uploading at once: wait until
                // fewer than MAX_PARTS_IN_FLIGHT are in flight.
                if let Err(e) = writer.wait_for_capacity(MAX_PARTS_IN_FLIGHT).await {
                    let err = self.backend.err(e, "upload", &self.name);
                    if let Some(writer) = self.writer.take() {
                        let _ = writer.abort().await;
                    }
                    return Err(err);
                }
            }
            self.size += piece.len() as u64;
            self.buffered = (self.buffered + piece.len()) % part_size;
            writer.put(piece);
        }
        Ok(())
    }

    pub async fn complete(mut self) -> Result<ObjectInfo> {
        let Some(writer) = self.writer.take() else {
            return Err(self.finished());
        };
        // `finish` aborts the multipart upload itself when a part or the completion fails.
        writer
            .finish()
            .await
            .map_err(|e| self.backend.err(e, "upload", &self.name))?;
        Ok(self
            .backend
            .info_after_write(&self.name, &self.path, self.size)
            .await)
    }

    pub async fn abort(mut self) -> Result<()> {
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        writer
            .abort()
            .await
            .map_err(|e| self.backend.err(e, "abort", &self.name))
    }
}

/// How long dropping an unfinished upload waits for its multipart upload to be aborted.
const DROP_ABORT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Aborts of uploads dropped unfinished on a current-thread runtime, where a drop cannot wait:
/// [`dropped_uploads_settled`] awaits them.
static BACKGROUND_ABORTS: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>> =
    std::sync::Mutex::new(Vec::new());

/// Waits, at most `limit`, until every upload dropped unfinished so far has been aborted (on
/// a multi-threaded runtime the drop itself waited; on a current-thread one the abort runs in
/// the background). A caller that abandons an upload awaits this before it says the upload
/// is gone, or before its process exits.
pub async fn dropped_uploads_settled(limit: std::time::Duration) {
    let pending = std::mem::take(
        &mut *BACKGROUND_ABORTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let all = async {
        for abort in pending {
            let _ = abort.await;
        }
    };
    let _ = tokio::time::timeout(limit, all).await;
}

impl Drop for ObjectUpload {
    fn drop(&mut self) {
        // Neither completed nor aborted (an error path, or a cancelled future): abort the
        // multipart upload. On a multi-threaded runtime the drop waits for it (at most
        // DROP_ABORT_WAIT), so a process that exits right after a cancellation leaves no open
        // upload; elsewhere it runs in the background, awaited by `dropped_uploads_settled`
        // (a bucket lifecycle rule that aborts incomplete multipart uploads catches the rest).
        let Some(writer) = self.writer.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread {
            tokio::task::block_in_place(|| {
                let _ = handle.block_on(tokio::time::timeout(DROP_ABORT_WAIT, writer.abort()));
            });
        } else {
            let abort = handle.spawn(async move {
                let _ = tokio::time::timeout(DROP_ABORT_WAIT, writer.abort()).await;
            });
            BACKGROUND_ABORTS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(abort);
        }
    }
}
