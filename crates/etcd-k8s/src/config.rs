//! kube-apiserver's `EncryptionConfiguration` (apiserver.config.k8s.io/v1): generating one,
//! and rotating its keys one step of Kubernetes' procedure per call, refusing a step out of
//! order. Key material comes in (made once per cluster by [`new_encryption_key`], the same on
//! every control-plane host) and is only ever written to the file, mode 0600 through a
//! temporary file, fsync and rename. Results, diffs and errors name keys, never their
//! material.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::error::{K8sError, Result};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
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
        Err(K8sError::InvalidOption {
            option: "key name",
            reason: format!(
                "{name:?}: use 1 to 128 letters, digits, '-', '_' or '.' (it is stored in front of every encrypted value)"
            ),
        })
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

// ---- The file's schema (internal: it holds key material) ----

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EncryptionConfiguration {
    api_version: String,
    kind: String,
    resources: Vec<ResourceConfiguration>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceConfiguration {
    resources: Vec<String>,
    providers: Vec<ProviderConfiguration>,
}

#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    aescbc: Option<KeysConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    aesgcm: Option<KeysConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secretbox: Option<KeysConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    identity: Option<serde_yaml_ng::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kms: Option<serde_yaml_ng::Value>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysConfiguration {
    keys: Vec<KeyConfiguration>,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyConfiguration {
    name: String,
    secret: KeySecret,
}

impl ProviderConfiguration {
    fn keys(&self, provider: Provider) -> Option<&KeysConfiguration> {
        match provider {
            Provider::Aescbc => self.aescbc.as_ref(),
            Provider::Aesgcm => self.aesgcm.as_ref(),
            Provider::Secretbox => self.secretbox.as_ref(),
        }
    }

    fn keys_mut(&mut self, provider: Provider) -> Option<&mut KeysConfiguration> {
        match provider {
            Provider::Aescbc => self.aescbc.as_mut(),
            Provider::Aesgcm => self.aesgcm.as_mut(),
            Provider::Secretbox => self.secretbox.as_mut(),
        }
    }

    fn with_key(provider: Provider, key: KeyConfiguration) -> Self {
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
    fn outline(&self) -> String {
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

    fn kind(&self) -> &'static str {
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
    fn new(
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
    fn outline(&self) -> String {
        let mut out = String::new();
        for entry in &self.resources {
            out.push_str(&format!("resources: {}\n", entry.resources.join(", ")));
            for provider in &entry.providers {
                out.push_str(&format!("  - {}\n", provider.outline()));
            }
        }
        out
    }

    fn render(&self) -> Result<String> {
        let body = serde_yaml_ng::to_string(self).map_err(|e| K8sError::InvalidOption {
            option: "configuration",
            reason: format!("cannot be written as YAML: {e}"),
        })?;
        Ok(format!(
            "# kube-apiserver --encryption-provider-config, written by etcdops k8s encryption-config.\n\
             # The same file on every control-plane host; mode 0600; the first key encrypts.\n{body}"
        ))
    }
}

fn bad(path: &Path, reason: impl Into<String>) -> K8sError {
    K8sError::BadConfig {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Reads the file; `None` when absent. Parse errors give a position, never the content.
fn read_config(path: &Path) -> Result<Option<(EncryptionConfiguration, u32)>> {
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
fn write_private(path: &Path, content: &str) -> Result<()> {
    Ok(
        etcd_core::write_file_atomically(path, content.as_bytes(), FILE_MODE, None)
            .map_err(etcd_core::Error::from)?,
    )
}

fn key_name_of(request: &EncryptionConfigRequest) -> Result<String> {
    match (&request.key_name, &request.key) {
        (Some(name), _) => check_key_name(name),
        (None, Some(key)) => check_key_name(&key.name),
        (None, None) => Err(K8sError::InvalidOption {
            option: "key name",
            reason: format!(
                "step {} needs the new key's name (--key-name)",
                request.step.as_str()
            ),
        }),
    }
}

fn key_config(request: &EncryptionConfigRequest) -> Result<KeyConfiguration> {
    let key = request.key.as_ref().ok_or_else(|| K8sError::InvalidOption {
        option: "key",
        reason: format!(
            "step {} needs key material: make it once with `etcdops k8s encryption-key new` and give the same key on every host",
            request.step.as_str()
        ),
    })?;
    let name = check_key_name(&key.name)?;
    let lengths = request.provider.key_lengths();
    match key.secret.decoded() {
        Some(bytes) if lengths.contains(&bytes.len()) => {}
        Some(bytes) => {
            return Err(K8sError::InvalidOption {
                option: "key",
                reason: format!(
                    "key {name} is {} bytes; {} takes {} bytes",
                    bytes.len(),
                    request.provider,
                    lengths
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        None => {
            return Err(K8sError::InvalidOption {
                option: "key",
                reason: format!("key {name} is not base64"),
            });
        }
    }
    Ok(KeyConfiguration {
        name,
        secret: key.secret.clone(),
    })
}

fn same_material(a: &KeySecret, b: &KeySecret) -> bool {
    match (a.decoded(), b.decoded()) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

fn same_set(a: &[String], b: &[String]) -> bool {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort();
    a.dedup();
    b.sort();
    b.dedup();
    a == b
}

fn names(keys: Option<&KeysConfiguration>) -> Vec<String> {
    keys.map(|k| k.keys.iter().map(|k| k.name.clone()).collect())
        .unwrap_or_default()
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
        return Err(K8sError::InvalidOption {
            option: "resources",
            reason: "empty; give at least one resource, e.g. secrets".into(),
        });
    }
    let existing = read_config(path)?;
    let provider = request.provider;
    let refuse = |reason: String| K8sError::OutOfOrder {
        path: path.display().to_string(),
        step: request.step.as_str(),
        reason,
    };
    let mut warnings = Vec::new();

    let (before, after, keys_before, keys_after, next) = if request.step == ConfigStep::Generate {
        let key = key_config(request)?;
        let fresh = EncryptionConfiguration::new(&resources, provider, key, request.identity_first);
        let keys_after = names(
            fresh.resources[0]
                .providers
                .iter()
                .find_map(|p| p.keys(provider)),
        );
        match existing {
            Some((config, _)) if config != fresh && !request.force => {
                return Err(bad(
                    path,
                    format!(
                        "exists with other keys ({}); change keys with `rotate`, or --force to replace the file (objects written with the keys it holds become unreadable)",
                        config.outline().trim().replace('\n', "; ")
                    ),
                ));
            }
            other => {
                let keys_before = other
                    .as_ref()
                    .and_then(|(c, _)| {
                        c.resources
                            .iter()
                            .find(|e| same_set(&e.resources, &resources))
                            .and_then(|e| e.providers.iter().find_map(|p| p.keys(provider)))
                    })
                    .map(|k| names(Some(k)))
                    .unwrap_or_default();
                let next = if request.identity_first {
                    format!(
                        "copy this same file to every control-plane host, point kube-apiserver's --encryption-provider-config at it and restart the apiservers one at a time (all can now read {0}, none writes with it); then run `rotate --step promote --key-name {0}` on every host",
                        keys_after.first().map_or("the key", String::as_str)
                    )
                } else {
                    "copy this same file to every control-plane host, point kube-apiserver's --encryption-provider-config at it and restart the apiservers one at a time; then rewrite every object (kubectl get secrets -A -o json | kubectl replace -f -) and check with `etcdops k8s encryption-status --require-encrypted`".to_string()
                };
                (other, fresh, keys_before, keys_after, next)
            }
        }
    } else {
        let Some((config, mode)) = existing else {
            return Err(bad(
                path,
                "does not exist: run `etcdops k8s encryption-config generate` first",
            ));
        };
        let mut updated = config.clone();
        let entry = updated
            .resources
            .iter_mut()
            .find(|e| same_set(&e.resources, &resources))
            .ok_or_else(|| {
                bad(
                    path,
                    format!(
                        "no entry for resources {}; give the entry's --resources (the file has: {})",
                        resources.join(","),
                        config
                            .resources
                            .iter()
                            .map(|e| e.resources.join(","))
                            .collect::<Vec<_>>()
                            .join(" | ")
                    ),
                )
            })?;
        let position = entry
            .providers
            .iter()
            .position(|p| p.keys(provider).is_some())
            .ok_or_else(|| {
                bad(
                    path,
                    format!(
                        "the entry for {} has no {provider} provider (it has: {}); rotate with the provider it uses",
                        resources.join(","),
                        entry
                            .providers
                            .iter()
                            .map(ProviderConfiguration::kind)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
        if position != 0 && request.step == ConfigStep::AddKey {
            warnings.push(format!(
                "{provider} is not the first provider of the entry for {}: kube-apiserver writes with {}",
                resources.join(","),
                entry.providers[0].kind()
            ));
        }
        let Some(keys) = entry.providers[position].keys_mut(provider) else {
            return Err(bad(path, "provider vanished"));
        };
        let keys_before: Vec<String> = keys.keys.iter().map(|k| k.name.clone()).collect();
        let next = match request.step {
            ConfigStep::AddKey => {
                let key = key_config(request)?;
                if let Some(present) = keys.keys.iter().find(|k| k.name == key.name) {
                    if !same_material(&present.secret, &key.secret) {
                        return Err(bad(
                            path,
                            format!(
                                "it already holds a key named {} with other material; give the new key a new name",
                                key.name
                            ),
                        ));
                    }
                    // Already added (and maybe further along): nothing to do.
                } else if keys.keys.len() >= 2 {
                    return Err(refuse(format!(
                        "a rotation is in progress (keys {}): finish it with promote and drop-old before adding {}",
                        keys_before.join(", "),
                        key.name
                    )));
                } else if keys.keys.is_empty() {
                    return Err(bad(path, format!("its {provider} provider has no key")));
                } else {
                    keys.keys.push(key.clone());
                }
                format!(
                    "copy this file to every control-plane host and restart every kube-apiserver (all can now read {0}); then run `rotate --step promote --key-name {0}`",
                    key.name
                )
            }
            ConfigStep::Promote => {
                let name = key_name_of(request)?;
                let Some(at) = keys.keys.iter().position(|k| k.name == name) else {
                    return Err(refuse(format!(
                        "key {name} is not in the file (keys {}): run `rotate --step add-key` with it first, on every host",
                        keys_before.join(", ")
                    )));
                };
                if at != 0 {
                    let key = keys.keys.remove(at);
                    keys.keys.insert(0, key);
                }
                format!(
                    "copy this file to every control-plane host and restart every kube-apiserver; rewrite every object (kubectl get secrets -A -o json | kubectl replace -f -); when `etcdops k8s encryption-status` shows no object under another key, run `rotate --step drop-old --key-name {name}`"
                )
            }
            ConfigStep::DropOld => {
                let name = key_name_of(request)?;
                match keys.keys.iter().position(|k| k.name == name) {
                    None => {
                        return Err(refuse(format!(
                            "key {name} is not in the file (keys {}): add it and promote it first",
                            keys_before.join(", ")
                        )));
                    }
                    Some(0) if position != 0 => {
                        return Err(refuse(format!(
                            "the {provider} provider is not first, so key {name} does not write yet: run `rotate --step promote --key-name {name}` on every host first"
                        )));
                    }
                    Some(0) => keys.keys.truncate(1),
                    Some(_) => {
                        return Err(refuse(format!(
                            "key {name} is not first yet (keys {}): run `rotate --step promote` on every host, restart every kube-apiserver and rewrite every object before dropping the old key",
                            keys_before.join(", ")
                        )));
                    }
                }
                "copy this file to every control-plane host and restart every kube-apiserver; the rotation is complete".to_string()
            }
            ConfigStep::Generate => {
                return Err(K8sError::InvalidOption {
                    option: "step",
                    reason: "generate is not a rotation step".into(),
                });
            }
        };
        let keys_after: Vec<String> = keys.keys.iter().map(|k| k.name.clone()).collect();
        if request.step == ConfigStep::Promote && position != 0 {
            // The key's provider must come first for apiservers to write with it.
            let promoted = entry.providers.remove(position);
            entry.providers.insert(0, promoted);
        }
        (Some((config, mode)), updated, keys_before, keys_after, next)
    };

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
        write_private(path, &after.render()?)?;
    }
    Ok(EncryptionConfigResult {
        path: path.display().to_string(),
        step: request.step,
        changed,
        written,
        check_mode: request.check_mode,
        provider,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, byte: u8) -> KeyMaterial {
        KeyMaterial {
            name: name.into(),
            secret: KeySecret::new(base64::engine::general_purpose::STANDARD.encode([byte; 32])),
        }
    }

    fn request(path: &Path, step: ConfigStep, k: Option<KeyMaterial>) -> EncryptionConfigRequest {
        EncryptionConfigRequest {
            path: path.to_path_buf(),
            step,
            provider: Provider::Aescbc,
            resources: default_resources(),
            key_name: None,
            key: k,
            check_mode: false,
            force: false,
            identity_first: false,
        }
    }

    fn step(path: &Path, s: ConfigStep, k: KeyMaterial) -> Result<EncryptionConfigResult> {
        let mut r = request(path, s, Some(k.clone()));
        if s != ConfigStep::Generate && s != ConfigStep::AddKey {
            r.key = None;
            r.key_name = Some(k.name);
        }
        encryption_config(&r)
    }

    #[test]
    fn new_keys_are_32_random_bytes() {
        let a = new_encryption_key(&NewKeyRequest::default()).unwrap();
        let b = new_encryption_key(&NewKeyRequest {
            name: Some("k2".into()),
            provider: Provider::Secretbox,
        })
        .unwrap();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&a.secret)
            .unwrap();
        assert_eq!(raw.len(), 32);
        assert_ne!(a.secret, b.secret);
        assert_eq!(b.name, "k2");
        assert!(a.name.starts_with("key-"));
        assert!(!format!("{a:?}").contains(&a.secret));
        assert!(
            new_encryption_key(&NewKeyRequest {
                name: Some("bad:name".into()),
                ..Default::default()
            })
            .is_err()
        );
    }

    #[test]
    fn rotation_walks_its_steps_in_order_and_refuses_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enc.yaml");
        let (old, new) = (key("old", 1), key("new", 2));

        // Nothing to rotate before generate.
        assert!(step(&path, ConfigStep::AddKey, new.clone()).is_err());
        let generated = step(&path, ConfigStep::Generate, old.clone()).unwrap();
        assert!(generated.changed && generated.written);
        assert_eq!(generated.keys_after, ["old"]);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Generate again with the same key: unchanged; with another key: refused.
        assert!(
            !step(&path, ConfigStep::Generate, old.clone())
                .unwrap()
                .changed
        );
        assert!(step(&path, ConfigStep::Generate, new.clone()).is_err());

        // Out of order before add-key.
        for s in [ConfigStep::Promote, ConfigStep::DropOld] {
            let err = step(&path, s, new.clone()).unwrap_err();
            assert!(matches!(err, K8sError::OutOfOrder { .. }), "{err}");
        }
        let added = step(&path, ConfigStep::AddKey, new.clone()).unwrap();
        assert_eq!(
            (added.keys_before, added.keys_after),
            (
                vec!["old".to_string()],
                vec!["old".to_string(), "new".to_string()]
            )
        );
        assert!(
            !step(&path, ConfigStep::AddKey, new.clone())
                .unwrap()
                .changed
        );
        // A third key while rotating, or the same name with other material: refused.
        assert!(matches!(
            step(&path, ConfigStep::AddKey, key("third", 3)).unwrap_err(),
            K8sError::OutOfOrder { .. }
        ));
        assert!(step(&path, ConfigStep::AddKey, key("new", 9)).is_err());
        // Dropping before promoting: refused.
        assert!(matches!(
            step(&path, ConfigStep::DropOld, new.clone()).unwrap_err(),
            K8sError::OutOfOrder { .. }
        ));

        let promoted = step(&path, ConfigStep::Promote, new.clone()).unwrap();
        assert_eq!(promoted.keys_after, ["new", "old"]);
        assert!(
            !step(&path, ConfigStep::Promote, new.clone())
                .unwrap()
                .changed
        );
        let dropped = step(&path, ConfigStep::DropOld, new.clone()).unwrap();
        assert_eq!(dropped.keys_after, ["new"]);
        assert!(
            !step(&path, ConfigStep::DropOld, new.clone())
                .unwrap()
                .changed
        );
        // The next rotation can start.
        assert!(
            step(&path, ConfigStep::AddKey, key("next", 4))
                .unwrap()
                .changed
        );
    }

    #[test]
    fn identity_first_then_promote_moves_the_provider_to_the_front() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enc.yaml");
        let k1 = key("k1", 1);
        let mut r = request(&path, ConfigStep::Generate, Some(k1.clone()));
        r.identity_first = true;
        let generated = encryption_config(&r).unwrap();
        assert_eq!(generated.keys_after, ["k1"]);
        assert!(
            generated
                .diff
                .after
                .contains("  - identity\n  - aescbc: k1"),
            "{:?}",
            generated.diff
        );
        // Dropping other keys before the provider writes: refused.
        assert!(matches!(
            step(&path, ConfigStep::DropOld, k1.clone()).unwrap_err(),
            K8sError::OutOfOrder { .. }
        ));
        let promoted = step(&path, ConfigStep::Promote, k1.clone()).unwrap();
        assert!(promoted.changed);
        assert!(
            promoted.diff.after.contains("  - aescbc: k1\n  - identity"),
            "{:?}",
            promoted.diff
        );
        assert!(
            !step(&path, ConfigStep::Promote, k1.clone())
                .unwrap()
                .changed
        );
        assert!(!step(&path, ConfigStep::DropOld, k1).unwrap().changed);
    }

    #[test]
    fn check_mode_writes_nothing_and_diffs_show_names_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enc.yaml");
        let old = key("old", 1);
        step(&path, ConfigStep::Generate, old.clone()).unwrap();
        let before = std::fs::read_to_string(&path).unwrap();
        let new = key("new", 2);
        let mut r = request(&path, ConfigStep::AddKey, Some(new.clone()));
        r.check_mode = true;
        let result = encryption_config(&r).unwrap();
        assert!(result.changed && !result.written);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
        assert!(
            result.diff.after.contains("aescbc: old, new"),
            "{:?}",
            result.diff
        );
        let json = serde_json::to_string(&result).unwrap();
        for material in [&old.secret.0, &new.secret.0] {
            assert!(!json.contains(material.as_str()));
            assert!(before.contains(old.secret.0.as_str()));
        }
    }

    #[test]
    fn bad_files_and_keys_are_refused_without_echoing_material() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enc.yaml");
        std::fs::write(&path, "apiVersion: v1\nkind: Pod\nresources: []\n").unwrap();
        let err = step(&path, ConfigStep::AddKey, key("k", 1))
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected apiserver.config.k8s.io/v1"), "{err}");
        std::fs::write(&path, "resources: [\n  secret: SUPERSECRETVALUE\n").unwrap();
        let err = step(&path, ConfigStep::AddKey, key("k", 1))
            .unwrap_err()
            .to_string();
        assert!(!err.contains("SUPERSECRETVALUE"), "{err}");

        let fresh = dir.path().join("fresh.yaml");
        let mut short = key("k", 1);
        short.secret = KeySecret::new("AAAA");
        let err = step(&fresh, ConfigStep::Generate, short)
            .unwrap_err()
            .to_string();
        assert!(err.contains("3 bytes"), "{err}");
        let mut garbage = key("k", 1);
        garbage.secret = KeySecret::new("not base64 !!");
        let err = step(&fresh, ConfigStep::Generate, garbage)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not base64") && !err.contains("!!"), "{err}");
        assert!(!fresh.exists());
    }

    #[test]
    fn a_hand_written_file_with_kms_and_identity_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enc.yaml");
        let secret = base64::engine::general_purpose::STANDARD.encode([5u8; 32]);
        std::fs::write(
            &path,
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [configmaps]\n    providers:\n      - identity: {{}}\n  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n            - name: a\n              secret: {secret}\n      - kms:\n          name: vault\n          endpoint: unix:///tmp/kms.sock\n      - identity: {{}}\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let result = step(&path, ConfigStep::AddKey, key("b", 6)).unwrap();
        assert!(
            result.warnings.iter().any(|w| w.contains("mode")),
            "{:?}",
            result.warnings
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("unix:///tmp/kms.sock"), "{text}");
        assert!(text.contains("configmaps"), "{text}");
        assert!(
            result.diff.after.contains("kms: vault"),
            "{:?}",
            result.diff
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // The entry for configmaps has no aescbc: a clear refusal.
        let mut r = request(&path, ConfigStep::AddKey, Some(key("c", 7)));
        r.resources = vec!["configmaps".into()];
        let err = encryption_config(&r).unwrap_err().to_string();
        assert!(err.contains("no aescbc provider"), "{err}");
    }

    #[test]
    fn requests_deserialize_from_module_arguments() {
        let r: EncryptionConfigRequest = serde_json::from_value(serde_json::json!({
            "path": "/etc/kubernetes/enc.yaml",
            "step": "add_key",
            "key": {"name": "k2", "secret": "AAAA"},
        }))
        .unwrap();
        assert_eq!(r.step, ConfigStep::AddKey);
        assert_eq!(r.resources, ["secrets"]);
        assert!(!format!("{r:?}").contains("AAAA"));
        assert!(
            serde_json::from_value::<EncryptionConfigRequest>(serde_json::json!({
                "path": "/x", "step": "generate", "keys": []
            }))
            .is_err()
        );
    }
}
