//! etcd's own configuration file (the YAML that `etcd --config-file` reads, etcd 3.4 and
//! 3.5): a typed [`ServerConfig`], checked as a whole before anything is written
//! ([`ServerConfig::validate`]), rendered with etcd's key names ([`ServerConfig::render`]) and
//! written idempotently ([`write_server_config`]): the file changes only when its content
//! would, through a temporary file, fsync and rename, mode 0600. The DNS SRV records a member
//! needs are derived from the same settings ([`srv_records`]).
//!
//! ```
//! use etcd_core::{ClusterState, ServerConfig};
//!
//! let config = ServerConfig {
//!     name: "etcd-1".into(),
//!     data_dir: "/var/lib/etcd".into(),
//!     listen_client_urls: vec!["http://10.0.0.1:2379".into()],
//!     listen_peer_urls: vec!["http://10.0.0.1:2380".into()],
//!     initial_cluster: vec!["etcd-1=http://10.0.0.1:2380".into()],
//!     initial_cluster_state: Some(ClusterState::New),
//!     ..Default::default()
//! };
//! let yaml = config.render().unwrap();
//! assert!(yaml.contains("initial-cluster: etcd-1=http://10.0.0.1:2380"));
//! ```

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use etcd_common::write_file_atomically;

/// Mode of the written file.
pub const SERVER_CONFIG_MODE: u32 = 0o600;
/// Larger existing files are refused (a real one is a few KiB).
const MAX_FILE: u64 = 1 << 20;
/// The first line of every written file.
const HEADER: &str = "# etcd configuration (etcd --config-file), written by etcdops / etcd.core.etcd_config.\n# Local edits are overwritten on the next run.\n";

/// `initial-cluster-state`: a member of a new cluster, or one joining a running cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClusterState {
    /// Bootstrapping a new cluster with the other initial members.
    New,
    /// Joining a running cluster (after `member add`).
    Existing,
}

/// `auto-compaction-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionMode {
    /// Keep a time window (retention like `1h`, or a number of hours).
    Periodic,
    /// Keep a number of revisions.
    Revision,
}

/// etcd's log levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Everything.
    Debug,
    /// etcd's default.
    Info,
    /// Warnings and errors.
    Warn,
    /// Errors only.
    Error,
}

/// TLS for one side of a member (clients or peers): `client-transport-security` or
/// `peer-transport-security`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportSecurity {
    /// The member's certificate (server and, for peers, client usage).
    pub cert_file: Option<PathBuf>,
    /// Its private key.
    pub key_file: Option<PathBuf>,
    /// CA that signs the certificates the other side presents.
    pub trusted_ca_file: Option<PathBuf>,
    /// Require the other side to present a certificate signed by `trusted_ca_file`.
    #[serde(default)]
    pub client_cert_auth: bool,
}

impl TransportSecurity {
    fn is_empty(&self) -> bool {
        self == &TransportSecurity::default()
    }
}

/// One member's etcd settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerConfig {
    /// `name`: the member's name, as in `initial_cluster`.
    pub name: String,
    /// `data-dir`.
    pub data_dir: PathBuf,
    /// `listen-client-urls`.
    pub listen_client_urls: Vec<String>,
    /// `advertise-client-urls`; default: the listen URLs (refused when those are 0.0.0.0).
    #[serde(default)]
    pub advertise_client_urls: Vec<String>,
    /// `listen-peer-urls`.
    pub listen_peer_urls: Vec<String>,
    /// `initial-advertise-peer-urls`; default: the listen URLs (as above).
    #[serde(default)]
    pub initial_advertise_peer_urls: Vec<String>,
    /// `initial-cluster`: `name=peer-url` entries. Empty for a member that has bootstrapped
    /// (steady state) or that finds its peers through `discovery_srv`.
    #[serde(default)]
    pub initial_cluster: Vec<String>,
    /// `initial-cluster-state`; unset in steady state.
    pub initial_cluster_state: Option<ClusterState>,
    /// `initial-cluster-token`.
    pub initial_cluster_token: Option<String>,
    /// `discovery-srv`: the domain whose `_etcd-server(-ssl)._tcp` SRV records list the
    /// initial members, in place of `initial_cluster`.
    pub discovery_srv: Option<String>,
    /// `discovery-srv-name`: suffix of the SRV service names (`_etcd-server-ssl-NAME`).
    pub discovery_srv_name: Option<String>,
    /// `client-transport-security`.
    #[serde(default)]
    pub client_tls: TransportSecurity,
    /// `peer-transport-security`.
    #[serde(default)]
    pub peer_tls: TransportSecurity,
    /// `quota-backend-bytes`.
    pub quota_backend_bytes: Option<u64>,
    /// `auto-compaction-mode`.
    pub auto_compaction_mode: Option<CompactionMode>,
    /// `auto-compaction-retention`: `1h`, `30m`, a number of hours (periodic) or revisions.
    pub auto_compaction_retention: Option<String>,
    /// `snapshot-count`.
    pub snapshot_count: Option<u64>,
    /// `heartbeat-interval` in milliseconds.
    pub heartbeat_interval: Option<u64>,
    /// `election-timeout` in milliseconds.
    pub election_timeout: Option<u64>,
    /// `listen-metrics-urls`.
    #[serde(default)]
    pub listen_metrics_urls: Vec<String>,
    /// `log-level` (written with `logger: zap`, which etcd 3.4 needs to honour it).
    pub log_level: Option<LogLevel>,
    /// Any other key of etcd's config file, its value as YAML text (`true`, `5`, `a,b`).
    #[serde(default)]
    pub extra: BTreeMap<String, String>,
}

