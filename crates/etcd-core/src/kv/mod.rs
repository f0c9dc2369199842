//! Read-only key access for diagnostics: `get` in pages (bounded memory, one pinned revision),
//! values as text or base64, Kubernetes Secrets redacted unless asked for.
//!
//! Writing or deleting keys is out of scope on purpose: it is how Kubernetes datastores get
//! broken.

use std::pin::Pin;
use std::task::{Context, Poll};

use etcd_client::{GetOptions, SortOrder, SortTarget};
use futures::{Stream, StreamExt};
use serde::Serialize;

use crate::config::ClusterConfig;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::header::ResponseHeader;
use crate::produced::{Emit, Produced};
use etcd_common::Hint;

mod bounds;
mod client;
mod paged;

pub use client::Kv;

use etcd_common::options::FROM_KEY;

/// Key prefixes whose values are Kubernetes Secrets (kubeadm and most distributions, OpenShift).
pub const SECRET_PREFIXES: &[&str] = &["/registry/secrets/", "/kubernetes.io/secrets/"];

/// Whether a key holds a Kubernetes Secret.
pub fn is_kubernetes_secret(key: &[u8]) -> bool {
    SECRET_PREFIXES
        .iter()
        .any(|p| key.starts_with(p.as_bytes()))
}

/// How a key or value is written in output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Valid UTF-8, shown as is.
    Text,
    /// Binary (Kubernetes protobuf, encrypted data), shown as base64.
    Base64,
    /// Hidden: a Kubernetes Secret (shown only when asked for).
    Redacted,
}

/// Bytes as text when they are UTF-8, else base64.
pub fn encode_bytes(bytes: &[u8]) -> (String, Encoding) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_string(), Encoding::Text),
        Err(_) => (base64_encode(bytes), Encoding::Base64),
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The prefix of every value Kubernetes encrypted at rest (`k8s:enc:aescbc:v1:`,
/// `k8s:enc:kms:v2:`, ...): ciphertext, which the encryption-at-rest check of Kubernetes' own
/// documentation reads with `etcdctl get | hexdump`.
pub const ENCRYPTED_VALUE_PREFIX: &[u8] = b"k8s:enc:";

/// Whether a value is hidden unless secrets are asked for: a Kubernetes Secret stored in the
/// clear. One already encrypted at rest is ciphertext and shown as any binary value.
pub fn is_redacted(key: &[u8], value: &[u8]) -> bool {
    is_kubernetes_secret(key) && !value.starts_with(ENCRYPTED_VALUE_PREFIX)
}

/// A value as shown: text, base64, or redacted.
pub fn show_value(key: &[u8], value: &[u8], show_secrets: bool) -> (String, Encoding) {
    if !show_secrets && is_redacted(key, value) {
        (
            format!(
                "<redacted Kubernetes Secret, {} bytes; shown only when secrets are asked for>",
                value.len()
            ),
            Encoding::Redacted,
        )
    } else {
        encode_bytes(value)
    }
}

/// The exact bytes behind a shown key-value pair, for output that must equal etcdctl's byte
/// for byte (raw to a pipe, base64 in its JSON). Never serialized.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvBytes {
    /// The key.
    pub key: Vec<u8>,
    /// The value; `None` when it was not read (keys only) or is redacted (a Kubernetes
    /// Secret without `show_secrets`).
    pub value: Option<Vec<u8>>,
    /// The lease ID (0: none).
    pub lease: i64,
}

/// One key-value pair as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyValueView {
    /// The key.
    pub key: String,
    /// How `key` is written.
    pub key_encoding: Encoding,
    /// The value (absent with `keys_only`).
    pub value: Option<String>,
    /// How `value` is written.
    pub value_encoding: Option<Encoding>,
    /// Size of the value in bytes.
    pub value_size: usize,
    /// Revision of the key's creation.
    pub create_revision: i64,
    /// Revision of its last modification.
    pub mod_revision: i64,
    /// Number of modifications since creation.
    pub version: i64,
    /// Lease ID (hex), or `None`.
    pub lease: Option<String>,
    /// The exact bytes of the key and value.
    #[serde(skip)]
    pub bytes: KvBytes,
}

