//! Checking a [`ServerConfig`] as a whole before it is written: names, paths, URLs and the
//! TLS their schemes need, the bootstrap method, and the tuning settings.

use super::{CompactionMode, MANAGED_KEYS, ServerConfig, TransportSecurity};
use crate::error::{Error, Result};
use etcd_common::{InvalidOption, OptionId};

pub(super) use etcd_common::options::ADVERTISE_CLIENT_URLS;
use etcd_common::options::{
    AUTO_COMPACTION_RETENTION, DATA_DIR, DISCOVERY_SRV, DISCOVERY_SRV_NAME, ELECTION_TIMEOUT,
};
pub(super) use etcd_common::options::{EXTRA, INITIAL_ADVERTISE_PEER_URLS};
use etcd_common::options::{
    INITIAL_CLUSTER, INITIAL_CLUSTER_STATE, INITIAL_CLUSTER_TOKEN, LISTEN_CLIENT_URLS,
    LISTEN_METRICS_URLS, LISTEN_PEER_URLS, NAME,
};

pub(super) fn invalid(option: OptionId, reason: impl Into<String>) -> Error {
    InvalidOption::new(option, reason).into()
}

/// Bad TLS settings of one side (`client TLS`, `peer TLS`): no single option is the hint.
fn invalid_tls(side: &'static str, reason: impl Into<String>) -> Error {
    InvalidOption::input(side, reason).into()
}

/// A parsed URL of the config: scheme, host, port.
pub(super) struct CheckedUrl {
    pub(super) https: bool,
    pub(super) host: String,
    pub(super) port: u16,
    unspecified: bool,
}

fn check_url(option: OptionId, text: &str) -> Result<CheckedUrl> {
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

pub(super) fn check_urls(option: OptionId, urls: &[String]) -> Result<Vec<CheckedUrl>> {
    urls.iter().map(|u| check_url(option, u)).collect()
}

fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_ascii_lowercase()
}