/// The file as etcd reads it: etcd's key names, URL lists as comma-separated strings.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Rendered<'a> {
    name: &'a str,
    data_dir: String,
    listen_client_urls: String,
    advertise_client_urls: String,
    listen_peer_urls: String,
    initial_advertise_peer_urls: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_cluster: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_cluster_state: Option<ClusterState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    initial_cluster_token: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    discovery_srv: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    discovery_srv_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_transport_security: Option<RenderedTls>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_transport_security: Option<RenderedTls>,
    #[serde(skip_serializing_if = "Option::is_none")]
    quota_backend_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auto_compaction_mode: Option<CompactionMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auto_compaction_retention: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    heartbeat_interval: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    election_timeout: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    listen_metrics_urls: Option<String>,
    logger: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_level: Option<LogLevel>,
    #[serde(flatten)]
    extra: BTreeMap<String, serde_yaml_ng::Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct RenderedTls {
    #[serde(skip_serializing_if = "Option::is_none")]
    cert_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trusted_ca_file: Option<String>,
    client_cert_auth: bool,
}

impl RenderedTls {
    fn from(tls: &TransportSecurity) -> Option<RenderedTls> {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        (!tls.is_empty()).then(|| RenderedTls {
            cert_file: path(&tls.cert_file),
            key_file: path(&tls.key_file),
            trusted_ca_file: path(&tls.trusted_ca_file),
            client_cert_auth: tls.client_cert_auth,
        })
    }
}

/// Keys the typed settings write; `extra` may not set them.
const MANAGED_KEYS: &[(&str, &str)] = &[
    ("name", "name"),
    ("data-dir", "data_dir"),
    ("listen-client-urls", "listen_client_urls"),
    ("advertise-client-urls", "advertise_client_urls"),
    ("listen-peer-urls", "listen_peer_urls"),
    ("initial-advertise-peer-urls", "initial_advertise_peer_urls"),
    ("initial-cluster", "initial_cluster"),
    ("initial-cluster-state", "initial_cluster_state"),
    ("initial-cluster-token", "initial_cluster_token"),
    ("discovery-srv", "discovery_srv"),
    ("discovery-srv-name", "discovery_srv_name"),
    ("client-transport-security", "the client TLS options"),
    ("peer-transport-security", "the peer TLS options"),
    ("quota-backend-bytes", "quota_backend_bytes"),
    ("auto-compaction-mode", "auto_compaction_mode"),
    ("auto-compaction-retention", "auto_compaction_retention"),
    ("snapshot-count", "snapshot_count"),
    ("heartbeat-interval", "heartbeat_interval"),
    ("election-timeout", "election_timeout"),
    ("listen-metrics-urls", "listen_metrics_urls"),
    ("logger", "log_level (etcdops always writes logger: zap)"),
    ("log-level", "log_level"),
];

fn invalid(option: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidOption {
        option,
        reason: reason.into(),
    }
}

/// A parsed URL of the config: scheme, host, port.
struct CheckedUrl {
    https: bool,
    host: String,
    port: u16,
    unspecified: bool,
}

