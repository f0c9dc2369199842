//! `etcd_data_dir_info`: a member's data dir, read offline (`etcdops::data_dir::inspect_data_dir`):
//! the WAL's last entry, HardState, raft snapshot, the db's revision and applied index, IDs.
//! Read-only, so check mode runs it fully. A dir without `member/` is not a failure:
//! `exists: false`, `inspection: null`.

use std::path::PathBuf;

use etcdops::data_dir::{InspectError, inspect_data_dir};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    data_dir: PathBuf,
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let shown = args.data_dir.display().to_string();
    let inspection = match inspect_data_dir(&args.data_dir) {
        Ok(inspection) => inspection,
        Err(InspectError::NoSuchDir { .. } | InspectError::NotADataDir { .. }) => {
            return Ok(
                Outcome::unchanged(format!("{shown} holds no etcd data (no member/ dir)"))
                    .with("exists", false)
                    .with("inspection", serde_json::Value::Null),
            );
        }
        Err(e) => return Err(ModuleError::from_library(&e)),
    };
    let wal = &inspection.wal;
    let mut outcome = Outcome::unchanged(format!(
        "member {} of cluster {}: WAL at index {} (term {}), commit {}, db at index {} (revision {})",
        wal.member_id,
        wal.cluster_id,
        wal.last_index,
        wal.last_term,
        wal.hard_state.commit,
        inspection.db.consistent_index,
        inspection.db.revision
    ));
    if inspection.locked {
        outcome.warnings.push(format!(
            "a member is running on {shown} (its db is locked): these figures may be stale; stop it for a trustworthy reading"
        ));
    }
    Ok(outcome.with("exists", true).with("inspection", &inspection))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    fn run(data_dir: &std::path::Path, check_mode: bool) -> (bool, Value) {
        let args = json!({
            "_ansible_module_name": "etcd_data_dir_info",
            "_ansible_check_mode": check_mode,
            "data_dir": data_dir,
        });
        let out = crate::run_module_json(&args.to_string(), None);
        (out.failed, serde_json::from_str(&out.json).unwrap())
    }

    #[test]
    fn a_dir_without_member_is_absent_and_a_broken_one_fails_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let (failed, result) = run(&dir.path().join("none"), true);
        assert!(!failed, "{result}");
        assert_eq!(result["exists"], false);
        assert_eq!(result["inspection"], Value::Null);
        assert_eq!(result["changed"], false);
        // member/ without a db or WAL: etcd data, damaged.
        std::fs::create_dir_all(dir.path().join("member/snap")).unwrap();
        let (failed, result) = run(dir.path(), false);
        assert!(failed, "{result}");
        let msg = result["msg"].as_str().unwrap();
        assert!(
            msg.contains("member/snap/db") && !msg.contains('\n'),
            "{msg}"
        );
    }
}
