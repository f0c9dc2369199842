//! Live and past changes: `watch_batches` streams etcd's watch responses from a revision until
//! a bound, or, when the caller chooses it (`unbounded`), until the caller drops the stream.
//! `history` (history.rs) reads a key's retained versions with the same loop.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use etcd_client::{EventType, WatchOptions};
use futures::{Stream, StreamExt};
use serde::Serialize;
use tokio::time::Instant;

use crate::config::ClusterConfig;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::header::ResponseHeader;
use crate::kv::{Encoding, KeyValueView, KvBytes, encode_bytes, prefix_end, show_value};
use crate::produced::{Emit, Produced};
use etcd_common::Hint;

use etcd_common::options::{TIMEOUT, UNTIL_REV};

/// One change of a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyEvent {
    /// `put` or `delete`.
    pub kind: EventKind,
    /// The key.
    pub key: String,
    /// How `key` is written.
    pub key_encoding: Encoding,
    /// Revision of the change.
    pub revision: i64,
    /// Revision of the key's creation (0 for a deletion).
    pub create_revision: i64,
    /// Version after the change (0 for a deletion).
    pub version: i64,
    /// The value written (absent for a deletion).
    pub value: Option<String>,
    /// How `value` is written.
    pub value_encoding: Option<Encoding>,
    /// Lease ID (hex), when the key was attached to one.
    pub lease: Option<String>,
    /// The key-value pair before the change, when asked for (`prev_kv`) and still retained.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev: Option<KeyValueView>,
    /// The exact bytes of the key and value (the value absent when redacted), for output
    /// that must equal etcdctl's.
    #[serde(skip)]
    pub bytes: KvBytes,
}

/// What kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// The key was written.
    Put,
    /// The key was deleted (or its lease expired).
    Delete,
}

pub(crate) fn event_view(event: &etcd_client::Event, show_secrets: bool) -> Option<KeyEvent> {
    let kv = event.kv()?;
    let (key, key_encoding) = encode_bytes(kv.key());
    let kind = match event.event_type() {
        EventType::Put => EventKind::Put,
        EventType::Delete => EventKind::Delete,
    };
    let (value, value_encoding) = match kind {
        EventKind::Put => {
            let (v, e) = show_value(kv.key(), kv.value(), show_secrets);
            (Some(v), Some(e))
        }
        EventKind::Delete => (None, None),
    };
    let redacted = value_encoding == Some(Encoding::Redacted);
    Some(KeyEvent {
        kind,
        key,
        key_encoding,
        revision: kv.mod_revision(),
        create_revision: kv.create_revision(),
        version: kv.version(),
        value,
        value_encoding,
        lease: (kv.lease() != 0).then(|| format!("{:x}", kv.lease())),
        prev: event
            .prev_kv()
            .map(|prev| KeyValueView::from_kv(prev, false, show_secrets)),
        bytes: KvBytes {
            key: kv.key().to_vec(),
            value: (!redacted).then(|| kv.value().to_vec()),
            lease: kv.lease(),
        },
    })
}

/// One watch response as etcd sent it: the events of one batch, or a progress notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatchBatch {
    /// The response's header (its revision is the store's when the batch was sent).
    pub header: ResponseHeader,
    /// The events, oldest first (none in a progress notification).
    pub events: Vec<KeyEvent>,
    /// etcd's periodic progress notification (`progress_notify`): no events, and every
    /// event up to the header's revision was delivered.
    pub progress_notify: bool,
    /// etcd cancelled the watch because its start revision is compacted: history begins at
    /// this revision (0 otherwise). No events; the last batch, the watch then fails.
    pub compact_revision: i64,
}

/// How a watch run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchEnd {
    /// Every event up to the bound was delivered.
    Reached,
    /// The start revision is compacted; history begins at this revision.
    Compacted(i64),
    /// The time limit passed.
    TimedOut,
}

/// Where a watch stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchBound {
    /// Stop once every event up to this revision was delivered.
    pub until_revision: Option<i64>,
    /// Stop after this long.
    pub timeout: Option<Duration>,
}

/// How often the stream is polled and the store revision checked.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// Once the store has passed the bound, how long the watch must stay quiet before it ends:
/// etcd replays past events to a new watcher in batches every 100 ms, and 3.4/3.5 answer a
/// progress request before that replay, so a quiet period is the only end signal they give.
const QUIET: Duration = Duration::from_secs(1);

