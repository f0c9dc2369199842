//! What `backup run` reports: the events of its log and the state its metrics file shows.

use chrono::{DateTime, Utc};
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
        let rows: [(&str, &str, &str, String); 11] = [
            (
                "etcdops_backup_run_last_full_timestamp_seconds",
                "gauge",
                "Time the last full backup was stored.",
                format!("{}", secs(self.last_full_at)),
            ),
            (
                "etcdops_backup_run_last_full_revision",
                "gauge",
                "Revision of the last full backup.",
                self.last_full_revision.to_string(),
            ),
            (
                "etcdops_backup_run_last_delta_timestamp_seconds",
                "gauge",
                "Time the last delta segment was published.",
                format!("{}", secs(self.last_delta_at)),
            ),
            (
                "etcdops_backup_run_last_delta_revision",
                "gauge",
                "Every change up to this revision is published.",
                self.last_delta_revision.to_string(),
            ),
            (
                "etcdops_backup_run_lag_revisions",
                "gauge",
                "Revisions the watch was behind the store at the last check.",
                self.lag_revisions.to_string(),
            ),
            (
                "etcdops_backup_run_lag_seconds",
                "gauge",
                "Seconds since the last publication (full or segment).",
                format!("{lag_seconds}"),
            ),
            (
                "etcdops_backup_run_gaps_total",
                "counter",
                "Chains ended early (changes could not be watched, or the full backup was lost).",
                self.gaps.to_string(),
            ),
            (
                "etcdops_backup_run_full_backups_lost_total",
                "counter",
                "Full backups found gone from the store while their chain was written.",
                self.fulls_lost.to_string(),
            ),
            (
                "etcdops_backup_run_segments_total",
                "counter",
                "Delta segments published.",
                self.segments.to_string(),
            ),
            (
                "etcdops_backup_run_changes_total",
                "counter",
                "Changes published in delta segments.",
                self.changes.to_string(),
            ),
            (
                "etcdops_backup_run_failures_total",
                "counter",
                "Failed steps (retried).",
                self.failures.to_string(),
            ),
        ];
        let mut text = String::new();
        for (name, kind, help, value) in rows {
            text.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            ));
        }
        text
    }
}
