//! One compaction of a chain at a time: `snapshot compact` (and `backup run
//! --compact-after`) claims the chain with a lock object in its `.deltas/` folder,
//! `<full backup's stem>.deltas/compact.lock.json`, before it builds anything, so two
//! compactions of the same chain started together never publish two copies of it.
//!
//! As with `backup run`'s writer lock ([`crate::RunLock`]), stores offer no compare-and-swap
//! here: a claim reads the lock (a live one of another holder: busy), writes ours, and reads
//! it back after a short settle time; of two claims made at the same moment the one written
//! last holds it and the other sees a foreign holder and stops. The holder renews the lock
//! while it works and reads it back once more just before it publishes. A lock is stale when
//! it expired, or when its process is gone from this host (a killed compaction): then it is
//! taken over at once.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use etcd_store::Store;
use serde::{Deserialize, Serialize};

use crate::delta::deltas_prefix;
use crate::delta::{host_name, process_gone, token};
use crate::error::{Result, SnapshotError};

/// The compaction lock format this build writes.
pub const COMPACT_LOCK_FORMAT_VERSION: u32 = 1;

/// File name of the lock inside a chain's `.deltas/` folder.
pub const COMPACT_LOCK_FILE: &str = "compact.lock.json";

/// Name of the compaction lock of the chain of the full backup `full`.
pub fn consolidate_lock_name(full: &str) -> String {
    format!("{}{COMPACT_LOCK_FILE}", deltas_prefix(full))
}

/// Lifetime of a claim without a renewal; it is renewed every third of it.
const TTL: Duration = Duration::from_secs(120);

/// Wait between writing the lock and reading it back, so a competing write has landed.
const SETTLE: Duration = Duration::from_millis(500);

/// One compaction's claim on a chain. Field names are part of the documented schema
/// (`docs/MANIFEST.md`); add fields, never rename them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsolidateLock {
    /// Schema version ([`COMPACT_LOCK_FORMAT_VERSION`]).
    pub format_version: u32,
    /// A random token chosen by the holder.
    pub holder: String,
    /// Host name of the holder.
    pub host: String,
    /// Process ID of the holder.
    pub pid: u32,
    /// The chain's full backup.
    pub full_backup: String,
    /// When the holder last wrote the lock.
    pub renewed_at: DateTime<Utc>,
    /// Until when the claim holds without another renewal.
    pub expires_at: DateTime<Utc>,
}

impl ConsolidateLock {
    /// Whether another compaction may take it over at `now`: it expired, or its process is
    /// gone from this host.
    fn stale(&self, now: DateTime<Utc>) -> bool {
        now >= self.expires_at || process_gone(&self.host, self.pid)
    }

    /// Who holds it, for the message of the compaction that stops.
    pub fn describe(&self) -> String {
        format!(
            "host {}, pid {}, until {}",
            self.host,
            self.pid,
            self.expires_at.format("%Y-%m-%dT%H:%M:%SZ")
        )
    }
}

