//! The `certificates` finding: how many days each certificate in play has left (the client
//! certificate given, every member's serving certificate as its TLS handshake shows it, and
//! certificates on disk that a caller adds), and whether a member's certificate names the
//! hosts of the client URLs it advertises.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;

use rustls_pki_types::CertificateDer;
use serde::Serialize;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::time::ASN1Time;

use super::{CheckOptions, Finding, Severity, finding};
use crate::client::Client;
use crate::cluster::ClusterView;
use crate::config::PemSource;
use crate::tls;

const DAY: i64 = 86_400;

/// Where a checked certificate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CertificateRole {
    /// The client certificate this check connects with.
    Client,
    /// What a member serves on its client URL (read from a TLS handshake).
    Serving,
    /// A certificate file on this host (the platform's server, peer and client certificates).
    OnDisk,
}

/// One certificate looked at, or why it could not be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CertificateStatus {
    /// Where it comes from.
    pub role: CertificateRole,
    /// The file, inline PEM, or the endpoint that served it.
    pub source: String,
    /// The member that serves it (serving certificates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// Its subject.
    pub subject: String,
    /// When it expires (UTC).
    pub not_after: String,
    /// Whole days left until then (negative: expired that many days ago).
    pub days_left: i64,
    /// Its subjectAltNames (`DNS:name`, `IP:address`).
    pub sans: Vec<String>,
    /// Hosts of the member's advertised client URLs that it does not name: clients reaching
    /// the member by those URLs fail to verify it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_sans: Vec<String>,
    /// When it becomes valid, only when that is still to come: until then every peer
    /// rejects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_yet_valid_until: Option<String>,
    /// Why it could not be read (then the other fields are empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CertificateStatus {
    fn unreadable(role: CertificateRole, source: String, error: String) -> CertificateStatus {
        CertificateStatus {
            role,
            source,
            member: None,
            subject: String::new(),
            not_after: String::new(),
            days_left: 0,
            sans: Vec::new(),
            missing_sans: Vec::new(),
            not_yet_valid_until: None,
            error: Some(error),
        }
    }

    /// Reads the first certificate of a DER blob.
    fn from_der(role: CertificateRole, source: String, der: &[u8]) -> CertificateStatus {
        let Ok((_, cert)) = X509Certificate::from_der(der) else {
            return CertificateStatus::unreadable(role, source, "not an X.509 certificate".into());
        };
        let not_after = cert.validity().not_after;
        let not_before = cert.validity().not_before;
        let now = ASN1Time::now().timestamp();
        let left = not_after.timestamp() - now;
        CertificateStatus {
            role,
            source,
            member: None,
            subject: cert.subject().to_string(),
            not_after: not_after.to_string(),
            days_left: left.div_euclid(DAY),
            sans: etcd_host::certificate_names(&cert).into_iter().collect(),
            missing_sans: Vec::new(),
            not_yet_valid_until: (not_before.timestamp() > now).then(|| not_before.to_string()),
            error: None,
        }
    }

    /// Reads the first certificate of a PEM (or DER) file (a platform's certificate on
    /// disk). Only a regular file of a certificate's size is read: a FIFO or a device named
    /// `*.crt` would block, a huge file would fill memory.
    pub fn from_file(role: CertificateRole, path: &Path) -> CertificateStatus {
        let source = path.display().to_string();
        match read_small_file(path) {
            Ok(bytes) if looks_like_pem(&bytes) => from_pem(role, source, &bytes),
            Ok(bytes) => CertificateStatus::from_der(role, source, &bytes),
            Err(e) => CertificateStatus::unreadable(role, source, e),
        }
    }
}

/// The most of a certificate file read (a chain of a dozen certificates is ~20 KiB).
const MAX_CERT_FILE_BYTES: u64 = 1024 * 1024;

fn read_small_file(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CERT_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_CERT_FILE_BYTES {
        return Err(format!(
            "it is larger than {} MiB: not a certificate file",
            MAX_CERT_FILE_BYTES >> 20
        ));
    }
    Ok(bytes)
}

