//! Checking a restore request before anything is read.

use std::path::{Path, PathBuf};

use super::dirs::{DirLayout, make_dir, resolve_owner};
use super::placement::Targets;
use super::{RestoreError, RestoreRequest, RestoredMember, invalid, opts, parse_initial_cluster};

/// Checks a restore request before anything is read: the member list, this member's name and
/// URLs, the revision flags, the owner, where the WAL dir lies, and that no member runs on
/// the data dir. Front-ends call it before opening the snapshot, so a
/// mistyped flag is reported at once, not after a download.
pub fn validate_restore_request(request: &RestoreRequest) -> Result<(), RestoreError> {
    validate(request)?;
    Targets::of(request).map(|_| ())
}

/// The members of the new cluster, the index of this one, and the owner's ids.
pub(super) type Validated = (Vec<RestoredMember>, usize, Option<(u32, Option<u32>)>);

pub(super) fn validate(request: &RestoreRequest) -> Result<Validated, RestoreError> {
    if request.initial_cluster_token.is_empty() {
        return Err(invalid(opts::INITIAL_CLUSTER_TOKEN)(
            "must not be empty".into(),
        ));
    }
    let members = parse_initial_cluster(&request.initial_cluster, &request.initial_cluster_token)
        .map_err(invalid(opts::INITIAL_CLUSTER))?;
    let me = members
        .iter()
        .position(|m| m.name == request.name)
        .ok_or_else(|| {
            invalid(opts::NAME)(format!(
                "{:?} is not in the initial cluster {:?}",
                request.name, request.initial_cluster
            ))
        })?;
    let me_member = &members[me];
    let mut advertised = request.initial_advertise_peer_urls.clone();
    advertised.sort();
    advertised.dedup();
    if advertised != me_member.peer_urls {
        return Err(invalid(opts::INITIAL_ADVERTISE_PEER_URLS)(format!(
            "{} does not match {}'s peer URLs in the initial cluster ({})",
            advertised.join(","),
            me_member.name,
            me_member.peer_urls.join(",")
        )));
    }
    if (request.bump_revision > 0) != request.mark_compacted {
        return Err(invalid(opts::MARK_COMPACTED)(
            "marking the revision compacted is required with a revision bump > 0, and allowed \
             only with it"
                .into(),
        ));
    }
    let owner = request.owner.as_deref().map(resolve_owner).transpose()?;
    Ok((members, me, owner))
}

/// Where to decompress or download a snapshot for a restore into `data_dir`: the dir the
/// restore stages in (created, 0700, when missing), beside the data dir where its symlinks
/// lead, or inside it when it is a mount point. The unnamed spool then sits on the staging
/// dir's filesystem, and the restore gives it its name there (no copy: see
/// [`crate::SnapshotFile::take_into`]).
pub fn restore_spool_dir(data_dir: &Path) -> Result<PathBuf, RestoreError> {
    let layout = DirLayout::of(data_dir)?;
    let dir = if layout.mount_point {
        layout.real
    } else {
        layout
            .real
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()
    };
    make_dir(&dir)?;
    Ok(dir)
}
