//! How long the watch has been behind the store, in time: the lag in revisions says nothing
//! about whether a backup falls behind under a write storm (10,000 revisions is one second of
//! a busy cluster, or an hour of a quiet one), so each check also notes when the store
//! reached the revisions the watch has not delivered yet, and a run that stays behind says so.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Behind for this long, the run warns (and again each [`WARN_EVERY`] while it stays behind).
const WARN_AFTER: Duration = Duration::from_secs(10);
/// How often a run that stays behind warns again.
const WARN_EVERY: Duration = Duration::from_secs(60);
/// Checks remembered at most (a check a second: an hour behind is still measured exactly;
/// past it, the oldest are dropped and the lag reads as at least an hour).
const MAX_CHECKS: usize = 3600;

/// The store revisions seen at checks that the watch has not delivered yet, with when they
/// were seen.
#[derive(Debug, Default)]
pub(super) struct WatchLag {
    /// (when seen, store revision), oldest first; only revisions above what was received.
    unreceived: VecDeque<(Instant, i64)>,
    /// When the run last warned, while it stays behind.
    warned_at: Option<Instant>,
    /// When the last check was.
    last_check: Option<Instant>,
}

/// What a check found about the watch's lag in time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LagInTime {
    /// How long ago the store first reached a revision the watch has not delivered yet (zero
    /// when caught up).
    pub(super) behind: Duration,
    /// `Some(revisions behind)` when the run is to warn now.
    pub(super) warn: Option<i64>,
}

impl WatchLag {
    /// A check at `now` found the store at `store_revision` with every change up to
    /// `received` delivered by the watch.
    pub(super) fn on_check(
        &mut self,
        now: Instant,
        store_revision: i64,
        received: i64,
    ) -> LagInTime {
        if store_revision <= received {
            // Caught up with the store as it is now: revisions noted above it were seen on a
            // member (or a history) it does not have, and the watch holds back nothing.
            self.unreceived.clear();
        }
        while self
            .unreceived
            .front()
            .is_some_and(|&(_, revision)| revision <= received)
        {
            self.unreceived.pop_front();
        }
        if store_revision > received
            && self
                .unreceived
                .back()
                .is_none_or(|&(_, revision)| revision < store_revision)
        {
            if self.unreceived.len() == MAX_CHECKS {
                self.unreceived.pop_front();
            }
            // The store passed what the watch delivered after the last check, at the
            // earliest: counted from there, a stall between two checks (a full backup taken
            // in between, a starved process) shows as the time it lasted.
            let since = self.last_check.unwrap_or(now);
            self.unreceived.push_back((since, store_revision));
        }
        self.last_check = Some(now);
        let behind = self
            .unreceived
            .front()
            .map_or(Duration::ZERO, |&(seen, _)| {
                now.saturating_duration_since(seen)
            });
        if behind.is_zero() {
            self.warned_at = None;
        }
        let due = behind >= WARN_AFTER
            && self
                .warned_at
                .is_none_or(|at| now.saturating_duration_since(at) >= WARN_EVERY);
        if due {
            self.warned_at = Some(now);
        }
        LagInTime {
            behind,
            warn: due.then_some((store_revision - received).max(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_watch_that_keeps_up_is_never_behind() {
        let mut lag = WatchLag::default();
        let start = Instant::now();
        for s in 0..30 {
            // The store moves on between checks, the watch delivers everything by the next.
            let found = lag.on_check(start + seconds(s), 100 + s as i64, 100 + s as i64);
            assert_eq!(found.behind, Duration::ZERO);
            assert_eq!(found.warn, None);
        }
    }

    #[test]
    fn the_lag_is_the_age_of_the_oldest_revision_not_delivered() {
        let mut lag = WatchLag::default();
        let start = Instant::now();
        assert_eq!(lag.on_check(start, 200, 100).behind, Duration::ZERO);
        assert_eq!(
            lag.on_check(start + seconds(1), 300, 150).behind,
            seconds(1)
        );
        // Everything up to 200 delivered: the store passed 200 after the check at second 0
        // (seen at second 1): at most 3 s ago.
        assert_eq!(
            lag.on_check(start + seconds(3), 400, 250).behind,
            seconds(3)
        );
        assert_eq!(
            lag.on_check(start + seconds(4), 400, 400).behind,
            Duration::ZERO
        );
    }

    #[test]
    fn a_stalled_watch_warns_after_ten_seconds_then_once_a_minute() {
        let mut lag = WatchLag::default();
        let start = Instant::now();
        let mut warnings = Vec::new();
        for s in 0..=130 {
            // The store runs 1,000 revisions a second ahead, the watch delivers nothing new.
            let now = start + seconds(s);
            let found = lag.on_check(now, 1_000 * s as i64 + 1_000, 500);
            if let Some(revisions) = found.warn {
                warnings.push((s, revisions));
            }
        }
        assert_eq!(
            warnings.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            [10, 70, 130]
        );
        assert_eq!(warnings[0].1, 10_500);
    }

    #[test]
    fn a_watch_caught_up_with_a_store_now_lower_is_not_behind() {
        // Seen at 1,000 (on a member since replaced by one behind it, or a history since
        // restored to an earlier revision): the watch caught up with the store at 900.
        let mut lag = WatchLag::default();
        let start = Instant::now();
        assert_eq!(lag.on_check(start, 1_000, 800).behind, Duration::ZERO);
        for s in 1..=30 {
            let found = lag.on_check(start + seconds(s), 900, 900);
            assert_eq!(found.behind, Duration::ZERO, "at {s} s");
            assert_eq!(found.warn, None, "at {s} s");
        }
        // Writes go on from there and the watch keeps up: still not behind.
        for s in 31..=60 {
            let revision = 900 + s as i64;
            let found = lag.on_check(start + seconds(s), revision, revision);
            assert_eq!(found.behind, Duration::ZERO, "at {s} s");
        }
    }

    #[test]
    fn catching_up_ends_the_warnings_and_a_new_lag_warns_again() {
        let mut lag = WatchLag::default();
        let start = Instant::now();
        assert_eq!(lag.on_check(start, 10, 5).warn, None);
        assert_eq!(lag.on_check(start + seconds(10), 20, 6).warn, Some(14));
        assert_eq!(lag.on_check(start + seconds(11), 20, 20).warn, None);
        assert_eq!(lag.on_check(start + seconds(12), 30, 20).warn, None);
        assert_eq!(lag.on_check(start + seconds(22), 40, 21).warn, Some(19));
    }

    #[test]
    fn a_stall_between_two_checks_counts_from_the_check_before_it() {
        // A caught-up check, then none for 12 s (a full backup taken in between, a process
        // stopped): the store moved on meanwhile, the watch delivered nothing.
        let mut lag = WatchLag::default();
        let start = Instant::now();
        assert_eq!(lag.on_check(start, 100, 100).behind, Duration::ZERO);
        let found = lag.on_check(start + seconds(12), 200, 100);
        assert_eq!(found.behind, seconds(12));
        assert_eq!(found.warn, Some(100));
    }
}
