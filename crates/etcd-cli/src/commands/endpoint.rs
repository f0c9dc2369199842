//! `etcdops endpoint ...`

use anyhow::Result;
use etcd_core::{
    ClusterConfig, HashKvReport, HealthReport, StatusReport, Targets, endpoint_hashkv,
    endpoint_health, endpoint_status,
};

use super::ExitStatus;
use crate::flags::{EndpointCommand, OutputFormat};
use crate::output::{Render, cell, human_bytes, plain, print};

/// Runs an endpoint command.
pub async fn run(
    config: &ClusterConfig,
    command: &EndpointCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        EndpointCommand::Health(flag) => {
            let report = HealthView(endpoint_health(config, Targets::of(flag.cluster)).await?);
            print(format, &report)?;
            Ok(ExitStatus::from_ok(report.0.all_healthy))
        }
        EndpointCommand::Status(flag) => {
            let report = StatusView(endpoint_status(config, Targets::of(flag.cluster)).await?);
            print(format, &report)?;
            Ok(ExitStatus::from_ok(report.0.all_answered))
        }
        EndpointCommand::Hashkv(args) => {
            let report =
                HashKvView(endpoint_hashkv(config, Targets::of(args.cluster), args.rev).await?);
            print(format, &report)?;
            Ok(ExitStatus::from_ok(report.0.all_agree))
        }
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct HealthView(HealthReport);

impl Render for HealthView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["ENDPOINT", "HEALTH", "TOOK", "ERROR"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .endpoints
            .iter()
            .map(|e| {
                vec![
                    e.endpoint.clone(),
                    e.health.to_string(),
                    format!("{:.1}ms", e.took_ms),
                    plain(&cell(&e.error)),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.0
            .endpoints
            .iter()
            .map(|e| match &e.error {
                None => format!(
                    "{} is healthy: successfully committed proposal: took = {:.1}ms",
                    e.endpoint, e.took_ms
                ),
                Some(err) => format!("{} is unhealthy: {}", e.endpoint, plain(err)),
            })
            .collect()
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct StatusView(StatusReport);

impl Render for StatusView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "ENDPOINT",
            "ID",
            "VERSION",
            "DB SIZE",
            "DB SIZE IN USE",
            "IS LEADER",
            "IS LEARNER",
            "RAFT TERM",
            "RAFT INDEX",
            "RAFT APPLIED INDEX",
            "ERRORS",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .endpoints
            .iter()
            .map(|e| {
                let mut errors = e.errors.clone();
                errors.extend(e.error.clone());
                vec![
                    e.endpoint.clone(),
                    cell(&e.member_id),
                    cell(&e.version),
                    e.db_size.map(human_bytes).unwrap_or_default(),
                    e.db_size_in_use.map(human_bytes).unwrap_or_default(),
                    cell(&e.is_leader),
                    cell(&e.is_learner),
                    cell(&e.raft_term),
                    cell(&e.raft_index),
                    cell(&e.raft_applied_index),
                    plain(&errors.join("; ")),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().map(|r| r.join(", ")).collect()
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct HashKvView(HashKvReport);

impl Render for HashKvView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "ENDPOINT",
            "ID",
            "HASH",
            "HASH REVISION",
            "COMPACT REVISION",
            "ERROR",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .endpoints
            .iter()
            .map(|e| {
                vec![
                    e.endpoint.clone(),
                    cell(&e.member_id),
                    cell(&e.hash),
                    cell(&e.hash_revision),
                    cell(&e.compact_revision),
                    plain(&cell(&e.error)),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .0
            .endpoints
            .iter()
            .map(|e| match (&e.hash, &e.error) {
                (Some(hash), _) => format!("{}, {hash}", e.endpoint),
                (None, err) => format!("{}, error: {}", e.endpoint, plain(&cell(err))),
            })
            .collect();
        lines.push(format!(
            "revision {}: {}",
            self.0.revision,
            if self.0.all_agree {
                "all hashes agree"
            } else {
                "hashes DO NOT agree"
            }
        ));
        lines
    }
}
