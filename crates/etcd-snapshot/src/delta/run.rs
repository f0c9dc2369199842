//! `backup run`: a full backup on schedule and, between fulls, every change streamed from a
//! watch into delta segments that continue it. A chain never has a silent hole: when the watch
//! falls behind a compaction the chain ends where its last change was received and a new full
//! backup starts a new chain (a gap, reported); a lost member is replaced by another, the
//! watch resuming at the first revision not yet received.

use std::collections::HashSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::time::Duration;

use chrono::Utc;
use etcd_client::{EventType, WatchOptions};
use etcd_core::{ClusterConfig, EndpointClient, MemberId};
use etcd_store::Store;
use futures::FutureExt;
use futures::future::FusedFuture;
use tokio::time::Instant;

pub use super::events::{RunEvent, RunObserver, RunState};
use super::format::{DeltaRecord, KeyValueFields, revision_key};
use super::history::{cluster_id, one_line, rewound};
use super::lock::{LockKeeper, lock_ttl};
use super::resume::{Resume, resumable_chain};
use super::runner::{Guard, Runner, Stop, StoreHeader, backoff_after, pause};
use super::segment::{ChainPosition, MAX_RECORD_BYTES, SegmentBuilder, SegmentSource};
use crate::catalog::DEFAULT_ORPHAN_GRACE;
use crate::error::{Result, SnapshotError};
use crate::retention::RetentionPolicy;
use crate::save::{SaveRequest, SaveResult};

/// Default cut size of a segment (uncompressed bytes).
pub const DEFAULT_SEGMENT_BYTES: u64 = 8 << 20;

/// Default [`RunRequest::stop_grace`]: below systemd's default stop timeout (90 s).
pub const DEFAULT_STOP_GRACE: Duration = Duration::from_secs(60);

/// What `backup run` does and how often.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Time between full backups.
    pub full_every: Duration,
    /// Longest a change waits before it is published in a segment.
    pub delta_every: Duration,
    /// A segment is cut once it holds this many (uncompressed) bytes.
    pub segment_bytes: u64,
    /// How the full backups are taken (endpoint, compression, labels, encryption); segments
    /// are encrypted to the same recipients.
    pub save: SaveRequest,
    /// Prometheus textfile to keep up to date.
    pub metrics_file: Option<PathBuf>,
    /// How often the store revision is read, for lag and time marks.
    pub check_every: Duration,
    /// After each full backup, prune with these rules (none: no pruning). A full backup and
    /// its chain are kept or deleted together.
    pub retention: RetentionPolicy,
    /// With `retention`: objects without a manifest older than this are removed.
    pub orphan_grace: Duration,
    /// Asked to stop while a full backup is being taken, wait this long for it to finish;
    /// past it, the upload is abandoned (its temporary file removed, its multipart upload
    /// aborted) and the run stops.
    pub stop_grace: Duration,
    /// With `retention`: prune every cluster folder of the store (each by its own rules)
    /// instead of only the folder of the cluster being backed up.
    pub all_clusters: bool,
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            full_every: Duration::from_secs(6 * 3600),
            delta_every: Duration::from_secs(60),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            save: SaveRequest::default(),
            metrics_file: None,
            check_every: Duration::from_secs(1),
            retention: RetentionPolicy::default(),
            orphan_grace: DEFAULT_ORPHAN_GRACE,
            stop_grace: DEFAULT_STOP_GRACE,
            all_clusters: false,
        }
    }
}

/// How a chain ended.
enum ChainEnd {
    /// The next full backup is stored and the chain reached past what it holds: continue from
    /// it.
    FullDue(Box<SaveResult>),
    /// Asked to stop; the last segment was published (or could not be).
    Stopped,
    /// The watch cannot continue the chain.
    Gap(String),
    /// The chain's full backup is gone from the store: a new one at once.
    Lost,
    /// Another run took the writer lock over: stop with an error.
    TakenOver(String),
}

/// How one watch connection ended.
enum WatchEnd {
    Chain(ChainEnd),
    /// Reconnect (to another member) and resume.
    Reconnect(String),
}

