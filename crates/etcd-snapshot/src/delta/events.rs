//! What `backup run` reports: the events of its log and the state its metrics file shows.

use chrono::{DateTime, Utc};
use etcd_common::PrometheusText;
use serde::Serialize;

/// Something `backup run` did, for its log.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// A full backup was stored; a new chain starts from it.
    FullSaved {
        /// Its object name.
        object: String,
        /// Its revision.
        revision: i64,
    },
    /// A segment was published.
    SegmentPublished {
        /// Its object name.
        object: String,
        /// Its place in the chain.
        sequence: u64,
        /// It holds the changes after this revision...
        after_revision: i64,
        /// ...up to this one.
        to_revision: i64,
        /// How many.
        changes: u64,
    },
    /// The chain ended early: the changes after `covered_revision` could not be watched. A
    /// new full backup follows at once.
    Gap {
        /// The full backup whose chain ended.
        base: String,
        /// Its chain holds every change up to here.
        covered_revision: i64,
        /// Why.
        reason: String,
    },
    /// The full backup of the chain being written is gone from the store (deleted, or the
    /// store emptied): nothing can restore its chain any more. Counted as a gap; a new full
    /// backup is taken at once.
    FullBackupLost {
        /// The full backup that is gone.
        base: String,
        /// How far its chain had been published.
        covered_revision: i64,
    },
    /// The run holds the store's writer lock for this cluster (renewed while it runs).
    Locked {
        /// The lock object.
        lock: String,
        /// Until when it holds without a renewal.
        expires_at: DateTime<Utc>,
    },
    /// Asked to stop while a full backup was being taken: it is finished first (or, past
    /// the stop grace, abandoned with nothing left behind).
    Stopping {
        /// What happens to the full backup in progress.
        reason: String,
    },
    /// The watch moved to another member.
    Reconnected {
        /// The member now watched.
        endpoint: String,
        /// Why it moved.
        reason: String,
    },
    /// The chain an earlier run left (stopped or killed) is continued: it is unbroken, and the
    /// changes made meanwhile go into it too (when its full backup is older than the
    /// full-backup interval, a new full backup follows at once, overlapping it).
    Resumed {
        /// The full backup whose chain goes on.
        base: String,
        /// The chain holds every change up to here; the watch resumes after it.
        covered_revision: i64,
    },
    /// Backups the retention rules no longer keep were deleted (with their chains).
    Pruned {
        /// The full backups deleted.
        deleted: Vec<String>,
    },
    /// `--compact-after`: a chain was compacted into a new full backup (in the background).
    Compacted {
        /// The new full backup.
        object: String,
        /// The chain's full backup.
        source: String,
        /// Segments compacted.
        segments: u64,
        /// The revision it holds (the chain's, when the compaction started).
        to_revision: i64,
    },
    /// A step failed and will be retried.
    Failed {
        /// What failed (one line).
        error: String,
    },
}

/// Receives [`RunEvent`]s as they happen.
pub trait RunObserver: Send + Sync {
    /// Called for each event.
    fn on_event(&self, event: &RunEvent);
}

/// What the metrics file reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunState {
    /// When the last full backup was stored.
    pub last_full_at: Option<DateTime<Utc>>,
    /// Its revision.
    pub last_full_revision: i64,
    /// When the last segment was published.
    pub last_delta_at: Option<DateTime<Utc>>,
    /// Every change up to this revision is published.
    pub last_delta_revision: i64,
    /// Revisions the watch was behind the store at the last check.
    pub lag_revisions: i64,
    /// Gaps since the start (a lost full backup counts as one).
    pub gaps: u64,
    /// Full backups found gone while their chain was written, since the start.
    pub fulls_lost: u64,
    /// Segments published since the start.
    pub segments: u64,
    /// Changes published since the start.
    pub changes: u64,
    /// Failures since the start.
    pub failures: u64,
}

