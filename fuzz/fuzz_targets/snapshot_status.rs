//! `snapshot status` on arbitrary bytes (with or without etcd's trailer, which is not
//! enforced so that damaged dbs reach the reader), as they are and with the meta pages'
//! checksums made valid again. Anything may be an error; nothing may panic or hang.
#![no_main]

mod common;

use common::with_valid_meta_checksums;
use etcd_snapshot::{StatusOptions, snapshot_status};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let options = StatusOptions {
        skip_hash_check: true,
    };
    let _ = snapshot_status("fuzz", data, &options);
    let _ = snapshot_status("fuzz", &with_valid_meta_checksums(data), &options);
});
