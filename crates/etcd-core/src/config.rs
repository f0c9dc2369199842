//! Connection settings: one type, built in one place from flags, the `ETCDCTL_*` environment
//! or module arguments.
//!
//! Front-ends fill a [`ConnectionOptions`] (every field optional, as given by the user), call
//! [`ConnectionOptions::or_env`] to fill what is still unset from etcdctl's environment
//! variables, then [`ConnectionOptions::build`] to validate everything into a [`ClusterConfig`].
//! So the precedence is always: explicit value, then environment, then etcdctl's default.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::address::Address;
use crate::error::{COMMAND_TIMEOUT, DIAL_TIMEOUT, DISCOVERY_SRV, Error, PASSWORD, Result};
use etcd_common::parse_duration;
use etcd_common::redact_endpoint;
use etcd_common::{Hint, InvalidOption, OptionId, options};

/// etcdctl's default endpoint when none is given.
pub const DEFAULT_ENDPOINT: &str = "127.0.0.1:2379";
/// etcdctl's default dial timeout.
pub const DEFAULT_DIAL_TIMEOUT: Duration = Duration::from_secs(2);
/// etcdctl's default command timeout.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// A password or other secret: never printed by `Debug`, never serialized.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

/// Connection settings as the user gave them, before the environment and validation.
///
/// Every field is optional so that "not given" can fall back to the environment. `Debug`
/// shows endpoints with any password in them replaced by `***`.
#[derive(Clone, Default)]
pub struct ConnectionOptions {
    /// Client URLs (`https://10.0.0.1:2379`) or `host:port` pairs.
    pub endpoints: Option<Vec<String>>,
    /// PEM file with the CA bundle that signs the servers' certificates.
    pub cacert: Option<PathBuf>,
    /// PEM file with the client certificate.
    pub cert: Option<PathBuf>,
    /// PEM file with the client certificate's private key.
    pub key: Option<PathBuf>,
    /// PEM data of the CA bundle, for credentials held in a vault rather than a file.
    pub cacert_pem: Option<String>,
    /// PEM data of the client certificate.
    pub cert_pem: Option<String>,
    /// PEM data of the client key.
    pub key_pem: Option<Secret>,
    /// Accept any server certificate (never the default; warn when used).
    pub insecure_skip_tls_verify: Option<bool>,
    /// Name to verify the server certificate against instead of the endpoint's host.
    pub server_name: Option<String>,
    /// `user` or `user:password`.
    pub user: Option<String>,
    /// Password for `user` (when not given as `user:password`).
    pub password: Option<Secret>,
    /// A token etcd issued (its `--auth-token jwt`), sent with every request instead of
    /// authenticating with a user and password (etcdctl 3.7's `--auth-jwt-token`).
    pub auth_jwt_token: Option<Secret>,
    /// Time allowed to establish a connection.
    pub dial_timeout: Option<Duration>,
    /// Time allowed for one request.
    pub command_timeout: Option<Duration>,
    /// Domain whose DNS SRV records list the cluster's client endpoints.
    pub discovery_srv: Option<String>,
    /// Service name suffix of the SRV records (`_etcd-client-ssl-NAME._tcp`).
    pub discovery_srv_name: Option<String>,
    /// Accept `_etcd-client._tcp` (plain http) SRV records; etcdctl's default is yes.
    pub insecure_discovery: Option<bool>,
    /// DNS server (`IP` or `IP:PORT`) for SRV lookups instead of the system resolver.
    pub dns_server: Option<String>,
    /// Interval of HTTP/2 keepalive pings (etcdctl's `--keepalive-time`).
    pub keepalive_time: Option<Duration>,
    /// Time a keepalive ping may go unanswered (etcdctl's `--keepalive-timeout`).
    pub keepalive_timeout: Option<Duration>,
}