fn looks_like_pem(bytes: &[u8]) -> bool {
    bytes.windows(11).any(|w| w == b"-----BEGIN ")
}

/// The first `CERTIFICATE` block of a PEM text: bundles may put a key or parameters first,
/// chains put the leaf first.
fn from_pem(role: CertificateRole, source: String, pem: &[u8]) -> CertificateStatus {
    let first = x509_parser::pem::Pem::iter_from_buffer(pem)
        .take(256)
        .filter_map(Result::ok)
        .find(|block| block.label == "CERTIFICATE");
    match first {
        Some(block) => CertificateStatus::from_der(role, source, &block.contents),
        None => CertificateStatus::unreadable(role, source, "no PEM certificate in it".into()),
    }
}

/// Whether `sans` covers `host` (an IP address, or a DNS name matched exactly or by a
/// `*.` wildcard standing for one label).
pub(crate) fn san_covers(sans: &[String], host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return sans.iter().any(|s| s == &format!("IP:{ip}"));
    }
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    sans.iter()
        .filter_map(|s| s.strip_prefix("DNS:"))
        .any(|name| {
            name == host
                || name.strip_prefix("*.").is_some_and(|suffix| {
                    host.split_once('.')
                        .is_some_and(|(first, rest)| !first.is_empty() && rest == suffix)
                })
        })
}

/// `(host, host:port)` of a URL, or `None` when it is not one.
fn host_and_port(url: &str) -> Option<(String, String)> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_string();
    let port = parsed.port_or_known_default().unwrap_or(2379);
    let host_port = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    Some((host, host_port))
}

impl Client {
    /// The client certificate this check connects with, and what every member that answered
    /// serves on its `https://` client URL (each handshake bounded by the dial timeout), with the hosts of
    /// the member's advertised client URLs its certificate does not name.
    pub(crate) async fn certificates(&self, view: &ClusterView) -> Vec<CertificateStatus> {
        let settings = &self.config().tls;
        let mut out = Vec::new();
        if let Some(identity) = &settings.identity {
            let source = identity.cert.describe();
            out.push(match &identity.cert {
                PemSource::File(path) => {
                    CertificateStatus::from_file(CertificateRole::Client, path)
                }
                PemSource::Inline(secret) => {
                    from_pem(CertificateRole::Client, source, secret.expose().as_bytes())
                }
            });
        }
        let limit = self.config().dial_timeout;
        // A member that did not answer is the `members` finding's; its certificate is looked
        // at all the same (an expired one is why no client accepts it), but a handshake that
        // fails there is not a second warning.
        let served = view.members.iter().filter_map(|m| {
            let endpoint = m.endpoint.as_ref()?;
            if !endpoint.starts_with("https://") {
                return None;
            }
            let (host, host_port) = host_and_port(endpoint)?;
            Some(async move {
                let chain = tls::served_certificates(settings, &host, &host_port, limit).await;
                let mut status = match chain {
                    Ok(chain) => CertificateStatus::from_der(
                        CertificateRole::Serving,
                        endpoint.clone(),
                        chain
                            .first()
                            .map(CertificateDer::as_ref)
                            .unwrap_or_default(),
                    ),
                    Err(e) => {
                        CertificateStatus::unreadable(CertificateRole::Serving, endpoint.clone(), e)
                    }
                };
                status.member = Some(if m.member.name.is_empty() {
                    m.member.id.to_string()
                } else {
                    m.member.name.clone()
                });
                if status.error.is_none() {
                    status.missing_sans = m
                        .member
                        .client_urls
                        .iter()
                        .filter_map(|u| host_and_port(u).map(|(h, _)| h))
                        .filter(|h| !san_covers(&status.sans, h))
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect();
                }
                (m.status.is_some() || status.error.is_none()).then_some(status)
            })
        });
        out.extend(
            futures::future::join_all(served)
                .await
                .into_iter()
                .flatten(),
        );
        out
    }
}