/// Runs until `stop` completes: a full backup every `full_every`, and delta segments of every
/// change in between. The next full backup is taken while the chain goes on, and the chain
/// ends only once it holds every change the new full backup may hold, so consecutive chains
/// overlap and every revision stays restorable. A chain an earlier run left is continued
/// from its last published revision (a new full backup follows at once when it is due).
/// Before each publication the store's writer lock is read back and the chain's full backup
/// checked: a lost full backup is reported (a gap) and a new one taken at once. On `stop`,
/// the segment being filled is published first (a full backup in progress is finished
/// within the stop grace, else abandoned without leftovers). Failures of a step are reported
/// through `observer` and retried with growing waits; a bad request, another live holder of
/// the lock, or a takeover of it is returned as an error.
pub async fn run_backups(
    config: &ClusterConfig,
    store: &Store,
    request: &RunRequest,
    observer: &dyn RunObserver,
    stop: impl Future<Output = ()>,
) -> Result<RunState> {
    validate(request)?;
    let mut stop = pin!(stop.fuse());
    let mut runner = Runner {
        config,
        store,
        request,
        observer,
        state: RunState::default(),
        lock: None,
        taken_over: None,
        cluster: MemberId(0),
        full_size: None,
    };
    let result = run_locked(&mut runner, &mut stop).await;
    if let Some(lock) = runner.lock.take() {
        lock.release().await;
    }
    result.map(|()| runner.state)
}

async fn run_locked<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    stop: &mut Stop<'_, F>,
) -> Result<()> {
    let request = runner.request;
    let Some((cluster, revision)) = cluster_id(runner, stop).await? else {
        return Ok(());
    };
    runner.cluster = cluster;
    let lock = LockKeeper::acquire(runner.store, cluster, lock_ttl(request.delta_every)).await?;
    runner.emit(RunEvent::Locked {
        lock: lock.name().to_string(),
        expires_at: lock.expires_at(),
    });
    runner.lock = Some(lock);
    // The chain an earlier run left is continued, whatever its full backup's age.
    let mut delay = Duration::from_secs(1);
    let mut resume = loop {
        match resumable_chain(runner.store, cluster, request.full_every, revision).await {
            Ok(Resume::Chain {
                chain,
                endpoint,
                full_due,
                full_at,
            }) => {
                runner.state.last_full_at = Some(full_at);
                runner.state.last_full_revision = chain.base_revision;
                runner.state.last_delta_revision = chain.covered_revision;
                runner.emit(RunEvent::Resumed {
                    base: chain.base.clone(),
                    covered_revision: chain.covered_revision,
                });
                break Some((chain, endpoint, full_due));
            }
            Ok(Resume::Broken {
                base,
                covered_revision,
                reason,
            }) => {
                runner.state.gaps += 1;
                runner.emit(RunEvent::Gap {
                    base,
                    covered_revision,
                    reason,
                });
                break None;
            }
            Ok(Resume::Nothing) => break None,
            Err(e) => runner.emit(RunEvent::Failed {
                error: format!("reading the store for a chain to continue: {e}"),
            }),
        }
        if pause(stop, delay).await {
            return Ok(());
        }
        delay = backoff_after(delay);
    };
    let mut next: Option<SaveResult> = None;
    let mut delay = Duration::from_secs(2);
    loop {
        if let Some(reason) = runner.taken_over.take() {
            return Err(SnapshotError::RunLocked { reason });
        }
        let (mut chain, endpoint, full_due) = match resume.take() {
            Some(resumed) => {
                runner.lock_chains(Some(&resumed.0.base), None).await;
                resumed
            }
            None => {
                let full = match next.take() {
                    Some(full) => full,
                    None => {
                        if stop.is_terminated() {
                            return Ok(());
                        }
                        match runner.save_full(stop).await {
                            Ok(full) => full,
                            Err(SnapshotError::RunLocked { reason }) => {
                                return Err(SnapshotError::RunLocked { reason });
                            }
                            Err(_) => {
                                if pause(stop, delay).await {
                                    return Ok(());
                                }
                                delay = backoff_after(delay);
                                continue;
                            }
                        }
                    }
                };
                delay = Duration::from_secs(2);
                runner.lock_chains(Some(&full.manifest.object), None).await;
                runner.prune().await;
                (
                    ChainPosition::after_full(&full.manifest),
                    full.manifest.endpoint.clone(),
                    Instant::now() + request.full_every,
                )
            }
        };
        match follow_chain(runner, &mut chain, &endpoint, full_due, stop).await {
            ChainEnd::FullDue(full) => next = Some(*full),
            ChainEnd::Stopped => return Ok(()),
            ChainEnd::TakenOver(reason) => return Err(SnapshotError::RunLocked { reason }),
            ChainEnd::Gap(reason) => {
                runner.state.gaps += 1;
                runner.emit(RunEvent::Gap {
                    base: chain.base.clone(),
                    covered_revision: chain.covered_revision,
                    reason,
                });
            }
            ChainEnd::Lost => {
                // Nothing restores this chain any more: a gap, and the metrics say there is
                // no full backup until the next one is stored.
                runner.state.gaps += 1;
                runner.state.fulls_lost += 1;
                runner.state.last_full_at = None;
                runner.state.last_full_revision = 0;
                runner.emit(RunEvent::FullBackupLost {
                    base: chain.base.clone(),
                    covered_revision: chain.covered_revision,
                });
                if stop.is_terminated() {
                    return Ok(());
                }
            }
        }
    }
}

