//! `etcd_snapshot_restore`: restores a snapshot (file or object URL), or a surviving member's
//! own db (`from_data_dir`, the quorum-loss fix), into a new data dir; with `to_revision` or
//! `to_time`, the state at that point from a store written by `backup run` (a full backup
//! with its delta segments replayed). Repeating the same
//! restore changes nothing (the library's marker file); check mode runs every check and
//! writes nothing.

use std::path::PathBuf;

use etcd_snapshot::{
    PointInTime, RestoreMarker, RestoreRequest, RestoreSource, TrailerCheck, open_restore_source,
    read_marker, restore_snapshot, restore_to_point,
};
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};
use crate::spec::{Kind, OptionSpec, opt};
use crate::store::{IDENTITY_OPTIONS, IdentityArgs, STORE_OPTIONS, StoreArgs};

pub const OPTIONS: &[&[OptionSpec]] = &[
    &[
        opt("snapshot", Kind::Str),
        opt("from_data_dir", Kind::Str),
        opt("data_dir", Kind::Str),
        opt("wal_dir", Kind::Str),
        opt("name", Kind::Str),
        opt("initial_cluster", Kind::Str),
        opt("initial_cluster_token", Kind::Str),
        opt("initial_advertise_peer_urls", Kind::List),
        opt("skip_hash_check", Kind::Bool),
        opt("bump_revision", Kind::Int),
        opt("mark_compacted", Kind::Bool),
        opt("move_aside", Kind::Bool),
        opt("force", Kind::Bool),
        opt("owner", Kind::Str),
        opt("to_revision", Kind::Int),
        opt("to_time", Kind::Str),
    ],
    IDENTITY_OPTIONS,
    STORE_OPTIONS,
];

#[derive(Debug, Deserialize)]
struct Args {
    snapshot: Option<String>,
    from_data_dir: Option<PathBuf>,
    data_dir: PathBuf,
    wal_dir: Option<PathBuf>,
    name: String,
    initial_cluster: String,
    #[serde(default = "default_token")]
    initial_cluster_token: String,
    initial_advertise_peer_urls: Vec<String>,
    #[serde(default)]
    skip_hash_check: bool,
    #[serde(default)]
    bump_revision: u64,
    #[serde(default)]
    mark_compacted: bool,
    #[serde(default)]
    move_aside: bool,
    #[serde(default)]
    force: bool,
    owner: Option<String>,
    to_revision: Option<i64>,
    to_time: Option<String>,
    #[serde(flatten)]
    identity: IdentityArgs,
    #[serde(flatten)]
    store: StoreArgs,
}

/// What the data dir holds, for the diff: the previous restore's marker, or whether it is empty.
fn describe_marker(marker: Option<RestoreMarker>, data_dir: &std::path::Path) -> String {
    match marker {
        Some(m) => format!(
            "member {} ({}) of cluster {}, revision {}, db sha256 {}\n",
            m.name, m.member_id, m.cluster_id, m.revision, m.db_sha256
        ),
        None if std::fs::read_dir(data_dir).is_ok_and(|mut d| d.next().is_some()) => {
            "a data dir not written by a restore\n".into()
        }
        None => String::new(),
    }
}

