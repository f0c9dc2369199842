//! Prometheus text-format metrics of `snapshot save` for node_exporter's textfile collector,
//! written atomically (temporary file in the same directory, fsync, rename) so the collector
//! never reads half a file; and the registry helpers `backup run`'s metrics share.

use std::path::Path;

use chrono::{DateTime, Utc};
use etcd_common::write_file_atomically;
use prometheus::{Encoder, Gauge, Registry, TextEncoder};

use crate::error::{Result, SnapshotError};
use crate::save::SaveResult;

const LAST_SUCCESS: &str = "etcdops_snapshot_last_success_timestamp_seconds";

/// The gauges of a successful save, carried forward from the previous file by a failed one.
const SUCCESS_GAUGES: [(&str, &str); 5] = [
    (LAST_SUCCESS, "Time of the last successful snapshot save."),
    (
        "etcdops_snapshot_duration_seconds",
        "Wall time of the last successful save.",
    ),
    (
        "etcdops_snapshot_db_bytes",
        "Size of the etcd db in the last successful save.",
    ),
    (
        "etcdops_snapshot_stored_bytes",
        "Bytes stored by the last successful save (after compression).",
    ),
    (
        "etcdops_snapshot_revision",
        "etcd revision of the last successful save.",
    ),
];

/// Registers `collector` in `registry` (a name declared twice is a bug of the caller, caught
/// by its tests).
pub(crate) fn registered<C: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    collector: C,
) -> C {
    #[allow(clippy::expect_used)]
    registry
        .register(Box::new(collector.clone()))
        .expect("each metric is declared once");
    collector
}

/// A new gauge `name`, registered.
#[allow(clippy::expect_used)]
pub(crate) fn gauge(registry: &Registry, name: &str, help: &str) -> Gauge {
    registered(registry, Gauge::new(name, help).expect("valid metric name"))
}

/// Every metric of `registry` in Prometheus' text format.
pub(crate) fn encode(registry: &Registry) -> String {
    let mut text = Vec::new();
    // Encoding into a Vec fails only on a metric the registry itself rejected.
    let _ = TextEncoder::new().encode(&registry.gather(), &mut text);
    String::from_utf8_lossy(&text).into_owned()
}

/// The value of the unlabelled sample `name` in an earlier metrics text.
fn previous_value(previous: &str, name: &str) -> Option<f64> {
    previous
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// Writes the metrics of a save attempt. On failure the previous success metrics in the file
/// are kept, so an alert on "no success for N hours" keeps working.
pub fn write_save_metrics(
    path: &Path,
    outcome: std::result::Result<&SaveResult, &str>,
    now: DateTime<Utc>,
) -> Result<()> {
    let registry = Registry::new();
    let now_secs = now.timestamp_millis() as f64 / 1000.0;
    gauge(
        &registry,
        "etcdops_snapshot_last_attempt_timestamp_seconds",
        "Time of the last snapshot save attempt.",
    )
    .set(now_secs);
    gauge(
        &registry,
        "etcdops_snapshot_last_attempt_success",
        "1 if the last snapshot save succeeded, else 0.",
    )
    .set(if outcome.is_ok() { 1.0 } else { 0.0 });
    let values: [Option<f64>; 5] = match outcome {
        Ok(result) => [
            Some(now_secs),
            Some(result.duration_seconds),
            Some(result.manifest.db_size as f64),
            Some(result.manifest.object_size as f64),
            Some(result.manifest.revision as f64),
        ],
        // Carry the last success forward (none yet: left out).
        Err(_) => {
            let previous = std::fs::read_to_string(path).unwrap_or_default();
            SUCCESS_GAUGES.map(|(name, _)| previous_value(&previous, name))
        }
    };
    for ((name, help), value) in SUCCESS_GAUGES.iter().zip(values) {
        if let Some(value) = value {
            gauge(&registry, name, help).set(value);
        }
    }
    // 0644 whatever the umask: node_exporter reads it as its own user, and it holds only
    // timings, sizes and revisions.
    write_file_atomically(path, encode(&registry).as_bytes(), 0o644, None).map_err(|e| {
        SnapshotError::Data(etcd_data::Error::WriteFile {
            path: e.path.display().to_string(),
            source: e.source,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, name: &str) -> Option<f64> {
        previous_value(text, name)
    }

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
        assert_eq!(
            sample(&text, "etcdops_snapshot_last_attempt_success"),
            Some(0.0),
            "{text}"
        );
        assert_eq!(sample(&text, LAST_SUCCESS), Some(1_700_000_000.0), "{text}");
        assert_eq!(
            sample(&text, "etcdops_snapshot_revision"),
            Some(42.0),
            "{text}"
        );
        // What the previous file did not have stays out (never a made-up 0).
        assert!(!text.contains("etcdops_snapshot_db_bytes"), "{text}");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left");
        // A first attempt that fails: no success time at all.
        let first = dir.path().join("first.prom");
        write_save_metrics(&first, Err("boom"), Utc::now()).unwrap();
        let text = std::fs::read_to_string(&first).unwrap();
        assert!(!text.contains(LAST_SUCCESS), "{text}");
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
        let text = std::fs::read_to_string(&path).unwrap();
        for (name, value) in [
            (
                "etcdops_snapshot_last_attempt_timestamp_seconds",
                1_700_000_000.25,
            ),
            ("etcdops_snapshot_last_attempt_success", 1.0),
            (LAST_SUCCESS, 1_700_000_000.25),
            ("etcdops_snapshot_duration_seconds", 0.75),
            ("etcdops_snapshot_db_bytes", 4096.0),
            ("etcdops_snapshot_stored_bytes", 1024.0),
            ("etcdops_snapshot_revision", 42.0),
        ] {
            assert_eq!(sample(&text, name), Some(value), "{name}:\n{text}");
            assert!(
                text.contains(&format!("# TYPE {name} gauge\n")),
                "{name}:\n{text}"
            );
        }
        assert!(
            text.contains(
                "# HELP etcdops_snapshot_revision etcd revision of the last successful save.\n"
            ),
            "{text}"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