impl KeyValueView {
    pub(crate) fn from_kv(kv: &etcd_client::KeyValue, keys_only: bool, show_secrets: bool) -> Self {
        let (key, key_encoding) = encode_bytes(kv.key());
        let (value, value_encoding) = if keys_only {
            (None, None)
        } else {
            let (v, e) = show_value(kv.key(), kv.value(), show_secrets);
            (Some(v), Some(e))
        };
        KeyValueView {
            key,
            key_encoding,
            value_size: kv.value().len(),
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
            version: kv.version(),
            lease: (kv.lease() != 0).then(|| format!("{:x}", kv.lease())),
            bytes: KvBytes {
                key: kv.key().to_vec(),
                value: match value_encoding {
                    None | Some(Encoding::Redacted) => None,
                    Some(_) => Some(kv.value().to_vec()),
                },
                lease: kv.lease(),
            },
            value,
            value_encoding,
        }
    }

    /// [`KeyValueView::from_kv`] taking the pair's bytes over instead of copying them.
    pub(crate) fn from_owned(
        kv: etcd_client::KeyValue,
        keys_only: bool,
        show_secrets: bool,
    ) -> Self {
        let (create_revision, mod_revision, version, lease) = (
            kv.create_revision(),
            kv.mod_revision(),
            kv.version(),
            kv.lease(),
        );
        let (key_bytes, value_bytes) = kv.into_key_value();
        let (key, key_encoding) = encode_bytes(&key_bytes);
        let value_size = value_bytes.len();
        let (value, value_encoding) = if keys_only {
            (None, None)
        } else {
            let (v, e) = show_value(&key_bytes, &value_bytes, show_secrets);
            (Some(v), Some(e))
        };
        KeyValueView {
            key,
            key_encoding,
            value_size,
            create_revision,
            mod_revision,
            version,
            lease: (lease != 0).then(|| format!("{lease:x}")),
            bytes: KvBytes {
                key: key_bytes,
                value: match value_encoding {
                    None | Some(Encoding::Redacted) => None,
                    Some(_) => Some(value_bytes),
                },
                lease,
            },
            value,
            value_encoding,
        }
    }
}

/// What to sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    /// Key (the natural order; paged).
    #[default]
    Key,
    /// Creation revision.
    Create,
    /// Last modification revision.
    Modify,
    /// Version.
    Version,
    /// Value.
    Value,
}

/// A `get` request.
#[derive(Debug, Clone, Default)]
pub struct GetRequest {
    /// The key, or the start of the range.
    pub key: Vec<u8>,
    /// End of the range (exclusive).
    pub range_end: Option<Vec<u8>>,
    /// Every key starting with `key`.
    pub prefix: bool,
    /// Every key from `key` on.
    pub from_key: bool,
    /// Read at this revision (0: latest).
    pub revision: i64,
    /// Keys only.
    pub keys_only: bool,
    /// Only count.
    pub count_only: bool,
    /// At most this many keys (0: all).
    pub limit: i64,
    /// Sort order; anything but key ascending is one request sorted by etcd (not paged).
    pub sort: Option<(SortBy, bool)>,
    /// Show Kubernetes Secrets' values.
    pub show_secrets: bool,
    /// Serializable reads (etcdctl's `--consistency s`): the member answers from its own
    /// store without a quorum round; possibly stale.
    pub serializable: bool,
    /// Keys per page; 0 adapts the page size to the data (about 4 MiB per page), or takes
    /// `ETCDOPS_GET_PAGE_KEYS` keys when that is set (tests and tuning).
    pub page_size: i64,
    /// Only keys created or last modified within these revisions (etcdctl's
    /// `--min-create-rev` and the like); any bound makes the read one request.
    pub bounds: RevisionBounds,
}

