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
use crate::bbolt::BoltError;
use crate::error::{Result, SnapshotError};
use crate::mvcc::{key_value_fields, parse_revision_key};

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
    /// Leases whose TTL was never learned (they ended before `backup run` could ask): the
    /// keys attached to them are restored without a lease, hex IDs.
    pub leases_detached: Vec<String>,
    /// Changes whose lease was detached.
    pub changes_detached: u64,
}

/// The decompressed segments of a restore, ready to replay.
#[derive(Debug)]
pub struct DeltaReplay {
    segments: Vec<File>,
    /// What will be (and, after the restore, was) applied.
    pub summary: ReplaySummary,
}

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

impl DeltaReplay {
    /// An empty replay of the chain of `full`, stopping at `point`; `floor` is the full
    /// backup's revision (the target of a time before any segment's first mark).
    pub fn new(full: &str, point: PointInTime, floor: i64) -> DeltaReplay {
        let (target_revision, target_time) = match point {
            PointInTime::Revision(revision) => (revision, None),
            PointInTime::Time(at) => (floor, Some(at)),
        };
        DeltaReplay {
            segments: Vec::new(),
            summary: ReplaySummary {
                full: full.to_string(),
                target_revision,
                target_time,
                ..ReplaySummary::default()
            },
        }
    }

    /// Adds the next segment of the chain (its decompressed bytes), spooled into an unnamed
    /// file in `spool_dir` (or the system's temporary dir). For a time, the target becomes
    /// the newest revision whose changes were all received by then.
    pub fn add_segment(
        &mut self,
        name: &str,
        bytes: &[u8],
        spool_dir: Option<&Path>,
    ) -> Result<()> {
        if let Some(at) = self.summary.target_time {
            let bad = |e: super::format::SegmentError| SnapshotError::Codec {
                operation: "read delta segment",
                reason: format!("{name}: {e}"),
            };
            let mut reader = SegmentReader::new(bytes).map_err(bad)?;
            while let Some(record) = reader.next_record().map_err(bad)? {
                if let DeltaRecord::Mark { revision, unix_ms } = record
                    && unix_ms <= at.timestamp_millis()
                {
                    self.summary.target_revision = self.summary.target_revision.max(revision);
                }
            }
        }
        let dir = spool_dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let (mut file, _) = etcd_common::private::unnamed_file_in(&dir).map_err(io_error)?;
        file.write_all(bytes).map_err(io_error)?;
        self.segments.push(file);
        self.summary.segments.push(name.to_string());
        Ok(())
    }

