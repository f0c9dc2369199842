//! Mapping a time to a revision over a chain whose clock may have stepped.
//!
//! etcd records no time with a change: a chain's times are *stamps* of the clock of the host
//! `backup run` ran on, each saying "every change up to revision R had been received when the
//! clock showed T" (a full backup's `created_at`, a segment's `from_time`, the time marks in
//! its records). In revision order they normally only grow; a wall clock that is stepped (an
//! NTP step, a VM resumed, a clock set by hand) makes them go back, and a time can then be
//! shown twice. A time is mapped monotonically: to the last stamp before the chain's clock
//! **first** went past it (the running maximum of the stamps, which only grows, is compared),
//! so a restore by time is always a prefix of the chain and never includes a change received
//! after the clock had once shown a later time. Stamps that go back are reported
//! ([`ClockStep`]), and so are the revisions stamped again at or before the time after it was
//! first passed ([`TimeSeenAgain`]): those are what a later reading of the same time would
//! have restored.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// A backward step of the backup's clock, as a chain's stamps show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockStep {
    /// The revision of the first stamp after the step.
    pub revision: i64,
    /// The stamp before it (the time the clock showed just before the step).
    pub before: DateTime<Utc>,
    /// Its own stamp, earlier than `before`.
    pub after: DateTime<Utc>,
}

impl ClockStep {
    /// How far the clock went back, in milliseconds.
    pub fn back_ms(&self) -> i64 {
        (self.before - self.after).num_milliseconds()
    }

    /// The step in words: "the backup clock went back 20.0 s at revision 4321 (from ... to ...)".
    pub fn describe(&self) -> String {
        format!(
            "the backup clock went back {:.1} s at revision {} (from {} to {})",
            self.back_ms() as f64 / 1000.0,
            self.revision,
            self.before.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
            self.after.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
        )
    }
}

/// Revisions stamped at or before the time asked for, after the chain's clock had already gone
/// past it (it stepped back): a later reading of the same time, not restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TimeSeenAgain {
    /// The first such revision.
    pub first_revision: i64,
    /// The last such revision.
    pub last_revision: i64,
}

/// Walks a chain's stamps in revision order.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    /// The time asked for (milliseconds since the epoch), when mapping one.
    at: Option<i64>,
    /// The latest stamp so far (milliseconds), `None` before the first.
    high: Option<i64>,
    /// The stamp before this one.
    last: Option<(i64, DateTime<Utc>)>,
    /// The revision of the last stamp while the running maximum was at or before `at`.
    target: Option<i64>,
    /// Whether the running maximum went past `at`.
    passed: bool,
    steps: Vec<ClockStep>,
    seen_again: Option<TimeSeenAgain>,
}

