//! `backup run`: a full backup on schedule and, between fulls, every change streamed from a
//! watch into delta segments that continue it. A chain never has a silent hole: when the watch
//! falls behind a compaction the chain ends where its last change was received and a new full
//! backup starts a new chain (a gap, reported); a lost member is replaced by another, the
//! watch resuming at the first revision not yet received.
//!
//! What to do at each step is decided by the pure state machines of `chain.rs`; this file
//! does the I/O (watch, store, clock) they are fed from and carries out what they decide.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use etcd_client::{EventType, WatchOptions};
use etcd_core::{ClusterConfig, EndpointClient, MemberId};
use etcd_store::Store;
use futures::FutureExt;
use futures::future::FusedFuture;
use tokio::time::Instant;

use super::chain::{
    AfterChain, AfterCheck, Attempts, Cadence, ChainEnd, ChainMachine, Change, Checked, Continue,
    LAST_SEGMENT_ATTEMPTS, Next, Response, Resumed, RunMachine, ended_early, record_fits, stopped,
};
use super::compact_after::{CompactAfter, Compactions};
use super::copy_to::{CopyTarget, CopyTo};
pub use super::events::{FailureReason, RunEvent, RunObserver, RunState};
use super::format::{DeltaRecord, KeyValueFields, revision_key};
use super::history::{cluster_id, one_line};
use super::lease_looks::{LeaseLooks, LeaseTtls, granted_ttl};
use super::lock::{LockKeeper, lock_ttl};
use super::metrics::RunMetrics;
use super::metrics_server::MetricsServer;
use super::resume::resumable_chain;
use super::runner::{Guard, Runner, Stop, StoreHeader, pause};
use super::segment::{ChainPosition, SegmentBuilder, SegmentSource};
use super::watch_lag::WatchLag;
use crate::catalog::DEFAULT_ORPHAN_GRACE;
use crate::error::{Result, SnapshotError};
use crate::opts;
use crate::retention::RetentionPolicy;
use crate::save::{SaveRequest, SaveResult};
use etcd_common::{InvalidOption, OptionId};

#[path = "run_leases.rs"]
mod leases;
use leases::{cut_if_full, look_at_leases, mark, write_leases};

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
    /// Serve `/metrics`, `/healthz` and `/readyz` on this address while the run lasts.
    pub metrics_addr: Option<SocketAddr>,
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
    /// Compact the chain into a new full backup every this many segments, in the
    /// background (`--compact-after`); none: never.
    pub compact_after: Option<CompactAfter>,
    /// `--copy-to`: copy every full backup and segment, once published, to this second
    /// store (in the background: it never delays the first), pruned by its own rules.
    pub copy_to: Option<CopyTarget>,
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            full_every: Duration::from_secs(6 * 3600),
            delta_every: Duration::from_secs(60),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            save: SaveRequest::default(),
            metrics_file: None,
            metrics_addr: None,
            check_every: Duration::from_secs(1),
            retention: RetentionPolicy::default(),
            orphan_grace: DEFAULT_ORPHAN_GRACE,
            stop_grace: DEFAULT_STOP_GRACE,
            all_clusters: false,
            compact_after: None,
            copy_to: None,
        }
    }
}

