//! Taking, renewing, checking and releasing `backup run`'s writer lock in the store
//! ([`RunLock`], `etcd-<cluster>/backup-run.lock.json`).
//!
//! Stores offer no compare-and-swap through etcd-store, so a claim is made by reading the lock
//! (refusing while another holder's is live), writing ours, and reading it back after a short
//! settle time: of two runs that start at the same moment, the one whose write landed last
//! keeps the lock, and the other sees a foreign holder at its read-back or, at the latest, at
//! the check before its next publication, and stops. A background task renews the lock every
//! third of its lifetime; a killed holder's lock simply expires (or, on the same host, is
//! taken over at once once its process is gone).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use etcd_core::MemberId;
use etcd_store::Store;

use crate::error::{Result, SnapshotError};
use crate::run_lock::{RUN_LOCK_FORMAT_VERSION, RunLock, run_lock_name};

/// The lock's lifetime for a run publishing every `delta_every`: three publication intervals,
/// and at least a minute (so a store that is slow for a moment does not lose the lock).
pub(crate) fn lock_ttl(delta_every: Duration) -> Duration {
    (delta_every * 3).max(Duration::from_secs(60))
}

/// Wait between writing the lock and reading it back, so a competing write that was in
/// flight has landed.
const SETTLE: Duration = Duration::from_millis(500);

/// What the check before a publication found.
pub(crate) enum LockCheck {
    /// The lock is ours.
    Held,
    /// Another holder has it: stop (one line, naming it).
    TakenOver(String),
    /// The lock could not be read (the store fails): try again.
    Unknown(String),
}

/// The lock while this run holds it.
pub(crate) struct LockKeeper {
    shared: Arc<Shared>,
    renewer: tokio::task::JoinHandle<()>,
}

struct Shared {
    store: Store,
    name: String,
    ttl: Duration,
    lock: Mutex<RunLock>,
    /// Set once another holder was seen: this run must stop.
    taken_over: Mutex<Option<String>>,
    /// The last renewal failure, not yet reported.
    renew_error: Mutex<Option<String>>,
}

/// This host's name, as locks record it.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

/// A random holder token: two processes never share one.
pub(crate) fn token() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default();
        bytes[..8].copy_from_slice(&nanos.to_le_bytes());
        bytes[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
    hex::encode(bytes)
}

fn describe(lock: &RunLock) -> String {
    format!(
        "host {}, pid {}, until {}",
        lock.host,
        lock.pid,
        lock.expires_at.format("%Y-%m-%dT%H:%M:%SZ")
    )
}

/// Whether a lock was left by a process of this host that is gone (killed, crashed): its
/// process ID no longer exists. Such a lock need not be waited out. A process ID reused by
/// another process counts as alive: then the lock is waited out, which is safe. A lock with
/// our own process ID is never taken as dead: another container on the same host name (each
/// PID 1 in its own PID namespace) may hold it; a restarted container waits it out.
fn died_here(lock: &RunLock) -> bool {
    process_gone(&lock.host, lock.pid)
}

/// Whether the process `pid` of `host` is known to be gone: `host` is this host, `pid` is
/// not our own and no `/proc/<pid>` exists (see [`died_here`]).
pub(crate) fn process_gone(host: &str, pid: u32) -> bool {
    if host != host_name() || !Path::new("/proc/self").exists() {
        return false;
    }
    pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
}

/// A lock that expires more than this after now cannot have been written by a run whose
/// clock was right (no lifetime this version sets comes near it).
const PLAUSIBLE_EXPIRY: chrono::TimeDelta = chrono::TimeDelta::days(1);

/// What to do about a live lock held by another run: wait it out, or, when its expiry is
/// implausibly far ahead (a clock that jumped), delete it by hand if no run holds it.
fn refusal_advice(lock: &RunLock, name: &str, now: DateTime<Utc>) -> String {
    if lock.expires_at > now + PLAUSIBLE_EXPIRY {
        format!(
            "its expiry is implausible (more than a day ahead: a clock that was wrong when it was written); if no backup run holds it, delete the lock object {name} by hand"
        )
    } else {
        "stop it first, or wait until its lock expires if it was killed".to_string()
    }
}

