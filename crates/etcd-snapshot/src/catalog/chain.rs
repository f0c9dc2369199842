//! A full backup's chain of delta segments: what it covers without a gap (from the
//! manifests, for the listing) and whether every segment's bytes and records check out
//! ([`verify_chain`]).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use etcd_store::Store;
use serde::Serialize;

use super::{DeltaEntry, names_segment, object_name, segment_named, sort_deltas};
use crate::crypt::Identities;
use crate::delta::{
    ClockStep, DeltaManifest, DeltaRecord, SegmentReader, Timeline, decode_segment, deltas_prefix,
    fetch_stored, is_delta_manifest,
};
use crate::error::{Result, SnapshotError};
use crate::manifest::Manifest;

/// What a full backup's delta segments cover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainSummary {
    /// Segments published (every one listed, continuous or not).
    pub segments: usize,
    /// Segments of the unbroken run from the full backup (the ones a restore can replay).
    pub covered_segments: usize,
    /// Changes in all the segments.
    pub changes: u64,
    /// The full backup's revision: the chain holds changes after it.
    pub after_revision: i64,
    /// The last revision covered without a gap from the full backup (its revision when
    /// segment 1 is unusable).
    pub to_revision: i64,
    /// When the first covered segment was opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_time: Option<DateTime<Utc>>,
    /// When every change up to `to_revision` had been received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_time: Option<DateTime<Utc>>,
    /// When the newest segment was published.
    pub last_published: DateTime<Utc>,
    /// Whether every segment continues the one before without a gap.
    pub continuous: bool,
    /// What breaks the chain, one sentence each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// What [`analyse_chain`] found.
pub(super) struct ChainAnalysis {
    pub(super) summary: ChainSummary,
    /// How many of the sorted segments, from the first, form the unbroken run.
    pub(super) run: usize,
}

/// Judges the segments (sorted by sequence) of the full backup `full`; `None` when none.
/// Segments belong to the full backup they are stored under (its `.deltas/`), whatever
/// their manifests' `base` says: names there are relative to the store they were saved to.
pub(super) fn analyse_chain(full: &Manifest, deltas: &[DeltaEntry]) -> Option<ChainAnalysis> {
    let revision = full.revision;
    let last_published = deltas.iter().map(|d| d.manifest.completed_at).max()?;
    let mut problems = Vec::new();
    let mut run = 0;
    let mut broken = false;
    let mut expected = 1u64;
    let mut previous: Option<(u64, i64)> = None;
    for d in deltas {
        let m = &d.manifest;
        let seq = m.sequence;
        let before = problems.len();
        let mut gap = false;
        if seq == 0 {
            problems.push(format!(
                "segment {} has sequence 0, but sequences start at 1",
                d.object
            ));
        } else if seq < expected {
            problems.push(format!(
                "sequence {seq} is used twice (again by {})",
                d.object
            ));
        } else if seq > expected {
            gap = true;
            problems.push(if seq == expected + 1 {
                format!("segment {expected} is missing")
            } else {
                format!("segments {expected} to {} are missing", seq - 1)
            });
        }
        if m.base_revision != revision {
            problems.push(format!(
                "segment {seq} records base revision {}, but the full backup is at revision {revision}",
                m.base_revision
            ));
        }
        if !gap {
            match previous {
                None if m.after_revision != revision => problems.push(format!(
                    "segment {seq} starts after revision {}, but the full backup is at revision {revision}",
                    m.after_revision
                )),
                Some((prev_seq, prev_to)) if m.after_revision != prev_to => {
                    problems.push(format!(
                        "segment {seq} starts after revision {}, but segment {prev_seq} ends at revision {prev_to}",
                        m.after_revision
                    ))
                }
                _ => {}
            }
        }
        if m.to_revision < m.after_revision {
            problems.push(format!(
                "segment {seq} ends at revision {}, before it starts (after {})",
                m.to_revision, m.after_revision
            ));
        }
        if !d.complete {
            problems.push(format!(
                "segment {seq}'s object {} is missing or not the {} bytes its manifest records",
                d.object, m.object_size
            ));
        }
        if problems.len() > before {
            broken = true;
        } else if !broken {
            run += 1;
        }
        expected = expected.max(seq.saturating_add(1));
        previous = Some((seq, m.to_revision));
    }
    let covered = &deltas[..run];
    Some(ChainAnalysis {
        summary: ChainSummary {
            segments: deltas.len(),
            covered_segments: run,
            changes: deltas.iter().map(|d| d.manifest.changes).sum(),
            after_revision: revision,
            to_revision: covered.last().map_or(revision, |d| d.manifest.to_revision),
            from_time: covered.first().map(|d| d.manifest.from_time),
            to_time: covered.last().map(|d| d.manifest.to_time),
            last_published,
            continuous: problems.is_empty(),
            problems,
        },
        run,
    })
}

/// One segment's result in [`verify_chain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentCheck {
    /// Position in the chain.
    pub sequence: u64,
    /// The segment object.
    pub object: String,
    /// It holds the changes after this revision...
    pub after_revision: i64,
    /// ...up to and including this one.
    pub to_revision: i64,
    /// Changes its manifest records.
    pub changes: u64,
    /// Whether the stored bytes match the manifest's size and SHA-256.
    pub stored_ok: bool,
    /// Whether its records were read and checked (false when encrypted and no identity was
    /// given, or when the stored bytes were already wrong).
    pub records_checked: bool,
    /// What is wrong with it, when something is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The outcome of [`verify_chain`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainReport {
    /// The full backup object.
    pub object: String,
    /// Whether every segment checked out and the chain has no gap.
    pub ok: bool,
    /// Each segment, by sequence.
    pub segments: Vec<SegmentCheck>,
    /// The full backup's revision.
    pub after_revision: i64,
    /// The last revision verified without a gap from the full backup.
    pub to_revision: i64,
    /// Everything wrong, one sentence each.
    pub problems: Vec<String>,
    /// Where the chain's time stamps go back (the clock of `backup run`'s host was stepped
    /// back while it wrote them): no damage, but a time shown twice is restored at its first
    /// showing (see `docs/INCREMENTAL-BACKUPS.md`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clock_steps: Vec<ClockStep>,
}

