//! etcd's cluster downgrade (the Downgrade RPC, etcdctl 3.6's `downgrade validate|enable|cancel`):
//! whether the cluster can go down to a version, starting that downgrade, and cancelling it.
//!
//! The RPC came with etcd 3.5's server; etcd 3.4 does not know it (gRPC `Unimplemented`),
//! which [`Client::downgrade`] says in words, naming the server's version.

use std::time::{Duration, Instant};

use etcd_client::{DowngradeOptions, DowngradeResponse};
use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::guard::{Change, ChangeGuard};

use crate::header::ResponseHeader;
use etcd_common::options::VERSION;

/// What a downgrade request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DowngradeAction {
    /// Checks that the cluster could be downgraded to the target version; changes nothing.
    Validate,
    /// Starts the downgrade: the cluster version becomes the target version, and members may
    /// then be replaced one by one with binaries of that version.
    Enable,
    /// Cancels a downgrade in progress.
    Cancel,
}

impl DowngradeAction {
    /// The action as etcdctl names it (`validate`, `enable`, `cancel`).
    pub fn word(self) -> &'static str {
        match self {
            DowngradeAction::Validate => "validate",
            DowngradeAction::Enable => "enable",
            DowngradeAction::Cancel => "cancel",
        }
    }

    fn operation(self) -> &'static str {
        match self {
            DowngradeAction::Validate => "downgrade validate",
            DowngradeAction::Enable => "downgrade enable",
            DowngradeAction::Cancel => "downgrade cancel",
        }
    }
}

/// A downgrade request: the action and, for validate and enable, the target version
/// (`3.5`, as etcdctl takes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DowngradeRequest {
    /// What to do.
    pub action: DowngradeAction,
    /// The version to go down to; required for validate and enable, ignored by cancel.
    #[serde(default)]
    pub version: Option<String>,
}

impl DowngradeRequest {
    /// Validates a downgrade to `version`.
    pub fn validate(version: impl Into<String>) -> DowngradeRequest {
        DowngradeRequest {
            action: DowngradeAction::Validate,
            version: Some(version.into()),
        }
    }

    /// Enables a downgrade to `version`.
    pub fn enable(version: impl Into<String>) -> DowngradeRequest {
        DowngradeRequest {
            action: DowngradeAction::Enable,
            version: Some(version.into()),
        }
    }

    /// Cancels the downgrade in progress.
    pub fn cancel() -> DowngradeRequest {
        DowngradeRequest {
            action: DowngradeAction::Cancel,
            version: None,
        }
    }

    /// The request as etcd-client takes it; refuses a missing or empty target version.
    fn options(&self) -> Result<DowngradeOptions> {
        let version = || match self.version.as_deref().map(str::trim) {
            Some(v) if !v.is_empty() => Ok(v.to_string()),
            _ => Err(Error::from(etcd_common::InvalidOption::new(
                VERSION,
                format!(
                    "downgrade {} needs the target version (e.g. 3.5)",
                    self.action.word()
                ),
            ))),
        };
        Ok(match self.action {
            DowngradeAction::Validate => DowngradeOptions::Validate(version()?),
            DowngradeAction::Enable => DowngradeOptions::Enable(version()?),
            DowngradeAction::Cancel => DowngradeOptions::Cancel,
        })
    }
}

/// What etcd answered to a downgrade request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DowngradeResult {
    /// The action done.
    pub action: DowngradeAction,
    /// The target version asked for (absent for cancel).
    pub target_version: Option<String>,
    /// The cluster version etcd reported in its answer (`3.6`).
    pub cluster_version: String,
    /// The endpoint that answered.
    pub endpoint: String,
    /// The response header.
    pub header: Option<ResponseHeader>,
}

/// How long a request that etcd 3.5 applies but never answers is waited for, before its
/// effect is checked instead.
const UNANSWERED_WAIT: Duration = Duration::from_secs(1);
/// Pause between the checks of an unanswered request's effect.
const CHECK_PAUSE: Duration = Duration::from_millis(100);

