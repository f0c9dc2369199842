//! Past and live changes: `history KEY` (every retained version, newest first) and `watch`
//! (events from a revision until a bound). Both end on their bound, never hang.

use std::time::Duration;

use etcd_client::{EventType, WatchOptions};
use serde::Serialize;
use tokio::time::Instant;

use crate::config::ClusterConfig;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use etcd_common::{Hint, OptionId};

/// The revision a watch stops at.
const UNTIL_REV: OptionId = OptionId::value("until_rev");
/// How long a watch runs.
const TIMEOUT: OptionId = OptionId::value("timeout");
use crate::kv::{Encoding, encode_bytes, prefix_end, show_value};

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

fn event_view(event: &etcd_client::Event, show_secrets: bool) -> Option<KeyEvent> {
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
    })
}

/// How a watch run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WatchEnd {
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
struct Stop {
    bound: WatchBound,
    /// The revision of the last event wanted, when known (a key's current mod revision).
    last_event: Option<i64>,
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

async fn watch_until(
    client: &EndpointClient,
    key: Vec<u8>,
    range_end: Option<Vec<u8>>,
    start_revision: i64,
    stop: Stop,
    show_secrets: bool,
    on_event: &mut (dyn FnMut(KeyEvent) -> Result<()> + Send),
) -> Result<WatchEnd> {
    let mut options = WatchOptions::new().with_start_revision(start_revision);
    if let Some(end) = range_end {
        options = options.with_range(end);
    }
    let mut stream = client
        .call("watch", |c| async move {
            c.watch_client()
                .max_decoding_message_size(crate::kv::MAX_RESPONSE_BYTES)
                .watch(key, Some(options))
                .await
        })
        .await?;
    let deadline = stop.bound.timeout.map(|t| Instant::now() + t);
    let stream_error = |e: etcd_client::Error| Error::Request {
        operation: "watch",
        endpoint: client.endpoint().to_string(),
        message: e.to_string(),
    };
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
            Ok(message) => message.map_err(stream_error)?,
        };
        let Some(response) = message else {
            return Err(Error::Request {
                operation: "watch",
                endpoint: client.endpoint().to_string(),
                message: "the member closed the watch".into(),
            });
        };
        if response.canceled() {
            if response.compact_revision() > 0 {
                return Ok(WatchEnd::Compacted(response.compact_revision()));
            }
            return Err(Error::Request {
                operation: "watch",
                endpoint: client.endpoint().to_string(),
                message: format!("etcd cancelled the watch: {}", response.cancel_reason()),
            });
        }
        for event in response.events() {
            let revision = event.kv().map(|kv| kv.mod_revision()).unwrap_or(0);
            if stop
                .bound
                .until_revision
                .is_some_and(|until| revision > until)
            {
                return Ok(WatchEnd::Reached);
            }
            if let Some(view) = event_view(event, show_secrets) {
                on_event(view)?;
            }
            quiet_since = Instant::now();
            if stop.last_event.is_some_and(|last| revision >= last) {
                return Ok(WatchEnd::Reached);
            }
        }
    }
}

/// Every retained version of a key, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyHistory {
    /// The key.
    pub key: String,
    /// The revision the history was read up to.
    pub revision: i64,
    /// When older versions were compacted away, the first revision still retained.
    pub compacted_before: Option<i64>,
    /// Versions and deletions, newest first.
    pub events: Vec<KeyEvent>,
}

/// Reads every retained version of `key`. On a Kubernetes etcd, kube-apiserver compacts
/// every five minutes by default, so history reaches back only minutes there.
pub async fn history(config: &ClusterConfig, key: &[u8], show_secrets: bool) -> Result<KeyHistory> {
    let (client, now) = config
        .read_any(|client| async move {
            let key_owned = key.to_vec();
            let now = client
                .call("get", |mut c| async move { c.get(key_owned, None).await })
                .await?;
            Ok((client, now))
        })
        .await?;
    let current = now.header().map(|h| h.revision()).unwrap_or_default();
    // When the key exists, its current version is the last event: an exact end. When it
    // was deleted, the replay ends with the quiet period.
    let last_event = now.kvs().first().map(|kv| kv.mod_revision());
    let stop = Stop {
        bound: WatchBound {
            until_revision: Some(current),
            timeout: Some(config.command_timeout * 6),
        },
        last_event,
    };
    let mut start = 1;
    let mut compacted_before = None;
    loop {
        let mut events = Vec::new();
        let end = watch_until(
            &client,
            key.to_vec(),
            None,
            start,
            stop,
            show_secrets,
            &mut |e| {
                events.push(e);
                Ok(())
            },
        )
        .await?;
        match end {
            WatchEnd::Compacted(first) if compacted_before.is_none() => {
                compacted_before = Some(first);
                start = first;
            }
            WatchEnd::Compacted(first) => {
                return Err(Error::Request {
                    operation: "history",
                    endpoint: client.endpoint().to_string(),
                    message: format!(
                        "the history was compacted again while reading (now from {first}); retry"
                    ),
                });
            }
            WatchEnd::TimedOut => {
                return Err(Error::Timeout {
                    operation: "history",
                    endpoint: client.endpoint().to_string(),
                    timeout: config.command_timeout * 6,
                    hint: String::new(),
                });
            }
            WatchEnd::Reached => {
                events.reverse();
                return Ok(KeyHistory {
                    key: encode_bytes(key).0,
                    revision: current,
                    compacted_before,
                    events,
                });
            }
        }
    }
}

/// A `watch` request.
#[derive(Debug, Clone, Default)]
pub struct WatchRequest {
    /// The key, or the prefix.
    pub key: Vec<u8>,
    /// Watch every key starting with `key`.
    pub prefix: bool,
    /// First revision to deliver (0: from now on).
    pub start_revision: i64,
    /// Where to stop; at least one bound is required.
    pub bound: WatchBound,
    /// Show Kubernetes Secrets' values.
    pub show_secrets: bool,
}

/// How a watch ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatchSummary {
    /// Events delivered.
    pub events: u64,
    /// `until_revision` or `timeout`.
    pub ended_by: &'static str,
}

/// Delivers events to `on_event` from `start_revision` until the bound.
pub async fn watch(
    config: &ClusterConfig,
    request: &WatchRequest,
    on_event: &mut (dyn FnMut(KeyEvent) -> Result<()> + Send),
) -> Result<WatchSummary> {
    if request.bound.until_revision.is_none() && request.bound.timeout.is_none() {
        return Err(Error::InvalidRequest {
            what: "watch",
            reason: "give a revision to stop at or a duration: a watch must end".into(),
            hint: Hint::any_of(&[UNTIL_REV, TIMEOUT]),
        });
    }
    let client = config.connect_any().await?;
    let mut count = 0u64;
    let end = watch_until(
        &client,
        request.key.clone(),
        request.prefix.then(|| prefix_end(&request.key)),
        request.start_revision,
        Stop {
            bound: request.bound,
            last_event: None,
        },
        request.show_secrets,
        &mut |e| {
            count += 1;
            on_event(e)
        },
    )
    .await?;
    match end {
        WatchEnd::Compacted(first) => Err(Error::InvalidOption {
            option: "rev",
            reason: format!(
                "revision {} has been compacted; the oldest retained revision is {first}",
                request.start_revision
            ),
        }),
        WatchEnd::Reached => Ok(WatchSummary {
            events: count,
            ended_by: "until_revision",
        }),
        WatchEnd::TimedOut => Ok(WatchSummary {
            events: count,
            ended_by: "timeout",
        }),
    }
}
