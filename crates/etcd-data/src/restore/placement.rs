//! Where the WAL dir lies relative to the data dir, decided before anything is written.
//!
//! etcd started on a WAL without its db bootstraps an empty member (3.4), so the WAL must
//! never become visible before the db:
//! - a WAL dir inside the data dir (`DATA/member/wal`, the default, or `DATA/wal`) is staged
//!   inside the staged data dir: one rename puts both in place;
//! - a WAL dir outside it (a sibling, another disk) is staged beside itself and renamed into
//!   place after the data dir (a kill in between leaves a db without a WAL, which etcd starts
//!   from with the data, and which the next restore reports as incomplete);
//!   With `move_aside`, an old WAL dir outside is moved aside before the old data dir, for
//!   the same reason;
//! - the data dir itself, a dir holding the data dir, etcd's `member` dir, a dir inside
//!   `member/snap` and a mount point (a WAL dir is replaced whole) are refused.

use std::ffi::OsString;
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::dirs::DirLayout;
use super::lock::refuse_if_running;
use super::{RestoreError, RestoreRequest, invalid, opts};

/// Where the WAL goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WalPlacement {
    /// Inside the data dir's staged tree, at this path relative to the staged dir.
    Inside(PathBuf),
    /// A dir of its own outside the data dir (symlinks followed), renamed into place last.
    Outside(PathBuf),
}

/// The dirs a restore writes, worked out (and checked) before anything is read or written.
pub(super) struct Targets {
    /// The data dir is a mount point: its `member` dir is staged and replaced.
    pub(super) mount_point: bool,
    /// The data dir, symlinks followed.
    pub(super) data_dir: PathBuf,
    /// What is staged and renamed into place: the data dir, or its `member` dir.
    pub(super) data_target: PathBuf,
    /// Where the WAL goes.
    pub(super) placement: WalPlacement,
    /// A WAL dir outside the data dir, staged and renamed on its own.
    pub(super) wal_target: Option<PathBuf>,
    /// The WAL dir as it will be.
    pub(super) wal_final: PathBuf,
}

impl Targets {
    /// The dirs of `request`. A symlinked data dir (say /var/lib/etcd -> /data/etcd on its own
    /// disk) is restored where it points, and the link kept; a data dir that is a mount point
    /// keeps the mount: its `member` dir is what is staged, moved aside and replaced. A data
    /// dir a member runs on is refused (it is never touched, not even moved aside), except in
    /// a dry run, the check made before the members are stopped.
    pub(super) fn of(request: &RestoreRequest) -> Result<Targets, RestoreError> {
        let layout = DirLayout::of(&request.data_dir)?;
        let data_dir = layout.real.clone();
        let data_target = if layout.mount_point {
            data_dir.join("member")
        } else {
            data_dir.clone()
        };
        if let Some(wal) = &request.wal_dir
            && DirLayout::of(wal)?.mount_point
        {
            return Err(invalid(opts::WAL_DIR)(format!(
                "{} is a mount point, and a WAL dir is replaced whole; give a dir inside it",
                wal.display()
            )));
        }
        let placement = place_wal(
            &data_dir,
            &data_target,
            layout.mount_point,
            request.wal_dir.as_deref(),
        )?;
        let (wal_target, wal_final) = match &placement {
            WalPlacement::Inside(inside) => (None, data_target.join(inside)),
            WalPlacement::Outside(dir) => (Some(dir.clone()), dir.clone()),
        };
        // A dry run is the check before the members are stopped: only a real restore needs
        // the member stopped.
        if !request.dry_run {
            refuse_if_running(&data_dir)?;
        }
        Ok(Targets {
            mount_point: layout.mount_point,
            data_dir,
            data_target,
            placement,
            wal_target,
            wal_final,
        })
    }
}

/// `path` absolute, every symlink in it followed (also a dangling one: a link to a dir not
/// created yet), `.` and `..` resolved.
pub(super) fn resolved(path: &Path) -> Result<PathBuf, RestoreError> {
    let absolute = std::path::absolute(path)
        .map_err(|e| invalid(opts::DATA_DIR)(format!("{}: {e}", path.display())))?;
    // The components still to walk, the next one last.
    let mut todo = parts(&absolute);
    let mut out = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == "/" {
            out = PathBuf::from("/");
            continue;
        }
        if part == ".." {
            out.pop();
            continue;
        }
        let candidate = out.join(&part);
        match fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > 40 {
                    return Err(invalid(opts::DATA_DIR)(format!(
                        "{}: too many levels of symbolic links",
                        path.display()
                    )));
                }
                let target = fs::read_link(&candidate).map_err(|e| {
                    invalid(opts::DATA_DIR)(format!("{}: {e}", candidate.display()))
                })?;
                // The link's target is walked in its place (relative to the link's dir).
                todo.extend(parts(&target));
            }
            _ => out = candidate,
        }
    }
    Ok(out)
}

