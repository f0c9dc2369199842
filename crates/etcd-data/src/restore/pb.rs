//! The few protobuf messages a restore writes (raftpb, walpb, snappb, etcdserverpb), encoded
//! by hand. Scalar fields are written as the release's protobuf library writes them
//! ([`Zeros`]); repeated scalars are written unpacked, as proto2 does.

/// How a release writes raftpb's zero-valued scalar fields. Either form decodes the same in
/// every release; each is what that release's etcdutl writes, byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zeros {
    /// Always written, as gogoproto writes etcd's non-nullable proto2 fields (etcd 3.4 to
    /// 3.6).
    Written,
    /// Left out, as google.golang.org/protobuf writes raft v3.7's messages (etcd 3.7):
    /// `ConfChange.ID` 0 and `ConfState.AutoLeave` false (and `Entry.Type` EntryNormal,
    /// which a restore does not write); `ConfChange.Type` AddNode and every walpb, snappb
    /// and HardState field are still written.
    Omitted,
}

/// Appends a varint field unless it is zero and `zeros` leaves zeros out.
fn uint_unless_zero(out: &mut Vec<u8>, field: u32, value: u64, zeros: Zeros) {
    if value != 0 || zeros == Zeros::Written {
        uint(out, field, value);
    }
}

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

/// `raftpb.ConfState{voters, auto_leave false}`.
pub fn conf_state(voters: &[u64], zeros: Zeros) -> Vec<u8> {
    let mut out = Vec::new();
    for id in voters {
        uint(&mut out, 1, *id);
    }
    uint_unless_zero(&mut out, 5, 0, zeros); // auto_leave
    out
}

/// `raftpb.ConfChange{ID 0, Type AddNode, NodeID, Context}`.
pub fn conf_change_add_node(node_id: u64, context: &[u8], zeros: Zeros) -> Vec<u8> {
    let mut out = Vec::new();
    uint_unless_zero(&mut out, 1, 0, zeros);
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
pub fn wal_snapshot(index: u64, term: u64, voters: Option<(&[u64], Zeros)>) -> Vec<u8> {
    let mut out = Vec::new();
    uint(&mut out, 1, index);
    uint(&mut out, 2, term);
    if let Some((voters, zeros)) = voters {
        bytes(&mut out, 3, &conf_state(voters, zeros));
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
pub fn raft_snapshot(data: &[u8], voters: &[u64], index: u64, term: u64, zeros: Zeros) -> Vec<u8> {
    let mut metadata = Vec::new();
    bytes(&mut metadata, 1, &conf_state(voters, zeros));
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

    #[test]
    fn zeros_are_left_out_only_where_etcd_3_7_leaves_them_out() {
        assert_eq!(conf_state(&[5], Zeros::Written), [0x08, 5, 0x28, 0]);
        assert_eq!(conf_state(&[5], Zeros::Omitted), [0x08, 5]);
        let written = conf_change_add_node(7, b"{}", Zeros::Written);
        let omitted = conf_change_add_node(7, b"{}", Zeros::Omitted);
        assert_eq!(written[..2], [0x08, 0]);
        // ConfChange.Type AddNode (0) stays.
        assert_eq!(omitted, written[2..]);
        assert_eq!(omitted[..2], [0x10, 0]);
        // walpb.Snapshot's index and term are written even when zero.
        assert_eq!(wal_snapshot(0, 0, None), [0x08, 0, 0x10, 0]);
    }
}
