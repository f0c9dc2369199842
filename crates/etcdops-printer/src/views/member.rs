//! How `member` results are printed.

use crate::etcdctl::{header, id, put};
use crate::etcdctl_table::{Borders, EtcdctlTable};
use crate::output::{Render, plain};
use etcdops::endpoint::{is_3_6_or_later, is_release_3_4};
use etcdops::member::{MemberAddResult, MemberChangeResult, MemberList};
use serde_json::{Map, Value};

/// `member add`: the new member and the settings it must start with (`ETCD_*` lines).
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct AddView(pub MemberAddResult);

impl Render for AddView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![
            vec!["changed".into(), self.0.changed.to_string()],
            vec!["member id".into(), self.0.member.id.to_string()],
            vec!["learner".into(), self.0.member.is_learner.to_string()],
        ];
        for (key, value) in &self.0.env {
            rows.push(vec![key.clone(), value.clone()]);
        }
        rows
    }

    /// Shell variables, ready for `eval` or an environment file.
    fn simple_lines(&self) -> Vec<String> {
        self.0
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_quote(v)))
            .collect()
    }
}

/// `member remove|update|promote`: the change and the member list after it.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct ChangeView(pub MemberChangeResult);

/// A promotion after its wait: the change, and how long it waited.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct PromotedView(pub etcdops::wait::WaitedPromotion);

impl Render for PromotedView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["CHANGED", "MEMBER", "WAITED", "MESSAGE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let change = &self.0.result;
        vec![vec![
            change.changed.to_string(),
            change
                .member
                .as_ref()
                .map(|m| m.id.to_string())
                .unwrap_or_default(),
            format!("{}s", self.0.waited.seconds),
            plain(&change.message),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![format!(
            "{} (after waiting {}s)",
            plain(&self.0.result.message),
            self.0.waited.seconds
        )]
    }
}

impl Render for ChangeView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["CHANGED", "MEMBER", "MESSAGE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            self.0.changed.to_string(),
            self.0
                .member
                .as_ref()
                .map(|m| m.id.to_string())
                .unwrap_or_default(),
            plain(&self.0.message),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![plain(&self.0.message)]
    }
}

/// `member list`: the members, as etcdctl of the answering release lists them.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct MemberListView(pub MemberList);