fn validate(request: &RunRequest) -> Result<()> {
    let invalid = |option: &'static str, reason: &str| {
        Err(SnapshotError::InvalidOption {
            option,
            reason: reason.to_string(),
        })
    };
    if request.delta_every.is_zero() {
        return invalid("delta-every", "must be more than 0");
    }
    if request.full_every < request.delta_every {
        return invalid("full-every", "must be at least --delta-every");
    }
    if !(4096..=MAX_CUT_BYTES).contains(&request.segment_bytes) {
        return invalid("segment-bytes", "must be from 4096 to 67108864 (64 MiB)");
    }
    if request.check_every.is_zero() {
        return invalid("check-every", "must be more than 0");
    }
    Ok(())
}

/// The largest `segment_bytes`: a segment is cut at the first revision boundary past it, so it
/// stays well under what readers accept.
const MAX_CUT_BYTES: u64 = 64 << 20;

/// Where the watch of one chain stands.
struct Follow {
    segment: SegmentBuilder,
    segment_due: Instant,
    /// Every change up to here was received.
    received: i64,
    /// Sub revision numbering inside the revision last received.
    last_main: i64,
    next_sub: i64,
    /// Leases whose TTL is recorded in this chain, or known to be gone.
    leases: HashSet<i64>,
    source: SegmentSource,
    /// When the next full backup is due.
    full_due: Instant,
    /// The next full backup, once stored, with the store revision read after it: the chain
    /// ends once it has received every change up to that revision.
    next_full: Option<(SaveResult, i64)>,
    /// Wait before the next reconnection.
    backoff: Duration,
}

async fn follow_chain<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    endpoint: &str,
    full_due: Instant,
    stop: &mut Stop<'_, F>,
) -> ChainEnd {
    let request = runner.request;
    let segment = match SegmentBuilder::new(chain.covered_revision, Utc::now()) {
        Ok(s) => s,
        Err(e) => return ChainEnd::Gap(e.to_string()),
    };
    let mut follow = Follow {
        segment,
        segment_due: Instant::now() + request.delta_every,
        received: chain.covered_revision,
        last_main: 0,
        next_sub: 0,
        leases: HashSet::new(),
        source: SegmentSource {
            member_id: MemberId(0),
            endpoint: endpoint.to_string(),
        },
        full_due,
        next_full: None,
        backoff: Duration::from_millis(200),
    };
    let mut preferred = Some(endpoint.to_string());
    let mut avoid: Option<String> = None;
    loop {
        // A fused stop that already fired (while a full backup was finished) never fires
        // again: check it first.
        if stop.is_terminated() {
            return finish(runner, chain, &mut follow, stop).await;
        }
        // What was received is published on time even while no member can be watched.
        if Instant::now() >= follow.segment_due
            && let Err(end) = cut(runner, chain, &mut follow, stop).await
        {
            return end;
        }
        let client = tokio::select! {
            () = &mut *stop => return finish(runner, chain, &mut follow, stop).await,
            client = runner.connect(preferred.as_deref(), avoid.as_deref()) => client,
        };
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                // A member of another cluster was reported by `connect` and is never used.
                runner.emit(RunEvent::Failed {
                    error: format!("watch: no member answers: {e}"),
                });
                tokio::select! {
                    () = &mut *stop => return finish(runner, chain, &mut follow, stop).await,
                    () = tokio::time::sleep(follow.backoff) => {}
                }
                follow.backoff = backoff_after(follow.backoff);
                continue;
            }
        };
        if follow.source.endpoint != client.endpoint() {
            runner.emit(RunEvent::Reconnected {
                endpoint: client.endpoint().to_string(),
                reason: format!("{} could not be watched", follow.source.endpoint),
            });
        }
        match watch_once(runner, chain, &mut follow, &client, stop).await {
            WatchEnd::Chain(end) => return end,
            WatchEnd::Reconnect(reason) => {
                runner.emit(RunEvent::Failed {
                    error: format!("watch on {}: {reason}", client.endpoint()),
                });
                avoid = Some(client.endpoint().to_string());
                preferred = None;
                tokio::select! {
                    () = &mut *stop => return finish(runner, chain, &mut follow, stop).await,
                    () = tokio::time::sleep(follow.backoff) => {}
                }
                follow.backoff = backoff_after(follow.backoff);
            }
        }
    }
}