/// Bounds etcd applies to the keys a range returns (0: no bound), as etcdctl's
/// `--min-create-rev`, `--max-create-rev`, `--min-mod-rev` and `--max-mod-rev` set them. etcd
/// filters after it read the range: the count is of the range, unfiltered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RevisionBounds {
    /// Created at this revision or later.
    pub min_create: i64,
    /// Created at this revision or earlier.
    pub max_create: i64,
    /// Last modified at this revision or later.
    pub min_mod: i64,
    /// Last modified at this revision or earlier.
    pub max_mod: i64,
}

impl RevisionBounds {
    /// Whether any bound is set.
    pub fn any(&self) -> bool {
        *self != RevisionBounds::default()
    }
}

/// What a `get` returned overall.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GetSummary {
    /// The header of the first response (who answered, at which revision and term).
    pub header: Option<ResponseHeader>,
    /// The revision every page was read at.
    pub revision: i64,
    /// Keys in the range at that revision.
    pub count: i64,
    /// Keys returned.
    pub returned: u64,
    /// Whether keys were left out because of `limit`.
    pub more: bool,
}

/// The end of the range of keys starting with `prefix`, as etcd computes it; `[0]` (every key
/// from `prefix` on) when no such end exists. The one copy: every range of a prefix uses it.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

fn sort_target(by: SortBy) -> SortTarget {
    match by {
        SortBy::Key => SortTarget::Key,
        SortBy::Create => SortTarget::Create,
        SortBy::Modify => SortTarget::Mod,
        SortBy::Version => SortTarget::Version,
        SortBy::Value => SortTarget::Value,
    }
}

/// Reads keys page by page at one revision, handing each page to `on_page`, so a prefix of
/// millions of keys never sits in memory at once ([`get_stream`], driven to its end).
pub(crate) async fn get_pages(
    config: &ClusterConfig,
    request: &GetRequest,
    mut on_page: impl FnMut(Vec<KeyValueView>) -> Result<()>,
) -> Result<GetSummary> {
    let mut pages = get_stream(config, request);
    while let Some(page) = pages.next().await {
        on_page(page?.kvs)?;
    }
    Ok(pages
        .summary()
        .cloned()
        .expect("a get stream that ended without an error has its summary"))
}

/// One page of a `get`, in key order (or the one sorted answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetPage {
    /// The header of the first response (the same on every page), for output that starts
    /// with it (etcdctl's JSON).
    pub header: ResponseHeader,
    /// The page's keys.
    pub kvs: Vec<KeyValueView>,
}

/// The pages of a `get` ([`Kv::get_stream`](crate::Kv::get_stream)), read as the caller asks
/// for them: the next page is requested while the caller handles one, never more. Dropping it
/// stops the read.
pub struct GetStream<'a>(Produced<'a, GetPage, GetSummary>);

impl std::fmt::Debug for GetStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GetStream")
            .field("summary", &self.summary())
            .finish_non_exhaustive()
    }
}

impl GetStream<'_> {
    /// What the `get` returned overall, once the stream ended (gave `None`) without an
    /// error.
    pub fn summary(&self) -> Option<&GetSummary> {
        self.0.summary()
    }
}

impl Stream for GetStream<'_> {
    type Item = Result<GetPage>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_next_unpin(cx)
    }
}

/// Reads keys page by page at one revision, as a stream of pages the caller drives (a prefix
/// of millions of keys never sits in memory at once); its [`GetStream::summary`] follows the
/// last page. A count-only read has no page.
pub(crate) fn get_stream<'a>(config: &'a ClusterConfig, request: &'a GetRequest) -> GetStream<'a> {
    GetStream(Produced::new(move |mut emit| async move {
        read(config, request, &mut emit).await
    }))
}

