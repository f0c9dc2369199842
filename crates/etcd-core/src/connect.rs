//! Connections: one [`EndpointClient`] per endpoint, so that an operation aimed at one member
//! reaches exactly that member (etcdctl's balanced client may answer from any of them).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client as RawClient, ConnectOptions};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::ClientConfig;
use tonic::transport::Endpoint;

use etcd_common::{Hint, options};

use crate::address::{self, Address};
use crate::client::Client;
use crate::config::{ClusterConfig, Secret, TlsSettings};
use crate::discovery::discover_endpoints;
use crate::error::{Error, Result};
use crate::tls;

/// A connection our connector made: TCP or a Unix socket, with TLS or without.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// A connected, authenticated client bound to exactly one endpoint.
#[derive(Clone)]
pub struct EndpointClient {
    endpoint: String,
    client: RawClient,
    /// The connection under `client`, for the few requests etcd-client does not wrap
    /// (`AuthStatus`).
    channel: tonic::transport::Channel,
    command_timeout: Duration,
    user: Option<String>,
    tls: TlsSettings,
}

impl std::fmt::Debug for EndpointClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointClient")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl EndpointClient {
    /// Context for classifying an error of `operation` on this endpoint.
    pub(crate) fn error_context(&self, operation: &'static str) -> ErrorContext<'_> {
        ErrorContext {
            endpoint: &self.endpoint,
            operation,
            user: self.user.as_deref(),
            tls: &self.tls,
            timeout: self.command_timeout,
        }
    }

    /// The endpoint URL this client talks to (`https://10.0.0.1:2379`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// How long one request may take.
    pub(crate) fn command_timeout(&self) -> Duration {
        self.command_timeout
    }

    /// Whether this connection authenticates as a user (its requests carry a token).
    pub(crate) fn authenticates(&self) -> bool {
        self.user.is_some()
    }

    /// The connection itself, for requests etcd-client does not wrap.
    pub(crate) fn channel(&self) -> tonic::transport::Channel {
        self.channel.clone()
    }

    /// The underlying etcd-client, for operations this crate wraps.
    pub fn raw(&self) -> RawClient {
        self.client.clone()
    }

    /// Runs one request under the command timeout, turning failures into [`Error`]s that
    /// name this endpoint and the operation. A request etcd refuses because its token is stale
    /// (expired, or older than a change of users or roles: [`is_stale_token`]) is sent once
    /// more after authenticating again: `request` may run twice.
    pub async fn call<T, F, Fut>(&self, operation: &'static str, request: F) -> Result<T>
    where
        F: Fn(RawClient) -> Fut,
        Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        let attempts = async {
            match request(self.client.clone()).await {
                Err(err) if self.user.is_some() && is_stale_token(&err) => {
                    self.client.refresh_token().await?;
                    request(self.client.clone()).await
                }
                other => other,
            }
        };
        let err = match tokio::time::timeout(self.command_timeout, attempts).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(err)) => classify(&err, &self.error_context(operation)),
            Err(_) => Error::Timeout {
                operation,
                endpoint: self.endpoint.clone(),
                timeout: self.command_timeout,
                hint: missing_cert_hint(&self.endpoint, &self.tls),
            },
        };
        Err(plain_http_to_tls(err, &self.endpoint, self.command_timeout).await)
    }

    /// Authenticates again with the configured user, replacing the token every request on
    /// this connection (and its clones) carries. For an answer etcd gives a stream rather
    /// than a request (a watch cancelled for an expired token); requests go through
    /// [`EndpointClient::call`], which does it by itself. Without a user, nothing to do.
    pub async fn reauthenticate(&self) -> Result<()> {
        if self.user.is_none() {
            return Ok(());
        }
        let refreshed = tokio::time::timeout(self.command_timeout, self.client.refresh_token());
        match refreshed.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => Err(classify(&err, &self.error_context("authenticate"))),
            Err(_) => Err(Error::Timeout {
                operation: "authenticate",
                endpoint: self.endpoint.clone(),
                timeout: self.command_timeout,
                hint: missing_cert_hint(&self.endpoint, &self.tls),
            }),
        }
    }
}

