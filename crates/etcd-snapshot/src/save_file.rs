//! `etcdctl snapshot save FILE`: etcd's snapshot stream written as it is (db and SHA-256
//! trailer) into one plain file, as etcdctl writes it: into `FILE.part` beside it (mode 0600),
//! fsynced, checked against etcd's trailer, renamed over `FILE`, and the directory fsynced (which
//! etcdctl does not do). On any failure `FILE.part` is removed and `FILE` is left as it was.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use etcd_core::ClusterConfig;
use serde::Serialize;

use crate::error::{Result, SnapshotError};
use crate::progress::Progress;
use crate::save::{TRAILER_LEN, TrailerCheck};
use crate::source::{SnapshotSource, choose_source};

/// What to save into which file.
#[derive(Debug, Clone, Default)]
pub struct SaveFileRequest {
    /// The file to write (replaced atomically when it exists).
    pub path: PathBuf,
    /// Stream from this member. Without it: the only endpoint when the configuration names
    /// exactly one (etcdctl's rule), else a healthy follower as for a store.
    pub endpoint: Option<String>,
}

/// What a file save wrote.
#[derive(Debug, Clone, Serialize)]
pub struct SaveFileResult {
    /// The file written.
    pub path: PathBuf,
    /// The temporary file it was written to first (gone now).
    pub part_path: PathBuf,
    /// Bytes of the file (db and trailer).
    pub size: u64,
    /// Bytes of the db (without the trailer).
    pub db_size: u64,
    /// SHA-256 of the db: what etcd's trailer holds, checked.
    pub db_sha256: String,
    /// The member streamed from, with what it reported just before.
    pub source: SnapshotSource,
    /// Wall time, in seconds.
    pub duration_seconds: f64,
}

/// The temporary file a save to `path` writes first: `path` + `.part`, as etcdctl's.
pub fn part_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".part");
    PathBuf::from(name)
}

fn write_err(path: &Path) -> impl Fn(std::io::Error) -> SnapshotError + '_ {
    move |source| {
        SnapshotError::Data(etcd_data::Error::WriteFile {
            path: path.display().to_string(),
            source,
        })
    }
}

/// Streams a snapshot into the plain file `request.path` (see the module's doc).
pub async fn save_snapshot_file(
    config: &ClusterConfig,
    request: &SaveFileRequest,
    progress: &dyn Progress,
) -> Result<SaveFileResult> {
    let started = Instant::now();
    let endpoint = request
        .endpoint
        .clone()
        .or_else(|| (config.endpoints.len() == 1).then(|| config.endpoints[0].clone()));
    let (source, client) = choose_source(config, endpoint.as_deref()).await?;
    let part = part_path(&request.path);
    let file = create_part(&part)?;
    let written = async {
        let stream = client.snapshot_stream().await?;
        let written = stream_to_file(stream, file, &part, progress).await?;
        std::fs::rename(&part, &request.path).map_err(write_err(&request.path))?;
        sync_parent(&request.path)?;
        Ok::<_, SnapshotError>(written)
    }
    .await;
    progress.finish();
    let (size, db_size, db_sha256) = match written {
        Ok(w) => w,
        Err(e) => {
            // Best effort: the error that matters is the one that stopped the save.
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    Ok(SaveFileResult {
        path: request.path.clone(),
        part_path: part,
        size,
        db_size,
        db_sha256,
        source,
        duration_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Creates `part` afresh, mode 0600, never through a symlink: whatever non-directory is at
/// that path first (an old `.part`, a planted symlink: unlinking removes the link, not its
/// target) is removed, then the file is created exclusively (`O_CREAT|O_EXCL`, which POSIX
/// makes fail on any existing name, a symlink included: nothing is followed). A link planted
/// between the two steps makes the create fail; it is never written through. An old
/// `.part`'s mode cannot carry over (the file is new), and the mode is set on the descriptor
/// as well, so the file, and the file renamed from it, is 0600 whatever the umask.
fn create_part(part: &Path) -> Result<File> {
    match std::fs::symlink_metadata(part) {
        Ok(meta) if !meta.is_dir() => std::fs::remove_file(part).map_err(write_err(part))?,
        _ => {}
    }
    let file = etcd_common::private::create_new_file(part).map_err(write_err(part))?;
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(write_err(part))?;
    Ok(file)
}

/// fsyncs the directory holding `path`, so the rename survives a crash.
fn sync_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(write_err(dir))
}

/// Writes the stream into `file`, fsyncs it, and checks etcd's trailer: (file size, db size,
/// db SHA-256).
async fn stream_to_file(
    mut stream: etcd_core::SnapshotStream,
    mut file: File,
    part: &Path,
    progress: &dyn Progress,
) -> Result<(u64, u64, String)> {
    let endpoint = stream.endpoint().to_string();
    let mut trailer = TrailerCheck::default();
    let mut started = false;
    while let Some(chunk) = stream.next_chunk().await? {
        if !started {
            progress.start(Some(chunk.bytes.len() as u64 + chunk.remaining_bytes));
            started = true;
        }
        progress.advance(chunk.bytes.len() as u64);
        file.write_all(&chunk.bytes).map_err(write_err(part))?;
        trailer.push(&chunk.bytes);
    }
    let (db_size, db_sha256) = trailer.finish(endpoint)?;
    file.sync_all().map_err(write_err(part))?;
    Ok((db_size + TRAILER_LEN as u64, db_size, db_sha256))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_part_file_is_beside_the_target() {
        assert_eq!(
            part_path(Path::new("/b/x.db")),
            PathBuf::from("/b/x.db.part")
        );
        assert_eq!(part_path(Path::new("x.db")), PathBuf::from("x.db.part"));
    }

    #[test]
    fn the_part_file_replaces_a_planted_symlink_without_writing_through_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"untouched").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o666)).unwrap();
        let part = dir.path().join("x.db.part");
        std::os::unix::fs::symlink(&victim, &part).unwrap();
        let mut file = create_part(&part).unwrap();
        file.write_all(b"snapshot").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
        let meta = std::fs::symlink_metadata(&part).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn an_old_world_readable_part_file_does_not_lend_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let part = dir.path().join("x.db.part");
        std::fs::write(&part, b"old").unwrap();
        std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o666)).unwrap();
        create_part(&part).unwrap();
        let meta = std::fs::metadata(&part).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(meta.len(), 0);
    }

    #[test]
    fn a_directory_at_the_part_path_is_left_alone_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let part = dir.path().join("x.db.part");
        std::fs::create_dir(&part).unwrap();
        assert!(create_part(&part).is_err());
        assert!(part.is_dir());
    }
}