impl fmt::Debug for ConnectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoints = self
            .endpoints
            .as_ref()
            .map(|list| list.iter().map(|e| redact_endpoint(e)).collect::<Vec<_>>());
        f.debug_struct("ConnectionOptions")
            .field("endpoints", &endpoints)
            .field("cacert", &self.cacert)
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field(
                "cacert_pem",
                &self.cacert_pem.as_ref().map(|_| "<inline PEM>"),
            )
            .field("cert_pem", &self.cert_pem.as_ref().map(|_| "<inline PEM>"))
            .field("key_pem", &self.key_pem)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("server_name", &self.server_name)
            .field("user", &self.user.as_deref().map(redact_user))
            .field("password", &self.password)
            .field("auth_jwt_token", &self.auth_jwt_token)
            .field("dial_timeout", &self.dial_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("discovery_srv", &self.discovery_srv)
            .field("discovery_srv_name", &self.discovery_srv_name)
            .field("insecure_discovery", &self.insecure_discovery)
            .field("dns_server", &self.dns_server)
            .field("keepalive_time", &self.keepalive_time)
            .field("keepalive_timeout", &self.keepalive_timeout)
            .finish()
    }
}

/// `user:password` shown as `user:***`.
fn redact_user(user: &str) -> String {
    match user.split_once(':') {
        Some((name, _)) => format!("{name}:***"),
        None => user.to_string(),
    }
}

/// The environment variable each setting falls back to, as etcdctl names them.
pub const ENV_VARS: &[(&str, &str)] = &[
    ("endpoints", "ETCDCTL_ENDPOINTS"),
    ("cacert", "ETCDCTL_CACERT"),
    ("cert", "ETCDCTL_CERT"),
    ("key", "ETCDCTL_KEY"),
    (
        "insecure_skip_tls_verify",
        "ETCDCTL_INSECURE_SKIP_TLS_VERIFY",
    ),
    ("user", "ETCDCTL_USER"),
    ("password", "ETCDCTL_PASSWORD"),
    ("auth_jwt_token", "ETCDCTL_AUTH_JWT_TOKEN"),
    ("dial_timeout", "ETCDCTL_DIAL_TIMEOUT"),
    ("command_timeout", "ETCDCTL_COMMAND_TIMEOUT"),
    ("discovery_srv", "ETCDCTL_DISCOVERY_SRV"),
    ("discovery_srv_name", "ETCDCTL_DISCOVERY_SRV_NAME"),
    ("insecure_discovery", "ETCDCTL_INSECURE_DISCOVERY"),
    ("dns_server", "ETCDOPS_DNS_SERVER"),
];

fn env_name(field: &str) -> &'static str {
    ENV_VARS
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(_, v)| *v)
        .unwrap_or("")
}

impl ConnectionOptions {
    /// Fills every unset field from the process environment (`ETCDCTL_*`).
    pub fn or_env(self) -> Result<Self> {
        self.or_env_from(|name| std::env::var(name).ok())
    }

    /// Fills every unset field from `lookup(VARIABLE)`; values already set win.
    pub fn or_env_from(mut self, lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |field: &str| lookup(env_name(field)).filter(|v| !v.is_empty());
        if self.endpoints.is_none() {
            self.endpoints = get("endpoints").map(|v| split_list(&v));
        }
        if self.cacert.is_none() {
            self.cacert = get("cacert").map(PathBuf::from);
        }
        if self.cert.is_none() {
            self.cert = get("cert").map(PathBuf::from);
        }
        if self.key.is_none() {
            self.key = get("key").map(PathBuf::from);
        }
        if self.insecure_skip_tls_verify.is_none() {
            let name = env_name("insecure_skip_tls_verify");
            self.insecure_skip_tls_verify = get("insecure_skip_tls_verify")
                .map(|v| parse_bool(name, &v))
                .transpose()?;
        }
        if self.user.is_none() {
            self.user = get("user");
        }
        if self.password.is_none() {
            self.password = get("password").map(Secret::new);
        }
        if self.auth_jwt_token.is_none() {
            self.auth_jwt_token = get("auth_jwt_token").map(Secret::new);
        }
        if self.dial_timeout.is_none() {
            self.dial_timeout = get("dial_timeout")
                .map(|v| parse_duration_setting(env_name("dial_timeout"), &v))
                .transpose()?;
        }
        if self.command_timeout.is_none() {
            self.command_timeout = get("command_timeout")
                .map(|v| parse_duration_setting(env_name("command_timeout"), &v))
                .transpose()?;
        }
        if self.discovery_srv.is_none() {
            self.discovery_srv = get("discovery_srv");
        }
        if self.discovery_srv_name.is_none() {
            self.discovery_srv_name = get("discovery_srv_name");
        }
        if self.insecure_discovery.is_none() {
            let name = env_name("insecure_discovery");
            self.insecure_discovery = get("insecure_discovery")
                .map(|v| parse_bool(name, &v))
                .transpose()?;
        }
        if self.dns_server.is_none() {
            self.dns_server = get("dns_server");
        }
        Ok(self)
    }