/// The components of `path` that matter, last first (`/` for the root).
fn parts(path: &Path) -> Vec<OsString> {
    path.components()
        .rev()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir => Some("/".into()),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Decides where the WAL goes. `data_target` is what is staged and renamed (the data dir, or
/// its `member` dir when the data dir is a mount point), `data_dir` the data dir (symlinks
/// followed), `wal` the WAL dir asked for.
pub(super) fn place_wal(
    data_dir: &Path,
    data_target: &Path,
    mount_point: bool,
    wal: Option<&Path>,
) -> Result<WalPlacement, RestoreError> {
    let default = if mount_point {
        PathBuf::from("wal")
    } else {
        Path::new("member").join("wal")
    };
    let Some(wal) = wal else {
        return Ok(WalPlacement::Inside(default));
    };
    let refuse = |why: String| Err(invalid(opts::WAL_DIR)(format!("{}: {why}", wal.display())));
    let layout = DirLayout::of(wal)?;
    let wal_real = resolved(wal)?;
    let data_real = resolved(data_dir)?;
    let target_real = resolved(data_target)?;
    if wal_real == data_real {
        return refuse(
            "it is the data dir itself; etcd keeps its WAL in a dir of its own: leave the WAL \
             dir out (the default is DATA/member/wal) or give a dir outside the data dir"
                .into(),
        );
    }
    if data_real.starts_with(&wal_real) {
        return refuse(format!(
            "the data dir {} is inside it; give a WAL dir that does not hold the data dir",
            data_dir.display()
        ));
    }
    if let Ok(inside) = wal_real.strip_prefix(&target_real) {
        let member = if mount_point {
            PathBuf::new()
        } else {
            PathBuf::from("member")
        };
        if inside == member {
            return refuse(
                "it is etcd's member dir, which holds the db; give DATA/member/wal or a dir \
                 outside the data dir"
                    .into(),
            );
        }
        if inside.starts_with(member.join("snap")) {
            return refuse(
                "it is inside member/snap, beside the db; give DATA/member/wal or a dir \
                 outside the data dir"
                    .into(),
            );
        }
        return Ok(WalPlacement::Inside(inside.to_path_buf()));
    }
    Ok(WalPlacement::Outside(layout.real))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(data: &Path, wal: &Path) -> Result<WalPlacement, String> {
        place_wal(data, data, false, Some(wal)).map_err(|e| e.to_string())
    }

    #[test]
    fn each_wal_dir_placement_is_decided_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("etcd");
        assert_eq!(
            place_wal(&data, &data, false, None).unwrap(),
            WalPlacement::Inside("member/wal".into())
        );
        assert_eq!(
            place(&data, &data.join("member/wal")).unwrap(),
            WalPlacement::Inside("member/wal".into())
        );
        assert_eq!(
            place(&data, &data.join("wal")).unwrap(),
            WalPlacement::Inside("wal".into())
        );
        // Spelled with `..` and `.`: the same dir.
        assert_eq!(
            place(&data, &data.join("x/../member/./wal")).unwrap(),
            WalPlacement::Inside("member/wal".into())
        );
        assert_eq!(
            place(&data, &dir.path().join("wal")).unwrap(),
            WalPlacement::Outside(dir.path().join("wal"))
        );
        for (wal, why) in [
            (data.clone(), "the data dir itself"),
            (data.join("."), "the data dir itself"),
            (dir.path().to_path_buf(), "is inside it"),
            (data.join("member"), "member dir"),
            (data.join("member/snap/wal"), "member/snap"),
        ] {
            let err = place(&data, &wal).unwrap_err();
            assert!(err.contains(why), "{}: {err}", wal.display());
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn symlinks_are_followed_before_comparing() {
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("disk");
        fs::create_dir(&disk).unwrap();
        // /var/lib/etcd -> disk/etcd (not created yet)
        let data = dir.path().join("etcd");
        std::os::unix::fs::symlink(disk.join("etcd"), &data).unwrap();
        assert_eq!(resolved(&data).unwrap(), disk.join("etcd"));
        assert_eq!(
            place(&resolved(&data).unwrap(), &data.join("member/wal")).unwrap(),
            WalPlacement::Inside("member/wal".into())
        );
        // A WAL dir reached through a link to the data dir is the data dir.
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink("disk/etcd", &alias).unwrap();
        assert!(
            place(&data, &alias)
                .unwrap_err()
                .contains("data dir itself")
        );
    }

    #[test]
    fn a_mount_point_data_dir_stages_its_member_dir() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("etcd");
        let member = data.join("member");
        assert_eq!(
            place_wal(&data, &member, true, Some(&member.join("wal"))).unwrap(),
            WalPlacement::Inside("wal".into())
        );
        assert_eq!(
            place_wal(&data, &member, true, Some(&data.join("wal"))).unwrap(),
            WalPlacement::Outside(data.join("wal"))
        );
        let err = place_wal(&data, &member, true, Some(&member)).unwrap_err();
        assert!(err.to_string().contains("member dir"), "{err}");
    }
}
