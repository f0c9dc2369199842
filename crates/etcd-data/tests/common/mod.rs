//! The etcd releases whose own data is in `tests/fixtures/etcd-<version>` (copied into the
//! repository), as a table the fixture tests run over: each test checks every release.
#![allow(dead_code)] // each test binary uses part of it
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

/// One release's fixtures and what its README says they were made with.
#[derive(Debug, Clone, Copy)]
pub struct Etcd {
    /// The release (`3.6.14`).
    pub version: &'static str,
    /// The storage version its db records (`3.6.0`).
    pub storage_version: &'static str,
    /// The `--initial-cluster-token` of etcdutl's restores.
    pub restore_token: &'static str,
    /// The peer URLs of members a, b and c of etcdutl's restores.
    pub restore_peers: [&'static str; 3],
    /// `outputs/etcdutl-hashkv-{snapshot,member-a}.json` exist (etcdutl 3.6.14's `hashkv`
    /// panics on a db with leased keys, so the 3.6 set has none).
    pub etcdutl_hashkv: bool,
}

/// etcd 3.6.14.
pub const ETCD_3_6: Etcd = Etcd {
    version: "3.6.14",
    storage_version: "3.6.0",
    restore_token: "restored36",
    restore_peers: [
        "http://127.0.0.1:45111",
        "http://127.0.0.1:45112",
        "http://127.0.0.1:45113",
    ],
    etcdutl_hashkv: false,
};

/// etcd 3.7.1.
pub const ETCD_3_7: Etcd = Etcd {
    version: "3.7.1",
    storage_version: "3.7.0",
    restore_token: "restored37",
    restore_peers: [
        "http://127.0.0.1:22521",
        "http://127.0.0.1:22522",
        "http://127.0.0.1:22523",
    ],
    etcdutl_hashkv: true,
};

/// Every release with fixtures.
pub const RELEASES: [Etcd; 2] = [ETCD_3_6, ETCD_3_7];

impl Etcd {
    /// `tests/fixtures/etcd-<version>`, checked to hold its snapshot.
    pub fn dir(&self) -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(format!("etcd-{}", self.version));
        assert!(
            dir.join(self.snapshot_name()).is_file(),
            "{} is missing",
            dir.display()
        );
        dir
    }

    /// `snapshot-<version>.db`.
    pub fn snapshot_name(&self) -> String {
        format!("snapshot-{}.db", self.version)
    }

    /// The snapshot `etcdctl snapshot save` wrote.
    pub fn snapshot_path(&self) -> PathBuf {
        self.dir().join(self.snapshot_name())
    }

    /// The snapshot, opened.
    pub fn snapshot(&self) -> etcd_data::SnapshotFile {
        etcd_data::open_snapshot_file(&self.snapshot_path(), None).unwrap()
    }

    /// `outputs/<name>`, as text.
    pub fn output_text(&self, name: &str) -> String {
        let path = self.dir().join("outputs").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// `outputs/<name>`, as JSON.
    pub fn output(&self, name: &str) -> serde_json::Value {
        serde_json::from_str(&self.output_text(name)).unwrap()
    }

    /// Unpacks the fixture tarball `name` into a new temporary dir.
    pub fn unpack(&self, name: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("tar")
            .arg("xzf")
            .arg(self.dir().join(name))
            .arg("-C")
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "{}: tar xzf {name}", self.version);
        dir
    }

    /// The stopped member a's data dir, unpacked (`.0` holds it: keep it alive).
    pub fn stopped_member(&self) -> (tempfile::TempDir, PathBuf) {
        let dir = self.unpack("member-a-data-dir-stopped.tar.gz");
        let data_dir = dir.path().join("a");
        (dir, data_dir)
    }

    /// etcdutl's restore request of the member a of the three-member cluster
    /// (`etcdutl-restored-a.tar.gz`), into `data_dir`.
    pub fn restore_request_a(&self, data_dir: &Path) -> etcd_data::RestoreRequest {
        let [a, b, c] = self.restore_peers;
        etcd_data::RestoreRequest {
            name: "a".into(),
            initial_cluster: format!("a={a},b={b},c={c}"),
            initial_cluster_token: self.restore_token.into(),
            initial_advertise_peer_urls: vec![a.into()],
            data_dir: data_dir.to_path_buf(),
            ..etcd_data::RestoreRequest::default()
        }
    }

    /// etcdutl's restore of a one-member cluster with `--bump-revision 1000
    /// --mark-compacted` (`etcdutl-restored-bump1000-marked.tar.gz`), into `data_dir`.
    pub fn restore_request_bump(&self, data_dir: &Path) -> etcd_data::RestoreRequest {
        let a = self.restore_peers[0];
        etcd_data::RestoreRequest {
            name: "a".into(),
            initial_cluster: format!("a={a}"),
            initial_cluster_token: self.restore_token.into(),
            initial_advertise_peer_urls: vec![a.into()],
            data_dir: data_dir.to_path_buf(),
            bump_revision: 1000,
            mark_compacted: true,
            ..etcd_data::RestoreRequest::default()
        }
    }
}

/// The record frames of a WAL segment, as etcd's encoder writes them (a little-endian length
/// word whose top byte holds the padding, the record, the padding), up to the first zero word
/// (the preallocated tail).
pub fn wal_frames(segment: &[u8]) -> Vec<&[u8]> {
    let mut at = 0;
    let mut frames = Vec::new();
    while at + 8 <= segment.len() {
        let word = u64::from_le_bytes(segment[at..at + 8].try_into().unwrap());
        if word == 0 {
            break;
        }
        let len = (word & 0x00FF_FFFF_FFFF_FFFF) as usize;
        let pad = if word >> 63 == 1 {
            ((word >> 56) & 0x7) as usize
        } else {
            0
        };
        frames.push(&segment[at + 8..at + 8 + len]);
        at += 8 + len + pad;
    }
    frames
}

/// The lock etcd's bbolt holds on `db` while etcd runs, held until the file is dropped.
pub fn hold_db_lock(db: &Path) -> std::fs::File {
    use rustix::fs::{FlockOperation, flock};
    let held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(db)
        .unwrap();
    flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
    held
}
