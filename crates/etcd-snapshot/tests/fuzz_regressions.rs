//! Replays every input the fuzz targets (`fuzz/`, `scripts/fuzz`) ever crashed on, kept under
//! `tests/fuzz-regressions/TARGET/` as the bytes that reached the library (after the target's
//! meta checksum fix-up, where it did one): each must now give a value or a clear one-line
//! error, never a panic, a hang or an out-of-memory.

use std::path::{Path, PathBuf};

use etcd_snapshot::{BoltDb, BoltError, StatusOptions, snapshot_status};

fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fuzz-regressions")
        .join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.expect("a readable regression dir").path())
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).expect("a readable regression input");
            (path, bytes)
        })
        .collect()
}

/// An error a user sees: non-empty, one line.
fn assert_clear(path: &Path, error: &dyn std::fmt::Display) {
    let text = error.to_string();
    assert!(
        !text.is_empty() && !text.contains('\n'),
        "{}: unclear error {text:?}",
        path.display()
    );
}

/// What the bbolt_reader fuzz target does with one input.
fn read_everything(path: &Path, data: &[u8]) {
    let db = match BoltDb::open(data) {
        Ok(db) => db,
        Err(e) => return assert_clear(path, &e),
    };
    if let Err(e) = db.check() {
        assert_clear(path, &e);
    }
    let mut buckets = Vec::new();
    let walked = db.walk(|depth, entry| {
        if depth == 0 && entry.is_bucket {
            buckets.push((entry.key.to_vec(), entry.bucket()));
        }
        Ok::<(), BoltError>(())
    });
    if let Err(e) = walked {
        assert_clear(path, &e);
    }
    let root = db.root();
    for (name, bucket) in buckets {
        if let Err(e) = db.bucket(&root, &name) {
            assert_clear(path, &e);
        }
        let Ok(bucket) = bucket else { continue };
        let listed = db.for_each(&bucket, |_| Ok::<(), BoltError>(()));
        if let Err(e) = listed {
            assert_clear(path, &e);
        }
        if let Err(e) = db.get(&bucket, b"consistent_index") {
            assert_clear(path, &e);
        }
    }
}

#[test]
fn bbolt_reader_inputs_that_once_crashed_read_cleanly() {
    let inputs = inputs("bbolt_reader");
    assert!(!inputs.is_empty(), "the regression inputs are missing");
    for (path, bytes) in inputs {
        read_everything(&path, &bytes);
    }
}

#[test]
fn snapshot_status_inputs_that_once_crashed_are_clear_errors() {
    let options = StatusOptions {
        skip_hash_check: true,
    };
    // What crashed the reader must not crash the status, which reads through it, either.
    let mut all = inputs("snapshot_status");
    all.extend(inputs("bbolt_reader"));
    assert!(!all.is_empty(), "the regression inputs are missing");
    for (path, bytes) in all {
        match snapshot_status("fuzz", &bytes, &options) {
            Ok(status) => assert!(status.total_size > 0, "{}", path.display()),
            Err(e) => assert_clear(&path, &e),
        }
    }
}