/// etcd refused a request's token as stale: it expired (a JWT past its `ttl`, a simple token
/// unused for `--auth-token-ttl`, any token of a member that restarted), or the cluster's
/// users or roles changed since it was issued (any `user add`, `role grant-permission`...
/// makes every token older than it stale). etcd refuses before applying anything, so the
/// request is sent again after a new authentication, as etcd's Go client does. etcd-client
/// does it itself for the refusals coded `Unauthenticated` (`with_auto_token_refresh`), not
/// for the others: the admin maintenance requests' `Unknown` "auth: invalid auth token"
/// (snapshot, hash, hash-kv, defragment; alarm on 3.4) and the changed-auth answers.
pub(crate) fn is_stale_token(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::GRpcStatus(status) => says_stale_token(status.message()),
        _ => false,
    }
}

/// Whether etcd's `message` (or a watch's cancel reason) refuses a token as stale (see
/// [`is_stale_token`]), in the words of 3.4 and 3.5.
pub(crate) fn says_stale_token(message: &str) -> bool {
    STALE_TOKEN.iter().any(|words| message.contains(words))
}

/// etcd's words for a stale token: expired or unknown, or older than the last auth change
/// (3.4 says "of auth store", 3.5 "in header").
const STALE_TOKEN: &[&str] = &[
    "invalid auth token",
    "revision of auth store is old",
    "revision in header is old",
];

/// An `http://` endpoint whose server speaks TLS fails in unhelpful ways (the server drops
/// the HTTP/2 preface: "operation was canceled", a reset, a timeout). When a request to one
/// failed so, a TLS handshake is tried once; when the server answers it, the error says so.
pub(crate) async fn plain_http_to_tls(err: Error, endpoint: &str, timeout: Duration) -> Error {
    // An answer with a gRPC status (no leader, unhealthy cluster) proves plain HTTP/2.
    let suspicious = match &err {
        Error::Unavailable { message, .. } => message.starts_with(CONNECTION_FAILED),
        Error::Timeout { .. } => true,
        Error::Request { message, .. } => message.contains("canceled"),
        Error::Unreachable { reason, .. } => reason != "connection refused",
        _ => false,
    };
    let Some(host_port) = endpoint.strip_prefix("http://") else {
        return err;
    };
    if !suspicious {
        return err;
    }
    let limit = timeout.min(Duration::from_secs(1));
    if tls::speaks_tls(host_port, limit).await {
        Error::InvalidEndpoint {
            endpoint: endpoint.to_string(),
            reason: format!("the server there speaks TLS: use https://{host_port}"),
        }
    } else {
        err
    }
}

fn missing_cert_hint(endpoint: &str, tls: &TlsSettings) -> String {
    if address::spelled_tls(endpoint) && tls.identity.is_none() {
        "; etcd may require a client certificate and key: it answers a missing one only by not answering".into()
    } else {
        String::new()
    }
}

impl ClusterConfig {
    /// The endpoints to use, normalized: from DNS SRV discovery when configured, else as given.
    pub async fn resolve_endpoints(&self) -> Result<Vec<String>> {
        let raw = match &self.discovery {
            Some(discovery) => discover_endpoints(discovery).await?,
            None => self.endpoints.clone(),
        };
        let mut out = Vec::with_capacity(raw.len());
        for endpoint in raw {
            let normalized = self.normalize_endpoint(&endpoint)?;
            if !out.contains(&normalized) {
                out.push(normalized);
            }
        }
        Ok(out)
    }

    /// Connects (and authenticates) to exactly one endpoint within the dial timeout.
    pub async fn connect_endpoint(&self, endpoint: &str) -> Result<EndpointClient> {
        let address = self.address(endpoint)?;
        let tls_config = if address.tls() {
            Some(tls::client_config(&self.tls)?)
        } else {
            None
        };
        self.connect_with(&address, tls_config).await
    }

