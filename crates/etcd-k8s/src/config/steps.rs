//! The steps: `generate`, and the rotation steps of Kubernetes' procedure (`add_key`,
//! `promote`, `drop_old`), each refusing what is out of order.

use super::file::{
    EncryptionConfiguration, KeyConfiguration, KeysConfiguration, ProviderConfiguration, bad,
};
use super::{ConfigStep, EncryptionConfigRequest, KeySecret, check_key_name};
use crate::error::{K8sError, KEY_NAME, Result};
use etcd_common::InvalidOption;

fn key_name_of(request: &EncryptionConfigRequest) -> Result<String> {
    match (&request.key_name, &request.key) {
        (Some(name), _) => check_key_name(name),
        (None, Some(key)) => check_key_name(&key.name),
        (None, None) => Err(K8sError::from(InvalidOption::new(
            KEY_NAME,
            format!("step {} needs the new key's name", request.step.as_str()),
        ))),
    }
}

fn key_config(request: &EncryptionConfigRequest) -> Result<KeyConfiguration> {
    let key = request.key.as_ref().ok_or_else(|| {
        let reason = format!(
            "step {} needs key material: make a new encryption key once and give the same key on every host",
            request.step.as_str()
        );
        K8sError::from(InvalidOption::input("key", reason))
    })?;
    let name = check_key_name(&key.name)?;
    let lengths = request.provider.key_lengths();
    match key.secret.decoded() {
        Some(bytes) if lengths.contains(&bytes.len()) => {}
        Some(bytes) => {
            return Err(K8sError::from(InvalidOption::input(
                "key",
                format!(
                    "key {name} is {} bytes; {} takes {} bytes",
                    bytes.len(),
                    request.provider,
                    lengths
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )));
        }
        None => {
            return Err(K8sError::from(InvalidOption::input(
                "key",
                format!("key {name} is not base64"),
            )));
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

/// What a step makes of the file: the file before (with its mode), the file after, the
/// provider's key names before and after, and what to do next.
pub(super) struct Planned {
    pub(super) before: Option<(EncryptionConfiguration, u32)>,
    pub(super) after: EncryptionConfiguration,
    pub(super) keys_before: Vec<String>,
    pub(super) keys_after: Vec<String>,
    pub(super) next: String,
}

/// `generate`: a new file with one key (and identity), refusing to replace a file that holds
/// other keys unless forced.
pub(super) fn generate(
    request: &EncryptionConfigRequest,
    resources: &[String],
    existing: Option<(EncryptionConfiguration, u32)>,
    warnings: &mut Vec<String>,
) -> Result<Planned> {
    let path = request.path.as_path();
    let provider = request.provider;
    let key = key_config(request)?;
    let fresh = EncryptionConfiguration::new(resources, provider, key, request.identity_first);
    let keys_after = names(
        fresh.resources[0]
            .providers
            .iter()
            .find_map(|p| p.keys(provider)),
    );
    if let Some((config, _)) = &existing
        && *config != fresh
    {
        let keys = config.outline().trim().replace('\n', "; ");
        if !request.force {
            return Err(K8sError::WouldReplace {
                path: path.display().to_string(),
                keys,
            });
        }
        warnings.push(format!(
            "forced: replaced {} ({keys}); objects written with the keys it held become unreadable unless a copy of it is kept",
            path.display()
        ));
    }
    let keys_before = existing
        .as_ref()
        .and_then(|(c, _)| {
            c.resources
                .iter()
                .find(|e| same_set(&e.resources, resources))
                .and_then(|e| e.providers.iter().find_map(|p| p.keys(provider)))
        })
        .map(|k| names(Some(k)))
        .unwrap_or_default();
    let next = if request.identity_first {
        format!(
            "copy this same file to every control-plane host, point kube-apiserver's encryption-provider-config at it and restart the apiservers one at a time (all can now read {0}, none writes with it); then promote key {0} on every host",
            keys_after.first().map_or("the key", String::as_str)
        )
    } else {
        "copy this same file to every control-plane host, point kube-apiserver's encryption-provider-config at it and restart the apiservers one at a time; then rewrite every object (kubectl get secrets -A -o json | kubectl replace -f -) and check that the encryption status finds no object in plaintext".to_string()
    };
    Ok(Planned {
        before: existing,
        after: fresh,
        keys_before,
        keys_after,
        next,
    })
}

/// A rotation step (`add_key`, `promote`, `drop_old`) on the entry for `resources`.
pub(super) fn rotate(
    request: &EncryptionConfigRequest,
    resources: &[String],
    existing: Option<(EncryptionConfiguration, u32)>,
    warnings: &mut Vec<String>,
) -> Result<Planned> {
    let path = request.path.as_path();
    let provider = request.provider;
    let Some((config, mode)) = existing else {
        return Err(bad(path, "does not exist: generate it first"));
    };
    let mut updated = config.clone();
    let entry = updated
        .resources
        .iter_mut()
        .find(|e| same_set(&e.resources, resources))
        .ok_or_else(|| K8sError::NoEntry {
            path: path.display().to_string(),
            resources: resources.join(","),
            entries: config
                .resources
                .iter()
                .map(|e| e.resources.join(","))
                .collect::<Vec<_>>()
                .join(" | "),
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
        ConfigStep::AddKey => add_key(request, keys, &keys_before)?,
        ConfigStep::Promote => promote(request, keys, &keys_before)?,
        ConfigStep::DropOld => drop_old(request, keys, &keys_before, position)?,
        ConfigStep::Generate => {
            return Err(K8sError::from(InvalidOption::input(
                "step",
                "generate is not a rotation step",
            )));
        }
    };
    let keys_after: Vec<String> = keys.keys.iter().map(|k| k.name.clone()).collect();
    if request.step == ConfigStep::Promote && position != 0 {
        // The key's provider must come first for apiservers to write with it.
        let promoted = entry.providers.remove(position);
        entry.providers.insert(0, promoted);
    }
    Ok(Planned {
        before: Some((config, mode)),
        after: updated,
        keys_before,
        keys_after,
        next,
    })
}

fn refuse(request: &EncryptionConfigRequest, reason: String) -> K8sError {
    K8sError::OutOfOrder {
        path: request.path.display().to_string(),
        step: request.step.as_str(),
        reason,
    }
}

/// Rotation step 1: the new key second, so every apiserver can read it.
fn add_key(
    request: &EncryptionConfigRequest,
    keys: &mut KeysConfiguration,
    keys_before: &[String],
) -> Result<String> {
    let path = request.path.as_path();
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
        return Err(refuse(
            request,
            format!(
                "a rotation is in progress (keys {}): finish it with promote and drop-old before adding {}",
                keys_before.join(", "),
                key.name
            ),
        ));
    } else if keys.keys.is_empty() {
        return Err(bad(
            path,
            format!("its {} provider has no key", request.provider),
        ));
    } else {
        keys.keys.push(key.clone());
    }
    Ok(format!(
        "copy this file to every control-plane host and restart every kube-apiserver (all can now read {0}); then promote key {0}",
        key.name
    ))
}

/// Rotation step 2: the new key first, so apiservers write with it.
fn promote(
    request: &EncryptionConfigRequest,
    keys: &mut KeysConfiguration,
    keys_before: &[String],
) -> Result<String> {
    let name = key_name_of(request)?;
    let Some(at) = keys.keys.iter().position(|k| k.name == name) else {
        return Err(refuse(
            request,
            format!(
                "key {name} is not in the file (keys {}): add it first, on every host",
                keys_before.join(", ")
            ),
        ));
    };
    if at != 0 {
        let key = keys.keys.remove(at);
        keys.keys.insert(0, key);
    }
    Ok(format!(
        "copy this file to every control-plane host and restart every kube-apiserver; rewrite every object (kubectl get secrets -A -o json | kubectl replace -f -); when the encryption status shows no object under another key, drop the old keys, keeping {name}"
    ))
}

/// Rotation step 3: every key but the new one goes, once every object was rewritten.
fn drop_old(
    request: &EncryptionConfigRequest,
    keys: &mut KeysConfiguration,
    keys_before: &[String],
    position: usize,
) -> Result<String> {
    let name = key_name_of(request)?;
    let provider = request.provider;
    match keys.keys.iter().position(|k| k.name == name) {
        None => {
            return Err(refuse(
                request,
                format!(
                    "key {name} is not in the file (keys {}): add it and promote it first",
                    keys_before.join(", ")
                ),
            ));
        }
        Some(0) if position != 0 => {
            return Err(refuse(
                request,
                format!(
                    "the {provider} provider is not first, so key {name} does not write yet: promote it on every host first"
                ),
            ));
        }
        Some(0) => keys.keys.truncate(1),
        Some(_) => {
            return Err(refuse(
                request,
                format!(
                    "key {name} is not first yet (keys {}): promote it on every host, restart every kube-apiserver and rewrite every object before dropping the old key",
                    keys_before.join(", ")
                ),
            ));
        }
    }
    Ok(
        "copy this file to every control-plane host and restart every kube-apiserver; the rotation is complete"
            .to_string(),
    )
}
