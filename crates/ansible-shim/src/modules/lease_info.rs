//! `etcd_lease_info`: every lease with its TTLs, or one lease with the keys attached to it.

use etcdops::client::Client;
use etcdops::lease::LeaseId;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    id: Option<String>,
    #[serde(default, rename = "list_keys")]
    #[schemars(extend("x-deprecated-aliases" = ["keys"]))]
    keys: bool,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let client = Client::new(context.cluster()?);
    match args.id {
        Some(id) => {
            let id: LeaseId = id
                .parse()
                .map_err(|e| ModuleError::new(format!("etcd_lease_info: option 'id': {e}")))?;
            let lease = client.leases().time_to_live(id, args.keys).await?;
            let msg = if lease.found {
                format!("lease {} has {}s left", lease.id, lease.remaining_ttl)
            } else {
                format!("lease {} does not exist (expired or revoked)", lease.id)
            };
            Ok(Outcome::unchanged(msg).with("lease", &lease))
        }
        None => {
            let list = client.leases().list().await?;
            Ok(Outcome::unchanged(format!("{} lease(s)", list.leases.len())).with_fields(&list))
        }
    }
}