/// The loop of [`get_stream`].
async fn read(
    config: &ClusterConfig,
    request: &GetRequest,
    emit: &mut Emit<'_, GetPage>,
) -> Result<GetSummary> {
    if request.key.is_empty() && !request.from_key && !request.prefix {
        return Err(Error::InvalidRequest {
            what: "key",
            reason: "give a key, or read from the key on with an empty key for every key".into(),
            hint: Hint::option(FROM_KEY),
        });
    }
    // etcd refuses an empty key: every key is the range from "\0" on, as etcdctl asks.
    let (start, range_end): (Vec<u8>, Option<Vec<u8>>) = if request.key.is_empty() {
        (vec![0], Some(vec![0]))
    } else if request.prefix {
        (request.key.clone(), Some(prefix_end(&request.key)))
    } else if request.from_key {
        (request.key.clone(), Some(vec![0]))
    } else {
        (request.key.clone(), request.range_end.clone())
    };
    let read = Read {
        config,
        request,
        start,
        range_end,
    };

    if request.count_only {
        let options = read.base(request.revision).with_count_only();
        let (_, response) = read.first(options).await?;
        return Ok(GetSummary {
            header: ResponseHeader::of(response.header()),
            revision: response.header().map(|h| h.revision()).unwrap_or_default(),
            count: response.count(),
            returned: 0,
            more: false,
        });
    }

    let natural = matches!(request.sort, None | Some((SortBy::Key, true)));
    // A page etcd filtered to nothing would end a paged read early: bounds read at once.
    if !natural || read.range_end.is_none() || request.bounds.any() {
        return read.one_page(emit).await;
    }
    read.paged(emit).await
}

/// One `get` on its way: the request and the range it covers.
struct Read<'a> {
    config: &'a ClusterConfig,
    request: &'a GetRequest,
    /// The first key of the range.
    start: Vec<u8>,
    /// Its end (exclusive; `[0]`: no end), `None` for one key.
    range_end: Option<Vec<u8>>,
}

impl Read<'_> {
    /// The options of every request of this read, at `revision`.
    fn base(&self, revision: i64) -> GetOptions {
        self.base_to(revision, self.range_end.as_deref())
    }

    /// [`Read::base`] for a request ending at `end` (exclusive) instead of the range's end.
    fn base_to(&self, revision: i64, end: Option<&[u8]>) -> GetOptions {
        let mut options = GetOptions::new().with_revision(revision);
        if let Some(end) = end {
            options = options.with_range(end.to_vec());
        }
        if self.request.keys_only {
            options = options.with_keys_only();
        }
        if self.request.serializable {
            options = options.with_serializable();
        }
        let bounds = self.request.bounds;
        if bounds.min_create > 0 {
            options = options.with_min_create_revision(bounds.min_create);
        }
        if bounds.max_create > 0 {
            options = options.with_max_create_revision(bounds.max_create);
        }
        if bounds.min_mod > 0 {
            options = options.with_min_mod_revision(bounds.min_mod);
        }
        if bounds.max_mod > 0 {
            options = options.with_max_mod_revision(bounds.max_mod);
        }
        options
    }

    /// The first request goes to the first endpoint that serves it (the next one when an
    /// endpoint fails); the rest of a paged read stays on that endpoint.
    async fn first(
        &self,
        options: GetOptions,
    ) -> Result<(EndpointClient, etcd_client::GetResponse)> {
        self.config
            .read_any(move |client| {
                let (key, options) = (self.start.clone(), options.clone());
                async move {
                    let response = fetch(&client, key, options).await?;
                    Ok((client, response))
                }
            })
            .await
    }

    /// The views of a page, taking its bytes over (no copy of a binary value).
    fn views(&self, kvs: Vec<etcd_client::KeyValue>) -> Vec<KeyValueView> {
        kvs.into_iter()
            .map(|kv| {
                KeyValueView::from_owned(kv, self.request.keys_only, self.request.show_secrets)
            })
            .collect()
    }

    /// A sorted read, or one key: a single request, sorted by etcd.
    async fn one_page(&self, emit: &mut Emit<'_, GetPage>) -> Result<GetSummary> {
        let request = self.request;
        let mut options = self.base(request.revision);
        if let Some((by, ascending)) = request.sort {
            let order = if ascending {
                SortOrder::Ascend
            } else {
                SortOrder::Descend
            };
            options = options.with_sort(sort_target(by), order);
        }
        if request.limit > 0 {
            options = options.with_limit(request.limit);
        }
        let (_, mut response) = self.first(options).await?;
        let page = self.views(response.take_kvs());
        let returned = page.len() as u64;
        let header = ResponseHeader::of(response.header());
        emit.emit(GetPage {
            header: header.unwrap_or_default(),
            kvs: page,
        })
        .await;
        Ok(GetSummary {
            header,
            revision: response.header().map(|h| h.revision()).unwrap_or_default(),
            count: response.count(),
            returned,
            more: response.more(),
        })
    }
}