async fn read(store: &Store, name: &str) -> Result<Option<ConsolidateLock>> {
    match store.get_small(name).await {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| SnapshotError::BadManifest {
                    name: name.to_string(),
                    reason: e.to_string(),
                })
        }
        Err(etcd_store::StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn written(lock: &ConsolidateLock) -> Bytes {
    let mut bytes = serde_json::to_vec_pretty(lock).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// What a claim found.
pub(crate) enum Claim {
    /// The chain is ours to compact until [`ClaimKeeper::release`].
    Held(ClaimKeeper),
    /// Another compaction holds it (who).
    Busy(String),
}

/// A held claim: renewed in the background until released (or dropped: then the lock is
/// deleted in the background too, when a runtime is there to do it).
pub(crate) struct ClaimKeeper {
    store: Store,
    name: String,
    holder: String,
    renewer: Option<tokio::task::JoinHandle<()>>,
}

/// Claims the chain of `full` in `store` for one compaction.
pub(crate) async fn claim(store: &Store, full: &str) -> Result<Claim> {
    let name = consolidate_lock_name(full);
    if let Some(other) = read(store, &name).await?
        && !other.stale(Utc::now())
    {
        return Ok(Claim::Busy(other.describe()));
    }
    let now = Utc::now();
    let ours = ConsolidateLock {
        format_version: COMPACT_LOCK_FORMAT_VERSION,
        holder: token(),
        host: host_name(),
        pid: std::process::id(),
        full_backup: full.to_string(),
        renewed_at: now,
        expires_at: now + chrono::Duration::from_std(TTL).unwrap_or(chrono::Duration::MAX),
    };
    store.put_small(&name, written(&ours)).await?;
    tokio::time::sleep(SETTLE).await;
    match read(store, &name).await? {
        Some(back) if back.holder == ours.holder => {}
        Some(other) => return Ok(Claim::Busy(other.describe())),
        None => {
            return Ok(Claim::Busy(
                "a compaction that claimed it at the same moment and finished".into(),
            ));
        }
    }
    let renewer = tokio::spawn(renew_loop(
        store.clone(),
        name.clone(),
        Arc::new(ours.clone()),
    ));
    Ok(Claim::Held(ClaimKeeper {
        store: store.clone(),
        name,
        holder: ours.holder,
        renewer: Some(renewer),
    }))
}

/// Rewrites the lock with a new expiry every third of its lifetime while it is still ours.
async fn renew_loop(store: Store, name: String, ours: Arc<ConsolidateLock>) {
    loop {
        tokio::time::sleep(TTL / 3).await;
        match read(&store, &name).await {
            Ok(Some(lock)) if lock.holder == ours.holder => {}
            // Taken over or removed: the check before publishing will see it.
            Ok(_) => return,
            Err(_) => continue,
        }
        let now = Utc::now();
        let mut lock = (*ours).clone();
        lock.renewed_at = now;
        lock.expires_at = now + chrono::Duration::from_std(TTL).unwrap_or(chrono::Duration::MAX);
        let _ = store.put_small(&name, written(&lock)).await;
    }
}

impl ClaimKeeper {
    /// `None` while the claim is still ours; else who holds the chain now.
    pub(crate) async fn lost_to(&self) -> Result<Option<String>> {
        Ok(match read(&self.store, &self.name).await? {
            Some(lock) if lock.holder == self.holder => None,
            Some(other) => Some(other.describe()),
            None => Some("nobody: the lock was removed".into()),
        })
    }

    /// Stops renewing and deletes the lock when it is still ours.
    pub(crate) async fn release(mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
        release(&self.store, &self.name, &self.holder).await;
    }
}

async fn release(store: &Store, name: &str, holder: &str) {
    if let Ok(Some(lock)) = read(store, name).await
        && lock.holder == holder
    {
        let _ = store.delete(name).await;
    }
}

impl Drop for ClaimKeeper {
    fn drop(&mut self) {
        let Some(renewer) = self.renewer.take() else {
            return;
        };
        renewer.abort();
        // A compaction that failed: its lock goes too (a process that exits first leaves it
        // to expire, or to be taken over at once on this host, its process being gone).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (store, name, holder) =
                (self.store.clone(), self.name.clone(), self.holder.clone());
            runtime.spawn(async move { release(&store, &name, &holder).await });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::local_store;

    const FULL: &str = "etcd-abc/20261130T010000.000Z-rev10-0000000a.db.zst";

    async fn put(store: &Store, lock: &ConsolidateLock) {
        store
            .put_small(&consolidate_lock_name(FULL), written(lock))
            .await
            .unwrap();
    }

    fn other(host: String, pid: u32, expires_in: i64) -> ConsolidateLock {
        let now = Utc::now();
        ConsolidateLock {
            format_version: COMPACT_LOCK_FORMAT_VERSION,
            holder: "other".into(),
            host,
            pid,
            full_backup: FULL.into(),
            renewed_at: now,
            expires_at: now + chrono::Duration::seconds(expires_in),
        }
    }

    #[test]
    fn the_lock_lives_in_its_chains_folder() {
        assert_eq!(
            consolidate_lock_name(FULL),
            "etcd-abc/20261130T010000.000Z-rev10-0000000a.deltas/compact.lock.json"
        );
    }

    #[tokio::test]
    async fn of_two_claims_at_once_one_holds_and_a_live_lock_is_busy_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let (a, b) = tokio::join!(claim(&store, FULL), claim(&store, FULL));
        let (a, b) = (a.unwrap(), b.unwrap());
        let held = match (a, b) {
            (Claim::Held(k), Claim::Busy(who)) | (Claim::Busy(who), Claim::Held(k)) => {
                assert!(
                    who.contains(&format!("pid {}", std::process::id())),
                    "{who}"
                );
                k
            }
            _ => panic!("exactly one of two claims at once holds the chain"),
        };
        assert_eq!(held.lost_to().await.unwrap(), None);
        assert!(matches!(claim(&store, FULL).await.unwrap(), Claim::Busy(_)));
        held.release().await;
        assert!(
            store
                .head(&consolidate_lock_name(FULL))
                .await
                .unwrap()
                .is_none()
        );
        let again = claim(&store, FULL).await.unwrap();
        assert!(matches!(again, Claim::Held(_)), "free once released");
    }

    #[tokio::test]
    async fn a_stale_lock_is_taken_over_and_a_taken_claim_knows_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        // Expired; then live but left by a process of this host that is gone.
        put(&store, &other("elsewhere".into(), 1, -1)).await;
        assert!(matches!(claim(&store, FULL).await.unwrap(), Claim::Held(_)));
        put(&store, &other(host_name(), u32::MAX - 1, 600)).await;
        let held = match claim(&store, FULL).await.unwrap() {
            Claim::Held(k) => k,
            Claim::Busy(who) => panic!("a dead process's lock is stale: {who}"),
        };
        // Another host's live lock is not, and a claim that lost its lock says to whom.
        put(&store, &other("elsewhere".into(), 1, 600)).await;
        assert!(
            held.lost_to()
                .await
                .unwrap()
                .is_some_and(|who| who.contains("host elsewhere, pid 1"))
        );
        match claim(&store, FULL).await.unwrap() {
            Claim::Busy(who) => assert!(who.contains("host elsewhere"), "{who}"),
            Claim::Held(_) => panic!("a live lock of another host is busy"),
        }
        // Releasing a claim that was taken over leaves the other's lock alone.
        held.release().await;
        assert!(
            store
                .head(&consolidate_lock_name(FULL))
                .await
                .unwrap()
                .is_some()
        );
    }
}
