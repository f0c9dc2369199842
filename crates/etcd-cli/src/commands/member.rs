//! `etcdops member ...`

use anyhow::Result;
use etcd_core::{ClusterConfig, MemberAddResult, MemberChangeResult, MemberList, member_list};
use etcdops::guard::{Force, Guards};
use etcdops::member::{self, AddRequest, Guarded, RemoveRequest, UpdateRequest};

use super::ExitStatus;
use crate::flags::{MemberCommand, OutputFormat};
use crate::output::{Render, plain, print, warn};

/// Runs a member command; `guards` look at the host (for the OpenShift operator).
pub async fn run(
    config: &ClusterConfig,
    guards: &Guards,
    command: &MemberCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        MemberCommand::List => {
            let list = MemberListView(member_list(config).await?);
            print(format, &list)?;
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
}