fn check_tls(
    side: &'static str,
    prefix: &str,
    tls: &TransportSecurity,
    urls: &[(OptionId, &[CheckedUrl], &[String])],
) -> Result<()> {
    if tls.cert_file.is_some() != tls.key_file.is_some() {
        return Err(invalid_tls(
            side,
            format!("give both {prefix}_cert_file and {prefix}_key_file, or neither"),
        ));
    }
    if tls.client_cert_auth && tls.trusted_ca_file.is_none() {
        return Err(invalid_tls(
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
                *option,
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
            return Err(invalid_tls(
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
pub(super) fn parse_initial_cluster(entries: &[String]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for entry in entries.iter().flat_map(|e| e.split(',')) {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let (name, url) = entry.split_once('=').ok_or_else(|| {
            invalid(
                INITIAL_CLUSTER,
                format!("'{entry}' is not NAME=PEER_URL (e.g. etcd-1=https://10.0.0.1:2380)"),
            )
        })?;
        if name.trim().is_empty() {
            return Err(invalid(
                INITIAL_CLUSTER,
                format!("'{entry}' has no member name before '='"),
            ));
        }
        check_url(INITIAL_CLUSTER, url)?;
        out.push((name.trim().to_string(), url.trim().to_string()));
    }
    Ok(out)
}

/// Whether `domain` is a DNS domain; the reason it is not, else.
pub(super) fn check_domain(domain: &str) -> std::result::Result<(), String> {
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
        Err(format!(
            "'{domain}' is not a DNS domain (e.g. example.com, without scheme or port)"
        ))
    }
}

impl ServerConfig {
    /// Checks the settings as a whole; the first problem found, in one line naming the option.
    pub fn validate(&self) -> Result<()> {
        self.check_member()?;
        self.check_urls_and_tls()?;
        self.check_bootstrap()?;
        self.check_tuning()
    }

    /// The member's name and data dir, and that it listens somewhere.
    fn check_member(&self) -> Result<()> {
        let name = self.name.trim();
        if name.is_empty() {
            return Err(invalid(
                NAME,
                "give the member's name (etcd's name setting)",
            ));
        }
        if name.contains(['=', ',']) || name.chars().any(char::is_whitespace) {
            return Err(invalid(
                NAME,
                format!(
                    "'{name}' may not contain '=', ',' or spaces (it goes into initial-cluster)"
                ),
            ));
        }
        if !self.data_dir.is_absolute() {
            return Err(invalid(
                DATA_DIR,
                format!(
                    "'{}' must be an absolute path (e.g. /var/lib/etcd)",
                    self.data_dir.display()
                ),
            ));
        }
        if self.listen_client_urls.is_empty() {
            return Err(invalid(
                LISTEN_CLIENT_URLS,
                "give at least one, e.g. https://10.0.0.1:2379",
            ));
        }
        if self.listen_peer_urls.is_empty() {
            return Err(invalid(
                LISTEN_PEER_URLS,
                "give at least one, e.g. https://10.0.0.1:2380",
            ));
        }
        Ok(())
    }

    /// Every URL, and the TLS each scheme needs.
    fn check_urls_and_tls(&self) -> Result<()> {
        let listen_client = check_urls(LISTEN_CLIENT_URLS, &self.listen_client_urls)?;
        let listen_peer = check_urls(LISTEN_PEER_URLS, &self.listen_peer_urls)?;
        let advertise_client = check_urls(
            ADVERTISE_CLIENT_URLS,
            self.effective_advertise_client_urls(),
        )?;
        let advertise_peer = check_urls(
            INITIAL_ADVERTISE_PEER_URLS,
            self.effective_advertise_peer_urls(),
        )?;
        let metrics = check_urls(LISTEN_METRICS_URLS, &self.listen_metrics_urls)?;
        for (option, given, urls) in [
            (
                ADVERTISE_CLIENT_URLS,
                self.advertise_client_urls.is_empty(),
                &advertise_client,
            ),
            (
                INITIAL_ADVERTISE_PEER_URLS,
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
                (LISTEN_CLIENT_URLS, &listen_client, &self.listen_client_urls),
                (
                    ADVERTISE_CLIENT_URLS,
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
                (LISTEN_PEER_URLS, &listen_peer, &self.listen_peer_urls),
                (
                    INITIAL_ADVERTISE_PEER_URLS,
                    &advertise_peer,
                    self.effective_advertise_peer_urls(),
                ),
            ],
        )?;
        // Metrics URLs use the client certificate when https.
        if metrics.iter().any(|m| m.https) && self.client_tls.cert_file.is_none() {
            return Err(invalid(
                LISTEN_METRICS_URLS,
                "https metrics URLs use the client certificate; give client_cert_file and client_key_file, or use http://",
            ));
        }
        Ok(())
    }

    /// How the first start finds the other members: initial_cluster or DNS SRV discovery.
    fn check_bootstrap(&self) -> Result<()> {
        let name = self.name.trim();
        let bootstrap_with_list = !self.initial_cluster.is_empty();
        match (bootstrap_with_list, &self.discovery_srv) {
            (true, Some(_)) => {
                return Err(invalid(
                    INITIAL_CLUSTER,
                    "give initial_cluster or discovery_srv, not both: etcd refuses two bootstrap methods",
                ));
            }
            (false, None) if self.initial_cluster_state.is_some() => {
                return Err(invalid(
                    INITIAL_CLUSTER_STATE,
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
                    INITIAL_CLUSTER,
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
                    INITIAL_CLUSTER,
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
                            INITIAL_CLUSTER,
                            format!("peer URL {u} is given for both '{other}' and '{n}'"),
                        ));
                    }
                }
            }
        }
        if let Some(domain) = &self.discovery_srv {
            check_domain(domain).map_err(|reason| invalid(DISCOVERY_SRV, reason))?;
        }
        if let Some(service) = &self.discovery_srv_name {
            if self.discovery_srv.is_none() {
                return Err(invalid(
                    DISCOVERY_SRV_NAME,
                    "only means something with discovery_srv",
                ));
            }
            check_domain(service).map_err(|reason| invalid(DISCOVERY_SRV_NAME, reason))?;
        }
        Ok(())
    }

    /// Cluster token, compaction, timing and extra keys.
    fn check_tuning(&self) -> Result<()> {
        if let Some(token) = &self.initial_cluster_token {
            if token.trim().is_empty() || token.chars().any(char::is_whitespace) {
                return Err(invalid(
                    INITIAL_CLUSTER_TOKEN,
                    "must be a non-empty word (the same on every initial member)",
                ));
            }
        }
        if self.auto_compaction_retention.is_some() && self.auto_compaction_mode.is_none() {
            return Err(invalid(
                AUTO_COMPACTION_RETENTION,
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
                    retention.parse::<u64>().is_ok()
                        || etcd_common::parse_duration(retention).is_ok()
                }
            };
            if !ok {
                return Err(invalid(
                    AUTO_COMPACTION_RETENTION,
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
                    ELECTION_TIMEOUT,
                    format!(
                        "{election} ms is under 5 heartbeat intervals ({heartbeat} ms); etcd recommends 10"
                    ),
                ));
            }
        }
        for key in self.extra.keys() {
            if let Some((_, option)) = MANAGED_KEYS.iter().find(|(k, _)| k == key) {
                return Err(invalid(
                    EXTRA,
                    format!("'{key}' is set through {option}, not extra"),
                ));
            }
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            {
                return Err(invalid(
                    EXTRA,
                    format!(
                        "'{key}' is not an etcd config key (lower-case words and digits joined by '-')"
                    ),
                ));
            }
        }
        Ok(())
    }
}
