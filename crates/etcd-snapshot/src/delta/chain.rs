//! The decisions of `backup run`, as two pure state machines: [`RunMachine`] between chains
//! (continue an earlier run's chain, start one from a full backup, take a full backup, stop)
//! and [`ChainMachine`] while one chain is followed (what a watch response, a check of the
//! store's revision or a tick means: record, cut a segment, take the next full backup, switch
//! to it, reconnect, end the chain). They do no I/O and read no clock: the runner (run.rs)
//! feeds them what happened, with the time it happened, and carries out what they answer.
//! Their type parameter `F` is the full backup as the runner holds it (a `SaveResult`), kept
//! and handed back, never looked into.

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

use super::events::{FailureReason, RunEvent, RunState};
use super::history::rewound;
use super::resume::Resume;
use super::segment::{ChainPosition, MAX_RECORD_BYTES};

/// Longest wait between two attempts of a failing step.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The first wait before a watch is opened again (reset by every response received).
pub(super) const FIRST_WATCH_BACKOFF: Duration = Duration::from_millis(200);

/// The first wait before a failed full backup is tried again.
const FIRST_SAVE_BACKOFF: Duration = Duration::from_secs(2);

/// The first wait before the store is read again for a chain to continue.
const FIRST_RESUME_BACKOFF: Duration = Duration::from_secs(1);

/// A full backup that failed while a chain goes on is tried again after at most this long.
const FULL_RETRY: Duration = Duration::from_secs(60);

/// The wait after `delay`: twice as long, at most [`MAX_BACKOFF`].
pub(super) fn backoff_after(delay: Duration) -> Duration {
    (delay * 2).min(MAX_BACKOFF)
}

/// How a chain ended.
pub(super) enum ChainEnd<F> {
    /// The next full backup is stored and the chain reached past what it holds: continue
    /// from it.
    FullDue(Box<F>),
    /// Asked to stop; the last segment was published (or could not be).
    Stopped,
    /// The watch cannot continue the chain.
    Gap(String),
    /// The chain's full backup is gone from the store: a new one at once.
    Lost,
    /// Another run took the writer lock over: stop with an error.
    TakenOver(String),
}

/// A chain an earlier run left, to continue.
pub(super) struct Continue {
    /// Where it stands.
    pub(super) chain: ChainPosition,
    /// The member its full backup came from (watched first).
    pub(super) endpoint: String,
    /// When the next full backup is due.
    pub(super) full_due: Instant,
}

/// What the run does next, between two chains.
pub(super) enum Next<F> {
    /// Continue the chain an earlier run left (record it in the lock, then follow it).
    Continue(Continue),
    /// Start a new chain from this full backup (record it in the lock, prune, follow it).
    Start(F),
    /// No full backup is at hand: take one.
    TakeFull,
    /// Stopped: nothing more to do.
    Stop,
}

/// What the run does once a chain ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum AfterChain {
    /// Go on: ask [`RunMachine::next`].
    Next,
    /// Stop: the run ends without error.
    Stop,
    /// Stop with an error: another run took the writer lock over.
    TakenOver(String),
}

/// What the store held for the run to continue, as [`RunMachine::on_resume`] judged it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Resumed {
    /// Decided (a chain to continue, or a new full backup first).
    Decided,
    /// The store could not be read: try again after this long.
    Retry(Duration),
}

/// The run between chains: the chain to continue at start, the next full backup once taken,
/// and the wait after a failure.
pub(super) struct RunMachine<F> {
    resume: Option<Continue>,
    next: Option<F>,
    resume_delay: Duration,
    save_delay: Duration,
}

impl<F> Default for RunMachine<F> {
    fn default() -> Self {
        RunMachine {
            resume: None,
            next: None,
            resume_delay: FIRST_RESUME_BACKOFF,
            save_delay: FIRST_SAVE_BACKOFF,
        }
    }
}