    /// Validates the options into a [`ClusterConfig`], applying etcdctl's defaults.
    ///
    /// Files are not read here (that happens when connecting), but contradictory settings
    /// (a key without a certificate, a user without a password, both endpoints and
    /// discovery) are refused with a message that says what to change.
    pub fn build(self) -> Result<ClusterConfig> {
        let (user, password) = match (self.user, self.password) {
            (None, None) => (None, None),
            (None, Some(_)) => {
                return Err(Error::InvalidRequest {
                    what: "password",
                    reason: "a password was given without a user; give the user too".into(),
                    hint: Hint::option(options::USER),
                });
            }
            (Some(user), password) => match (user.split_once(':'), password) {
                (Some((name, pass)), None) => (Some(name.to_string()), Some(Secret::new(pass))),
                (Some(_), Some(_)) => {
                    return Err(InvalidOption::new(
                        options::USER,
                        "give the password either with the user (NAME:PASSWORD) or on its own, not both",
                    )
                    .into());
                }
                (None, Some(p)) => (Some(user), Some(p)),
                (None, None) => {
                    return Err(InvalidOption::new(
                        PASSWORD,
                        format!(
                            "user '{user}' has no password; give it (or ETCDCTL_PASSWORD), or the user as {user}:PASSWORD"
                        ),
                    )
                    .into());
                }
            },
        };
        let auth = match (user, password) {
            (Some(user), Some(password)) => {
                if user.is_empty() {
                    return Err(InvalidOption::new(options::USER, "the user name is empty").into());
                }
                Some(Credentials { user, password })
            }
            _ => None,
        };
        let auth_jwt_token = self.auth_jwt_token.filter(|t| !t.expose().is_empty());
        if auth_jwt_token.is_some() && auth.is_some() {
            return Err(InvalidOption::new(
                options::AUTH_JWT_TOKEN,
                "give either a user (with its password) or a JWT, not both",
            )
            .into());
        }
        if let Some(token) = &auth_jwt_token
            && tonic::metadata::MetadataValue::<tonic::metadata::Ascii>::try_from(token.expose())
                .is_err()
        {
            return Err(InvalidOption::new(
                options::AUTH_JWT_TOKEN,
                "the token holds characters a JWT never has (a JWT is base64url text with dots)",
            )
            .into());
        }

        let cert = pem_source(self.cert, self.cert_pem);
        let key = pem_source(self.key, self.key_pem.map(|s| s.0));
        match (&cert, &key) {
            (Some(_), None) => {
                return Err(InvalidOption::new(
                    options::KEY,
                    "a client certificate was given without its key; give the key too",
                )
                .into());
            }
            (None, Some(_)) => {
                return Err(InvalidOption::new(
                    options::CERT,
                    "a client key was given without its certificate; give the certificate too",
                )
                .into());
            }
            _ => {}
        }
        let identity = cert
            .zip(key)
            .map(|(cert, key)| ClientIdentity { cert, key });
        let tls = TlsSettings {
            ca: pem_source(self.cacert, self.cacert_pem),
            identity,
            insecure_skip_verify: self.insecure_skip_tls_verify.unwrap_or(false),
            server_name: self.server_name.filter(|s| !s.is_empty()),
        };

        let discovery = match self.discovery_srv.filter(|d| !d.is_empty()) {
            Some(domain) => {
                if self.endpoints.as_ref().is_some_and(|e| !e.is_empty()) {
                    return Err(InvalidOption::new(
                        DISCOVERY_SRV,
                        "give either endpoints or a domain for DNS SRV discovery, not both",
                    )
                    .into());
                }
                Some(SrvDiscovery {
                    domain,
                    service_name: self.discovery_srv_name.filter(|s| !s.is_empty()),
                    insecure: self.insecure_discovery.unwrap_or(true),
                    dns_server: self.dns_server.filter(|s| !s.is_empty()),
                })
            }
            None => None,
        };

        let endpoints = match self.endpoints {
            Some(list) if !list.is_empty() => list,
            _ => vec![DEFAULT_ENDPOINT.to_string()],
        };
        let config = ClusterConfig {
            endpoints,
            discovery,
            tls,
            auth,
            auth_jwt_token,
            dial_timeout: positive(self.dial_timeout, DEFAULT_DIAL_TIMEOUT, DIAL_TIMEOUT)?,
            command_timeout: positive(
                self.command_timeout,
                DEFAULT_COMMAND_TIMEOUT,
                COMMAND_TIMEOUT,
            )?,
            keepalive_time: positive(self.keepalive_time, DEFAULT_KEEPALIVE_TIME, KEEPALIVE_TIME)?,
            keepalive_timeout: positive(
                self.keepalive_timeout,
                DEFAULT_KEEPALIVE_TIMEOUT,
                KEEPALIVE_TIMEOUT,
            )?,
        };
        // Endpoints given explicitly are checked now, so a typo fails before any connection.
        if config.discovery.is_none() {
            for endpoint in &config.endpoints {
                config.normalize_endpoint(endpoint)?;
            }
        }
        Ok(config)
    }
}

