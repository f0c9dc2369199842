//! The protobuf messages a data dir inspection reads (walpb, raftpb, etcdserverpb, snappb),
//! declared with only the fields it needs: the others (a normal entry's data, a snapshot's v2
//! store) are skipped by the decoder, never copied.

/// `walpb.Record`: one framed WAL record.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Record {
    /// Record type (metadata 1, entry 2, state 3, crc 4, snapshot 5).
    #[prost(int64, tag = "1")]
    pub kind: i64,
    /// Running CRC-32C after this record's data (for a crc record: the one before).
    #[prost(uint32, tag = "2")]
    pub crc: u32,
    /// The record's payload.
    #[prost(bytes = "vec", tag = "3")]
    pub data: Vec<u8>,
}

/// `raftpb.Entry`, without its data (decoded apart, for a membership change only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Entry {
    /// Entry type (normal 0, conf change 1, conf change v2 2).
    #[prost(int32, tag = "1")]
    pub kind: i32,
    /// Term.
    #[prost(uint64, tag = "2")]
    pub term: u64,
    /// Index.
    #[prost(uint64, tag = "3")]
    pub index: u64,
}

/// `raftpb.HardState`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HardState {
    /// Term.
    #[prost(uint64, tag = "1")]
    pub term: u64,
    /// Vote.
    #[prost(uint64, tag = "2")]
    pub vote: u64,
    /// Commit index.
    #[prost(uint64, tag = "3")]
    pub commit: u64,
}

/// `walpb.Snapshot`, without its ConfState.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WalSnapshot {
    /// Index.
    #[prost(uint64, tag = "1")]
    pub index: u64,
    /// Term.
    #[prost(uint64, tag = "2")]
    pub term: u64,
}

/// `etcdserverpb.Metadata`: who wrote the WAL.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metadata {
    /// Member ID.
    #[prost(uint64, tag = "1")]
    pub node_id: u64,
    /// Cluster ID.
    #[prost(uint64, tag = "2")]
    pub cluster_id: u64,
}

/// `snappb.Snapshot`: a `.snap` file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapFile {
    /// CRC-32C of `data`.
    #[prost(uint32, tag = "1")]
    pub crc: u32,
    /// A `raftpb.Snapshot`.
    #[prost(bytes = "vec", tag = "2")]
    pub data: Vec<u8>,
}

/// `raftpb.Snapshot`, without its data.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RaftSnapshot {
    /// Its metadata.
    #[prost(message, optional, tag = "2")]
    pub metadata: Option<SnapshotMetadata>,
}

/// `raftpb.SnapshotMetadata`, without its ConfState.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapshotMetadata {
    /// Index.
    #[prost(uint64, tag = "2")]
    pub index: u64,
    /// Term.
    #[prost(uint64, tag = "3")]
    pub term: u64,
}

/// `raftpb.Entry`'s data alone: read only for a membership change.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EntryData {
    /// The entry's payload.
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
}

/// `raftpb.ConfChange`: one membership change, as etcd 3.4 to 3.7 propose them (never v2).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfChange {
    /// AddNode 0, RemoveNode 1, UpdateNode 2, AddLearnerNode 3.
    #[prost(int32, tag = "2")]
    pub kind: i32,
    /// The member.
    #[prost(uint64, tag = "3")]
    pub node_id: u64,
    /// JSON of etcd's member (`ConfigChangeContext`: the member's fields and `isPromote`).
    #[prost(bytes = "vec", tag = "4")]
    pub context: Vec<u8>,
}
