//! The endpoint forms etcdctl accepts, read as etcd's Go client (`client/v3`'s endpoint
//! translation) and Go's `net.Dial` read them:
//! - `HOST:PORT`: TLS when any TLS setting is given, else plain;
//! - `http://HOST:PORT` (plain, even with TLS settings) and `https://HOST:PORT`; of the URL
//!   only the host and port count, as etcd's client takes only the URL's host (a path, a
//!   query or a fragment is ignored); credentials before '@', which etcd's client would
//!   ignore too, are refused, so that a password meant for etcd is not silently dropped;
//! - `unix://PATH`, `unix:PATH`, `unix:///ABSOLUTE` (TLS when any TLS setting is given) and
//!   `unixs://PATH` (TLS): a Unix socket, its server name the file name without a `:PORT`;
//! - HOST as `net.Dial` reads it: an empty host is the local system (`:2379`, as
//!   etcd's compaction recipe writes it: 127.0.0.1, where Go's dial of the IPv4 wildcard
//!   lands); brackets may hold any host (`[127.0.0.1]:2379`, which kubeadm 1.13–1.15 wrote
//!   into etcd's liveness probe, is 127.0.0.1); an IPv6 address must be in brackets.
//!
//! Refused, as etcdctl fails to dial them: no port, a port out of range, another scheme.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// Where an endpoint is, and whether it is spoken to over TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Address {
    /// A TCP host and port.
    Tcp { tls: bool, host: Host, port: u16 },
    /// A Unix socket.
    Unix { tls: bool, path: String },
}

/// A TCP endpoint's host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    /// An IP address.
    Ip(IpAddr),
    /// A name to resolve, lower-cased.
    Name(String),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Host::Name(name) => f.write_str(name),
        }
    }
}

/// The endpoint in its one spelling: `http(s)://HOST:PORT` or `unix(s)://PATH`. Parsing it
/// again with the same TLS settings gives the same address.
impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Tcp { tls, host, port } => {
                let scheme = if *tls { "https" } else { "http" };
                write!(f, "{scheme}://{host}:{port}")
            }
            Address::Unix { tls, path } => {
                let scheme = if *tls { "unixs" } else { "unix" };
                write!(f, "{scheme}://{path}")
            }
        }
    }
}

impl Address {
    /// Whether the connection is TLS.
    pub(crate) fn tls(&self) -> bool {
        match self {
            Address::Tcp { tls, .. } | Address::Unix { tls, .. } => *tls,
        }
    }

    /// The host to check a server certificate against: the TCP host (an IP address without
    /// brackets), or a socket's file name without its `:PORT` (etcd's client's convention,
    /// so that `unixs://localhost:2379` checks `localhost`).
    pub(crate) fn certificate_host(&self) -> String {
        match self {
            Address::Tcp {
                host: Host::Ip(ip), ..
            } => ip.to_string(),
            Address::Tcp {
                host: Host::Name(name),
                ..
            } => name.clone(),
            Address::Unix { path, .. } => {
                let file = path.rsplit('/').next().unwrap_or(path);
                file.split_once(':')
                    .map_or(file, |(name, _)| name)
                    .to_string()
            }
        }
    }
}

/// Whether an endpoint in its one spelling (see [`Address`]'s `Display`) is spoken to over
/// TLS.
pub(crate) fn spelled_tls(endpoint: &str) -> bool {
    endpoint.starts_with("https://") || endpoint.starts_with("unixs://")
}

/// Why an endpoint holding user-info is refused.
const CREDENTIALS: &str =
    "credentials in the URL are not accepted; give the user and password separately";

/// Reads an endpoint as etcdctl does; `tls_configured` decides the forms whose TLS depends
/// on the settings. The error is the reason, in one line, with the way to write it.
pub(crate) fn parse(endpoint: &str, tls_configured: bool) -> Result<Address, String> {
    let endpoint = endpoint.trim();
    // etcd's client looks for these prefixes first, case-sensitively.
    for (prefix, tls) in [("unixs:", true), ("unix:", tls_configured)] {
        if let Some(rest) = endpoint.strip_prefix(prefix) {
            // `unix:///abs` is `/abs`, `unix://rel` and `unix:rel` are `rel`.
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err("it has no socket path; write it as unix://PATH".into());
            }
            return Ok(Address::Unix {
                tls,
                path: path.to_string(),
            });
        }
    }
    let (tls, authority) = match endpoint.split_once("://") {
        Some((scheme, rest)) => {
            let tls = match scheme.to_ascii_lowercase().as_str() {
                "https" => true,
                "http" => false,
                _ => {
                    return Err(format!(
                        "scheme '{scheme}' is not supported; use http://, https://, unix:// or unixs://"
                    ));
                }
            };
            // An '@' anywhere is taken for credentials (refused below), even past a '/', '?'
            // or '#': a password may hold them, and its first part must not be read (and
            // shown) as a host or a port.
            if rest.contains('@') {
                return Err(CREDENTIALS.into());
            }
            // Only the URL's host counts: its path, query and fragment are ignored as etcd's
            // client ignores them.
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            (tls, &rest[..end])
        }
        // A trailing '/' after HOST:PORT is forgiven.
        None => (tls_configured, endpoint.trim_end_matches('/')),
    };
    if authority.is_empty() {
        return Err("it has no host and port; write it as https://HOST:PORT".into());
    }
    // etcd's client would ignore them (and connect without): refused, never echoed, so that
    // a password meant for etcd is not silently dropped.
    if authority.contains('@') {
        return Err(CREDENTIALS.into());
    }
    let (host, port) = split_host_port(authority)?;
    Ok(Address::Tcp {
        tls,
        host: parse_host(host)?,
        port: parse_port(port)?,
    })
}

