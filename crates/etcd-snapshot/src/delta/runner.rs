//! The state one `backup run` shares between its steps, and the steps that do not follow the
//! watch: reporting, the checks before a publication (lock, full backup), taking a full
//! backup (bounded by the stop grace), pruning and choosing a member.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::Utc;
use etcd_core::{ClusterConfig, EndpointClient, MemberId};
use etcd_store::Store;
use futures::future::FusedFuture;

use super::compact_after::Compactions;
use super::copy_to::{COPY_STOP_GRACE, CopyOutcome, CopyTo};
use super::events::{FailureReason, RunEvent, RunObserver, RunState};
use super::history::foreign_cluster;
use super::lock::{LockCheck, LockKeeper};
use super::metrics::RunMetrics;
use super::run::RunRequest;
use crate::error::{Result, SnapshotError};
use crate::manifest::Manifest;
use crate::progress::NoProgress;
use crate::prune::{PruneRequest, prune_store};
use crate::save::{SaveRequest, SaveResult, save_snapshot};

/// How much older than a running compaction an upload its run's prune spares may be: the
/// store dates objects by its own clock.
const COMPACTION_CLOCK_MARGIN: Duration = Duration::from_secs(60);

/// The orphan grace of a run's own prune: the configured one or, while a compaction of the run
/// has been running for `compacting`, at least that plus [`COMPACTION_CLOCK_MARGIN`]: the copy
/// it uploads is an object without a manifest until it is verified, and no older than that.
fn own_prune_grace(configured: Duration, compacting: Option<Duration>) -> Duration {
    match compacting {
        Some(running) => configured.max(running + COMPACTION_CLOCK_MARGIN),
        None => configured,
    }
}

/// Everything one run shares between its steps.
pub(super) struct Runner<'a> {
    pub(super) config: &'a ClusterConfig,
    pub(super) store: &'a Store,
    pub(super) request: &'a RunRequest,
    pub(super) observer: &'a dyn RunObserver,
    pub(super) state: RunState,
    /// The metrics the state is copied into (the textfile and the endpoint read them).
    pub(super) metrics: std::sync::Arc<RunMetrics>,
    /// The store's writer lock for this cluster's chain, once taken.
    pub(super) lock: Option<LockKeeper>,
    /// Set when another holder took the lock over: the run stops with this error.
    pub(super) taken_over: Option<String>,
    /// The cluster being backed up (0 until known): an answer of another cluster is never
    /// used.
    pub(super) cluster: MemberId,
    /// The chain's full backup and the size its manifest gives its object.
    pub(super) full_size: Option<(String, u64)>,
    /// `--compact-after`: the chain's compactions in the background.
    pub(super) compactions: Option<Compactions>,
    /// The leases' granted TTLs, learned once for the whole run.
    pub(super) lease_ttls: super::lease_looks::LeaseTtls,
    /// `--copy-to`: the copies to the second store, in the background.
    pub(super) copy_to: Option<CopyTo>,
}

/// What the check before a publication found.
pub(super) enum Guard {
    /// Publish.
    Go,
    /// The chain's full backup is gone.
    Lost,
    /// Another run holds the lock now.
    TakenOver(String),
    /// It could not be checked (the store fails): count as a failed attempt.
    Retry(String),
}

/// The stop signal, fused: polling it again after it fired is harmless.
pub(super) type Stop<'s, F> = Pin<&'s mut futures::future::Fuse<F>>;

/// Waits `delay` unless stopped first; `true` when stopped.
pub(super) async fn pause<F: Future<Output = ()>>(stop: &mut Stop<'_, F>, delay: Duration) -> bool {
    if stop.is_terminated() {
        return true;
    }
    tokio::select! {
        () = &mut *stop => true,
        () = tokio::time::sleep(delay) => false,
    }
}