fn check_url(option: &'static str, text: &str) -> Result<CheckedUrl> {
    let parsed = url::Url::parse(text.trim()).map_err(|e| {
        invalid(
            option,
            format!("'{text}' is not a URL ({e}); write it as https://HOST:PORT"),
        )
    })?;
    let https = match parsed.scheme() {
        "https" => true,
        "http" => false,
        other => {
            return Err(invalid(
                option,
                format!("'{text}' has scheme '{other}'; etcd takes http:// or https://"),
            ));
        }
    };
    let host = match parsed.host() {
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        Some(host) => host.to_string(),
        None => return Err(invalid(option, format!("'{text}' has no host"))),
    };
    let port = parsed.port().ok_or_else(|| {
        invalid(
            option,
            format!(
                "'{text}' has no port; write it as {}://{host}:PORT",
                parsed.scheme()
            ),
        )
    })?;
    if !matches!(parsed.path(), "" | "/") || parsed.query().is_some() {
        return Err(invalid(
            option,
            format!("'{text}' has a path or query; etcd takes SCHEME://HOST:PORT only"),
        ));
    }
    let unspecified = host
        .parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified());
    Ok(CheckedUrl {
        https,
        host,
        port,
        unspecified,
    })
}

fn check_urls(option: &'static str, urls: &[String]) -> Result<Vec<CheckedUrl>> {
    urls.iter().map(|u| check_url(option, u)).collect()
}

fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_ascii_lowercase()
}

