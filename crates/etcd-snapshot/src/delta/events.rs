//! What `backup run` reports: the events of its log and the state its metrics show.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// What kind of step failed, for the failure counter's `reason` label and alerts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    /// A full backup could not be taken or stored.
    FullBackup,
    /// A full backup failed its integrity check (etcd's hash, its size, a read back).
    Verification,
    /// A delta segment could not be published.
    Segment,
    /// No member could be watched (or answered the run's checks).
    Watch,
    /// The store could not be read (for a chain to continue).
    Store,
    /// The store's writer lock could not be renewed or written.
    Lock,
    /// Pruning by the retention rules failed.
    Prune,
    /// A background compaction of a chain failed.
    Compaction,
    /// The metrics file could not be written.
    MetricsFile,
    /// The cluster's leases could not be listed (restores keep the last set written).
    Leases,
}

impl FailureReason {
    /// Every reason, each a series of the failure counter from the start.
    pub const ALL: [FailureReason; 10] = [
        FailureReason::FullBackup,
        FailureReason::Verification,
        FailureReason::Segment,
        FailureReason::Watch,
        FailureReason::Store,
        FailureReason::Lock,
        FailureReason::Prune,
        FailureReason::Compaction,
        FailureReason::MetricsFile,
        FailureReason::Leases,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::FullBackup => "full_backup",
            FailureReason::Verification => "verification",
            FailureReason::Segment => "segment",
            FailureReason::Watch => "watch",
            FailureReason::Store => "store",
            FailureReason::Lock => "lock",
            FailureReason::Prune => "prune",
            FailureReason::Compaction => "compaction",
            FailureReason::MetricsFile => "metrics_file",
            FailureReason::Leases => "leases",
        }
    }
}

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
    /// The cluster's leases changed (or a chain began): the set seen at `revision` is in the
    /// segment being filled, so a restore at or after it holds exactly these leases.
    LeasesRecorded {
        /// The revision the cluster was at when they were listed.
        revision: i64,
        /// How many leases it held.
        leases: usize,
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
    /// `--copy-to`: full backups and segments were copied to the second store and verified
    /// there (in order: a chain there never has a hole).
    Copied {
        /// The second store.
        destination: String,
        /// The objects copied.
        objects: Vec<String>,
    },
    /// `--copy-to`: a warning: copying to the second store failed (it is tried again, and
    /// what it lacks is copied once it answers), pruning it failed, or a chain was dropped
    /// from the copy queue. The first store is not affected; not a failure of the run.
    CopyFailed {
        /// The second store.
        destination: String,
        /// What went wrong (one line).
        error: String,
    },
    /// `--copy-to`: backups the second store's retention no longer keeps were deleted there.
    CopyPruned {
        /// The second store.
        destination: String,
        /// The full backups deleted (with their chains).
        deleted: Vec<String>,
    },
    /// A warning: the watch has not delivered changes the store made this long ago (the
    /// member or this host cannot keep up with the write rate), so they are published late.
    /// Once past 10 s behind, then once a minute while it stays behind; nothing is lost (the
    /// changes are published once they arrive, or a gap is reported if etcd compacts them
    /// first).
    WatchBehind {
        /// Revisions the watch was behind the store at the check.
        revisions: i64,
        /// Seconds the watch has held back changes (counted from the check before the store
        /// first showed a revision the watch has not delivered yet).
        seconds: u64,
    },
    /// A step failed and will be retried.
    Failed {
        /// What kind of step failed.
        reason: FailureReason,
        /// What failed (one line).
        error: String,
    },
}

/// Receives [`RunEvent`]s as they happen.
pub trait RunObserver: Send + Sync {
    /// Called for each event.
    fn on_event(&self, event: &RunEvent);
}

/// What the metrics report (see `RunMetrics`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunState {
    /// When the last full backup was stored.
    pub last_full_at: Option<DateTime<Utc>>,
    /// Its revision.
    pub last_full_revision: i64,
    /// Its wall time, in seconds.
    pub last_full_duration_seconds: f64,
    /// The bytes it stored.
    pub last_full_bytes: u64,
    /// When the last segment was published.
    pub last_delta_at: Option<DateTime<Utc>>,
    /// Every change up to this revision is published.
    pub last_delta_revision: i64,
    /// The cluster's revision at the last check.
    pub cluster_revision: i64,
    /// Revisions the watch was behind the store at the last check.
    pub lag_revisions: i64,
    /// Seconds since the store first reached a revision the watch had not delivered at the
    /// last check (0 when caught up).
    pub watch_behind_seconds: f64,
    /// Whether the run holds the store's writer lock.
    pub lock_held: bool,
    /// Gaps since the start (a lost full backup counts as one).
    pub gaps: u64,
    /// Full backups found gone while their chain was written, since the start.
    pub fulls_lost: u64,
    /// Full backups stored since the start.
    pub full_backups: u64,
    /// Segments published since the start.
    pub segments: u64,
    /// Changes published since the start.
    pub changes: u64,
    /// Bytes stored by full backups since the start.
    pub full_bytes_stored: u64,
    /// Bytes stored by segments since the start.
    pub delta_bytes_stored: u64,
    /// Failures since the start.
    pub failures: u64,
    /// Failures since the start, by reason.
    pub failures_by_reason: BTreeMap<FailureReason, u64>,
    /// `--copy-to`: objects (full backups, segments) copied to the second store.
    pub copied_objects: u64,
    /// `--copy-to`: failed copies (and prunes) of the second store: warnings.
    pub copy_failures: u64,
    /// `--copy-to`: when the second store last held everything published.
    pub copy_caught_up_at: Option<DateTime<Utc>>,
    /// `--copy-to`: chains with publications the second store does not hold yet.
    pub copy_pending_chains: u64,
}
