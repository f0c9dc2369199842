//! Replaying a chain's changes into a restored db: the segments of a point-in-time restore,
//! spooled decompressed into unnamed temporary files, read twice (leases first, then the
//! changes in revision order) so memory stays small whatever their size.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom, Write};
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::format::{DeltaRecord, SegmentReader, key_value_lease, without_lease};
use super::manifest::{DELTA_FORMAT_VERSION_WITHOUT_LEASES, DeltaManifest};
use super::timeline::{ClockStep, TimeSeenAgain, Timeline};
use crate::bbolt::BoltError;
use crate::error::{Result, SnapshotError};
use crate::mvcc::{key_value_fields, parse_revision_key};
use etcd_common::InvalidOption;

/// Where a point-in-time restore stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PointInTime {
    /// Every change up to and including this revision.
    Revision(i64),
    /// Every change received by this time.
    Time(DateTime<Utc>),
}

/// What a replay applied, for the restore's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReplaySummary {
    /// The full backup restored.
    pub full: String,
    /// The segments read, in order.
    pub segments: Vec<String>,
    /// The revision restored to.
    pub target_revision: i64,
    /// The time asked for, with `--to-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_time: Option<DateTime<Utc>>,
    /// Changes appended to the full backup's db.
    pub changes_applied: u64,
    /// Leases granted after the full backup that keys still used, recreated with their
    /// granted TTL (restarting when etcd starts), hex IDs.
    pub leases_recreated: Vec<String>,
    /// Leases of the full backup that were gone at the target (revoked or expired: the
    /// chain's last look at the leases before the target did not list them), hex IDs.
    pub leases_removed: Vec<String>,
    /// Leases whose TTL was never learned (they ended before `backup run` could ask): the
    /// keys attached to them are restored without a lease, hex IDs.
    pub leases_detached: Vec<String>,
    /// Changes whose lease was detached.
    pub changes_detached: u64,
    /// With a time: where the chain's stamps go back (the clock of `backup run`'s host was
    /// stepped back while it wrote them). The time was mapped to the revision where the clock
    /// first reached it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clock_steps: Vec<ClockStep>,
    /// With a time the clock showed again after a step back: the later revisions stamped at
    /// or before it, which were not restored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_seen_again: Option<TimeSeenAgain>,
}

/// The decompressed segments of a restore, ready to replay: always a contiguous prefix of
/// one chain (each segment's sequence follows the one before and it starts where the one
/// before ended, checked as each is added).
#[derive(Debug)]
pub struct DeltaReplay {
    segments: Vec<File>,
    point: PointInTime,
    /// The full backup's revision: the chain starts after it.
    floor: i64,
    /// The sequence the next segment must have.
    next_sequence: u64,
    /// Where the segments added so far end, checked against their records.
    end: i64,
    /// The chain's stamps (time marks), mapping a time to a revision.
    timeline: Timeline,
    /// What will be (and, after the restore, was) applied.
    pub summary: ReplaySummary,
}

/// The read buffer over a spooled segment: large reads, not one system call per 8 KiB.
const SPOOL_READ_BUFFER: usize = 1 << 20;

fn io_error(e: std::io::Error) -> SnapshotError {
    SnapshotError::Codec {
        operation: "spool delta segment",
        reason: e.to_string(),
    }
}

fn segment_error(e: super::format::SegmentError) -> BoltError {
    BoltError::Check {
        problems: vec![format!("a delta segment cannot be read: {e}")],
    }
}

fn refused(name: &str, reason: String) -> SnapshotError {
    SnapshotError::VerifyFailed {
        name: name.to_string(),
        reason,
    }
}

/// Whether a segment must be read for a replay: one whose manifest says it holds no change,
/// ends where it starts and has no leases record (format version 1) adds nothing (its times
/// are in its manifest).
pub fn segment_needs_reading(manifest: &DeltaManifest) -> bool {
    manifest.changes > 0
        || manifest.to_revision != manifest.after_revision
        || manifest.format_version > DELTA_FORMAT_VERSION_WITHOUT_LEASES
}

impl DeltaReplay {
    /// An empty replay of the chain of `full`, stopping at `point`; `floor` is the full
    /// backup's revision (the target of a time before any segment's first mark).
    pub fn new(full: &str, point: PointInTime, floor: i64) -> DeltaReplay {
        let at = match point {
            PointInTime::Revision(_) => None,
            PointInTime::Time(at) => Some(at),
        };
        let mut replay = DeltaReplay {
            segments: Vec::new(),
            point,
            floor,
            next_sequence: 1,
            end: floor,
            timeline: Timeline::new(at, None),
            summary: ReplaySummary {
                full: full.to_string(),
                target_time: at,
                ..ReplaySummary::default()
            },
        };
        replay.refresh();
        replay
    }

