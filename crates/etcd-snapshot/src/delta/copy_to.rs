//! `--copy-to`: a second store each full backup and segment of a run is copied to, after
//! its publication in the first, by [`copy_backups`] (streamed, checked against its manifest,
//! read back from the second store and checked again, its manifest written last).
//!
//! The copies run beside the watch loop, in a task of their own: the loop only names the
//! chain that grew ([`CopyTo::chain_grew`], a push under a lock, never an await on the second
//! store), so a slow, hanging or lost second store never delays a publication in the first.
//! The queue holds chains, not objects: a chain named again while it waits is one entry, and
//! each copy of a chain copies everything of it the second store lacks, in sequence order,
//! stopping at the first failure, so the second store's chain grows without a hole and a
//! second store that was down catches up by itself once it answers again (tried again with
//! growing waits, at least at each new publication). At most [`MAX_PENDING_CHAINS`] chains
//! wait: past that the oldest is dropped from the queue and reported (a `snapshot copy`
//! copies it later). What happened is collected here and reported by the run
//! ([`CopyTo::take_report`]): warnings, never failures of the run.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use etcd_core::MemberId;
use etcd_store::Store;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::copy::{CopyAction, CopyRequest, copy_backups};
use crate::error::SnapshotError;
use crate::progress::NoProgress;
use crate::prune::{PruneRequest, prune_store};
use crate::retention::RetentionPolicy;

/// The most chains that wait to be copied; past it the oldest is dropped (reported).
pub const MAX_PENDING_CHAINS: usize = 32;

/// The longest wait before a failed copy is tried again (a new publication tries at once).
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// The longest a stopping run waits for its copies.
pub(super) const COPY_STOP_GRACE: Duration = Duration::from_secs(20);

/// The most outcomes kept between two reports; more are counted, not kept.
const MAX_OUTCOMES: usize = 256;

/// The second store of a run and its own retention.
#[derive(Debug, Clone)]
pub struct CopyTarget {
    /// The store every publication is copied to.
    pub store: Store,
    /// After a new chain starts, once everything is copied, prune the second store with
    /// these rules (this cluster's folder only); none: never.
    pub retention: RetentionPolicy,
    /// With `retention`: objects without a manifest older than this are removed there.
    pub orphan_grace: Duration,
}

impl CopyTarget {
    /// Refuses a second store that is the first (`first`).
    pub(super) fn check(&self, first: &Store) -> crate::error::Result<()> {
        if self.store.url().trim_end_matches('/') != first.url().trim_end_matches('/') {
            return Ok(());
        }
        let reason = format!(
            "{} is the store the run writes to; name a second store to copy to",
            self.store.url()
        );
        Err(etcd_common::InvalidOption::input("copy_to", reason).into())
    }
}

/// Something the copier did, for the run to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CopyOutcome {
    /// Objects copied and verified (full backups and segments, in order).
    Copied(Vec<String>),
    /// A copy (or a prune) of the second store failed, or a chain was dropped: a warning.
    Failed(String),
    /// The second store's retention deleted these full backups (with their chains).
    Pruned(Vec<String>),
}

/// What the copier did since the last report, and its totals.
#[derive(Debug, Default)]
pub(super) struct CopyReportSince {
    pub(super) outcomes: Vec<CopyOutcome>,
    /// Outcomes not kept (more than [`MAX_OUTCOMES`] between two reports).
    pub(super) dropped_outcomes: u64,
    pub(super) copied_objects: u64,
    pub(super) failures: u64,
    /// When the second store last held everything published.
    pub(super) caught_up_at: Option<DateTime<Utc>>,
    pub(super) pending_chains: usize,
}

#[derive(Default)]
struct Queue {
    /// Chains with publications not yet copied, oldest first, each with the generation of
    /// its last naming (a copy removes it only when it was not named again meanwhile).
    pending: VecDeque<(String, u64)>,
    generation: u64,
    prune_due: bool,
    closing: bool,
    report: CopyReportSince,
}

impl Queue {
    fn outcome(&mut self, outcome: CopyOutcome) {
        if self.report.outcomes.len() < MAX_OUTCOMES {
            self.report.outcomes.push(outcome);
        } else {
            self.report.dropped_outcomes += 1;
        }
    }