/// `HOST:PORT` split as Go's `net.SplitHostPort`: brackets hold any host, and an unbracketed
/// host has no ':'.
fn split_host_port(authority: &str) -> Result<(&str, &str), String> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or("its '[' has no ']'; write an IPv6 address as [::1]:2379")?;
        return match after.strip_prefix(':') {
            Some(port) => Ok((host, port)),
            None if after.is_empty() => Err(no_port()),
            None => Err(format!(
                "'{after}' after ']' is not a port; write it as [HOST]:PORT"
            )),
        };
    }
    let (host, port) = authority.rsplit_once(':').ok_or_else(no_port)?;
    if host.contains(':') {
        return Err(
            "it has too many colons; write an IPv6 address in brackets, as [::1]:2379".into(),
        );
    }
    Ok((host, port))
}

fn no_port() -> String {
    "it has no port; etcd clients usually use :2379".into()
}

fn parse_host(host: &str) -> Result<Host, String> {
    if host.is_empty() {
        // Go dials an empty host as the IPv4 wildcard, which reaches the local system.
        return Ok(Host::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    let bad = |c: char| c.is_whitespace() || c.is_control() || "/\\@?#%[]:".contains(c);
    if host.chars().any(bad) {
        return Err(format!("'{host}' is not a host name or an IP address"));
    }
    Ok(Host::Name(host.to_ascii_lowercase()))
}

fn parse_port(port: &str) -> Result<u16, String> {
    if port.is_empty() {
        return Err(no_port());
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{port}' is not a port number"));
    }
    // Leading zeros are allowed, as Go allows them.
    let digits = port.trim_start_matches('0');
    if digits.is_empty() {
        return Err("port 0 cannot be dialled".into());
    }
    digits
        .parse::<u16>()
        .map_err(|_| format!("port {port} is out of range (1 to 65535)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(endpoint: &str) -> String {
        parse(endpoint, false).map(|a| a.to_string()).unwrap()
    }

    fn with_tls(endpoint: &str) -> String {
        parse(endpoint, true).map(|a| a.to_string()).unwrap()
    }

    fn refused(endpoint: &str) -> String {
        parse(endpoint, false).unwrap_err()
    }

    #[test]
    fn host_and_port_take_tls_from_the_settings() {
        assert_eq!(plain("127.0.0.1:2379"), "http://127.0.0.1:2379");
        assert_eq!(with_tls("127.0.0.1:2379"), "https://127.0.0.1:2379");
        assert_eq!(
            plain("etcd-0.Example.com:2379"),
            "http://etcd-0.example.com:2379"
        );
        assert_eq!(plain("127.0.0.1:2379/"), "http://127.0.0.1:2379");
    }

    #[test]
    fn the_scheme_decides_tls_whatever_the_settings() {
        assert_eq!(with_tls("http://10.0.0.1:2379"), "http://10.0.0.1:2379");
        assert_eq!(plain("https://10.0.0.1:2379"), "https://10.0.0.1:2379");
        assert_eq!(plain("HTTPS://etcd-0:2379"), "https://etcd-0:2379");
    }

    #[test]
    fn an_empty_host_is_the_local_system_as_go_dials_it() {
        assert_eq!(plain(":2379"), "http://127.0.0.1:2379");
        assert_eq!(with_tls(":2379"), "https://127.0.0.1:2379");
        assert_eq!(plain("http://:2379"), "http://127.0.0.1:2379");
        assert_eq!(plain("https://:2379"), "https://127.0.0.1:2379");
    }

    #[test]
    fn brackets_may_hold_an_ipv4_address_or_a_name() {
        assert_eq!(plain("https://[127.0.0.1]:2379"), "https://127.0.0.1:2379");
        assert_eq!(plain("[127.0.0.1]:2379"), "http://127.0.0.1:2379");
        assert_eq!(plain("[localhost]:2379"), "http://localhost:2379");
    }

    #[test]
    fn ipv6_addresses_are_bracketed_and_in_their_short_form() {
        assert_eq!(plain("https://[::1]:2379"), "https://[::1]:2379");
        assert_eq!(plain("[::]:2379"), "http://[::]:2379");
        assert_eq!(
            plain("http://[::FFFF:127.0.0.1]:2379"),
            "http://[::ffff:127.0.0.1]:2379"
        );
        assert_eq!(plain("[2001:db8:0::1]:2379"), "http://[2001:db8::1]:2379");
    }

    #[test]
    fn of_a_url_only_host_and_port_count_as_for_etcdctl() {
        assert_eq!(plain("http://127.0.0.1:2379/"), "http://127.0.0.1:2379");
        assert_eq!(plain("http://127.0.0.1:2379/v3"), "http://127.0.0.1:2379");
        assert_eq!(plain("http://127.0.0.1:2379?x=1"), "http://127.0.0.1:2379");
        assert_eq!(plain("http://127.0.0.1:2379#f"), "http://127.0.0.1:2379");
    }

    #[test]
    fn credentials_in_an_endpoint_are_refused_and_never_echoed() {
        for endpoint in [
            "http://root:PW1@127.0.0.1:2379",
            "https://PW2@h:1",
            "root:PW3@h:1",
            "PW4@h:1",
            // A URL parser would end the host at '/', '?' or '#': the password's first part
            // must not be read (and shown) as a port.
            "http://root:PW5/x@127.0.0.1:2379",
            "https://root:PW6#x@h:1",
            "https://root:PW7?x@h:1",
        ] {
            let reason = refused(endpoint);
            assert_eq!(
                reason,
                "credentials in the URL are not accepted; give the user and password separately"
            );
            assert!(!reason.contains("PW"), "{endpoint}");
        }
    }

    #[test]
    fn leading_zeros_of_a_port_are_allowed() {
        assert_eq!(plain("127.0.0.1:02379"), "http://127.0.0.1:2379");
    }

    #[test]
    fn unix_sockets_in_each_of_etcds_spellings() {
        assert_eq!(plain("unix:///run/etcd.sock"), "unix:///run/etcd.sock");
        assert_eq!(plain("unix://localhost:2379"), "unix://localhost:2379");
        assert_eq!(plain("unix:localhost:2379"), "unix://localhost:2379");
        assert_eq!(with_tls("unix://localhost:2379"), "unixs://localhost:2379");
        assert_eq!(plain("unixs://localhost:2379"), "unixs://localhost:2379");
        assert_eq!(plain("unixs:///run/etcd.sock"), "unixs:///run/etcd.sock");
    }

    #[test]
    fn a_certificate_is_checked_against_the_host_or_the_socket_file_name() {
        let host = |e: &str| parse(e, false).unwrap().certificate_host();
        assert_eq!(host("https://[::1]:2379"), "::1");
        assert_eq!(host("https://[127.0.0.1]:2379"), "127.0.0.1");
        assert_eq!(host("https://etcd-0:2379"), "etcd-0");
        assert_eq!(host("unixs://localhost:2379"), "localhost");
        assert_eq!(host("unixs:///run/etcd/etcd-0.sock"), "etcd-0.sock");
    }

    #[test]
    fn the_one_spelling_reads_back_as_the_same_address() {
        for endpoint in [
            ":2379",
            "[127.0.0.1]:2379",
            "https://[::1]:2379",
            "unix:rel:1",
            "unixs:///abs",
            "etcd-0:2379",
        ] {
            for tls in [false, true] {
                let address = parse(endpoint, tls).unwrap();
                assert_eq!(parse(&address.to_string(), tls), Ok(address), "{endpoint}");
            }
        }
    }

    #[test]
    fn forms_etcdctl_cannot_dial_are_refused_with_the_reason() {
        for (endpoint, reason) in [
            (
                "127.0.0.1",
                "it has no port; etcd clients usually use :2379",
            ),
            (
                "http://127.0.0.1",
                "it has no port; etcd clients usually use :2379",
            ),
            (
                "127.0.0.1:",
                "it has no port; etcd clients usually use :2379",
            ),
            ("[::1]", "it has no port; etcd clients usually use :2379"),
            (
                "http://",
                "it has no host and port; write it as https://HOST:PORT",
            ),
            ("", "it has no host and port; write it as https://HOST:PORT"),
            ("h:99999", "port 99999 is out of range (1 to 65535)"),
            ("h:0", "port 0 cannot be dialled"),
            ("h:http", "'http' is not a port number"),
            ("h:-1", "'-1' is not a port number"),
            (
                "::1:2379",
                "it has too many colons; write an IPv6 address in brackets, as [::1]:2379",
            ),
            (
                "http://[::1:2379",
                "its '[' has no ']'; write an IPv6 address as [::1]:2379",
            ),
            (
                "[::1]x:2379",
                "'x:2379' after ']' is not a port; write it as [HOST]:PORT",
            ),
            (
                "not a url:1",
                "'not a url' is not a host name or an IP address",
            ),
            (
                "ftp://h:1",
                "scheme 'ftp' is not supported; use http://, https://, unix:// or unixs://",
            ),
            (
                "dns:///h:1",
                "scheme 'dns' is not supported; use http://, https://, unix:// or unixs://",
            ),
            ("unix://", "it has no socket path; write it as unix://PATH"),
            ("unixs:", "it has no socket path; write it as unix://PATH"),
        ] {
            let got = refused(endpoint);
            assert_eq!(got, reason, "{endpoint}");
            assert!(!got.contains('\n'), "{endpoint}");
        }
    }
}