/// Where to stop, with an exact last event when it is known.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stop {
    pub(crate) bound: WatchBound,
    /// The revision of the last event wanted, when known (a key's current mod revision).
    pub(crate) last_event: Option<i64>,
}

/// What one watch stream asks etcd for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Watched {
    pub(crate) key: Vec<u8>,
    pub(crate) range_end: Option<Vec<u8>>,
    pub(crate) start_revision: i64,
    pub(crate) prev_kv: bool,
    pub(crate) progress_notify: bool,
    pub(crate) show_secrets: bool,
}

async fn store_revision(client: &EndpointClient) -> Result<i64> {
    Ok(client
        .call("read revision", |mut c| async move {
            c.get(
                "health",
                Some(etcd_client::GetOptions::new().with_count_only()),
            )
            .await
        })
        .await?
        .header()
        .map(|h| h.revision())
        .unwrap_or_default())
}

/// The events of `response` up to the bound; `true` when the bound was reached in it.
fn bounded_events(
    response: &etcd_client::WatchResponse,
    stop: Stop,
    show_secrets: bool,
) -> (Vec<KeyEvent>, bool) {
    let mut events = Vec::new();
    for event in response.events() {
        let revision = event.kv().map(|kv| kv.mod_revision()).unwrap_or(0);
        if stop
            .bound
            .until_revision
            .is_some_and(|until| revision > until)
        {
            return (events, true);
        }
        events.extend(event_view(event, show_secrets));
        if stop.last_event.is_some_and(|last| revision >= last) {
            return (events, true);
        }
    }
    (events, false)
}

/// What a failed read of an established watch stream means: a broken connection or a member
/// that cannot serve now is `Unavailable` (transient: the watch resumes elsewhere), whatever
/// the scheme; anything else is classified as any request's error.
fn stream_failure(client: &EndpointClient, err: &etcd_client::Error) -> Error {
    let broken = match err {
        etcd_client::Error::GRpcStatus(status) => {
            let text = format!(
                "{} {:?}",
                status.message(),
                std::error::Error::source(status)
            )
            .to_ascii_lowercase();
            status.code() == tonic::Code::Unavailable
                || BROKEN_STREAM.iter().any(|p| text.contains(p))
        }
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        other => {
            let text = other.to_string().to_ascii_lowercase();
            BROKEN_STREAM.iter().any(|p| text.contains(p))
        }
    };
    if broken {
        Error::Unavailable {
            operation: "watch",
            endpoint: client.endpoint().to_string(),
            message: format!("the watch stream broke: {err}"),
        }
    } else {
        crate::connect::classify(err, &client.error_context("watch"))
    }
}

/// Words of a connection that broke under an established stream.
const BROKEN_STREAM: &[&str] = &[
    "broken pipe",
    "connection reset",
    "connection closed",
    "connection error",
    "stream closed",
    "operation was canceled",
    "h2 protocol error",
    "transport error",
    "unexpected eof",
];

