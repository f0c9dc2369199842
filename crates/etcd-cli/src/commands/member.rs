//! `etcdops member ...`

use anyhow::Result;
use etcd_core::{
    Client, ClusterConfig, Consistency, MemberAddResult, MemberChangeResult, MemberList,
    MemberListOptions, is_3_6_or_later,
};
use etcdops::guard::{Force, Guards};
use etcdops::member::{self, AddRequest, Guarded, RemoveRequest, UpdateRequest};

use serde_json::{Map, Value};

use super::ExitStatus;
use crate::etcdctl::{header, id, put};
use crate::flags::{ConsistencyFlag, MemberCommand, OutputFormat};
use crate::output::{Render, plain, print, warn};

/// Runs a member command; `guards` look at the host (for the OpenShift operator).
pub async fn run(
    config: &ClusterConfig,
    guards: &Guards,
    command: &MemberCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        MemberCommand::List(args) => {
            let options = MemberListOptions {
                consistency: args.consistency.map(|c| match c {
                    ConsistencyFlag::L => Consistency::Linearizable,
                    ConsistencyFlag::S => Consistency::Serializable,
                }),
            };
            let list = Client::new(config.clone())
                .member_list_with(options)
                .await?;
            print(format, &MemberListView(list))?;
        }
        MemberCommand::Add(args) => {
            let request = AddRequest {
                name: args.name.clone(),
                peer_urls: args.peer_urls.clone(),
                learner: args.learner,
                force: Force(args.force),
                dry_run: false,
            };
            let done = warned(member::add(config, guards, &request).await?);
            crate::output::note(&done.message);
            print(format, &AddView(done))?;
        }
        MemberCommand::Remove(args) => {
            let request = select(&args.member, args.force);
            let done = warned(member::remove(config, guards, &request).await?);
            print(format, &ChangeView(done))?;
        }
        MemberCommand::Update(args) => {
            let request = UpdateRequest {
                member: args.member.clone(),
                peer_urls: args.peer_urls.clone(),
                force: Force(args.force),
                dry_run: false,
            };
            let done = warned(member::update(config, guards, &request).await?);
            print(format, &ChangeView(done))?;
        }
        MemberCommand::Promote(args) => {
            let request = select(&args.member, args.force);
            let done = warned(member::promote(config, guards, &request).await?);
            print(format, &ChangeView(done))?;
        }
    }
    Ok(ExitStatus::Success)
}

fn select(member: &str, force: bool) -> RemoveRequest {
    RemoveRequest {
        member: member.to_string(),
        force: Force(force),
        dry_run: false,
    }
}

/// Prints the warnings of the guards forced through; the result.
fn warned<T>(done: Guarded<T>) -> T {
    done.warnings.iter().for_each(|w| warn(w));
    done.result
}

/// Shell-quotes a value for `KEY='value'` lines.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct AddView(MemberAddResult);

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

#[derive(serde::Serialize)]
#[serde(transparent)]
struct ChangeView(MemberChangeResult);

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

#[derive(serde::Serialize)]
#[serde(transparent)]
struct MemberListView(MemberList);

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

    /// etcdctl's `MemberListResponse`; with `--hex`, etcdctl's hand-written variant: IDs as
    /// hex strings, no `isLearner`, and `clientURLS` before etcd 3.6 (etcdctl 3.5's spelling).
    fn etcdctl_json(&self, hex: bool) -> Option<Value> {
        let list = &self.0;
        let newer = list.server_version.as_deref().is_some_and(is_3_6_or_later);
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
