//! `etcd_encryption_config`: writes kube-apiserver's EncryptionConfiguration one step at a
//! time (generate, then rotation: add_key, promote, drop_old; out-of-order steps refused), or
//! makes a new key once (`step: new_key`, on the controller, with `no_log`). The diff shows
//! key names, never key material.

use etcdops::kubernetes::{
    ConfigStep, EncryptionConfigRequest, KeyMaterial, KeySecret, NewKeyRequest, Provider,
    encryption_config, new_encryption_key,
};
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt, secret};

pub const OPTIONS: &[&[OptionSpec]] = &[&[
    opt("path", Kind::Path),
    opt("step", Kind::Str)
        .required()
        .choices(&["new_key", "generate", "add_key", "promote", "drop_old"]),
    opt("provider", Kind::Str)
        .choices(&["aescbc", "aesgcm", "secretbox"])
        .default_str("aescbc"),
    opt("resources", Kind::List).default_list(&["secrets"]),
    opt("key_name", Kind::Str),
    secret("key_secret", Kind::Str),
    opt("force", Kind::Bool).default_bool(false),
    opt("identity_first", Kind::Bool).default_bool(false),
]];

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Step {
    NewKey,
    Generate,
    AddKey,
    Promote,
    DropOld,
}

#[derive(Debug, Deserialize)]
struct Args {
    path: Option<std::path::PathBuf>,
    step: Step,
    #[serde(default)]
    provider: Provider,
    resources: Option<Vec<String>>,
    key_name: Option<String>,
    key_secret: Option<String>,
    #[serde(default)]
    force: bool,
    #[serde(default)]
    identity_first: bool,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let step = match args.step {
        Step::NewKey => {
            // The one result that carries key material: register it with no_log.
            let key = new_encryption_key(&NewKeyRequest {
                name: args.key_name.clone(),
                provider: args.provider,
            })?;
            return Ok(Outcome::unchanged(format!(
                "made key {} for {} (keep key_secret in a vault; use no_log on this task)",
                key.name,
                key.provider.as_str()
            ))
            .with("key_name", &key.name)
            .with("key_secret", &key.secret)
            .with("provider", key.provider));
        }
        Step::Generate => ConfigStep::Generate,
        Step::AddKey => ConfigStep::AddKey,
        Step::Promote => ConfigStep::Promote,
        Step::DropOld => ConfigStep::DropOld,
    };
    let path = args.path.clone().ok_or_else(|| {
        ModuleError::new(
            "etcd_encryption_config: give path (kube-apiserver's --encryption-provider-config)",
        )
    })?;
    let key = match (&args.key_name, &args.key_secret) {
        (Some(name), Some(secret)) => Some(KeyMaterial {
            name: name.clone(),
            secret: KeySecret::new(secret.clone()),
        }),
        _ => None,
    };
    let request = EncryptionConfigRequest {
        path,
        step,
        provider: args.provider,
        resources: args
            .resources
            .clone()
            .unwrap_or_else(|| vec!["secrets".into()]),
        key_name: if key.is_some() {
            None
        } else {
            args.key_name.clone()
        },
        key,
        check_mode: context.check_mode,
        force: args.force,
        identity_first: args.identity_first,
    };
    let result = encryption_config(&request)?;
    let mut outcome = Outcome::unchanged(format!(
        "{}{} {}: keys {} -> {}",
        if result.check_mode && result.changed {
            "would apply "
        } else {
            ""
        },
        step.as_str(),
        result.path,
        result.keys_before.join(","),
        result.keys_after.join(",")
    ));
    outcome.changed = result.changed;
    outcome.warnings = result.warnings.clone();
    outcome.diff = serde_json::to_value(&result.diff).ok();
    Ok(outcome.with_fields(&result))
}