/// Ends the chain early (a gap, `reason`): what was received stays published; the rest is
/// lost to this chain.
async fn ended<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
    reason: String,
) -> ChainEnd {
    match cut(runner, chain, follow, stop).await {
        Err(end @ (ChainEnd::Lost | ChainEnd::TakenOver(_))) => end,
        _ => ChainEnd::Gap(reason),
    }
}

/// Publishes the segment being filled (a few attempts) and ends the chain as stopped.
async fn finish<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
) -> ChainEnd {
    match publish(runner, chain, follow, stop, 3).await {
        Err(ChainEnd::Gap(reason)) => {
            runner.emit(RunEvent::Failed {
                error: format!("the last segment was not published: {reason}"),
            });
            ChainEnd::Stopped
        }
        Err(end @ (ChainEnd::Lost | ChainEnd::TakenOver(_))) => end,
        _ => ChainEnd::Stopped,
    }
}

/// Publishes the segment being filled, trying again with growing waits while the store
/// fails (the watch is not read meanwhile), and opens the next one. Stopping while it waits
/// gives up on it: its changes were never listed.
async fn cut<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
) -> std::result::Result<(), ChainEnd> {
    publish(runner, chain, follow, stop, u32::MAX).await?;
    follow.segment = SegmentBuilder::new(chain.covered_revision, Utc::now())
        .map_err(|e| ChainEnd::Gap(e.to_string()))?;
    follow.segment_due = Instant::now() + runner.request.delta_every;
    Ok(())
}

async fn publish<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
    attempts: u32,
) -> std::result::Result<(), ChainEnd> {
    let mut delay = Duration::from_secs(1);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let changes = follow.segment.changes();
        let published = match runner.guard(Some(&chain.base)).await {
            Guard::Go => follow
                .segment
                .publish(
                    runner.store,
                    chain,
                    &follow.source,
                    &runner.request.save.encrypt_to,
                )
                .await
                .map_err(|e| e.to_string()),
            Guard::Lost => return Err(ChainEnd::Lost),
            Guard::TakenOver(reason) => return Err(ChainEnd::TakenOver(reason)),
            Guard::Retry(reason) => Err(reason),
        };
        match published {
            Ok(manifest) => {
                runner.state.last_delta_at = Some(manifest.completed_at);
                runner.state.last_delta_revision = manifest.to_revision;
                runner.state.segments += 1;
                runner.state.changes += changes;
                runner.emit(RunEvent::SegmentPublished {
                    object: manifest.object,
                    sequence: manifest.sequence,
                    after_revision: manifest.after_revision,
                    to_revision: manifest.to_revision,
                    changes,
                });
                return Ok(());
            }
            Err(e) if attempt >= attempts => return Err(ChainEnd::Gap(e)),
            Err(e) => {
                runner.emit(RunEvent::Failed {
                    error: format!(
                        "publishing segment {} of {}: {e}; trying again in {} s",
                        chain.next_sequence,
                        chain.base,
                        delay.as_secs()
                    ),
                });
                if stop.is_terminated() {
                    tokio::time::sleep(delay).await;
                } else {
                    tokio::select! {
                        () = &mut *stop => return Err(ChainEnd::Stopped),
                        () = tokio::time::sleep(delay) => {}
                    }
                }
                delay = backoff_after(delay);
            }
        }
    }
}