/// Runs one watch stream on `client`, handing each response to `emit`, until `stop`
/// (or forever when `stop` has no bound: the caller ends it by dropping the future).
/// `watched.start_revision` follows the stream: after each delivered response it is the
/// revision to resume from (the last delivered event's + 1, or the creation's or a progress
/// notification's header revision + 1), so a caller that lost the stream resumes without a
/// gap or a repeat.
pub(crate) async fn watch_until(
    client: &EndpointClient,
    watched: &mut Watched,
    stop: Stop,
    emit: &mut Emit<'_, WatchBatch>,
) -> Result<WatchEnd> {
    let mut options = WatchOptions::new().with_start_revision(watched.start_revision);
    if let Some(end) = watched.range_end.clone() {
        options = options.with_range(end);
    }
    if watched.prev_kv {
        options = options.with_prev_key();
    }
    if watched.progress_notify {
        options = options.with_progress_notify();
    }
    let mut stream = client
        .open_watch(&watched.key, &options, crate::kv::MAX_RESPONSE_BYTES)
        .await?;
    let deadline = stop.bound.timeout.map(|t| Instant::now() + t);
    let mut quiet_since = Instant::now();
    let mut passed_bound_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if let Some(deadline) = deadline
            && now >= deadline
        {
            return Ok(WatchEnd::TimedOut);
        }
        if let Some(until) = stop.bound.until_revision {
            if passed_bound_at.is_none() && store_revision(client).await? >= until {
                passed_bound_at = Some(Instant::now());
            }
            if let Some(at) = passed_bound_at
                && now.duration_since(at.max(quiet_since)) >= QUIET
            {
                return Ok(WatchEnd::Reached);
            }
        }
        let wait = match deadline {
            Some(d) => POLL_EVERY.min(d.saturating_duration_since(now)),
            None => POLL_EVERY,
        };
        let message = match tokio::time::timeout(wait, stream.message()).await {
            Err(_) => continue,
            Ok(message) => message.map_err(|e| stream_failure(client, &e))?,
        };
        let Some(response) = message else {
            return Err(Error::Unavailable {
                operation: "watch",
                endpoint: client.endpoint().to_string(),
                message: "the member closed the watch stream".into(),
            });
        };
        if response.canceled() {
            if response.compact_revision() > 0 {
                // etcdctl prints this response (`-w json`): handed on as the last batch.
                emit.emit(WatchBatch {
                    header: ResponseHeader::of(response.header()).unwrap_or_default(),
                    events: Vec::new(),
                    progress_notify: false,
                    compact_revision: response.compact_revision(),
                })
                .await;
                return Ok(WatchEnd::Compacted(response.compact_revision()));
            }
            return Err(Error::Request {
                operation: "watch",
                endpoint: client.endpoint().to_string(),
                message: format!("etcd cancelled the watch: {}", response.cancel_reason()),
            });
        }
        let header = ResponseHeader::of(response.header()).unwrap_or_default();
        if response.events().is_empty() {
            // The creation's answer is not news; an empty answer after it is etcd's
            // progress notification (what etcdctl calls one).
            if response.created() {
                // A watch from "now" delivers what comes after the creation's revision.
                if watched.start_revision == 0 && header.revision != 0 {
                    watched.start_revision = header.revision + 1;
                }
            } else if response.compact_revision() == 0 && header.revision != 0 {
                emit.emit(WatchBatch {
                    header,
                    events: Vec::new(),
                    progress_notify: true,
                    compact_revision: 0,
                })
                .await;
                watched.start_revision = watched.start_revision.max(header.revision + 1);
            }
            continue;
        }
        let (events, reached) = bounded_events(&response, stop, watched.show_secrets);
        if let Some(last) = events.last() {
            let next = last.revision + 1;
            emit.emit(WatchBatch {
                header,
                events,
                progress_notify: false,
                compact_revision: 0,
            })
            .await;
            watched.start_revision = watched.start_revision.max(next);
            quiet_since = Instant::now();
        }
        if reached {
            return Ok(WatchEnd::Reached);
        }
    }
}

/// A `watch` request.
#[derive(Debug, Clone, Default)]
pub struct WatchRequest {
    /// The key, or the prefix, or the start of the range.
    pub key: Vec<u8>,
    /// End of the range (exclusive), as etcdctl's `watch KEY RANGE_END`.
    pub range_end: Option<Vec<u8>>,
    /// Watch every key starting with `key` (every key when `key` is empty).
    pub prefix: bool,
    /// First revision to deliver (0: from now on).
    pub start_revision: i64,
    /// Where to stop; at least one bound is required unless `unbounded`.
    pub bound: WatchBound,
    /// Run until the caller drops the stream (a CLI's Ctrl-C) when `bound` has no limit: a
    /// choice of the caller, never a default.
    pub unbounded: bool,
    /// Deliver each event's previous key-value pair.
    pub prev_kv: bool,
    /// Ask etcd for periodic progress notifications (batches with `progress_notify`).
    pub progress_notify: bool,
    /// Show Kubernetes Secrets' values.
    pub show_secrets: bool,
    /// Told, in one line, each time the watch lost its stream (a member killed, a connection
    /// broken, a member that cannot serve) and resumed on another endpoint (or the same one
    /// back) from the revision after the last delivered one. None: silently.
    pub on_resume: Option<fn(&str)>,
}

/// The first wait before reconnecting a broken watch; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between two reconnection attempts.
const RETRY_MAX: Duration = Duration::from_secs(5);
/// How long a watch bounded by a revision alone (no time limit) keeps trying to reconnect.
const RETRY_BOUNDED: Duration = Duration::from_secs(60);

