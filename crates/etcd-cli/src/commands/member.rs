//! `etcdops member ...`

use anyhow::Result;
use etcd_core::{ClusterConfig, MemberList, member_list};

use super::ExitStatus;
use crate::flags::{MemberCommand, OutputFormat};
use crate::output::{Render, print};

/// Runs a member command.
pub async fn run(
    config: &ClusterConfig,
    command: &MemberCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        MemberCommand::List => {
            let list = MemberListView(member_list(config).await?);
            print(format, &list)?;
            Ok(ExitStatus::Success)
        }
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
                    m.name.clone(),
                    m.peer_urls.join(","),
                    m.client_urls.join(","),
                    m.is_learner.to_string(),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().map(|r| r.join(", ")).collect()
    }
}
