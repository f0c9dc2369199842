//! The SELinux label of a restored data dir. A dir created by a restore would get the label
//! of the temporary dir's parent through policy transition rules only by chance; etcd under
//! an enforcing policy (RHEL, RHCOS) needs its data dir labelled like the place it lives in,
//! as `restorecon` would. So the restored tree gets the `security.selinux` attribute of the
//! target's parent directory, where SELinux is on. Where it is off, or the parent has no
//! label, nothing is done.

use std::fs;
use std::path::Path;

use super::{RestoreError, io_err};

/// The extended attribute holding a file's SELinux label.
const SELINUX_XATTR: &str = "security.selinux";

/// Whether SELinux is on: selinuxfs is mounted where the kernel puts it.
fn selinux_enabled() -> bool {
    Path::new("/sys/fs/selinux/enforce").exists() || Path::new("/selinux/enforce").exists()
}

/// The label to give a restored tree: the parent's, only when SELinux is on and the parent has
/// a non-empty label.
fn label_to_apply(enabled: bool, parent_label: Option<Vec<u8>>) -> Option<Vec<u8>> {
    parent_label.filter(|label| enabled && !label.is_empty())
}

/// The `security.selinux` attribute of `path`, when it has one.
fn read_label(path: &Path) -> Option<Vec<u8>> {
    xattr::get(path, SELINUX_XATTR).ok().flatten()
}

/// Sets attribute `name` to `value` on `path` and everything under it (symlinks themselves,
/// not what they point to).
fn set_tree(path: &Path, name: &str, value: &[u8]) -> Result<(), RestoreError> {
    xattr::set(path, name, value).map_err(io_err(path))?;
    let meta = fs::symlink_metadata(path).map_err(io_err(path))?;
    if meta.is_dir() {
        for entry in fs::read_dir(path).map_err(io_err(path))? {
            let entry = entry.map_err(io_err(path))?;
            set_tree(&entry.path(), name, value)?;
        }
    }
    Ok(())
}

/// Gives the staged tree the SELinux label of the dir it replaces (`target`), or, for a new
/// one, of the dir it is created in, where SELinux is on: the label etcd's data dir had, or
/// would get, e.g. `container_var_lib_t` on RHCOS.
pub(super) fn label_like_existing(staged: &Path, target: &Path) -> Result<(), RestoreError> {
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let enabled = selinux_enabled();
    let existing_label = if enabled {
        read_label(target).or_else(|| read_label(parent))
    } else {
        None
    };
    match label_to_apply(enabled, existing_label) {
        Some(label) => set_tree(staged, SELINUX_XATTR, &label),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_applied_only_when_selinux_is_on_and_the_parent_has_one() {
        let label = b"system_u:object_r:container_var_lib_t:s0".to_vec();
        assert_eq!(
            label_to_apply(true, Some(label.clone())),
            Some(label.clone())
        );
        assert_eq!(label_to_apply(false, Some(label)), None);
        assert_eq!(label_to_apply(true, None), None);
        assert_eq!(label_to_apply(true, Some(Vec::new())), None);
    }

    #[test]
    fn without_selinux_or_a_parent_label_nothing_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let staged = dir.path().join("stage");
        fs::create_dir_all(staged.join("member")).unwrap();
        fs::write(staged.join("member").join("db"), b"x").unwrap();
        let target = dir.path().join("data");
        // Whatever this machine's SELinux state, the temp dir has no label here unless SELinux
        // is on; either way the call succeeds, and without a label it adds none.
        label_like_existing(&staged, &target).unwrap();
        if read_label(dir.path()).is_none() {
            assert_eq!(read_label(&staged), None);
            assert_eq!(read_label(&staged.join("member").join("db")), None);
        } else {
            assert_eq!(read_label(&staged), read_label(dir.path()));
        }
    }

    #[test]
    fn a_tree_is_labelled_through_and_through() {
        // A user attribute stands in for the SELinux one, which only root under SELinux sets.
        let dir = tempfile::tempdir().unwrap();
        let staged = dir.path().join("stage");
        fs::create_dir_all(staged.join("member").join("snap")).unwrap();
        fs::write(staged.join("member").join("snap").join("db"), b"x").unwrap();
        let name = "user.etcdops-test";
        match set_tree(&staged, name, b"label") {
            Ok(()) => {
                for path in [
                    staged.clone(),
                    staged.join("member"),
                    staged.join("member").join("snap"),
                    staged.join("member").join("snap").join("db"),
                ] {
                    assert_eq!(
                        xattr::get(&path, name).unwrap(),
                        Some(b"label".to_vec()),
                        "{}",
                        path.display()
                    );
                }
            }
            // A filesystem without user attributes: the error names the path.
            Err(e) => assert!(e.to_string().contains("stage"), "{e}"),
        }
    }
}
