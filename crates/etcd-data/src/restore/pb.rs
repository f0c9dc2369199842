//! The few protobuf messages a restore writes (raftpb, walpb, snappb, etcdserverpb), encoded
//! by hand. Scalar fields are always written, as gogoproto writes etcd's non-nullable proto2
//! fields; repeated scalars are written unpacked, as proto2 does.

/// Appends a base-128 varint.
fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a varint field.
pub fn uint(out: &mut Vec<u8>, field: u32, value: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, value);
}

/// Appends a length-delimited field.
pub fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// `raftpb.ConfState{voters}`.
pub fn conf_state(voters: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    for id in voters {
        uint(&mut out, 1, *id);
    }
    uint(&mut out, 5, 0); // auto_leave
    out
}

/// `raftpb.ConfChange{ID 0, Type AddNode, NodeID, Context}`.
pub fn conf_change_add_node(node_id: u64, context: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    uint(&mut out, 1, 0);
    uint(&mut out, 2, 0); // ConfChangeAddNode
    uint(&mut out, 3, node_id);
    bytes(&mut out, 4, context);
    out
}

/// `raftpb.Entry{Type ConfChange, Term, Index, Data}`.
pub fn conf_change_entry(term: u64, index: u64, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    uint(&mut out, 1, 1); // EntryConfChange
    uint(&mut out, 2, term);
    uint(&mut out, 3, index);
    bytes(&mut out, 4, data);
    out
}

/// `raftpb.HardState{Term, Vote, Commit}`.
pub fn hard_state(term: u64, vote: u64, commit: u64) -> Vec<u8> {
    let mut out = Vec::new();
    uint(&mut out, 1, term);
    uint(&mut out, 2, vote);
    uint(&mut out, 3, commit);
    out
}

/// `etcdserverpb.Metadata{NodeID, ClusterID}`.
pub fn wal_metadata(node_id: u64, cluster_id: u64) -> Vec<u8> {
    let mut out = Vec::new();
    uint(&mut out, 1, node_id);
    uint(&mut out, 2, cluster_id);
    out
}

/// `walpb.Snapshot{Index, Term, ConfState}`; no ConfState for the empty first snapshot.
pub fn wal_snapshot(index: u64, term: u64, voters: Option<&[u64]>) -> Vec<u8> {
    let mut out = Vec::new();
    uint(&mut out, 1, index);
    uint(&mut out, 2, term);
    if let Some(voters) = voters {
        bytes(&mut out, 3, &conf_state(voters));
    }
    out
}

/// `walpb.Record{Type, Crc, Data}`; no Data field when `data` is `None`.
pub fn wal_record(kind: i64, crc: u32, data: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    uint(&mut out, 1, kind as u64);
    uint(&mut out, 2, u64::from(crc));
    if let Some(data) = data {
        bytes(&mut out, 3, data);
    }
    out
}

/// `raftpb.Snapshot{Data, Metadata{ConfState, Index, Term}}`.
pub fn raft_snapshot(data: &[u8], voters: &[u64], index: u64, term: u64) -> Vec<u8> {
    let mut metadata = Vec::new();
    bytes(&mut metadata, 1, &conf_state(voters));
    uint(&mut metadata, 2, index);
    uint(&mut metadata, 3, term);
    let mut out = Vec::new();
    bytes(&mut out, 1, data);
    bytes(&mut out, 2, &metadata);
    out
}

/// `snappb.Snapshot{Crc, Data}`.
pub fn snap_file(crc: u32, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    uint(&mut out, 1, u64::from(crc));
    bytes(&mut out, 2, data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_encode_as_protobuf() {
        let mut out = Vec::new();
        uint(&mut out, 1, 300);
        assert_eq!(out, [0x08, 0xAC, 0x02]);
        let mut out = Vec::new();
        bytes(&mut out, 2, b"hi");
        assert_eq!(out, [0x12, 2, b'h', b'i']);
        assert_eq!(hard_state(1, 2, 3), [0x08, 1, 0x10, 2, 0x18, 3]);
        assert_eq!(wal_record(4, 0, None), [0x08, 4, 0x10, 0]);
    }
}
