//! What `etcdctl snapshot save FILE` and `etcdutl snapshot status` print, for the commands
//! they share with etcdops: `Snapshot saved at FILE`, and etcdutl's status row and JSON (3.5's
//! for a 3.4/3.5 snapshot; 3.6's, with the storage version and live keys, for a 3.6 one).

use etcdops::snapshot::SaveFileResult;
use etcdops::snapshot::SnapshotStatus;

use crate::Printer;
use crate::output::{Render, human_bytes, humanize_bytes, json_safe, plain};

/// Whether etcdutl 3.6 is the tool whose output a status of this snapshot matches: the
/// snapshot carries a storage version (etcd 3.6 writes one; 3.4 and 3.5 never do).
pub fn is_3_6(status: &SnapshotStatus) -> bool {
    storage_version(status).is_some()
}

/// The storage version as etcd prints it (`3.6.0`): the stored text when it is a version.
pub fn storage_version(status: &SnapshotStatus) -> Option<String> {
    let text = status.storage_version.as_deref()?;
    let parts: Vec<&str> = text.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    (parts.len() == 3 && parts.iter().all(numeric)).then(|| text.to_string())
}

/// etcdutl's `totalKey`: every entry of every bucket (3.5), or the live keys (3.6).
pub fn etcdutl_total_key(status: &SnapshotStatus) -> u64 {
    if is_3_6(status) {
        status.live_keys
    } else {
        status.total_key
    }
}

/// etcdutl's columns: `hash, revision, total keys, total size[, version]` (its simple line
/// and its table).
pub fn status_columns(status: &SnapshotStatus) -> Vec<String> {
    let mut columns = vec![
        format!("{:x}", status.hash),
        status.revision.to_string(),
        etcdutl_total_key(status).to_string(),
        humanize_bytes(status.total_size),
    ];
    columns.extend(storage_version(status));
    columns
}

/// etcdutl's `-w simple` line.
pub fn status_simple(status: &SnapshotStatus) -> String {
    status_columns(status).join(", ")
}

/// etcdutl's `-w json`: `{"hash","revision","totalKey","totalSize"}`, and `version` for 3.6.
pub fn status_json(status: &SnapshotStatus) -> serde_json::Value {
    let mut json = serde_json::json!({
        "hash": status.hash,
        "revision": status.revision,
        "totalKey": etcdutl_total_key(status),
        "totalSize": status.total_size,
    });
    if let (Some(version), Some(object)) = (storage_version(status), json.as_object_mut()) {
        object.insert("version".into(), version.into());
    }
    json
}

/// What `snapshot save FILE` wrote.
#[derive(serde::Serialize)]
pub struct SaveFileView(pub SaveFileResult);

impl SaveFileView {
    /// etcdctl's line on stdout.
    pub fn saved_line(&self) -> String {
        format!("Snapshot saved at {}", self.0.path.display())
    }

    /// etcdctl's log lines on stderr (zap's production encoder: JSON, one per line).
    pub fn log_lines(&self) -> Vec<String> {
        let ts = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
        let line = |msg: &str, fields: serde_json::Value| {
            let mut value = serde_json::json!({"level": "info", "ts": ts, "msg": msg});
            if let (Some(out), Some(extra)) = (value.as_object_mut(), fields.as_object()) {
                out.extend(extra.clone());
            }
            value.to_string()
        };
        let r = &self.0;
        vec![
            line(
                "created temporary db file",
                serde_json::json!({"path": r.part_path.display().to_string()}),
            ),
            line(
                "fetching snapshot",
                serde_json::json!({"endpoint": r.source.endpoint}),
            ),
            line(
                "fetched snapshot",
                serde_json::json!({
                    "endpoint": r.source.endpoint,
                    "size": humanize_bytes(r.size),
                    "took": format!("{:.1}s", r.duration_seconds),
                }),
            ),
            line(
                "saved",
                serde_json::json!({"path": r.path.display().to_string()}),
            ),
        ]
    }
}

impl Render for SaveFileView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.0;
        let s = &r.source;
        vec![
            vec!["file".into(), r.path.display().to_string()],
            vec!["cluster id".into(), s.cluster_id.to_string()],
            vec![
                "member".into(),
                format!("{} ({}) at {}", s.member_id, s.member_name, s.endpoint),
            ],
            vec!["etcd version".into(), s.etcd_version.clone()],
            vec!["revision".into(), s.revision.to_string()],
            vec!["db size".into(), human_bytes(r.db_size as i64)],
            vec!["file size".into(), human_bytes(r.size as i64)],
            vec!["db sha256".into(), r.db_sha256.clone()],
            vec!["took".into(), format!("{:.1}s", r.duration_seconds)],
        ]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![self.saved_line()]
    }
}

/// Prints `snapshot save FILE`: under etcdctl's conventions its log lines on stderr and
/// `Snapshot saved at FILE` on stdout, whatever the format, as etcdctl does; else the view.
pub fn print_saved_file(printer: Printer, view: &SaveFileView) -> std::io::Result<()> {
    if printer.is_etcdctl() {
        for line in view.log_lines() {
            eprintln!("{}", json_safe(line));
        }
        println!("{}", plain(&view.saved_line()));
        return Ok(());
    }
    printer.print(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_printed_as_go_humanize_prints_them() {
        assert_eq!(humanize_bytes(0), "0 B");
        assert_eq!(humanize_bytes(9), "9 B");
        assert_eq!(humanize_bytes(999), "999 B");
        assert_eq!(humanize_bytes(36864), "37 kB");
        assert_eq!(humanize_bytes(20480), "20 kB");
        assert_eq!(humanize_bytes(1500), "1.5 kB");
        assert_eq!(humanize_bytes(9960), "10 kB");
        assert_eq!(humanize_bytes(16_801_792), "17 MB");
    }
}