/// How a watch ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatchSummary {
    /// Events delivered.
    pub events: u64,
    /// `until_revision` or `timeout` (a front-end that stops the watch itself may say
    /// `interrupted`).
    pub ended_by: &'static str,
}

/// Delivers events to `on_event` from `start_revision` until the bound ([`watch_batches`],
/// driven to its end).
pub(crate) async fn watch(
    config: &ClusterConfig,
    request: &WatchRequest,
    on_event: &mut (dyn FnMut(KeyEvent) -> Result<()> + Send),
) -> Result<WatchSummary> {
    let mut batches = watch_batches(config, request);
    while let Some(batch) = batches.next().await {
        batch?.events.into_iter().try_for_each(&mut *on_event)?;
    }
    Ok(batches
        .summary()
        .expect("a watch stream that ended without an error has its summary"))
}

/// The batches of a watch ([`Kv::watch_batches`](crate::Kv::watch_batches)), read as the
/// caller asks for them. Dropping it ends the watch.
pub struct WatchBatchStream<'a> {
    inner: Produced<'a, WatchBatch, &'static str>,
    /// Events handed to the caller so far.
    events: u64,
}

impl std::fmt::Debug for WatchBatchStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchBatchStream")
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

impl WatchBatchStream<'_> {
    /// How the watch ended, once the stream ended (gave `None`) without an error.
    pub fn summary(&self) -> Option<WatchSummary> {
        self.inner.summary().map(|&ended_by| WatchSummary {
            events: self.events,
            ended_by,
        })
    }
}

impl Stream for WatchBatchStream<'_> {
    type Item = Result<WatchBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        if let Poll::Ready(Some(Ok(batch))) = &next {
            self.events += batch.events.len() as u64;
        }
        next
    }
}

/// Streams etcd's watch responses (events in etcd's batches, with their header, and progress
/// notifications) from `start_revision` until the bound, or until the caller drops the
/// stream when the request is `unbounded`; its [`WatchBatchStream::summary`] follows the
/// last batch.
pub(crate) fn watch_batches<'a>(
    config: &'a ClusterConfig,
    request: &'a WatchRequest,
) -> WatchBatchStream<'a> {
    WatchBatchStream {
        inner: Produced::new(
            move |mut emit| async move { watch_run(config, request, &mut emit).await },
        ),
        events: 0,
    }
}

/// The loop of [`watch_batches`]; what ended it (`until_revision`, `timeout`).
async fn watch_run(
    config: &ClusterConfig,
    request: &WatchRequest,
    emit: &mut Emit<'_, WatchBatch>,
) -> Result<&'static str> {
    let no_bound = request.bound.until_revision.is_none() && request.bound.timeout.is_none();
    if no_bound && !request.unbounded {
        return Err(Error::InvalidRequest {
            what: "watch",
            reason: "give a revision to stop at or a duration: a watch must end".into(),
            hint: Hint::any_of(&[UNTIL_REV, TIMEOUT]),
        });
    }
    // etcd refuses an empty key; etcdctl watches every key from "\0" for `"" --prefix`.
    let (key, range_end) = match (&request.range_end, request.prefix) {
        (_, true) if request.key.is_empty() => (vec![0], Some(vec![0])),
        (_, true) => (request.key.clone(), Some(prefix_end(&request.key))),
        (end, false) => (request.key.clone(), end.clone()),
    };
    let mut watched = Watched {
        key,
        range_end,
        start_revision: request.start_revision,
        prev_kv: request.prev_kv,
        progress_notify: request.progress_notify,
        show_secrets: request.show_secrets,
    };
    let end = watch_resuming(config, request, &mut watched, emit).await?;
    match end {
        (WatchEnd::Compacted(first), Some(endpoint)) => Err(Error::Request {
            operation: "watch",
            endpoint,
            message: format!(
                "the watch lost its stream and could not resume: revision {} has been compacted meanwhile (the oldest retained is {first}); the events in between are lost",
                watched.start_revision
            ),
        }),
        (WatchEnd::Compacted(first), None) => Err(etcd_common::InvalidOption::new(
            crate::error::REV,
            format!(
                "revision {} has been compacted; the oldest retained revision is {first}",
                request.start_revision
            ),
        )
        .into()),
        (WatchEnd::Reached, _) => Ok("until_revision"),
        (WatchEnd::TimedOut, _) => Ok("timeout"),
    }
}

