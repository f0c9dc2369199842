//! Waiting for a cluster to be ready for the next step, polled with backoff up to a deadline:
//! a learner caught up before its promotion ([`promote_when_ready`]), the conditions of a
//! health gate cleared after a start or a restore ([`cluster_info_when`]), every endpoint
//! healthy ([`health_when`]). One place for the loop, so that neither front-end sleeps in a
//! loop of its own; a zero timeout looks once.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use etcd_core::{
    Client, ClusterConfig, HealthReport, MemberChangeResult, MemberQuery, Targets, match_member,
};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::guard::{Force, Guards};
use crate::member::info::{ClusterInfo, ClusterInfoRequest, FailOn, cluster_info};
use crate::member::{Guarded, PromoteRequest};

/// The first pause between two looks; each pause doubles, up to [`MAX_PAUSE`].
pub const FIRST_PAUSE: Duration = Duration::from_millis(250);
/// The longest pause between two looks.
pub const MAX_PAUSE: Duration = Duration::from_secs(5);

/// What one look found.
#[derive(Debug)]
pub enum Poll<T> {
    /// Ready: the wait is over.
    Ready(T),
    /// Not yet: the value seen (when there is one) and why it is not ready.
    Pending(Option<T>, String),
}

/// How a wait went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waited {
    /// Whole seconds waited, from the first look to the last.
    pub seconds: u64,
    /// How many looks.
    pub attempts: u32,
    /// Whether the deadline passed before it was ready.
    pub timed_out: bool,
    /// Why it was not ready at the last look (on a timeout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
}

