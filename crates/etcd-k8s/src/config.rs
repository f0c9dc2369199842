//! kube-apiserver's `EncryptionConfiguration` (apiserver.config.k8s.io/v1): generating one,
//! and rotating its keys one step of Kubernetes' procedure per call, refusing a step out of
//! order. Key material comes in (made once per cluster by [`new_encryption_key`], the same on
//! every control-plane host) and is only ever written to the file, mode 0600 through a
//! temporary file, fsync and rename. Results, diffs and errors name keys, never their
//! material.

use std::fmt;
use std::path::PathBuf;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::error::{K8sError, RESOURCES, Result};
use etcd_common::InvalidOption;

/// The apiVersion written and accepted.
pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
/// The kind written and accepted.
pub const KIND: &str = "EncryptionConfiguration";
/// Bytes of a new key.
pub const KEY_BYTES: usize = 32;
/// Mode of the written file.
pub const FILE_MODE: u32 = 0o600;
/// Larger existing files are refused (a real one is a few KiB).
const MAX_FILE: u64 = 1 << 20;

/// An encrypting provider whose keys this crate manages.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// AES-CBC with PKCS#7 padding (Kubernetes' long-standing default choice).
    #[default]
    Aescbc,
    /// AES-GCM with a random nonce: fast, but its keys must be rotated every 200,000 writes.
    Aesgcm,
    /// XSalsa20 and Poly1305.
    Secretbox,
}

impl Provider {
    /// The name used in the file and in stored values.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Aescbc => "aescbc",
            Provider::Aesgcm => "aesgcm",
            Provider::Secretbox => "secretbox",
        }
    }

    /// Key lengths kube-apiserver accepts for this provider.
    fn key_lengths(self) -> &'static [usize] {
        match self {
            Provider::Aescbc | Provider::Aesgcm => &[16, 24, 32],
            Provider::Secretbox => &[32],
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Key material, base64 as in the file: never printed by `Debug`, never in a result.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KeySecret(String);

impl KeySecret {
    /// Wraps base64 key material.
    pub fn new(base64: impl Into<String>) -> Self {
        Self(base64.into().trim().to_string())
    }

    fn decoded(&self) -> Option<Vec<u8>> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.0)
            .ok()
    }
}

impl fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeySecret(<redacted>)")
    }
}

/// A named key: what `encryption-key new` made, given to the config step.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyMaterial {
    /// The key's name (in the file and in every value it encrypts).
    pub name: String,
    /// The key, base64.
    pub secret: KeySecret,
}

/// What `new_encryption_key` makes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NewKeyRequest {
    /// The key's name; default `key-<UTC time>`.
    pub name: Option<String>,
    /// The provider it is for (all take 32 bytes).
    pub provider: Provider,
}

/// A new key. The one result that holds key material: show it once, keep it in a vault.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct NewKey {
    /// The key's name.
    pub name: String,
    /// The provider it is for.
    pub provider: Provider,
    /// 32 bytes from the OS CSPRNG, base64.
    pub secret: String,
}

impl fmt::Debug for NewKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewKey")
            .field("name", &self.name)
            .field("provider", &self.provider)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Makes a new key: 32 bytes from the operating system's CSPRNG (`getrandom`).
pub fn new_encryption_key(request: &NewKeyRequest) -> Result<NewKey> {
    let name = match &request.name {
        Some(name) => check_key_name(name)?,
        None => format!("key-{}", chrono::Utc::now().format("%Y%m%d%H%M%S")),
    };
    let mut bytes = [0u8; KEY_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| K8sError::Random(e.to_string()))?;
    let secret = base64::engine::general_purpose::STANDARD.encode(bytes);
    bytes.fill(0);
    Ok(NewKey {
        name,
        provider: request.provider,
        secret,
    })
}

fn check_key_name(name: &str) -> Result<String> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(name.to_string())
    } else {
        Err(K8sError::from(InvalidOption::input(
            "key name",
            format!(
                "{name:?}: use 1 to 128 letters, digits, '-', '_' or '.' (it is stored in front of every encrypted value)"
            ),
        )))
    }
}

/// One step of managing the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigStep {
    /// Write a new file with one key (then identity, so existing plaintext stays readable).
    Generate,
    /// Rotation step 1: add the new key second (every apiserver can then read it).
    AddKey,
    /// Rotation step 2: make the new key first (apiservers write with it).
    Promote,
    /// Rotation step 3: drop every key but the new one (after every object was rewritten).
    DropOld,
}

impl ConfigStep {
    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigStep::Generate => "generate",
            ConfigStep::AddKey => "add-key",
            ConfigStep::Promote => "promote",
            ConfigStep::DropOld => "drop-old",
        }
    }
}

fn default_resources() -> Vec<String> {
    vec!["secrets".into()]
}