    /// The revision the restore stops at.
    pub fn target_revision(&self) -> i64 {
        self.summary.target_revision
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
            let mut reader = SegmentReader::new(BufReader::new(file)).map_err(segment_error)?;
            while let Some(record) = reader.next_record().map_err(segment_error)? {
                if !visit(record)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The leases to add to the `lease` bucket (ID to granted TTL) and those to detach: the
    /// leases that keys live at the target use, when the db does not hold them already (a
    /// lease revoked before the target took its keys with it, and is not recreated). Memory:
    /// one entry per key changed after `db_revision`.
    pub fn plan_leases(
        &mut self,
        db_revision: i64,
        existing: &BTreeSet<i64>,
    ) -> std::result::Result<(BTreeMap<i64, i64>, BTreeSet<i64>), BoltError> {
        let target = self.target_revision();
        let mut live: HashMap<Vec<u8>, i64> = HashMap::new();
        let mut granted: BTreeMap<i64, i64> = BTreeMap::new();
        self.for_each_record(|record| {
            match &record {
                DeltaRecord::Lease { id, ttl } => {
                    granted.insert(*id, *ttl);
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
        let used: BTreeSet<i64> = live
            .into_values()
            .filter(|lease| *lease != 0 && !existing.contains(lease))
            .collect();
        let mut recreate = BTreeMap::new();
        let mut detach = BTreeSet::new();
        for lease in used {
            match granted.get(&lease) {
                Some(ttl) if *ttl > 0 => {
                    recreate.insert(lease, *ttl);
                }
                _ => {
                    detach.insert(lease);
                }
            }
        }
        self.summary.leases_recreated = recreate.keys().map(|id| format!("{id:016x}")).collect();
        self.summary.leases_detached = detach.iter().map(|id| format!("{id:016x}")).collect();
        Ok((recreate, detach))
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
        self.reader = Some(SegmentReader::new(BufReader::new(file)).map_err(segment_error)?);
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
mod tests {
    use super::*;
    use crate::delta::format::tests::encode as segment;
    use crate::delta::format::{KeyValueFields, revision_key};

    fn put(rev: i64, key: &[u8], lease: i64) -> DeltaRecord {
        DeltaRecord::Change {
            key: revision_key(rev, 0, false),
            value: KeyValueFields {
                key,
                create_revision: rev,
                mod_revision: rev,
                version: 1,
                value: b"v",
                lease,
            }
            .encode(),
        }
    }

    #[test]
    fn a_replay_stops_at_the_target_skips_the_full_and_plans_leases() {
        let first = segment(&[
            put(10, b"a", 0),
            DeltaRecord::Lease { id: 7, ttl: 30 },
            put(11, b"b", 7),
            DeltaRecord::Mark {
                revision: 11,
                unix_ms: 1_000,
            },
        ]);
        let second = segment(&[
            put(12, b"c", 9),
            DeltaRecord::Mark {
                revision: 12,
                unix_ms: 2_000,
            },
            put(13, b"d", 0),
        ]);
        let build = |point| {
            let mut replay = DeltaReplay::new("full", point, 9);
            replay.add_segment("s1", &first, None).unwrap();
            replay.add_segment("s2", &second, None).unwrap();
            replay
        };
        let mut replay = build(PointInTime::Revision(12));
        let (recreate, detach) = replay.plan_leases(10, &BTreeSet::new()).unwrap();
        assert_eq!(recreate, BTreeMap::from([(7, 30)]));
        assert_eq!(detach, BTreeSet::from([9]));
        let mut changes = replay.changes(10, &detach);
        let keys: Vec<(Vec<u8>, i64)> = changes
            .by_ref()
            .map(|item| item.map(|(key, value)| (key, key_value_lease(&value))))
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        let mut summary = replay.summary.clone();
        changes.record_in(&mut summary);
        // Revision 10 is in the full backup already; 13 is past the target.
        assert_eq!(
            keys,
            [
                (revision_key(11, 0, false), 7),
                (revision_key(12, 0, false), 0)
            ]
        );
        assert_eq!(summary.changes_applied, 2);
        assert_eq!(summary.changes_detached, 1);

        let at = DateTime::<Utc>::from_timestamp_millis(1_500).unwrap();
        assert_eq!(build(PointInTime::Time(at)).target_revision(), 11);
        let before = DateTime::<Utc>::from_timestamp_millis(10).unwrap();
        assert_eq!(build(PointInTime::Time(before)).target_revision(), 9);
    }

    #[test]
    fn a_lease_whose_keys_were_deleted_before_the_target_is_not_recreated() {
        let tombstone = DeltaRecord::Change {
            key: revision_key(12, 0, true),
            value: KeyValueFields {
                key: b"b",
                ..Default::default()
            }
            .encode(),
        };
        let segment = segment(&[
            DeltaRecord::Lease { id: 7, ttl: 30 },
            put(11, b"b", 7),
            tombstone,
            DeltaRecord::Lease { id: 8, ttl: 60 },
            put(13, b"c", 8),
        ]);
        let mut replay = DeltaReplay::new("full", PointInTime::Revision(13), 10);
        replay.add_segment("s1", &segment, None).unwrap();
        let (recreate, detach) = replay.plan_leases(10, &BTreeSet::new()).unwrap();
        assert_eq!(recreate, BTreeMap::from([(8, 60)]));
        assert!(detach.is_empty());
        // A lease the db holds already is left alone.
        let (recreate, _) = replay.plan_leases(10, &BTreeSet::from([8])).unwrap();
        assert!(recreate.is_empty());
    }

    #[test]
    fn lease_entries_encode_as_etcd_stores_them() {
        let (key, value) = lease_entry(0x1234, 60);
        assert_eq!(key, 0x1234i64.to_be_bytes());
        assert_eq!(value, [0x08, 0xb4, 0x24, 0x10, 60]);
    }
}