fn pem_source(path: Option<PathBuf>, pem: Option<String>) -> Option<PemSource> {
    match (pem.filter(|p| !p.is_empty()), path) {
        (Some(pem), _) => Some(PemSource::Inline(Secret::new(pem))),
        (None, Some(path)) if !path.as_os_str().is_empty() => Some(PemSource::File(path)),
        _ => None,
    }
}

use etcd_common::options::{KEEPALIVE_TIME, KEEPALIVE_TIMEOUT};

fn positive(value: Option<Duration>, default: Duration, option: OptionId) -> Result<Duration> {
    match value {
        Some(d) if d.is_zero() => {
            Err(InvalidOption::new(option, "must be greater than zero (for example 5s)").into())
        }
        Some(d) => Ok(d),
        None => Ok(default),
    }
}

/// Splits a comma-separated list as etcdctl does, dropping empty items.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn parse_bool(name: &'static str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "t" | "true" | "yes" => Ok(true),
        "0" | "f" | "false" | "no" => Ok(false),
        _ => Err(InvalidOption::input(
            name,
            format!("'{value}' is not a boolean; use true or false"),
        )
        .into()),
    }
}

fn parse_duration_setting(name: &'static str, value: &str) -> Result<Duration> {
    parse_duration(value).map_err(|reason| InvalidOption::input(name, reason).into())
}

/// Where a PEM document comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemSource {
    /// A file on disk.
    File(PathBuf),
    /// PEM text given directly (a vault, an Ansible credential). Treated as secret.
    Inline(Secret),
}

impl PemSource {
    /// What to call this source in a message: the path, or "inline PEM".
    pub fn describe(&self) -> String {
        match self {
            PemSource::File(path) => path.display().to_string(),
            PemSource::Inline(_) => "inline PEM data".to_string(),
        }
    }
}

/// A client certificate and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate (chain) in PEM.
    pub cert: PemSource,
    /// The private key in PEM.
    pub key: PemSource,
}

/// TLS settings for client connections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// CA bundle; the system roots when absent.
    pub ca: Option<PemSource>,
    /// Client certificate for servers that require one (`--client-cert-auth`).
    pub identity: Option<ClientIdentity>,
    /// Skip server certificate verification.
    pub insecure_skip_verify: bool,
    /// Name to verify the server certificate against.
    pub server_name: Option<String>,
}

