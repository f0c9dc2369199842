//! The metrics of one `backup run`, in one registry that both outputs read: the textfile
//! (`--metrics-file`, for node_exporter) and the `/metrics` endpoint (`--metrics-addr`). The
//! run's [`RunState`] is their source: each update copies it in, so the two outputs always
//! agree and no value is counted in two places. `/readyz` is decided here too, from the same
//! values, at the moment it is asked.

use std::time::Duration;

use chrono::{DateTime, Utc};
use prometheus::{
    Gauge, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};

use super::events::{FailureReason, RunState};
use crate::metrics::{encode, gauge, registered};

/// Upper bounds of the segment publication histogram, in seconds: a local disk answers in
/// milliseconds, an object store in tens to hundreds, a failing one in its retries.
const PUBLISH_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Whether the run is current, as `/readyz` answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    /// Ready: a full backup younger than twice `--full-every`, the writer lock held, and a
    /// publication (segment or full backup) younger than twice `--delta-every`.
    pub ready: bool,
    /// Why, in one line.
    pub reason: String,
}

/// The registry of one run and a handle on each of its metrics.
pub struct RunMetrics {
    registry: Registry,
    full_every: Duration,
    delta_every: Duration,
    last_full_timestamp: Gauge,
    last_full_revision: IntGauge,
    last_full_duration: Gauge,
    last_full_bytes: IntGauge,
    last_delta_timestamp: Gauge,
    last_delta_revision: IntGauge,
    cluster_revision: IntGauge,
    lag_revisions: IntGauge,
    lag_seconds: Gauge,
    watch_behind_seconds: Gauge,
    lock_held: IntGauge,
    ready: IntGauge,
    gaps: IntCounter,
    fulls_lost: IntCounter,
    full_backups: IntCounter,
    segments: IntCounter,
    changes: IntCounter,
    stored_bytes: IntCounterVec,
    failures: IntCounterVec,
    segment_publish: Histogram,
    copied_objects: IntCounter,
    copy_failures: IntCounter,
    copy_caught_up: Gauge,
    copy_pending: IntGauge,
}

impl std::fmt::Debug for RunMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunMetrics").finish_non_exhaustive()
    }
}

#[allow(clippy::expect_used)]
fn int_gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    registered(
        registry,
        IntGauge::new(name, help).expect("valid metric name"),
    )
}

#[allow(clippy::expect_used)]
fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    registered(
        registry,
        IntCounter::new(name, help).expect("valid metric name"),
    )
}

#[allow(clippy::expect_used)]
fn counter_vec(registry: &Registry, name: &str, help: &str, label: &str) -> IntCounterVec {
    registered(
        registry,
        IntCounterVec::new(Opts::new(name, help), &[label]).expect("valid metric name"),
    )
}

/// Moves `counter` up to `total` (a counter never goes down; the state's totals only grow).
fn advance(counter: &IntCounter, total: u64) {
    let current = counter.get();
    if total > current {
        counter.inc_by(total - current);
    }
}

fn seconds(t: Option<DateTime<Utc>>) -> f64 {
    t.map_or(0.0, |t| t.timestamp_millis() as f64 / 1000.0)
}

