//! Prometheus text-format metrics for node_exporter's textfile collector, written atomically
//! (temporary file in the same directory, fsync, rename) so the collector never reads half a
//! file.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::error::{Result, SnapshotError};
use crate::save::SaveResult;

const LAST_SUCCESS: &str = "etcdops_snapshot_last_success_timestamp_seconds";

/// Writes the metrics of a save attempt. On failure the previous success metrics in the file
/// are kept, so an alert on "no success for N hours" keeps working.
pub fn write_save_metrics(
    path: &Path,
    outcome: std::result::Result<&SaveResult, &str>,
    now: DateTime<Utc>,
) -> Result<()> {
    let previous = std::fs::read_to_string(path).unwrap_or_default();
    let mut text = String::new();
    let mut gauge = |name: &str, help: &str, value: String| {
        text.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
        ));
    };
    let now_secs = now.timestamp_millis() as f64 / 1000.0;
    gauge(
        "etcdops_snapshot_last_attempt_timestamp_seconds",
        "Time of the last snapshot save attempt.",
        format!("{now_secs}"),
    );
    match outcome {
        Ok(result) => {
            gauge(
                "etcdops_snapshot_last_attempt_success",
                "1 if the last snapshot save succeeded, else 0.",
                "1".into(),
            );
            gauge(
                LAST_SUCCESS,
                "Time of the last successful snapshot save.",
                format!("{now_secs}"),
            );
            gauge(
                "etcdops_snapshot_duration_seconds",
                "Wall time of the last successful save.",
                format!("{}", result.duration_seconds),
            );
            gauge(
                "etcdops_snapshot_db_bytes",
                "Size of the etcd db in the last successful save.",
                result.manifest.db_size.to_string(),
            );
            gauge(
                "etcdops_snapshot_stored_bytes",
                "Bytes stored by the last successful save (after compression).",
                result.manifest.object_size.to_string(),
            );
            gauge(
                "etcdops_snapshot_revision",
                "etcd revision of the last successful save.",
                result.manifest.revision.to_string(),
            );
        }
        Err(_) => {
            gauge(
                "etcdops_snapshot_last_attempt_success",
                "1 if the last snapshot save succeeded, else 0.",
                "0".into(),
            );
            // Carry the last success forward.
            let kept: Vec<&str> = previous
                .lines()
                .filter(|l| {
                    [
                        LAST_SUCCESS,
                        "etcdops_snapshot_duration_seconds",
                        "etcdops_snapshot_db_bytes",
                        "etcdops_snapshot_stored_bytes",
                        "etcdops_snapshot_revision",
                    ]
                    .iter()
                    .any(|m| l.contains(m))
                })
                .collect();
            for line in kept {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    write_atomically(path, text.as_bytes())
}

/// Writes `bytes` to `path` through a temporary file in the same directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let failed = |source: std::io::Error| SnapshotError::WriteFile {
        path: path.display().to_string(),
        source,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "metrics.prom".into());
    let tmp = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    // A leftover of a killed run with the same pid.
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        // 0644 whatever the umask: node_exporter reads it as its own user, and it holds only
        // timings, sizes and revisions.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_keeps_the_last_success() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etcd.prom");
        std::fs::write(
            &path,
            format!("{LAST_SUCCESS} 1700000000\netcdops_snapshot_revision 42\n"),
        )
        .unwrap();
        write_save_metrics(&path, Err("boom"), Utc::now()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("etcdops_snapshot_last_attempt_success 0"),
            "{text}"
        );
        assert!(
            text.contains(&format!("{LAST_SUCCESS} 1700000000")),
            "{text}"
        );
        assert!(text.contains("etcdops_snapshot_revision 42"), "{text}");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left");
    }
}