/// The `certificates` finding: critical when one expires within the critical days (or has
/// expired), a warning within the warning days, when a serving certificate misses a host
/// its member advertises, or when one could not be read.
pub fn certificates_finding(certs: &[CertificateStatus], options: &CheckOptions) -> Finding {
    if certs.is_empty() {
        return finding(
            "certificates",
            Severity::Ok,
            "no TLS certificate in use (plain http endpoints, no client certificate)".into(),
        );
    }
    let mut severity = Severity::Ok;
    let mut notes = Vec::new();
    for c in certs {
        let what = describe(c);
        if let Some(error) = &c.error {
            severity = severity.max(Severity::Warning);
            notes.push(format!("{what}: could not be read ({error})"));
            continue;
        }
        let days = c.days_left;
        if let Some(from) = &c.not_yet_valid_until {
            severity = Severity::Critical;
            notes.push(format!(
                "{what} is NOT valid before {from}: every peer rejects it until then; check this host's clock and the issuer's, or reissue it"
            ));
        }
        if days < 0 {
            severity = Severity::Critical;
            notes.push(format!(
                "{what} EXPIRED on {} ({} days ago): renew it now",
                c.not_after, -days
            ));
        } else if days < options.cert_critical_days {
            severity = Severity::Critical;
            notes.push(format!(
                "{what} expires in {days} days ({}): renew it now",
                c.not_after
            ));
        } else if days < options.cert_warn_days {
            severity = severity.max(Severity::Warning);
            notes.push(format!(
                "{what} expires in {days} days ({}): plan its renewal",
                c.not_after
            ));
        }
        if !c.missing_sans.is_empty() {
            severity = severity.max(Severity::Warning);
            notes.push(format!(
                "{what} does not name {} of the member's client URLs (it has {}): reissue it with those names",
                c.missing_sans.join(", "),
                if c.sans.is_empty() {
                    "no subjectAltName".to_string()
                } else {
                    c.sans.join(", ")
                }
            ));
        }
    }
    if notes.is_empty() {
        let soonest = certs.iter().map(|c| c.days_left).min().unwrap_or_default();
        return finding(
            "certificates",
            Severity::Ok,
            format!(
                "{} certificate(s) checked; the soonest expires in {soonest} days",
                certs.len()
            ),
        );
    }
    finding("certificates", severity, notes.join("; "))
}