impl RunMetrics {
    /// The metrics of a run that takes a full backup every `full_every` and publishes a
    /// segment at least every `delta_every`.
    #[allow(clippy::expect_used)]
    pub fn new(full_every: Duration, delta_every: Duration) -> RunMetrics {
        let r = Registry::new();
        let build_info = registered(
            &r,
            IntGaugeVec::new(
                Opts::new("etcdops_build_info", "1, labelled with etcdops' version."),
                &["version"],
            )
            .expect("valid metric name"),
        );
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        gauge(
            &r,
            "etcdops_backup_run_full_interval_seconds",
            "The time between full backups (--full-every).",
        )
        .set(full_every.as_secs_f64());
        gauge(
            &r,
            "etcdops_backup_run_delta_interval_seconds",
            "The longest a change waits before it is published (--delta-every).",
        )
        .set(delta_every.as_secs_f64());
        let stored_bytes = counter_vec(
            &r,
            "etcdops_backup_run_stored_bytes_total",
            "Bytes stored, by kind (full backups, delta segments).",
            "kind",
        );
        for kind in ["full", "delta"] {
            stored_bytes.with_label_values(&[kind]);
        }
        let failures = counter_vec(
            &r,
            "etcdops_backup_run_failures_total",
            "Failed steps (each retried), by reason.",
            "reason",
        );
        for reason in FailureReason::ALL {
            failures.with_label_values(&[reason.as_str()]);
        }
        let segment_publish = registered(
            &r,
            Histogram::with_opts(
                HistogramOpts::new(
                    "etcdops_backup_run_segment_publish_duration_seconds",
                    "Time to publish a delta segment (its object, then its manifest).",
                )
                .buckets(PUBLISH_BUCKETS.to_vec()),
            )
            .expect("valid metric name"),
        );
        RunMetrics {
            full_every,
            delta_every,
            last_full_timestamp: gauge(
                &r,
                "etcdops_backup_run_last_full_timestamp_seconds",
                "Time the last full backup was stored (0: none yet).",
            ),
            last_full_revision: int_gauge(
                &r,
                "etcdops_backup_run_last_full_revision",
                "Revision of the last full backup.",
            ),
            last_full_duration: gauge(
                &r,
                "etcdops_backup_run_last_full_duration_seconds",
                "Wall time of the last full backup.",
            ),
            last_full_bytes: int_gauge(
                &r,
                "etcdops_backup_run_last_full_bytes",
                "Bytes stored by the last full backup (after compression).",
            ),
            last_delta_timestamp: gauge(
                &r,
                "etcdops_backup_run_last_delta_timestamp_seconds",
                "Time the last delta segment was published (0: none yet).",
            ),
            last_delta_revision: int_gauge(
                &r,
                "etcdops_backup_run_last_delta_revision",
                "Every change up to this revision is published.",
            ),
            cluster_revision: int_gauge(
                &r,
                "etcdops_backup_run_cluster_revision",
                "The cluster's revision at the last check.",
            ),
            lag_revisions: int_gauge(
                &r,
                "etcdops_backup_run_lag_revisions",
                "Revisions the watch was behind the cluster at the last check.",
            ),
            lag_seconds: gauge(
                &r,
                "etcdops_backup_run_lag_seconds",
                "Seconds since the last publication (full backup or segment).",
            ),
            watch_behind_seconds: gauge(
                &r,
                "etcdops_backup_run_watch_behind_seconds",
                "How long the watch has held back changes at the last check: since the check before the cluster first showed a revision the watch had not delivered (0 when caught up; about one check interval under steady writes). Above a few seconds the run cannot keep up with the write rate.",
            ),
            lock_held: int_gauge(
                &r,
                "etcdops_backup_run_lock_held",
                "1 while the run holds the store's writer lock for its cluster, else 0.",
            ),
            ready: int_gauge(
                &r,
                "etcdops_backup_run_ready",
                "1 when the chain is current (as /readyz answers), else 0.",
            ),
            gaps: counter(
                &r,
                "etcdops_backup_run_gaps_total",
                "Chains ended early (changes could not be watched, or the full backup was lost).",
            ),
            fulls_lost: counter(
                &r,
                "etcdops_backup_run_full_backups_lost_total",
                "Full backups found gone from the store while their chain was written.",
            ),
            full_backups: counter(
                &r,
                "etcdops_backup_run_full_backups_total",
                "Full backups stored.",
            ),
            segments: counter(
                &r,
                "etcdops_backup_run_segments_total",
                "Delta segments published.",
            ),
            changes: counter(
                &r,
                "etcdops_backup_run_changes_total",
                "Changes published in delta segments.",
            ),
            copied_objects: counter(
                &r,
                "etcdops_backup_run_copied_objects_total",
                "Full backups and segments copied to the second store (--copy-to) and verified there.",
            ),
            copy_failures: counter(
                &r,
                "etcdops_backup_run_copy_failures_total",
                "Failed copies to (or prunes of) the second store (--copy-to), each retried; the first store is not affected.",
            ),
            copy_caught_up: gauge(
                &r,
                "etcdops_backup_run_copy_last_caught_up_timestamp_seconds",
                "Time the second store (--copy-to) last held everything published (0: not yet, or no --copy-to).",
            ),
            copy_pending: int_gauge(
                &r,
                "etcdops_backup_run_copy_pending_chains",
                "Chains with publications the second store (--copy-to) does not hold yet.",
            ),
            stored_bytes,
            failures,
            segment_publish,
            registry: r,
        }
    }