/// Runs the watch over one endpoint after another: when its stream breaks on a transient
/// error, it reconnects (the next endpoint first, backing off up to [`RETRY_MAX`]) and
/// resumes from `watched.start_revision`, as etcd's Go client does. An unbounded watch
/// retries for ever, a timed one within its time, one bounded by a revision alone for
/// [`RETRY_BOUNDED`]. Returns how it ended and, when it resumed, the endpoint it ended on.
async fn watch_resuming(
    config: &ClusterConfig,
    request: &WatchRequest,
    watched: &mut Watched,
    emit: &mut Emit<'_, WatchBatch>,
) -> Result<(WatchEnd, Option<String>)> {
    let deadline = request.bound.timeout.map(|t| Instant::now() + t);
    let mut client = config.connect_any().await?;
    let mut resumed = false;
    loop {
        let stop = Stop {
            bound: WatchBound {
                until_revision: request.bound.until_revision,
                timeout: deadline.map(|d| d.saturating_duration_since(Instant::now())),
            },
            last_event: None,
        };
        let err = match watch_until(&client, watched, stop, emit).await {
            Ok(end) => return Ok((end, resumed.then(|| client.endpoint().to_string()))),
            Err(err) if !etcd_common::Hinted::is_transient(&err) => {
                return Err(err);
            }
            Err(err) => err,
        };
        let give_up = match (request.unbounded, deadline) {
            (true, _) => None,
            (false, Some(deadline)) => Some(deadline),
            (false, None) => Some(Instant::now() + RETRY_BOUNDED),
        };
        let Some(next) = reconnect(config, client.endpoint(), give_up).await? else {
            // The time limit passed while the cluster could not be reached.
            if deadline.is_some() {
                return Ok((WatchEnd::TimedOut, Some(client.endpoint().to_string())));
            }
            return Err(err);
        };
        if let Some(tell) = request.on_resume {
            tell(&format!(
                "the watch lost its stream ({err}); resuming on {} from revision {}",
                next.endpoint(),
                watched.start_revision
            ));
        }
        client = next;
        resumed = true;
    }
}

/// Connects to the endpoint after `lost` (in the configured order, `lost` itself last),
/// trying again with a doubling wait until one answers or `give_up` passes (`None`).
async fn reconnect(
    config: &ClusterConfig,
    lost: &str,
    give_up: Option<Instant>,
) -> Result<Option<EndpointClient>> {
    let mut wait = RETRY_FIRST;
    loop {
        if let Some(limit) = give_up {
            let left = limit.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            tokio::time::sleep(wait.min(left)).await;
        } else {
            tokio::time::sleep(wait).await;
        }
        wait = (wait * 2).min(RETRY_MAX);
        let mut endpoints = match config.resolve_endpoints().await {
            Ok(endpoints) => endpoints,
            Err(err) if etcd_common::Hinted::is_transient(&err) => continue,
            Err(err) => return Err(err),
        };
        if let Some(at) = endpoints.iter().position(|e| e == lost) {
            endpoints.rotate_left(at + 1);
        }
        for endpoint in &endpoints {
            if let Ok(client) = config.connect_endpoint(endpoint).await {
                return Ok(Some(client));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_watch_without_a_bound_is_the_streams_one_item_unless_unbounded_is_chosen() {
        let config = crate::ConnectionOptions {
            endpoints: Some(vec!["http://127.0.0.1:1".into()]),
            ..Default::default()
        }
        .build()
        .unwrap();
        let request = WatchRequest {
            key: b"k".to_vec(),
            ..Default::default()
        };
        let mut batches = watch_batches(&config, &request);
        let err = batches.next().await.unwrap().unwrap_err();
        assert!(
            matches!(err, Error::InvalidRequest { what: "watch", .. }),
            "{err}"
        );
        assert!(batches.next().await.is_none());
        assert_eq!(batches.summary(), None);
        let err = watch(&config, &request, &mut |_| Ok(())).await.unwrap_err();
        assert!(matches!(err, Error::InvalidRequest { .. }), "{err}");
    }
}