impl Client {
    /// Sends a downgrade request (validate, enable or cancel) to the first endpoint that
    /// answers; etcd forwards it to the leader. A server without the Downgrade RPC (etcd 3.4)
    /// is an error that names its version; etcd's own refusals (a target that is not one
    /// minor version below the cluster's, a downgrade already in progress, none to cancel)
    /// are passed on in its words, with what they mean.
    ///
    /// etcd 3.5 (3.5.1 at least) applies `enable` and `cancel` but never answers them (its
    /// applier hands no result to the waiting request): against 3.5 the request is given
    /// a second to answer (a 3.5 that does answer is taken at its word), then its
    /// effect is checked with `validate` until the command timeout, and the result is the
    /// checked one.
    ///
    /// An `enable` asks `guard` first (`Change::DowngradeEnable`): its refusal is the error.
    pub async fn downgrade<G: ChangeGuard>(
        &self,
        request: &DowngradeRequest,
        guard: &G,
    ) -> std::result::Result<DowngradeResult, G::Error> {
        if request.action == DowngradeAction::Enable {
            guard.check(Change::DowngradeEnable)?;
        }
        Ok(self.downgrade_unguarded(request).await?)
    }

    /// [`Client::downgrade`], once its guard let it through.
    async fn downgrade_unguarded(&self, request: &DowngradeRequest) -> Result<DowngradeResult> {
        let options = request.options()?;
        let client = self.any().await?;
        let server = server_version(&client).await;
        let unanswered = request.action != DowngradeAction::Validate
            && server.as_deref().is_some_and(|v| v.starts_with("3.5."));
        if unanswered {
            let server = server.unwrap_or_default();
            let timeout = self.config().command_timeout;
            return without_answer(&client, request, options, &server, timeout).await;
        }
        let operation = request.action.operation();
        let response = send(&client, operation, options)
            .await
            .map_err(|err| explain(&client, operation, err, server.as_deref()))?;
        Ok(result(&client, request, &response))
    }
}

async fn send(
    client: &EndpointClient,
    operation: &'static str,
    options: DowngradeOptions,
) -> Result<DowngradeResponse> {
    let options = &options;
    client
        .call(operation, |c| async move {
            c.maintenance_client().downgrade(options.clone()).await
        })
        .await
}

fn result(
    client: &EndpointClient,
    request: &DowngradeRequest,
    response: &DowngradeResponse,
) -> DowngradeResult {
    DowngradeResult {
        action: request.action,
        target_version: match request.action {
            DowngradeAction::Cancel => None,
            _ => request.version.as_deref().map(|v| v.trim().to_string()),
        },
        cluster_version: response.version().to_string(),
        endpoint: client.endpoint().to_string(),
        header: ResponseHeader::of(response.header()),
    }
}

/// The version the member reports in its status, when it answers.
async fn server_version(client: &EndpointClient) -> Option<String> {
    client
        .call("status", |mut c| async move { c.status().await })
        .await
        .ok()
        .map(|s| s.version().to_string())
}

/// `enable` or `cancel` against etcd 3.5, which applies them without answering: sent, given
/// [`UNANSWERED_WAIT`], then confirmed with `validate` (a downgrade in progress after
/// enable, none after cancel) until the command timeout.
async fn without_answer(
    client: &EndpointClient,
    request: &DowngradeRequest,
    options: DowngradeOptions,
    server: &str,
    timeout: Duration,
) -> Result<DowngradeResult> {
    let operation = request.action.operation();
    let probe_target = match request.action {
        DowngradeAction::Cancel => minor_below(server).unwrap_or_default(),
        _ => request
            .version
            .as_deref()
            .unwrap_or_default()
            .trim()
            .to_string(),
    };
    // Enable: what the server checks first, asked first, for its answer (and cluster version).
    let before = match request.action {
        DowngradeAction::Enable => Some(
            send(
                client,
                operation,
                DowngradeOptions::Validate(probe_target.clone()),
            )
            .await
            .map_err(|err| explain(client, operation, err, Some(server)))?,
        ),
        _ => None,
    };
    match tokio::time::timeout(UNANSWERED_WAIT, send(client, operation, options)).await {
        Ok(Ok(response)) => return Ok(result(client, request, &response)),
        Ok(Err(err)) if !matches!(err, Error::Timeout { .. }) => {
            return Err(explain(client, operation, err, Some(server)));
        }
        _ => {}
    }
    let deadline = Instant::now() + timeout;
    loop {
        let probe = send(
            client,
            operation,
            DowngradeOptions::Validate(probe_target.clone()),
        )
        .await;
        let done = match (request.action, &probe) {
            (DowngradeAction::Enable, Err(err)) => in_progress(err).then(|| before.clone()),
            (DowngradeAction::Cancel, Ok(response)) => Some(Some(response.clone())),
            (DowngradeAction::Cancel, Err(err)) if !in_progress(err) => Some(None),
            _ => None,
        };
        if let Some(response) = done {
            let mut checked = DowngradeResult {
                action: request.action,
                target_version: (request.action == DowngradeAction::Enable)
                    .then(|| probe_target.clone()),
                cluster_version: String::new(),
                endpoint: client.endpoint().to_string(),
                header: None,
            };
            if let Some(response) = response {
                checked.cluster_version = response.version().to_string();
                checked.header = ResponseHeader::of(response.header());
            }
            return Ok(checked);
        }
        if Instant::now() >= deadline {
            return Err(Error::Request {
                operation,
                endpoint: client.endpoint().to_string(),
                message: format!(
                    "etcd {server} took the request without answering it (as etcd 3.5 does), and within {timeout:?} the cluster did not show it applied; check with downgrade validate"
                ),
            });
        }
        tokio::time::sleep(CHECK_PAUSE).await;
    }
}

