//! Maintenance: leadership moves, alarms, rolling defragmentation, compaction, versions.

use std::time::Instant;

use etcd_client::{AlarmAction, AlarmType, CompactionOptions, GetOptions};
use serde::Serialize;

use crate::cluster::{ClusterView, cluster_view, linearizable_read};
use crate::config::ClusterConfig;
use crate::error::{Error, Result};
use crate::id::MemberId;
use crate::member::{Targets, target_endpoints};
use crate::membership::find_member;

fn refused(reason: String) -> Error {
    Error::Refused { reason }
}

/// What `move-leader` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MoveLeaderResult {
    /// Whether leadership moved (false when the target already led).
    pub changed: bool,
    /// The leader before.
    pub from: MemberId,
    /// The leader now.
    pub to: MemberId,
}

/// Moves leadership to the member `selector` names (peer URL, ID or name). The request goes
/// to the current leader, as etcd requires.
///
/// With `dry_run` every check runs and nothing moves.
pub async fn move_leader(
    config: &ClusterConfig,
    selector: &str,
    dry_run: bool,
) -> Result<MoveLeaderResult> {
    crate::membership::check_selector(selector)?;
    let view = cluster_view(config).await?;
    let target = find_member(&view, selector)
        .ok_or_else(|| refused(format!("no member matches '{selector}'")))?;
    let leader = view
        .leader_state()
        .ok_or_else(|| refused("the cluster has no reachable leader".into()))?;
    if leader.member.id == target.member.id {
        return Ok(MoveLeaderResult {
            changed: false,
            from: leader.member.id,
            to: target.member.id,
        });
    }
    if target.member.is_learner {
        return Err(refused(format!(
            "member {} is a learner and cannot lead",
            target.member.id
        )));
    }
    if !target.healthy {
        return Err(refused(format!(
            "member {} is not healthy ({}); leadership would be lost",
            target.member.id,
            target.error.as_deref().unwrap_or("unreachable")
        )));
    }
    if dry_run {
        return Ok(MoveLeaderResult {
            changed: true,
            from: leader.member.id,
            to: target.member.id,
        });
    }
    let endpoint = leader
        .endpoint
        .clone()
        .ok_or_else(|| refused("the leader has no client URL".into()))?;
    let client = config.connect_endpoint(&endpoint).await?;
    let to = target.member.id;
    client
        .call(
            "move leader",
            |mut c| async move { c.move_leader(to.0).await },
        )
        .await?;
    Ok(MoveLeaderResult {
        changed: true,
        from: leader.member.id,
        to,
    })
}

/// An active alarm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Alarm {
    /// The member that raised it.
    pub member_id: MemberId,
    /// `NOSPACE` or `CORRUPT`.
    pub alarm: String,
}

fn alarm_name(alarm: AlarmType) -> &'static str {
    match alarm {
        AlarmType::Nospace => "NOSPACE",
        AlarmType::Corrupt => "CORRUPT",
        AlarmType::None => "NONE",
    }
}

/// Lists the cluster's active alarms.
pub async fn alarm_list(config: &ClusterConfig) -> Result<Vec<Alarm>> {
    let response = config
        .read_any(|client| async move {
            client
                .call("alarm list", |mut c| async move {
                    c.alarm(AlarmAction::Get, AlarmType::None, None).await
                })
                .await
        })
        .await?;
    Ok(response
        .alarms()
        .iter()
        .map(|a| Alarm {
            member_id: MemberId(a.member_id()),
            alarm: alarm_name(a.alarm()).to_string(),
        })
        .collect())
}

/// What `alarm disarm` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlarmDisarmResult {
    /// Whether any alarm was cleared.
    pub changed: bool,
    /// The alarms cleared.
    pub disarmed: Vec<Alarm>,
    /// Alarms still active afterwards (a NOSPACE alarm comes back while the db is over quota).
    pub still_active: Vec<Alarm>,
}

