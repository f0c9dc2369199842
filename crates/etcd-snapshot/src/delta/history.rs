//! The checks that keep one chain to one cluster's one history: every answer `backup run`
//! uses must come from a member of the locked cluster, and the cluster's revision may never
//! be below what the chain already received (the cluster was restored to an earlier revision
//! and kept its ID: what follows is another history, which the chain must not continue).

use std::future::Future;
use std::time::Duration;

use etcd_core::MemberId;

use super::chain::backoff_after;
use super::events::{FailureReason, RunEvent};
use super::runner::{Runner, Stop, pause, store_header};
use crate::error::{Result, SnapshotError};
use etcd_common::InvalidOption;

/// Why the chain cannot go on when the cluster is at `cluster_revision` and the chain has
/// received every change up to `received`: `None` while the cluster is at or past it.
pub(super) fn rewound(cluster_revision: i64, received: i64) -> Option<String> {
    (cluster_revision < received).then(|| {
        format!(
            "history rewound: cluster at revision {cluster_revision}, chain had {received} (the cluster was restored to an earlier revision and kept its ID); the chain ends and a new full backup starts a new one"
        )
    })
}

/// Whether an answer of `endpoint` with `cluster` in its header may be used by a run of
/// `expected`: a header without a cluster ID (0) is taken as the member's own.
pub(super) fn foreign_cluster(
    endpoint: &str,
    cluster: MemberId,
    expected: MemberId,
) -> Option<String> {
    (cluster.0 != 0 && cluster != expected).then(|| {
        format!(
            "{endpoint} answers for cluster {cluster}, not {expected}: it is not a member of the cluster being backed up, and nothing it sends is published"
        )
    })
}

/// The members' clusters at startup: refused (one line) when the endpoints given belong to
/// more than one cluster.
pub(super) fn one_cluster(answers: &[(String, MemberId)]) -> Result<Option<MemberId>, String> {
    let mut clusters: Vec<MemberId> = answers.iter().map(|(_, c)| *c).collect();
    clusters.sort_by_key(|c| c.0);
    clusters.dedup();
    if clusters.len() > 1 {
        let each: Vec<String> = answers
            .iter()
            .map(|(endpoint, cluster)| format!("{endpoint} is in cluster {cluster}"))
            .collect();
        return Err(format!(
            "the endpoints belong to {} different clusters ({}); give the members of one cluster",
            clusters.len(),
            each.join(", ")
        ));
    }
    Ok(clusters.first().copied())
}

/// An error and its causes on one line, each cause's text once (a gRPC status by its
/// message, never its debug form).
pub(super) fn one_line(error: &etcd_client::Error) -> String {
    let mut parts = vec![match error {
        etcd_client::Error::GRpcStatus(status) => {
            format!("{:?}: {}", status.code(), status.message())
        }
        other => other.to_string(),
    }];
    let mut source = std::error::Error::source(error);
    if let etcd_client::Error::GRpcStatus(status) = error {
        source = std::error::Error::source(status);
    }
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ").replace('\n', " ")
}

/// The cluster's ID and revision, asked of every member given, retried until one answers
/// (`None`: stopped); refused when the members belong to different clusters.
pub(super) async fn cluster_id<F: Future<Output = ()>>(
    runner: &mut Runner<'_>,
    stop: &mut Stop<'_, F>,
) -> Result<Option<(MemberId, i64)>> {
    let mut delay = Duration::from_secs(1);
    loop {
        let endpoints = runner.config.resolve_endpoints().await.unwrap_or_default();
        let mut answers = Vec::new();
        let mut revision = 0;
        let mut errors = Vec::new();
        for client in runner.config.connect_each(&endpoints).await {
            let header = match client {
                Ok(client) => store_header(&client)
                    .await
                    .map(|h| (client.endpoint().to_string(), h)),
                Err(e) => Err(e),
            };
            match header {
                Ok((endpoint, header)) => {
                    answers.push((endpoint, header.cluster));
                    revision = revision.max(header.revision);
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        match one_cluster(&answers) {
            Err(reason) => {
                return Err(SnapshotError::from(InvalidOption::new(
                    etcd_common::options::ENDPOINTS,
                    reason,
                )));
            }
            Ok(Some(cluster)) => return Ok(Some((cluster, revision))),
            Ok(None) => runner.emit(RunEvent::Failed {
                reason: FailureReason::Watch,
                error: format!("no member answers: {}", errors.join("; ")),
            }),
        }
        if pause(stop, delay).await {
            return Ok(None);
        }
        delay = backoff_after(delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_below_the_chain_is_a_rewound_history() {
        assert!(rewound(52, 52).is_none());
        assert!(rewound(60, 52).is_none());
        let reason = rewound(11, 28).unwrap();
        assert!(
            reason.starts_with("history rewound: cluster at revision 11, chain had 28"),
            "{reason}"
        );
    }

    #[test]
    fn another_clusters_answer_is_refused_and_mixed_endpoints_too() {
        let a = MemberId(0xa);
        let b = MemberId(0xb);
        assert!(foreign_cluster("e1", a, a).is_none());
        assert!(foreign_cluster("e1", MemberId(0), a).is_none());
        let why = foreign_cluster("http://e2", b, a).unwrap();
        assert!(
            why.contains("http://e2 answers for cluster b, not a"),
            "{why}"
        );
        assert_eq!(
            one_cluster(&[("e1".into(), a), ("e2".into(), a)]),
            Ok(Some(a))
        );
        assert_eq!(one_cluster(&[]), Ok(None));
        let mixed = one_cluster(&[("e1".into(), a), ("e2".into(), b)]).unwrap_err();
        assert!(
            mixed.contains("2 different clusters (e1 is in cluster a, e2 is in cluster b)"),
            "{mixed}"
        );
        assert!(!mixed.contains('\n'));
    }

    #[test]
    fn a_grpc_status_is_one_line_without_debug_dumps() {
        let status = tonic::Status::unavailable("error reading a body from connection");
        let line = one_line(&etcd_client::Error::GRpcStatus(status));
        assert_eq!(line, "Unavailable: error reading a body from connection");
    }
}
