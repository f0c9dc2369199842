//! The leases of a chain. etcd's watch carries key changes only: a lease granted or revoked
//! with no key change makes no event, and a revocation's deletions do not say they were one.
//! So `backup run` lists the cluster's leases at every check (one `LeaseLeases` call, plus a
//! `LeaseTimeToLive` for each lease it has not met before, for its granted TTL) and writes the
//! set into the segment, with the revision the member answered at, whenever it differs from
//! the set written before in the chain (the first look of each chain is always written).
//!
//! A look is written once every change up to its revision is in the segment, so a replay
//! reads the sets in revision order beside the changes, and a point-in-time restore at `R`
//! holds the leases of the last look at or before `R` (plus any lease a key live at `R`
//! uses). The guarantee: the leases at `R` as `backup run` last saw them while the cluster
//! was at `R`; a lease granted and revoked between two looks (`--check-every`, 1 s) with no
//! key is never seen.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::StreamExt;

use etcd_core::{EndpointClient, MemberId};

use super::format::DeltaRecord;

/// The granted TTLs `backup run` learned, kept for the whole run (a new chain does not ask
/// again): each lease's is asked when it is first listed, and asked again in turn (a few per
/// look) so a lease ID revoked and granted again with another TTL is noticed.
#[derive(Debug, Default)]
pub(super) struct LeaseTtls {
    /// Granted TTL of each lease of the last look.
    ttls: HashMap<i64, i64>,
    /// Leases listed but gone when their TTL was asked (revoked meanwhile): left out.
    gone: HashSet<i64>,
    /// The known lease asked again last; the next look goes on after it.
    refreshed_after: i64,
    /// When a failure to list was last reported (reported at most once a minute).
    reported_at: Option<std::time::Instant>,
}

impl LeaseTtls {
    /// Whether a failure to list the leases is to be reported now: at most once a minute.
    pub(super) fn report_failure(&mut self) -> bool {
        let now = std::time::Instant::now();
        let quiet = self
            .reported_at
            .is_some_and(|at| now.duration_since(at) < std::time::Duration::from_secs(60));
        if !quiet {
            self.reported_at = Some(now);
        }
        !quiet
    }

    /// The granted TTL of `id` when a look met it before.
    fn known_ttl(&self, id: i64) -> Option<i64> {
        self.ttls.get(&id).copied()
    }

    /// Keeps the TTLs of `leases` only (the last look's).
    fn keep_only(&mut self, leases: &BTreeMap<i64, i64>) {
        self.ttls.retain(|id, _| leases.contains_key(id));
        self.gone.clear();
    }

    /// Up to `count` known leases of `listed` to ask again, in turn (sorted IDs, wrapping).
    fn due_again(&mut self, listed: &[i64], count: usize) -> Vec<i64> {
        let mut known: Vec<i64> = listed
            .iter()
            .copied()
            .filter(|id| self.ttls.contains_key(id))
            .collect();
        known.sort_unstable();
        let start = known.partition_point(|id| *id <= self.refreshed_after);
        let due: Vec<i64> = known[start..]
            .iter()
            .chain(&known[..start])
            .take(count)
            .copied()
            .collect();
        if let Some(last) = due.last() {
            self.refreshed_after = *last;
        }
        due
    }
}

/// The lease sets of one chain: the last written, and a look waiting for its revision.
#[derive(Debug, Default)]
pub(super) struct LeaseLooks {
    /// The set last written in this chain.
    written: Option<BTreeMap<i64, i64>>,
    /// A look not yet written: its revision is past the changes recorded so far.
    pending: Option<(i64, BTreeMap<i64, i64>)>,
    /// Every change up to this revision is in the chain.
    recorded: i64,
}

impl LeaseLooks {
    /// Nothing seen yet, in a chain whose changes up to `covered` are published.
    pub(super) fn new(covered: i64) -> Self {
        LeaseLooks {
            recorded: covered,
            ..LeaseLooks::default()
        }
    }

    /// A look answered at `revision`: the record to write now, if its revision is recorded
    /// already and the set differs from the last written; otherwise it waits (a later look
    /// replaces it).
    pub(super) fn seen(
        &mut self,
        revision: i64,
        leases: BTreeMap<i64, i64>,
    ) -> Option<DeltaRecord> {
        self.pending = Some((revision, leases));
        self.flush()
    }

    /// Every change up to `revision` is in the segment (a mark, or a change past it about to
    /// be added): the waiting look to write, if any, so sets stay in revision order.
    pub(super) fn on_recorded(&mut self, revision: i64) -> Option<DeltaRecord> {
        self.recorded = self.recorded.max(revision);
        self.flush()
    }

    fn flush(&mut self) -> Option<DeltaRecord> {
        let (revision, _) = self.pending.as_ref()?;
        if *revision > self.recorded {
            return None;
        }
        let (revision, leases) = self.pending.take()?;
        if self.written.as_ref() == Some(&leases) {
            return None;
        }
        let record = DeltaRecord::Leases {
            revision,
            leases: leases.iter().map(|(id, ttl)| (*id, *ttl)).collect(),
        };
        self.written = Some(leases);
        Some(record)
    }
}

/// At most this many leases met for the first time are asked their TTL in one look (16 at a
/// time): a burst of thousands of new leases is learned over a few checks instead of holding
/// up the watch loop; the look is written once every lease of it is known.
const NEW_LEASES_PER_LOOK: usize = 1024;