/// Clears every active alarm.
///
/// With `dry_run` it lists what it would clear and clears nothing.
pub async fn alarm_disarm(config: &ClusterConfig, dry_run: bool) -> Result<AlarmDisarmResult> {
    let active = alarm_list(config).await?;
    if dry_run {
        return Ok(AlarmDisarmResult {
            changed: !active.is_empty(),
            still_active: active.clone(),
            disarmed: active,
        });
    }
    let client = config.connect_any().await?;
    for alarm in &active {
        let member = alarm.member_id.0;
        let kind = match alarm.alarm.as_str() {
            "NOSPACE" => AlarmType::Nospace,
            "CORRUPT" => AlarmType::Corrupt,
            _ => AlarmType::None,
        };
        client
            .call("alarm disarm", |mut c| async move {
                let mut options = etcd_client::AlarmOptions::new();
                options.with_member(member);
                c.alarm(AlarmAction::Deactivate, kind, Some(options)).await
            })
            .await?;
    }
    let still_active = alarm_list(config).await?;
    Ok(AlarmDisarmResult {
        changed: !active.is_empty(),
        disarmed: active,
        still_active,
    })
}

/// One member's defragmentation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefragStep {
    /// Endpoint.
    pub endpoint: String,
    /// Member.
    pub member_id: Option<MemberId>,
    /// Whether it led the cluster (defragmented last).
    pub was_leader: bool,
    /// db size before.
    pub db_size_before: Option<i64>,
    /// db size after.
    pub db_size_after: Option<i64>,
    /// Seconds the defragmentation took.
    pub took_seconds: f64,
    /// Why it failed; the rolling defrag stops at the first failure.
    pub error: Option<String>,
}

/// A rolling defragmentation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefragReport {
    /// Steps in the order run: followers first, the leader last.
    pub steps: Vec<DefragStep>,
    /// Endpoints not defragmented because an earlier step failed.
    pub skipped: Vec<String>,
    /// True when every endpoint was defragmented and healthy afterwards.
    pub completed: bool,
}

/// Defragments one endpoint at a time: followers first, the leader last, checking health after
/// each and stopping at the first failure. A defragmenting member stops serving for a while;
/// doing them one by one keeps the quorum.
pub async fn defrag(config: &ClusterConfig, targets: Targets) -> Result<DefragReport> {
    let endpoints = target_endpoints(config, targets).await?;
    let mut ordered = Vec::new();
    for endpoint in endpoints {
        let client = config.connect_endpoint(&endpoint).await;
        let status = match &client {
            Ok(c) => c
                .call("status", |mut c| async move { c.status().await })
                .await
                .ok(),
            Err(_) => None,
        };
        let (member_id, is_leader, size) = match &status {
            Some(s) => {
                let id = s.header().map(|h| h.member_id()).unwrap_or_default();
                (Some(MemberId(id)), s.leader() == id, Some(s.db_size()))
            }
            None => (None, false, None),
        };
        ordered.push((endpoint, client, member_id, is_leader, size));
    }
    ordered.sort_by_key(|(_, _, _, is_leader, _)| *is_leader);
    let mut steps = Vec::new();
    let mut skipped = Vec::new();
    let mut failed = false;
    for (endpoint, client, member_id, was_leader, size) in ordered {
        if failed {
            skipped.push(endpoint);
            continue;
        }
        let started = Instant::now();
        let outcome = async {
            let client = client?;
            client
                .call("defragment", |mut c| async move { c.defragment().await })
                .await?;
            linearizable_read(&client).await?;
            let after = client
                .call("status", |mut c| async move { c.status().await })
                .await?;
            Ok::<_, Error>(after.db_size())
        }
        .await;
        let error = outcome.as_ref().err().map(ToString::to_string);
        failed = error.is_some();
        steps.push(DefragStep {
            endpoint,
            member_id,
            was_leader,
            db_size_before: size,
            db_size_after: outcome.ok(),
            took_seconds: started.elapsed().as_secs_f64(),
            error,
        });
    }
    Ok(DefragReport {
        completed: !failed && skipped.is_empty() && !steps.is_empty(),
        steps,
        skipped,
    })
}