impl Runner<'_> {
    pub(super) fn emit(&mut self, event: RunEvent) {
        match &event {
            RunEvent::Failed { reason, .. } => self.count_failure(*reason),
            RunEvent::Locked { .. } => self.state.lock_held = true,
            _ => {}
        }
        // The metrics file first: whoever reads the event finds the metrics showing it.
        self.write_metrics();
        self.observer.on_event(&event);
    }

    /// `--copy-to`: `base`'s chain grew (a full backup or segment published): copy it.
    pub(super) fn copy_chain(&self, base: &str) {
        if let Some(copy) = &self.copy_to {
            copy.chain_grew(base);
        }
    }

    /// `--copy-to`: reports what the copies did since the last report (warnings, never
    /// failures of the run) and copies their totals into the state.
    pub(super) fn report_copies(&mut self) {
        let Some(copy) = &self.copy_to else { return };
        let report = copy.take_report();
        let destination = copy.destination().to_string();
        self.state.copied_objects = report.copied_objects;
        self.state.copy_failures = report.failures;
        self.state.copy_caught_up_at = report.caught_up_at;
        self.state.copy_pending_chains = report.pending_chains as u64;
        let mut events: Vec<RunEvent> = report
            .outcomes
            .into_iter()
            .map(|outcome| match outcome {
                CopyOutcome::Copied(objects) => RunEvent::Copied {
                    destination: destination.clone(),
                    objects,
                },
                CopyOutcome::Failed(error) => RunEvent::CopyFailed {
                    destination: destination.clone(),
                    error,
                },
                CopyOutcome::Pruned(deleted) => RunEvent::CopyPruned {
                    destination: destination.clone(),
                    deleted,
                },
            })
            .collect();
        if report.dropped_outcomes > 0 {
            events.push(RunEvent::CopyFailed {
                destination: destination.clone(),
                error: format!(
                    "{} more reports of the copier were not kept (see the copy metrics)",
                    report.dropped_outcomes
                ),
            });
        }
        // Without events, the totals reach the metrics file at the run's next write.
        for event in events {
            self.emit(event);
        }
    }

    /// The run stops: what waits is copied within the stop grace (at most
    /// [`COPY_STOP_GRACE`]), then the last reports.
    pub(super) async fn finish_copies(&mut self) {
        let Some(copy) = &mut self.copy_to else {
            return;
        };
        copy.finish(self.request.stop_grace.min(COPY_STOP_GRACE))
            .await;
        self.report_copies();
        self.copy_to = None;
    }

    fn count_failure(&mut self, reason: FailureReason) {
        self.state.failures += 1;
        *self.state.failures_by_reason.entry(reason).or_default() += 1;
    }

    /// Copies the state into the metrics, and writes the metrics file (when asked for).
    pub(super) fn write_metrics(&mut self) {
        self.metrics.update(&self.state);
        let Some(path) = &self.request.metrics_file else {
            return;
        };
        let text = self.metrics.render(Utc::now());
        if let Err(e) = etcd_common::write_file_atomically(path, text.as_bytes(), 0o644, None) {
            let event = RunEvent::Failed {
                reason: FailureReason::MetricsFile,
                error: format!("cannot write the metrics file: {e}"),
            };
            self.count_failure(FailureReason::MetricsFile);
            self.metrics.update(&self.state);
            self.observer.on_event(&event);
        }
    }

    /// The check before anything is published: the lock is still ours and (with `base`) the
    /// chain's full backup is still in the store: its manifest, and its object with the size
    /// the manifest gives (one HEAD each).
    pub(super) async fn guard(&mut self, base: Option<&str>) -> Guard {
        if let Some(error) = self.lock.as_ref().and_then(LockKeeper::take_renew_error) {
            self.emit(RunEvent::Failed {
                reason: FailureReason::Lock,
                error,
            });
        }
        if let Some(lock) = &self.lock {
            match lock.check().await {
                LockCheck::Held => {}
                LockCheck::TakenOver(message) => {
                    self.state.lock_held = false;
                    self.taken_over = Some(message.clone());
                    return Guard::TakenOver(message);
                }
                LockCheck::Unknown(message) => return Guard::Retry(message),
            }
        }
        let Some(base) = base else {
            return Guard::Go;
        };
        let retry = |e: &dyn std::fmt::Display| {
            Guard::Retry(format!(
                "cannot check that the full backup {base} is still there: {e}"
            ))
        };
        let manifest_name = Manifest::name_for(base);
        match self.store.head(&manifest_name).await {
            Ok(Some(_)) => {}
            Ok(None) => return Guard::Lost,
            Err(e) => return retry(&e),
        }
        let size = match &self.full_size {
            Some((name, size)) if name == base => *size,
            _ => match self.store.get_small(&manifest_name).await {
                Ok(bytes) => match Manifest::from_json(&manifest_name, &bytes) {
                    Ok(manifest) => {
                        self.full_size = Some((base.to_string(), manifest.object_size));
                        manifest.object_size
                    }
                    Err(e) => return retry(&e),
                },
                Err(etcd_store::StoreError::NotFound { .. }) => return Guard::Lost,
                Err(e) => return retry(&e),
            },
        };
        match self.store.head(base).await {
            Ok(Some(object)) if object.size == size => Guard::Go,
            Ok(_) => Guard::Lost,
            Err(e) => retry(&e),
        }
    }

    /// Records the chains being written in the lock (retention keeps them).
    pub(super) async fn lock_chains(&mut self, full: Option<&str>, previous: Option<&str>) {
        let Some(lock) = &self.lock else { return };
        match lock.set_chains(full, previous).await {
            Ok(()) => {}
            Err(SnapshotError::RunLocked { reason }) => {
                self.state.lock_held = false;
                self.taken_over = Some(reason);
            }
            Err(e) => self.emit(RunEvent::Failed {
                reason: FailureReason::Lock,
                error: format!("writing the lock: {e}"),
            }),
        }
    }

    /// Takes a full backup and reports it. Asked to stop meanwhile, it finishes the backup
    /// within the stop grace, or abandons it (nothing is left behind) past it.
    /// Takes a full backup; `follows`: the full backup whose chain the run follows without a
    /// break while it takes this one (recorded in the manifest: the two are one history).
    pub(super) async fn save_full<F: Future<Output = ()>>(
        &mut self,
        stop: &mut Stop<'_, F>,
        follows: Option<crate::manifest::Follows>,
    ) -> Result<SaveResult> {
        if let Guard::TakenOver(reason) = self.guard(None).await {
            return Err(SnapshotError::RunLocked { reason });
        }
        let request: &RunRequest = self.request;
        let save = SaveRequest {
            follows,
            ..request.save.clone()
        };
        // Boxed, so that it can be dropped (its upload abandoned) before the run stops.
        let mut saving = Box::pin(save_snapshot(self.config, self.store, &save, &NoProgress));
        let saved = if stop.is_terminated() {
            None
        } else {
            tokio::select! {
                saved = &mut saving => Some(saved),
                () = &mut *stop => None,
            }
        };
        let saved = match saved {
            Some(saved) => saved,
            None => {
                let grace = request.stop_grace.as_secs();
                self.emit(RunEvent::Stopping {
                    reason: format!(
                        "finishing the full backup in progress first (at most {grace} s)"
                    ),
                });
                match tokio::time::timeout(request.stop_grace, &mut saving).await {
                    Ok(saved) => saved,
                    Err(_) => {
                        drop(saving);
                        // The dropped upload removed its temporary file at once; an object
                        // store's multipart upload may still be aborting in the background.
                        etcd_store::dropped_uploads_settled(Duration::from_secs(10)).await;
                        let reason = format!(
                            "the full backup did not finish within {grace} s of the stop request; it was abandoned (its upload removed)"
                        );
                        self.emit(RunEvent::Stopping {
                            reason: reason.clone(),
                        });
                        return Err(SnapshotError::Codec {
                            operation: "full backup",
                            reason,
                        });
                    }
                }
            }
        };
        let saved = saved.and_then(|full| {
            match foreign_cluster(
                &full.manifest.endpoint,
                full.manifest.cluster_id,
                self.cluster,
            ) {
                // Stored in that cluster's own folder (a backup of it), never continued here.
                Some(why) if self.cluster.0 != 0 => Err(SnapshotError::NoSource {
                    reason: format!(
                        "the full backup {} was taken from {why}",
                        full.manifest.object
                    ),
                }),
                _ => Ok(full),
            }
        });
        match saved {
            Ok(full) => {
                self.state.last_full_at = Some(full.manifest.completed_at);
                self.state.last_full_revision = full.manifest.revision;
                self.state.last_full_duration_seconds = full.duration_seconds;
                self.state.last_full_bytes = full.manifest.object_size;
                self.state.full_backups += 1;
                self.state.full_bytes_stored += full.manifest.object_size;
                self.copy_chain(&full.manifest.object);
                self.emit(RunEvent::FullSaved {
                    object: full.manifest.object.clone(),
                    revision: full.manifest.revision,
                });
                Ok(full)
            }
            Err(e) => {
                let reason = match e {
                    SnapshotError::TrailerMismatch { .. }
                    | SnapshotError::Truncated { .. }
                    | SnapshotError::VerifyFailed { .. } => FailureReason::Verification,
                    _ => FailureReason::FullBackup,
                };
                self.emit(RunEvent::Failed {
                    reason,
                    error: format!("full backup: {e}"),
                });
                Err(e)
            }
        }
    }

    /// Applies the retention rules, between two chains (never while a chain being written
    /// could lose its full backup).
    pub(super) async fn prune(&mut self) {
        if let Some(copy) = &self.copy_to {
            copy.prune_when_copied();
        }
        if self.request.retention.is_empty() {
            return;
        }
        // Only this cluster's folder, unless asked for all: another cluster sharing the
        // store keeps its backups whatever this run's rules say.
        let cluster = match (&self.lock, self.request.all_clusters) {
            (Some(lock), false) => Some(lock.cluster()),
            _ => None,
        };
        let orphan_grace = own_prune_grace(
            self.request.orphan_grace,
            self.compactions.as_ref().and_then(Compactions::running_for),
        );
        let request = PruneRequest {
            policy: self.request.retention.clone(),
            cluster,
            orphan_grace,
            dry_run: false,
            ..PruneRequest::default()
        };
        let pruned = prune_store(self.store, &request, Utc::now()).await;
        match pruned {
            Ok(report) if !report.deleted.is_empty() => self.emit(RunEvent::Pruned {
                deleted: report.deleted.into_iter().map(|d| d.object).collect(),
            }),
            Ok(_) => {}
            Err(e) => self.emit(RunEvent::Failed {
                reason: FailureReason::Prune,
                error: format!("prune: {e}"),
            }),
        }
    }

    /// A member of the cluster being backed up that answers a linearizable read:
    /// `preferred` first, then the others in turn, `avoid` (the one that just failed) last.
    /// A member of another cluster is skipped (reported).
    pub(super) async fn connect(
        &mut self,
        preferred: Option<&str>,
        avoid: Option<&str>,
    ) -> std::result::Result<EndpointClient, String> {
        let mut order: Vec<String> = preferred
            .filter(|p| Some(*p) != avoid)
            .map(str::to_string)
            .into_iter()
            .collect();
        let endpoints = self.config.resolve_endpoints().await.unwrap_or_default();
        let start = avoid
            .and_then(|a| endpoints.iter().position(|e| e == a))
            .map_or(0, |i| i + 1);
        for i in 0..endpoints.len() {
            let endpoint = &endpoints[(start + i) % endpoints.len()];
            if Some(endpoint.as_str()) != avoid && !order.contains(endpoint) {
                order.push(endpoint.clone());
            }
        }
        order.extend(avoid.map(str::to_string));
        let mut last_error = None;
        for endpoint in order {
            match self.config.connect_endpoint(&endpoint).await {
                Ok(client) => match self.header(&client).await {
                    Ok(_) => return Ok(client),
                    Err(e) => last_error = Some(e),
                },
                Err(e) => last_error = Some(e.to_string()),
            }
        }
        match last_error {
            Some(e) if self.cluster.0 != 0 => Err(format!(
                "no member of cluster {} answers (last: {e}); trying again",
                self.cluster
            )),
            Some(e) => Err(e),
            None => match self.config.connect_any().await {
                Ok(client) => self.header(&client).await.map(|_| client),
                Err(e) => Err(e.to_string()),
            },
        }
    }

    /// [`store_header`], refused (and reported) when it comes from another cluster.
    pub(super) async fn header(
        &mut self,
        client: &EndpointClient,
    ) -> std::result::Result<StoreHeader, String> {
        let header = store_header(client).await.map_err(|e| e.to_string())?;
        self.check_cluster(client.endpoint(), header.cluster)?;
        Ok(header)
    }

    /// `Err` (reported) when `cluster`, from an answer of `endpoint`, is not the run's.
    pub(super) fn check_cluster(
        &mut self,
        endpoint: &str,
        cluster: MemberId,
    ) -> std::result::Result<(), String> {
        match foreign_cluster(endpoint, cluster, self.cluster) {
            Some(why) if self.cluster.0 != 0 => {
                self.emit(RunEvent::Failed {
                    reason: FailureReason::Watch,
                    error: why.clone(),
                });
                Err(why)
            }
            _ => Ok(()),
        }
    }
}

