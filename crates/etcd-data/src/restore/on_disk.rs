//! The "already restored" marker checked against what is on disk: a marker is trusted only
//! while the db, the WAL and the raft snap file it vouches for are there.

use std::fs;
use std::io::Read;
use std::path::Path;

use super::RestoreMarker;
use super::lock::db_of;
use bbolt::{META_REGION, check_meta_pages};

/// What is missing or damaged in the restored data dir `data_dir` its `marker` describes
/// (`None`: the db reads as bbolt, the WAL dir holds a segment, the snap dir a snap file).
pub(super) fn damage(data_dir: &Path, marker: &RestoreMarker) -> Option<String> {
    let db = db_of(data_dir);
    let size = match fs::metadata(&db) {
        Ok(meta) if meta.is_file() => meta.len(),
        _ => return Some(format!("no db at {}", db.display())),
    };
    let mut head = Vec::with_capacity(META_REGION);
    let read = fs::File::open(&db).and_then(|f| f.take(META_REGION as u64).read_to_end(&mut head));
    if let Err(e) = read {
        return Some(format!("the db {} cannot be read: {e}", db.display()));
    }
    if let Err(e) = check_meta_pages(&head, size) {
        return Some(format!(
            "the db {} is not a sound bbolt file: {e}",
            db.display()
        ));
    }
    if !holds_file_ending(&marker.wal_dir, ".wal") {
        return Some(format!("no WAL in {}", marker.wal_dir.display()));
    }
    let snap = db.parent().unwrap_or(data_dir);
    if !marker.no_snap_file && !holds_file_ending(snap, ".snap") {
        return Some(format!("no raft snap file in {}", snap.display()));
    }
    // Until a member runs on it (its WAL grows), the db is exactly the one restored.
    if let Some(want) = &marker.db_fingerprint
        && !super::marker::ran_since_restore(marker)
    {
        match db_fingerprint(&db) {
            Ok(got) if got == *want => {}
            Ok(_) => {
                return Some(format!(
                    "the db {} is not the one this restore wrote (replaced since)",
                    db.display()
                ));
            }
            Err(e) => return Some(format!("the db {} cannot be read: {e}", db.display())),
        }
    }
    None
}

/// SHA-256 (hex) of a db file's size and its first [`META_REGION`] bytes (both meta pages
/// among them): cheap to compute on a db of any size, and different for another db.
pub(super) fn db_fingerprint(db: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let file = fs::File::open(db)?;
    let size = file.metadata()?.len();
    let mut head = Vec::with_capacity(META_REGION);
    file.take(META_REGION as u64).read_to_end(&mut head)?;
    let mut hasher = Sha256::new();
    hasher.update(size.to_le_bytes());
    hasher.update(&head);
    Ok(hex::encode(hasher.finalize()))
}

/// Whether `dir` holds a file whose name ends with `suffix`.
fn holds_file_ending(dir: &Path, suffix: &str) -> bool {
    fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().any(|e| {
                e.file_name().to_string_lossy().ends_with(suffix)
                    && e.metadata().map(|m| m.is_file()).unwrap_or(false)
            })
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(wal_dir: &Path) -> RestoreMarker {
        RestoreMarker {
            db_sha256: String::new(),
            name: "m".into(),
            initial_cluster: String::new(),
            initial_cluster_token: String::new(),
            wal_dir: wal_dir.to_path_buf(),
            wal_size: 0,
            wal_files: 0,
            wal_modified_ns: 0,
            bump_revision: 0,
            member_id: String::new(),
            cluster_id: String::new(),
            revision: 0,
            to_revision: None,
            restored_at: String::new(),
            db_fingerprint: None,
            no_snap_file: false,
        }
    }

    #[test]
    fn a_missing_or_unreadable_db_is_damage() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("member/wal");
        let found = damage(dir.path(), &marker(&wal)).unwrap();
        assert!(found.starts_with("no db at "), "{found}");
        let db = db_of(dir.path());
        fs::create_dir_all(db.parent().unwrap()).unwrap();
        fs::write(&db, vec![0u8; 8192]).unwrap();
        let found = damage(dir.path(), &marker(&wal)).unwrap();
        assert!(found.contains("is not a sound bbolt file"), "{found}");
        assert!(holds_file_ending(db.parent().unwrap(), "db"));
        assert!(!holds_file_ending(&wal, ".wal"));
    }

    #[test]
    fn fingerprints_tell_dbs_apart_by_size_and_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        fs::write(&a, vec![1u8; 8192]).unwrap();
        fs::write(&b, vec![1u8; 8192 + 4096]).unwrap();
        let mut other = vec![1u8; 8192];
        other[100] = 2;
        fs::write(&c, other).unwrap();
        let fa = db_fingerprint(&a).unwrap();
        assert_eq!(fa, db_fingerprint(&a).unwrap());
        assert_ne!(fa, db_fingerprint(&b).unwrap());
        assert_ne!(fa, db_fingerprint(&c).unwrap());
    }
}