    /// Connects to every endpoint concurrently; one result per endpoint, in order.
    pub async fn connect_each(&self, endpoints: &[String]) -> Vec<Result<EndpointClient>> {
        futures::future::join_all(endpoints.iter().map(|e| self.connect_endpoint(e))).await
    }

    /// Connects to the first endpoint (in the order given) that answers. For cluster-wide
    /// reads such as the member list, where any healthy member will do.
    pub async fn connect_any(&self) -> Result<EndpointClient> {
        Client::new(self.clone()).any().await
    }

    /// Runs the idempotent read `read` on the first endpoint that serves it, over a
    /// connection opened for this call (see [`Client::read_any`], which reuses its own).
    pub async fn read_any<T, F, Fut>(&self, read: F) -> Result<T>
    where
        F: Fn(EndpointClient) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        Client::new(self.clone()).read_any(read).await
    }

    async fn connect_with(
        &self,
        address: &Address,
        tls_config: Option<Arc<ClientConfig>>,
    ) -> Result<EndpointClient> {
        let endpoint = &address.to_string();
        // tonic only sees plain http (its authority the host and port, or `localhost` for a
        // Unix socket); TLS, when wanted, and Unix sockets are done by our own connector.
        let authority = match address {
            Address::Tcp { host, port, .. } => format!("{host}:{port}"),
            Address::Unix { .. } => "localhost".to_string(),
        };
        let transport = Endpoint::from_shared(format!("http://{authority}"))
            .map_err(|e| Error::InvalidEndpoint {
                endpoint: endpoint.to_string(),
                reason: e.to_string(),
            })?
            .connect_timeout(self.dial_timeout)
            .tcp_nodelay(true)
            .keep_alive_while_idle(true)
            .http2_keep_alive_interval(self.keepalive_time)
            .keep_alive_timeout(self.keepalive_timeout);
        let context = ErrorContext {
            endpoint,
            operation: "connect",
            user: self.auth.as_ref().map(|a| a.user.as_str()),
            tls: &self.tls,
            timeout: self.dial_timeout,
        };
        let unreachable = |reason: String| Error::Unreachable {
            endpoint: endpoint.to_string(),
            timeout: self.dial_timeout,
            reason,
        };

        let connecting = async {
            match (address, tls_config) {
                (Address::Tcp { .. }, None) => transport.connect().await,
                (_, tls_config) => {
                    let tls = match tls_config {
                        Some(config) => {
                            let name = tls::server_name(&self.tls, &address.certificate_host())?;
                            Some((TlsConnector::from(config), name))
                        }
                        None => None,
                    };
                    let address = address.clone();
                    let connector = tower::service_fn(move |_uri: http::Uri| {
                        let tls = tls.clone();
                        let authority = authority.clone();
                        let address = address.clone();
                        async move {
                            let stream: Box<dyn Stream> = match &address {
                                Address::Tcp { .. } => {
                                    let tcp = TcpStream::connect(&authority).await?;
                                    tcp.set_nodelay(true)?;
                                    Box::new(tcp)
                                }
                                Address::Unix { path, .. } => {
                                    Box::new(UnixStream::connect(path).await?)
                                }
                            };
                            let stream: Box<dyn Stream> = match tls {
                                Some((connector, name)) => {
                                    Box::new(connector.connect(name, stream).await?)
                                }
                                None => stream,
                            };
                            Ok::<_, std::io::Error>(TokioIo::new(stream))
                        }
                    });
                    transport.connect_with_connector(connector).await
                }
            }
            .map_err(|e| classify(&etcd_client::Error::TransportError(e), &context))
        };
        let channel = match tokio::time::timeout(self.dial_timeout, connecting).await {
            Ok(Ok(channel)) => channel,
            Ok(Err(err)) => return Err(plain_http_to_tls(err, endpoint, self.dial_timeout).await),
            Err(_) => {
                let err = unreachable("no connection established in time".into());
                return Err(plain_http_to_tls(err, endpoint, self.dial_timeout).await);
            }
        };

        let options = ConnectOptions::new().with_timeout(self.command_timeout);
        // etcd's tokens expire (a JWT after its `ttl`, a simple token after
        // `--auth-token-ttl` unused): as etcd's Go client does, a request refused for an
        // expired token authenticates again once and is sent again, so a long-lived client
        // (`backup run`, `watch`, a check loop) never sees its token expire. When that
        // authentication is refused (the password changed meanwhile), it is the error.
        let with_user = match &self.auth {
            Some(auth) => options
                .clone()
                .with_user(auth.user.clone(), auth.password.expose().to_string())
                .with_auto_token_refresh(true),
            None => options.clone(),
        };
        // from_channel authenticates when a user is set: bound it by the dial timeout too.
        // As etcdctl, credentials for a cluster without auth are not an error.
        let raw_channel = channel.clone();
        let authenticated = tokio::time::timeout(self.dial_timeout, async {
            let channel = match &self.auth_jwt_token {
                Some(token) => with_token(channel, token),
                None => etcd_client::Channel::Tonic(channel),
            };
            match RawClient::from_channel(channel.clone(), Some(with_user)).await {
                Err(etcd_client::Error::GRpcStatus(status))
                    if self.auth.is_some()
                        && status.message().contains("authentication is not enabled") =>
                {
                    RawClient::from_channel(channel, Some(options)).await
                }
                other => other,
            }
        })
        .await
        .map_err(|_| Error::Timeout {
            operation: "authenticate",
            endpoint: endpoint.to_string(),
            timeout: self.dial_timeout,
            hint: missing_cert_hint(endpoint, &self.tls),
        })?
        .map_err(|e| {
            classify(
                &e,
                &ErrorContext {
                    operation: "authenticate",
                    ..context
                },
            )
        });
        let client = match authenticated {
            Ok(client) => client,
            Err(err) => return Err(plain_http_to_tls(err, endpoint, self.dial_timeout).await),
        };
        Ok(EndpointClient {
            endpoint: endpoint.to_string(),
            client,
            channel: raw_channel,
            command_timeout: self.command_timeout,
            user: self.auth.as_ref().map(|a| a.user.clone()),
            tls: self.tls.clone(),
        })
    }
}