fn default_token() -> String {
    "etcd-cluster".into()
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let forced = context
        .operator_guard(None, "snapshot restore", args.force)
        .await?;
    let mut request = RestoreRequest {
        name: args.name.clone(),
        initial_cluster: args.initial_cluster.clone(),
        initial_cluster_token: args.initial_cluster_token.clone(),
        initial_advertise_peer_urls: args.initial_advertise_peer_urls.clone(),
        data_dir: args.data_dir.clone(),
        wal_dir: args.wal_dir.clone(),
        skip_hash_check: args.skip_hash_check,
        bump_revision: args.bump_revision,
        mark_compacted: args.mark_compacted,
        move_aside: args.move_aside,
        force: args.force,
        owner: args.owner.clone(),
        dry_run: context.check_mode,
    };
    let from = match (&args.from_data_dir, &args.snapshot) {
        (Some(dir), None) => RestoreSource::DataDir(dir),
        (None, Some(source)) => RestoreSource::Snapshot(source),
        _ => {
            return Err(ModuleError::new(
                "etcd_snapshot_restore: give exactly one of snapshot (file or URL) or from_data_dir",
            ));
        }
    };
    let point = point_in_time(&args)?;
    let (identities, warnings) = args.identity.identities()?;
    let before = describe_marker(read_marker(&args.data_dir), &args.data_dir);
    let (result, plan) = match (point, &args.snapshot) {
        (Some(point), Some(store)) => {
            let (result, plan) = restore_to_point(
                &mut request,
                store,
                point,
                &args.store.options(),
                &identities,
            )
            .await?;
            (result, Some(plan))
        }
        _ => {
            let (source, snapshot) =
                open_restore_source(&mut request, from, &args.store.options(), &identities).await?;
            (restore_snapshot(&source, &snapshot, &request)?, None)
        }
    };
    let mut outcome = Outcome::unchanged(if result.changed && context.check_mode {
        format!(
            "would restore {} as member {} ({}) of cluster {} at revision {} (check mode: nothing written)",
            result.data_dir.display(),
            result.name,
            result.member_id,
            result.cluster_id,
            result.revision
        )
    } else if result.changed {
        format!(
            "restored {} as member {} ({}) of cluster {} at revision {}",
            result.data_dir.display(),
            result.name,
            result.member_id,
            result.cluster_id,
            result.revision
        )
    } else {
        format!(
            "{} already holds this restore (member {}, revision {}); nothing changed",
            result.data_dir.display(),
            result.member_id,
            result.revision
        )
    });
    // Removing what a killed restore left (a plaintext db) is a change too.
    outcome.changed = result.changed || !result.leftovers_removed.is_empty();
    outcome.diff = Some(serde_json::json!({
        "before_header": args.data_dir.display().to_string(),
        "after_header": args.data_dir.display().to_string(),
        "before": before,
        "after": format!(
            "member {} ({}) of cluster {}, revision {}, db sha256 {}\n",
            result.name, result.member_id, result.cluster_id, result.revision, result.db_sha256
        ),
    }));
    outcome.warnings.extend(forced);
    outcome.warnings.extend(warnings);
    if result.trailer == TrailerCheck::MismatchIgnored {
        outcome
            .warnings
            .push("etcd's SHA-256 trailer does not match the db (skip_hash_check)".into());
    }
    for leftover in &result.leftovers_removed {
        outcome.warnings.push(format!(
            "removed {}, the staging dir of a restore that was killed",
            leftover.display()
        ));
    }
    if let Some(pitr) = &result.point_in_time
        && !pitr.leases_detached.is_empty()
    {
        outcome.warnings.push(format!(
            "{} changes were restored without their lease ({}): it ended before backup run learned its TTL, so those keys will not expire",
            pitr.changes_detached,
            pitr.leases_detached.join(", ")
        ));
    }
    let outcome = outcome.with_fields(&result);
    Ok(match plan {
        Some(plan) => outcome.with_fields(serde_json::json!({ "plan": plan })),
        None => outcome,
    })
}

/// `to_revision` or `to_time` (RFC 3339), which need `snapshot` to name a store.
fn point_in_time(args: &Args) -> Result<Option<PointInTime>, ModuleError> {
    match (args.to_revision, &args.to_time) {
        (Some(_), Some(_)) => Err(ModuleError::new(
            "etcd_snapshot_restore: give at most one of to_revision and to_time",
        )),
        (Some(_), None) | (None, Some(_)) if args.snapshot.is_none() => Err(ModuleError::new(
            "etcd_snapshot_restore: to_revision and to_time need snapshot to be the store backup run writes to (a directory or URL), not from_data_dir",
        )),
        (Some(revision), None) => Ok(Some(PointInTime::Revision(revision))),
        (None, Some(text)) => chrono::DateTime::parse_from_rfc3339(text)
            .map(|t| Some(PointInTime::Time(t.with_timezone(&chrono::Utc))))
            .map_err(|e| {
                ModuleError::new(format!(
                    "etcd_snapshot_restore: to_time '{text}' is not an RFC 3339 time such as 2026-11-30T02:15:00Z: {e}"
                ))
            }),
        (None, None) => Ok(None),
    }
}
