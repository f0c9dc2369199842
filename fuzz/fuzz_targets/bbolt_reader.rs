//! The bbolt reader on arbitrary bytes: open, check, walk, and read every bucket, as is and
//! with the meta pages' checksums made valid again (so mutations of the meta fields get past
//! the checksum and reach the reader). Anything may be an error; nothing may panic or hang.
#![no_main]

mod common;

use common::with_valid_meta_checksums;
use etcd_snapshot::{BoltDb, BoltError};
use libfuzzer_sys::fuzz_target;

fn read_everything(data: &[u8]) {
    let Ok(db) = BoltDb::open(data) else {
        return;
    };
    let _ = db.check();
    let mut buckets = Vec::new();
    let _ = db.walk(|depth, entry| {
        if depth == 0 && entry.is_bucket {
            buckets.push((entry.key.to_vec(), entry.bucket()));
        }
        Ok::<(), BoltError>(())
    });
    let root = db.root();
    for (name, bucket) in buckets {
        let _ = db.bucket(&root, &name);
        let Ok(bucket) = bucket else { continue };
        let mut first = None;
        let _ = db.for_each(&bucket, |entry| {
            first.get_or_insert_with(|| entry.key.to_vec());
            Ok::<(), BoltError>(())
        });
        if let Some(key) = first {
            let _ = db.get(&bucket, &key);
        }
        let _ = db.get(&bucket, b"consistent_index");
    }
}

fuzz_target!(|data: &[u8]| {
    read_everything(data);
    read_everything(&with_valid_meta_checksums(data));
});
