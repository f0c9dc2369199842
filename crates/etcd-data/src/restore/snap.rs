//! The raft snapshot file `member/snap/<term>-<index>.snap` of a restored member:
//! `snappb.Snapshot{crc: CRC-32C of data, data: raftpb.Snapshot{v2 store JSON, metadata}}`.

use super::pb;

/// The snap file's name for a snapshot at (`term`, `index`).
pub fn file_name(term: u64, index: u64) -> String {
    format!("{term:016x}-{index:016x}.snap")
}

/// The snap file's bytes.
pub fn file_bytes(
    store_json: &[u8],
    voters: &[u64],
    index: u64,
    term: u64,
    zeros: pb::Zeros,
) -> Vec<u8> {
    let snapshot = pb::raft_snapshot(store_json, voters, index, term, zeros);
    pb::snap_file(crc32c::crc32c(&snapshot), &snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_crc() {
        assert_eq!(file_name(1, 3), "0000000000000001-0000000000000003.snap");
        let bytes = file_bytes(b"{}", &[1], 1, 1, pb::Zeros::Written);
        // Field 1 (crc) first, then field 2 (data).
        assert_eq!(bytes[0], 0x08);
        assert!(bytes.windows(2).any(|w| w == b"{}"));
    }
}
