//! A range in key order, page by page at one revision, each page a bounded range.
//!
//! etcd 3.4 and 3.5 count every key from a request's start to its end on every request,
//! whatever its limit: pages over the rest of the range cost O(rest) each, O(n²) in all. So
//! only the first request spans the range (it gives the count, the revision every later page
//! is pinned to, and the first keys); every later one asks for `[cursor, bound)`, the bound
//! guessed from the keys read so far ([`KeySpace`]) to hold about one page, so etcd walks
//! about one page per request. Pages aim at PAGE_BYTES whatever the value sizes, a response
//! over PAGE_DECODE_LIMIT is refused before it is buffered and asked again with fewer keys,
//! and the next page is requested before the current one is handed over, so etcd's work
//! overlaps ours. Memory: about two pages.

use etcd_client::{GetOptions, GetResponse, KeyValue};
use tokio::task::JoinHandle;

use super::bounds::KeySpace;
use super::{GetPage, GetSummary, MAX_RESPONSE_BYTES, Read};
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::header::ResponseHeader;
use crate::produced::Emit;

/// Keys of the first page (values may be huge: 16 of 1.5 MiB stay under 24 MiB).
const FIRST_PAGE_KEYS: i64 = 16;
/// Bytes a page aims at, counting PER_KEY_BYTES a key beside its key and value.
const PAGE_BYTES: usize = 4 << 20;
/// What a key costs in memory beside its bytes (decoded and shown: structs, allocations).
const PER_KEY_BYTES: usize = 256;
/// Most a page grows over the one before.
const MAX_GROWTH: i64 = 8;
/// Most keys asked for in one page.
const MAX_PAGE_KEYS: i64 = 65_536;
/// Largest page accepted after the first (a page of one key: MAX_RESPONSE_BYTES); a larger
/// one is refused before it is buffered and asked again with fewer keys.
const PAGE_DECODE_LIMIT: usize = 12 << 20;
/// Bounds are guessed this much past one page, so most pages fill up to their limit (a bound
/// a little too far only makes etcd walk a few more keys).
const BOUND_SLACK: f64 = 1.25;
/// Keys of every page when set (tests and tuning), unless the request asks for a size.
const PAGE_KEYS_ENV: &str = "ETCDOPS_GET_PAGE_KEYS";

/// The size of pages: fixed when asked for, else adapted to the bytes of keys and values.
#[derive(Debug, Clone, Copy)]
struct PageSize {
    keys: i64,
    /// The most keys a page may have.
    max: i64,
    fixed: bool,
}

impl PageSize {
    fn new(asked: i64) -> Self {
        let from_env = std::env::var(PAGE_KEYS_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|&n| n > 0);
        match (asked > 0).then_some(asked).or(from_env) {
            Some(keys) => PageSize {
                keys,
                max: keys,
                fixed: true,
            },
            None => PageSize {
                keys: FIRST_PAGE_KEYS,
                max: MAX_PAGE_KEYS,
                fixed: false,
            },
        }
    }

    /// After a page of `kvs`: as many keys as PAGE_BYTES holds at their size, growing at
    /// most MAX_GROWTH times a page.
    fn record(&mut self, kvs: &[KeyValue]) {
        let bytes = kvs.iter().map(|kv| kv.key().len() + kv.value().len()).sum();
        self.record_bytes(kvs.len(), bytes);
    }

    /// [`PageSize::record`] of a page of `keys` keys and `bytes` bytes of keys and values.
    fn record_bytes(&mut self, keys: usize, bytes: usize) {
        if self.fixed || keys == 0 {
            return;
        }
        let bytes = bytes + keys * PER_KEY_BYTES;
        let fits = (PAGE_BYTES as f64 * keys as f64 / bytes as f64) as i64;
        self.keys = fits.clamp(1, (self.keys * MAX_GROWTH).min(self.max));
    }

    /// After a page refused as too large: a few keys only.
    fn shrink(&mut self) {
        self.keys = (self.keys / MAX_GROWTH).max(1);
    }
}