    fn failed(&mut self, error: String) {
        self.report.failures += 1;
        self.outcome(CopyOutcome::Failed(error));
    }

    /// Names `base` as grown: appended, or its entry's generation raised.
    fn push(&mut self, base: &str) {
        self.generation += 1;
        let generation = self.generation;
        if let Some(entry) = self.pending.iter_mut().find(|(b, _)| b == base) {
            entry.1 = generation;
            return;
        }
        self.pending.push_back((base.to_string(), generation));
        if self.pending.len() > MAX_PENDING_CHAINS
            && let Some((dropped, _)) = self.pending.pop_front()
        {
            self.failed(format!(
                "more than {MAX_PENDING_CHAINS} chains wait to be copied: the chain of {dropped} is dropped from the queue (`snapshot copy` copies it)"
            ));
        }
        self.report.pending_chains = self.pending.len();
    }

    /// Removes `base` when it was not named again since `generation`.
    fn done(&mut self, base: &str, generation: u64) {
        self.pending
            .retain(|(b, g)| !(b == base && *g == generation));
        self.report.pending_chains = self.pending.len();
    }
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Notify,
}

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut Queue) -> T) -> T {
        // A panic while the lock was held cannot leave the queue half-changed in a way that
        // matters more than stopping the copies: go on with it.
        let mut queue = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut queue)
    }
}

/// The copier of one run: a task copying to the second store, fed by the run.
pub(super) struct CopyTo {
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
    destination: String,
}

impl CopyTo {
    /// Starts copying from `source` to `target` (backups of `cluster`).
    pub(super) fn start(source: &Store, target: &CopyTarget, cluster: MemberId) -> CopyTo {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
        });
        let worker = Worker {
            shared: shared.clone(),
            source: source.clone(),
            target: target.clone(),
            cluster,
        };
        CopyTo {
            shared,
            task: Some(tokio::spawn(worker.run())),
            destination: target.store.url().to_string(),
        }
    }

    /// The second store's URL.
    pub(super) fn destination(&self) -> &str {
        &self.destination
    }

    /// The chain of `base` grew (its full backup or a segment was published): copy it.
    pub(super) fn chain_grew(&self, base: &str) {
        self.shared.with(|q| q.push(base));
        self.shared.wake.notify_one();
    }

    /// Prune the second store once everything waiting is copied (a new chain started).
    pub(super) fn prune_when_copied(&self) {
        self.shared.with(|q| q.prune_due = true);
        self.shared.wake.notify_one();
    }

    /// What happened since the last call.
    pub(super) fn take_report(&self) -> CopyReportSince {
        self.shared.with(|q| {
            let report = &mut q.report;
            CopyReportSince {
                outcomes: std::mem::take(&mut report.outcomes),
                dropped_outcomes: std::mem::take(&mut report.dropped_outcomes),
                copied_objects: report.copied_objects,
                failures: report.failures,
                caught_up_at: report.caught_up_at,
                pending_chains: report.pending_chains,
            }
        })
    }

    /// The run stops: copies what waits within `grace`, then stops the copier (a copy cut
    /// short leaves no manifest: nothing half-copied is listed). Chains still waiting are
    /// reported.
    pub(super) async fn finish(&mut self, grace: Duration) {
        self.shared.with(|q| q.closing = true);
        self.shared.wake.notify_one();
        let Some(mut task) = self.task.take() else {
            return;
        };
        if tokio::time::timeout(grace, &mut task).await.is_err() {
            task.abort();
            let _ = task.await;
            self.shared.with(|q| {
                let waiting: Vec<String> = q.pending.iter().map(|(b, _)| b.clone()).collect();
                q.failed(format!(
                    "stopped before the second store held everything: the chains of {} wait to be copied (the next run copies the chain it continues; `snapshot copy` copies any)",
                    waiting.join(", ")
                ));
            });
        }
    }
}