/// Largest response accepted: etcdctl accepts any size; tonic's default is 4 MiB, too small
/// for one page of large Kubernetes objects.
pub(crate) const MAX_RESPONSE_BYTES: usize = 1 << 30;

async fn fetch(
    client: &EndpointClient,
    key: Vec<u8>,
    options: GetOptions,
) -> Result<etcd_client::GetResponse> {
    let (key, options) = (&key, &options);
    client
        .call("get", |c| async move {
            c.kv_client()
                .max_decoding_message_size(MAX_RESPONSE_BYTES)
                .get(key.clone(), Some(options.clone()))
                .await
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends_follow_etcd() {
        assert_eq!(prefix_end(b"/registry/"), b"/registry0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        assert_eq!(prefix_end(b""), vec![0]);
    }

    #[test]
    fn secrets_are_redacted_unless_asked_for() {
        let (shown, enc) = show_value(b"/registry/secrets/default/db", b"hunter2", false);
        assert_eq!(enc, Encoding::Redacted);
        assert!(!shown.contains("hunter2"));
        let (shown, enc) = show_value(b"/kubernetes.io/secrets/ns/x", b"hunter2", true);
        assert_eq!((shown.as_str(), enc), ("hunter2", Encoding::Text));
        let (_, enc) = show_value(b"/registry/configmaps/x", b"\x00k8s\xff", false);
        assert_eq!(enc, Encoding::Base64);
        // Encrypted at rest: ciphertext, shown (the encryption check reads it), never redacted.
        let sealed = b"k8s:enc:aescbc:v1:key1:\x8f\x00\xa1";
        let (shown, enc) = show_value(b"/registry/secrets/default/db", sealed, false);
        assert_eq!(enc, Encoding::Base64);
        assert_eq!(shown, encode_bytes(sealed).0);
        // Only the whole prefix counts: a plaintext value that merely starts like it is hidden.
        let (_, enc) = show_value(b"/registry/secrets/default/db", b"k8s:en", false);
        assert_eq!(enc, Encoding::Redacted);
    }

    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(&[0xff, 0x00, 0x80]), "/wCA");
    }

    #[tokio::test]
    async fn a_get_without_a_key_is_the_streams_one_item_and_leaves_no_summary() {
        let config = crate::ConnectionOptions {
            endpoints: Some(vec!["http://127.0.0.1:1".into()]),
            ..Default::default()
        }
        .build()
        .unwrap();
        let request = GetRequest::default();
        let mut pages = get_stream(&config, &request);
        let err = pages.next().await.unwrap().unwrap_err();
        assert!(
            matches!(err, Error::InvalidRequest { what: "key", .. }),
            "{err}"
        );
        assert!(pages.next().await.is_none());
        assert_eq!(pages.summary(), None);
        let err = get_pages(&config, &request, |_| Ok(())).await.unwrap_err();
        assert!(matches!(err, Error::InvalidRequest { .. }), "{err}");
    }
}