fn millis(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

impl Timeline {
    /// A timeline mapping `at` (or, with `None`, only finding steps). `prior` is the latest
    /// stamp of the history before the chain starts (an earlier chain's): the chain's clock
    /// counts as past `at` from its start when `prior` is later than `at`.
    pub(crate) fn new(at: Option<DateTime<Utc>>, prior: Option<DateTime<Utc>>) -> Timeline {
        let at = at.map(millis);
        let high = prior.map(millis);
        Timeline {
            at,
            high,
            last: None,
            target: None,
            passed: matches!((at, high), (Some(a), Some(h)) if h > a),
            steps: Vec::new(),
            seen_again: None,
        }
    }

    /// The next stamp: every change up to `revision` was received when the clock showed
    /// `stamp`. Stamps come in revision order (equal revisions allowed).
    pub(crate) fn stamp(&mut self, revision: i64, stamp: DateTime<Utc>) {
        let ms = millis(stamp);
        // Compared to the millisecond: a segment's `from_time` has nanoseconds, its records'
        // marks milliseconds, and a change marked in the same millisecond is no step.
        if let Some((_, before)) = self.last
            && ms < millis(before)
        {
            self.steps.push(ClockStep {
                revision,
                before,
                after: stamp,
            });
        }
        self.last = Some((revision, stamp));
        let high = self.high.map_or(ms, |h| h.max(ms));
        self.high = Some(high);
        let Some(at) = self.at else {
            return;
        };
        if !self.passed && high <= at {
            self.target = Some(revision);
        } else {
            self.passed = true;
            if ms <= at && self.target.is_none_or(|t| revision > t) {
                let seen = self.seen_again.get_or_insert(TimeSeenAgain {
                    first_revision: revision,
                    last_revision: revision,
                });
                seen.last_revision = seen.last_revision.max(revision);
            }
        }
    }

    /// A stamp in milliseconds since the epoch (a time mark of a segment's records); one that
    /// is no time chrono can hold is ignored.
    pub(crate) fn stamp_ms(&mut self, revision: i64, unix_ms: i64) {
        if let Some(at) = DateTime::<Utc>::from_timestamp_millis(unix_ms) {
            self.stamp(revision, at);
        }
    }

    /// The revision the time maps to: the last stamp before the clock first went past it
    /// (`None`: no stamp was at or before it).
    pub(crate) fn target(&self) -> Option<i64> {
        self.target
    }

    /// Whether the clock has gone past the time: later stamps cannot move the target.
    #[cfg(test)]
    pub(crate) fn passed(&self) -> bool {
        self.passed
    }

    /// The target is settled: stamps from here on (of what is not replayed) are only looked
    /// at for steps and for the time shown again.
    pub(crate) fn close(&mut self) {
        self.passed = true;
    }

    /// The latest stamp so far.
    #[cfg(test)]
    pub(crate) fn high(&self) -> Option<DateTime<Utc>> {
        self.high.and_then(DateTime::<Utc>::from_timestamp_millis)
    }

    /// The backward steps seen, in order.
    pub(crate) fn steps(&self) -> &[ClockStep] {
        &self.steps
    }

    /// The revisions stamped at or before the time after it was first passed.
    pub(crate) fn seen_again(&self) -> Option<TimeSeenAgain> {
        self.seen_again
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(seconds: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    /// Maps `at` over stamps (revision, seconds).
    fn map(at: i64, stamps: &[(i64, i64)]) -> Timeline {
        let mut line = Timeline::new(Some(t(at)), None);
        for &(revision, seconds) in stamps {
            line.stamp(revision, t(seconds));
        }
        line
    }

    #[test]
    fn a_mark_in_the_same_millisecond_as_a_nanosecond_stamp_is_no_step() {
        // A segment begun at x.504472770 s (from_time), its first change marked x.504 s.
        let begun = t(12) + chrono::TimeDelta::nanoseconds(504_472_770);
        let mut timeline = Timeline::new(None, None);
        timeline.stamp(641, begun);
        timeline.stamp_ms(642, t(12).timestamp_millis() + 504);
        assert_eq!(timeline.steps(), &[], "no clock went back");
    }

    #[test]
    fn a_monotonic_clock_maps_a_time_to_the_last_stamp_at_or_before_it() {
        let stamps = [(10, 0), (20, 10), (30, 20), (40, 30)];
        assert_eq!(map(15, &stamps).target(), Some(20));
        assert_eq!(
            map(20, &stamps).target(),
            Some(30),
            "a stamp at the time counts"
        );
        assert_eq!(
            map(100, &stamps).target(),
            Some(40),
            "after the last: the last"
        );
        assert_eq!(map(-5, &stamps).target(), None, "before the first: nothing");
        let line = map(15, &stamps);
        assert!(line.steps().is_empty());
        assert!(line.seen_again().is_none());
        assert!(line.passed());
        assert!(!map(100, &stamps).passed());
    }

    #[test]
    fn a_step_back_maps_a_time_shown_twice_to_its_first_showing_and_names_the_second() {
        // The clock reached 30, went back 20 s at revision 40 and ran on to 50.
        let stamps = [
            (10, 0),
            (20, 15),
            (30, 30),
            (40, 10),
            (50, 20),
            (60, 35),
            (70, 45),
        ];
        let line = map(20, &stamps);
        assert_eq!(
            line.target(),
            Some(20),
            "the first time the clock reached 20"
        );
        assert_eq!(
            line.steps(),
            [ClockStep {
                revision: 40,
                before: t(30),
                after: t(10)
            }]
        );
        assert_eq!(line.steps()[0].back_ms(), 20_000);
        assert_eq!(
            line.seen_again(),
            Some(TimeSeenAgain {
                first_revision: 40,
                last_revision: 50
            })
        );
        // A time after the window the step repeated: unambiguous, the step still reported.
        let line = map(40, &stamps);
        assert_eq!(line.target(), Some(60));
        assert!(line.seen_again().is_none());
        assert_eq!(line.steps().len(), 1);
        // A time past the old high, first shown after the step: what came before it counts,
        // the stamps the step repeated included.
        let line = map(32, &stamps);
        assert_eq!(line.target(), Some(50));
        assert!(line.seen_again().is_none());
    }

    #[test]
    fn a_forward_jump_then_a_correction_never_includes_what_came_after_the_jump() {
        // A clock 20 s fast from revision 30 on, corrected at revision 50.
        let stamps = [
            (10, 0),
            (20, 5),
            (30, 30),
            (40, 35),
            (50, 16),
            (60, 21),
            (70, 40),
        ];
        let line = map(18, &stamps);
        assert_eq!(line.target(), Some(20), "stopped before the jump past 18");
        assert_eq!(line.seen_again().unwrap().first_revision, 50);
        assert_eq!(line.steps().len(), 1);
        // A time inside the forward jump alone (no stamp there): the stamp before it.
        let jump = [(10, 0), (20, 5), (30, 30), (40, 35)];
        let line = map(20, &jump);
        assert_eq!(line.target(), Some(20));
        assert!(line.steps().is_empty(), "a jump forward is no step back");
    }

    #[test]
    fn two_steps_equal_stamps_and_a_later_chain_start_are_monotonic() {
        let stamps = [(10, 0), (20, 10), (30, 5), (40, 12), (50, 8), (60, 20)];
        let line = map(9, &stamps);
        assert_eq!(line.target(), Some(10));
        assert_eq!(line.steps().len(), 2);
        assert_eq!(
            line.seen_again(),
            Some(TimeSeenAgain {
                first_revision: 30,
                last_revision: 50
            })
        );
        // Equal stamps are no step; the last of them is the target.
        let equal = [(10, 0), (20, 5), (30, 5), (40, 5), (50, 6)];
        let line = map(5, &equal);
        assert_eq!(line.target(), Some(40));
        assert!(line.steps().is_empty());
        // An earlier chain's clock was already past the time when this one started.
        let mut later = Timeline::new(Some(t(5)), Some(t(8)));
        later.stamp(100, t(4));
        assert_eq!(
            later.target(),
            None,
            "the time was passed before this chain"
        );
        assert!(later.passed());
        // Without a time, only the steps.
        let mut steps = Timeline::new(None, None);
        for &(r, s) in &stamps {
            steps.stamp(r, t(s));
        }
        assert_eq!(steps.steps().len(), 2);
        assert_eq!(steps.target(), None);
        assert_eq!(steps.high(), Some(t(20)));
    }
}