/// A lease's granted TTL as [`granted_ttl`] answers it.
type TtlAnswer = etcd_core::Result<(Option<i64>, MemberId)>;

/// Known leases asked their TTL again at each look, in turn.
const KNOWN_LEASES_PER_LOOK: usize = 64;

/// The cluster's leases now, with their granted TTLs, and the revision and cluster the
/// member answered with; `None` for the set while more new leases were met than one look
/// asks about (their TTLs learned so far are kept for the next look). A lease revoked
/// between the list and its TTL lookup is left out.
pub(super) async fn list_leases(
    client: &EndpointClient,
    ttls: &mut LeaseTtls,
) -> etcd_core::Result<(i64, Option<BTreeMap<i64, i64>>, MemberId)> {
    let response = client
        .call("lease list", |mut c| async move { c.leases().await })
        .await?;
    let header = response.header();
    let revision = header.map(|h| h.revision()).unwrap_or_default();
    let cluster = MemberId(header.map(|h| h.cluster_id()).unwrap_or_default());
    let ids: Vec<i64> = response.leases().iter().map(|l| l.id()).collect();
    let unknown: Vec<i64> = ids
        .iter()
        .copied()
        .filter(|id| ttls.known_ttl(*id).is_none() && !ttls.gone.contains(id))
        .collect();
    let complete = unknown.len() <= NEW_LEASES_PER_LOOK;
    let mut ask: Vec<i64> = unknown.into_iter().take(NEW_LEASES_PER_LOOK).collect();
    ask.extend(ttls.due_again(&ids, KNOWN_LEASES_PER_LOOK));
    let asked: Vec<(i64, TtlAnswer)> = futures::stream::iter(ask)
        .map(|id| async move { (id, granted_ttl(client, id).await) })
        .buffer_unordered(16)
        .collect()
        .await;
    for (id, answer) in asked {
        match answer? {
            (Some(ttl), _) => {
                ttls.ttls.insert(id, ttl);
            }
            (None, _) => {
                ttls.ttls.remove(&id);
                ttls.gone.insert(id);
            }
        }
    }
    if !complete {
        return Ok((revision, None, cluster));
    }
    let leases: BTreeMap<i64, i64> = ids
        .iter()
        .filter_map(|id| ttls.known_ttl(*id).map(|ttl| (*id, ttl)))
        .collect();
    ttls.keep_only(&leases);
    Ok((revision, Some(leases), cluster))
}

/// A lease's granted TTL: `Some(ttl)`, or `None` once it is gone (it can never be learned);
/// an error when etcd could not be asked.
pub(super) async fn granted_ttl(
    client: &EndpointClient,
    id: i64,
) -> etcd_core::Result<(Option<i64>, MemberId)> {
    let response = client
        .call("lease time-to-live", |mut c| async move {
            c.lease_time_to_live(id, None).await
        })
        .await?;
    let cluster = MemberId(
        response
            .header()
            .map(|h| h.cluster_id())
            .unwrap_or_default(),
    );
    let ttl = (response.ttl() >= 0 && response.granted_ttl() > 0).then(|| response.granted_ttl());
    Ok((ttl, cluster))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(leases: &[(i64, i64)]) -> BTreeMap<i64, i64> {
        leases.iter().copied().collect()
    }

    #[test]
    fn a_look_is_written_once_its_revision_is_recorded_and_only_when_it_changed() {
        let mut looks = LeaseLooks::new(10);
        // The first look of a chain is written, even with no lease.
        assert_eq!(
            looks.seen(10, set(&[])),
            Some(DeltaRecord::Leases {
                revision: 10,
                leases: vec![]
            })
        );
        assert_eq!(looks.seen(10, set(&[])), None, "unchanged");
        // Answered at 12 while only 11 is recorded: waits for 12.
        assert_eq!(looks.seen(12, set(&[(7, 30)])), None);
        assert_eq!(looks.on_recorded(11), None);
        assert_eq!(
            looks.on_recorded(12),
            Some(DeltaRecord::Leases {
                revision: 12,
                leases: vec![(7, 30)]
            })
        );
        assert_eq!(looks.on_recorded(13), None, "written once");
        // A later look replaces one still waiting.
        assert_eq!(looks.seen(20, set(&[(7, 30), (8, 5)])), None);
        assert_eq!(looks.seen(21, set(&[(8, 5)])), None);
        assert_eq!(
            looks.on_recorded(25),
            Some(DeltaRecord::Leases {
                revision: 21,
                leases: vec![(8, 5)]
            })
        );
    }

    #[test]
    fn known_leases_are_asked_again_in_turn() {
        let mut ttls = LeaseTtls::default();
        for id in [3, 5, 7, 9] {
            ttls.ttls.insert(id, 60);
        }
        let listed = [9, 3, 5, 7, 11];
        assert_eq!(ttls.due_again(&listed, 3), vec![3, 5, 7]);
        assert_eq!(ttls.due_again(&listed, 3), vec![9, 3, 5]);
        assert_eq!(ttls.due_again(&listed, 10), vec![7, 9, 3, 5]);
        ttls.keep_only(&set(&[(5, 60)]));
        assert_eq!(ttls.known_ttl(3), None);
        assert_eq!(ttls.known_ttl(5), Some(60));
    }
}