/// What a linearizable read's header says: the store revision, the member that answered and
/// its cluster.
pub(super) struct StoreHeader {
    pub(super) revision: i64,
    pub(super) member: MemberId,
    pub(super) cluster: MemberId,
}

pub(super) async fn store_header(client: &EndpointClient) -> etcd_core::Result<StoreHeader> {
    let response = client
        .call("read revision", |mut c| async move {
            c.get(
                vec![0u8],
                Some(etcd_client::GetOptions::new().with_count_only()),
            )
            .await
        })
        .await?;
    let header = response.header();
    Ok(StoreHeader {
        revision: header.map(|h| h.revision()).unwrap_or_default(),
        member: MemberId(header.map(|h| h.member_id()).unwrap_or_default()),
        cluster: MemberId(header.map(|h| h.cluster_id()).unwrap_or_default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runs_own_prune_spares_what_a_running_compaction_may_be_uploading() {
        let none = Duration::ZERO;
        assert_eq!(own_prune_grace(none, None), none);
        let running = Duration::from_secs(5);
        assert_eq!(
            own_prune_grace(none, Some(running)),
            running + COMPACTION_CLOCK_MARGIN
        );
        let hour = Duration::from_secs(3600);
        assert_eq!(own_prune_grace(hour, Some(running)), hour);
        assert_eq!(own_prune_grace(hour, None), hour);
    }
}
