//! DNS SRV discovery of client endpoints, as etcdctl's `--discovery-srv` does it.
//!
//! etcdctl looks up `_etcd-client-ssl._tcp.DOMAIN` (https) and `_etcd-client._tcp.DOMAIN`
//! (http); with `--discovery-srv-name NAME` the services are `_etcd-client-ssl-NAME` and
//! `_etcd-client-NAME`. It fails only when both lookups fail, and keeps the http records only
//! with insecure discovery (its default).

use std::net::{IpAddr, SocketAddr};

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;

use crate::config::SrvDiscovery;
use crate::error::{Error, Result};

/// The SRV record names asked for, https first, each with its URL scheme.
pub fn srv_record_names(discovery: &SrvDiscovery) -> Vec<(String, &'static str)> {
    let suffix = discovery
        .service_name
        .as_deref()
        .map(|n| format!("-{n}"))
        .unwrap_or_default();
    let domain = discovery.domain.trim_end_matches('.');
    let mut names = vec![(format!("_etcd-client-ssl{suffix}._tcp.{domain}."), "https")];
    if discovery.insecure {
        names.push((format!("_etcd-client{suffix}._tcp.{domain}."), "http"));
    }
    names
}

fn resolver(discovery: &SrvDiscovery) -> Result<TokioResolver> {
    let failed = |reason: String| Error::Discovery {
        domain: discovery.domain.clone(),
        looked_up: "nothing".into(),
        reason,
    };
    match &discovery.dns_server {
        Some(server) => {
            let addr: SocketAddr = server
                .parse()
                .or_else(|_| server.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                .map_err(|_| {
                    etcd_common::InvalidOption::new(
                        crate::error::DNS_SERVER,
                        format!("'{server}' is not IP or IP:PORT"),
                    )
                })?;
            let mut name_server = NameServerConfig::udp_and_tcp(addr.ip());
            for connection in &mut name_server.connections {
                connection.port = addr.port();
            }
            let config = ResolverConfig::from_name_servers(vec![name_server]);
            TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
                .build()
                .map_err(|e| failed(e.to_string()))
        }
        None => TokioResolver::builder_tokio()
            .map_err(|e| {
                failed(format!(
                    "cannot read the system resolver configuration: {e}"
                ))
            })?
            .build()
            .map_err(|e| failed(e.to_string())),
    }
}

/// Looks up the SRV records and returns endpoint URLs (`https://host:port`), https first,
/// ordered by priority then weight within each service.
pub async fn discover_endpoints(discovery: &SrvDiscovery) -> Result<Vec<String>> {
    let resolver = resolver(discovery)?;
    let names = srv_record_names(discovery);
    let mut endpoints = Vec::new();
    let mut failures = Vec::new();
    for (name, scheme) in &names {
        match resolver.srv_lookup(name.as_str()).await {
            Ok(lookup) => {
                let mut records: Vec<_> = lookup
                    .answers()
                    .iter()
                    .filter_map(|record| match &record.data {
                        RData::SRV(srv) => Some((
                            srv.priority,
                            std::cmp::Reverse(srv.weight),
                            srv.target.to_utf8().trim_end_matches('.').to_string(),
                            srv.port,
                        )),
                        _ => None,
                    })
                    .collect();
                records.sort();
                if records.is_empty() {
                    failures.push(format!("{name}: no SRV records"));
                }
                for (_, _, target, port) in records {
                    let host = if target.contains(':') {
                        format!("[{target}]")
                    } else {
                        target
                    };
                    endpoints.push(format!("{scheme}://{host}:{port}"));
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    if endpoints.is_empty() {
        return Err(Error::Discovery {
            domain: discovery.domain.clone(),
            looked_up: names
                .iter()
                .map(|(n, _)| n.trim_end_matches('.'))
                .collect::<Vec<_>>()
                .join(" and "),
            reason: failures.join("; "),
        });
    }
    Ok(endpoints)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_follow_etcdctl() {
        let mut d = SrvDiscovery {
            domain: "example.com".into(),
            service_name: None,
            insecure: true,
            dns_server: None,
        };
        let names: Vec<_> = srv_record_names(&d).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "_etcd-client-ssl._tcp.example.com.",
                "_etcd-client._tcp.example.com."
            ]
        );
        d.service_name = Some("prod".into());
        d.insecure = false;
        let names: Vec<_> = srv_record_names(&d).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["_etcd-client-ssl-prod._tcp.example.com."]);
    }
}
