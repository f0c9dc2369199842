//! The EncryptionConfiguration file itself: its schema (internal: it holds key material),
//! reading it (positions in errors, never content) and writing it (mode 0600, atomically).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{API_VERSION, FILE_MODE, KIND, KeySecret, MAX_FILE, Provider};
use crate::error::{K8sError, Result};
use etcd_common::InvalidOption;

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct EncryptionConfiguration {
    pub(super) api_version: String,
    pub(super) kind: String,
    pub(super) resources: Vec<ResourceConfiguration>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResourceConfiguration {
    pub(super) resources: Vec<String>,
    pub(super) providers: Vec<ProviderConfiguration>,
}

#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProviderConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) aescbc: Option<KeysConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) aesgcm: Option<KeysConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) secretbox: Option<KeysConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) identity: Option<serde_yaml_ng::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) kms: Option<serde_yaml_ng::Value>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeysConfiguration {
    pub(super) keys: Vec<KeyConfiguration>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeyConfiguration {
    pub(super) name: String,
    pub(super) secret: KeySecret,
}

impl ProviderConfiguration {
    pub(super) fn keys(&self, provider: Provider) -> Option<&KeysConfiguration> {
        match provider {
            Provider::Aescbc => self.aescbc.as_ref(),
            Provider::Aesgcm => self.aesgcm.as_ref(),
            Provider::Secretbox => self.secretbox.as_ref(),
        }
    }

    pub(super) fn keys_mut(&mut self, provider: Provider) -> Option<&mut KeysConfiguration> {
        match provider {
            Provider::Aescbc => self.aescbc.as_mut(),
            Provider::Aesgcm => self.aesgcm.as_mut(),
            Provider::Secretbox => self.secretbox.as_mut(),
        }
    }

    pub(super) fn with_key(provider: Provider, key: KeyConfiguration) -> Self {
        let keys = Some(KeysConfiguration { keys: vec![key] });
        match provider {
            Provider::Aescbc => Self {
                aescbc: keys,
                ..Default::default()
            },
            Provider::Aesgcm => Self {
                aesgcm: keys,
                ..Default::default()
            },
            Provider::Secretbox => Self {
                secretbox: keys,
                ..Default::default()
            },
        }
    }

    /// `aescbc: a, b` / `identity` / `kms: name`: names only.
    pub(super) fn outline(&self) -> String {
        let mut parts = Vec::new();
        for (name, keys) in [
            ("aescbc", &self.aescbc),
            ("aesgcm", &self.aesgcm),
            ("secretbox", &self.secretbox),
        ] {
            if let Some(keys) = keys {
                let names: Vec<&str> = keys.keys.iter().map(|k| k.name.as_str()).collect();
                parts.push(format!("{name}: {}", names.join(", ")));
            }
        }
        if self.identity.is_some() {
            parts.push("identity".into());
        }
        if let Some(kms) = &self.kms {
            let name = kms
                .get("name")
                .and_then(|n| n.as_str())
                .unwrap_or("(unnamed)");
            parts.push(format!("kms: {name}"));
        }
        parts.join("; ")
    }

    pub(super) fn kind(&self) -> &'static str {
        if self.aescbc.is_some() {
            "aescbc"
        } else if self.aesgcm.is_some() {
            "aesgcm"
        } else if self.secretbox.is_some() {
            "secretbox"
        } else if self.identity.is_some() {
            "identity"
        } else if self.kms.is_some() {
            "kms"
        } else {
            "empty"
        }
    }
}

impl EncryptionConfiguration {
    pub(super) fn new(
        resources: &[String],
        provider: Provider,
        key: KeyConfiguration,
        identity_first: bool,
    ) -> Self {
        let mut providers = vec![
            ProviderConfiguration::with_key(provider, key),
            ProviderConfiguration {
                identity: Some(serde_yaml_ng::Value::Mapping(Default::default())),
                ..Default::default()
            },
        ];
        if identity_first {
            providers.reverse();
        }
        EncryptionConfiguration {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            resources: vec![ResourceConfiguration {
                resources: resources.to_vec(),
                providers,
            }],
        }
    }

    /// Key names of the whole file, one line per resources entry.
    pub(super) fn outline(&self) -> String {
        let mut out = String::new();
        for entry in &self.resources {
            out.push_str(&format!("resources: {}\n", entry.resources.join(", ")));
            for provider in &entry.providers {
                out.push_str(&format!("  - {}\n", provider.outline()));
            }
        }
        out
    }

    pub(super) fn render(&self) -> Result<String> {
        let body = serde_yaml_ng::to_string(self).map_err(|e| {
            K8sError::from(InvalidOption::input(
                "configuration",
                format!("cannot be written as YAML: {e}"),
            ))
        })?;
        Ok(format!(
            "# kube-apiserver's encryption provider config, written by etcdops (etcd.core).\n\
             # The same file on every control-plane host; mode 0600; the first key encrypts.\n{body}"
        ))
    }
}

pub(super) fn bad(path: &Path, reason: impl Into<String>) -> K8sError {
    K8sError::BadConfig {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Reads the file; `None` when absent. Parse errors give a position, never the content.
pub(super) fn read_config(path: &Path) -> Result<Option<(EncryptionConfiguration, u32)>> {
    let io = |source| K8sError::Io {
        operation: "read",
        path: path.display().to_string(),
        source,
    };
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    if !meta.is_file() || meta.len() > MAX_FILE {
        return Err(bad(
            path,
            "not a regular file of at most 1 MiB: is this the EncryptionConfiguration?",
        ));
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    let config: EncryptionConfiguration = serde_yaml_ng::from_str(&text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(" at line {}, column {}", l.line(), l.column()))
            .unwrap_or_default();
        bad(
            path,
            format!(
                "not a valid {API_VERSION} {KIND}{at}; fix it against the Kubernetes documentation or move it aside"
            ),
        )
    })?;
    if config.api_version != API_VERSION || config.kind != KIND {
        return Err(bad(
            path,
            format!(
                "apiVersion/kind are {}/{}, expected {API_VERSION}/{KIND}",
                config.api_version, config.kind
            ),
        ));
    }
    Ok(Some((config, meta.permissions().mode() & 0o7777)))
}

/// Writes `content` to `path` with mode 0600, never seen half-written (a missing parent is
/// made 0700: it holds keys).
pub(super) fn write_private(path: &Path, content: &str) -> Result<()> {
    Ok(
        etcd_core::write_file_atomically(path, content.as_bytes(), FILE_MODE, None)
            .map_err(etcd_core::Error::from)?,
    )
}
