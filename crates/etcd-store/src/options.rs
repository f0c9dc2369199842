//! [`StoreOptions`]: credentials, endpoints and upload tuning, from flags or the environment.

use std::time::Duration;

use crate::error::scrub;

/// Default multipart part size when [`StoreOptions::part_size`] is 0: 8 MiB.
pub const DEFAULT_PART_SIZE: usize = 8 * 1024 * 1024;

/// Smallest part size S3 and GCS accept for every part but the last: 5 MiB.
pub const MIN_S3_PART_SIZE: usize = 5 * 1024 * 1024;

/// Largest part size S3 accepts: 5 GiB.
pub const MAX_PART_SIZE: usize = 5 * 1024 * 1024 * 1024;

/// Environment variables copied verbatim (lower-cased) into [`StoreOptions::extra`]: they are
/// object_store config keys of the same name. Secret ones are marked `true`.
const PASS_THROUGH: &[(&str, bool)] = &[
    ("AWS_ACCESS_KEY_ID", false),
    ("AWS_SECRET_ACCESS_KEY", true),
    ("AWS_SESSION_TOKEN", true),
    ("AWS_WEB_IDENTITY_TOKEN_FILE", false),
    ("AWS_ROLE_ARN", false),
    ("AWS_ROLE_SESSION_NAME", false),
    ("AWS_ENDPOINT_URL_STS", false),
    ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", false),
    ("AWS_CONTAINER_CREDENTIALS_FULL_URI", false),
    ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", false),
    ("AZURE_STORAGE_ACCOUNT_NAME", false),
    ("AZURE_STORAGE_ACCOUNT_KEY", true),
    ("AZURE_STORAGE_SAS_TOKEN", true),
    ("AZURE_CLIENT_ID", false),
    ("AZURE_CLIENT_SECRET", true),
    ("AZURE_TENANT_ID", false),
    ("AZURE_FEDERATED_TOKEN_FILE", false),
    ("GOOGLE_APPLICATION_CREDENTIALS", false),
    ("GOOGLE_SERVICE_ACCOUNT", false),
    ("GOOGLE_SERVICE_ACCOUNT_KEY", true),
];