/// How one watch connection ended.
enum WatchEnd {
    Chain(ChainEnd<SaveResult>),
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
    if let Some(target) = &request.copy_to {
        target.check(store)?;
    }
    let metrics = Arc::new(RunMetrics::new(request.full_every, request.delta_every));
    let _server = match request.metrics_addr {
        Some(addr) => Some(MetricsServer::start(addr, metrics.clone()).await?),
        None => None,
    };
    let mut stop = pin!(stop.fuse());
    let mut runner = Runner {
        config,
        store,
        request,
        observer,
        state: RunState::default(),
        metrics,
        lock: None,
        taken_over: None,
        cluster: MemberId(0),
        full_size: None,
        lease_ttls: LeaseTtls::default(),
        compactions: request
            .compact_after
            .as_ref()
            .map(|settings| Compactions::new(settings, store)),
        copy_to: None,
    };
    let result = run_locked(&mut runner, &mut stop).await;
    runner.finish_copies().await;
    if let Some(lock) = runner.lock.take() {
        lock.release().await;
        // The textfile outlives the run: it says the lock is released (and the run not
        // ready), not what it was at the last event.
        runner.state.lock_held = false;
        runner.write_metrics();
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
    if let Some(target) = &request.copy_to {
        runner.copy_to = Some(CopyTo::start(runner.store, target, cluster));
    }
    let mut machine = RunMachine::<SaveResult>::default();
    // The chain an earlier run left is continued, whatever its full backup's age.
    loop {
        let found = resumable_chain(runner.store, cluster, request.full_every, revision)
            .await
            .map_err(|e| e.to_string());
        let (resumed, event) = machine.on_resume(&mut runner.state, found);
        if let Some(event) = event {
            runner.emit(event);
        }
        match resumed {
            Resumed::Decided => break,
            Resumed::Retry(delay) => {
                if pause(stop, delay).await {
                    return Ok(());
                }
            }
        }
    }
    loop {
        if let Some(reason) = runner.taken_over.take() {
            return Err(SnapshotError::RunLocked { reason });
        }
        let Continue {
            mut chain,
            endpoint,
            full_due,
        } = match machine.next(stop.is_terminated()) {
            Next::Stop => return Ok(()),
            Next::Continue(resumed) => {
                runner.lock_chains(Some(&resumed.chain.base), None).await;
                // What the second store lacks of it (a run stopped before copying it all).
                runner.copy_chain(&resumed.chain.base);
                resumed
            }
            Next::TakeFull => {
                match runner.save_full(stop, None).await {
                    Ok(full) => machine.on_full_saved(full),
                    Err(SnapshotError::RunLocked { reason }) => {
                        return Err(SnapshotError::RunLocked { reason });
                    }
                    Err(_) => {
                        if pause(stop, machine.on_full_failed()).await {
                            return Ok(());
                        }
                    }
                }
                continue;
            }
            Next::Start(full) => {
                // The previous chain stays protected while a compaction still reads it.
                let compacting = runner
                    .compactions
                    .as_ref()
                    .and_then(Compactions::running_chain)
                    .map(str::to_string);
                runner
                    .lock_chains(Some(&full.manifest.object), compacting.as_deref())
                    .await;
                runner.prune().await;
                Continue {
                    chain: ChainPosition::after_full(&full.manifest),
                    endpoint: full.manifest.endpoint.clone(),
                    full_due: Instant::now() + request.full_every,
                }
            }
        };
        let end = follow_chain(runner, &mut chain, &endpoint, full_due, stop).await;
        let (after, event) =
            machine.on_chain_end(&mut runner.state, &chain, end, stop.is_terminated());
        if let Some(event) = event {
            runner.emit(event);
        }
        match after {
            AfterChain::Next => {}
            AfterChain::Stop => return Ok(()),
            AfterChain::TakenOver(reason) => return Err(SnapshotError::RunLocked { reason }),
        }
    }
}

fn validate(request: &RunRequest) -> Result<()> {
    let invalid = |option: OptionId, reason: &str| {
        Err(SnapshotError::from(InvalidOption::new(option, reason)))
    };
    if request.delta_every.is_zero() {
        return invalid(opts::DELTA_EVERY, "must be more than 0");
    }
    if request.full_every < request.delta_every {
        return invalid(
            opts::FULL_EVERY,
            "must be at least the time between segments (delta_every)",
        );
    }
    if !(4096..=MAX_CUT_BYTES).contains(&request.segment_bytes) {
        return invalid(
            opts::SEGMENT_BYTES,
            "must be from 4096 to 67108864 (64 MiB)",
        );
    }
    if request.check_every.is_zero() {
        return invalid(opts::CHECK_EVERY, "must be more than 0");
    }
    if let Some(compact) = &request.compact_after {
        compact.validate(&request.save.encrypt_to.public_keys())?;
    }
    Ok(())
}

/// The largest `segment_bytes`: a segment is cut at the first revision boundary past it, so it
/// stays well under what readers accept.
const MAX_CUT_BYTES: u64 = 64 << 20;

/// One chain being followed: its decisions, the segment being filled and where its
/// changes come from.
struct Follow {
    machine: ChainMachine<SaveResult>,
    segment: SegmentBuilder,
    source: SegmentSource,
    leases: LeaseLooks,
    /// How long the watch has been behind the store, in time.
    watch_lag: WatchLag,
}

type Ended = std::result::Result<(), ChainEnd<SaveResult>>;

fn gap(e: SnapshotError) -> ChainEnd<SaveResult> {
    ChainEnd::Gap(e.to_string())
}

async fn follow_chain<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    endpoint: &str,
    full_due: Instant,
    stop: &mut Stop<'_, F>,
) -> ChainEnd<SaveResult> {
    let request = runner.request;
    let segment = match SegmentBuilder::new(chain.covered_revision, Utc::now()) {
        Ok(s) => s,
        Err(e) => return gap(e),
    };
    let cadence = Cadence {
        full_every: request.full_every,
        delta_every: request.delta_every,
        segment_bytes: request.segment_bytes,
    };
    let mut follow = Follow {
        machine: ChainMachine::new(
            cadence,
            chain.covered_revision,
            endpoint,
            full_due,
            Instant::now(),
        ),
        segment,
        source: SegmentSource {
            member_id: MemberId(0),
            endpoint: endpoint.to_string(),
        },
        leases: LeaseLooks::new(chain.covered_revision),
        watch_lag: WatchLag::default(),
    };
    loop {
        // A fused stop that already fired (while a full backup was finished) never fires
        // again: check it first.
        if stop.is_terminated() {
            return finish(runner, chain, &mut follow, stop).await;
        }
        if follow.machine.segment_due(Instant::now())
            && let Err(end) = cut(runner, chain, &mut follow, stop).await
        {
            return end;
        }
        let (preferred, avoid) = follow.machine.members();
        let (preferred, avoid) = (preferred.map(str::to_string), avoid.map(str::to_string));
        let client = tokio::select! {
            () = &mut *stop => return finish(runner, chain, &mut follow, stop).await,
            client = runner.connect(preferred.as_deref(), avoid.as_deref()) => client,
        };
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                // A member of another cluster was reported by `connect` and is never used.
                runner.emit(RunEvent::Failed {
                    reason: FailureReason::Watch,
                    error: format!("watch: no member answers: {e}"),
                });
                let wait = follow.machine.on_connect_failed();
                tokio::select! {
                    () = &mut *stop => return finish(runner, chain, &mut follow, stop).await,
                    () = tokio::time::sleep(wait) => {}
                }
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
                    reason: FailureReason::Watch,
                    error: format!("watch on {}: {reason}", client.endpoint()),
                });
                let wait = follow.machine.on_watch_lost(client.endpoint());
                tokio::select! {
                    () = &mut *stop => return finish(runner, chain, &mut follow, stop).await,
                    () = tokio::time::sleep(wait) => {}
                }
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
) -> ChainEnd<SaveResult> {
    ended_early(cut(runner, chain, follow, stop).await, reason)
}