/// One request of a paged read: `[start, end)` (`None`: to the range's end), at most `limit`
/// keys.
struct Ask {
    start: Vec<u8>,
    end: Option<Vec<u8>>,
    limit: i64,
}

/// A request on its way; `None`: refused as too large.
type Pending = JoinHandle<Result<Option<GetResponse>>>;

impl Read<'_> {
    /// A range in key order, page by page at the first page's revision, each page bounded.
    pub(super) async fn paged(&self, emit: &mut Emit<'_, GetPage>) -> Result<GetSummary> {
        let request = self.request;
        let mut size = PageSize::new(request.page_size);
        let limit_for = |returned: u64, keys: i64| {
            if request.limit > 0 {
                keys.min(request.limit - returned as i64)
            } else {
                keys
            }
        };
        let first_limit = limit_for(0, size.keys);
        let (client, mut first) = self
            .first(self.base(request.revision).with_limit(first_limit))
            .await?;
        let header = ResponseHeader::of(first.header());
        // Every later page at the first one's revision: one consistent view.
        let revision = if request.revision > 0 {
            request.revision
        } else {
            first.header().map(|h| h.revision()).unwrap_or_default()
        };
        let count = first.count();
        let range_end = self.range_end.clone().filter(|end| end.as_slice() != [0]);
        let mut space = KeySpace::default();
        let mut returned: u64 = 0;
        let mut ask = Ask {
            start: self.start.clone(),
            end: None,
            limit: first_limit,
        };
        let mut response = Some(first.take_kvs()).map(|kvs| (kvs, first.more()));
        let mut pending: Option<Pending> = None;
        loop {
            let (kvs, more) = match response.take() {
                Some(answer) => answer,
                None => {
                    let Some(next) = pending.take() else {
                        break;
                    };
                    match joined(&client, next.await)? {
                        Some(mut r) => (r.take_kvs(), r.more()),
                        None if ask.limit <= 1 => {
                            return Err(Error::Request {
                                operation: "get",
                                endpoint: client.endpoint().to_string(),
                                message: format!(
                                    "one key's response is over {MAX_RESPONSE_BYTES} bytes"
                                ),
                            });
                        }
                        None => {
                            // Too large: the same range again, with fewer keys.
                            size.shrink();
                            ask.limit = limit_for(returned, size.keys);
                            pending = Some(self.spawn(&client, revision, &ask));
                            continue;
                        }
                    }
                }
            };
            for kv in &kvs {
                space.observe(kv.key());
            }
            size.record(&kvs);
            returned += kvs.len() as u64;
            let limit_reached = request.limit > 0 && returned as i64 >= request.limit;
            let exhausted = !more && ask.end.is_none();
            if !limit_reached && !exhausted {
                // Limited: on after the last key; else the bound was reached.
                let start = match (more, kvs.last()) {
                    (true, Some(last)) => after(last.key()),
                    _ => match (more, &ask.end) {
                        (false, Some(end)) => end.clone(),
                        _ => {
                            return Err(Error::Request {
                                operation: "get",
                                endpoint: client.endpoint().to_string(),
                                message: "etcd answered a page with more keys but sent none".into(),
                            });
                        }
                    },
                };
                let limit = limit_for(returned, size.keys);
                let remaining = count.saturating_sub(returned as i64) as f64;
                let want = limit as f64 * BOUND_SLACK;
                let end = if remaining <= want {
                    None
                } else {
                    // The keys' own spread; with fewer than two, the range they came from.
                    let sample = match (kvs.first(), kvs.last()) {
                        (Some(lo), Some(hi)) if kvs.len() >= 2 => {
                            (lo.key(), hi.key(), (kvs.len() - 1) as f64)
                        }
                        (_, last) => (
                            ask.start.as_slice(),
                            match last {
                                Some(kv) if more => kv.key(),
                                _ => start.as_slice(),
                            },
                            (kvs.len() as f64).max(0.25),
                        ),
                    };
                    space
                        .guess(sample, &start, want)
                        .filter(|bound| range_end.as_ref().is_none_or(|end| bound < end))
                };
                ask = Ask { start, end, limit };
                pending = Some(self.spawn(&client, revision, &ask));
            }
            emit.emit(GetPage {
                header: header.unwrap_or_default(),
                kvs: self.views(kvs),
            })
            .await;
        }
        Ok(GetSummary {
            header,
            revision,
            count,
            returned,
            // As etcd reports it for one request with this limit: keys were left out.
            more: request.limit > 0 && returned as i64 >= request.limit && count > returned as i64,
        })
    }

    /// Sends `ask` on its way.
    fn spawn(&self, client: &EndpointClient, revision: i64, ask: &Ask) -> Pending {
        let end = ask.end.as_deref().or(self.range_end.as_deref());
        let options = self.base_to(revision, end).with_limit(ask.limit);
        let decode_limit = if ask.limit > 1 {
            PAGE_DECODE_LIMIT
        } else {
            MAX_RESPONSE_BYTES
        };
        let (client, start) = (client.clone(), ask.start.clone());
        tokio::spawn(async move { fetch_bounded(&client, start, options, decode_limit).await })
    }
}