/// Settings for opening stores: credentials and endpoints per backend, and upload tuning.
/// `Debug` never shows secrets: endpoints are shown without query strings or user-info, and
/// of [`extra`](Self::extra) only the keys.
///
/// Build it with [`StoreOptions::from_env`] and override fields from flags, or with
/// `StoreOptions { s3_endpoint: Some(..), ..StoreOptions::default() }`.
#[derive(Clone, Default)]
pub struct StoreOptions {
    /// S3 endpoint URL for S3-compatible servers (MinIO, Ceph, moto); AWS when unset.
    /// From `ETCDOPS_S3_ENDPOINT`, else `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`.
    /// When unset, [`endpoint_override`](Self::endpoint_override) is used for S3 too.
    pub s3_endpoint: Option<String>,
    /// S3 region (`AWS_REGION`, else `AWS_DEFAULT_REGION`); `us-east-1` when unset.
    pub s3_region: Option<String>,
    /// Allow plain-http endpoints (`ETCDOPS_ALLOW_HTTP`). Without it an `http://` endpoint
    /// is refused.
    pub allow_http: bool,
    /// Use path-style requests (`endpoint/bucket/key`) instead of virtual-hosted style
    /// (`bucket.endpoint/key`) (`ETCDOPS_S3_PATH_STYLE`). Most S3-compatible servers (MinIO,
    /// Ceph, moto) need it.
    pub s3_path_style: bool,
    /// Azure: use the Azurite emulator's well-known account `devstoreaccount1` and key
    /// (`ETCDOPS_AZURE_USE_EMULATOR`), at [`endpoint_override`](Self::endpoint_override) or
    /// `http://127.0.0.1:10000`. Plain http is then allowed.
    pub azure_use_emulator: bool,
    /// Azure/GCS endpoint override (emulators, sovereign clouds) (`ETCDOPS_STORE_ENDPOINT`).
    /// Azure: the account URL (`https://ACCOUNT.blob.core.windows.net`; with the emulator
    /// `http://127.0.0.1:PORT`). GCS: the base URL instead of `https://storage.googleapis.com`.
    pub endpoint_override: Option<String>,
    /// Multipart part size in bytes (object stores); at least 5 MiB for S3 and GCS, at most
    /// 5 GiB; 0 means [`DEFAULT_PART_SIZE`] (8 MiB) (`ETCDOPS_PART_SIZE`, bytes or a size as
    /// [`parse_size`](crate::parse_size) reads it: `MB` powers of 1000, `MiB` of 1024). Memory per upload is
    /// about three part sizes; S3 allows at most 10,000 parts (80 GB at 8 MiB).
    pub part_size: usize,
    /// Credentials and other settings as `(key, value)` pairs in object_store's config-key
    /// spelling (e.g. `aws_access_key_id`, `azure_storage_account_key`), from flags or env.
    /// Keys prefixed `aws_`, `azure_` or `google_` go to that backend only; a key a backend
    /// does not know is ignored by it.
    pub extra: Vec<(String, String)>,
    /// `AWS_PROFILE`: the shared-config profile whose static keys (`aws_access_key_id`,
    /// `aws_secret_access_key`, `aws_session_token` in `~/.aws/credentials` or
    /// `AWS_SHARED_CREDENTIALS_FILE`) and region (`~/.aws/config` or `AWS_CONFIG_FILE`) are used
    /// when no key is in the environment (the `default` profile when unset). Profiles that
    /// only name an SSO session, a role or a `credential_process` are not supported: export
    /// their credentials (`aws configure export-credentials --format env`).
    pub aws_profile: Option<String>,
    /// Retries of a failed request (object stores); object_store's default (10) when unset
    /// (`ETCDOPS_STORE_MAX_RETRIES`).
    pub max_retries: Option<usize>,
    /// Give up retrying a request after this long; object_store's default (3 min) when unset.
    pub retry_timeout: Option<Duration>,
    /// A PEM bundle of CA certificates trusted for object store endpoints besides the system's
    /// (a MinIO or Ceph endpoint with a private CA) (`ETCDOPS_STORE_CA_BUNDLE`, else
    /// `AWS_CA_BUNDLE`, the AWS CLI's and SDKs' variable).
    pub ca_bundle: Option<std::path::PathBuf>,
    /// Bad values found by [`StoreOptions::from_env`] as `(variable, reason)`;
    /// [`Store::open`](crate::Store::open) fails on the first with
    /// [`StoreError::InvalidOption`](crate::StoreError::InvalidOption), so a typo is never
    /// silently ignored.
    pub env_errors: Vec<(&'static str, String)>,
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let extra_keys: Vec<String> = self
            .extra
            .iter()
            .map(|(k, _)| format!("{k}=<redacted>"))
            .collect();
        f.debug_struct("StoreOptions")
            .field("s3_endpoint", &self.s3_endpoint.as_deref().map(scrub))
            .field("s3_region", &self.s3_region)
            .field("allow_http", &self.allow_http)
            .field("s3_path_style", &self.s3_path_style)
            .field("azure_use_emulator", &self.azure_use_emulator)
            .field(
                "endpoint_override",
                &self.endpoint_override.as_deref().map(scrub),
            )
            .field("part_size", &self.part_size)
            .field("extra", &extra_keys)
            .field("aws_profile", &self.aws_profile)
            .field("max_retries", &self.max_retries)
            .field("retry_timeout", &self.retry_timeout)
            .field("ca_bundle", &self.ca_bundle)
            .field("env_errors", &self.env_errors)
            .finish()
    }
}