impl Render for MemberListView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "ID",
            "STATUS",
            "NAME",
            "PEER ADDRS",
            "CLIENT ADDRS",
            "IS LEARNER",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .members
            .iter()
            .map(|m| {
                vec![
                    m.id.to_string(),
                    if m.started { "started" } else { "unstarted" }.into(),
                    plain(&m.name),
                    plain(&m.peer_urls.join(",")),
                    plain(&m.client_urls.join(",")),
                    m.is_learner.to_string(),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().map(|r| r.join(", ")).collect()
    }

    fn etcdctl_protobuf(&self) -> Option<Vec<u8>> {
        Some(crate::protobuf::member_list(&self.0))
    }

    fn etcdctl_table(&self) -> Option<EtcdctlTable> {
        // etcdctl's own table has the columns of ours.
        Some(EtcdctlTable {
            headers: self.headers(),
            rows: self.rows(),
            borders: Borders::of_release(self.0.server_version.as_deref()),
        })
    }

    /// etcdctl's fields: the header, then per member its ID, name, each peer and client URL,
    /// whether it is a learner, and an empty line.
    fn etcdctl_fields(&self) -> Option<Vec<String>> {
        let mut lines = Vec::new();
        crate::fields::header(&mut lines, self.0.header.as_ref());
        for m in &self.0.members {
            lines.push(crate::fields::line("ID", m.id.0));
            lines.push(crate::fields::quoted("Name", m.name.as_bytes()));
            for url in &m.peer_urls {
                lines.push(crate::fields::quoted("PeerURL", url.as_bytes()));
            }
            for url in &m.client_urls {
                lines.push(crate::fields::quoted("ClientURL", url.as_bytes()));
            }
            lines.push(crate::fields::line("IsLearner", m.is_learner));
            lines.push(String::new());
        }
        Some(lines)
    }

    /// etcdctl's `MemberListResponse`; with `--hex`, etcdctl's hand-written variant: IDs as
    /// hex strings, no `isLearner`, and `clientURLS` before etcd 3.6 (etcdctl 3.5's spelling).
    fn etcdctl_json(&self, hex: bool) -> Option<Value> {
        let list = &self.0;
        let version = list.server_version.as_deref();
        let newer = version.is_some_and(is_3_6_or_later);
        // etcdctl 3.4 has --hex but prints member list's JSON without it.
        let hex = hex && !version.is_some_and(is_release_3_4);
        let mut out = Map::new();
        if let Some(h) = &list.header {
            let mut h = header(h, hex);
            if hex {
                // etcdctl's hex writer always writes both IDs.
                h["cluster_id"] = id(list.cluster_id.0, true);
                h["member_id"] = id(list.answered_by.0, true);
            }
            out.insert("header".into(), h);
        }
        let members: Vec<Value> = list
            .members
            .iter()
            .map(|m| {
                let mut member = Map::new();
                if hex {
                    member.insert("ID".into(), id(m.id.0, true));
                    member.insert("name".into(), m.name.clone().into());
                    // Go marshals an empty list as null.
                    let list = |urls: &Vec<String>| match urls.is_empty() {
                        true => Value::Null,
                        false => urls.clone().into(),
                    };
                    member.insert("peerURLs".into(), list(&m.peer_urls));
                    let urls = if newer { "clientURLs" } else { "clientURLS" };
                    member.insert(urls.into(), list(&m.client_urls));
                } else {
                    put(&mut member, "ID", m.id.0);
                    put(&mut member, "name", m.name.clone());
                    put(&mut member, "peerURLs", m.peer_urls.clone());
                    put(&mut member, "clientURLs", m.client_urls.clone());
                    put(&mut member, "isLearner", m.is_learner);
                }
                Value::Object(member)
            })
            .collect();
        put(&mut out, "members", members);
        Some(Value::Object(out))
    }
}

/// Shell-quotes a value for `KEY='value'` lines.
pub fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcdops::client::ResponseHeader;
    use etcdops::member::{Member, MemberId};

    /// A started voting member of a fixture cluster: its client URL on `port`, its peer URL 10
    /// ports up.
    fn member(id: u64, name: &str, port: u16) -> Member {
        Member {
            id: MemberId(id),
            name: name.into(),
            peer_urls: vec![format!("http://127.0.0.1:{}", port + 10)],
            client_urls: vec![format!("http://127.0.0.1:{port}")],
            is_learner: false,
            started: true,
        }
    }

    /// A member list as `answered_by` of cluster `cluster` answers it (its header's revision
    /// is 0, raft term 2, as in the fixtures).
    fn list(cluster: u64, answered_by: u64, members: Vec<Member>, version: &str) -> MemberListView {
        MemberListView(MemberList {
            cluster_id: MemberId(cluster),
            answered_by: MemberId(answered_by),
            members,
            header: Some(ResponseHeader {
                cluster_id: cluster,
                member_id: answered_by,
                revision: 0,
                raft_term: 2,
            }),
            server_version: Some(version.into()),
            linearizable: true,
        })
    }

    /// The etcd 3.6.14 fixture's members (`outputs/member-list.*`), in ID order.
    fn fixture(server_version: &str) -> MemberListView {
        let members = vec![
            member(464334586864442829, "b", 45002),
            member(14423874141243768641, "a", 45001),
            member(14768632924904296907, "c", 45003),
        ];
        list(
            17497139193859109479,
            14423874141243768641,
            members,
            server_version,
        )
    }

    #[test]
    fn member_list_prints_as_etcdctl_3_6() {
        let view = fixture("3.6.14");
        // outputs/member-list.simple
        assert_eq!(
            view.simple_lines().join("\n"),
            "671a5d8bafb9dcd, started, b, http://127.0.0.1:45012, http://127.0.0.1:45002, false\n\
             c82be51c49c6ff41, started, a, http://127.0.0.1:45011, http://127.0.0.1:45001, false\n\
             ccf4b965cb0f11cb, started, c, http://127.0.0.1:45013, http://127.0.0.1:45003, false"
        );
        // outputs/member-list.json
        // Byte for byte: etcdctl's key order too.
        let fixture = r#"{"header":{"cluster_id":17497139193859109479,"member_id":14423874141243768641,"raft_term":2},"members":[{"ID":464334586864442829,"name":"b","peerURLs":["http://127.0.0.1:45012"],"clientURLs":["http://127.0.0.1:45002"]},{"ID":14423874141243768641,"name":"a","peerURLs":["http://127.0.0.1:45011"],"clientURLs":["http://127.0.0.1:45001"]},{"ID":14768632924904296907,"name":"c","peerURLs":["http://127.0.0.1:45013"],"clientURLs":["http://127.0.0.1:45003"]}]}"#;
        let ours = serde_json::to_string(&view.etcdctl_json(false).unwrap()).unwrap();
        assert_eq!(ours, fixture);
    }

    #[test]
    fn member_list_prints_as_etcdctl_3_7() {
        let members = vec![
            member(959035401820190083, "a", 22501),
            member(7079722769197113824, "c", 22503),
            member(11485072041253936854, "b", 22502),
        ];
        let view = list(13880743270753340716, 959035401820190083, members, "3.7.1");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/etcd-3.7.1/outputs");
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        let simple: String = view
            .simple_lines()
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(simple, read("member-list.simple"));
        let json = serde_json::to_string(&view.etcdctl_json(false).unwrap()).unwrap();
        assert_eq!(format!("{json}\n"), read("member-list.json"));
        assert_eq!(view.etcdctl_table().unwrap().borders, Borders::Unicode);
    }

    #[test]
    fn member_list_fields_are_etcdctls() {
        let fields = fixture("3.6.14").etcdctl_fields().unwrap();
        assert_eq!(
            fields[..11].join("\n"),
            "\"ClusterID\" : 17497139193859109479\n\"MemberID\" : 14423874141243768641\n\
             \"Revision\" : 0\n\"RaftTerm\" : 2\n\"ID\" : 464334586864442829\n\"Name\" : \"b\"\n\
             \"PeerURL\" : \"http://127.0.0.1:45012\"\n\"ClientURL\" : \"http://127.0.0.1:45002\"\n\
             \"IsLearner\" : false\n\n\"ID\" : 14423874141243768641"
        );
        // What OpenShift 3.x's discovery reads: `awk '/ClientURL/ {print $3}'`.
        let client_urls: Vec<&str> = fields
            .iter()
            .filter(|l| l.contains("ClientURL"))
            .filter_map(|l| l.split_whitespace().nth(2))
            .collect();
        assert_eq!(client_urls.len(), 3);
        assert_eq!(client_urls[1], "\"http://127.0.0.1:45001\"");
    }

    #[test]
    fn hex_member_list_spells_client_urls_as_each_release_of_etcdctl() {
        let newer = fixture("3.6.14").etcdctl_json(true).unwrap();
        assert_eq!(
            newer["header"],
            serde_json::json!({"cluster_id":"f2d253649b897267","member_id":"c82be51c49c6ff41","raft_term":2})
        );
        assert_eq!(newer["members"][0]["ID"], "671a5d8bafb9dcd");
        assert_eq!(
            newer["members"][0]["clientURLs"][0],
            "http://127.0.0.1:45002"
        );
        assert!(newer["members"][0].get("isLearner").is_none());
        let older = fixture("3.5.1").etcdctl_json(true).unwrap();
        assert_eq!(
            older["members"][0]["clientURLS"][0],
            "http://127.0.0.1:45002"
        );
        assert!(older["members"][0].get("clientURLs").is_none());
    }
}