/// The first key after `key`.
fn after(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

/// The answer of a spawned request.
fn joined(
    client: &EndpointClient,
    r: std::result::Result<Result<Option<GetResponse>>, tokio::task::JoinError>,
) -> Result<Option<GetResponse>> {
    r.map_err(|e| Error::Request {
        operation: "get",
        endpoint: client.endpoint().to_string(),
        message: e.to_string(),
    })?
}

/// One page, or `None` when its response is over `decode_limit` bytes (refused before it is
/// buffered: tonic reads the length first).
async fn fetch_bounded(
    client: &EndpointClient,
    key: Vec<u8>,
    options: GetOptions,
    decode_limit: usize,
) -> Result<Option<GetResponse>> {
    let (key, options) = (&key, &options);
    client
        .call("get", |c| async move {
            match c
                .kv_client()
                .max_decoding_message_size(decode_limit)
                .get(key.clone(), Some(options.clone()))
                .await
            {
                Ok(response) => Ok(Some(response)),
                Err(etcd_client::Error::GRpcStatus(status)) if too_large(&status) => Ok(None),
                Err(e) => Err(e),
            }
        })
        .await
}

/// Whether `status` is tonic refusing a response over the decoding limit (etcd's own
/// OutOfRange answers are compactions and future revisions).
fn too_large(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::OutOfRange
        && status
            .message()
            .contains("decoded message length too large")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_reach_their_byte_target() {
        let mut size = PageSize::new(0);
        assert_eq!(size.keys, FIRST_PAGE_KEYS);
        let mut steps = 0;
        while steps < 10 {
            let before = size.keys;
            size.record_bytes(before as usize, before as usize * (25 + 1024));
            steps += 1;
            if size.keys == before {
                break;
            }
            assert!(size.keys <= before * MAX_GROWTH);
        }
        let bytes = size.keys as usize * (25 + 1024 + PER_KEY_BYTES);
        assert!(
            bytes > PAGE_BYTES * 9 / 10 && bytes <= PAGE_BYTES,
            "{size:?}"
        );
        assert!(steps <= 5, "{steps}");
        // Huge values: a few keys a page; one key at the least.
        size.record_bytes(4, 4 * (3 << 20));
        assert_eq!(size.keys, 1);
        size.shrink();
        assert_eq!(size.keys, 1);
        // Asked for: fixed.
        let mut fixed = PageSize::new(7);
        fixed.record_bytes(7, 70);
        assert_eq!(fixed.keys, 7);
    }

    #[test]
    fn only_tonics_size_refusal_counts_as_too_large() {
        let refused = tonic::Status::out_of_range(
            "Error, decoded message length too large: found 20000000 bytes, the limit is: 12582912 bytes",
        );
        assert!(too_large(&refused));
        let compacted =
            tonic::Status::out_of_range("etcdserver: mvcc: required revision has been compacted");
        assert!(!too_large(&compacted));
        assert_eq!(after(b"a"), b"a\0");
    }
}
