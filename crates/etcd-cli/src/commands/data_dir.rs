//! `etcdops data-dir ...`: a member's data dir, offline. `inspect` prints what
//! `etcdops::data_dir::inspect_data_dir` reads (table, `-w simple` lines, or `-w json`: the struct
//! itself, which `etcdops quorum plan --inspection FILE` reads back); `backup` and
//! `move-aside` are the quorum recovery's (`commands::quorum`); `commit-tail` raises the
//! saved commit index to the WAL's last entry (`etcdops::data_dir::adopt_wal_tail`) before a
//! `--force-new-cluster` start.

use anyhow::Result;
use etcdops::data_dir::{
    DataDirInspection, SnapPosition, TailAdoption, adopt_wal_tail, inspect_data_dir,
};

use super::ExitStatus;
use etcdops::guard::Force;

use crate::flags::{CommitTailArgs, DataDirCommand, DataDirInspectArgs, GlobalFlags, OutputFormat};
use crate::output::{Render, human_bytes, print, warn};

/// Runs one `data-dir` subcommand.
pub async fn run(
    global: &GlobalFlags,
    command: &DataDirCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        DataDirCommand::Inspect(args) => inspect(args, format),
        DataDirCommand::Backup(args) => {
            super::quorum::run_data_dir_backup(&args.dir, args.dry_run, format)
        }
        DataDirCommand::MoveAside(args) => {
            super::quorum::run_data_dir_move_aside(&args.dir, args.dry_run, format)
        }
        DataDirCommand::CommitTail(args) => commit_tail(global, args, format).await,
    }
}

/// `data-dir commit-tail DIR [--dry-run] [--force]`.
async fn commit_tail(
    global: &GlobalFlags,
    args: &CommitTailArgs,
    format: OutputFormat,
) -> Result<ExitStatus> {
    let guards = super::platform::guards(global);
    let force = Force(args.force.force);
    let adopted = adopt_wal_tail(&guards, &args.dir.dir, args.dir.dry_run, force).await?;
    if let Some(warning) = &adopted.forced {
        crate::output::warn(warning);
    }
    let done = adopted.result;
    let args = &args.dir;
    print(
        format,
        &TailView {
            adoption: done,
            dir: args.dir.display().to_string(),
            dry_run: args.dry_run,
        },
    )?;
    Ok(ExitStatus::Success)
}

/// What `commit-tail` did; JSON: the library's result.
#[derive(serde::Serialize)]
struct TailView {
    #[serde(flatten)]
    adoption: TailAdoption,
    #[serde(skip)]
    dir: String,
    #[serde(skip)]
    dry_run: bool,
}

impl TailView {
    /// One sentence.
    fn sentence(&self) -> String {
        let a = &self.adoption;
        match (a.changed, self.dry_run) {
            (false, _) => format!(
                "{}: nothing past the saved commit index {} in the WAL; nothing to do",
                self.dir, a.commit_before
            ),
            (true, true) => format!(
                "would raise the saved commit index of {} from {} to {} ({} entries past it kept by a forced start), appending to {} (dry run: nothing written)",
                self.dir, a.commit_before, a.commit_after, a.entries_adopted, a.segment
            ),
            (true, false) => format!(
                "raised the saved commit index of {} from {} to {} ({} entries past it now kept by a forced start), in {}",
                self.dir, a.commit_before, a.commit_after, a.entries_adopted, a.segment
            ),
        }
    }
}

impl Render for TailView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "CHANGED",
            "COMMIT BEFORE",
            "COMMIT AFTER",
            "ENTRIES",
            "SEGMENT",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let a = &self.adoption;
        vec![vec![
            a.changed.to_string(),
            a.commit_before.to_string(),
            a.commit_after.to_string(),
            a.entries_adopted.to_string(),
            a.segment.clone(),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![self.sentence()]
    }
}

