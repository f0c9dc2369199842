//! `etcd_snapshot_info`: the backups in a store (`store`), the status of one snapshot file or
//! stored object (`snapshot`), and with `verify` a full integrity check of a stored backup
//! against its manifest, then of its chain of delta segments; with `against_cluster` and
//! `restore_drill` then the drills of `etcdops snapshot verify` (they imply `verify`).
//! Read-only: the drill writes only a private scratch dir it removes, so it runs in check
//! mode too.

use etcdops::snapshot::{
    DrillSettings, IdentitySettings, ListRequest, NoProgress, StatusRequest, StoreSettings,
    Verdict, VerifyRequest, drill, list, status, verify,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    store: Option<String>,
    snapshot: Option<String>,
    #[serde(default)]
    verify: bool,
    #[serde(default)]
    skip_hash_check: bool,
    #[serde(flatten)]
    drills: DrillSettings,
    #[serde(flatten)]
    identity: IdentitySettings,
    #[serde(flatten)]
    settings: StoreSettings,
}

/// Adds warnings not given yet (status and verify read the same identity file).
fn warn(outcome: &mut Outcome, warnings: Vec<String>) {
    for warning in warnings {
        if !outcome.warnings.contains(&warning) {
            outcome.warnings.push(warning);
        }
    }
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
        let request = ListRequest {
            store: url.clone(),
            settings: args.settings.clone(),
        };
        let listed = list(&request).await?;
        let catalog = &listed.catalog;
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
        warn(
            &mut outcome,
            listed.warnings.iter().map(|w| w.message()).collect(),
        );
        outcome = outcome.with("latest", latest).with_fields(&listed);
    }
    // The drills run on a verified backup only.
    let verify_it = args.verify || args.drills.any();
    let Some(source) = &args.snapshot else {
        if verify_it {
            return Err(ModuleError::new(
                "etcd_snapshot_info: verify, against_cluster and restore_drill need snapshot (the backup's URL or path)",
            ));
        }
        outcome.msg = said.join("; ");
        return Ok(outcome);
    };
    if verify_it {
        let request = VerifyRequest {
            snapshot: source.clone(),
            identity: args.identity.clone(),
            store: args.settings.clone(),
        };
        // The backup, then its chain, before the status: a damaged or broken backup fails
        // the task with verify's findings, as it fails the CLI.
        let verified = verify(&request, &NoProgress).await?;
        warn(&mut outcome, verified.warnings.clone());
        if let Some(chain) = &verified.chain {
            outcome = outcome.with("chain", chain);
        }
        if let Some(report) = &verified.report {
            outcome = outcome.with("verify", report);
        }
        if !verified.ok() {
            outcome.failed = true;
            outcome.msg = format!("verify failed: {}", verified.failures.join("; "));
            return Ok(outcome);
        }
        if args.drills.any() {
            let config = if args.drills.against_cluster {
                context.cluster()?
            } else {
                etcdops::client::ClusterConfig::default()
            };
            let drilled = drill(&config, &request, verified.chain.as_ref(), &args.drills).await?;
            let mut failures = Vec::new();
            if let Some(against) = &drilled.against_cluster {
                outcome = outcome.with("against_cluster", against);
                match against.verdict {
                    Verdict::Match => said.push(against.message()),
                    Verdict::Differs { .. } => failures.push(against.message()),
                    // Not a failed backup: said, the task goes on.
                    Verdict::CannotCompare { .. } => warn(&mut outcome, vec![against.message()]),
                }
            }
            if let Some(restored) = &drilled.restore_drill {
                outcome = outcome.with("restore_drill", restored);
                if restored.ok {
                    said.push(restored.message());
                } else {
                    failures.push(restored.message());
                }
            }
            if !failures.is_empty() {
                outcome.failed = true;
                outcome.msg = format!("verify failed: {}", failures.join("; "));
                return Ok(outcome);
            }
        }
    }
    let request = StatusRequest {
        snapshot: source.clone(),
        skip_hash_check: args.skip_hash_check,
        identity: args.identity.clone(),
        store: args.settings.clone(),
    };
    let opened = status(&request).await?;
    warn(&mut outcome, opened.warnings.clone());
    said.push(format!(
        "{source}: revision {}, {} keys",
        opened.status.revision, opened.status.total_key
    ));
    outcome = outcome
        .with("status", &opened.status)
        .with("encrypted", opened.encrypted);
    if verify_it {
        said.push("verified".into());
    }
    outcome.msg = said.join("; ");
    Ok(outcome)
}
