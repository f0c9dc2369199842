//! [`Kv`]: the key-value reads of a [`Client`] (`client.kv()`): `get` as pages, `watch` as
//! batches, both streams the caller drives, and a key's history.

use super::{GetRequest, GetStream, GetSummary, KeyValueView};
use crate::client::Client;
use crate::error::Result;
use crate::history::KeyHistory;
use crate::watch::{KeyEvent, WatchBatchStream, WatchRequest, WatchSummary};

/// The key-value reads of a cluster ([`Client::kv`]), read only. Each read connects for
/// itself from the client's settings, as a watch that resumes on another endpoint does.
#[derive(Debug, Clone, Copy)]
pub struct Kv<'c>(&'c Client);

impl Client {
    /// The key-value reads: `get`, `watch`, a key's history.
    pub fn kv(&self) -> Kv<'_> {
        Kv(self)
    }
}

impl<'c> Kv<'c> {
    /// Reads keys page by page at one revision, as a stream of pages the caller drives (a
    /// prefix of millions of keys never sits in memory at once); its
    /// [`GetStream::summary`] follows the last page. A count-only read has no page.
    pub fn get_stream<'a>(&self, request: &'a GetRequest) -> GetStream<'a>
    where
        'c: 'a,
    {
        super::get_stream(self.0.config(), request)
    }

    /// Reads keys page by page at one revision, handing each page to `on_page`
    /// ([`Kv::get_stream`], driven to its end).
    pub async fn get_pages(
        &self,
        request: &GetRequest,
        on_page: impl FnMut(Vec<KeyValueView>) -> Result<()>,
    ) -> Result<GetSummary> {
        super::get_pages(self.0.config(), request, on_page).await
    }

    /// Streams etcd's watch responses (events in etcd's batches, with their header, and
    /// progress notifications) from `start_revision` until the bound, or until the caller
    /// drops the stream when the request is `unbounded`; its [`WatchBatchStream::summary`]
    /// follows the last batch. A broken stream resumes on another endpoint.
    pub fn watch_batches<'a>(&self, request: &'a WatchRequest) -> WatchBatchStream<'a>
    where
        'c: 'a,
    {
        crate::watch::watch_batches(self.0.config(), request)
    }

    /// Delivers events to `on_event` from `start_revision` until the bound
    /// ([`Kv::watch_batches`], driven to its end).
    pub async fn watch(
        &self,
        request: &WatchRequest,
        on_event: &mut (dyn FnMut(KeyEvent) -> Result<()> + Send),
    ) -> Result<WatchSummary> {
        crate::watch::watch(self.0.config(), request, on_event).await
    }

    /// Every retained version of `key`, newest first. On a Kubernetes etcd, kube-apiserver
    /// compacts every five minutes by default, so history reaches back only minutes there.
    pub async fn history(&self, key: &[u8], show_secrets: bool) -> Result<KeyHistory> {
        crate::history::history(self.0.config(), key, show_secrets).await
    }
}