    /// Copies the run's state in.
    pub(crate) fn update(&self, state: &RunState) {
        self.last_full_timestamp.set(seconds(state.last_full_at));
        self.last_full_revision.set(state.last_full_revision);
        self.last_full_duration
            .set(state.last_full_duration_seconds);
        self.last_full_bytes
            .set(i64::try_from(state.last_full_bytes).unwrap_or(i64::MAX));
        self.last_delta_timestamp.set(seconds(state.last_delta_at));
        self.last_delta_revision.set(state.last_delta_revision);
        self.cluster_revision.set(state.cluster_revision);
        self.lag_revisions.set(state.lag_revisions);
        self.watch_behind_seconds.set(state.watch_behind_seconds);
        self.lock_held.set(i64::from(state.lock_held));
        advance(&self.gaps, state.gaps);
        advance(&self.fulls_lost, state.fulls_lost);
        advance(&self.full_backups, state.full_backups);
        advance(&self.segments, state.segments);
        advance(&self.changes, state.changes);
        advance(
            &self.stored_bytes.with_label_values(&["full"]),
            state.full_bytes_stored,
        );
        advance(
            &self.stored_bytes.with_label_values(&["delta"]),
            state.delta_bytes_stored,
        );
        for (reason, total) in &state.failures_by_reason {
            advance(&self.failures.with_label_values(&[reason.as_str()]), *total);
        }
        advance(&self.copied_objects, state.copied_objects);
        advance(&self.copy_failures, state.copy_failures);
        self.copy_caught_up.set(seconds(state.copy_caught_up_at));
        self.copy_pending
            .set(i64::try_from(state.copy_pending_chains).unwrap_or(i64::MAX));
    }

    /// A segment took `seconds` to publish.
    pub(crate) fn observe_segment_publish(&self, seconds: f64) {
        self.segment_publish.observe(seconds);
    }

    /// Whether the run is current at `now`.
    pub fn readiness(&self, now: DateTime<Utc>) -> Readiness {
        let now = now.timestamp_millis() as f64 / 1000.0;
        let full = self.last_full_timestamp.get();
        let publication = full.max(self.last_delta_timestamp.get());
        let (full_limit, delta_limit) = (
            2.0 * self.full_every.as_secs_f64(),
            2.0 * self.delta_every.as_secs_f64(),
        );
        let not_ready = |reason: String| Readiness {
            ready: false,
            reason,
        };
        if full <= 0.0 {
            return not_ready("no full backup yet".into());
        }
        if self.lock_held.get() == 0 {
            return not_ready("the store's writer lock is not held".into());
        }
        if now - full > full_limit {
            return not_ready(format!(
                "the last full backup is {:.0} s old, more than twice the full-backup interval",
                now - full
            ));
        }
        if now - publication > delta_limit {
            return not_ready(format!(
                "nothing published for {:.0} s, more than twice the segment interval",
                now - publication
            ));
        }
        Readiness {
            ready: true,
            reason: format!(
                "the chain is current (last publication {:.0} s ago)",
                now - publication
            ),
        }
    }

