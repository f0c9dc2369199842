//! `backup run --compact-after N`: every N segments of the chain being written, that chain
//! (up to its last published segment) is compacted into a new full backup in a task of its
//! own, so segments keep being published meanwhile. One compaction at a time; its outcome is
//! reported at the next publication (a `compacted` event, or a `failed` one: the run goes on
//! either way). A stop abandons a compaction in progress, which leaves nothing that looks
//! complete (see [`crate::consolidate_chain`]).

use std::path::PathBuf;

use etcd_store::Store;
use futures::FutureExt;
use tokio::task::JoinHandle;

use super::events::{FailureReason, RunEvent};
use crate::consolidate::{ConsolidateRequest, consolidate_chain};
use crate::crypt::Identities;
use crate::error::{Result, SnapshotError};
use crate::progress::NoProgress;
use etcd_common::InvalidOption;

/// How a run compacts its chains.
#[derive(Debug, Clone, Default)]
pub struct CompactAfter {
    /// Compact after this many segments of a chain (again after as many more).
    pub segments: u64,
    /// Decrypt an encrypted chain with these (one must match a recipient of the run).
    pub identities: Identities,
    /// Where the db is rebuilt (default: the system's temporary directory).
    pub work_dir: Option<PathBuf>,
}

impl CompactAfter {
    /// Refuses settings no compaction could work with: zero segments, or an encrypted run
    /// without an identity of one of its recipients.
    pub(super) fn validate(&self, recipients: &[String]) -> Result<()> {
        let invalid = |reason: String| {
            SnapshotError::from(InvalidOption::new(crate::opts::COMPACT_AFTER, reason))
        };
        if self.segments == 0 {
            return Err(invalid("must be at least 1 segment".into()));
        }
        if !recipients.is_empty()
            && !self
                .identities
                .public_keys()
                .iter()
                .any(|k| recipients.contains(k))
        {
            return Err(invalid(
                "the chains are encrypted: compacting them needs an identity of one of the recipients (give it with the identity option)".into(),
            ));
        }
        Ok(())
    }
}

/// Aborts the compaction's async part when the run ends (its blocking part finishes on its
/// own and its work dir is removed).
struct Running {
    base: String,
    /// When it started: what it uploads is younger.
    started: std::time::Instant,
    handle: JoinHandle<std::result::Result<RunEvent, String>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// The compactions of one run.
pub(super) struct Compactions {
    settings: CompactAfter,
    store: Store,
    running: Option<Running>,
    /// The chain and segment the last compaction started at.
    last: Option<(String, u64)>,
}

impl Compactions {
    pub(super) fn new(settings: &CompactAfter, store: &Store) -> Self {
        Compactions {
            settings: settings.clone(),
            store: store.clone(),
            running: None,
            last: None,
        }
    }

    /// The compaction still running, if one is (a finished one protects nothing).
    fn live(&self) -> Option<&Running> {
        self.running.as_ref().filter(|r| !r.handle.is_finished())
    }

    /// The chain a compaction is reading now, if one runs: retention keeps it meanwhile
    /// (the run names it in its lock), or the compaction would fail under a prune.
    pub(super) fn running_chain(&self) -> Option<&str> {
        self.live().map(|r| r.base.as_str())
    }

    /// How long the compaction running now has run, if one runs: its copy is an upload in
    /// progress (an orphan to a prune) no older than this, which the run's own prune spares
    /// whatever its orphan grace.
    pub(super) fn running_for(&self) -> Option<std::time::Duration> {
        self.live().map(|r| r.started.elapsed())
    }

    /// Whether a chain at segment `sequence` is due: `segments` more than at its last
    /// compaction (or since its start).
    fn due(&self, base: &str, sequence: u64) -> bool {
        let since = match &self.last {
            Some((last_base, at)) if last_base == base => *at,
            _ => 0,
        };
        sequence >= since + self.settings.segments
    }

    /// After segment `sequence` of `base` was published: the outcome of a compaction that
    /// finished meanwhile, and a new one started when the chain is due and none runs.
    pub(super) fn after_segment(&mut self, base: &str, sequence: u64) -> Option<RunEvent> {
        let event = self.finished();
        if self.running.is_none() && self.due(base, sequence) {
            self.start(base, sequence);
        }
        event
    }