fn check_tls(
    side: &'static str,
    prefix: &str,
    tls: &TransportSecurity,
    urls: &[(&'static str, &[CheckedUrl], &[String])],
) -> Result<()> {
    if tls.cert_file.is_some() != tls.key_file.is_some() {
        return Err(invalid(
            side,
            format!("give both {prefix}_cert_file and {prefix}_key_file, or neither"),
        ));
    }
    if tls.client_cert_auth && tls.trusted_ca_file.is_none() {
        return Err(invalid(
            side,
            format!(
                "{prefix}_client_cert_auth needs {prefix}_trusted_ca_file (the CA that signs the certificates to accept)"
            ),
        ));
    }
    for (option, checked, given) in urls {
        if let Some((_, url)) = checked
            .iter()
            .zip(given.iter())
            .find(|(c, _)| c.https)
            .filter(|_| tls.cert_file.is_none())
        {
            return Err(invalid(
                option,
                format!(
                    "'{url}' is https but no certificate is set; give {prefix}_cert_file and {prefix}_key_file, or use http://"
                ),
            ));
        }
    }
    for path in [&tls.cert_file, &tls.key_file, &tls.trusted_ca_file]
        .into_iter()
        .flatten()
    {
        if !path.is_absolute() {
            return Err(invalid(
                side,
                format!(
                    "'{}' is a relative path; etcd resolves it against its working directory, give an absolute path",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Parses `initial-cluster` entries (`name=url`, several per name allowed).
fn parse_initial_cluster(entries: &[String]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for entry in entries.iter().flat_map(|e| e.split(',')) {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let (name, url) = entry.split_once('=').ok_or_else(|| {
            invalid(
                "initial_cluster",
                format!("'{entry}' is not NAME=PEER_URL (e.g. etcd-1=https://10.0.0.1:2380)"),
            )
        })?;
        if name.trim().is_empty() {
            return Err(invalid(
                "initial_cluster",
                format!("'{entry}' has no member name before '='"),
            ));
        }
        check_url("initial_cluster", url)?;
        out.push((name.trim().to_string(), url.trim().to_string()));
    }
    Ok(out)
}

fn check_domain(option: &'static str, domain: &str) -> Result<()> {
    let ok = !domain.is_empty()
        && domain.len() <= 253
        && domain.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    if ok {
        Ok(())
    } else {
        Err(invalid(
            option,
            format!("'{domain}' is not a DNS domain (e.g. example.com, without scheme or port)"),
        ))
    }
}

impl ServerConfig {
    /// The advertised client URLs in force (the listen URLs when none are given).
    pub fn effective_advertise_client_urls(&self) -> &[String] {
        if self.advertise_client_urls.is_empty() {
            &self.listen_client_urls
        } else {
            &self.advertise_client_urls
        }
    }

    /// The advertised peer URLs in force (the listen URLs when none are given).
    pub fn effective_advertise_peer_urls(&self) -> &[String] {
        if self.initial_advertise_peer_urls.is_empty() {
            &self.listen_peer_urls
        } else {
            &self.initial_advertise_peer_urls
        }
    }

    /// Whether the peers talk https.
    pub fn peer_tls_enabled(&self) -> bool {
        self.effective_advertise_peer_urls()
            .iter()
            .any(|u| u.trim().to_ascii_lowercase().starts_with("https://"))
    }

    /// Checks the settings as a whole; the first problem found, in one line naming the option.
    pub fn validate(&self) -> Result<()> {
        let name = self.name.trim();
        if name.is_empty() {
            return Err(invalid("name", "give the member's name (etcd --name)"));
        }
        if name.contains(['=', ',']) || name.chars().any(char::is_whitespace) {
            return Err(invalid(
                "name",
                format!(
                    "'{name}' may not contain '=', ',' or spaces (it goes into initial-cluster)"
                ),
            ));
        }
        if !self.data_dir.is_absolute() {
            return Err(invalid(
                "data_dir",
                format!(
                    "'{}' must be an absolute path (e.g. /var/lib/etcd)",
                    self.data_dir.display()
                ),
            ));
        }
        if self.listen_client_urls.is_empty() {
            return Err(invalid(
                "listen_client_urls",
                "give at least one, e.g. https://10.0.0.1:2379",
            ));
        }
        if self.listen_peer_urls.is_empty() {
            return Err(invalid(
                "listen_peer_urls",
                "give at least one, e.g. https://10.0.0.1:2380",
            ));
        }
        let listen_client = check_urls("listen_client_urls", &self.listen_client_urls)?;
        let listen_peer = check_urls("listen_peer_urls", &self.listen_peer_urls)?;
        let advertise_client = check_urls(
            "advertise_client_urls",
            self.effective_advertise_client_urls(),
        )?;
        let advertise_peer = check_urls(
            "initial_advertise_peer_urls",
            self.effective_advertise_peer_urls(),
        )?;
        let metrics = check_urls("listen_metrics_urls", &self.listen_metrics_urls)?;
        for (option, given, urls) in [
            (
                "advertise_client_urls",
                self.advertise_client_urls.is_empty(),
                &advertise_client,
            ),
            (
                "initial_advertise_peer_urls",
                self.initial_advertise_peer_urls.is_empty(),
                &advertise_peer,
            ),
        ] {
            if urls.iter().any(|u| u.unspecified) {
                return Err(invalid(
                    option,
                    if given {
                        "the listen URLs bind all addresses (0.0.0.0 / ::); give the addresses others reach this member at"
                            .to_string()
                    } else {
                        "0.0.0.0 / :: cannot be advertised; give the address others reach this member at".to_string()
                    },
                ));
            }
        }
        check_tls(
            "client TLS",
            "client",
            &self.client_tls,
            &[
                (
                    "listen_client_urls",
                    &listen_client,
                    &self.listen_client_urls,
                ),
                (
                    "advertise_client_urls",
                    &advertise_client,
                    self.effective_advertise_client_urls(),
                ),
            ],
        )?;
        check_tls(
            "peer TLS",
            "peer",
            &self.peer_tls,
            &[
                ("listen_peer_urls", &listen_peer, &self.listen_peer_urls),
                (
                    "initial_advertise_peer_urls",
                    &advertise_peer,
                    self.effective_advertise_peer_urls(),
                ),
            ],
        )?;
        // Metrics URLs use the client certificate when https.
        if metrics.iter().any(|m| m.https) && self.client_tls.cert_file.is_none() {
            return Err(invalid(
                "listen_metrics_urls",
                "https metrics URLs use the client certificate; give client_cert_file and client_key_file, or use http://",
            ));
        }
        let bootstrap_with_list = !self.initial_cluster.is_empty();
        match (bootstrap_with_list, &self.discovery_srv) {
            (true, Some(_)) => {
                return Err(invalid(
                    "initial_cluster",
                    "give initial_cluster or discovery_srv, not both: etcd refuses two bootstrap methods",
                ));
            }
            (false, None) if self.initial_cluster_state.is_some() => {
                return Err(invalid(
                    "initial_cluster_state",
                    "a first start needs initial_cluster (name=peer-url of every member) or discovery_srv; leave all initial_* settings out once the member has started (steady state)",
                ));
            }
            _ => {}
        }
        if bootstrap_with_list {
            let entries = parse_initial_cluster(&self.initial_cluster)?;
            let mut own: Vec<String> = entries
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, u)| normalize_url(u))
                .collect();
            if own.is_empty() {
                return Err(invalid(
                    "initial_cluster",
                    format!(
                        "member '{name}' is not in it; add {name}={}",
                        self.effective_advertise_peer_urls()
                            .join(&format!(",{name}="))
                    ),
                ));
            }
            let mut advertised: Vec<String> = self
                .effective_advertise_peer_urls()
                .iter()
                .map(|u| normalize_url(u))
                .collect();
            own.sort();
            advertised.sort();
            if own != advertised {
                return Err(invalid(
                    "initial_cluster",
                    format!(
                        "its URLs for '{name}' ({}) differ from the advertised peer URLs ({}); etcd refuses to start",
                        own.join(","),
                        advertised.join(",")
                    ),
                ));
            }
            let mut seen = std::collections::HashMap::new();
            for (n, u) in &entries {
                if let Some(other) = seen.insert(normalize_url(u), n) {
                    if other != n {
                        return Err(invalid(
                            "initial_cluster",
                            format!("peer URL {u} is given for both '{other}' and '{n}'"),
                        ));
                    }
                }
            }
        }
        if let Some(domain) = &self.discovery_srv {
            check_domain("discovery_srv", domain)?;
        }
        if let Some(service) = &self.discovery_srv_name {
            if self.discovery_srv.is_none() {
                return Err(invalid(
                    "discovery_srv_name",
                    "only means something with discovery_srv",
                ));
            }
            check_domain("discovery_srv_name", service)?;
        }
        if let Some(token) = &self.initial_cluster_token {
            if token.trim().is_empty() || token.chars().any(char::is_whitespace) {
                return Err(invalid(
                    "initial_cluster_token",
                    "must be a non-empty word (the same on every initial member)",
                ));
            }
        }
        if self.auto_compaction_retention.is_some() && self.auto_compaction_mode.is_none() {
            return Err(invalid(
                "auto_compaction_retention",
                "give auto_compaction_mode too (periodic or revision)",
            ));
        }
        if let (Some(mode), Some(retention)) =
            (self.auto_compaction_mode, &self.auto_compaction_retention)
        {
            let retention = retention.trim();
            let ok = match mode {
                CompactionMode::Revision => retention.parse::<u64>().is_ok(),
                CompactionMode::Periodic => {
                    retention.parse::<u64>().is_ok() || crate::parse_duration(retention).is_ok()
                }
            };
            if !ok {
                return Err(invalid(
                    "auto_compaction_retention",
                    format!(
                        "'{retention}' does not suit mode {}: give a number of revisions, or for periodic a number of hours or a duration like 30m",
                        match mode {
                            CompactionMode::Revision => "revision",
                            CompactionMode::Periodic => "periodic",
                        }
                    ),
                ));
            }
        }
        if let (Some(heartbeat), Some(election)) = (self.heartbeat_interval, self.election_timeout)
        {
            if election < 5 * heartbeat {
                return Err(invalid(
                    "election_timeout",
                    format!(
                        "{election} ms is under 5 heartbeat intervals ({heartbeat} ms); etcd recommends 10"
                    ),
                ));
            }
        }
        for key in self.extra.keys() {
            if let Some((_, option)) = MANAGED_KEYS.iter().find(|(k, _)| k == key) {
                return Err(invalid(
                    "extra",
                    format!("'{key}' is set through {option}, not extra"),
                ));
            }
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            {
                return Err(invalid(
                    "extra",
                    format!(
                        "'{key}' is not an etcd config key (lower-case words and digits joined by '-')"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The file's text, after [`ServerConfig::validate`].
    pub fn render(&self) -> Result<String> {
        self.validate()?;
        let join = |urls: &[String]| {
            urls.iter()
                .map(|u| u.trim().to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut extra = BTreeMap::new();
        for (key, text) in &self.extra {
            // `true`, `5`, `[a, b]` keep their YAML type; anything unparsable stays a string.
            let value = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
                .ok()
                .filter(|v| !v.is_null())
                .unwrap_or_else(|| serde_yaml_ng::Value::String(text.clone()));
            extra.insert(key.clone(), value);
        }
        let initial_cluster = parse_initial_cluster(&self.initial_cluster)?;
        let rendered = Rendered {
            name: self.name.trim(),
            data_dir: self.data_dir.display().to_string(),
            listen_client_urls: join(&self.listen_client_urls),
            advertise_client_urls: join(self.effective_advertise_client_urls()),
            listen_peer_urls: join(&self.listen_peer_urls),
            initial_advertise_peer_urls: join(self.effective_advertise_peer_urls()),
            initial_cluster: (!initial_cluster.is_empty()).then(|| {
                initial_cluster
                    .iter()
                    .map(|(n, u)| format!("{n}={u}"))
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            initial_cluster_state: self.initial_cluster_state,
            initial_cluster_token: self.initial_cluster_token.as_deref().map(str::trim),
            discovery_srv: self
                .discovery_srv
                .as_deref()
                .map(|d| d.trim().trim_end_matches('.')),
            discovery_srv_name: self.discovery_srv_name.as_deref(),
            client_transport_security: RenderedTls::from(&self.client_tls),
            peer_transport_security: RenderedTls::from(&self.peer_tls),
            quota_backend_bytes: self.quota_backend_bytes,
            auto_compaction_mode: self.auto_compaction_mode,
            auto_compaction_retention: self.auto_compaction_retention.as_deref().map(str::trim),
            snapshot_count: self.snapshot_count,
            heartbeat_interval: self.heartbeat_interval,
            election_timeout: self.election_timeout,
            listen_metrics_urls: (!self.listen_metrics_urls.is_empty())
                .then(|| join(&self.listen_metrics_urls)),
            logger: "zap",
            log_level: self.log_level,
            extra,
        };
        let body = serde_yaml_ng::to_string(&rendered)
            .map_err(|e| invalid("extra", format!("cannot render the file: {e}")))?;
        Ok(format!("{HEADER}{body}"))
    }
}

/// One DNS SRV record to publish for a member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SrvRecordSpec {
    /// Record name, e.g. `_etcd-server-ssl._tcp.example.com.`.
    pub name: String,
    /// Target host (a name with an A/AAAA record; SRV targets cannot be IP addresses).
    pub target: String,
    /// Port.
    pub port: u16,
    /// The record as a zone-file line.
    pub zone_line: String,
}

/// The SRV records `config`'s member needs under `domain`: `_etcd-server(-ssl)._tcp` for its
/// advertised peer URLs (what `discovery-srv` reads) and `_etcd-client(-ssl)._tcp` for its
/// advertised client URLs (what clients' `--discovery-srv` reads).
pub fn srv_records(
    config: &ServerConfig,
    domain: &str,
    service_name: Option<&str>,
) -> Result<Vec<SrvRecordSpec>> {
    check_domain("srv domain", domain)?;
    let domain = domain.trim_end_matches('.');
    let suffix = service_name.map(|n| format!("-{n}")).unwrap_or_default();
    let mut out = Vec::new();
    for (kind, option, urls) in [
        (
            "server",
            "initial_advertise_peer_urls",
            config.effective_advertise_peer_urls(),
        ),
        (
            "client",
            "advertise_client_urls",
            config.effective_advertise_client_urls(),
        ),
    ] {
        for url in check_urls(option, urls)? {
            let ssl = if url.https { "-ssl" } else { "" };
            let name = format!("_etcd-{kind}{ssl}{suffix}._tcp.{domain}.");
            let target = format!("{}.", url.host.trim_end_matches('.'));
            out.push(SrvRecordSpec {
                zone_line: format!("{name} 300 IN SRV 0 0 {} {target}", url.port),
                name,
                target,
                port: url.port,
            });
        }
    }
    Ok(out)
}

/// What [`write_server_config`] should do.
#[derive(Debug, Clone)]
pub struct ServerConfigRequest {
    /// The file (etcd's `--config-file`).
    pub path: PathBuf,
    /// The settings.
    pub config: ServerConfig,
    /// Report what would change, write nothing.
    pub check_mode: bool,
}

/// What [`write_server_config`] did. The file holds paths, never key material, so its text
/// is safe to show.
#[derive(Debug, Clone, Serialize)]
pub struct ServerConfigResult {
    /// Whether the file changed (or would, in check mode).
    pub changed: bool,
    /// The file.
    pub path: String,
    /// Its text before (`None` when it did not exist).
    pub before: Option<String>,
    /// Its text now (or as it would be).
    pub after: String,
    /// Its mode before, in octal (`None` when it did not exist).
    pub mode_before: Option<String>,
    /// Whether this was check mode.
    pub check_mode: bool,
}

fn io(operation: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::FileIo {
        operation,
        path,
        source,
    }
}

/// Reads the current file: text and mode, `None` when absent.
fn read_current(path: &Path) -> Result<Option<(String, std::fs::Metadata)>> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path)(e)),
    };
    if !meta.is_file() || meta.len() > MAX_FILE {
        return Err(invalid(
            "path",
            format!(
                "'{}' is not a regular file of at most 1 MiB; is it etcd's config file?",
                path.display()
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(io("read", path))?;
    Ok(Some((text, meta)))
}

/// Writes etcd's config file when its content (or mode) differs; idempotent. In check mode
/// only reports.
pub fn write_server_config(request: &ServerConfigRequest) -> Result<ServerConfigResult> {
    let after = request.config.render()?;
    let current = read_current(&request.path)?;
    let mode_before = current
        .as_ref()
        .map(|(_, meta)| meta.permissions().mode() & 0o7777);
    let same_text = current.as_ref().is_some_and(|(text, _)| text == &after);
    let changed = !same_text || mode_before != Some(SERVER_CONFIG_MODE);
    if changed && !request.check_mode {
        if same_text {
            std::fs::set_permissions(
                &request.path,
                std::fs::Permissions::from_mode(SERVER_CONFIG_MODE),
            )
            .map_err(io("chmod", &request.path))?;
        } else {
            write_file_atomically(
                &request.path,
                after.as_bytes(),
                SERVER_CONFIG_MODE,
                current.as_ref().map(|(_, meta)| meta),
            )?;
        }
    }
    Ok(ServerConfigResult {
        changed,
        path: request.path.display().to_string(),
        before: current.map(|(text, _)| text),
        after,
        mode_before: mode_before.map(|m| format!("{m:04o}")),
        check_mode: request.check_mode,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn member(name: &str, n: u16) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            data_dir: format!("/var/lib/etcd-{name}").into(),
            listen_client_urls: vec![format!("http://10.0.0.{n}:2379")],
            listen_peer_urls: vec![format!("http://10.0.0.{n}:2380")],
            initial_cluster: vec![
                "a=http://10.0.0.1:2380".into(),
                "b=http://10.0.0.2:2380".into(),
            ],
            initial_cluster_state: Some(ClusterState::New),
            initial_cluster_token: Some("tok".into()),
            ..Default::default()
        }
    }

    fn error(config: &ServerConfig) -> String {
        let e = config.validate().unwrap_err().to_string();
        assert_eq!(e.lines().count(), 1, "one line: {e}");
        e
    }

    #[test]
    fn renders_etcd_key_names() {
        let mut config = member("a", 1);
        config.client_tls = TransportSecurity {
            cert_file: Some("/etc/etcd/a.crt".into()),
            key_file: Some("/etc/etcd/a.key".into()),
            trusted_ca_file: Some("/etc/etcd/ca.crt".into()),
            client_cert_auth: true,
        };
        config.listen_client_urls = vec!["https://0.0.0.0:2379".into()];
        config.advertise_client_urls = vec!["https://10.0.0.1:2379".into()];
        config.quota_backend_bytes = Some(8 << 30);
        config.auto_compaction_mode = Some(CompactionMode::Periodic);
        config.auto_compaction_retention = Some("1h".into());
        config.log_level = Some(LogLevel::Warn);
        config.extra = BTreeMap::from([
            ("enable-v2".into(), "false".into()),
            ("max-txn-ops".into(), "256".into()),
        ]);
        let text = config.render().unwrap();
        for line in [
            "name: a\n",
            "data-dir: /var/lib/etcd-a\n",
            "listen-client-urls: https://0.0.0.0:2379\n",
            "advertise-client-urls: https://10.0.0.1:2379\n",
            "initial-advertise-peer-urls: http://10.0.0.1:2380\n",
            "initial-cluster: a=http://10.0.0.1:2380,b=http://10.0.0.2:2380\n",
            "initial-cluster-state: new\n",
            "client-transport-security:\n  cert-file: /etc/etcd/a.crt\n  key-file: /etc/etcd/a.key\n  trusted-ca-file: /etc/etcd/ca.crt\n  client-cert-auth: true\n",
            "quota-backend-bytes: 8589934592\n",
            "auto-compaction-mode: periodic\n",
            "auto-compaction-retention: 1h\n",
            "logger: zap\n",
            "log-level: warn\n",
            "enable-v2: false\n",
            "max-txn-ops: 256\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("peer-transport-security"), "{text}");
        // The YAML parses back, each key once.
        let parsed: BTreeMap<String, serde_yaml_ng::Value> =
            serde_yaml_ng::from_str(&text).unwrap();
        assert!(parsed.contains_key("enable-v2") && !parsed.contains_key("snapshot-count"));
    }

    #[test]
    fn bad_combinations_are_refused_in_one_line() {
        let mut c = member("a", 1);
        c.listen_client_urls = vec!["https://10.0.0.1:2379".into()];
        assert!(error(&c).contains("is https but no certificate is set"));

        let mut c = member("a", 1);
        c.initial_advertise_peer_urls = vec!["https://10.0.0.1:2380".into()];
        c.peer_tls.cert_file = Some("/p.crt".into());
        assert!(error(&c).contains("give both peer_cert_file and peer_key_file"));

        let mut c = member("a", 1);
        c.discovery_srv = Some("example.com".into());
        assert!(error(&c).contains("not both"));

        let mut c = member("a", 1);
        c.initial_cluster.clear();
        assert!(error(&c).contains("needs initial_cluster"));

        let c = member("c", 3);
        let e = error(&c);
        assert!(
            e.contains("member 'c' is not in it; add c=http://10.0.0.3:2380"),
            "{e}"
        );

        let mut c = member("a", 1);
        c.initial_cluster = vec!["a=http://10.0.0.9:2380".into()];
        assert!(error(&c).contains("differ from the advertised peer URLs"));

        let mut c = member("a", 1);
        c.initial_cluster = vec!["a http://10.0.0.1:2380".into()];
        assert!(error(&c).contains("is not NAME=PEER_URL"));

        let mut c = member("a", 1);
        c.listen_peer_urls = vec!["tcp://10.0.0.1:2380".into()];
        assert!(error(&c).contains("scheme 'tcp'"));

        let mut c = member("a", 1);
        c.listen_client_urls = vec!["http://10.0.0.1".into()];
        assert!(error(&c).contains("has no port"));

        let mut c = member("a", 1);
        c.listen_client_urls = vec!["http://0.0.0.0:2379".into()];
        assert!(error(&c).contains("bind all addresses"));

        let mut c = member("a", 1);
        c.client_tls.client_cert_auth = true;
        assert!(error(&c).contains("needs client_trusted_ca_file"));

        let mut c = member("a", 1);
        c.data_dir = "var/lib/etcd".into();
        assert!(error(&c).contains("absolute"));

        let mut c = member("a", 1);
        c.extra.insert("initial-cluster".into(), "x".into());
        assert!(error(&c).contains("is set through initial_cluster"));

        let mut c = member("a", 1);
        c.auto_compaction_mode = Some(CompactionMode::Revision);
        c.auto_compaction_retention = Some("1h".into());
        assert!(error(&c).contains("does not suit mode revision"));

        let mut c = member("a", 1);
        c.initial_cluster.clear();
        c.initial_cluster_state = None;
        c.discovery_srv_name = Some("x".into());
        assert!(error(&c).contains("only means something with discovery_srv"));
    }

    #[test]
    fn state_names_deserialize_and_bad_ones_are_named() {
        let ok: ClusterState = serde_json::from_str("\"existing\"").unwrap();
        assert_eq!(ok, ClusterState::Existing);
        let bad = serde_json::from_str::<ClusterState>("\"old\"").unwrap_err();
        assert!(bad.to_string().contains("unknown variant `old`"), "{bad}");
    }

    #[test]
    fn steady_state_and_srv_bootstrap_are_valid() {
        let mut c = member("a", 1);
        c.initial_cluster.clear();
        c.initial_cluster_state = None;
        c.initial_cluster_token = None;
        let text = c.render().unwrap();
        assert!(!text.contains("initial-cluster"), "{text}");
        c.discovery_srv = Some("example.com.".into());
        c.initial_cluster_state = Some(ClusterState::New);
        let text = c.render().unwrap();
        assert!(text.contains("discovery-srv: example.com\n"), "{text}");
    }

    #[test]
    fn srv_records_follow_the_schemes() {
        let mut c = member("a", 1);
        c.listen_peer_urls = vec!["https://etcd-a.example.com:2380".into()];
        c.initial_cluster = vec!["a=https://etcd-a.example.com:2380".into()];
        c.peer_tls.cert_file = Some("/p.crt".into());
        c.peer_tls.key_file = Some("/p.key".into());
        let records = srv_records(&c, "example.com", None).unwrap();
        let lines: Vec<&str> = records.iter().map(|r| r.zone_line.as_str()).collect();
        assert_eq!(
            lines,
            [
                "_etcd-server-ssl._tcp.example.com. 300 IN SRV 0 0 2380 etcd-a.example.com.",
                "_etcd-client._tcp.example.com. 300 IN SRV 0 0 2379 10.0.0.1.",
            ]
        );
    }

    #[test]
    fn writes_once_with_mode_0600_and_honours_check_mode() {
        let dir =
            std::env::temp_dir().join(format!("etcdops-server-config-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("conf/etcd.yaml");
        let mut request = ServerConfigRequest {
            path: path.clone(),
            config: member("a", 1),
            check_mode: true,
        };
        let checked = write_server_config(&request).unwrap();
        assert!(checked.changed && checked.before.is_none());
        assert!(!path.exists(), "check mode wrote the file");
        request.check_mode = false;
        let written = write_server_config(&request).unwrap();
        assert!(written.changed);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written.after);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        let again = write_server_config(&request).unwrap();
        assert!(!again.changed);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let fixed = write_server_config(&request).unwrap();
        assert!(fixed.changed);
        assert_eq!(fixed.mode_before.as_deref(), Some("0644"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        request.config.snapshot_count = Some(5000);
        let updated = write_server_config(&request).unwrap();
        assert!(updated.changed);
        assert!(updated.after.contains("snapshot-count: 5000"));
        assert!(!updated.before.unwrap().contains("snapshot-count"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