impl TlsSettings {
    /// Whether any TLS setting was given, which makes scheme-less endpoints use https.
    pub fn is_configured(&self) -> bool {
        self.ca.is_some() || self.identity.is_some() || self.insecure_skip_verify
    }
}

/// User name and password for etcd's auth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The etcd user.
    pub user: String,
    /// Its password.
    pub password: Secret,
}

/// DNS SRV discovery of the client endpoints, as etcdctl's `--discovery-srv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrvDiscovery {
    /// The domain, e.g. `example.com` for `_etcd-client-ssl._tcp.example.com`.
    pub domain: String,
    /// Optional service name suffix (`--discovery-srv-name`).
    pub service_name: Option<String>,
    /// Whether plain-http `_etcd-client` records are accepted.
    pub insecure: bool,
    /// DNS server to ask instead of the system resolver (`IP` or `IP:PORT`).
    pub dns_server: Option<String>,
}

/// Validated settings for talking to one etcd cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// Endpoints as given (used when `discovery` is `None`).
    pub endpoints: Vec<String>,
    /// DNS SRV discovery, replacing `endpoints`.
    pub discovery: Option<SrvDiscovery>,
    /// TLS settings.
    pub tls: TlsSettings,
    /// User and password, when auth is used.
    pub auth: Option<Credentials>,
    /// A token etcd issued, sent with every request instead of authenticating (never with
    /// `auth`).
    pub auth_jwt_token: Option<Secret>,
    /// Time allowed to connect (and authenticate) to one endpoint.
    pub dial_timeout: Duration,
    /// Time allowed for one request.
    pub command_timeout: Duration,
    /// Interval of HTTP/2 keepalive pings on idle connections.
    pub keepalive_time: Duration,
    /// Time a keepalive ping may go unanswered before the connection counts as dead.
    pub keepalive_timeout: Duration,
}

/// etcdctl's default `--keepalive-time`.
pub const DEFAULT_KEEPALIVE_TIME: Duration = Duration::from_secs(30);
/// etcdctl's default `--keepalive-timeout`.
pub const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for ClusterConfig {
    fn default() -> Self {
        ConnectionOptions::default()
            .build()
            .expect("default options are valid")
    }
}

impl ClusterConfig {
    /// Config for the given endpoints with every other setting at etcdctl's default.
    pub fn for_endpoints<S: Into<String>>(endpoints: impl IntoIterator<Item = S>) -> Result<Self> {
        ConnectionOptions {
            endpoints: Some(endpoints.into_iter().map(Into::into).collect()),
            ..Default::default()
        }
        .build()
    }

    /// Checks an endpoint and writes it in its one spelling, `http(s)://HOST:PORT` or
    /// `unix(s)://PATH`: every form etcdctl accepts, with etcdctl's meaning (see
    /// `address`); a `HOST:PORT` (or `unix://`) endpoint is TLS when TLS is configured.
    pub fn normalize_endpoint(&self, endpoint: &str) -> Result<String> {
        self.address(endpoint).map(|a| a.to_string())
    }