    /// The chain's start for a time: the full backup was taken at `created_at`, and the
    /// history's clock had shown `prior` before it (an earlier chain's latest stamp, when
    /// later than `created_at`: the time was then passed before this chain).
    pub fn starting_at(mut self, created_at: DateTime<Utc>, prior: Option<DateTime<Utc>>) -> Self {
        if let PointInTime::Time(at) = self.point {
            self.timeline = Timeline::new(Some(at), prior);
            self.timeline.stamp(self.floor, created_at);
            self.refresh();
        }
        self
    }

    /// Adds the next segment of the chain: its manifest, and its decompressed bytes (`None`
    /// for a segment [`segment_needs_reading`] says adds nothing), spooled into an unnamed
    /// file in `spool_dir` (or the system's temporary dir). Refused when it does not continue
    /// the segments added before (a sequence skipped or repeated, or a hole or an overlap of
    /// revisions) or when its records end elsewhere than its manifest says: a replay is a
    /// contiguous prefix of the chain, always.
    pub fn add_segment(
        &mut self,
        manifest: &DeltaManifest,
        name: &str,
        bytes: Option<&[u8]>,
        spool_dir: Option<&Path>,
    ) -> Result<()> {
        if manifest.sequence != self.next_sequence || manifest.after_revision != self.end {
            return Err(refused(
                name,
                format!(
                    "it is segment {} after revision {}, but the replay needs segment {} after revision {}: replaying it would leave a hole in the restored history",
                    manifest.sequence, manifest.after_revision, self.next_sequence, self.end
                ),
            ));
        }
        self.timeline
            .stamp(manifest.after_revision, manifest.from_time);
        let Some(bytes) = bytes else {
            if segment_needs_reading(manifest) {
                return Err(refused(
                    name,
                    format!(
                        "its manifest says it holds {} changes up to revision {}, but it was not read",
                        manifest.changes, manifest.to_revision
                    ),
                ));
            }
            self.timeline
                .stamp(manifest.after_revision, manifest.to_time);
            return self.advance(manifest);
        };
        let bad = |e: super::format::SegmentError| SnapshotError::Codec {
            operation: "read delta segment",
            reason: format!("{name}: {e}"),
        };
        let mut reader = SegmentReader::new(bytes).map_err(bad)?;
        let mut content_end = manifest.after_revision;
        while let Some(record) = reader.next_record().map_err(bad)? {
            match record {
                DeltaRecord::Mark { revision, unix_ms } => {
                    content_end = content_end.max(revision);
                    self.timeline.stamp_ms(revision, unix_ms);
                }
                DeltaRecord::Change { .. } => {
                    content_end = content_end.max(record.revision().unwrap_or(0));
                }
                DeltaRecord::Leases { revision, .. } => content_end = content_end.max(revision),
                DeltaRecord::Lease { .. } => {}
            }
        }
        if content_end != manifest.to_revision {
            return Err(refused(
                name,
                format!(
                    "its manifest says it reaches revision {}, but its records end at revision {content_end}",
                    manifest.to_revision
                ),
            ));
        }
        let dir = spool_dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let (mut file, _) = etcd_common::private::unnamed_file_in(&dir).map_err(io_error)?;
        file.write_all(bytes).map_err(io_error)?;
        self.segments.push(file);
        self.summary.segments.push(name.to_string());
        self.advance(manifest)
    }

    fn advance(&mut self, manifest: &DeltaManifest) -> Result<()> {
        self.next_sequence += 1;
        self.end = manifest.to_revision;
        self.refresh();
        Ok(())
    }

    /// The stamps of the chain after the segments added (from the manifests of its later
    /// segments: `from_time` at `after_revision`, `to_time` at `to_revision`), in revision
    /// order: they cannot move the target (nothing after the last segment added is
    /// replayed), but they tell whether the clock stepped back and showed the time again.
    pub fn note_later(&mut self, stamps: &[(i64, DateTime<Utc>)]) {
        self.timeline.close();
        for &(revision, at) in stamps {
            self.timeline.stamp(revision, at);
        }
        self.refresh();
    }

    /// Refuses a target past what the segments added reach (their records checked against
    /// their manifests): a restore never claims a revision it did not replay.
    pub fn check_reach(&self) -> Result<()> {
        let target = self.target_revision();
        if target > self.end {
            let option = match self.point {
                PointInTime::Revision(_) => etcd_data::restore::opts::TO_REVISION,
                PointInTime::Time(_) => etcd_data::restore::opts::TO_TIME,
            };
            return Err(SnapshotError::from(InvalidOption::new(
                option,
                format!(
                    "revision {target} is past the end of the chain of {} as its segments prove it (revision {}); what can be restored ends there",
                    self.summary.full, self.end
                ),
            )));
        }
        Ok(())
    }