impl<F> RunMachine<F> {
    /// At start, what the store holds of this cluster (`Err`: it could not be read). An
    /// unbroken chain is continued whatever its full backup's age; a broken one is a gap
    /// (a new full backup starts a new chain). Returns what to report too.
    pub(super) fn on_resume(
        &mut self,
        state: &mut RunState,
        found: std::result::Result<Resume, String>,
    ) -> (Resumed, Option<RunEvent>) {
        match found {
            Ok(Resume::Chain {
                chain,
                endpoint,
                full_due,
                full_at,
            }) => {
                state.last_full_at = Some(full_at);
                state.last_full_revision = chain.base_revision;
                state.last_delta_revision = chain.covered_revision;
                let event = RunEvent::Resumed {
                    base: chain.base.clone(),
                    covered_revision: chain.covered_revision,
                };
                self.resume = Some(Continue {
                    chain,
                    endpoint,
                    full_due,
                });
                (Resumed::Decided, Some(event))
            }
            Ok(Resume::Broken {
                base,
                covered_revision,
                reason,
            }) => {
                state.gaps += 1;
                let event = RunEvent::Gap {
                    base,
                    covered_revision,
                    reason,
                };
                (Resumed::Decided, Some(event))
            }
            Ok(Resume::Nothing) => (Resumed::Decided, None),
            Err(error) => {
                let delay = self.resume_delay;
                self.resume_delay = backoff_after(delay);
                let event = RunEvent::Failed {
                    reason: FailureReason::Store,
                    error: format!("reading the store for a chain to continue: {error}"),
                };
                (Resumed::Retry(delay), Some(event))
            }
        }
    }

    /// What to do next, `stopped` once asked to stop: the chain to continue, else the full
    /// backup already taken, else a new full backup (none once stopped).
    pub(super) fn next(&mut self, stopped: bool) -> Next<F> {
        if let Some(resumed) = self.resume.take() {
            return Next::Continue(resumed);
        }
        if let Some(full) = self.next.take() {
            self.save_delay = FIRST_SAVE_BACKOFF;
            return Next::Start(full);
        }
        if stopped { Next::Stop } else { Next::TakeFull }
    }

    /// The full backup asked for by [`Next::TakeFull`] is stored.
    pub(super) fn on_full_saved(&mut self, full: F) {
        self.next = Some(full);
    }

    /// The full backup asked for by [`Next::TakeFull`] failed (reported already): the wait
    /// before the next attempt, growing with each failure in a row.
    pub(super) fn on_full_failed(&mut self) -> Duration {
        let delay = self.save_delay;
        self.save_delay = backoff_after(delay);
        delay
    }

    /// The chain at `chain` ended as `end` (`stopped`: the run was asked to stop): what the
    /// run counts and reports, and what it does next. Its watch ended with it: it holds back
    /// nothing any more (the watch-behind gauge does not keep its last value through the
    /// full backup that follows, or in the textfile of a stopped run).
    pub(super) fn on_chain_end(
        &mut self,
        state: &mut RunState,
        chain: &ChainPosition,
        end: ChainEnd<F>,
        stopped: bool,
    ) -> (AfterChain, Option<RunEvent>) {
        state.watch_behind_seconds = 0.0;
        match end {
            ChainEnd::FullDue(full) => {
                self.next = Some(*full);
                (AfterChain::Next, None)
            }
            ChainEnd::Stopped => (AfterChain::Stop, None),
            ChainEnd::TakenOver(reason) => (AfterChain::TakenOver(reason), None),
            ChainEnd::Gap(reason) => {
                state.gaps += 1;
                let event = RunEvent::Gap {
                    base: chain.base.clone(),
                    covered_revision: chain.covered_revision,
                    reason,
                };
                (AfterChain::Next, Some(event))
            }
            ChainEnd::Lost => {
                // Nothing restores this chain any more: a gap, and the metrics say there is
                // no full backup until the next one is stored.
                state.gaps += 1;
                state.fulls_lost += 1;
                state.last_full_at = None;
                state.last_full_revision = 0;
                let event = RunEvent::FullBackupLost {
                    base: chain.base.clone(),
                    covered_revision: chain.covered_revision,
                };
                let after = if stopped {
                    AfterChain::Stop
                } else {
                    AfterChain::Next
                };
                (after, Some(event))
            }
        }
    }
}