    /// Every metric in Prometheus' text format at `now` (the time-derived values, lag and
    /// readiness, computed for that moment).
    pub fn render(&self, now: DateTime<Utc>) -> String {
        let publication = self
            .last_full_timestamp
            .get()
            .max(self.last_delta_timestamp.get());
        let now_seconds = now.timestamp_millis() as f64 / 1000.0;
        // To the millisecond the timestamps have (their difference as floats has more digits).
        let lag = ((now_seconds - publication).max(0.0) * 1000.0).round() / 1000.0;
        self.lag_seconds
            .set(if publication > 0.0 { lag } else { 0.0 });
        self.ready.set(i64::from(self.readiness(now).ready));
        encode(&self.registry)
    }
}

/// The content type of [`RunMetrics::render`]'s text.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(ms: i64) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(ms).unwrap()
    }

    fn sample(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{series} ")))
            .unwrap_or_else(|| panic!("{series} is missing:\n{text}"))
            .parse()
            .unwrap()
    }

    fn state() -> RunState {
        let mut failures = std::collections::BTreeMap::new();
        failures.insert(FailureReason::Segment, 2);
        failures.insert(FailureReason::Verification, 1);
        RunState {
            last_full_at: Some(at(1_700_000_000_500)),
            last_full_revision: 100,
            last_full_duration_seconds: 1.5,
            last_full_bytes: 4096,
            last_delta_at: Some(at(1_700_000_030_000)),
            last_delta_revision: 130,
            cluster_revision: 132,
            lag_revisions: 2,
            watch_behind_seconds: 3.5,
            lock_held: true,
            gaps: 1,
            fulls_lost: 0,
            full_backups: 1,
            segments: 5,
            changes: 30,
            full_bytes_stored: 4096,
            delta_bytes_stored: 700,
            failures: 3,
            failures_by_reason: failures,
            copied_objects: 6,
            copy_failures: 2,
            copy_caught_up_at: Some(at(1_700_000_020_000)),
            copy_pending_chains: 1,
        }
    }

    #[test]
    fn the_text_names_every_value_with_its_help_and_type() {
        let metrics = RunMetrics::new(Duration::from_secs(3600), Duration::from_secs(10));
        metrics.update(&state());
        metrics.observe_segment_publish(0.02);
        let text = metrics.render(at(1_700_000_031_250));
        for (series, value) in [
            (
                "etcdops_backup_run_last_full_timestamp_seconds",
                1_700_000_000.5,
            ),
            ("etcdops_backup_run_last_full_revision", 100.0),
            ("etcdops_backup_run_last_full_duration_seconds", 1.5),
            ("etcdops_backup_run_last_full_bytes", 4096.0),
            (
                "etcdops_backup_run_last_delta_timestamp_seconds",
                1_700_000_030.0,
            ),
            ("etcdops_backup_run_last_delta_revision", 130.0),
            ("etcdops_backup_run_cluster_revision", 132.0),
            ("etcdops_backup_run_lag_revisions", 2.0),
            ("etcdops_backup_run_lag_seconds", 1.25),
            ("etcdops_backup_run_watch_behind_seconds", 3.5),
            ("etcdops_backup_run_full_interval_seconds", 3600.0),
            ("etcdops_backup_run_delta_interval_seconds", 10.0),
            ("etcdops_backup_run_lock_held", 1.0),
            ("etcdops_backup_run_ready", 1.0),
            ("etcdops_backup_run_gaps_total", 1.0),
            ("etcdops_backup_run_full_backups_lost_total", 0.0),
            ("etcdops_backup_run_full_backups_total", 1.0),
            ("etcdops_backup_run_segments_total", 5.0),
            ("etcdops_backup_run_changes_total", 30.0),
            (
                "etcdops_backup_run_stored_bytes_total{kind=\"full\"}",
                4096.0,
            ),
            (
                "etcdops_backup_run_stored_bytes_total{kind=\"delta\"}",
                700.0,
            ),
            ("etcdops_backup_run_failures_total{reason=\"segment\"}", 2.0),
            (
                "etcdops_backup_run_failures_total{reason=\"verification\"}",
                1.0,
            ),
            ("etcdops_backup_run_failures_total{reason=\"watch\"}", 0.0),
            ("etcdops_backup_run_copied_objects_total", 6.0),
            ("etcdops_backup_run_copy_failures_total", 2.0),
            (
                "etcdops_backup_run_copy_last_caught_up_timestamp_seconds",
                1_700_000_020.0,
            ),
            ("etcdops_backup_run_copy_pending_chains", 1.0),
            (
                "etcdops_backup_run_segment_publish_duration_seconds_count",
                1.0,
            ),
            (
                "etcdops_backup_run_segment_publish_duration_seconds_bucket{le=\"0.025\"}",
                1.0,
            ),
            (
                "etcdops_backup_run_segment_publish_duration_seconds_bucket{le=\"0.01\"}",
                0.0,
            ),
        ] {
            assert_eq!(sample(&text, series), value, "{series}:\n{text}");
        }
        assert!(
            text.contains(&format!(
                "etcdops_build_info{{version=\"{}\"}} 1\n",
                env!("CARGO_PKG_VERSION")
            )),
            "{text}"
        );
        assert!(
            text.contains("# TYPE etcdops_backup_run_gaps_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("# HELP etcdops_backup_run_lag_seconds Seconds since the last publication (full backup or segment).\n"),
            "{text}"
        );
        // Every failure reason is a series from the start, so `increase()` sees its first one.
        for reason in FailureReason::ALL {
            let series = format!(
                "etcdops_backup_run_failures_total{{reason=\"{}\"}}",
                reason.as_str()
            );
            assert!(text.contains(&series), "{series}:\n{text}");
        }
    }

    #[test]
    fn counters_follow_the_state_and_never_go_down() {
        let metrics = RunMetrics::new(Duration::from_secs(3600), Duration::from_secs(10));
        let mut state = state();
        metrics.update(&state);
        state.segments = 7;
        metrics.update(&state);
        assert_eq!(
            sample(&metrics.render(at(0)), "etcdops_backup_run_segments_total"),
            7.0
        );
        state.segments = 3;
        metrics.update(&state);
        assert_eq!(
            sample(&metrics.render(at(0)), "etcdops_backup_run_segments_total"),
            7.0
        );
    }

    #[test]
    fn readiness_needs_a_full_backup_the_lock_and_a_recent_publication() {
        let metrics = RunMetrics::new(Duration::from_secs(3600), Duration::from_secs(10));
        let fresh = metrics.readiness(at(1_700_000_000_000));
        assert!(!fresh.ready);
        assert_eq!(fresh.reason, "no full backup yet");
        let mut state = state();
        metrics.update(&state);
        // The last publication (the segment at ...030.0) is 19.9 s old: within 2 x 10 s.
        let current = metrics.readiness(at(1_700_000_049_900));
        assert!(current.ready, "{current:?}");
        // 20.1 s: the chain is not current.
        let late = metrics.readiness(at(1_700_000_050_100));
        assert!(!late.ready);
        assert!(
            late.reason.starts_with("nothing published for 20 s"),
            "{late:?}"
        );
        assert_eq!(
            sample(
                &metrics.render(at(1_700_000_050_100)),
                "etcdops_backup_run_ready"
            ),
            0.0
        );
        // A full backup older than twice its interval, whatever the segments do.
        state.last_delta_at = Some(at(1_700_007_300_000));
        metrics.update(&state);
        let stale_full = metrics.readiness(at(1_700_007_301_000));
        assert!(!stale_full.ready);
        assert!(stale_full.reason.contains("full backup"), "{stale_full:?}");
        // The lock lost.
        state.last_delta_at = Some(at(1_700_000_030_000));
        state.lock_held = false;
        metrics.update(&state);
        let unlocked = metrics.readiness(at(1_700_000_031_000));
        assert!(!unlocked.ready);
        assert!(unlocked.reason.contains("lock"), "{unlocked:?}");
    }
}
