//! `etcd_snapshot_info`: the backups in a store (`store`), the status of one snapshot file or
//! stored object (`snapshot`), and with `verify` a full integrity check of a stored backup
//! against its manifest. Read-only.

use etcd_snapshot::{
    NoProgress, SnapshotError, StatusOptions, list_backups, open_snapshot_file_decrypting,
    open_snapshot_object_decrypting, verify_backup,
};
use etcd_store::split_object_url;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};
use crate::store::{IDENTITY_OPTIONS, IdentityArgs, STORE_OPTIONS, StoreArgs};

pub const OPTIONS: &[&[OptionSpec]] = &[
    &[
        opt("store", Kind::Str),
        opt("snapshot", Kind::Str),
        opt("verify", Kind::Bool),
        opt("skip_hash_check", Kind::Bool),
    ],
    IDENTITY_OPTIONS,
    STORE_OPTIONS,
];

#[derive(Debug, Deserialize)]
struct Args {
    store: Option<String>,
    snapshot: Option<String>,
    #[serde(default)]
    verify: bool,
    #[serde(default)]
    skip_hash_check: bool,
    #[serde(flatten)]
    identity: IdentityArgs,
    #[serde(flatten)]
    store_args: StoreArgs,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let mut outcome = Outcome::unchanged("");
    let mut said = Vec::new();
    if args.store.is_none() && args.snapshot.is_none() {
        return Err(ModuleError::new(
            "etcd_snapshot_info: give store (a store URL to list) or snapshot (a file or object URL)",
        ));
    }
    if let Some(url) = &args.store {
        let store = args.store_args.open(url)?;
        let catalog = list_backups(&store).await?;
        let latest = catalog
            .backups
            .iter()
            .filter(|b| b.complete)
            .max_by_key(|b| b.manifest.created_at)
            .map(|b| format!("{}/{}", catalog.store.trim_end_matches('/'), b.object));
        said.push(format!(
            "{} backup(s) in {}",
            catalog.backups.len(),
            catalog.store
        ));
        outcome = outcome.with("latest", latest).with_fields(&catalog);
    }
    if let Some(source) = &args.snapshot {
        let (identities, warnings) = args.identity.identities()?;
        outcome.warnings.extend(warnings);
        let is_url = source.contains("://");
        // A zstd or age file or a stored object is decrypted and decompressed into an
        // unnamed temporary file.
        let snapshot = if is_url {
            let (store_url, name) = split_object_url(source);
            let store = args.store_args.open(&store_url)?;
            open_snapshot_object_decrypting(&store, &name, None, &identities).await?
        } else {
            open_snapshot_file_decrypting(std::path::Path::new(source), None, &identities)?
        };
        let options = StatusOptions {
            skip_hash_check: args.skip_hash_check,
        };
        let status = snapshot.status(source, &options)?;
        said.push(format!(
            "{source}: revision {}, {} keys",
            status.revision, status.total_key
        ));
        outcome = outcome
            .with("status", &status)
            .with("encrypted", snapshot.encrypted());
        if args.verify {
            let (store_url, name) = split_object_url(source);
            let store = args.store_args.open(&store_url)?;
            match verify_backup(&store, &name, &identities, &NoProgress).await {
                Ok(report) => {
                    said.push("verified".into());
                    outcome = outcome.with("verify", &report);
                }
                Err(e @ SnapshotError::VerifyFailed { .. }) => {
                    return Ok(Outcome::failure(format!("verify failed: {e}")));
                }
                Err(e) => return Err(e.into()),
            }
        }
    } else if args.verify {
        return Err(ModuleError::new(
            "etcd_snapshot_info: verify needs snapshot (the backup's URL or path)",
        ));
    }
    outcome.msg = said.join("; ");
    Ok(outcome)
}