/// The connection with etcd's `token` header on every request: a JWT the user holds
/// (etcdctl 3.7's `--auth-jwt-token`), so no request authenticates with a password.
fn with_token(channel: tonic::transport::Channel, token: &Secret) -> etcd_client::Channel {
    use tower::{ServiceBuilder, ServiceExt};
    let mut value = http::HeaderValue::from_str(token.expose()).unwrap_or_else(|_| {
        // Checked when the options were built; an unusable token sends nothing.
        http::HeaderValue::from_static("")
    });
    value.set_sensitive(true);
    let service = ServiceBuilder::new()
        .map_request(move |mut request: http::Request<tonic::body::Body>| {
            request.headers_mut().insert("token", value.clone());
            request
        })
        .service(channel)
        .map_err(tower::BoxError::from);
    etcd_client::Channel::Custom(tower::util::BoxCloneSyncService::new(service))
}

/// How [`classify`] begins the message of a request whose connection broke.
const CONNECTION_FAILED: &str = "the connection failed";

/// What an error is about, for [`classify`].
#[derive(Clone, Copy)]
pub(crate) struct ErrorContext<'a> {
    pub(crate) endpoint: &'a str,
    pub(crate) operation: &'static str,
    pub(crate) user: Option<&'a str>,
    pub(crate) tls: &'a TlsSettings,
    pub(crate) timeout: Duration,
}

