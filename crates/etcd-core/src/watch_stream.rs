//! Opening a watch so that a stale token does not end it. etcd checks a watch's token when
//! the watch is created, not while it runs, and refuses a stale one (expired, or older than a
//! change of users or roles) by cancelling the new watch at once (3.4: "etcdserver: invalid
//! auth token" or "etcdserver: revision of auth store is old"; 3.5.1: "etcdserver: permission
//! denied", the same words as for a user without read permission). Such a refusal is answered
//! by authenticating again and creating the watch once more; a second refusal is the caller's.

use etcd_client::{WatchOptions, WatchResponse};

use crate::connect::{EndpointClient, says_stale_token};
use crate::error::{Error, Result};

/// A watch on one member, created with a valid token. Read it as etcd-client's stream.
pub struct WatchStream {
    /// The creation's answer (or the failure reading it), read to see whether etcd refused
    /// the token, handed out first.
    first: Option<std::result::Result<Option<WatchResponse>, etcd_client::Error>>,
    inner: etcd_client::WatchStream,
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream").finish_non_exhaustive()
    }
}

impl WatchStream {
    /// The next response of the watch, the creation's first; `None` once etcd closed it.
    pub async fn message(
        &mut self,
    ) -> std::result::Result<Option<WatchResponse>, etcd_client::Error> {
        match self.first.take() {
            Some(first) => first,
            None => self.inner.message().await,
        }
    }
}

/// Whether a watch was cancelled at its creation for its token (see the module's doc).
pub(crate) fn refused_token(response: &WatchResponse) -> bool {
    let reason = response.cancel_reason();
    response.canceled()
        && response.compact_revision() == 0
        && (says_stale_token(reason) || reason.contains("permission denied"))
}

impl EndpointClient {
    /// Creates a watch of `key` with `options` on this member, reading responses of up to
    /// `max_message_bytes`. Waits for etcd's answer to the creation (at most the command
    /// timeout); when it refused the token, authenticates again and creates the watch once
    /// more. A refused authentication (the password changed) is the error.
    pub async fn open_watch(
        &self,
        key: &[u8],
        options: &WatchOptions,
        max_message_bytes: usize,
    ) -> Result<WatchStream> {
        let mut authenticated_again = false;
        loop {
            let mut inner = self
                .call("watch", |c| async move {
                    c.watch_client()
                        .max_decoding_message_size(max_message_bytes)
                        .watch(key, Some(options.clone()))
                        .await
                })
                .await?;
            let first = tokio::time::timeout(self.command_timeout(), inner.message())
                .await
                .map_err(|_| Error::Timeout {
                    operation: "watch",
                    endpoint: self.endpoint().to_string(),
                    timeout: self.command_timeout(),
                    hint: String::new(),
                })?;
            if let Ok(Some(response)) = &first
                && refused_token(response)
                && self.authenticates()
                && !authenticated_again
            {
                self.reauthenticate().await?;
                authenticated_again = true;
                continue;
            }
            return Ok(WatchStream {
                first: Some(first),
                inner,
            });
        }
    }
}
