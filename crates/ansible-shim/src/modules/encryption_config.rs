//! `etcd_encryption_config`: writes kube-apiserver's EncryptionConfiguration one step at a
//! time (generate, then rotation: add_key, promote, drop_old; out-of-order steps refused), or
//! makes a new key once (`step: new_key`, on the controller, with `no_log`). The diff shows
//! key names, never key material.

use etcdops::kubernetes::{
    ConfigStep, EncryptionConfigRequest, KeyMaterial, KeySecret, NewKeyRequest, Provider,
    encryption_config, new_encryption_key,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Step {
    NewKey,
    Generate,
    AddKey,
    Promote,
    DropOld,
}

fn secrets_only() -> Vec<String> {
    vec!["secrets".into()]
}

/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    path: Option<std::path::PathBuf>,
    step: Step,
    #[serde(default)]
    provider: Provider,
    #[serde(default = "secrets_only")]
    resources: Vec<String>,
    key_name: Option<String>,
    #[schemars(extend("x-no-log" = true))]
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
        resources: args.resources.clone(),
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
    let done = encryption_config(&context.guards()?, &request).await?;
    let result = done.result;
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
    outcome.warnings = done
        .forced
        .into_iter()
        .chain(result.warnings.clone())
        .collect();
    outcome.diff = serde_json::to_value(&result.diff).ok();
    Ok(outcome.with_fields(&result))
}