/// The error and all its sources, joined, as one line.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Turns an etcd-client error into one of ours, with a message that says what to do.
pub(crate) fn classify(err: &etcd_client::Error, ctx: &ErrorContext<'_>) -> Error {
    let (chain, status_message) = match err {
        etcd_client::Error::GRpcStatus(status) => {
            let mut chain = status.message().to_string();
            if let Some(source) = std::error::Error::source(status) {
                chain = format!("{chain}: {}", error_chain(source));
            }
            (chain, Some(status.message().to_string()))
        }
        etcd_client::Error::TransportError(e) => (error_chain(e), None),
        etcd_client::Error::IoError(e) => (error_chain(e), None),
        other => (error_chain(other), None),
    };
    let lower = chain.to_ascii_lowercase();
    let endpoint = ctx.endpoint.to_string();

    if lower.contains("authentication failed") || lower.contains("invalid user id or password") {
        return Error::AuthFailed {
            endpoint,
            user: ctx.user.unwrap_or("").to_string(),
            detail: status_message.unwrap_or(chain),
        };
    }
    if lower.contains("certificate")
        || lower.contains("tls")
        || lower.contains("handshake")
        || lower.contains("alert")
        || lower.contains("corrupt message")
    {
        return tls::explain_handshake_error(&chain, ctx.tls).into_error(endpoint);
    }
    // After a TLS 1.3 handshake, etcd checks the client certificate and, when it is missing
    // or untrusted, just drops the connection: the client sees a broken pipe or a reset.
    let dropped = [
        "broken pipe",
        "connection reset",
        "stream closed",
        "connection error",
        "operation was canceled",
    ];
    if ctx.operation == "connect"
        && address::spelled_tls(ctx.endpoint)
        && (lower.contains("connection reset") || lower.contains("handshake eof"))
    {
        return Error::Tls {
            endpoint,
            reason: tls::CLOSED_DURING_HANDSHAKE.into(),
        };
    }
    if ctx.operation != "connect"
        && address::spelled_tls(ctx.endpoint)
        && dropped.iter().any(|p| lower.contains(p))
    {
        let reason = if ctx.tls.identity.is_none() {
            "etcd closed the connection after the TLS handshake: it requires a client certificate; give a client certificate and its key"
        } else {
            "etcd closed the connection after the TLS handshake: it may not trust the client certificate; check the client certificate and key against the CA etcd trusts (its trusted CA file)"
        };
        return Error::TlsSetting {
            endpoint,
            reason: reason.into(),
            hint: Hint::any_of(&[options::CERT, options::KEY]),
        };
    }
    let connection_problem = [
        "connection refused",
        "tcp connect error",
        "error trying to connect",
        "no route to host",
        "network is unreachable",
        "failed to lookup address",
        "name or service not known",
        "dns error",
        "connection reset",
        "broken pipe",
        "operation timed out",
        "timed out",
        // hyper's words for a connection that closed before the answer came.
        "operation was canceled",
        "connection closed",
        "stream closed",
        "connection error",
    ];
    if ctx.operation == "connect" && connection_problem.iter().any(|p| lower.contains(p)) {
        // Whichever words came first ("tcp connect error: ..."), say what happened.
        let reason = if lower.contains("refused") {
            "connection refused".to_string()
        } else if lower.contains("timed out") {
            "no connection established in time".to_string()
        } else {
            chain.clone()
        };
        return Error::Unreachable {
            endpoint,
            timeout: ctx.timeout,
            reason,
        };
    }
    if ctx.operation == "connect" && (lower.contains("deadline") || lower.contains("elapsed")) {
        return Error::Unreachable {
            endpoint,
            timeout: ctx.timeout,
            reason: "no connection established in time".into(),
        };
    }
    if connection_problem.iter().any(|p| lower.contains(p)) {
        return Error::Unavailable {
            operation: ctx.operation,
            endpoint,
            message: format!("{CONNECTION_FAILED}: {chain}"),
        };
    }
    // etcd answers Unavailable when it cannot serve now (no leader, leader changed, stopping):
    // another member may.
    if let etcd_client::Error::GRpcStatus(status) = err
        && status.code() == tonic::Code::Unavailable
    {
        return Error::Unavailable {
            operation: ctx.operation,
            endpoint,
            message: status_message.unwrap_or(chain),
        };
    }
    if lower.contains("deadline") {
        return Error::Timeout {
            operation: ctx.operation,
            endpoint: endpoint.clone(),
            timeout: ctx.timeout,
            hint: missing_cert_hint(&endpoint, ctx.tls),
        };
    }
    Error::Request {
        operation: ctx.operation,
        endpoint,
        message: status_message.unwrap_or(chain),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(tls: &TlsSettings) -> ErrorContext<'_> {
        ErrorContext {
            endpoint: "http://127.0.0.1:2379",
            operation: "member list",
            user: Some("root"),
            tls,
            timeout: Duration::from_secs(5),
        }
    }

    fn classified(err: etcd_client::Error) -> Error {
        classify(&err, &ctx(&TlsSettings::default()))
    }

    #[test]
    fn a_stale_token_is_told_apart_from_wrong_credentials_and_denials() {
        // As etcd 3.4.23 and 3.5.1 answer a request whose JWT expired, an admin maintenance
        // request (snapshot, hash-kv, defragment) with one, and a token older than a change
        // of users (3.4, 3.5).
        let status = |code, message: &str| {
            etcd_client::Error::GRpcStatus(tonic::Status::new(code, message.to_string()))
        };
        for stale in [
            status(
                tonic::Code::Unauthenticated,
                "etcdserver: invalid auth token",
            ),
            status(tonic::Code::Unknown, "auth: invalid auth token"),
            status(
                tonic::Code::InvalidArgument,
                "etcdserver: revision of auth store is old",
            ),
            status(tonic::Code::Unknown, "auth: revision in header is old"),
        ] {
            assert!(is_stale_token(&stale), "{stale:?}");
        }
        for other in [
            status(
                tonic::Code::InvalidArgument,
                "etcdserver: authentication failed, invalid user ID or password",
            ),
            status(
                tonic::Code::PermissionDenied,
                "etcdserver: permission denied",
            ),
            status(
                tonic::Code::InvalidArgument,
                "etcdserver: user name is empty",
            ),
            status(tonic::Code::Unavailable, "etcdserver: no leader"),
        ] {
            assert!(!is_stale_token(&other), "{other:?}");
        }
    }

    #[test]
    fn a_read_moves_on_only_when_the_endpoint_failed() {
        use std::io::{Error as IoError, ErrorKind};
        let moves_on = [
            classified(etcd_client::Error::IoError(IoError::new(
                ErrorKind::ConnectionReset,
                "connection reset by peer (os error 104)",
            ))),
            classified(etcd_client::Error::IoError(IoError::new(
                ErrorKind::BrokenPipe,
                "broken pipe",
            ))),
            classified(etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
                "etcdserver: leader changed",
            ))),
            classified(etcd_client::Error::GRpcStatus(tonic::Status::unavailable(
                "etcdserver: no leader",
            ))),
            Error::Unreachable {
                endpoint: "http://h:1".into(),
                timeout: Duration::from_secs(2),
                reason: "connection refused".into(),
            },
            Error::Timeout {
                operation: "member list",
                endpoint: "http://h:1".into(),
                timeout: Duration::from_secs(5),
                hint: String::new(),
            },
        ];
        for err in &moves_on {
            assert!(err.is_endpoint_failure(), "should move on: {err:?}");
        }
        let stops = [
            classified(etcd_client::Error::GRpcStatus(
                tonic::Status::permission_denied("etcdserver: permission denied"),
            )),
            classified(etcd_client::Error::GRpcStatus(
                tonic::Status::invalid_argument(
                    "etcdserver: mvcc: required revision has been compacted",
                ),
            )),
            classified(etcd_client::Error::GRpcStatus(
                tonic::Status::invalid_argument(
                    "etcdserver: authentication failed, invalid user ID or password",
                ),
            )),
            etcd_common::InvalidOption::new(etcd_common::options::KEY, "empty").into(),
        ];
        for err in &stops {
            assert!(!err.is_endpoint_failure(), "should not move on: {err:?}");
        }
    }
}