/// The reason in an error about one segment, without the name it already carries.
fn segment_problem(seq: u64, object: &str, e: &SnapshotError) -> String {
    match e {
        SnapshotError::VerifyFailed { reason, .. } => {
            format!("segment {seq} ({object}) failed verification: {reason}")
        }
        other => format!("segment {seq}: {other}"),
    }
}

/// Verifies the chain of delta segments of the full backup `name` (its object or manifest):
/// every segment's stored size and SHA-256 against its manifest and, when it is not encrypted
/// or `identities` can decrypt it, its records (see [`crate::fetch_delta_segment`]); and the
/// chain's continuity: sequences 1..n, each segment starting where the one before ends, the
/// first at the full backup's revision. The full backup itself is checked by
/// [`verify_backup`]. A full backup without segments gives an empty, `ok` report.
pub async fn verify_chain(
    store: &Store,
    name: &str,
    identities: &Identities,
) -> Result<ChainReport> {
    let object = object_name(name);
    if names_segment(object) {
        return Err(segment_named(store, object, "verify", "which checks the whole chain").await);
    }
    let manifest_name = Manifest::name_for(object);
    let full = Manifest::from_json(&manifest_name, &store.get_small(&manifest_name).await?)?;
    let listed = store.list(&deltas_prefix(object)).await?;
    let sizes: HashMap<&str, u64> = listed.iter().map(|o| (o.name.as_str(), o.size)).collect();
    let mut problems = Vec::new();
    let mut deltas = Vec::new();
    for info in listed.iter().filter(|o| is_delta_manifest(&o.name)) {
        let parsed = match store.get_small(&info.name).await {
            Ok(bytes) => DeltaManifest::from_json(&info.name, &bytes),
            Err(e) => Err(e.into()),
        };
        match parsed {
            Ok(manifest) => {
                let segment = object_name(&info.name).to_string();
                deltas.push(DeltaEntry {
                    complete: sizes.get(segment.as_str()) == Some(&manifest.object_size),
                    object: segment,
                    manifest_name: info.name.clone(),
                    manifest,
                });
            }
            Err(e) => problems.push(format!("a segment manifest cannot be read: {e}")),
        }
    }
    sort_deltas(&mut deltas);
    let (run, continuity) = match analyse_chain(&full, &deltas) {
        Some(analysis) => (analysis.run, analysis.summary.problems),
        None => (0, Vec::new()),
    };
    problems.extend(continuity);
    let mut segments = Vec::new();
    let mut timeline = Timeline::new(None, None);
    timeline.stamp(full.revision, full.created_at);
    for d in &deltas {
        let m = &d.manifest;
        let mut check = SegmentCheck {
            sequence: m.sequence,
            object: d.object.clone(),
            after_revision: m.after_revision,
            to_revision: m.to_revision,
            changes: m.changes,
            stored_ok: false,
            records_checked: false,
            problem: None,
        };
        // A missing or short object is a continuity problem already.
        if d.complete {
            match fetch_stored(store, &d.object, m).await {
                Ok(stored) => {
                    check.stored_ok = true;
                    timeline.stamp(m.after_revision, m.from_time);
                    match decode_segment(&d.object, m, &stored, identities) {
                        Ok(bytes) => {
                            check.records_checked = true;
                            stamp_marks(&mut timeline, &bytes);
                        }
                        Err(SnapshotError::Data(etcd_data::Error::Encrypted { .. })) => {
                            timeline.stamp(m.to_revision, m.to_time);
                        }
                        Err(e) => check.problem = Some(segment_problem(m.sequence, &d.object, &e)),
                    }
                }
                Err(e @ SnapshotError::Store(etcd_store::StoreError::NotFound { .. }))
                | Err(e @ SnapshotError::VerifyFailed { .. }) => {
                    check.problem = Some(segment_problem(m.sequence, &d.object, &e));
                }
                Err(e) => return Err(e),
            }
        } else {
            check.problem = Some(format!(
                "segment {}'s object {} is missing or not the size its manifest records",
                m.sequence, d.object
            ));
        }
        if let Some(problem) = &check.problem
            && d.complete
        {
            problems.push(problem.clone());
        }
        segments.push(check);
    }
    let verified = segments
        .iter()
        .take(run)
        .take_while(|s| s.problem.is_none())
        .last()
        .map_or(full.revision, |s| s.to_revision);
    Ok(ChainReport {
        object: object.to_string(),
        ok: problems.is_empty(),
        segments,
        after_revision: full.revision,
        to_revision: verified,
        problems,
        clock_steps: timeline.steps().to_vec(),
    })
}

/// The time marks of a checked segment's records, into `timeline`.
fn stamp_marks(timeline: &mut Timeline, bytes: &[u8]) {
    let Ok(mut reader) = SegmentReader::new(bytes) else {
        return;
    };
    while let Ok(Some(record)) = reader.next_record() {
        if let DeltaRecord::Mark { revision, unix_ms } = record {
            timeline.stamp_ms(revision, unix_ms);
        }
    }
}
