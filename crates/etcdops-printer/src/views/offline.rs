//! How `offline` results are printed.

use crate::output::{Render, human_bytes};
use etcdops::snapshot::{DefragResult, HashKvResult};

/// What `defrag --data-dir` did.
#[derive(serde::Serialize)]
pub struct DefragView {
    /// The data dir, as given.
    pub data_dir: String,
    /// The library's result.
    #[serde(flatten)]
    pub result: DefragResult,
}

impl Render for DefragView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["DB", "SIZE BEFORE", "SIZE AFTER", "BUCKETS", "KEYS"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.result;
        vec![vec![
            r.db.display().to_string(),
            human_bytes(r.size_before as i64),
            human_bytes(r.size_after as i64),
            r.buckets.to_string(),
            r.keys.to_string(),
        ]]
    }

    /// etcdctl 3.4's line for `defrag --data-dir` (etcdutl prints nothing).
    fn simple_lines(&self) -> Vec<String> {
        vec![format!(
            "Finished defragmenting etcd data[{}]",
            self.data_dir
        )]
    }
}

/// etcd's KV hash of a snapshot or a stopped member.
#[derive(serde::Serialize)]
pub struct HashKvView(pub HashKvResult);

impl Render for HashKvView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["SOURCE", "HASH", "HASH REVISION", "COMPACT REVISION"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let h = &self.0.hash;
        vec![vec![
            self.0.source.clone(),
            h.hash.to_string(),
            h.hash_revision.to_string(),
            h.compact_revision.to_string(),
        ]]
    }

    /// etcdutl 3.6's `-w simple`: `hash, hash revision, compact revision`.
    fn simple_lines(&self) -> Vec<String> {
        let h = &self.0.hash;
        vec![format!(
            "{}, {}, {}",
            h.hash, h.hash_revision, h.compact_revision
        )]
    }

    /// etcdutl 3.6's `-w json`: `hash`, `hashRevision`, `compactRevision`.
    fn etcdctl_json(&self, _hex: bool) -> Option<serde_json::Value> {
        let h = &self.0.hash;
        Some(serde_json::json!({
            "hash": h.hash,
            "hashRevision": h.hash_revision,
            "compactRevision": h.compact_revision,
        }))
    }
}