/// Publishes the segment being filled (a few attempts) and ends the chain as stopped.
async fn finish<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
) -> ChainEnd<SaveResult> {
    let published = publish(runner, chain, follow, stop, LAST_SEGMENT_ATTEMPTS).await;
    let (end, failure) = stopped(published);
    if let Some(event) = failure {
        runner.emit(event);
    }
    end
}

/// Publishes the segment being filled, trying again with growing waits while the store
/// fails (the watch is not read meanwhile), and opens the next one. Stopping while it waits
/// gives up on it: its changes were never listed.
async fn cut<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
) -> Ended {
    publish(runner, chain, follow, stop, u32::MAX).await?;
    follow.segment = SegmentBuilder::new(chain.covered_revision, Utc::now()).map_err(gap)?;
    follow.machine.on_segment_opened(Instant::now());
    Ok(())
}

async fn publish<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
    attempts: u32,
) -> Ended {
    let mut attempts = Attempts::new(attempts);
    loop {
        let changes = follow.segment.changes();
        let started = std::time::Instant::now();
        let published = match runner.guard(Some(&chain.base)).await {
            Guard::Go => follow
                .segment
                .publish(
                    runner.store,
                    chain,
                    &follow.source,
                    &runner.request.save.encrypt_to,
                    runner.request.save.object_lock.as_ref(),
                )
                .await
                .map_err(|e| e.to_string()),
            Guard::Lost => return Err(ChainEnd::Lost),
            Guard::TakenOver(reason) => return Err(ChainEnd::TakenOver(reason)),
            Guard::Retry(reason) => Err(reason),
        };
        let e = match published {
            Ok(manifest) => {
                runner.state.last_delta_at = Some(manifest.completed_at);
                runner.state.last_delta_revision = manifest.to_revision;
                runner.state.segments += 1;
                runner.state.changes += changes;
                runner.state.delta_bytes_stored += manifest.object_size;
                runner
                    .metrics
                    .observe_segment_publish(started.elapsed().as_secs_f64());
                runner.copy_chain(&chain.base);
                runner.emit(RunEvent::SegmentPublished {
                    object: manifest.object,
                    sequence: manifest.sequence,
                    after_revision: manifest.after_revision,
                    to_revision: manifest.to_revision,
                    changes,
                });
                let compacted = runner
                    .compactions
                    .as_mut()
                    .and_then(|c| c.after_segment(&chain.base, manifest.sequence));
                if let Some(event) = compacted {
                    runner.emit(event);
                }
                return Ok(());
            }
            Err(e) => e,
        };
        let Some(delay) = attempts.failed() else {
            return Err(ChainEnd::Gap(e));
        };
        runner.emit(RunEvent::Failed {
            reason: FailureReason::Segment,
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
    }
}

/// Cuts the segment and ends the chain when the next full backup is stored and every change
/// it may hold was received here.
async fn switch_if_ready<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
) -> Option<ChainEnd<SaveResult>> {
    if !follow.machine.ready_to_switch() {
        return None;
    }
    switch(runner, chain, follow, stop).await
}

async fn switch<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
) -> Option<ChainEnd<SaveResult>> {
    if let Err(end) = cut(runner, chain, follow, stop).await {
        return Some(end);
    }
    follow
        .machine
        .take_next_full()
        .map(|full| ChainEnd::FullDue(Box::new(full)))
}