/// A lease's granted TTL: `Some(ttl)`, or `None` once it is gone (it can never be learned);
/// an error when etcd could not be asked.
async fn granted_ttl(
    client: &EndpointClient,
    id: i64,
) -> etcd_core::Result<(Option<i64>, MemberId)> {
    let response = client
        .call("lease time-to-live", |mut c| async move {
            c.lease_time_to_live(id, None).await
        })
        .await?;
    let cluster = MemberId(
        response
            .header()
            .map(|h| h.cluster_id())
            .unwrap_or_default(),
    );
    let ttl = (response.ttl() >= 0 && response.granted_ttl() > 0).then(|| response.granted_ttl());
    Ok((ttl, cluster))
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// The chain may end once the next full backup is stored and every change it may hold was
/// received here.
async fn switch_if_ready<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
) -> Option<ChainEnd> {
    let ready = matches!(&follow.next_full, Some((_, after)) if follow.received >= *after);
    if !ready {
        return None;
    }
    if let Err(end) = cut(runner, chain, follow, stop).await {
        return Some(end);
    }
    follow
        .next_full
        .take()
        .map(|(full, _)| ChainEnd::FullDue(Box::new(full)))
}

async fn watch_once<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    client: &EndpointClient,
    stop: &mut Stop<'_, F>,
) -> WatchEnd {
    let request = runner.request;
    match runner.header(client).await {
        Ok(header) => {
            if let Some(reason) = rewound(header.revision, follow.received) {
                return WatchEnd::Chain(ended(runner, chain, follow, stop, reason).await);
            }
            follow.source.member_id = header.member;
        }
        Err(e) => return WatchEnd::Reconnect(e),
    }
    follow.source.endpoint = client.endpoint().to_string();
    let options = WatchOptions::new()
        .with_range(vec![0u8])
        .with_start_revision(follow.received + 1);
    let opened = client
        .call("watch", |c| async move {
            c.watch_client()
                .max_decoding_message_size(1 << 30)
                .watch(vec![0u8], Some(options))
                .await
        })
        .await;
    let mut stream = match opened {
        Ok(stream) => stream,
        Err(e) => return WatchEnd::Reconnect(e.to_string()),
    };
    let mut tick = tokio::time::interval(request.check_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if stop.is_terminated() {
            return WatchEnd::Chain(finish(runner, chain, follow, stop).await);
        }
        tokio::select! {
            () = &mut *stop => {
                return WatchEnd::Chain(finish(runner, chain, follow, stop).await);
            }
            _ = tick.tick() => {
                match runner.header(client).await {
                    Ok(StoreHeader { revision, .. }) => {
                        if let Some(reason) = rewound(revision, follow.received) {
                            return WatchEnd::Chain(ended(runner, chain, follow, stop, reason).await);
                        }
                        runner.state.lag_revisions = (revision - follow.received).max(0);
                        if follow.received >= revision {
                            // Caught up: the store was at `revision` now, and every change up
                            // to it was received.
                            let mark = DeltaRecord::Mark { revision: follow.received, unix_ms: now_ms() };
                            if let Err(e) = follow.segment.push(&mark) {
                                return WatchEnd::Chain(ChainEnd::Gap(e.to_string()));
                            }
                        }
                    }
                    Err(e) => return WatchEnd::Reconnect(e),
                }
                if follow.next_full.is_none() && Instant::now() >= follow.full_due {
                    // The next full backup, taken while this chain goes on.
                    match runner.save_full(stop).await {
                        Ok(full) => {
                            runner.lock_chains(Some(&full.manifest.object), Some(&chain.base)).await;
                            match runner.header(client).await {
                                Ok(header) => follow.next_full = Some((full, header.revision)),
                                Err(e) => {
                                    follow.next_full = Some((full.clone(), full.manifest.revision));
                                    return WatchEnd::Reconnect(e);
                                }
                            }
                        }
                        Err(SnapshotError::RunLocked { reason }) => {
                            return WatchEnd::Chain(ChainEnd::TakenOver(reason));
                        }
                        Err(_) => {
                            follow.full_due = Instant::now() + request.full_every.min(Duration::from_secs(60));
                        }
                    }
                }
                if let Some(end) = switch_if_ready(runner, chain, follow, stop).await {
                    return WatchEnd::Chain(end);
                }
                if Instant::now() >= follow.segment_due {
                    if let Err(end) = cut(runner, chain, follow, stop).await {
                        return WatchEnd::Chain(end);
                    }
                } else {
                    runner.write_metrics();
                }
            }
            message = stream.message() => {
                let response = match message {
                    Ok(Some(response)) => response,
                    Ok(None) => return WatchEnd::Reconnect("the member closed the watch".into()),
                    Err(e) => return WatchEnd::Reconnect(one_line(&e)),
                };
                let cluster = MemberId(response.header().map(|h| h.cluster_id()).unwrap_or_default());
                if let Err(e) = runner.check_cluster(client.endpoint(), cluster) {
                    return WatchEnd::Reconnect(e);
                }
                follow.backoff = Duration::from_millis(200);
                if response.canceled() {
                    if response.compact_revision() > 0 {
                        let reason = format!(
                            "the watch fell behind a compaction: history starts at revision {} but revision {} was next",
                            response.compact_revision(),
                            follow.received + 1
                        );
                        return WatchEnd::Chain(ended(runner, chain, follow, stop, reason).await);
                    }
                    return WatchEnd::Reconnect(format!("etcd cancelled the watch: {}", response.cancel_reason()));
                }
                if let Err(end) = record_events(runner, chain, follow, client, response.events(), stop).await {
                    return WatchEnd::Chain(end);
                }
                if let Some(end) = switch_if_ready(runner, chain, follow, stop).await {
                    return WatchEnd::Chain(end);
                }
            }
        }
    }
}