impl Drop for CopyTo {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

struct Worker {
    shared: Arc<Shared>,
    source: Store,
    target: CopyTarget,
    cluster: MemberId,
}

impl Worker {
    async fn run(self) {
        let mut wait = Duration::from_secs(1);
        loop {
            let (batch, closing) = self
                .shared
                .with(|q| (q.pending.iter().cloned().collect::<Vec<_>>(), q.closing));
            if batch.is_empty() {
                if closing {
                    return;
                }
                if self.shared.with(|q| std::mem::take(&mut q.prune_due)) {
                    self.prune().await;
                    continue;
                }
                self.shared.wake.notified().await;
                continue;
            }
            match self.copy(batch).await {
                Ok(()) => wait = Duration::from_secs(1),
                Err(error) => {
                    self.shared.with(|q| {
                        q.failed(format!(
                            "{error}; the first store is not affected, trying again"
                        ));
                    });
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = self.shared.wake.notified() => {}
                    }
                    wait = (wait * 2).min(MAX_RETRY_WAIT);
                }
            }
        }
    }

    /// Copies each chain of `batch` in turn; the first failure ends the pass.
    async fn copy(&self, batch: Vec<(String, u64)>) -> std::result::Result<(), SnapshotError> {
        for (base, generation) in batch {
            let request = CopyRequest {
                objects: vec![base.clone()],
                dry_run: false,
                read_back: true,
            };
            match copy_backups(&self.source, &self.target.store, &request, &NoProgress).await {
                Ok(report) => {
                    let copied: Vec<String> = report
                        .entries
                        .iter()
                        .map(|e| (&e.object, e.action))
                        .chain(report.segments.iter().map(|s| (&s.object, s.action)))
                        .filter(|(_, action)| *action == CopyAction::Copied)
                        .map(|(object, _)| object.clone())
                        .collect();
                    self.shared.with(|q| {
                        q.done(&base, generation);
                        q.report.copied_objects += copied.len() as u64;
                        if !copied.is_empty() {
                            q.outcome(CopyOutcome::Copied(copied));
                        }
                        if q.pending.is_empty() {
                            q.report.caught_up_at = Some(Utc::now());
                        }
                    });
                }
                // The first store no longer holds it (pruned there): nothing left to copy.
                Err(SnapshotError::InvalidOption(e)) => self.shared.with(|q| {
                    q.done(&base, generation);
                    q.failed(format!("the chain of {base} is not copied: {}", e.reason));
                }),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn prune(&self) {
        if self.target.retention.is_empty() {
            return;
        }
        let request = PruneRequest {
            policy: self.target.retention.clone(),
            cluster: Some(self.cluster),
            orphan_grace: self.target.orphan_grace,
            ..PruneRequest::default()
        };
        let pruned = prune_store(&self.target.store, &request, Utc::now()).await;
        self.shared.with(|q| match pruned {
            Ok(report) if !report.deleted.is_empty() => q.outcome(CopyOutcome::Pruned(
                report.deleted.into_iter().map(|d| d.object).collect(),
            )),
            Ok(_) => {}
            Err(e) => q.failed(format!("pruning: {e}")),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::list_backups;
    use crate::catalog::tests::{local_store, publish_full};
    use crate::delta::publish_segment;

    fn target(store: Store, keep_last: Option<u32>) -> CopyTarget {
        CopyTarget {
            store,
            retention: RetentionPolicy {
                keep_last,
                ..RetentionPolicy::default()
            },
            orphan_grace: Duration::from_secs(3600),
        }
    }

    /// Waits (bounded) until the copier has nothing waiting and reported `failures` or more.
    async fn settled(copy: &CopyTo, failures: u64) -> CopyReportSince {
        let mut all = CopyReportSince::default();
        for _ in 0..500 {
            let report = copy.take_report();
            all.outcomes.extend(report.outcomes);
            all.copied_objects = report.copied_objects;
            all.failures = report.failures;
            all.caught_up_at = report.caught_up_at;
            all.pending_chains = report.pending_chains;
            if all.pending_chains == 0 && all.failures >= failures && all.caught_up_at.is_some() {
                return all;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the copier never settled: {all:?}");
    }

    #[test]
    fn a_chain_named_again_is_one_entry_and_the_oldest_is_dropped_past_the_bound() {
        let mut queue = Queue::default();
        queue.push("a");
        queue.push("b");
        queue.push("a");
        assert_eq!(queue.pending.len(), 2);
        // A copy of "a" started before it was named again does not remove it.
        queue.done("a", 1);
        assert_eq!(queue.pending.len(), 2);
        queue.done("a", 3);
        assert_eq!(queue.pending.len(), 1);
        for i in 0..MAX_PENDING_CHAINS {
            queue.push(&format!("c{i}"));
        }
        assert_eq!(queue.pending.len(), MAX_PENDING_CHAINS);
        assert_eq!(queue.pending.front().unwrap().0, "c0", "b was dropped");
        assert_eq!(queue.report.failures, 1);
        assert!(
            matches!(&queue.report.outcomes[..], [CopyOutcome::Failed(e)] if e.contains("chain of b is dropped")),
            "{:?}",
            queue.report.outcomes
        );
    }

    #[tokio::test]
    async fn a_lost_second_store_is_caught_up_in_order_when_it_returns() {
        let (src_dir, dst_root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let source = local_store(&src_dir);
        let dst_path = dst_root.path().join("second");
        let destination = Store::open(
            &dst_path.display().to_string(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap();
        let mut copy = CopyTo::start(&source, &target(destination.clone(), None), MemberId(0xabc));
        let full = publish_full(&source, 2, 10).await;
        copy.chain_grew(&full);
        publish_segment(&source, &full, 10, 1, (10, 15), &[11]).await;
        copy.chain_grew(&full);
        let report = settled(&copy, 0).await;
        assert_eq!(report.copied_objects, 2, "{report:?}");

        // The second store goes away (a file where its dir was: even root cannot write).
        let away = dst_root.path().join("away");
        std::fs::rename(&dst_path, &away).unwrap();
        std::fs::write(&dst_path, b"not a dir").unwrap();
        publish_segment(&source, &full, 10, 2, (15, 20), &[16]).await;
        copy.chain_grew(&full);
        publish_segment(&source, &full, 10, 3, (20, 25), &[21]).await;
        copy.chain_grew(&full);
        let mut failures = 0;
        for _ in 0..500 {
            failures = copy.take_report().failures;
            if failures > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(failures > 0, "the lost store is reported");
        assert_eq!(copy.take_report().pending_chains, 1);

        // It returns: the missing segments are copied, in order, no hole.
        std::fs::remove_file(&dst_path).unwrap();
        std::fs::rename(&away, &dst_path).unwrap();
        copy.chain_grew(&full);
        let report = settled(&copy, failures).await;
        assert_eq!(report.copied_objects, 4, "{report:?}");
        let copied = list_backups(&destination).await.unwrap();
        let chain = copied.backups[0].chain.as_ref().unwrap();
        assert_eq!((chain.to_revision, chain.continuous), (25, true));
        copy.finish(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn the_second_store_is_pruned_by_its_own_rules_once_everything_is_copied() {
        let (src_dir, dst_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (source, destination) = (local_store(&src_dir), local_store(&dst_dir));
        let mut copy = CopyTo::start(
            &source,
            &target(destination.clone(), Some(1)),
            MemberId(0xabc),
        );
        let first = publish_full(&source, 2, 10).await;
        copy.chain_grew(&first);
        let second = publish_full(&source, 3, 20).await;
        copy.chain_grew(&second);
        settled(&copy, 0).await;
        copy.prune_when_copied();
        let mut pruned = Vec::new();
        for _ in 0..500 {
            for outcome in copy.take_report().outcomes {
                if let CopyOutcome::Pruned(deleted) = outcome {
                    pruned = deleted;
                }
            }
            if !pruned.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(pruned, [first]);
        let left: Vec<String> = list_backups(&destination)
            .await
            .unwrap()
            .backups
            .into_iter()
            .map(|b| b.object)
            .collect();
        assert_eq!(left, [second]);
        assert_eq!(list_backups(&source).await.unwrap().backups.len(), 2);
        copy.finish(Duration::from_secs(5)).await;
    }
}