/// The settings of `backup run` the chain's decisions depend on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cadence {
    /// Time between full backups.
    pub(super) full_every: Duration,
    /// Longest a change waits before it is published in a segment.
    pub(super) delta_every: Duration,
    /// A segment is cut once it holds this many (uncompressed) bytes.
    pub(super) segment_bytes: u64,
}

/// What a check of the store's revision means for the chain.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Checked {
    /// The cluster is below what the chain received: end it (a gap, this reason).
    Rewound(String),
    /// Go on: the watch is `lag` revisions behind; with `mark`, every change up to that
    /// revision was received (caught up): record it as a time mark.
    Fine { lag: i64, mark: Option<i64> },
}

/// What to do after a check once the next full backup was dealt with.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum AfterCheck {
    /// The next full backup is stored and every change it may hold was received: cut the
    /// segment and end the chain ([`ChainMachine::take_next_full`]).
    Switch,
    /// The segment is due: cut it.
    Cut,
    /// Nothing due (the metrics file is refreshed).
    Idle,
}

/// What a watch response (before its events) means for the chain.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Response {
    /// Record its events.
    Record,
    /// The watch ended but the chain can go on: reconnect (this reason).
    Reconnect(String),
    /// The watch fell behind a compaction: end the chain (a gap, this reason).
    Gap(String),
}

/// What to do with one change of a watch response.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// Already received: skip it.
    Skip,
    /// Record it as sub revision `sub` of its revision; with `cut_at`, the segment is full:
    /// first record a time mark at that revision and cut the segment.
    Record { sub: i64, cut_at: Option<i64> },
}

/// One chain being followed: what was received, when the segment and the next full backup
/// are due, the next full backup once stored, and how to reconnect.
pub(super) struct ChainMachine<F> {
    cadence: Cadence,
    segment_due: Instant,
    /// Every change up to here was received.
    received: i64,
    /// `received` when the watch response being recorded arrived.
    floor: i64,
    /// Sub revision numbering inside the revision last received.
    last_main: i64,
    next_sub: i64,
    /// Leases whose TTL is recorded in this chain, or known to be gone.
    leases: HashSet<i64>,
    /// When the next full backup is due.
    full_due: Instant,
    /// The next full backup, once stored, with the store revision read after it: the chain
    /// ends once it has received every change up to that revision.
    next_full: Option<(F, i64)>,
    /// Wait before the next reconnection.
    backoff: Duration,
    /// The member to try first (the full backup's, at start).
    preferred: Option<String>,
    /// The member whose watch failed last (tried last).
    avoid: Option<String>,
}

impl<F> ChainMachine<F> {
    /// A chain continuing from `covered` (every change up to it is published), its first
    /// segment opened at `now`, the next full backup due at `full_due`, `endpoint` watched
    /// first.
    pub(super) fn new(
        cadence: Cadence,
        covered: i64,
        endpoint: &str,
        full_due: Instant,
        now: Instant,
    ) -> Self {
        ChainMachine {
            cadence,
            segment_due: now + cadence.delta_every,
            received: covered,
            floor: covered,
            last_main: 0,
            next_sub: 0,
            leases: HashSet::new(),
            full_due,
            next_full: None,
            backoff: FIRST_WATCH_BACKOFF,
            preferred: Some(endpoint.to_string()),
            avoid: None,
        }
    }

    /// Every change up to this revision was received.
    #[cfg(test)]
    pub(super) fn received(&self) -> i64 {
        self.received
    }

    /// The revision the watch starts at: the first one not received.
    pub(super) fn watch_from(&self) -> i64 {
        self.received + 1
    }

    /// The member to try first and the one to try last.
    pub(super) fn members(&self) -> (Option<&str>, Option<&str>) {
        (self.preferred.as_deref(), self.avoid.as_deref())
    }

