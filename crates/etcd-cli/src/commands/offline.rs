//! etcdutl's offline tools: `defrag --data-dir DIR` and `hashkv FILE|--data-dir DIR`, on a
//! stopped member or a snapshot, no cluster needed. Output: etcdutl's `-w simple` and JSON,
//! our table and JSON.

use anyhow::Result;
use etcdops::snapshot::{DefragRequest, DefragResult, HashKvFileRequest, HashKvResult};

use super::ExitStatus;
use crate::flags::{DefragArgs, OfflineHashKvArgs, OutputFormat};
use crate::output::{Render, human_bytes, print, warn};

/// `defrag --data-dir DIR`.
pub fn defrag(args: &DefragArgs, format: OutputFormat) -> Result<ExitStatus> {
    let Some(data_dir) = &args.data_dir else {
        anyhow::bail!("defrag --data-dir needs a data dir");
    };
    let request = DefragRequest {
        data_dir: data_dir.clone(),
    };
    let done = etcdops::snapshot::defrag_data_dir(&request)?;
    for leftover in &done.removed_leftovers {
        crate::output::note(&format!(
            "removed {}, left by an interrupted defragmentation",
            leftover.display()
        ));
    }
    print(
        format,
        &DefragView {
            data_dir: data_dir.display().to_string(),
            result: done,
        },
    )?;
    Ok(ExitStatus::Success)
}

/// `hashkv FILE|--data-dir DIR [--rev REV]`.
pub async fn hashkv(args: &OfflineHashKvArgs, format: OutputFormat) -> Result<ExitStatus> {
    let request = HashKvFileRequest {
        snapshot: args.source.clone(),
        data_dir: args.data_dir.clone(),
        revision: args.rev,
        identity: etcdops::snapshot::IdentitySettings {
            identity_file: args.identity.identity.clone(),
            identity_content: None,
        },
        store: super::snapshot::settings(&args.store_flags),
    };
    let result = etcdops::snapshot::hash_kv(&request).await?;
    for warning in &result.warnings {
        warn(warning);
    }
    print(format, &HashKvView(result))?;
    Ok(ExitStatus::Success)
}

/// What `defrag --data-dir` did.
#[derive(serde::Serialize)]
struct DefragView {
    data_dir: String,
    #[serde(flatten)]
    result: DefragResult,
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
struct HashKvView(HashKvResult);

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