    fn refresh(&mut self) {
        self.summary.target_revision = self.target_revision();
        if matches!(self.point, PointInTime::Time(_)) {
            self.summary.clock_steps = self.timeline.steps().to_vec();
            self.summary.time_seen_again = self.timeline.seen_again();
        }
    }

    /// The revision the restore stops at: the one asked for, or the one a time maps to
    /// (see [`super::timeline`]; the full backup's own revision when no stamp is at or
    /// before the time).
    pub fn target_revision(&self) -> i64 {
        match self.point {
            PointInTime::Revision(revision) => revision,
            PointInTime::Time(_) => self.timeline.target().unwrap_or(self.floor).max(self.floor),
        }
    }

    /// Where the segments added so far end (the full backup's revision before any).
    pub fn reach(&self) -> i64 {
        self.end
    }

    fn for_each_record(
        &self,
        mut visit: impl FnMut(DeltaRecord) -> std::result::Result<bool, BoltError>,
    ) -> std::result::Result<(), BoltError> {
        for file in &self.segments {
            let mut file = file.try_clone().map_err(|e| BoltError::Check {
                problems: vec![format!("a spooled delta segment: {e}")],
            })?;
            file.seek(SeekFrom::Start(0))
                .map_err(|e| BoltError::Check {
                    problems: vec![format!("a spooled delta segment: {e}")],
                })?;
            let mut reader = SegmentReader::new(BufReader::with_capacity(SPOOL_READ_BUFFER, file))
                .map_err(segment_error)?;
            while let Some(record) = reader.next_record().map_err(segment_error)? {
                if !visit(record)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// What the restored db's `lease` bucket needs so it holds the leases of the target:
    /// - with a leases record at or before the target (the chain's last look at the leases,
    ///   written by `backup run` since format version 2): exactly that set, plus any lease a
    ///   key live at the target still uses; leases of the db the set lacks are removed (revoked
    ///   or expired by then), leases it adds are recreated with their granted TTL;
    /// - without one (an older chain): the db's leases, plus the leases keys live at the target
    ///   use that the db lacks.
    ///
    /// A lease a live key uses whose TTL was never learned is detached from its keys. Memory:
    /// one entry per key changed after `db_revision`, and one lease set.
    pub fn plan_leases(
        &mut self,
        db_revision: i64,
        existing: &BTreeSet<i64>,
    ) -> std::result::Result<PlannedLeases, BoltError> {
        let target = self.target_revision();
        let mut live: HashMap<Vec<u8>, i64> = HashMap::new();
        let mut granted: BTreeMap<i64, i64> = BTreeMap::new();
        let mut seen: Option<BTreeSet<i64>> = None;
        self.for_each_record(|record| {
            match &record {
                DeltaRecord::Lease { id, ttl } => {
                    granted.insert(*id, *ttl);
                }
                DeltaRecord::Leases { revision, leases } => {
                    // The last look at or before the target, and not before the db's own;
                    // a TTL learned later (a lease ID granted again) wins.
                    if (db_revision..=target).contains(revision) {
                        granted.extend(leases.iter().copied());
                        seen = Some(leases.iter().map(|(id, _)| *id).collect());
                    }
                }
                DeltaRecord::Change { key, value } => {
                    let revision = record.revision().unwrap_or(0);
                    if revision > target {
                        return Ok(false);
                    }
                    if revision > db_revision {
                        let user_key = key_value_fields(value).map_or(&[][..], |(k, _)| k);
                        let deleted = parse_revision_key(key).is_some_and(|(_, t)| t);
                        if deleted {
                            live.remove(user_key);
                        } else {
                            live.insert(user_key.to_vec(), key_value_lease(value));
                        }
                    }
                }
                DeltaRecord::Mark { .. } => {}
            }
            Ok(true)
        })?;
        let used: BTreeSet<i64> = live.into_values().filter(|lease| *lease != 0).collect();
        let mut plan = PlannedLeases::default();
        if let Some(kept) = &seen {
            for id in kept {
                match granted.get(id) {
                    Some(ttl) if *ttl > 0 && !existing.contains(id) => {
                        plan.recreate.insert(*id, *ttl);
                    }
                    _ => {}
                }
            }
            plan.remove = existing
                .iter()
                .filter(|id| !kept.contains(id) && !used.contains(id))
                .copied()
                .collect();
        }
        for lease in used {
            if existing.contains(&lease) || plan.recreate.contains_key(&lease) {
                continue;
            }
            match granted.get(&lease) {
                Some(ttl) if *ttl > 0 => {
                    plan.recreate.insert(lease, *ttl);
                }
                _ => {
                    plan.detach.insert(lease);
                }
            }
        }
        let hex = |id: &i64| format!("{id:016x}");
        self.summary.leases_recreated = plan.recreate.keys().map(hex).collect();
        self.summary.leases_removed = plan.remove.iter().map(hex).collect();
        self.summary.leases_detached = plan.detach.iter().map(hex).collect();
        Ok(plan)
    }

    /// The changes after `db_revision` up to the target, in revision order, as `key` bucket
    /// entries; leases in `detach` are taken off the changes. Read the counts off the
    /// iterator once it is done ([`ReplayChanges::record_in`]).
    pub fn changes<'a>(&'a self, db_revision: i64, detach: &'a BTreeSet<i64>) -> ReplayChanges<'a> {
        ReplayChanges {
            replay: self,
            next_file: 0,
            reader: None,
            db_revision,
            detach,
            applied: 0,
            detached: 0,
            done: false,
        }
    }
}

/// What a replay changes in the restored db's `lease` bucket (see
/// [`DeltaReplay::plan_leases`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlannedLeases {
    /// Leases to add, ID to granted TTL.
    pub recreate: BTreeMap<i64, i64>,
    /// Leases of the db to take out.
    pub remove: BTreeSet<i64>,
    /// Leases to take off the changes (their TTL is unknown).
    pub detach: BTreeSet<i64>,
}

/// One entry of etcd's `key` bucket: revision key and `mvccpb.KeyValue` bytes.
type KeyEntry = (Vec<u8>, Vec<u8>);

/// The changes of a replay, one segment file after another.
pub struct ReplayChanges<'a> {
    replay: &'a DeltaReplay,
    next_file: usize,
    reader: Option<SegmentReader<BufReader<File>>>,
    db_revision: i64,
    detach: &'a BTreeSet<i64>,
    applied: u64,
    detached: u64,
    done: bool,
}

impl ReplayChanges<'_> {
    /// Records what was applied in `summary`.
    pub fn record_in(&self, summary: &mut ReplaySummary) {
        summary.changes_applied = self.applied;
        summary.changes_detached = self.detached;
    }

