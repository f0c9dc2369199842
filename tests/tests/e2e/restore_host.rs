//! `snapshot restore` on hosts as they are: a data dir that is a symlink to another disk (with
//! spaces in its path), a data dir that is a mount point of its own, and a data dir owned by
//! the user etcd runs as. Real etcd must start on each result.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use etcdops_tests::{Cluster, Security};

use crate::snapshot_failures::Tmpfs;
use crate::snapshot_restore::restore;

fn entries_starting(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

#[test]
fn restore_follows_a_symlinked_data_dir_keeps_a_mount_point_and_the_owner() {
    let source = Cluster::start(1, Security::Plain);
    source.put_keys("/host/", 50);
    let file = crate::save_snapshot(&source, &source.dir().join("backups"), "zstd");
    let mut target = Cluster::plan_restore(2, "h");

    // Member 0: /var/lib/etcd -> "/other disk/etcd data", which holds an old member owned
    // by the user etcd runs as.
    let real = target.dir().join("other disk").join("etcd data");
    std::fs::create_dir_all(real.join("member")).unwrap();
    std::fs::write(real.join("member").join("old"), "old member").unwrap();
    std::os::unix::fs::chown(&real, Some(4242), Some(4343)).unwrap();
    std::os::unix::fs::symlink(&real, &target.members[0].data_dir).unwrap();

    // Member 1: its data dir is a filesystem of its own, with lost+found and an old member.
    let mount = target.members[1].data_dir.clone();
    let _tmpfs = Tmpfs::mount(&mount, "512m");
    std::fs::create_dir_all(mount.join("lost+found")).unwrap();
    std::fs::create_dir_all(mount.join("member")).unwrap();
    std::fs::write(mount.join("member").join("old"), "old member").unwrap();

    for index in 0..2 {
        restore(&file, &target, index, &["--move-aside"]).expect_code(0);
    }

    // The link is kept and points where it did; the restore is on the other disk, the old
    // member moved aside there, and the owner kept.
    let link = &target.members[0].data_dir;
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_link(link).unwrap(), real);
    assert!(real.join("member/snap/db").is_file());
    let aside = entries_starting(real.parent().unwrap(), "etcd data.bak-");
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read_to_string(real.parent().unwrap().join(&aside[0]).join("member/old")).unwrap(),
        "old member"
    );
    for path in [
        real.clone(),
        real.join("member/snap/db"),
        real.join("member/wal"),
    ] {
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (4242, 4343), "{}", path.display());
    }

    // The mount point is still one, now private as etcd 3.5 wants; its member was replaced,
    // the old one kept beside it.
    assert_eq!(std::fs::metadata(&mount).unwrap().mode() & 0o777, 0o700);
    let parent_dev = std::fs::metadata(mount.parent().unwrap()).unwrap().dev();
    assert_ne!(std::fs::metadata(&mount).unwrap().dev(), parent_dev);
    assert!(mount.join("member/snap/db").is_file());
    assert!(mount.join("lost+found").is_dir());
    let aside = entries_starting(&mount, "member.bak-");
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read_to_string(mount.join(&aside[0]).join("old")).unwrap(),
        "old member"
    );
    let stray = entries_starting(&mount, ".member.restore-");
    assert!(stray.is_empty(), "{stray:?}");

    target.start_restored();
    let got = crate::run(
        &target,
        &["get", "/host/", "--prefix", "--count-only", "-w", "json"],
    );
    got.expect_code(0);
    assert_eq!(got.json()["count"], 50, "{got}");
    target.put("/host/after", "written after the restore");
}