impl StoreOptions {
    /// Options from the standard environment variables of each backend and `ETCDOPS_*`
    /// overrides. Bad values are recorded in [`env_errors`](Self::env_errors) and reported
    /// by [`Store::open`](crate::Store::open).
    ///
    /// | variable | field / config key |
    /// |---|---|
    /// | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` | `extra` (`aws_access_key_id`, ...) |
    /// | `AWS_REGION`, else `AWS_DEFAULT_REGION` | [`s3_region`](Self::s3_region) |
    /// | `ETCDOPS_S3_ENDPOINT`, else `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL` | [`s3_endpoint`](Self::s3_endpoint) |
    /// | `AWS_PROFILE`, `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE` | [`aws_profile`](Self::aws_profile): static keys and region of a shared-config profile, when no key is in the environment |
    /// | `AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`, `AWS_ROLE_SESSION_NAME`, `AWS_ENDPOINT_URL_STS` | `extra` (EKS IRSA / web identity) |
    /// | `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`, `AWS_CONTAINER_CREDENTIALS_FULL_URI`, `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` | `extra` (ECS / EKS pod identity) |
    /// | `AZURE_STORAGE_ACCOUNT_NAME`, `AZURE_STORAGE_ACCOUNT_KEY`, `AZURE_STORAGE_SAS_TOKEN` | `extra` |
    /// | `AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET`, `AZURE_TENANT_ID`, `AZURE_FEDERATED_TOKEN_FILE` | `extra` (service principal / workload identity) |
    /// | `GOOGLE_APPLICATION_CREDENTIALS`, `GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_SERVICE_ACCOUNT_KEY` | `extra` |
    /// | `ETCDOPS_S3_PATH_STYLE` (bool) | [`s3_path_style`](Self::s3_path_style) |
    /// | `ETCDOPS_ALLOW_HTTP` (bool) | [`allow_http`](Self::allow_http) |
    /// | `ETCDOPS_AZURE_USE_EMULATOR` (bool) | [`azure_use_emulator`](Self::azure_use_emulator) |
    /// | `ETCDOPS_STORE_ENDPOINT` | [`endpoint_override`](Self::endpoint_override) |
    /// | `ETCDOPS_PART_SIZE` (`8388608`, `8MiB`, `16MB`: [`parse_size`](crate::parse_size)) | [`part_size`](Self::part_size) |
    /// | `ETCDOPS_STORE_MAX_RETRIES` | [`max_retries`](Self::max_retries) |
    /// | `ETCDOPS_STORE_CA_BUNDLE`, else `AWS_CA_BUNDLE` | [`ca_bundle`](Self::ca_bundle) |
    ///
    /// Booleans accept `1`/`true`/`yes`/`on` and `0`/`false`/`no`/`off`. Empty variables
    /// count as unset.
    pub fn from_env() -> StoreOptions {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`StoreOptions::from_env`], reading variables through `lookup` (for tests and for
    /// callers with their own environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> StoreOptions {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut options = StoreOptions::default();

        for (name, _secret) in PASS_THROUGH {
            if let Some(value) = get(name) {
                options.extra.push((pass_through_key(name, &value), value));
            }
        }
        options.s3_region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION"));
        options.s3_endpoint = get("ETCDOPS_S3_ENDPOINT")
            .or_else(|| get("AWS_ENDPOINT_URL_S3"))
            .or_else(|| get("AWS_ENDPOINT_URL"));
        options.aws_profile = get("AWS_PROFILE");
        if get("AWS_ACCESS_KEY_ID").is_none() {
            let profile = options
                .aws_profile
                .clone()
                .unwrap_or_else(|| "default".into());
            let home = get("HOME").unwrap_or_default();
            let credentials = get("AWS_SHARED_CREDENTIALS_FILE")
                .unwrap_or_else(|| format!("{home}/.aws/credentials"));
            let config = get("AWS_CONFIG_FILE").unwrap_or_else(|| format!("{home}/.aws/config"));
            let keys = ini_section(&credentials, &profile);
            for key in [
                "aws_access_key_id",
                "aws_secret_access_key",
                "aws_session_token",
            ] {
                if let Some(value) = keys.get(key) {
                    options.extra.push((key.to_string(), value.clone()));
                }
            }
            if options.s3_region.is_none() {
                let section = if profile == "default" {
                    "default".to_string()
                } else {
                    format!("profile {profile}")
                };
                options.s3_region = ini_section(&config, &section).get("region").cloned();
            }
        }
        options.endpoint_override = get("ETCDOPS_STORE_ENDPOINT");
        options.ca_bundle = get("ETCDOPS_STORE_CA_BUNDLE")
            .or_else(|| get("AWS_CA_BUNDLE"))
            .map(std::path::PathBuf::from);

        let mut bool_var = |name: &'static str, field: &mut bool| {
            if let Some(value) = get(name) {
                match parse_bool(&value) {
                    Some(b) => *field = b,
                    None => options.env_errors.push((
                        name,
                        format!("'{value}' is not a boolean; use true or false"),
                    )),
                }
            }
        };
        let (mut path_style, mut allow_http, mut emulator) = (false, false, false);
        bool_var("ETCDOPS_S3_PATH_STYLE", &mut path_style);
        bool_var("ETCDOPS_ALLOW_HTTP", &mut allow_http);
        bool_var("ETCDOPS_AZURE_USE_EMULATOR", &mut emulator);
        options.s3_path_style = path_style;
        options.allow_http = allow_http;
        options.azure_use_emulator = emulator;

