//! `etcd_encryption_info`: whether Kubernetes objects stored in etcd are encrypted at rest,
//! by which provider and key, scanned live (paged) or offline from a snapshot. Read-only;
//! `require_encrypted` fails the task when anything is plaintext.

use etcdops::kubernetes::{EncryptionStatusRequest, encryption_status, encryption_status_offline};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::store::{IdentityArgs, StoreArgs};

fn default_resources() -> Vec<String> {
    EncryptionStatusRequest::default().resources
}

fn default_max_objects() -> usize {
    EncryptionStatusRequest::default().max_objects
}

/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    #[serde(default = "default_resources")]
    resources: Vec<String>,
    #[serde(rename = "etcd_prefix")]
    #[schemars(extend("x-deprecated-aliases" = ["prefix"]))]
    prefix: Option<String>,
    snapshot: Option<String>,
    #[serde(default)]
    skip_hash_check: bool,
    #[serde(default)]
    list_all: bool,
    #[serde(default = "default_max_objects")]
    max_objects: usize,
    #[serde(default)]
    require_encrypted: bool,
    #[serde(flatten)]
    store: StoreArgs,
    #[serde(flatten)]
    identity: IdentityArgs,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let request = EncryptionStatusRequest {
        resources: args.resources.clone(),
        prefix: args.prefix.clone(),
        snapshot: args.snapshot.clone(),
        skip_hash_check: args.skip_hash_check,
        list_all: args.list_all,
        max_objects: args.max_objects,
    };
    let store_options = args.store.options();
    let (identities, warnings) = args.identity.identities()?;
    let report = if request.snapshot.is_some() {
        encryption_status_offline(&store_options, &request, &identities).await?
    } else {
        encryption_status(&context.cluster()?, &store_options, &request, &identities).await?
    };
    let summary = format!(
        "{} of {} object(s) encrypted under {} ({})",
        report.encrypted,
        report.total,
        report.prefix,
        if report.offline { "offline" } else { "live" }
    );
    let mut outcome = if args.require_encrypted && !report.all_encrypted {
        Outcome::failure(format!(
            "{} object(s) stored in plaintext; {summary}",
            report.plaintext
        ))
    } else {
        Outcome::unchanged(summary)
    };
    outcome.warnings.extend(warnings);
    Ok(outcome.with_fields(&report))
}