/// What to do to an EncryptionConfiguration file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncryptionConfigRequest {
    /// The file (kube-apiserver's `--encryption-provider-config`).
    pub path: PathBuf,
    /// The step.
    pub step: ConfigStep,
    /// The provider.
    #[serde(default)]
    pub provider: Provider,
    /// Resources the entry covers. Default: `secrets`.
    #[serde(default = "default_resources")]
    pub resources: Vec<String>,
    /// Key material: needed by `generate` and `add_key`.
    #[serde(default)]
    pub key: Option<KeyMaterial>,
    /// The new key's name, for `promote` and `drop_old` (or take `key.name`).
    #[serde(default)]
    pub key_name: Option<String>,
    /// Compute the result and the diff, write nothing.
    #[serde(default)]
    pub check_mode: bool,
    /// `generate`: replace a file that holds other keys (objects written with them become
    /// unreadable).
    #[serde(default)]
    pub force: bool,
    /// `generate`: identity first and the key second, for the first rollout to several
    /// apiservers (every one can read encrypted data before any writes it); then
    /// `promote` the key on every host.
    #[serde(default)]
    pub identity_first: bool,
}

/// Key names before and after, as Ansible's diff mode shows them: never key material.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigDiff {
    /// Outline of the file before (empty when absent).
    pub before: String,
    /// Outline after.
    pub after: String,
}

/// The outcome of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EncryptionConfigResult {
    /// The file.
    pub path: String,
    /// The step.
    pub step: ConfigStep,
    /// Whether the file changed (or would, in check mode).
    pub changed: bool,
    /// Whether the file was written (false in check mode or when unchanged).
    pub written: bool,
    /// Check mode: nothing was written.
    pub check_mode: bool,
    /// The provider.
    pub provider: Provider,
    /// The resources of the entry.
    pub resources: Vec<String>,
    /// The provider's key names before, the write key first.
    pub keys_before: Vec<String>,
    /// And after.
    pub keys_after: Vec<String>,
    /// Key names of the whole file before and after.
    pub diff: ConfigDiff,
    /// What to do next.
    pub next: String,
    /// Things to know (a provider that is not first, ...).
    pub warnings: Vec<String>,
}

/// Generates or rotates the EncryptionConfiguration at `request.path`: one step, honest
/// `changed`, a diff of key names, nothing written in check mode.
///
/// Rotation follows Kubernetes' procedure, one step per call, each to be rolled out to every
/// control-plane host (and every kube-apiserver restarted) before the next: `add_key` (the new
/// key second), `promote` (the new key first), `drop_old` (after every object was rewritten
/// with the new key). A step whose work is already done changes nothing; a step out of order
/// is refused with [`K8sError::OutOfOrder`].
pub fn encryption_config(request: &EncryptionConfigRequest) -> Result<EncryptionConfigResult> {
    let path = request.path.as_path();
    let mut resources = Vec::new();
    for r in &request.resources {
        let r = crate::prefix::normalize_resource(r)?;
        if !resources.contains(&r) {
            resources.push(r);
        }
    }
    if resources.is_empty() {
        return Err(K8sError::from(InvalidOption::new(
            RESOURCES,
            "empty; give at least one resource, e.g. secrets",
        )));
    }
    let existing = file::read_config(path)?;
    let mut warnings = Vec::new();
    let planned = if request.step == ConfigStep::Generate {
        steps::generate(request, &resources, existing, &mut warnings)?
    } else {
        steps::rotate(request, &resources, existing, &mut warnings)?
    };
    let steps::Planned {
        before,
        after,
        keys_before,
        keys_after,
        next,
    } = planned;

    let mode_ok = before.as_ref().is_none_or(|(_, m)| *m == FILE_MODE);
    let content_changed = before.as_ref().is_none_or(|(c, _)| *c != after);
    if !mode_ok {
        warnings.push(format!(
            "the file's mode is {:o}; it is rewritten with 0600",
            before.as_ref().map_or(0, |(_, m)| *m)
        ));
    }
    let changed = content_changed || !mode_ok;
    let written = changed && !request.check_mode;
    if written {
        file::write_private(path, &after.render()?)?;
    }
    Ok(EncryptionConfigResult {
        path: path.display().to_string(),
        step: request.step,
        changed,
        written,
        check_mode: request.check_mode,
        provider: request.provider,
        resources,
        keys_before,
        keys_after,
        diff: ConfigDiff {
            before: before.map(|(c, _)| c.outline()).unwrap_or_default(),
            after: after.outline(),
        },
        next: if changed {
            next
        } else {
            "nothing to do: the file is already in this state".into()
        },
        warnings,
    })
}

mod file;
mod steps;
#[cfg(test)]
mod tests;
