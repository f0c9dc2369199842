//! `backup run`'s side of the chain's lease sets (see `lease_looks.rs`): marks that let a
//! waiting set be written, the look at each check, the size cut they can call for.

use std::future::Future;

use chrono::Utc;
use etcd_core::EndpointClient;

use super::super::format::DeltaRecord;
use super::super::lease_looks::list_leases;
use super::super::runner::{Runner, Stop};
use super::super::segment::ChainPosition;
use super::{Ended, FailureReason, Follow, RunEvent, cut, gap};

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// Records a time mark: every change up to `revision` was received; and the look at the
/// leases that waited for it.
pub(super) fn mark(runner: &mut Runner<'_>, follow: &mut Follow, revision: i64) -> Ended {
    let mark = DeltaRecord::Mark {
        revision,
        unix_ms: now_ms(),
    };
    follow.segment.push(&mark).map_err(gap)?;
    let leases = follow.leases.on_recorded(revision);
    write_leases(runner, follow, leases)
}

/// Writes a look at the leases into the segment.
pub(super) fn write_leases(
    runner: &mut Runner<'_>,
    follow: &mut Follow,
    record: Option<DeltaRecord>,
) -> Ended {
    let Some(record) = record else {
        return Ok(());
    };
    follow.segment.push(&record).map_err(gap)?;
    if let DeltaRecord::Leases { revision, leases } = record {
        runner.emit(RunEvent::LeasesRecorded {
            revision,
            leases: leases.len(),
        });
    }
    Ok(())
}

/// Lists the cluster's leases (see `lease_looks.rs`). A failure is reported (at most once a
/// minute) and left to the next check; an answer of another cluster is not used.
pub(super) async fn look_at_leases(
    runner: &mut Runner<'_>,
    follow: &mut Follow,
    client: &EndpointClient,
) -> Ended {
    match list_leases(client, &mut runner.lease_ttls).await {
        Ok((revision, leases, cluster)) => {
            if runner.check_cluster(client.endpoint(), cluster).is_err() {
                return Ok(());
            }
            // Incomplete (a burst of new leases): written at a later check.
            let Some(leases) = leases else {
                return Ok(());
            };
            let record = follow.leases.seen(revision, leases);
            write_leases(runner, follow, record)
        }
        Err(e) => {
            if runner.lease_ttls.report_failure() {
                runner.emit(RunEvent::Failed {
                    reason: FailureReason::Leases,
                    error: format!(
                        "listing the leases on {}: {e}; restores keep the last lease set written",
                        client.endpoint()
                    ),
                });
            }
            Ok(())
        }
    }
}

/// Cuts the segment when lease sets (which come without changes) filled it to its size.
pub(super) async fn cut_if_full<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    chain: &mut ChainPosition,
    follow: &mut Follow,
    stop: &mut Stop<'_, F>,
) -> Ended {
    if follow.segment.raw_bytes() >= runner.request.segment_bytes {
        cut(runner, chain, follow, stop).await?;
    }
    Ok(())
}