/// Looks with `poll` until it is ready or `timeout` has passed, pausing [`FIRST_PAUSE`],
/// doubling up to [`MAX_PAUSE`], never past the deadline. An error of `poll` that may pass if
/// retried ([`crate::is_transient`]: an endpoint not answering yet) counts as not ready; any
/// other ends the wait. On a timeout: the last value seen with `timed_out`, or an error
/// saying what it waited for and why it was not ready, when no value was ever seen.
pub async fn poll_until<T, F, Fut>(
    what: &str,
    timeout: Duration,
    mut poll: F,
) -> Result<(Option<T>, Waited)>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Poll<T>>>,
{
    let start = Instant::now();
    let deadline = start + timeout;
    let mut pause = FIRST_PAUSE;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (last, why) = match poll().await {
            Ok(Poll::Ready(value)) => {
                let waited = Waited {
                    seconds: start.elapsed().as_secs(),
                    attempts,
                    timed_out: false,
                    pending: None,
                };
                return Ok((Some(value), waited));
            }
            Ok(Poll::Pending(last, why)) => (last, why),
            Err(e) if crate::is_transient(&e) => (None, e.to_string()),
            Err(e) => return Err(e),
        };
        let now = Instant::now();
        if now >= deadline {
            let waited = Waited {
                seconds: start.elapsed().as_secs(),
                attempts,
                timed_out: true,
                pending: Some(why.clone()),
            };
            if last.is_none() {
                return Err(Error::TimedOut {
                    message: format!(
                        "waited {} for {what}; still not ready after {attempts} look(s): {why}",
                        seconds(timeout)
                    ),
                });
            }
            return Ok((last, waited));
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// A duration in words for messages: `90s`, `1.5s`.
fn seconds(d: Duration) -> String {
    format!("{}s", (d.as_secs_f64() * 10.0).round() / 10.0)
}

/// A promotion after its wait.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitedPromotion {
    /// The promotion (or that the member already votes).
    #[serde(flatten)]
    pub result: MemberChangeResult,
    /// How the wait went.
    pub waited: Waited,
    /// The warnings of the guards forced through.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Waits until the learner `request` names has started and caught up with the leader (the
/// promotion guard's own test: it answers, its applied index is at least
/// [`etcd_core::LEARNER_READY_PERCENT`] of the leader's), then promotes it through
/// [`crate::member::promote`], with every guard. A member that votes already is promoted at once (no
/// change); a member that does not exist is refused at once. Not ready by `timeout`: an error
/// that says what it waited for and what was still missing.
pub async fn promote_when_ready(
    config: &ClusterConfig,
    guards: &Guards,
    request: &PromoteRequest,
    timeout: Duration,
) -> Result<WaitedPromotion> {
    let query = MemberQuery::from(&request.member);
    promote_query_when_ready(config, guards, query, request.force, timeout).await
}

/// [`promote_when_ready`] of the member `query` names.
pub(crate) async fn promote_query_when_ready(
    config: &ClusterConfig,
    guards: &Guards,
    query: MemberQuery,
    force: Force,
    timeout: Duration,
) -> Result<WaitedPromotion> {
    let waited = wait_for_learner(config, &query, timeout).await?;
    let Guarded { result, warnings } =
        crate::member::promote_member(config, guards, query, force, false).await?;
    Ok(WaitedPromotion {
        result,
        waited,
        warnings,
    })
}

/// Waits until the learner `request` names has started and caught up (or votes already),
/// without promoting it: for a step between the wait and the promotion (a backup before it).
pub async fn learner_ready_within(
    config: &ClusterConfig,
    request: &PromoteRequest,
    timeout: Duration,
) -> Result<Waited> {
    wait_for_learner(config, &MemberQuery::from(&request.member), timeout).await
}

/// The wait of [`promote_when_ready`]: an error on a timeout.
async fn wait_for_learner(
    config: &ClusterConfig,
    query: &MemberQuery,
    timeout: Duration,
) -> Result<Waited> {
    let what = format!("learner {} to start and catch up", named(query));
    // A pending look carries no value, so a timeout is an error: Ok means it is ready.
    let (_, waited) = poll_until(&what, timeout, || learner_ready(config, query)).await?;
    Ok(waited)
}

/// The member a query names, for messages: `'etcd-4'`, `'etcd-4' (http://10.0.0.4:2380)`.
fn named(query: &MemberQuery) -> String {
    let name = query
        .member
        .as_deref()
        .or(query.name.as_deref())
        .unwrap_or("");
    if query.member.is_none() && !query.peer_urls.is_empty() {
        format!("'{name}' ({})", query.peer_urls.join(","))
    } else {
        format!("'{name}'")
    }
}

/// One look at the learner: ready when it votes already, or answers and is in sync.
pub(crate) async fn learner_ready(config: &ClusterConfig, query: &MemberQuery) -> Result<Poll<()>> {
    let view = Client::new(config.clone()).cluster_view().await?;
    let Some(target) = match_member(&view, query)? else {
        // Not a member at all: waiting will not make it one.
        return Err(Error::invalid(
            format!(
                "no member matches {}; add it as a learner first",
                named(query)
            ),
            None,
        ));
    };
    if !target.member.is_learner {
        return Ok(Poll::Ready(()));
    }
    if !target.member.started {
        return Ok(Poll::Pending(
            None,
            format!(
                "learner {} has not started (its etcd has not joined yet)",
                target.member.id
            ),
        ));
    }
    match crate::guard::learner_in_sync(&view, target) {
        Ok(()) => Ok(Poll::Ready(())),
        Err(e) => Ok(Poll::Pending(None, e.to_string())),
    }
}

/// Cluster info after its wait.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitedInfo {
    /// The last look at the cluster.
    #[serde(flatten)]
    pub info: ClusterInfo,
    /// How the wait went.
    pub waited: Waited,
}

/// Reads the cluster until none of the request's `fail_on` conditions (`unhealthy` when it
/// names none: the cluster serving, every member healthy) fails it, or `timeout` passes; the
/// last look either way (on a timeout its `failures` say what was still wrong). For a start,
/// a restart or a restore: etcd takes a moment to elect a leader and answer.
pub async fn cluster_info_when(
    config: &ClusterConfig,
    request: &ClusterInfoRequest,
    timeout: Duration,
) -> Result<WaitedInfo> {
    let mut request = request.clone();
    if request.fail_on.is_empty() {
        request.fail_on.push(FailOn::Unhealthy);
    }
    let what = "the cluster to pass its health gate";
    let (info, waited) = poll_until(what, timeout, || async {
        let info = cluster_info(config, &request).await?;
        if info.failures.is_empty() {
            Ok(Poll::Ready(info))
        } else {
            let why = info.failures.join("; ");
            Ok(Poll::Pending(Some(info), why))
        }
    })
    .await?;
    let info = info.ok_or_else(|| Error::TimedOut {
        message: format!("waited {} for {what}", seconds(timeout)),
    })?;
    Ok(WaitedInfo { info, waited })
}

/// Endpoint health after its wait.
#[derive(Debug, Clone, Serialize)]
pub struct WaitedHealth {
    /// The last look.
    #[serde(flatten)]
    pub report: HealthReport,
    /// How the wait went.
    pub waited: Waited,
}

/// Checks the health of `targets` until every endpoint is healthy or `timeout` passes; the
/// last report either way.
pub async fn health_when(
    config: &ClusterConfig,
    targets: Targets,
    timeout: Duration,
) -> Result<WaitedHealth> {
    let what = "every endpoint to be healthy";
    let (report, waited) = poll_until(what, timeout, || async {
        // A new connection each time: members come and go while it waits.
        let report = Client::new(config.clone())
            .endpoints()
            .health(targets)
            .await?;
        if report.all_healthy {
            Ok(Poll::Ready(report))
        } else {
            let why = report
                .endpoints
                .iter()
                .filter(|e| !e.health)
                .map(|e| {
                    format!(
                        "{}: {}",
                        e.endpoint,
                        e.error.as_deref().unwrap_or("unhealthy")
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            Ok(Poll::Pending(Some(report), why))
        }
    })
    .await?;
    let report = report.ok_or_else(|| Error::TimedOut {
        message: format!("waited {} for {what}", seconds(timeout)),
    })?;
    Ok(WaitedHealth { report, waited })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_wait_backs_off_and_ends_at_its_deadline_with_the_last_reason() {
        let mut looks = 0;
        let (last, waited) = poll_until("it", Duration::from_secs(10), || {
            looks += 1;
            let n = looks;
            async move { Ok(Poll::Pending(Some(n), format!("look {n}"))) }
        })
        .await
        .unwrap();
        assert!(waited.timed_out);
        // 0.25 + 0.5 + 1 + 2 + 4 = 7.75 s, then 2.25 s to the deadline: 7 looks.
        assert_eq!(waited.attempts, 7);
        assert_eq!(last, Some(7));
        assert_eq!(waited.pending.as_deref(), Some("look 7"));
        assert_eq!(waited.seconds, 10, "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_timeout_looks_once_and_a_wait_that_never_saw_a_value_is_an_error() {
        let mut looks = 0;
        let err = poll_until("the learner", Duration::ZERO, || {
            looks += 1;
            async { Ok(Poll::<()>::Pending(None, "not started".into())) }
        })
        .await
        .unwrap_err();
        assert_eq!(looks, 1);
        assert_eq!(
            err.to_string(),
            "waited 0s for the learner; still not ready after 1 look(s): not started"
        );
        let (value, waited) = poll_until("it", Duration::ZERO, || async { Ok(Poll::Ready(3)) })
            .await
            .unwrap();
        assert_eq!(
            (value, waited.attempts, waited.timed_out),
            (Some(3), 1, false)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_lasting_error_ends_the_wait_at_once() {
        let mut looks = 0;
        let err = poll_until("it", Duration::from_secs(60), || {
            looks += 1;
            async { Err::<Poll<()>, _>(Error::invalid("no such member", None)) }
        })
        .await
        .unwrap_err();
        assert_eq!(looks, 1);
        assert_eq!(err.to_string(), "no such member");
    }
}