fn locked(reason: String) -> SnapshotError {
    SnapshotError::RunLocked { reason }
}

/// Reads the lock object: `None` when absent.
async fn read(store: &Store, name: &str) -> Result<Option<RunLock>> {
    if store.head(name).await?.is_none() {
        return Ok(None);
    }
    match store.get_small(name).await {
        Ok(bytes) => RunLock::from_json(name, &bytes).map(Some),
        Err(etcd_store::StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl Shared {
    fn now_lock(&self) -> RunLock {
        let mut lock = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let now = Utc::now();
        lock.renewed_at = now;
        lock.expires_at =
            now + chrono::Duration::from_std(self.ttl).unwrap_or(chrono::Duration::seconds(60));
        lock.clone()
    }

    fn holder(&self) -> String {
        self.lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .holder
            .clone()
    }

    fn take_over_message(&self, other: &RunLock) -> String {
        format!(
            "another backup run took over {} ({}); this run stopped so that one chain has one writer",
            self.name,
            describe(other)
        )
    }

    /// Writes our lock with a new expiry, unless another holder has it by now.
    async fn renew(&self) -> Result<()> {
        match read(&self.store, &self.name).await? {
            Some(other) if other.holder != self.holder() => {
                let message = self.take_over_message(&other);
                *self.taken_over.lock().unwrap_or_else(|e| e.into_inner()) = Some(message.clone());
                return Err(locked(message));
            }
            _ => {}
        }
        let lock = self.now_lock();
        self.store
            .put_small(&self.name, Bytes::from(lock.to_json()))
            .await?;
        Ok(())
    }
}

impl LockKeeper {
    /// The cluster whose chain this lock claims.
    pub(crate) fn cluster(&self) -> MemberId {
        self.shared
            .lock
            .lock()
            .map(|l| l.cluster_id)
            .unwrap_or_else(|poisoned| poisoned.into_inner().cluster_id)
    }

    /// Claims the lock of `cluster`'s chain in `store` for `ttl`, refusing (naming the other
    /// holder's host, process ID and expiry) while another holder's lock is live.
    pub(crate) async fn acquire(store: &Store, cluster: MemberId, ttl: Duration) -> Result<Self> {
        let name = run_lock_name(cluster);
        let now = Utc::now();
        if let Some(other) = read(store, &name).await?
            && other.is_live(now)
            && !died_here(&other)
        {
            return Err(locked(format!(
                "another backup run writes this cluster's chain in {} ({}; lock {name}); {}",
                store.url(),
                describe(&other),
                refusal_advice(&other, &name, now)
            )));
        }
        let ours = RunLock {
            format_version: RUN_LOCK_FORMAT_VERSION,
            holder: token(),
            host: host_name(),
            pid: std::process::id(),
            cluster_id: cluster,
            full_backup: None,
            previous_full_backup: None,
            renewed_at: now,
            expires_at: now,
        };
        let shared = Arc::new(Shared {
            store: store.clone(),
            name: name.clone(),
            ttl,
            lock: Mutex::new(ours),
            taken_over: Mutex::new(None),
            renew_error: Mutex::new(None),
        });
        let lock = shared.now_lock();
        store.put_small(&name, Bytes::from(lock.to_json())).await?;
        tokio::time::sleep(SETTLE).await;
        match read(store, &name).await? {
            Some(back) if back.holder == lock.holder => {}
            Some(other) => {
                return Err(locked(format!(
                    "another backup run claimed {name} at the same moment ({}); stop one of them",
                    describe(&other)
                )));
            }
            None => {
                return Err(locked(format!(
                    "the lock {name} vanished right after it was written; is another process deleting objects in {}?",
                    store.url()
                )));
            }
        }
        let renewer = tokio::spawn(renew_loop(shared.clone()));
        Ok(LockKeeper { shared, renewer })
    }

    /// The lock object's name.
    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    /// Until when the lock holds without another renewal.
    pub(crate) fn expires_at(&self) -> DateTime<Utc> {
        self.shared
            .lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .expires_at
    }

    /// A renewal failure not reported yet.
    pub(crate) fn take_renew_error(&self) -> Option<String> {
        self.shared
            .renew_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Records the chains being written (for retention) and renews the lock at once.
    pub(crate) async fn set_chains(
        &self,
        full: Option<&str>,
        previous: Option<&str>,
    ) -> Result<()> {
        {
            let mut lock = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            lock.full_backup = full.map(str::to_string);
            lock.previous_full_backup = previous.map(str::to_string);
        }
        self.shared.renew().await
    }

    /// Reads the lock back before a publication: ours, another holder's, or unreadable. A
    /// lock that vanished (the store was emptied) is written again.
    pub(crate) async fn check(&self) -> LockCheck {
        if let Some(message) = self
            .shared
            .taken_over
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return LockCheck::TakenOver(message);
        }
        match read(&self.shared.store, &self.shared.name).await {
            Ok(Some(lock)) if lock.holder == self.shared.holder() => LockCheck::Held,
            Ok(Some(other)) => {
                let message = self.shared.take_over_message(&other);
                *self
                    .shared
                    .taken_over
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(message.clone());
                LockCheck::TakenOver(message)
            }
            Ok(None) => match self.shared.renew().await {
                Ok(()) => LockCheck::Held,
                Err(SnapshotError::RunLocked { reason }) => LockCheck::TakenOver(reason),
                Err(e) => LockCheck::Unknown(format!("cannot write the lock again: {e}")),
            },
            Err(e) => LockCheck::Unknown(format!("cannot read the lock {}: {e}", self.name())),
        }
    }

    /// Stops renewing and deletes the lock when it is still ours.
    pub(crate) async fn release(self) {
        self.renewer.abort();
        let store = &self.shared.store;
        if let Ok(Some(lock)) = read(store, &self.shared.name).await
            && lock.holder == self.shared.holder()
        {
            let _ = store.delete(&self.shared.name).await;
        }
    }
}

impl Drop for LockKeeper {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

async fn renew_loop(shared: Arc<Shared>) {
    let every = shared.ttl / 3;
    loop {
        tokio::time::sleep(every).await;
        match shared.renew().await {
            Ok(()) => {}
            Err(SnapshotError::RunLocked { .. }) => return,
            Err(e) => {
                *shared.renew_error.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(format!("renewing the lock {}: {e}", shared.name));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().display().to_string(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap();
        (dir, store)
    }

    const CLUSTER: MemberId = MemberId(0xabc);

    /// A lock of `CLUSTER` as another process left it, valid for a minute.
    fn left_lock(holder: &str, host: String, pid: u32) -> RunLock {
        let now = Utc::now();
        RunLock {
            format_version: RUN_LOCK_FORMAT_VERSION,
            holder: holder.into(),
            host,
            pid,
            cluster_id: CLUSTER,
            full_backup: None,
            previous_full_backup: None,
            renewed_at: now,
            expires_at: now + chrono::Duration::seconds(60),
        }
    }

    /// Writes `lock` as the lock object of its cluster.
    async fn put(store: &Store, lock: &RunLock) {
        store
            .put_small(&run_lock_name(lock.cluster_id), Bytes::from(lock.to_json()))
            .await
            .unwrap();
    }

    async fn acquire(store: &Store) -> Result<LockKeeper> {
        LockKeeper::acquire(store, CLUSTER, Duration::from_secs(60)).await
    }

    /// Why taking the lock of `CLUSTER` is refused.
    async fn refusal(store: &Store) -> String {
        acquire(store).await.err().unwrap().to_string()
    }

    #[test]
    fn the_ttl_is_three_intervals_and_at_least_a_minute() {
        assert_eq!(lock_ttl(Duration::from_secs(1)), Duration::from_secs(60));
        assert_eq!(lock_ttl(Duration::from_secs(60)), Duration::from_secs(180));
    }

    #[tokio::test]
    async fn a_live_lock_refuses_a_second_holder_and_release_frees_it() {
        let (_dir, store) = store();
        let first = acquire(&store).await.unwrap();
        assert!(matches!(first.check().await, LockCheck::Held));
        first
            .set_chains(Some("etcd-0000000000000abc/a.db.zst"), None)
            .await
            .unwrap();
        let stored = read(&store, first.name()).await.unwrap().unwrap();
        assert_eq!(
            stored.full_backup.as_deref(),
            Some("etcd-0000000000000abc/a.db.zst")
        );
        first.release().await;
        assert!(
            read(&store, &run_lock_name(CLUSTER))
                .await
                .unwrap()
                .is_none()
        );
        // A live holder on another host: refused, naming it.
        let other = RunLock {
            holder: "other".into(),
            host: "other-host".into(),
            pid: 4242,
            ..stored
        };
        put(&store, &other).await;
        let refused = refusal(&store).await;
        assert!(
            refused.contains("host other-host, pid 4242, until "),
            "{refused}"
        );
        // Once it expired, the lock is taken.
        let expired = RunLock {
            expires_at: Utc::now() - chrono::Duration::seconds(1),
            ..other
        };
        put(&store, &expired).await;
        acquire(&store).await.unwrap().release().await;
    }

    #[tokio::test]
    async fn a_lock_left_by_a_dead_process_of_this_host_is_taken_at_once() {
        let (_dir, store) = store();
        let mut dead = Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let left = left_lock("killed", host_name(), dead_pid);
        put(&store, &left).await;
        acquire(&store).await.unwrap().release().await;
        // Another host's live lock is waited out.
        let elsewhere = RunLock {
            host: "another-host".into(),
            ..left
        };
        put(&store, &elsewhere).await;
        assert!(acquire(&store).await.is_err());
    }

    #[tokio::test]
    async fn a_takeover_is_seen_at_the_next_check_and_a_vanished_lock_is_rewritten() {
        let (_dir, store) = store();
        let ours = acquire(&store).await.unwrap();
        store.delete(ours.name()).await.unwrap();
        assert!(matches!(ours.check().await, LockCheck::Held));
        assert!(read(&store, ours.name()).await.unwrap().is_some());
        let mut other = read(&store, ours.name()).await.unwrap().unwrap();
        other.holder = "someone-else".into();
        other.host = "other-host".into();
        put(&store, &other).await;
        match ours.check().await {
            LockCheck::TakenOver(message) => assert!(message.contains("other-host"), "{message}"),
            _ => panic!("the takeover was not seen"),
        }
        // Ours is not deleted on release: it is the other holder's now.
        ours.release().await;
        assert!(
            read(&store, &run_lock_name(CLUSTER))
                .await
                .unwrap()
                .is_some()
        );
    }

    #[tokio::test]
    async fn a_lock_with_our_pid_is_waited_out_and_an_implausible_expiry_is_named() {
        let (_dir, store) = store();
        // Another container on this host name, PID 1 like us: live, never taken over.
        let twin = left_lock("twin", host_name(), std::process::id());
        put(&store, &twin).await;
        let refused = refusal(&store).await;
        assert!(refused.contains("wait until its lock expires"), "{refused}");
        assert!(!refused.contains("implausible"), "{refused}");
        // Written under a clock years ahead: the refusal says so and names the object.
        let future = RunLock {
            host: "other-host".into(),
            expires_at: twin.renewed_at + chrono::Duration::days(400),
            ..twin
        };
        put(&store, &future).await;
        let refused = refusal(&store).await;
        assert!(refused.contains("its expiry is implausible"), "{refused}");
        let name = run_lock_name(CLUSTER);
        assert!(
            refused.contains(&format!("delete the lock object {name} by hand")),
            "{refused}"
        );
        assert!(!refused.contains('\n'), "{refused}");
    }
}