    fn open_next(&mut self) -> std::result::Result<bool, BoltError> {
        let Some(file) = self.replay.segments.get(self.next_file) else {
            return Ok(false);
        };
        self.next_file += 1;
        let spool = |e: std::io::Error| BoltError::Check {
            problems: vec![format!("a spooled delta segment: {e}")],
        };
        let mut file = file.try_clone().map_err(spool)?;
        file.seek(SeekFrom::Start(0)).map_err(spool)?;
        self.reader = Some(
            SegmentReader::new(BufReader::with_capacity(SPOOL_READ_BUFFER, file))
                .map_err(segment_error)?,
        );
        Ok(true)
    }

    fn next_change(&mut self) -> std::result::Result<Option<KeyEntry>, BoltError> {
        let target = self.replay.target_revision();
        loop {
            let record = match self.reader.as_mut() {
                Some(reader) => reader.next_record().map_err(segment_error)?,
                None => None,
            };
            let Some(record) = record else {
                if self.open_next()? {
                    continue;
                }
                return Ok(None);
            };
            let revision = record.revision().unwrap_or(0);
            let DeltaRecord::Change { key, value } = record else {
                continue;
            };
            if revision > target {
                return Ok(None);
            }
            if revision <= self.db_revision {
                continue;
            }
            let lease = key_value_lease(&value);
            let value = if lease != 0 && self.detach.contains(&lease) {
                self.detached += 1;
                without_lease(&value)
            } else {
                value
            };
            self.applied += 1;
            return Ok(Some((key, value)));
        }
    }
}

impl Iterator for ReplayChanges<'_> {
    type Item = std::result::Result<KeyEntry, BoltError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_change() {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// `leasepb.Lease{ID, TTL}` as etcd stores it in its `lease` bucket (key: the ID, 8 bytes
/// big-endian).
pub fn lease_entry(id: i64, ttl: i64) -> (Vec<u8>, Vec<u8>) {
    let mut value = Vec::new();
    for (field, number) in [(1u64, id), (2u64, ttl)] {
        if number != 0 {
            let mut tag = field << 3;
            let mut n = number as u64;
            while tag >= 0x80 {
                value.push((tag as u8 & 0x7f) | 0x80);
                tag >>= 7;
            }
            value.push(tag as u8);
            while n >= 0x80 {
                value.push((n as u8 & 0x7f) | 0x80);
                n >>= 7;
            }
            value.push(n as u8);
        }
    }
    (id.to_be_bytes().to_vec(), value)
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
