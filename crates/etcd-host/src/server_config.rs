//! etcd's own configuration file (the YAML that `etcd --config-file` reads, etcd 3.4 and
//! 3.5): a typed [`ServerConfig`], checked as a whole before anything is written
//! ([`ServerConfig::validate`]), rendered with etcd's key names ([`ServerConfig::render`]) and
//! written idempotently ([`write_server_config`]): the file changes only when its content
//! would, through a temporary file, fsync and rename, mode 0600. The DNS SRV records a member
//! needs are derived from the same settings ([`srv_records`]).
//!
//! ```
//! use etcd_host::{ClusterState, ServerConfig};
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

use crate::error::{Error, Result, io};
use etcd_common::write_file_atomically;
use validate::{check_domain, check_urls, invalid, parse_initial_cluster};

/// Mode of the written file.
pub const SERVER_CONFIG_MODE: u32 = 0o600;
/// Larger existing files are refused (a real one is a few KiB).
const MAX_FILE: u64 = 1 << 20;
/// The first line of every written file.
const HEADER: &str = "# etcd configuration (etcd's config file), written by etcdops / etcd.core.etcd_config.\n# Local edits are overwritten on the next run.\n";

/// `initial-cluster-state`: a member of a new cluster, or one joining a running cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClusterState {
    /// Bootstrapping a new cluster with the other initial members.
    New,
    /// Joining a running cluster (after `member add`).
    Existing,
}

/// `auto-compaction-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompactionMode {
    /// Keep a time window (retention like `1h`, or a number of hours).
    Periodic,
    /// Keep a number of revisions.
    Revision,
}

/// etcd's log levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
            .map_err(|e| invalid(validate::EXTRA, format!("cannot render the file: {e}")))?;
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
    check_domain(domain)
        .map_err(|reason| Error::from(etcd_common::InvalidOption::input("srv domain", reason)))?;
    let domain = domain.trim_end_matches('.');
    let suffix = service_name.map(|n| format!("-{n}")).unwrap_or_default();
    let mut out = Vec::new();
    for (kind, option, urls) in [
        (
            "server",
            validate::INITIAL_ADVERTISE_PEER_URLS,
            config.effective_advertise_peer_urls(),
        ),
        (
            "client",
            validate::ADVERTISE_CLIENT_URLS,
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

use etcd_common::options::PATH;

/// Reads the current file: text and mode, `None` when absent.
fn read_current(path: &Path) -> Result<Option<(String, std::fs::Metadata)>> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path)(e)),
    };
    if !meta.is_file() || meta.len() > MAX_FILE {
        return Err(invalid(
            PATH,
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

mod validate;

#[cfg(test)]
mod tests;
