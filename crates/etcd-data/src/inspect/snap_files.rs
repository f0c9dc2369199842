//! The newest usable raft snapshot file, `member/snap/%016x-%016x.snap` (term, index): a
//! `snappb.Snapshot` whose CRC-32C covers a `raftpb.Snapshot`. As etcd's snapshotter does, a
//! broken newest file (empty, bad CRC, not decodable) is passed over for the next older one.

use std::path::Path;

use prost::Message;

use super::SnapPosition;
use super::error::InspectError;
use super::pb;

/// A snap file name: `%016x-%016x.snap` (term, index).
pub fn parse_snap_name(name: &str) -> Option<(u64, u64)> {
    let stem = name.strip_suffix(".snap")?;
    let (term, index) = stem.split_once('-')?;
    if term.len() != 16 || index.len() != 16 {
        return None;
    }
    Some((
        u64::from_str_radix(term, 16).ok()?,
        u64::from_str_radix(index, 16).ok()?,
    ))
}

/// The position a snap file's bytes hold, `None` when they are not a sound snap file.
pub fn decode_snap_file(bytes: &[u8]) -> Option<SnapPosition> {
    let file = pb::SnapFile::decode(bytes).ok()?;
    if file.data.is_empty() || crc32c::crc32c(&file.data) != file.crc {
        return None;
    }
    let metadata = pb::RaftSnapshot::decode(file.data.as_slice())
        .ok()?
        .metadata?;
    Some(SnapPosition {
        index: metadata.index,
        term: metadata.term,
    })
}

/// The newest sound snap file in `snap_dir` (`None`: none, or the dir is absent), and the
/// names of newer ones that were broken.
pub fn newest_snap(snap_dir: &Path) -> Result<(Option<SnapPosition>, Vec<String>), InspectError> {
    let io = |source| InspectError::Read {
        path: snap_dir.display().to_string(),
        source,
    };
    let entries = match std::fs::read_dir(snap_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, Vec::new())),
        Err(e) => return Err(io(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let name = entry
            .map_err(io)?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if parse_snap_name(&name).is_some() {
            names.push(name);
        }
    }
    // Fixed-width hex: name order is (term, index) order. Newest first.
    names.sort_unstable_by(|a, b| b.cmp(a));
    let mut broken = Vec::new();
    for name in names {
        let path = snap_dir.join(&name);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            // Purged by a running etcd since the listing.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(InspectError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        match decode_snap_file(&bytes) {
            Some(position) => return Ok((Some(position), broken)),
            None => broken.push(name),
        }
    }
    Ok((None, broken))
}
