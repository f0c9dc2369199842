//! [`Client`]: one handle on a cluster that keeps one connection per endpoint and reuses it
//! across calls, so that a multi-step operation (`check`, a rolling defrag, a member change)
//! dials each member once instead of once per step.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::lock::Mutex as AsyncMutex;

use crate::config::ClusterConfig;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::member::Targets;

/// One connection slot: filled by the first caller that dials the endpoint; concurrent
/// callers wait for that dial instead of opening their own. A failed dial leaves it empty,
/// so the next call tries again (a member may come back during a rolling operation).
type Slot = Arc<AsyncMutex<Option<EndpointClient>>>;

/// A handle on one cluster: its [`ClusterConfig`] and one connection per endpoint, opened on
/// first use and reused by every later call on this handle (and its clones, which share
/// them). Cheap to clone.
///
/// Every operation is a method of it or of one of its sub-clients (`client.kv()`,
/// `client.members()`, `client.maintenance()`, ...): a caller running several operations
/// builds one and calls them all on it.
///
/// ```no_run
/// use etcd_core::{Client, ClusterConfig, CheckOptions};
///
/// # async fn example() -> Result<(), etcd_core::Error> {
/// let client = Client::new(ClusterConfig::for_endpoints(["http://127.0.0.1:2379"])?);
/// let report = client.check(&CheckOptions::default()).await?;
/// let view = client.cluster_view().await?; // over the same connections
/// assert_eq!(report.cluster_id, view.cluster_id);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    config: ClusterConfig,
    slots: Mutex<HashMap<String, Slot>>,
    dials: AtomicUsize,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field(
                "endpoints",
                &self
                    .inner
                    .config
                    .endpoints
                    .iter()
                    .map(|e| etcd_common::redact_endpoint(e))
                    .collect::<Vec<_>>(),
            )
            .field("dials", &self.dials())
            .finish_non_exhaustive()
    }
}

impl From<ClusterConfig> for Client {
    fn from(config: ClusterConfig) -> Client {
        Client::new(config)
    }
}

impl Client {
    /// A handle on the cluster `config` describes; nothing is dialed yet.
    pub fn new(config: ClusterConfig) -> Client {
        Client {
            inner: Arc::new(Inner {
                config,
                slots: Mutex::new(HashMap::new()),
                dials: AtomicUsize::new(0),
            }),
        }
    }

    /// The connection settings.
    pub fn config(&self) -> &ClusterConfig {
        &self.inner.config
    }

    /// How many connections this handle (with its clones) has dialed so far, failed dials
    /// included: one per endpoint used, plus one per retry of an endpoint that failed.
    pub fn dials(&self) -> usize {
        self.inner.dials.load(Ordering::Relaxed)
    }

    /// The connection to `endpoint`, dialed (and authenticated) on first use, then reused.
    pub async fn endpoint(&self, endpoint: &str) -> Result<EndpointClient> {
        let key = self.inner.config.normalize_endpoint(endpoint)?;
        let slot = {
            let mut slots = self
                .inner
                .slots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.entry(key.clone()).or_default().clone()
        };
        let mut held = slot.lock().await;
        if let Some(client) = held.as_ref() {
            return Ok(client.clone());
        }
        self.inner.dials.fetch_add(1, Ordering::Relaxed);
        let client = self.inner.config.connect_endpoint(&key).await?;
        *held = Some(client.clone());
        Ok(client)
    }

    /// The connection to every endpoint, concurrently; one result per endpoint, in order.
    pub async fn each(&self, endpoints: &[String]) -> Vec<Result<EndpointClient>> {
        futures::future::join_all(endpoints.iter().map(|e| self.endpoint(e))).await
    }

    /// The connection to the first configured endpoint that answers.
    pub async fn any(&self) -> Result<EndpointClient> {
        self.read_any(|client| async move { Ok(client) }).await
    }

    /// Runs the idempotent read `read` on the first configured endpoint, going on to the next
    /// one when that endpoint fails (unreachable, connection reset, unavailable, timed out, see
    /// [`Error::is_endpoint_failure`]), as etcdctl's client does. An answer from etcd
    /// (permission denied, key not found, a bad request) or a bad setting is returned at
    /// once. Never for writes: a write that timed out may have been applied.
    pub async fn read_any<T, F, Fut>(&self, read: F) -> Result<T>
    where
        F: Fn(EndpointClient) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let endpoints = self.inner.config.resolve_endpoints().await?;
        let mut errors = Vec::new();
        for endpoint in &endpoints {
            let client = match self.endpoint(endpoint).await {
                Ok(client) => client,
                Err(err) if is_setting_error(&err) => return Err(err),
                Err(err) => {
                    errors.push(err);
                    continue;
                }
            };
            match read(client).await {
                Ok(value) => return Ok(value),
                Err(err) if err.is_endpoint_failure() => errors.push(err),
                Err(err) => return Err(err),
            }
        }
        match errors.len() {
            1 => Err(errors.remove(0)),
            _ => Err(Error::NoEndpointAvailable { errors }),
        }
    }

    /// Resolves [`Targets`] to endpoint URLs: the configured (or discovered) endpoints, or
    /// every started member's client URLs, each once, in member order.
    pub async fn target_endpoints(&self, targets: Targets) -> Result<Vec<String>> {
        match targets {
            Targets::Configured => self.inner.config.resolve_endpoints().await,
            Targets::Cluster => self.members().client_urls().await,
        }
    }
}

/// A bad file or option fails the same way on every endpoint: said once, not per endpoint.
fn is_setting_error(err: &Error) -> bool {
    matches!(
        err,
        Error::ReadFile { .. }
            | Error::InvalidPem { .. }
            | Error::InvalidOption(_)
            | Error::AuthFailed { .. }
    )
}
