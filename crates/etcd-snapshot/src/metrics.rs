//! Prometheus text-format metrics of `snapshot save` for node_exporter's textfile collector,
//! written atomically (temporary file in the same directory, fsync, rename) so the collector
//! never reads half a file.

use std::path::Path;

use chrono::{DateTime, Utc};
use etcd_common::{PrometheusText, write_file_atomically};

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
    let mut text = PrometheusText::new();
    let now_secs = now.timestamp_millis() as f64 / 1000.0;
    text.gauge(
        "etcdops_snapshot_last_attempt_timestamp_seconds",
        "Time of the last snapshot save attempt.",
        now_secs,
    );
    match outcome {
        Ok(result) => {
            text.gauge(
                "etcdops_snapshot_last_attempt_success",
                "1 if the last snapshot save succeeded, else 0.",
                1_i64,
            )
            .gauge(
                LAST_SUCCESS,
                "Time of the last successful snapshot save.",
                now_secs,
            )
            .gauge(
                "etcdops_snapshot_duration_seconds",
                "Wall time of the last successful save.",
                result.duration_seconds,
            )
            .gauge(
                "etcdops_snapshot_db_bytes",
                "Size of the etcd db in the last successful save.",
                result.manifest.db_size,
            )
            .gauge(
                "etcdops_snapshot_stored_bytes",
                "Bytes stored by the last successful save (after compression).",
                result.manifest.object_size,
            )
            .gauge(
                "etcdops_snapshot_revision",
                "etcd revision of the last successful save.",
                result.manifest.revision,
            );
        }
        Err(_) => {
            text.gauge(
                "etcdops_snapshot_last_attempt_success",
                "1 if the last snapshot save succeeded, else 0.",
                0_i64,
            );
            // Carry the last success forward.
            let kept = previous.lines().filter(|l| {
                [
                    LAST_SUCCESS,
                    "etcdops_snapshot_duration_seconds",
                    "etcdops_snapshot_db_bytes",
                    "etcdops_snapshot_stored_bytes",
                    "etcdops_snapshot_revision",
                ]
                .iter()
                .any(|m| l.contains(m))
            });
            for line in kept {
                text.kept_line(line);
            }
        }
    }
    // 0644 whatever the umask: node_exporter reads it as its own user, and it holds only
    // timings, sizes and revisions.
    write_file_atomically(path, text.finish().as_bytes(), 0o644, None).map_err(|e| {
        SnapshotError::Data(etcd_data::Error::WriteFile {
            path: e.path.display().to_string(),
            source: e.source,
        })
    })
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

    #[test]
    fn a_success_writes_every_gauge_readable_by_anyone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etcd.prom");
        let mut manifest = crate::manifest::tests::sample();
        manifest.db_size = 4096;
        manifest.object_size = 1024;
        manifest.revision = 42;
        let result = SaveResult {
            manifest,
            manifest_name: "m".into(),
            store: "file:///b".into(),
            duration_seconds: 0.75,
        };
        let now = chrono::TimeZone::timestamp_millis_opt(&Utc, 1_700_000_000_250).unwrap();
        write_save_metrics(&path, Ok(&result), now).unwrap();
        let expected = "\
# HELP etcdops_snapshot_last_attempt_timestamp_seconds Time of the last snapshot save attempt.
# TYPE etcdops_snapshot_last_attempt_timestamp_seconds gauge
etcdops_snapshot_last_attempt_timestamp_seconds 1700000000.25
# HELP etcdops_snapshot_last_attempt_success 1 if the last snapshot save succeeded, else 0.
# TYPE etcdops_snapshot_last_attempt_success gauge
etcdops_snapshot_last_attempt_success 1
# HELP etcdops_snapshot_last_success_timestamp_seconds Time of the last successful snapshot save.
# TYPE etcdops_snapshot_last_success_timestamp_seconds gauge
etcdops_snapshot_last_success_timestamp_seconds 1700000000.25
# HELP etcdops_snapshot_duration_seconds Wall time of the last successful save.
# TYPE etcdops_snapshot_duration_seconds gauge
etcdops_snapshot_duration_seconds 0.75
# HELP etcdops_snapshot_db_bytes Size of the etcd db in the last successful save.
# TYPE etcdops_snapshot_db_bytes gauge
etcdops_snapshot_db_bytes 4096
# HELP etcdops_snapshot_stored_bytes Bytes stored by the last successful save (after compression).
# TYPE etcdops_snapshot_stored_bytes gauge
etcdops_snapshot_stored_bytes 1024
# HELP etcdops_snapshot_revision etcd revision of the last successful save.
# TYPE etcdops_snapshot_revision gauge
etcdops_snapshot_revision 42
";
        assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