fn describe(c: &CertificateStatus) -> String {
    match (c.role, &c.member) {
        (CertificateRole::Serving, Some(member)) => {
            format!("member {member}'s serving certificate ({})", c.source)
        }
        (CertificateRole::Serving, None) => format!("the certificate served at {}", c.source),
        (CertificateRole::Client, _) => format!("the client certificate {}", c.source),
        (CertificateRole::OnDisk, _) => format!("certificate {}", c.source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(days_left: i64, missing: &[&str]) -> CertificateStatus {
        CertificateStatus {
            role: CertificateRole::Serving,
            source: "https://127.0.0.1:2379".into(),
            member: Some("m0".into()),
            subject: "CN=etcd".into(),
            not_after: "later".into(),
            days_left,
            sans: vec!["IP:127.0.0.1".into()],
            missing_sans: missing.iter().map(|s| s.to_string()).collect(),
            not_yet_valid_until: None,
            error: None,
        }
    }

    #[test]
    fn days_left_against_the_thresholds() {
        let options = CheckOptions::default();
        let judge = |days| certificates_finding(&[status(days, &[])], &options).severity;
        assert_eq!(judge(400), Severity::Ok);
        assert_eq!(judge(29), Severity::Warning);
        assert_eq!(judge(6), Severity::Critical);
        assert_eq!(judge(-1), Severity::Critical);
        let f = certificates_finding(&[status(3, &[])], &options);
        assert!(
            f.message.contains("member m0's serving certificate"),
            "{f:?}"
        );
        assert!(f.message.contains("expires in 3 days"), "{f:?}");
    }

    #[test]
    fn a_missing_san_is_a_warning_naming_the_host() {
        let f = certificates_finding(
            &[status(400, &["etcd-0.example"])],
            &CheckOptions::default(),
        );
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("does not name etcd-0.example"), "{f:?}");
    }

    #[test]
    fn sans_cover_ips_names_and_one_label_wildcards() {
        let sans = vec![
            "DNS:localhost".to_string(),
            "DNS:*.etcd.example".to_string(),
            "IP:127.0.0.1".to_string(),
            "IP:::1".to_string(),
        ];
        assert!(san_covers(&sans, "127.0.0.1"));
        assert!(san_covers(&sans, "[::1]"));
        assert!(san_covers(&sans, "LOCALHOST"));
        assert!(san_covers(&sans, "m0.etcd.example"));
        assert!(!san_covers(&sans, "a.m0.etcd.example"));
        assert!(!san_covers(&sans, "etcd.example"));
        assert!(!san_covers(&sans, "10.0.0.1"));
    }

    /// A self-signed certificate valid from `from` to `until` (years), as DER.
    fn self_signed(from: i32, until: i32) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.not_before = rcgen::date_time_ymd(from, 1, 1);
        params.not_after = rcgen::date_time_ymd(until, 1, 1);
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn a_certificate_not_yet_valid_is_critical_and_an_expired_one_too() {
        let options = CheckOptions::default();
        let future = CertificateStatus::from_der(
            CertificateRole::OnDisk,
            "future.crt".into(),
            &self_signed(2200, 2201),
        );
        assert!(future.days_left > 30, "{future:?}");
        assert!(future.not_yet_valid_until.is_some(), "{future:?}");
        let f = certificates_finding(std::slice::from_ref(&future), &options);
        assert_eq!(f.severity, Severity::Critical, "{f:?}");
        assert!(f.message.contains("NOT valid before"), "{f:?}");
        let expired = CertificateStatus::from_der(
            CertificateRole::OnDisk,
            "old.crt".into(),
            &self_signed(2000, 2001),
        );
        assert!(expired.days_left < -3000, "{expired:?}");
        assert_eq!(expired.not_yet_valid_until, None);
        let f = certificates_finding(&[expired], &options);
        assert_eq!(f.severity, Severity::Critical, "{f:?}");
        assert!(f.message.contains("EXPIRED"), "{f:?}");
    }

    fn pem_of(der: &[u8]) -> String {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            lines.join("\n")
        )
    }

    #[test]
    fn odd_files_on_disk_are_read_safely_or_said_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let der = self_signed(2020, 2200);
        let read = |name: &str| {
            CertificateStatus::from_file(CertificateRole::OnDisk, &dir.path().join(name))
        };
        // A bundle with the key first, then the leaf and a CA: the leaf is read.
        let key =
            "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n";
        std::fs::write(
            dir.path().join("bundle.crt"),
            format!("{key}{}{}", pem_of(&der), pem_of(&self_signed(2020, 2300))),
        )
        .unwrap();
        let bundle = read("bundle.crt");
        assert_eq!(bundle.error, None, "{bundle:?}");
        assert!(bundle.not_after.contains("2200"), "{bundle:?}");
        // A DER-encoded .crt is a certificate too.
        std::fs::write(dir.path().join("der.crt"), &der).unwrap();
        assert_eq!(read("der.crt").error, None);
        // A FIFO named *.crt would block a read forever.
        let fifo = dir.path().join("fifo.crt");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let f = read("fifo.crt");
        assert_eq!(
            f.error.as_deref(),
            Some("it is not a regular file"),
            "{f:?}"
        );
        // A huge file is not read into memory.
        let huge = std::fs::File::create(dir.path().join("huge.crt")).unwrap();
        huge.set_len(64 << 20).unwrap();
        let h = read("huge.crt");
        assert!(
            h.error
                .as_deref()
                .unwrap_or_default()
                .contains("larger than"),
            "{h:?}"
        );
        // A symlink loop: unreadable, said so.
        std::os::unix::fs::symlink("loop.crt", dir.path().join("loop.crt")).unwrap();
        let l = read("loop.crt");
        assert!(
            l.error
                .as_deref()
                .unwrap_or_default()
                .contains("cannot read it"),
            "{l:?}"
        );
        // Not a certificate at all.
        std::fs::write(dir.path().join("text.crt"), "hello\n").unwrap();
        assert!(read("text.crt").error.is_some());
    }
}
