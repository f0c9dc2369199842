//! Past changes: `history KEY`, every retained version of a key, newest first. It reads them
//! with the watch loop of watch.rs and ends on its bound, never hangs.

use serde::Serialize;

use crate::config::ClusterConfig;
use crate::error::{Error, Result};
use crate::kv::encode_bytes;
use crate::produced::Emit;
use crate::watch::{KeyEvent, Stop, WatchBound, WatchEnd, Watched, watch_until};

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
pub(crate) async fn history(
    config: &ClusterConfig,
    key: &[u8],
    show_secrets: bool,
) -> Result<KeyHistory> {
    let (client, now) = config
        .read_any(|client| async move {
            let now = client
                .call("get", |mut c| async move { c.get(key, None).await })
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
        let mut batches = Vec::new();
        let mut watched = Watched {
            key: key.to_vec(),
            start_revision: start,
            show_secrets,
            ..Watched::default()
        };
        let end = watch_until(&client, &mut watched, stop, &mut Emit::Into(&mut batches)).await?;
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
                let mut events: Vec<KeyEvent> =
                    batches.into_iter().flat_map(|batch| batch.events).collect();
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
