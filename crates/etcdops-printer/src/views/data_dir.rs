//! How `data_dir` results are printed.

use crate::output::{Render, human_bytes};
use etcdops::data_dir::{DataDirInspection, SnapPosition, TailAdoption};

/// What `commit-tail` did; JSON: the library's result.
#[derive(serde::Serialize)]
pub struct TailView {
    /// What the library adopted (or would).
    #[serde(flatten)]
    pub adoption: TailAdoption,
    /// The data dir, as given.
    #[serde(skip)]
    pub dir: String,
    /// Whether nothing was written (`--dry-run`).
    #[serde(skip)]
    pub dry_run: bool,
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

/// The inspection, printed as field/value pairs.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct InspectionView(pub DataDirInspection);

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
