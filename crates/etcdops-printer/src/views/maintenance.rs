//! How `maintenance` results are printed.

use crate::etcdctl::{header, put};
use crate::output::{Render, cell, human_bytes, plain};
use etcdops::check::CheckResult;
use etcdops::endpoint::{Severity, VersionReport};
use etcdops::maintenance::{
    Alarm, AlarmDisarmResult, AlarmList, CompactResult, DefragReport, MoveLeaderResult,
};
use serde_json::{Map, Value};

/// `check`: the findings, most severe first.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct CheckView(pub CheckResult);

impl Render for CheckView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["CHECK", "RESULT", "DETAIL"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .report
            .findings
            .iter()
            .map(|f| {
                vec![
                    f.check.to_string(),
                    severity_name(f.severity).into(),
                    plain(&f.message),
                ]
            })
            .collect()
    }
    fn simple_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .0
            .report
            .findings
            .iter()
            .map(|f| format!("{}: {}: {}", severity_name(f.severity), f.check, f.message))
            .collect();
        lines.push(format!("verdict: {}", severity_name(self.0.report.verdict)));
        lines
    }
}

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Ok => "ok",
        Severity::Warning => "WARNING",
        Severity::Critical => "CRITICAL",
    }
}

/// `move-leader`: the old and new leader.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct MoveView(pub MoveLeaderResult);

impl Render for MoveView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["CHANGED", "FROM", "TO"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            self.0.changed.to_string(),
            self.0.from.to_string(),
            self.0.to.to_string(),
        ]]
    }
    fn simple_lines(&self) -> Vec<String> {
        vec![if self.0.changed {
            format!(
                "Leadership transferred from {} to {}",
                self.0.from, self.0.to
            )
        } else {
            format!("{} already leads; nothing changed", self.0.to)
        }]
    }
}

fn alarm_rows(alarms: &[Alarm]) -> Vec<Vec<String>> {
    alarms
        .iter()
        .map(|a| vec![a.member_id.to_string(), plain(&a.alarm)])
        .collect()
}

/// Our JSON stays the list of alarms; etcdctl's is the response with its header.
pub struct AlarmsView(pub AlarmList);

impl serde::Serialize for AlarmsView {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.alarms.serialize(serializer)
    }
}

impl Render for AlarmsView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["MEMBER", "ALARM"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        alarm_rows(&self.0.alarms)
    }
    /// etcdctl's `%+v` of each alarm (protobuf's compact text: decimal member ID, a
    /// trailing space).
    fn simple_lines(&self) -> Vec<String> {
        self.0
            .alarms
            .iter()
            .map(|a| format!("memberID:{} alarm:{} ", a.member_id.0, plain(&a.alarm)))
            .collect()
    }
    fn etcdctl_protobuf(&self) -> Option<Vec<u8>> {
        Some(crate::protobuf::alarms(&self.0))
    }
    fn etcdctl_fields(&self) -> Option<Vec<String>> {
        let mut lines = Vec::new();
        crate::fields::header(&mut lines, self.0.header.as_ref());
        for a in &self.0.alarms {
            lines.push(crate::fields::line("MemberID", a.member_id.0));
            lines.push(crate::fields::line("AlarmType", plain(&a.alarm)));
            lines.push(String::new());
        }
        Some(lines)
    }
    fn etcdctl_json(&self, hex: bool) -> Option<Value> {
        let mut out = Map::new();
        if let Some(h) = &self.0.header {
            out.insert("header".into(), header(h, hex));
        }
        let alarms: Vec<Value> = self
            .0
            .alarms
            .iter()
            .map(|a| {
                let mut alarm = Map::new();
                put(&mut alarm, "memberID", a.member_id.0);
                put(&mut alarm, "alarm", a.code());
                Value::Object(alarm)
            })
            .collect();
        put(&mut out, "alarms", alarms);
        Some(Value::Object(out))
    }
}

/// `alarm disarm`: the alarms cleared.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct DisarmView(pub AlarmDisarmResult);

impl Render for DisarmView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["MEMBER", "ALARM", "STATE"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = self
            .0
            .disarmed
            .iter()
            .map(|a| vec![a.member_id.to_string(), plain(&a.alarm), "disarmed".into()])
            .collect();
        rows.extend(self.0.still_active.iter().map(|a| {
            vec![
                a.member_id.to_string(),
                plain(&a.alarm),
                "still active".into(),
            ]
        }));
        rows
    }
    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().map(|r| r.join(" ")).collect()
    }
}

/// `defrag`: each member defragmented, skipped or failed, as etcdctl reports them.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct DefragView(pub DefragReport);

impl Render for DefragView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "ORDER",
            "ENDPOINT",
            "MEMBER",
            "LEADER",
            "DB BEFORE",
            "DB AFTER",
            "TOOK",
            "ERROR",
        ]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = self
            .0
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                vec![
                    (i + 1).to_string(),
                    s.endpoint.clone(),
                    cell(&s.member_id),
                    s.was_leader.to_string(),
                    s.db_size_before.map(human_bytes).unwrap_or_default(),
                    s.db_size_after.map(human_bytes).unwrap_or_default(),
                    format!("{:.1}s", s.took_seconds),
                    plain(&cell(&s.error)),
                ]
            })
            .collect();
        for skipped in &self.0.skipped {
            rows.push(vec![
                "-".into(),
                skipped.clone(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                "skipped: an earlier member failed (defragmenting one while another is down or failing can cost the quorum)".into(),
            ]);
        }
        rows
    }
    /// etcdctl's stdout: one line per member defragmented.
    fn simple_lines(&self) -> Vec<String> {
        self.0
            .steps
            .iter()
            .filter(|s| s.error.is_none())
            .map(|s| format!("Finished defragmenting etcd member[{}]", s.given))
            .collect()
    }
}

