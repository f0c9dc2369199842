//! How `downgrade` results are printed.

use crate::output::{Render, plain};
use etcdops::downgrade::Downgraded;
use serde::Serialize;
use serde_json::{Map, Value};

/// `downgrade validate|enable|cancel`: etcd's answer, as etcdctl 3.6 prints it.
#[derive(Serialize)]
#[serde(transparent)]
pub struct DowngradeView(pub Downgraded);

impl Render for DowngradeView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "ACTION",
            "TARGET VERSION",
            "CLUSTER VERSION",
            "VERIFIED BACKUP",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let result = &self.0.result;
        vec![vec![
            result.action.word().to_string(),
            plain(result.target_version.as_deref().unwrap_or("")),
            plain(&result.cluster_version),
            self.0
                .backup
                .as_ref()
                .map(|b| plain(&format!("{}/{}", b.store.trim_end_matches('/'), b.object)))
                .unwrap_or_default(),
        ]]
    }

    /// etcdctl 3.6's lines: `Downgrade validate success, cluster version 3.6`.
    fn simple_lines(&self) -> Vec<String> {
        let result = &self.0.result;
        let action = result.action.word();
        vec![format!(
            "Downgrade {action} success, cluster version {}",
            plain(&result.cluster_version)
        )]
    }

    /// etcdctl's JSON of the DowngradeResponse: `header` and `version`.
    fn etcdctl_json(&self, hex: bool) -> Option<Value> {
        let result = &self.0.result;
        let mut map = Map::new();
        if let Some(header) = &result.header {
            map.insert("header".into(), crate::etcdctl::header(header, hex));
        }
        crate::etcdctl::put(&mut map, "version", result.cluster_version.clone());
        Some(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use etcdops::client::ResponseHeader;
    use etcdops::downgrade::{DowngradeAction, DowngradeResult};

    use super::*;

    fn view(action: DowngradeAction, version: &str) -> DowngradeView {
        DowngradeView(Downgraded {
            result: DowngradeResult {
                action,
                target_version: Some("3.5".into()),
                cluster_version: version.into(),
                endpoint: "http://127.0.0.1:45001".into(),
                header: Some(ResponseHeader {
                    cluster_id: 0x1a2b,
                    member_id: 0x3c,
                    revision: 54,
                    raft_term: 2,
                }),
            },
            backup: None,
            backup_taken: None,
            warnings: Vec::new(),
        })
    }

    #[test]
    fn simple_is_etcdctl_36s_line_as_in_the_fixture() {
        // etcdctl 3.6.14's output (tests/fixtures/etcd-3.6.14/outputs/downgrade-validate.txt).
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/etcd-3.6.14/outputs/downgrade-validate.txt");
        let text = std::fs::read_to_string(&path).unwrap();
        let fixture = text.lines().next().unwrap().to_string();
        assert_eq!(
            view(DowngradeAction::Validate, "3.6").simple_lines(),
            vec![fixture]
        );
        // etcdctl 3.7.1's, validating 3.6 on a 3.7 cluster (outputs/downgrade-validate.txt).
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/etcd-3.7.1/outputs/downgrade-validate.txt");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            view(DowngradeAction::Validate, "3.7").simple_lines(),
            vec![text.lines().next().unwrap().to_string()]
        );
        assert_eq!(
            view(DowngradeAction::Enable, "3.5").simple_lines(),
            vec!["Downgrade enable success, cluster version 3.5"]
        );
        assert_eq!(
            view(DowngradeAction::Cancel, "3.6").simple_lines(),
            vec!["Downgrade cancel success, cluster version 3.6"]
        );
    }

    #[test]
    fn etcdctl_json_is_the_response_with_its_header() {
        let json = view(DowngradeAction::Validate, "3.6")
            .etcdctl_json(false)
            .unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "header": {"cluster_id": 0x1a2b, "member_id": 0x3c, "revision": 54, "raft_term": 2},
                "version": "3.6"
            })
        );
        let hex = view(DowngradeAction::Validate, "3.6")
            .etcdctl_json(true)
            .unwrap();
        assert_eq!(hex["header"]["cluster_id"], "1a2b");
    }
}
