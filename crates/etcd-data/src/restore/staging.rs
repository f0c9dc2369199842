//! The temporary dirs a restore writes in before renaming them into place, and the ones a
//! killed restore left behind.
//!
//! A staging dir is `.<NAME>.restore-<PID>` beside its target `NAME`, created 0700 (it holds
//! a plaintext db). It is removed when the restore fails; a restore killed with SIGKILL (or a
//! machine that lost power) leaves it, so every restore of the same target removes the ones
//! whose process is gone: the PID is dead, or the process with that PID started after the
//! dir was made (the PID was reused, say after a reboot).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{RestoreError, io_err, make_dir, sync_dir};

/// The parent of `target` (`.` for a bare name).
fn parent_of(target: &Path) -> &Path {
    target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// `.<NAME>.restore-` for the target `.../NAME`.
fn prefix_for(target: &Path) -> String {
    let base = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "data".into());
    format!(".{base}.restore-")
}

/// A temporary directory beside `target` (same filesystem), removed on drop unless renamed.
pub(super) struct Staging {
    /// The staging dir.
    pub(super) path: PathBuf,
    done: bool,
}

impl Staging {
    /// Creates `.<NAME>.restore-<PID>` (0700) beside `target`, and its parent when missing.
    pub(super) fn beside(target: &Path) -> Result<Staging, RestoreError> {
        let parent = parent_of(target);
        make_dir(parent)?;
        let path = parent.join(format!("{}{}", prefix_for(target), std::process::id()));
        if path.exists() {
            fs::remove_dir_all(&path).map_err(io_err(&path))?;
        }
        etcd_common::private::create_dir(&path).map_err(io_err(&path))?;
        Ok(Staging { path, done: false })
    }

    /// Renames the staged dir onto `target` (absent or empty) and syncs the parent, so the
    /// rename is durable before anything that must come after it.
    pub(super) fn commit(mut self, target: &Path) -> Result<(), RestoreError> {
        sync_dir(&self.path)?;
        fs::rename(&self.path, target).map_err(io_err(target))?;
        self.done = true;
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// When the process `pid` started, if it is running (from `/proc/<pid>/stat` and the boot
/// time in `/proc/stat`).
fn process_started(pid: u32) -> Option<Option<SystemTime>> {
    let stat = match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        // Running, but its start is unknown.
        Err(_) => return Some(None),
    };
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let ticks: Option<u64> = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19))
        .and_then(|t| t.parse().ok());
    let boot: Option<u64> = fs::read_to_string("/proc/stat").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|t| t.trim().parse().ok())
    });
    let per_second = rustix::param::clock_ticks_per_second().max(1);
    Some(match (ticks, boot) {
        (Some(ticks), Some(boot)) => Some(
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(boot)
                + Duration::from_millis(ticks.saturating_mul(1000) / per_second),
        ),
        _ => None,
    })
}

/// Whether the staging dir `path`, made by process `pid`, was left by a restore that is gone.
fn abandoned(path: &Path, pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    match process_started(pid) {
        None => true,
        Some(None) => false,
        Some(Some(started)) => {
            // The process was started after the dir was last changed (a second of slack for
            // the clock's granularity): that PID is someone else's now.
            let changed = fs::symlink_metadata(path).and_then(|m| m.modified());
            matches!(changed, Ok(changed) if started > changed + Duration::from_secs(1))
        }
    }
}

/// Removes the staging dirs that killed restores left beside each of `targets`, and returns
/// them. Only dirs named exactly as [`Staging::beside`] names them are touched.
pub(super) fn remove_leftovers(targets: &[&Path]) -> Result<Vec<PathBuf>, RestoreError> {
    let mut removed = Vec::new();
    for target in targets {
        let parent = parent_of(target);
        let prefix = prefix_for(target);
        let Ok(entries) = fs::read_dir(parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            let path = entry.path();
            let is_dir = fs::symlink_metadata(&path)
                .map(|m| m.file_type().is_dir())
                .unwrap_or(false);
            if is_dir && abandoned(&path, pid) && !removed.contains(&path) {
                fs::remove_dir_all(&path).map_err(io_err(&path))?;
                removed.push(path);
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_staging_dir_is_private_and_gone_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("etcd");
        let stage = Staging::beside(&target).unwrap();
        let mode = fs::metadata(&stage.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let path = stage.path.clone();
        assert!(
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(".etcd.restore-")
        );
        drop(stage);
        assert!(!path.exists());
    }

    #[test]
    fn leftovers_of_dead_restores_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("etcd");
        // A PID that is not running: the highest the kernel allows, plus one.
        let dead = fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(4_194_304)
            + 1;
        let left = dir.path().join(format!(".etcd.restore-{dead}"));
        fs::create_dir_all(left.join("member/snap")).unwrap();
        fs::write(left.join("member/snap/db"), b"plaintext").unwrap();
        // The running parent of this test: alive, and started before the dir was made.
        let alive = dir.path().join(format!(
            ".etcd.restore-{}",
            std::os::unix::process::parent_id()
        ));
        fs::create_dir(&alive).unwrap();
        let others = [
            dir.path().join(format!(".other.restore-{dead}")),
            dir.path().join(".etcd.restore-notapid"),
            dir.path().join("etcd.restore-1"),
        ];
        for other in &others {
            fs::create_dir(other).unwrap();
        }
        let file = dir.path().join(format!(".etcd.restore-{}", dead + 1));
        fs::write(&file, b"a file, not ours").unwrap();

        let removed = remove_leftovers(&[&target]).unwrap();
        assert_eq!(removed, vec![left.clone()]);
        assert!(!left.exists());
        assert!(alive.exists() && file.exists());
        assert!(others.iter().all(|o| o.exists()));
    }

    #[test]
    fn a_dir_older_than_the_process_with_its_pid_is_a_leftover() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("etcd");
        let parent = std::os::unix::process::parent_id();
        let old = dir.path().join(format!(".etcd.restore-{parent}"));
        fs::create_dir(&old).unwrap();
        // Made long before the process with this PID started.
        let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        fs::File::open(&old)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        assert_eq!(remove_leftovers(&[&target]).unwrap(), vec![old]);
    }
}