/// `data-dir inspect DIR`.
fn inspect(args: &DataDirInspectArgs, format: OutputFormat) -> Result<ExitStatus> {
    let inspection = inspect_data_dir(&args.dir)?;
    if inspection.locked {
        warn(&format!(
            "a member is running on {} (its db is locked): these figures may be stale; stop it for a trustworthy reading",
            inspection.data_dir
        ));
    }
    if inspection.wal.torn_tail {
        warn(
            "the WAL's last record was cut by a crash and is ignored, as etcd does when it starts",
        );
    }
    print(format, &InspectionView(inspection))?;
    Ok(ExitStatus::Success)
}

/// The inspection, printed as field/value pairs.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct InspectionView(DataDirInspection);

impl InspectionView {
    /// (field, value) pairs, in the order an operator reads them.
    fn fields(&self) -> Vec<(&'static str, String)> {
        let i = &self.0;
        let w = &i.wal;
        let hs = &w.hard_state;
        let position = |p: &SnapPosition| format!("index {}, term {}", p.index, p.term);
        let optional = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let name =
            i.db.members
                .iter()
                .find(|m| m.id == w.member_id)
                .map(|m| {
                    format!(
                        " ({}{})",
                        m.name,
                        if m.is_learner { ", learner" } else { "" }
                    )
                })
                .unwrap_or_default();
        let terms: Vec<String> = w
            .term_starts
            .iter()
            .map(|t| format!("{} from {}", t.term, t.first_index))
            .collect();
        vec![
            ("data dir", i.data_dir.clone()),
            (
                "locked",
                if i.locked {
                    "yes: a member is running on it (figures may be stale)".into()
                } else {
                    "no".into()
                },
            ),
            ("member ID", format!("{}{name}", w.member_id)),
            ("cluster ID", w.cluster_id.clone()),
            ("WAL segments", w.segments.len().to_string()),
            (
                "WAL last entry",
                format!("index {}, term {}", w.last_index, w.last_term),
            ),
            (
                "HardState",
                format!("term {}, vote {:x}, commit {}", hs.term, hs.vote, hs.commit),
            ),
            (
                "commit term",
                optional(w.commit_term.map(|t| t.to_string())),
            ),
            ("uncommitted entries", w.uncommitted_entries.to_string()),
            ("WAL snapshot", position(&w.snapshot)),
            ("snap file", optional(i.snap_file.as_ref().map(position))),
            ("terms", terms.join(", ")),
            (
                "torn tail",
                if w.torn_tail { "yes (ignored)" } else { "no" }.into(),
            ),
            ("db revision", i.db.revision.to_string()),
            (
                "db compact revision",
                optional(i.db.compact_revision.map(|r| r.to_string())),
            ),
            ("db consistent index", i.db.consistent_index.to_string()),
            ("db term", optional(i.db.term.map(|t| t.to_string()))),
            ("db members", i.db.members.len().to_string()),
            ("db size", human_bytes(i.db.size as i64)),
            (
                "committed entries beyond db",
                i.committed_entries_beyond_db.to_string(),
            ),
        ]
    }
}

impl Render for InspectionView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.fields()
            .into_iter()
            .map(|(field, value)| vec![field.to_string(), value])
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.fields()
            .into_iter()
            .map(|(field, value)| format!("{field}: {value}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_name_the_member_and_the_lock() {
        let mut inspection = DataDirInspection {
            data_dir: "/var/lib/etcd".into(),
            locked: true,
            ..DataDirInspection::default()
        };
        inspection.wal.member_id = "a1".into();
        inspection.wal.last_index = 42;
        inspection.wal.last_term = 3;
        inspection.db.members.push(etcdops::data_dir::DbMember {
            id: "a1".into(),
            name: "m1".into(),
            peer_urls: vec![],
            client_urls: vec![],
            is_learner: true,
        });
        inspection.committed_entries_beyond_db = 7;
        let view = InspectionView(inspection);
        let lines = view.simple_lines();
        assert!(
            lines.contains(&"member ID: a1 (m1, learner)".to_string()),
            "{lines:?}"
        );
        assert!(lines.contains(&"WAL last entry: index 42, term 3".to_string()));
        assert!(lines.contains(&"committed entries beyond db: 7".to_string()));
        assert!(lines.iter().any(|l| l.starts_with("locked: yes")));
        // JSON is the library's struct itself.
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["wal"]["last_index"], 42);
        assert_eq!(json["locked"], true);
    }
}
