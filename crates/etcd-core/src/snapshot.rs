//! The raw `Maintenance.Snapshot` stream of one member: the bbolt db followed by etcd's
//! 32-byte SHA-256 of it. Checking, compressing and storing it is etcd-snapshot's work.

use crate::connect::{EndpointClient, classify};
use crate::error::Result;

/// One piece of the snapshot stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotChunk {
    /// Bytes of the stream (db bytes, and at the end etcd's SHA-256 trailer).
    pub bytes: Vec<u8>,
    /// Bytes the member says are still to come after this chunk.
    pub remaining_bytes: u64,
}

/// A snapshot being streamed from exactly one member. No command timeout applies: a large db
/// takes as long as it takes; a dead member ends the stream with an error.
pub struct SnapshotStream {
    inner: etcd_client::SnapshotStreaming,
    client: EndpointClient,
}

impl std::fmt::Debug for SnapshotStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotStream")
            .field("endpoint", &self.client.endpoint())
            .finish_non_exhaustive()
    }
}

impl EndpointClient {
    /// Starts streaming a snapshot from this member.
    pub async fn snapshot_stream(&self) -> Result<SnapshotStream> {
        let inner = self
            .call("snapshot", |mut c| async move { c.snapshot().await })
            .await?;
        Ok(SnapshotStream {
            inner,
            client: self.clone(),
        })
    }
}

impl SnapshotStream {
    /// The next chunk, or `None` at the end of the stream.
    pub async fn next_chunk(&mut self) -> Result<Option<SnapshotChunk>> {
        match self.inner.message().await {
            Ok(Some(message)) => Ok(Some(SnapshotChunk {
                bytes: message.blob().to_vec(),
                remaining_bytes: message.remaining_bytes(),
            })),
            Ok(None) => Ok(None),
            Err(err) => Err(classify(
                &err,
                &self.client.error_context("snapshot stream"),
            )),
        }
    }

    /// The endpoint streamed from.
    pub fn endpoint(&self) -> &str {
        self.client.endpoint()
    }
}