    /// Whether the segment being filled is due at `now` (what was received is published on
    /// time even while no member can be watched).
    pub(super) fn segment_due(&self, now: Instant) -> bool {
        now >= self.segment_due
    }

    /// When the segment being filled is due (cut then, not at the next check after it).
    pub(super) fn segment_due_at(&self) -> Instant {
        self.segment_due
    }

    /// A segment was published (or the chain started) and a new one opened at `now`.
    pub(super) fn on_segment_opened(&mut self, now: Instant) {
        self.segment_due = now + self.cadence.delta_every;
    }

    /// No member answered: the wait before trying again.
    pub(super) fn on_connect_failed(&mut self) -> Duration {
        let delay = self.backoff;
        self.backoff = backoff_after(delay);
        delay
    }

    /// The watch on `endpoint` ended (the chain goes on): that member is tried last, and
    /// this is the wait before reconnecting.
    pub(super) fn on_watch_lost(&mut self, endpoint: &str) -> Duration {
        self.avoid = Some(endpoint.to_string());
        self.preferred = None;
        self.on_connect_failed()
    }

    /// The store revision a member reported at connect: `Err` (why) when the cluster is
    /// below what the chain received (history rewound: the chain must end).
    pub(super) fn on_connected(&self, revision: i64) -> std::result::Result<(), String> {
        match rewound(revision, self.received) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }

    /// The store revision read at a check.
    pub(super) fn on_check(&self, revision: i64) -> Checked {
        if let Some(reason) = rewound(revision, self.received) {
            return Checked::Rewound(reason);
        }
        Checked::Fine {
            lag: (revision - self.received).max(0),
            // Caught up: the store was at `revision` now, and every change up to it was
            // received.
            mark: (self.received >= revision).then_some(self.received),
        }
    }

    /// Whether the next full backup is to be taken now (it is due, and not taken yet).
    pub(super) fn full_needed(&self, now: Instant) -> bool {
        self.next_full.is_none() && now >= self.full_due
    }

    /// The next full backup is stored, and the store was at `revision` after it: the chain
    /// goes on until it received every change up to there.
    pub(super) fn on_full_saved(&mut self, full: F, revision: i64) {
        self.next_full = Some((full, revision));
    }

    /// The next full backup failed at `now` (reported): it is tried again within a minute
    /// (or `full_every`, when shorter).
    pub(super) fn on_full_failed(&mut self, now: Instant) {
        self.full_due = now + self.cadence.full_every.min(FULL_RETRY);
    }

    /// Whether the chain may end: the next full backup is stored and every change it may
    /// hold was received here.
    pub(super) fn ready_to_switch(&self) -> bool {
        matches!(&self.next_full, Some((_, after)) if self.received >= *after)
    }

    /// The next full backup, handed back once the chain switches to it.
    pub(super) fn take_next_full(&mut self) -> Option<F> {
        self.next_full.take().map(|(full, _)| full)
    }

    /// After a check at `now`: switch to the next full backup, cut the segment, or nothing.
    pub(super) fn after_check(&self, now: Instant) -> AfterCheck {
        if self.ready_to_switch() {
            AfterCheck::Switch
        } else if self.segment_due(now) {
            AfterCheck::Cut
        } else {
            AfterCheck::Idle
        }
    }

    /// A watch response arrived (of the run's cluster): `canceled` by etcd, with
    /// `compact_revision` (when it fell behind a compaction) and `cancel_reason`.
    pub(super) fn on_response(
        &mut self,
        canceled: bool,
        compact_revision: i64,
        cancel_reason: &str,
    ) -> Response {
        self.backoff = FIRST_WATCH_BACKOFF;
        self.floor = self.received;
        if !canceled {
            return Response::Record;
        }
        if compact_revision > 0 {
            return Response::Gap(format!(
                "the watch fell behind a compaction: history starts at revision {compact_revision} but revision {} was next",
                self.received + 1
            ));
        }
        Response::Reconnect(format!("etcd cancelled the watch: {cancel_reason}"))
    }

