//! Shared by the fuzz targets.

use etcd_snapshot::fnv1a64;

/// `data` with the FNV-1a checksum of each meta page (4 KiB pages, the usual size) recomputed,
/// so that mutations of the meta fields get past the checksum and reach the reader.
pub fn with_valid_meta_checksums(data: &[u8]) -> Vec<u8> {
    let mut fixed = data.to_vec();
    for page in [0usize, 4096] {
        let fields = page + 16..page + 16 + 56;
        if fixed.len() >= fields.end + 8 {
            let sum = fnv1a64(&fixed[fields.clone()]);
            fixed[fields.end..fields.end + 8].copy_from_slice(&sum.to_le_bytes());
        }
    }
    fixed
}
