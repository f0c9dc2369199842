//! Catalog entries the tests of the chain logic (resume, plan) build by hand: a full backup
//! at a minute of one test day, with the chain its segments cover.

use chrono::{DateTime, TimeZone, Utc};

use crate::catalog::{BackupEntry, ChainSummary, DeltaEntry};

/// 2026-11-30 01:`minute`:00 UTC.
pub(crate) fn at(minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 1, minute, 0).unwrap()
}

/// A complete full backup of cluster abc taken at `minute`, at `revision`, without segments.
pub(crate) fn full_entry(minute: u32, revision: i64) -> BackupEntry {
    let mut manifest = crate::manifest::tests::sample();
    manifest.created_at = at(minute);
    manifest.revision = revision;
    manifest.object = format!("etcd-abc/{minute:02}-rev{revision}.db.zst");
    BackupEntry {
        object: manifest.object.clone(),
        manifest_name: String::new(),
        complete: true,
        manifest,
        deltas: Vec::new(),
        chain: None,
    }
}

/// An unbroken chain of `segments` after `full`, reaching `to_revision` at `to_minute`.
pub(crate) fn continuous_chain(
    full: &BackupEntry,
    segments: usize,
    to_revision: i64,
    to_minute: u32,
) -> ChainSummary {
    let from = full.manifest.created_at;
    ChainSummary {
        segments,
        covered_segments: segments,
        changes: segments as u64,
        after_revision: full.manifest.revision,
        to_revision,
        from_time: Some(from),
        to_time: Some(at(to_minute)),
        last_published: at(to_minute),
        continuous: true,
        problems: Vec::new(),
    }
}

/// [`full_entry`] with `segments` listed segments of one revision each (and their chain,
/// published within the full backup's minute).
pub(crate) fn full_with_segments(minute: u32, revision: i64, segments: usize) -> BackupEntry {
    let mut full = full_entry(minute, revision);
    full.deltas = (1..=segments as u64)
        .map(|seq| DeltaEntry {
            object: format!("{}.deltas/{seq:06}", full.object),
            manifest_name: String::new(),
            complete: true,
            manifest: crate::delta::manifest::tests::sample(
                &full.object,
                seq,
                revision + seq as i64 - 1,
                revision + seq as i64,
            ),
        })
        .collect();
    full.chain = (segments > 0)
        .then(|| continuous_chain(&full, segments, revision + segments as i64, minute));
    full
}