        if let Some(value) = get("ETCDOPS_PART_SIZE") {
            match etcd_common::parse_size(&value) {
                Ok(size) => options.part_size = size,
                Err(reason) => options.env_errors.push(("ETCDOPS_PART_SIZE", reason)),
            }
        }
        if let Some(value) = get("ETCDOPS_STORE_MAX_RETRIES") {
            match value.trim().parse() {
                Ok(n) => options.max_retries = Some(n),
                Err(_) => options.env_errors.push((
                    "ETCDOPS_STORE_MAX_RETRIES",
                    format!("'{value}' is not a number"),
                )),
            }
        }
        options
    }

    /// Whether the AWS profile supplied static keys (for messages).
    pub(crate) fn profile_has_keys(&self) -> bool {
        self.aws_profile.is_some() && self.extra.iter().any(|(k, _)| k == "aws_access_key_id")
    }

    /// The part size in effect: [`part_size`](Self::part_size), or [`DEFAULT_PART_SIZE`]
    /// when 0.
    pub fn effective_part_size(&self) -> usize {
        if self.part_size == 0 {
            DEFAULT_PART_SIZE
        } else {
            self.part_size
        }
    }

    /// Values that must never appear in a message: those of secret `extra` keys.
    pub(crate) fn secret_values(&self) -> Vec<String> {
        self.extra
            .iter()
            .filter(|(k, _)| is_secret_key(k))
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// Whether an object_store config key names a secret.
pub(crate) fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    PASS_THROUGH
        .iter()
        .any(|(name, secret)| *secret && name.eq_ignore_ascii_case(&key))
        || ["secret", "key", "token", "password", "sas"]
            .iter()
            .any(|w| key.contains(w) && !key.ends_with("_id") && !key.ends_with("_file"))
}