    /// A change at revision `main` of the response being recorded, with `segment_bytes`
    /// (uncompressed) in the segment so far. A segment that reached its cut size is cut
    /// between two revisions (a response holds whole revisions).
    pub(super) fn on_change(&mut self, main: i64, segment_bytes: u64) -> Change {
        if main <= self.floor {
            return Change::Skip;
        }
        let cut_at = (main != self.last_main && segment_bytes >= self.cadence.segment_bytes)
            .then_some(self.received);
        let sub = if main == self.last_main {
            self.next_sub
        } else {
            0
        };
        self.last_main = main;
        self.next_sub = sub + 1;
        Change::Record { sub, cut_at }
    }

    /// Whether the TTL of `lease` is still to be recorded in this chain.
    pub(super) fn lease_unknown(&self, lease: i64) -> bool {
        lease != 0 && !self.leases.contains(&lease)
    }

    /// The TTL of `lease` is recorded (or it is known to be gone): never asked again.
    pub(super) fn on_lease_known(&mut self, lease: i64) {
        self.leases.insert(lease);
    }

    /// The change at `main` was recorded.
    pub(super) fn on_recorded(&mut self, main: i64) {
        self.received = self.received.max(main);
    }

    /// The response's events are recorded: with a revision, record a time mark at it (the
    /// response brought changes).
    pub(super) fn end_of_response(&self) -> Option<i64> {
        (self.received > self.floor).then_some(self.received)
    }
}

/// `Err` (the gap's reason) when a change of `key_len` + `value_len` bytes at revision
/// `main` is larger than a segment record may be.
pub(super) fn record_fits(
    key_len: usize,
    value_len: usize,
    main: i64,
) -> std::result::Result<(), String> {
    if key_len + value_len > MAX_RECORD_BYTES {
        return Err(format!(
            "a change of {value_len} bytes at revision {main} is larger than a segment record may be"
        ));
    }
    Ok(())
}

/// Attempts to publish one segment: how many, and the growing wait between them.
pub(super) struct Attempts {
    left: u32,
    delay: Duration,
}

/// Attempts at the last segment, when stopping.
pub(super) const LAST_SEGMENT_ATTEMPTS: u32 = 3;

impl Attempts {
    /// At most `max` attempts (`u32::MAX`: until it works or the run stops).
    pub(super) fn new(max: u32) -> Self {
        Attempts {
            left: max,
            delay: Duration::from_secs(1),
        }
    }

    /// An attempt failed: the wait before the next one, `None` when that was the last.
    pub(super) fn failed(&mut self) -> Option<Duration> {
        self.left = self.left.saturating_sub(1);
        if self.left == 0 {
            return None;
        }
        let delay = self.delay;
        self.delay = backoff_after(delay);
        Some(delay)
    }
}

/// How a chain ends early for `reason` once the segment being filled was cut (`cut`): a gap,
/// unless that cut found the full backup gone or the lock taken over.
pub(super) fn ended_early<F>(
    cut: std::result::Result<(), ChainEnd<F>>,
    reason: String,
) -> ChainEnd<F> {
    match cut {
        Err(end @ (ChainEnd::Lost | ChainEnd::TakenOver(_))) => end,
        _ => ChainEnd::Gap(reason),
    }
}

/// How a chain ends on a stop once its last segment was published (`published`): stopped
/// (with the failure to report when it could not be published), unless the full backup is
/// gone or the lock was taken over.
pub(super) fn stopped<F>(
    published: std::result::Result<(), ChainEnd<F>>,
) -> (ChainEnd<F>, Option<RunEvent>) {
    match published {
        Err(ChainEnd::Gap(reason)) => (
            ChainEnd::Stopped,
            Some(RunEvent::Failed {
                reason: FailureReason::Segment,
                error: format!("the last segment was not published: {reason}"),
            }),
        ),
        Err(end @ (ChainEnd::Lost | ChainEnd::TakenOver(_))) => (end, None),
        _ => (ChainEnd::Stopped, None),
    }
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