/// How far to compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTarget {
    /// Up to this revision.
    Revision(i64),
    /// Keep this many revisions before the current one.
    KeepRevisions(i64),
}

/// What `compact` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactResult {
    /// Whether anything was compacted (false when already compacted that far).
    pub changed: bool,
    /// The compaction revision.
    pub revision: i64,
    /// The current revision when it ran.
    pub current_revision: i64,
    /// Whether it waited for the compaction to be applied on disk.
    pub physical: bool,
}

/// Compacts the key history. Refuses a revision in the future; compacting again to an
/// already compacted revision changes nothing.
///
/// With `dry_run` it says whether compacting would change anything (reading one revision
/// below the target answers "compacted" when it already was) and compacts nothing.
pub async fn compact(
    config: &ClusterConfig,
    target: CompactTarget,
    physical: bool,
    dry_run: bool,
) -> Result<CompactResult> {
    let client = config.connect_any().await?;
    let current = client
        .call("read revision", |mut c| async move {
            c.get("health", Some(GetOptions::new().with_count_only()))
                .await
        })
        .await?
        .header()
        .map(|h| h.revision())
        .unwrap_or_default();
    let revision = match target {
        CompactTarget::Revision(r) => r,
        CompactTarget::KeepRevisions(n) if n >= 0 => current - n,
        CompactTarget::KeepRevisions(n) => {
            return Err(Error::InvalidOption {
                option: "keep-revisions",
                reason: format!("{n} is negative"),
            });
        }
    };
    if revision <= 0 {
        return Err(Error::InvalidOption {
            option: "revision",
            reason: format!("nothing to compact: revision {revision} (current {current})"),
        });
    }
    if revision > current {
        return Err(Error::InvalidOption {
            option: "revision",
            reason: format!("{revision} is in the future; the current revision is {current}"),
        });
    }
    if dry_run {
        let below = revision - 1;
        let probe = if below == 0 {
            Ok(())
        } else {
            client
                .call("read revision", |mut c| async move {
                    c.get(
                        "health",
                        Some(GetOptions::new().with_count_only().with_revision(below)),
                    )
                    .await
                })
                .await
                .map(|_| ())
        };
        let changed = match probe {
            Ok(()) => true,
            Err(Error::Request { message, .. }) if message.contains("has been compacted") => false,
            Err(e) => return Err(e),
        };
        return Ok(CompactResult {
            changed,
            revision,
            current_revision: current,
            physical,
        });
    }
    let result = client
        .call("compact", |mut c| async move {
            let options = if physical {
                Some(CompactionOptions::new().with_physical())
            } else {
                None
            };
            c.compact(revision, options).await
        })
        .await;
    match result {
        Ok(_) => Ok(CompactResult {
            changed: true,
            revision,
            current_revision: current,
            physical,
        }),
        Err(Error::Request { message, .. }) if message.contains("has been compacted") => {
            Ok(CompactResult {
                changed: false,
                revision,
                current_revision: current,
                physical,
            })
        }
        Err(e) => Err(e),
    }
}

/// Versions of this tool and of every member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionReport {
    /// This library's version.
    pub client_version: String,
    /// Each member: ID, name, version (`None` when it did not answer).
    pub members: Vec<MemberVersion>,
}

/// One member's server version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberVersion {
    /// Member ID.
    pub member_id: MemberId,
    /// Name.
    pub name: String,
    /// etcd version, when it answered.
    pub version: Option<String>,
}

/// Reports versions, from one look at the cluster.
pub fn versions(view: &ClusterView) -> VersionReport {
    VersionReport {
        client_version: env!("CARGO_PKG_VERSION").to_string(),
        members: view
            .members
            .iter()
            .map(|m| MemberVersion {
                member_id: m.member.id,
                name: m.member.name.clone(),
                version: m.status.as_ref().map(|s| s.version.clone()),
            })
            .collect(),
    }
}

/// Versions of this tool and of every member.
pub async fn version(config: &ClusterConfig) -> Result<VersionReport> {
    Ok(versions(&cluster_view(config).await?))
}