impl DefragView {
    /// The simple output's stderr: etcdctl's line for the member that failed, then ours for
    /// each member skipped after it.
    pub fn failure_lines(&self) -> Vec<String> {
        let report = &self.0;
        let failed = report.steps.iter().find(|s| s.error.is_some());
        let mut lines: Vec<String> = failed
            .iter()
            .map(|s| {
                format!(
                    "Failed to defragment etcd member[{}] ({})",
                    s.given,
                    plain(s.error.as_deref().unwrap_or_default())
                )
            })
            .collect();
        if let Some(failed) = failed {
            for skipped in &report.skipped_given {
                lines.push(format!(
                    "etcdops: skipped etcd member[{skipped}]: not defragmented because member[{}] failed first (defragmenting a member while another is down or failing can cost the quorum; etcdctl would go on)",
                    failed.given
                ));
            }
        }
        lines
    }
}

/// `compaction`: the revision compacted.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct CompactView(pub CompactResult);

impl Render for CompactView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["CHANGED", "COMPACTED TO", "CURRENT REVISION", "PHYSICAL"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            self.0.changed.to_string(),
            self.0.revision.to_string(),
            self.0.current_revision.to_string(),
            self.0.physical.to_string(),
        ]]
    }
    fn simple_lines(&self) -> Vec<String> {
        vec![format!("compacted revision {}", self.0.revision)]
    }
}

/// `version`: etcdops' own version and, with a cluster, each member's.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct VersionView(pub VersionReport);

impl Render for VersionView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["MEMBER", "NAME", "VERSION"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![vec![
            "etcdops".into(),
            String::new(),
            self.0.client_version.clone(),
        ]];
        rows.extend(self.0.members.iter().map(|m| {
            vec![
                m.member_id.to_string(),
                plain(&m.name),
                m.version.clone().unwrap_or_else(|| "(no answer)".into()),
            ]
        }));
        rows
    }
    /// etcdctl's two lines, with etcdops' version.
    fn simple_lines(&self) -> Vec<String> {
        vec![
            format!("etcdops version: {}", self.0.client_version),
            format!("API version: {}", self.0.api_version),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcdops::client::ResponseHeader;
    use etcdops::endpoint::own_version;
    use etcdops::member::MemberId;

    fn step(given: &str, error: Option<&str>) -> etcdops::maintenance::DefragStep {
        etcdops::maintenance::DefragStep {
            endpoint: format!("http://{given}"),
            given: given.into(),
            member_id: None,
            was_leader: false,
            db_size_before: None,
            db_size_after: None,
            took_seconds: 0.1,
            error: error.map(str::to_string),
        }
    }

    #[test]
    fn defrag_simple_is_etcdctls_with_the_endpoint_as_given_and_failures_on_stderr() {
        let view = DefragView(DefragReport {
            steps: vec![step("127.0.0.1:1", None), step("127.0.0.1:2", Some("down"))],
            skipped: vec!["http://127.0.0.1:3".into()],
            skipped_given: vec!["127.0.0.1:3".into()],
            completed: false,
        });
        assert_eq!(
            view.simple_lines(),
            ["Finished defragmenting etcd member[127.0.0.1:1]"]
        );
        let stderr = view.failure_lines();
        assert_eq!(
            stderr[0],
            "Failed to defragment etcd member[127.0.0.1:2] (down)"
        );
        assert!(
            stderr[1].starts_with("etcdops: skipped etcd member[127.0.0.1:3]: not defragmented because member[127.0.0.1:2] failed first"),
            "{}",
            stderr[1]
        );
        assert_eq!(stderr.len(), 2);
    }

    fn alarms(alarms: Vec<Alarm>) -> AlarmsView {
        AlarmsView(AlarmList {
            header: Some(ResponseHeader {
                cluster_id: 17497139193859109479,
                member_id: 14423874141243768641,
                revision: 54,
                raft_term: 2,
            }),
            alarms,
        })
    }

    #[test]
    fn alarm_list_prints_as_etcdctl() {
        // outputs/alarm-list.json of the etcd 3.6.14 fixture: no alarm, only the header.
        let none = alarms(Vec::new());
        let fixture: Value = serde_json::from_str(r#"{"header":{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"revision":54,"raft_term":2}}"#).unwrap();
        assert_eq!(none.etcdctl_json(false), Some(fixture));
        assert!(none.simple_lines().is_empty());
        // etcdctl 3.5.1 with a NOSPACE alarm: `%+v` of the alarm; the type as a number.
        let nospace = alarms(vec![Alarm {
            member_id: MemberId(7383792418829112008),
            alarm: "NOSPACE".into(),
        }]);
        assert_eq!(
            nospace.simple_lines(),
            ["memberID:7383792418829112008 alarm:NOSPACE "]
        );
        assert_eq!(
            nospace.etcdctl_json(false).unwrap()["alarms"],
            serde_json::json!([{"memberID":7383792418829112008_u64,"alarm":1}])
        );
        assert_eq!(
            serde_json::to_value(&nospace).unwrap()[0]["alarm"],
            "NOSPACE"
        );
    }

    #[test]
    fn version_prints_etcdctls_two_lines_without_a_cluster() {
        let view = VersionView(own_version());
        assert_eq!(
            view.simple_lines(),
            [
                format!("etcdops version: {}", env!("CARGO_PKG_VERSION")),
                "API version: 3.6".to_string()
            ]
        );
    }
}
