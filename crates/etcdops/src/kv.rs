//! Key queries both front-ends make (`etcdops get`, `etcd_kv_info`): one request type, so
//! the key, range and revision options mean the same in both.

use serde::Deserialize;

/// The key-value reads and watches of etcd-core (`client.kv()`), with the types they take
/// and return (the streams of `get_stream` and `watch_batches` are `futures::Stream`s the
/// caller drives).
pub use etcd_core::{
    Consistency, Encoding, EventKind, GetPage, GetRequest, GetStream, GetSummary, KeyEvent,
    KeyHistory, KeyValueView, Kv, RevisionBounds, SortBy, WatchBatch, WatchBatchStream, WatchBound,
    WatchRequest, WatchSummary, prefix_end,
};

/// Which keys to read, at which revision, and how much of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct KeyQuery {
    /// The key (or the range's start). The module calls it `etcd_key` (`key` is the client
    /// key of the connection options).
    #[serde(rename = "etcd_key")]
    pub key: String,
    /// Every key with `key` as prefix.
    pub prefix: bool,
    /// The range's end (exclusive).
    pub range_end: Option<String>,
    /// Every key from `key` on.
    pub from_key: bool,
    /// The revision to read at (0: the latest).
    pub revision: i64,
    /// Keys without values.
    pub keys_only: bool,
    /// Only count the keys.
    pub count_only: bool,
    /// At most this many keys (0 or absent: no limit).
    #[schemars(skip)] // each front-end has its own default
    pub limit: Option<i64>,
    /// Show the values of Kubernetes Secrets instead of redacting them.
    pub show_secrets: bool,
    /// Serializable reads (etcdctl's `--consistency s`): the member that answers reads its
    /// own store, without a quorum round; possibly stale.
    #[schemars(skip)] // not a module option
    pub serializable: bool,
}

impl KeyQuery {
    /// The library request of this query, unsorted (the caller may set `sort`).
    pub fn request(&self) -> GetRequest {
        GetRequest {
            key: self.key.as_bytes().to_vec(),
            range_end: self.range_end.as_ref().map(|e| e.as_bytes().to_vec()),
            prefix: self.prefix,
            from_key: self.from_key,
            revision: self.revision,
            keys_only: self.keys_only,
            count_only: self.count_only,
            limit: self.limit.unwrap_or(0),
            sort: None,
            show_secrets: self.show_secrets,
            serializable: self.serializable,
            page_size: 0,
            bounds: RevisionBounds::default(),
        }
    }

    /// Whether it names one key (no prefix, no range): what a key's history reads.
    pub fn is_one_key(&self) -> bool {
        !self.key.is_empty() && !self.prefix && self.range_end.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_options_deserialize_into_a_query() {
        let query: KeyQuery = serde_json::from_value(serde_json::json!({
            "etcd_key": "/registry/", "prefix": true, "limit": 5
        }))
        .unwrap();
        let request = query.request();
        assert_eq!(request.key, b"/registry/");
        assert!(request.prefix && !query.is_one_key());
        assert_eq!(request.limit, 5);
        assert!(
            KeyQuery {
                key: "a".into(),
                ..KeyQuery::default()
            }
            .is_one_key()
        );
    }
}