/// A check of the store's revision (each `check_every`): lag and time marks, the next full
/// backup when due (taken while the chain goes on), the switch to it, the segment cut when
/// due. `Some` when the watch or the chain ends.
async fn check<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    client: &EndpointClient,
    stop: &mut Stop<'_, F>,
) -> Option<WatchEnd> {
    let revision = match runner.header(client).await {
        Ok(StoreHeader { revision, .. }) => revision,
        Err(e) => return Some(WatchEnd::Reconnect(e)),
    };
    match follow.machine.on_check(revision) {
        Checked::Rewound(reason) => {
            return Some(WatchEnd::Chain(
                ended(runner, chain, follow, stop, reason).await,
            ));
        }
        Checked::Fine {
            lag,
            mark: caught_up,
        } => {
            runner.state.lag_revisions = lag;
            runner.state.cluster_revision = revision;
            let in_time =
                follow
                    .watch_lag
                    .on_check(std::time::Instant::now(), revision, revision - lag);
            runner.state.watch_behind_seconds = in_time.behind.as_secs_f64();
            if let Some(revisions) = in_time.warn {
                runner.emit(RunEvent::WatchBehind {
                    revisions,
                    seconds: in_time.behind.as_secs(),
                });
            }
            if let Some(revision) = caught_up
                && let Err(end) = mark(runner, follow, revision)
            {
                return Some(WatchEnd::Chain(end));
            }
            if let Err(end) = look_at_leases(runner, follow, client).await {
                return Some(WatchEnd::Chain(end));
            }
            if let Err(end) = cut_if_full(runner, chain, follow, stop).await {
                return Some(WatchEnd::Chain(end));
            }
        }
    }
    if follow.machine.full_needed(Instant::now()) {
        // The next full backup, taken while this chain goes on.
        let follows = crate::manifest::Follows {
            full_backup: chain.base.clone(),
            covered_revision: chain.covered_revision,
            highest_time: chain.highest_time,
        };
        match runner.save_full(stop, Some(follows)).await {
            Ok(full) => {
                runner
                    .lock_chains(Some(&full.manifest.object), Some(&chain.base))
                    .await;
                match runner.header(client).await {
                    Ok(header) => follow.machine.on_full_saved(full, header.revision),
                    Err(e) => {
                        let revision = full.manifest.revision;
                        follow.machine.on_full_saved(full, revision);
                        return Some(WatchEnd::Reconnect(e));
                    }
                }
            }
            Err(SnapshotError::RunLocked { reason }) => {
                return Some(WatchEnd::Chain(ChainEnd::TakenOver(reason)));
            }
            Err(_) => follow.machine.on_full_failed(Instant::now()),
        }
    }
    runner.report_copies();
    match follow.machine.after_check(Instant::now()) {
        AfterCheck::Switch => switch(runner, chain, follow, stop)
            .await
            .map(WatchEnd::Chain),
        AfterCheck::Cut => cut(runner, chain, follow, stop)
            .await
            .err()
            .map(WatchEnd::Chain),
        AfterCheck::Idle => {
            runner.write_metrics();
            None
        }
    }
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
            if let Err(reason) = follow.machine.on_connected(header.revision) {
                return WatchEnd::Chain(ended(runner, chain, follow, stop, reason).await);
            }
            follow.source.member_id = header.member;
        }
        Err(e) => return WatchEnd::Reconnect(e),
    }
    follow.source.endpoint = client.endpoint().to_string();
    let options = WatchOptions::new()
        .with_range(vec![0u8])
        .with_start_revision(follow.machine.watch_from());
    // Opened with a valid token (a stale one is renewed, not reported as a failure).
    let opened = client.open_watch(&[0u8], &options, 1 << 30).await;
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
                if let Some(end) = check(runner, chain, follow, client, stop).await {
                    return end;
                }
            }
            // Due between two checks: published now, not up to --check-every later (a
            // segment every --delta-every, as /readyz expects, also when both are 1 s).
            () = tokio::time::sleep_until(follow.machine.segment_due_at()) => {
                if let Err(end) = cut(runner, chain, follow, stop).await {
                    return WatchEnd::Chain(end);
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
                let what = follow.machine.on_response(
                    response.canceled(),
                    response.compact_revision(),
                    response.cancel_reason(),
                );
                match what {
                    Response::Record => {}
                    Response::Reconnect(reason) => return WatchEnd::Reconnect(reason),
                    Response::Gap(reason) => {
                        return WatchEnd::Chain(ended(runner, chain, follow, stop, reason).await);
                    }
                }
                if let Err(end) = record_events(runner, chain, follow, client, response.events(), stop).await {
                    return WatchEnd::Chain(end);
                }
                if let Err(end) = cut_if_full(runner, chain, follow, stop).await {
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
/// reached its size is cut between two revisions.
async fn record_events<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    client: &EndpointClient,
    events: &[etcd_client::Event],
    stop: &mut Stop<'_, F>,
) -> Ended {
    for event in events {
        let Some(kv) = event.kv() else { continue };
        let main = kv.mod_revision();
        let sub = match follow.machine.on_change(main, follow.segment.raw_bytes()) {
            Change::Skip => continue,
            Change::Record { sub, cut_at } => {
                if let Some(revision) = cut_at {
                    mark(runner, follow, revision)?;
                    cut(runner, chain, follow, stop).await?;
                }
                sub
            }
        };
        // Every change before this one is recorded: a lease set waiting for it goes first.
        let waiting = follow.leases.on_recorded(main - 1);
        write_leases(runner, follow, waiting)?;
        let (key, value) = match event.event_type() {
            EventType::Put => {
                let lease = kv.lease();
                if follow.machine.lease_unknown(lease) {
                    // Asked once per chain; a failed lookup is asked again at its next use.
                    // An answer of another cluster is not used (asked again too).
                    if let Ok((ttl, cluster)) = granted_ttl(client, lease).await
                        && runner.check_cluster(client.endpoint(), cluster).is_ok()
                    {
                        follow.machine.on_lease_known(lease);
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
        record_fits(key.len(), value.len(), main).map_err(ChainEnd::Gap)?;
        follow
            .segment
            .push(&DeltaRecord::Change { key, value })
            .map_err(gap)?;
        follow.machine.on_recorded(main);
    }
    if let Some(revision) = follow.machine.end_of_response() {
        mark(runner, follow, revision)?;
    }
    Ok(())
}