/// The object_store key a pass-through variable becomes. A service account key's JSON given
/// where a file path is expected (`GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_APPLICATION_CREDENTIALS`)
/// is the key itself: it becomes `google_service_account_key`, a secret, so that it is used as
/// a key and never echoed as "the file named {...}" in an error.
fn pass_through_key(name: &str, value: &str) -> String {
    let path_variable = matches!(
        name,
        "GOOGLE_SERVICE_ACCOUNT" | "GOOGLE_APPLICATION_CREDENTIALS"
    );
    if path_variable && value.trim_start().starts_with('{') {
        "google_service_account_key".to_string()
    } else {
        name.to_ascii_lowercase()
    }
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The `key = value` pairs of `[section]` in an INI file such as `~/.aws/credentials`; empty
/// when the file or section is missing.
fn ini_section(path: &str, section: &str) -> std::collections::HashMap<String, String> {
    let mut values = std::collections::HashMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return values;
    };
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
            continue;
        }
        if inside && let Some((key, value)) = line.split_once('=') {
            values.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> StoreOptions {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        StoreOptions::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn empty_environment_gives_defaults() {
        let o = env(&[]);
        assert!(o.extra.is_empty());
        assert_eq!(o.s3_endpoint, None);
        assert!(!o.allow_http && !o.s3_path_style && !o.azure_use_emulator);
        assert_eq!(o.part_size, 0);
        assert_eq!(o.effective_part_size(), DEFAULT_PART_SIZE);
        assert!(o.env_errors.is_empty());
    }

    #[test]
    fn aws_variables_fill_credentials_region_and_endpoint() {
        let o = env(&[
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
            ("AWS_SESSION_TOKEN", "tok"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "http://minio:9000"),
            ("AWS_PROFILE", "prod"),
        ]);
        assert!(
            o.extra
                .contains(&("aws_access_key_id".into(), "AKIAEXAMPLE".into()))
        );
        assert!(
            o.extra
                .contains(&("aws_secret_access_key".into(), "s3cr3t".into()))
        );
        assert!(
            o.extra
                .contains(&("aws_session_token".into(), "tok".into()))
        );
        assert_eq!(o.s3_region.as_deref(), Some("eu-west-1"));
        assert_eq!(o.s3_endpoint.as_deref(), Some("http://minio:9000"));
        assert_eq!(o.aws_profile.as_deref(), Some("prod"));
    }

    #[test]
    fn aws_region_beats_default_region_and_etcdops_endpoint_beats_aws() {
        let o = env(&[
            ("AWS_REGION", "us-west-2"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ENDPOINT_URL", "http://a:1"),
            ("AWS_ENDPOINT_URL_S3", "http://b:2"),
            ("ETCDOPS_S3_ENDPOINT", "http://c:3"),
        ]);
        assert_eq!(o.s3_region.as_deref(), Some("us-west-2"));
        assert_eq!(o.s3_endpoint.as_deref(), Some("http://c:3"));
        let o = env(&[
            ("AWS_ENDPOINT_URL", "http://a:1"),
            ("AWS_ENDPOINT_URL_S3", "http://b:2"),
        ]);
        assert_eq!(o.s3_endpoint.as_deref(), Some("http://b:2"));
    }

    #[test]
    fn service_account_json_in_a_path_variable_is_a_secret_key() {
        let json = r#"{"type": "service_account", "private_key": "SECRET-PK"#;
        let options = env(&[("GOOGLE_SERVICE_ACCOUNT", json)]);
        assert_eq!(
            options.extra,
            vec![("google_service_account_key".to_string(), json.to_string())]
        );
        assert!(options.secret_values().contains(&json.to_string()));
        assert!(!format!("{options:?}").contains("SECRET-PK"));
        let path = env(&[("GOOGLE_APPLICATION_CREDENTIALS", "/etc/gcs.json")]);
        assert_eq!(path.extra[0].0, "google_application_credentials");
    }

    #[test]
    fn azure_and_google_variables_become_config_keys() {
        let o = env(&[
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            ("AZURE_STORAGE_ACCOUNT_KEY", "a2V5"),
            ("AZURE_STORAGE_SAS_TOKEN", "sv=1&sig=x"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/etc/gcs.json"),
            ("GOOGLE_SERVICE_ACCOUNT", "/etc/sa.json"),
        ]);
        for (k, v) in [
            ("azure_storage_account_name", "acct"),
            ("azure_storage_account_key", "a2V5"),
            ("azure_storage_sas_token", "sv=1&sig=x"),
            ("google_application_credentials", "/etc/gcs.json"),
            ("google_service_account", "/etc/sa.json"),
        ] {
            assert!(
                o.extra.contains(&(k.to_string(), v.to_string())),
                "{k} missing"
            );
            // Every key is one the backends understand.
            let known = k.parse::<object_store::aws::AmazonS3ConfigKey>().is_ok()
                || k.parse::<object_store::azure::AzureConfigKey>().is_ok()
                || k.parse::<object_store::gcp::GoogleConfigKey>().is_ok();
            assert!(known, "{k} is not an object_store config key");
        }
    }

    #[test]
    fn etcdops_variables_set_flags_part_size_and_endpoint() {
        let o = env(&[
            ("ETCDOPS_S3_PATH_STYLE", "true"),
            ("ETCDOPS_ALLOW_HTTP", "1"),
            ("ETCDOPS_AZURE_USE_EMULATOR", "yes"),
            ("ETCDOPS_STORE_ENDPOINT", "http://127.0.0.1:10000"),
            ("ETCDOPS_PART_SIZE", "16MiB"),
            ("ETCDOPS_STORE_MAX_RETRIES", "2"),
        ]);
        assert!(o.s3_path_style && o.allow_http && o.azure_use_emulator);
        assert_eq!(
            o.endpoint_override.as_deref(),
            Some("http://127.0.0.1:10000")
        );
        assert_eq!(o.part_size, 16 * 1024 * 1024);
        assert_eq!(o.max_retries, Some(2));
        assert!(o.env_errors.is_empty(), "{:?}", o.env_errors);
    }

    #[test]
    fn bad_values_are_recorded_not_ignored() {
        let o = env(&[
            ("ETCDOPS_ALLOW_HTTP", "maybe"),
            ("ETCDOPS_PART_SIZE", "lots"),
        ]);
        let vars: Vec<&str> = o.env_errors.iter().map(|(v, _)| *v).collect();
        assert_eq!(vars, ["ETCDOPS_ALLOW_HTTP", "ETCDOPS_PART_SIZE"]);
        assert!(!o.allow_http);
    }

    #[test]
    fn the_part_size_variable_means_what_the_flag_means() {
        assert_eq!(env(&[("ETCDOPS_PART_SIZE", "5MB")]).part_size, 5_000_000);
        assert_eq!(env(&[("ETCDOPS_PART_SIZE", "5MiB")]).part_size, 5 << 20);
        let bad = env(&[("ETCDOPS_PART_SIZE", "5 parsecs")]);
        assert!(
            bad.env_errors
                .iter()
                .any(|(v, _)| *v == "ETCDOPS_PART_SIZE")
        );
    }

    #[test]
    fn debug_never_shows_secrets() {
        let mut o = env(&[
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-secret"),
            ("AWS_SESSION_TOKEN", "session-token-value"),
            ("AZURE_STORAGE_ACCOUNT_KEY", "azure-account-key=="),
            ("AZURE_STORAGE_SAS_TOKEN", "sv=2020&sig=sas-signature"),
            ("AZURE_CLIENT_SECRET", "client-secret-value"),
            ("GOOGLE_SERVICE_ACCOUNT_KEY", "{\"private_key\":\"pk\"}"),
        ]);
        o.s3_endpoint = Some("http://user:endpoint-password@minio:9000/?token=qs-secret".into());
        o.endpoint_override = Some("https://acct.blob.core.windows.net/?sig=override-sig".into());
        let debug = format!("{o:?}");
        for secret in [
            "AKIAEXAMPLE",
            "wJalrXUtnFEMI-secret",
            "session-token-value",
            "azure-account-key==",
            "sas-signature",
            "client-secret-value",
            "private_key",
            "endpoint-password",
            "qs-secret",
            "override-sig",
        ] {
            assert!(!debug.contains(secret), "{secret} leaked in {debug}");
        }
        // Still useful: the keys and the endpoint hosts are shown.
        assert!(
            debug.contains("aws_secret_access_key=<redacted>"),
            "{debug}"
        );
        assert!(debug.contains("minio:9000"), "{debug}");
    }

    #[test]
    fn secret_keys_are_recognised() {
        for k in [
            "aws_secret_access_key",
            "aws_session_token",
            "azure_storage_account_key",
            "azure_storage_sas_token",
            "azure_client_secret",
            "google_service_account_key",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in [
            "aws_access_key_id",
            "azure_client_id",
            "aws_web_identity_token_file",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn aws_profiles_supply_keys_and_region_unless_the_environment_has_keys() {
        let dir = tempfile::tempdir().unwrap();
        let credentials = dir.path().join("credentials");
        let config = dir.path().join("config");
        std::fs::write(
            &credentials,
            "[default]\naws_access_key_id = DEFAULTID\naws_secret_access_key = defaultsecret\n\n[prod]\naws_access_key_id=PRODID\naws_secret_access_key=prodsecret\naws_session_token = tok\n",
        )
        .unwrap();
        std::fs::write(
            &config,
            "[default]\nregion = us-east-1\n[profile prod]\nregion = eu-west-3\n",
        )
        .unwrap();
        let files = [
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                credentials.display().to_string(),
            ),
            ("AWS_CONFIG_FILE", config.display().to_string()),
        ];
        let lookup = |extra: Vec<(&'static str, String)>| {
            let mut all: Vec<(&str, String)> = files.iter().map(|(k, v)| (*k, v.clone())).collect();
            all.extend(extra);
            move |name: &str| all.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone())
        };
        let prod = StoreOptions::from_lookup(lookup(vec![("AWS_PROFILE", "prod".into())]));
        let get = |o: &StoreOptions, key: &str| {
            o.extra
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get(&prod, "aws_access_key_id").as_deref(), Some("PRODID"));
        assert_eq!(get(&prod, "aws_session_token").as_deref(), Some("tok"));
        assert_eq!(prod.s3_region.as_deref(), Some("eu-west-3"));
        assert!(!format!("{prod:?}").contains("prodsecret"));

        let default = StoreOptions::from_lookup(lookup(vec![]));
        assert_eq!(
            get(&default, "aws_access_key_id").as_deref(),
            Some("DEFAULTID")
        );
        assert_eq!(default.s3_region.as_deref(), Some("us-east-1"));

        let env_wins = StoreOptions::from_lookup(lookup(vec![
            ("AWS_PROFILE", "prod".into()),
            ("AWS_ACCESS_KEY_ID", "ENVID".into()),
            ("AWS_SECRET_ACCESS_KEY", "envsecret".into()),
        ]));
        assert_eq!(
            get(&env_wins, "aws_access_key_id").as_deref(),
            Some("ENVID")
        );
        assert_eq!(
            env_wins
                .extra
                .iter()
                .filter(|(k, _)| k == "aws_access_key_id")
                .count(),
            1
        );
    }
}