    fn finished(&mut self) -> Option<RunEvent> {
        let running = self.running.as_mut()?;
        if !running.handle.is_finished() {
            return None;
        }
        let outcome = (&mut running.handle).now_or_never()?;
        let base = running.base.clone();
        self.running = None;
        Some(match outcome {
            Ok(Ok(event)) => event,
            Ok(Err(error)) => RunEvent::Failed {
                reason: FailureReason::Compaction,
                error: format!("compacting the chain of {base}: {error}"),
            },
            Err(e) => RunEvent::Failed {
                reason: FailureReason::Compaction,
                error: format!("compacting the chain of {base}: the task ended: {e}"),
            },
        })
    }

    fn start(&mut self, base: &str, sequence: u64) {
        let store = self.store.clone();
        let identities = self.settings.identities.clone();
        let request = ConsolidateRequest {
            chain: Some(base.to_string()),
            work_dir: self.settings.work_dir.clone(),
        };
        let handle = tokio::spawn(async move {
            let done = consolidate_chain(&store, &request, &identities, &NoProgress)
                .await
                .map_err(|e| e.to_string())?;
            // Another compaction (a `snapshot compact` by hand) holds the chain: it
            // publishes the copy, this one wrote nothing.
            if let Some(busy) = done.busy {
                return Err(busy);
            }
            Ok(RunEvent::Compacted {
                object: done.manifest.object,
                source: done.source,
                segments: done.segments as u64,
                to_revision: done.manifest.revision,
            })
        });
        self.running = Some(Running {
            base: base.to_string(),
            started: std::time::Instant::now(),
            handle,
        });
        self.last = Some((base.to_string(), sequence));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_due_every_n_segments_and_a_new_chain_counts_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().display().to_string(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap();
        let settings = CompactAfter {
            segments: 3,
            ..CompactAfter::default()
        };
        let mut c = Compactions::new(&settings, &store);
        assert!(!c.due("a", 2));
        assert!(c.due("a", 3));
        c.last = Some(("a".into(), 3));
        assert!(!c.due("a", 5));
        assert!(c.due("a", 6));
        assert!(!c.due("b", 2), "a new chain counts from its own start");
        assert!(c.due("b", 3));
    }

    #[tokio::test]
    async fn the_chain_a_compaction_reads_is_named_until_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().display().to_string(),
            &etcd_store::StoreOptions::default(),
        )
        .unwrap();
        let mut c = Compactions::new(&CompactAfter::default(), &store);
        assert_eq!(c.running_chain(), None);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        c.running = Some(Running {
            base: "a".into(),
            started: std::time::Instant::now(),
            handle: tokio::spawn(async move {
                let _ = rx.await;
                Err("ended".to_string())
            }),
        });
        assert_eq!(c.running_chain(), Some("a"));
        assert!(c.running_for().is_some());
        tx.send(()).unwrap();
        while !c.running.as_ref().unwrap().handle.is_finished() {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            c.running_chain(),
            None,
            "a finished compaction protects nothing"
        );
        assert_eq!(c.running_for(), None);
    }

    #[test]
    fn zero_segments_or_an_encrypted_run_without_its_identity_is_refused() {
        let zero = CompactAfter::default();
        assert!(
            zero.validate(&[])
                .unwrap_err()
                .to_string()
                .contains("at least 1")
        );
        let identity = age::x25519::Identity::generate();
        let recipient = identity.to_public().to_string();
        let mut settings = CompactAfter {
            segments: 2,
            ..CompactAfter::default()
        };
        settings.validate(&[]).unwrap();
        let text = settings
            .validate(std::slice::from_ref(&recipient))
            .unwrap_err()
            .to_string();
        assert!(text.contains("needs an identity"), "{text}");
        assert!(!text.contains("AGE-SECRET"), "{text}");
        use age::secrecy::ExposeSecret;
        settings
            .identities
            .add_text(identity.to_string().expose_secret(), "test")
            .unwrap();
        settings.validate(&[recipient]).unwrap();
    }
}
