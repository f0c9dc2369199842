//! How a store is reached and how encrypted backups are read, from request fields in one
//! place (the CLI's store flags and the shim's store options are the same names).

use std::path::PathBuf;

use etcd_snapshot::{Identities, Recipients};
use etcd_store::{Store, StoreOptions};
use serde::{Deserialize, Deserializer};

use crate::error::Result;

/// The options that tune how a store URL is reached; credentials come from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct StoreSettings {
    /// S3-compatible endpoint URL (MinIO, Ceph, ...).
    pub s3_endpoint: Option<String>,
    /// S3 region.
    pub s3_region: Option<String>,
    /// Path-style S3 requests.
    pub s3_path_style: bool,
    /// Allow plain-http store endpoints.
    pub allow_http: bool,
    /// Azure: use the Azurite emulator account.
    pub azure_emulator: bool,
    /// Azure or GCS endpoint override.
    pub store_endpoint: Option<String>,
    /// Multipart part size for object stores, in bytes.
    pub part_size: Option<usize>,
    /// A PEM bundle of CA certificates trusted for object store endpoints (a private CA).
    pub store_ca_bundle: Option<std::path::PathBuf>,
}

impl StoreSettings {
    /// These settings over the environment's.
    pub fn options(&self) -> StoreOptions {
        let mut options = StoreOptions::from_env();
        if let Some(endpoint) = &self.s3_endpoint {
            options.s3_endpoint = Some(endpoint.clone());
        }
        if let Some(region) = &self.s3_region {
            options.s3_region = Some(region.clone());
        }
        options.s3_path_style |= self.s3_path_style;
        options.allow_http |= self.allow_http;
        options.azure_use_emulator |= self.azure_emulator;
        if let Some(endpoint) = &self.store_endpoint {
            options.endpoint_override = Some(endpoint.clone());
        }
        if let Some(size) = self.part_size {
            options.part_size = size;
        }
        if let Some(bundle) = &self.store_ca_bundle {
            options.ca_bundle = Some(bundle.clone());
        }
        options
    }

    /// Opens the store at `url` with these settings.
    pub fn open(&self, url: &str) -> Result<Store> {
        Ok(Store::open(url, &self.options())?)
    }
}

/// The age identities that decrypt an encrypted backup: identity files on this host, or an
/// identity given as text (a secret: its `Debug` never shows it).
#[derive(Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct IdentitySettings {
    /// Identity files (`AGE-SECRET-KEY-1...` lines); one or several.
    #[serde(deserialize_with = "one_or_many")]
    #[schemars(with = "Option<PathBuf>")]
    pub identity_file: Vec<PathBuf>,
    /// An identity given as text.
    #[schemars(extend("x-no-log" = true))]
    pub identity_content: Option<String>,
}

impl std::fmt::Debug for IdentitySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentitySettings")
            .field("identity_file", &self.identity_file)
            .field(
                "identity_content",
                &self.identity_content.as_ref().map(|_| "********"),
            )
            .finish()
    }
}

impl IdentitySettings {
    /// The identities given (none when neither field is set), and a warning for each
    /// identity file others can read.
    pub fn identities(&self) -> Result<(Identities, Vec<String>)> {
        let mut identities = Identities::none();
        let mut warnings = Vec::new();
        for path in &self.identity_file {
            warnings.extend(identities.add_file(path)?);
        }
        if let Some(text) = &self.identity_content {
            identities.add_text(text, "identity_content")?;
        }
        Ok((identities, warnings))
    }
}

/// The recipients of `encrypt_to` (public keys) and `encrypt_to_file` (files of them).
pub(crate) fn recipients(keys: &[String], files: &[PathBuf]) -> Result<Recipients> {
    let mut recipients = Recipients::none();
    for key in keys {
        recipients.add(key, "a recipient to encrypt to")?;
    }
    for path in files {
        recipients.add_file(path)?;
    }
    Ok(recipients)
}

/// A list given as one value or several (`identity_file: a` or `[a, b]`).
pub(crate) fn one_or_many<'de, D, T>(deserializer: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany<T> {
        One(T),
        Many(Vec<T>),
    }
    Ok(match Option::<OneOrMany<T>>::deserialize(deserializer)? {
        None => Vec::new(),
        Some(OneOrMany::One(one)) => vec![one],
        Some(OneOrMany::Many(many)) => many,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_options_deserialize_into_the_settings() {
        let settings: StoreSettings = serde_json::from_value(serde_json::json!({
            "s3_endpoint": "http://minio:9000", "s3_path_style": true, "part_size": 5242880
        }))
        .unwrap();
        assert_eq!(settings.s3_endpoint.as_deref(), Some("http://minio:9000"));
        assert!(settings.s3_path_style && !settings.allow_http);
        assert_eq!(settings.options().part_size, 5242880);
        let ids: IdentitySettings =
            serde_json::from_value(serde_json::json!({"identity_file": "/k"})).unwrap();
        assert_eq!(ids.identity_file, [PathBuf::from("/k")]);
        let ids: IdentitySettings = serde_json::from_value(serde_json::json!({
            "identity_file": ["/a", "/b"], "identity_content": "AGE-SECRET-KEY-1XYZ"
        }))
        .unwrap();
        assert_eq!(ids.identity_file.len(), 2);
        assert!(!format!("{ids:?}").contains("AGE-SECRET"));
    }
}