/// Adds the events of one watch response to the segment, as etcd stores them; a segment that
/// reached its size is cut between two revisions (a response holds whole revisions).
async fn record_events<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    client: &EndpointClient,
    events: &[etcd_client::Event],
    stop: &mut Stop<'_, F>,
) -> std::result::Result<(), ChainEnd> {
    let gap = |e: SnapshotError| ChainEnd::Gap(e.to_string());
    let floor = follow.received;
    for event in events {
        let Some(kv) = event.kv() else { continue };
        let main = kv.mod_revision();
        if main <= floor {
            continue;
        }
        if main != follow.last_main && follow.segment.raw_bytes() >= runner.request.segment_bytes {
            let mark = DeltaRecord::Mark {
                revision: follow.received,
                unix_ms: now_ms(),
            };
            follow.segment.push(&mark).map_err(gap)?;
            cut(runner, chain, follow, stop).await?;
        }
        let sub = if main == follow.last_main {
            follow.next_sub
        } else {
            0
        };
        follow.last_main = main;
        follow.next_sub = sub + 1;
        let (key, value) = match event.event_type() {
            EventType::Put => {
                let lease = kv.lease();
                if lease != 0 && !follow.leases.contains(&lease) {
                    // Asked once per chain; a failed lookup is asked again at its next use.
                    // An answer of another cluster is not used (asked again too).
                    if let Ok((ttl, cluster)) = granted_ttl(client, lease).await
                        && runner.check_cluster(client.endpoint(), cluster).is_ok()
                    {
                        follow.leases.insert(lease);
                        if let Some(ttl) = ttl {
                            follow
                                .segment
                                .push(&DeltaRecord::Lease { id: lease, ttl })
                                .map_err(gap)?;
                        }
                    }
                }
                let fields = KeyValueFields {
                    key: kv.key(),
                    create_revision: kv.create_revision(),
                    mod_revision: main,
                    version: kv.version(),
                    value: kv.value(),
                    lease,
                };
                (revision_key(main, sub, false), fields.encode())
            }
            EventType::Delete => {
                let fields = KeyValueFields {
                    key: kv.key(),
                    ..Default::default()
                };
                (revision_key(main, sub, true), fields.encode())
            }
        };
        if key.len() + value.len() > MAX_RECORD_BYTES {
            return Err(ChainEnd::Gap(format!(
                "a change of {} bytes at revision {main} is larger than a segment record may be",
                value.len()
            )));
        }
        follow
            .segment
            .push(&DeltaRecord::Change { key, value })
            .map_err(gap)?;
        follow.received = follow.received.max(main);
    }
    if follow.received > floor {
        follow
            .segment
            .push(&DeltaRecord::Mark {
                revision: follow.received,
                unix_ms: now_ms(),
            })
            .map_err(gap)?;
    }
    Ok(())
}
