//! The WAL reader (etcd-data's data dir inspection) on arbitrary bytes: as one segment, the
//! last (where a torn record ends the log), and split in two at a point the first two bytes
//! choose (the CRC chain across segments, damage before the last one); and the same bytes as
//! a `.snap` file. Anything may be an error; nothing may panic, hang or allocate beyond the
//! input's size.
#![no_main]

use etcd_data::inspect::{decode_snap_file, read_wal_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_wal_bytes(&[("0000000000000000-0000000000000000.wal", data)]);
    if let [a, b, rest @ ..] = data {
        let at = usize::from(u16::from_le_bytes([*a, *b])) % (rest.len() + 1);
        let (first, second) = rest.split_at(at);
        let _ = read_wal_bytes(&[
            ("0000000000000000-0000000000000000.wal", first),
            ("0000000000000001-0000000000000001.wal", second),
        ]);
    }
    let _ = decode_snap_file(data);
});