/// `3.4` for a server `3.5.1`.
fn minor_below(version: &str) -> Option<String> {
    let mut parts = version.split('.');
    let major: u64 = parts.next()?.parse().ok()?;
    let minor: u64 = parts.next()?.parse().ok()?;
    Some(format!("{major}.{}", minor.checked_sub(1)?))
}

/// Whether etcd answered that a downgrade is already in progress.
fn in_progress(err: &Error) -> bool {
    matches!(err, Error::Request { message, .. } if message.contains("downgrade job in progress"))
}

/// etcd's refusals of a downgrade request, with what they mean.
fn explain(
    client: &EndpointClient,
    operation: &'static str,
    err: Error,
    server: Option<&str>,
) -> Error {
    let Error::Request { message, .. } = &err else {
        return err;
    };
    let server_name = server.map_or("this etcd server".to_string(), |v| format!("etcd {v}"));
    let meaning = if is_unimplemented(&err) {
        format!("{server_name} does not support downgrades: the Downgrade API came with etcd 3.5")
    } else if message.contains("invalid downgrade target version") {
        let below = server
            .and_then(minor_below)
            .map(|v| format!(" (from etcd {}: {v})", server.unwrap_or_default()))
            .unwrap_or_default();
        format!("a downgrade goes to the minor version just below the cluster version{below}")
    } else if message.contains("no inflight downgrade") {
        "no downgrade is in progress".to_string()
    } else if in_progress(&err) {
        "a downgrade is already in progress: cancel it first to change its target".to_string()
    } else {
        return err;
    };
    Error::Request {
        operation,
        endpoint: client.endpoint().to_string(),
        message: format!("{meaning} (etcd said: {message})"),
    }
}

/// Whether etcd answered that it has no such method (gRPC `Unimplemented`).
fn is_unimplemented(err: &Error) -> bool {
    match err {
        Error::Request { message, .. } => {
            message.contains("unknown method") || message.contains("Unimplemented")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_and_enable_need_a_version_cancel_does_not() {
        for request in [
            DowngradeRequest::validate(""),
            DowngradeRequest::enable(" "),
            DowngradeRequest {
                action: DowngradeAction::Enable,
                version: None,
            },
        ] {
            let err = request.options().unwrap_err();
            assert!(err.to_string().contains("target version"), "{err}");
        }
        assert_eq!(
            DowngradeRequest::validate(" 3.5 ").options().unwrap(),
            DowngradeOptions::Validate("3.5".into())
        );
        assert_eq!(
            DowngradeRequest::enable("3.4").options().unwrap(),
            DowngradeOptions::Enable("3.4".into())
        );
        assert_eq!(
            DowngradeRequest::cancel().options().unwrap(),
            DowngradeOptions::Cancel
        );
    }

    #[test]
    fn only_an_unknown_method_answer_counts_as_unsupported() {
        let request = |message: &str| Error::Request {
            operation: "downgrade validate",
            endpoint: "http://127.0.0.1:2379".into(),
            message: message.into(),
        };
        assert!(is_unimplemented(&request(
            "status: Unimplemented, message: \"unknown method Downgrade for service etcdserverpb.Maintenance\""
        )));
        assert!(!is_unimplemented(&request(
            "etcdserver: invalid downgrade target version"
        )));
        assert!(in_progress(&request(
            "etcdserver: cluster has a downgrade job in progress"
        )));
        assert_eq!(minor_below("3.5.1").as_deref(), Some("3.4"));
        assert_eq!(
            minor_below("3.7.1").as_deref(),
            Some("3.6"),
            "3.7 downgrades to 3.6"
        );
        assert_eq!(minor_below("3.0.0"), None);
        assert_eq!(minor_below("x"), None);
    }
}