impl RunState {
    /// The metrics file's text (Prometheus text format) at `now`.
    pub(crate) fn metrics_text(&self, now: DateTime<Utc>) -> String {
        let secs =
            |t: Option<DateTime<Utc>>| t.map_or(0.0, |t| t.timestamp_millis() as f64 / 1000.0);
        let last_publication = self.last_delta_at.max(self.last_full_at);
        let lag_seconds =
            last_publication.map_or(0.0, |t| (now - t).num_milliseconds().max(0) as f64 / 1000.0);
        let mut text = PrometheusText::new();
        text.gauge(
            "etcdops_backup_run_last_full_timestamp_seconds",
            "Time the last full backup was stored.",
            secs(self.last_full_at),
        )
        .gauge(
            "etcdops_backup_run_last_full_revision",
            "Revision of the last full backup.",
            self.last_full_revision,
        )
        .gauge(
            "etcdops_backup_run_last_delta_timestamp_seconds",
            "Time the last delta segment was published.",
            secs(self.last_delta_at),
        )
        .gauge(
            "etcdops_backup_run_last_delta_revision",
            "Every change up to this revision is published.",
            self.last_delta_revision,
        )
        .gauge(
            "etcdops_backup_run_lag_revisions",
            "Revisions the watch was behind the store at the last check.",
            self.lag_revisions,
        )
        .gauge(
            "etcdops_backup_run_lag_seconds",
            "Seconds since the last publication (full or segment).",
            lag_seconds,
        )
        .counter(
            "etcdops_backup_run_gaps_total",
            "Chains ended early (changes could not be watched, or the full backup was lost).",
            self.gaps,
        )
        .counter(
            "etcdops_backup_run_full_backups_lost_total",
            "Full backups found gone from the store while their chain was written.",
            self.fulls_lost,
        )
        .counter(
            "etcdops_backup_run_segments_total",
            "Delta segments published.",
            self.segments,
        )
        .counter(
            "etcdops_backup_run_changes_total",
            "Changes published in delta segments.",
            self.changes,
        )
        .counter(
            "etcdops_backup_run_failures_total",
            "Failed steps (retried).",
            self.failures,
        );
        text.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_metrics_text_names_every_value_with_its_help_and_type() {
        let full = Utc.timestamp_millis_opt(1_700_000_000_500).unwrap();
        let delta = Utc.timestamp_millis_opt(1_700_000_030_000).unwrap();
        let state = RunState {
            last_full_at: Some(full),
            last_full_revision: 100,
            last_delta_at: Some(delta),
            last_delta_revision: 130,
            lag_revisions: 2,
            gaps: 1,
            fulls_lost: 0,
            segments: 5,
            changes: 30,
            failures: 3,
        };
        let now = Utc.timestamp_millis_opt(1_700_000_031_250).unwrap();
        let expected = "\
# HELP etcdops_backup_run_last_full_timestamp_seconds Time the last full backup was stored.
# TYPE etcdops_backup_run_last_full_timestamp_seconds gauge
etcdops_backup_run_last_full_timestamp_seconds 1700000000.5
# HELP etcdops_backup_run_last_full_revision Revision of the last full backup.
# TYPE etcdops_backup_run_last_full_revision gauge
etcdops_backup_run_last_full_revision 100
# HELP etcdops_backup_run_last_delta_timestamp_seconds Time the last delta segment was published.
# TYPE etcdops_backup_run_last_delta_timestamp_seconds gauge
etcdops_backup_run_last_delta_timestamp_seconds 1700000030
# HELP etcdops_backup_run_last_delta_revision Every change up to this revision is published.
# TYPE etcdops_backup_run_last_delta_revision gauge
etcdops_backup_run_last_delta_revision 130
# HELP etcdops_backup_run_lag_revisions Revisions the watch was behind the store at the last check.
# TYPE etcdops_backup_run_lag_revisions gauge
etcdops_backup_run_lag_revisions 2
# HELP etcdops_backup_run_lag_seconds Seconds since the last publication (full or segment).
# TYPE etcdops_backup_run_lag_seconds gauge
etcdops_backup_run_lag_seconds 1.25
# HELP etcdops_backup_run_gaps_total Chains ended early (changes could not be watched, or the full backup was lost).
# TYPE etcdops_backup_run_gaps_total counter
etcdops_backup_run_gaps_total 1
# HELP etcdops_backup_run_full_backups_lost_total Full backups found gone from the store while their chain was written.
# TYPE etcdops_backup_run_full_backups_lost_total counter
etcdops_backup_run_full_backups_lost_total 0
# HELP etcdops_backup_run_segments_total Delta segments published.
# TYPE etcdops_backup_run_segments_total counter
etcdops_backup_run_segments_total 5
# HELP etcdops_backup_run_changes_total Changes published in delta segments.
# TYPE etcdops_backup_run_changes_total counter
etcdops_backup_run_changes_total 30
# HELP etcdops_backup_run_failures_total Failed steps (retried).
# TYPE etcdops_backup_run_failures_total counter
etcdops_backup_run_failures_total 3
";
        assert_eq!(state.metrics_text(now), expected);
        // Nothing stored yet: zero times, zero lag.
        let empty = RunState::default().metrics_text(now);
        assert!(
            empty.contains("\netcdops_backup_run_last_full_timestamp_seconds 0\n"),
            "{empty}"
        );
        assert!(
            empty.contains("\netcdops_backup_run_lag_seconds 0\n"),
            "{empty}"
        );
    }
}