    /// Where `endpoint` is, and whether it is TLS.
    pub(crate) fn address(&self, endpoint: &str) -> Result<Address> {
        crate::address::parse(endpoint, self.tls.is_configured()).map_err(|reason| {
            Error::InvalidEndpoint {
                endpoint: redact_endpoint(endpoint),
                reason,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcd_common::Hinted;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn a_jwt_comes_from_etcdctls_variable_stays_hidden_and_excludes_a_user() {
        let jwt = "eyJhbGciOiJFUzI1NiJ9.eyJ1c2VybmFtZSI6InJvb3QifQ.c2ln";
        let opts = ConnectionOptions::default()
            .or_env_from(env(&[("ETCDCTL_AUTH_JWT_TOKEN", jwt)]))
            .unwrap();
        assert!(!format!("{opts:?}").contains("eyJ"), "{opts:?}");
        let config = opts.build().unwrap();
        assert_eq!(
            config.auth_jwt_token.as_ref().map(Secret::expose),
            Some(jwt)
        );
        assert!(config.auth.is_none());
        let both = ConnectionOptions {
            user: Some("root:pw".into()),
            auth_jwt_token: Some(Secret::new(jwt)),
            ..Default::default()
        }
        .build()
        .unwrap_err();
        assert!(both.to_string().contains("not both"), "{both}");
        assert_eq!(both.hint(), Some(Hint::option(options::AUTH_JWT_TOKEN)));
        let control = ConnectionOptions {
            auth_jwt_token: Some(Secret::new("eyJ\nx")),
            ..Default::default()
        }
        .build()
        .unwrap_err();
        assert!(!control.to_string().contains("eyJ"), "{control}");
    }

    #[test]
    fn explicit_values_win_over_environment() {
        let opts = ConnectionOptions {
            endpoints: Some(vec!["http://10.0.0.1:2379".into()]),
            dial_timeout: Some(Duration::from_secs(9)),
            ..Default::default()
        }
        .or_env_from(env(&[
            (
                "ETCDCTL_ENDPOINTS",
                "http://10.0.0.2:2379,http://10.0.0.3:2379",
            ),
            ("ETCDCTL_DIAL_TIMEOUT", "1s"),
            ("ETCDCTL_COMMAND_TIMEOUT", "1m30s"),
        ]))
        .unwrap();
        let config = opts.build().unwrap();
        assert_eq!(config.endpoints, vec!["http://10.0.0.1:2379"]);
        assert_eq!(config.dial_timeout, Duration::from_secs(9));
        assert_eq!(config.command_timeout, Duration::from_secs(90));
    }

    #[test]
    fn every_setting_reads_its_etcdctl_variable() {
        let config = ConnectionOptions::default()
            .or_env_from(env(&[
                ("ETCDCTL_ENDPOINTS", "a:1, b:2"),
                ("ETCDCTL_CACERT", "/ca.pem"),
                ("ETCDCTL_CERT", "/c.pem"),
                ("ETCDCTL_KEY", "/k.pem"),
                ("ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "true"),
                ("ETCDCTL_USER", "root"),
                ("ETCDCTL_PASSWORD", "pw"),
                ("ETCDCTL_DIAL_TIMEOUT", "500ms"),
                ("ETCDCTL_COMMAND_TIMEOUT", "7s"),
            ]))
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(config.endpoints, vec!["a:1", "b:2"]);
        assert_eq!(config.tls.ca, Some(PemSource::File("/ca.pem".into())));
        assert!(config.tls.identity.is_some());
        assert!(config.tls.insecure_skip_verify);
        let auth = config.auth.unwrap();
        assert_eq!(auth.user, "root");
        assert_eq!(auth.password.expose(), "pw");
        assert_eq!(config.dial_timeout, Duration::from_millis(500));
        assert_eq!(config.command_timeout, Duration::from_secs(7));

        let srv = ConnectionOptions::default()
            .or_env_from(env(&[
                ("ETCDCTL_DISCOVERY_SRV", "example.com"),
                ("ETCDCTL_DISCOVERY_SRV_NAME", "prod"),
            ]))
            .unwrap()
            .build()
            .unwrap();
        let discovery = srv.discovery.unwrap();
        assert_eq!(discovery.domain, "example.com");
        assert_eq!(discovery.service_name.as_deref(), Some("prod"));
        assert!(discovery.insecure);
    }

    #[test]
    fn defaults_match_etcdctl() {
        let config = ClusterConfig::default();
        assert_eq!(config.endpoints, vec![DEFAULT_ENDPOINT]);
        assert_eq!(config.dial_timeout, Duration::from_secs(2));
        assert_eq!(config.command_timeout, Duration::from_secs(5));
        assert!(!config.tls.insecure_skip_verify);
    }

    #[test]
    fn user_with_colon_carries_password() {
        let config = ConnectionOptions {
            user: Some("root:s3:cret".into()),
            ..Default::default()
        }
        .build()
        .unwrap();
        let auth = config.auth.unwrap();
        assert_eq!(auth.user, "root");
        assert_eq!(auth.password.expose(), "s3:cret");
    }

    #[test]
    fn user_without_password_is_refused() {
        let err = ConnectionOptions {
            user: Some("root".into()),
            ..Default::default()
        }
        .build()
        .unwrap_err();
        assert!(err.to_string().contains("has no password"), "{err}");
        assert_eq!(err.hint(), Some(Hint::option(crate::error::PASSWORD)));
    }

    #[test]
    fn cert_without_key_is_refused() {
        let err = ConnectionOptions {
            cert: Some("/c.pem".into()),
            ..Default::default()
        }
        .build()
        .unwrap_err();
        assert!(err.to_string().contains("without its key"), "{err}");
        assert_eq!(err.hint(), Some(Hint::option(options::KEY)));
    }

    #[test]
    fn bad_environment_values_name_the_variable() {
        let err = ConnectionOptions::default()
            .or_env_from(env(&[("ETCDCTL_DIAL_TIMEOUT", "soon")]))
            .unwrap_err();
        assert!(err.to_string().contains("ETCDCTL_DIAL_TIMEOUT"), "{err}");
        let err = ConnectionOptions::default()
            .or_env_from(env(&[("ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "maybe")]))
            .unwrap_err();
        assert!(
            err.to_string().contains("ETCDCTL_INSECURE_SKIP_TLS_VERIFY"),
            "{err}"
        );
    }

    #[test]
    fn endpoints_get_a_scheme_and_bad_ones_are_refused() {
        let plain = ClusterConfig::default();
        assert_eq!(
            plain.normalize_endpoint("127.0.0.1:2379").unwrap(),
            "http://127.0.0.1:2379"
        );
        assert_eq!(
            plain.normalize_endpoint("https://etcd-0:2379/").unwrap(),
            "https://etcd-0:2379"
        );
        let tls = ConnectionOptions {
            cacert: Some("/ca.pem".into()),
            ..Default::default()
        }
        .build()
        .unwrap();
        assert_eq!(
            tls.normalize_endpoint("10.0.0.1:2379").unwrap(),
            "https://10.0.0.1:2379"
        );
        // etcdctl's forms with its meaning (each form's own test is in `address`).
        for (given, normalized) in [
            (":2379", "http://127.0.0.1:2379"),
            ("https://[127.0.0.1]:2379", "https://127.0.0.1:2379"),
            ("http://h:1/v3", "http://h:1"),
            ("unix://localhost:2379", "unix://localhost:2379"),
        ] {
            assert_eq!(plain.normalize_endpoint(given).unwrap(), normalized);
        }
        assert_eq!(
            tls.normalize_endpoint(":2379").unwrap(),
            "https://127.0.0.1:2379"
        );
        for bad in [
            "ftp://h:1",
            "http://",
            "http://h",
            "h:99999",
            "http://[::1:2379",
            "unix://",
            "http://u:p@h:1",
        ] {
            let err = plain.normalize_endpoint(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidEndpoint { .. }), "{bad}: {err}");
            assert!(!err.to_string().contains('\n'), "{bad}: {err}");
        }
        assert!(ClusterConfig::for_endpoints(["http://h:1", "not a url:x"]).is_err());
    }

    #[test]
    fn endpoints_and_discovery_are_exclusive() {
        let err = ConnectionOptions {
            endpoints: Some(vec!["h:1".into()]),
            discovery_srv: Some("example.com".into()),
            ..Default::default()
        }
        .build()
        .unwrap_err();
        assert!(!err.to_string().contains("--"), "{err}");
        assert_eq!(err.hint(), Some(Hint::option(crate::error::DISCOVERY_SRV)));
    }

    #[test]
    fn secrets_do_not_show_in_debug_output() {
        let config = ConnectionOptions {
            user: Some("root:hunter2".into()),
            key_pem: Some(Secret::new("-----BEGIN PRIVATE KEY-----abc")),
            cert_pem: Some("cert".into()),
            ..Default::default()
        }
        .build()
        .unwrap();
        let debug = format!("{config:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(!debug.contains("PRIVATE KEY"), "{debug}");
    }
}
