//! A small PKI for standalone etcd clusters: one CA ([`ensure_ca`]) and, per member, one
//! certificate for both server and client use ([`ensure_member_certificate`]), with the
//! member's DNS names and IP addresses as SANs; peers present it to each other and to
//! clients. Both are idempotent: valid files are kept, so a second run changes nothing.
//! Keys are ECDSA P-256, written mode 0600 (their directory, when made, 0700) and never
//! appear in results or errors.
//!
//! ```no_run
//! use etcd_host::{CaRequest, MemberCertRequest, ensure_ca, ensure_member_certificate};
//!
//! # fn example() -> Result<(), etcd_host::Error> {
//! let ca = CaRequest::new("/etc/etcd/pki/ca.crt", "/etc/etcd/pki/ca.key");
//! ensure_ca(&ca)?;
//! let member = MemberCertRequest {
//!     dns_names: vec!["etcd-1.example.com".into()],
//!     ip_addresses: vec!["10.0.0.1".parse().unwrap()],
//!     ..MemberCertRequest::new(&ca, "etcd-1", "/etc/etcd/pki/etcd-1.crt", "/etc/etcd/pki/etcd-1.key")
//! };
//! let result = ensure_member_certificate(&member)?;
//! println!("{}: {}", result.cert_path, result.reason);
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData, SanType,
};
use serde::Serialize;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::time::ASN1Time;

use crate::error::{Error, Result, io};
use etcd_common::{InvalidOption, OptionId, write_file_atomically};

/// Mode of written keys.
const KEY_MODE: u32 = 0o600;
/// Mode of written certificates.
const CERT_MODE: u32 = 0o644;
const DAY: i64 = 86_400;

/// The CA to keep or make.
#[derive(Debug, Clone)]
pub struct CaRequest {
    /// CA certificate (PEM).
    pub cert_path: PathBuf,
    /// CA key (PEM, mode 0600).
    pub key_path: PathBuf,
    /// Subject common name of a new CA.
    pub common_name: String,
    /// Validity of a new CA, in days.
    pub validity_days: u32,
    /// Report only.
    pub check_mode: bool,
}

impl CaRequest {
    /// A request with the defaults: CN "etcd CA", ten years.
    pub fn new(cert_path: impl Into<PathBuf>, key_path: impl Into<PathBuf>) -> CaRequest {
        CaRequest {
            cert_path: cert_path.into(),
            key_path: key_path.into(),
            common_name: "etcd CA".into(),
            validity_days: 3650,
            check_mode: false,
        }
    }
}

/// A member certificate is reissued when fewer days than this remain, unless told otherwise.
pub const RENEW_BEFORE_DAYS: u32 = 30;

/// A member certificate to keep or (re)issue.
#[derive(Debug, Clone)]
pub struct MemberCertRequest {
    /// The CA certificate that signs it.
    pub ca_cert: PathBuf,
    /// The CA key.
    pub ca_key: PathBuf,
    /// The member's certificate (PEM).
    pub cert_path: PathBuf,
    /// Its key (PEM, mode 0600).
    pub key_path: PathBuf,
    /// Subject common name (the member's name).
    pub common_name: String,
    /// DNS SANs.
    pub dns_names: Vec<String>,
    /// IP SANs.
    pub ip_addresses: Vec<IpAddr>,
    /// Validity of a new certificate, in days.
    pub validity_days: u32,
    /// Reissue when fewer days than this remain.
    pub renew_before_days: u32,
    /// Report only.
    pub check_mode: bool,
}

impl MemberCertRequest {
    /// A request signed by `ca`, with the defaults: no SANs yet, one year, renewed 30 days
    /// before it ends.
    pub fn new(
        ca: &CaRequest,
        common_name: &str,
        cert_path: impl Into<PathBuf>,
        key_path: impl Into<PathBuf>,
    ) -> MemberCertRequest {
        MemberCertRequest {
            ca_cert: ca.cert_path.clone(),
            ca_key: ca.key_path.clone(),
            cert_path: cert_path.into(),
            key_path: key_path.into(),
            common_name: common_name.to_string(),
            dns_names: Vec::new(),
            ip_addresses: Vec::new(),
            validity_days: 365,
            renew_before_days: RENEW_BEFORE_DAYS,
            check_mode: false,
        }
    }
}

/// What [`ensure_ca`] or [`ensure_member_certificate`] did. Never holds key material.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CertificateResult {
    /// Whether files were written (or would be, in check mode).
    pub changed: bool,
    /// Why: kept, new, or what made a reissue necessary.
    pub reason: String,
    /// The certificate.
    pub cert_path: String,
    /// The key.
    pub key_path: String,
    /// Subject common name.
    pub common_name: String,
    /// SANs of the certificate in force (`DNS:name`, `IP:addr`).
    pub sans: Vec<String>,
    /// End of validity (Unix seconds) of the certificate in force; `None` in check mode
    /// before it exists.
    pub not_after: Option<i64>,
}

fn invalid(option: OptionId, reason: impl Into<String>) -> Error {
    InvalidOption::new(option, reason).into()
}

/// A certificate or key that could not be made: no option fixes it.
fn failed(what: &'static str, reason: impl Into<String>) -> Error {
    InvalidOption::input(what, reason).into()
}

use etcd_common::options::{CA_CERT, CA_KEY, COMMON_NAME, DNS_NAMES, VALIDITY_DAYS};

fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("read", path)(e)),
    }
}

fn bad_pem(what: &'static str, path: &Path, reason: impl Into<String>) -> Error {
    Error::InvalidPem {
        what,
        source_name: path.display().to_string(),
        reason: reason.into(),
    }
}

/// The DER of the first certificate in a PEM text.
fn cert_der(what: &'static str, path: &Path, pem_text: &str) -> Result<Vec<u8>> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_text.as_bytes())
        .map_err(|_| bad_pem(what, path, "no PEM certificate in it"))?;
    Ok(pem.contents)
}

fn parse_cert<'a>(what: &'static str, path: &Path, der: &'a [u8]) -> Result<X509Certificate<'a>> {
    X509Certificate::from_der(der)
        .map(|(_, cert)| cert)
        .map_err(|_| bad_pem(what, path, "not an X.509 certificate"))
}

fn load_key(what: &'static str, path: &Path, text: &str) -> Result<KeyPair> {
    // rcgen's message could quote the input: say only what was wrong.
    KeyPair::from_pem(text).map_err(|_| {
        bad_pem(
            what,
            path,
            "not a PEM private key etcdops can use (PKCS#8 ECDSA P-256/P-384, Ed25519 or RSA)",
        )
    })
}

/// `DNS:name` (lowercase) and `IP:address` of a certificate's subjectAltName, sorted: what
/// `ensure` compares with the names asked for, and what `check` reports of a member's
/// certificate.
pub fn certificate_names(cert: &X509Certificate<'_>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(d) => {
                    out.insert(format!("DNS:{}", d.to_ascii_lowercase()));
                }
                GeneralName::IPAddress(bytes) => {
                    let ip = match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes).ok().map(IpAddr::from),
                        16 => <[u8; 16]>::try_from(*bytes).ok().map(IpAddr::from),
                        _ => None,
                    };
                    if let Some(ip) = ip {
                        out.insert(format!("IP:{ip}"));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn now() -> i64 {
    ASN1Time::now().timestamp()
}

/// Sets `days` of validity from now (a minute back, so a member whose clock is slightly
/// behind accepts the certificate at once).
fn set_validity(params: &mut CertificateParams, days: u32) -> Result<()> {
    if days == 0 || days > 36_500 {
        return Err(invalid(
            VALIDITY_DAYS,
            format!("{days} is out of range (1 to 36500)"),
        ));
    }
    let start = now() - 60;
    let end = start + i64::from(days) * DAY;
    let at = |secs| {
        ASN1Time::from_timestamp(secs)
            .map(|t| t.to_datetime())
            .map_err(|e| invalid(VALIDITY_DAYS, format!("cannot represent the date: {e}")))
    };
    params.not_before = at(start)?;
    params.not_after = at(end)?;
    Ok(())
}

fn ca_params(common_name: &str, days: u32) -> Result<CertificateParams> {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut params, days)?;
    Ok(params)
}

/// Keeps a valid CA, or makes one when neither file exists. Refuses to replace a CA that is
/// half there or unusable: every member certificate hangs on it.
pub fn ensure_ca(request: &CaRequest) -> Result<CertificateResult> {
    if request.common_name.trim().is_empty() {
        return Err(invalid(COMMON_NAME, "give the CA's common name"));
    }
    let cert_text = read_optional(&request.cert_path)?;
    let key_exists = request.key_path.exists();
    let result = |changed, reason: String, sans, not_after| CertificateResult {
        changed,
        reason,
        cert_path: request.cert_path.display().to_string(),
        key_path: request.key_path.display().to_string(),
        common_name: request.common_name.clone(),
        sans,
        not_after,
    };
    match (cert_text, key_exists) {
        (Some(text), true) => {
            let der = cert_der("CA certificate", &request.cert_path, &text)?;
            let cert = parse_cert("CA certificate", &request.cert_path, &der)?;
            let key_text = read_optional(&request.key_path)?.unwrap_or_default();
            let key = load_key("CA key", &request.key_path, &key_text)?;
            if !cert.is_ca() {
                return Err(bad_pem(
                    "CA certificate",
                    &request.cert_path,
                    "it is not a CA certificate (no CA basic constraint)",
                ));
            }
            if cert.public_key().subject_public_key.data.as_ref() != key.der_bytes() {
                return Err(bad_pem(
                    "CA key",
                    &request.key_path,
                    format!("it does not belong to {}", request.cert_path.display()),
                ));
            }
            let not_after = cert.validity().not_after.timestamp();
            if not_after <= now() {
                return Err(Error::Refused {
                    reason: format!(
                        "the CA {} has expired; make a new CA (move the old files aside) and reissue every member certificate",
                        request.cert_path.display()
                    ),
                });
            }
            Ok(result(
                false,
                "kept: the CA exists and its key matches".into(),
                Vec::new(),
                Some(not_after),
            ))
        }
        (None, false) => {
            let params = ca_params(&request.common_name, request.validity_days)?;
            if request.check_mode {
                return Ok(result(
                    true,
                    "would make a new CA (check mode)".into(),
                    Vec::new(),
                    None,
                ));
            }
            let key = KeyPair::generate()
                .map_err(|e| failed("CA key", format!("cannot generate: {e}")))?;
            let not_after = params.not_after.unix_timestamp();
            let cert = params
                .self_signed(&key)
                .map_err(|e| failed("CA certificate", format!("cannot sign: {e}")))?;
            write_pair(&request.key_path, &key, &request.cert_path, &cert)?;
            Ok(result(true, "new CA".into(), Vec::new(), Some(not_after)))
        }
        (cert, _) => Err(Error::Refused {
            reason: format!(
                "only the CA {} exists ({} is missing); give both files or neither (a new CA), never replacing half of one",
                if cert.is_some() { "certificate" } else { "key" },
                if cert.is_some() {
                    request.key_path.display()
                } else {
                    request.cert_path.display()
                }
            ),
        }),
    }
}

/// What is wrong with an existing member certificate, `None` when it can stay.
fn needs_reissue(
    request: &MemberCertRequest,
    ca: &X509Certificate<'_>,
    wanted: &BTreeSet<String>,
) -> Result<Option<String>> {
    let (Some(cert_text), Some(key_text)) = (
        read_optional(&request.cert_path)?,
        read_optional(&request.key_path)?,
    ) else {
        return Ok(Some("new".into()));
    };
    let Ok(der) = cert_der("certificate", &request.cert_path, &cert_text) else {
        return Ok(Some(
            "reissued: the certificate file holds no certificate".into(),
        ));
    };
    let Ok(cert) = parse_cert("certificate", &request.cert_path, &der) else {
        return Ok(Some("reissued: the certificate does not parse".into()));
    };
    let Ok(key) = load_key("key", &request.key_path, &key_text) else {
        return Ok(Some("reissued: the key file holds no usable key".into()));
    };
    if cert.public_key().subject_public_key.data.as_ref() != key.der_bytes() {
        return Ok(Some(
            "reissued: the key does not match the certificate".into(),
        ));
    }
    if cert.verify_signature(Some(ca.public_key())).is_err() {
        return Ok(Some("reissued: not signed by this CA".into()));
    }
    let have = certificate_names(&cert);
    if &have != wanted {
        return Ok(Some(format!(
            "reissued: SANs were {}",
            have.into_iter().collect::<Vec<_>>().join(",")
        )));
    }
    let remaining = cert.validity().not_after.timestamp() - now();
    if remaining < i64::from(request.renew_before_days) * DAY {
        return Ok(Some(format!(
            "reissued: {} day(s) of validity left",
            remaining.max(0) / DAY
        )));
    }
    Ok(None)
}

/// Writes a new key (0600) and then its certificate, each atomically: a certificate on disk
/// always has its key beside it.
fn write_pair(
    key_path: &Path,
    key: &KeyPair,
    cert_path: &Path,
    cert: &rcgen::Certificate,
) -> Result<()> {
    write_file_atomically(key_path, key.serialize_pem().as_bytes(), KEY_MODE, None)?;
    write_file_atomically(cert_path, cert.pem().as_bytes(), CERT_MODE, None)?;
    Ok(())
}

/// Keeps a member certificate that is signed by the CA, matches its key, has exactly the
/// requested SANs and enough validity left; otherwise issues a new key and certificate.
pub fn ensure_member_certificate(request: &MemberCertRequest) -> Result<CertificateResult> {
    let cn = request.common_name.trim();
    if cn.is_empty() {
        return Err(invalid(COMMON_NAME, "give the member's name"));
    }
    if request.dns_names.is_empty() && request.ip_addresses.is_empty() {
        // Named by its DNS names, the usual fix (an IP address would do as well).
        return Err(invalid(
            DNS_NAMES,
            "give at least one DNS name or IP address the member is reached at",
        ));
    }
    let mut sans = Vec::new();
    let mut wanted = BTreeSet::new();
    for name in &request.dns_names {
        let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
        let san = SanType::DnsName(
            name.clone()
                .try_into()
                .map_err(|_| invalid(DNS_NAMES, format!("'{name}' is not a DNS name")))?,
        );
        sans.push(san);
        wanted.insert(format!("DNS:{name}"));
    }
    for ip in &request.ip_addresses {
        sans.push(SanType::IpAddress(*ip));
        wanted.insert(format!("IP:{ip}"));
    }
    let ca_text = read_optional(&request.ca_cert)?.ok_or_else(|| {
        invalid(
            CA_CERT,
            format!(
                "'{}' does not exist; make the CA first",
                request.ca_cert.display()
            ),
        )
    })?;
    let ca_der = cert_der("CA certificate", &request.ca_cert, &ca_text)?;
    let ca = parse_cert("CA certificate", &request.ca_cert, &ca_der)?;
    let reason = needs_reissue(request, &ca, &wanted)?;
    let result = |changed, reason: String, not_after| CertificateResult {
        changed,
        reason,
        cert_path: request.cert_path.display().to_string(),
        key_path: request.key_path.display().to_string(),
        common_name: cn.to_string(),
        sans: wanted.iter().cloned().collect(),
        not_after,
    };
    let Some(reason) = reason else {
        let text = read_optional(&request.cert_path)?.unwrap_or_default();
        let der = cert_der("certificate", &request.cert_path, &text)?;
        let not_after = parse_cert("certificate", &request.cert_path, &der)?
            .validity()
            .not_after
            .timestamp();
        return Ok(result(false, "kept".into(), Some(not_after)));
    };
    let mut params = CertificateParams::default();
    set_validity(&mut params, request.validity_days)?;
    if request.check_mode {
        return Ok(result(true, format!("{reason} (check mode)"), None));
    }
    let ca_key_text = read_optional(&request.ca_key)?.ok_or_else(|| {
        invalid(
            CA_KEY,
            format!("'{}' does not exist", request.ca_key.display()),
        )
    })?;
    let ca_key = load_key("CA key", &request.ca_key, &ca_key_text)?;
    let issuer = Issuer::from_ca_cert_der(&ca_der.as_slice().into(), ca_key).map_err(|_| {
        bad_pem(
            "CA certificate",
            &request.ca_cert,
            "rcgen cannot use it as an issuer",
        )
    })?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    params.distinguished_name = dn;
    params.subject_alt_names = sans;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    // Peers are both servers and clients of each other.
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let not_after = params.not_after.unix_timestamp();
    let key =
        KeyPair::generate().map_err(|e| failed("key pair", format!("cannot generate: {e}")))?;
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|e| failed("certificate", format!("cannot sign: {e}")))?;
    write_pair(&request.key_path, &key, &request.cert_path, &cert)?;
    Ok(result(true, reason, Some(not_after)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn ca_and_member_certificates_are_made_once_and_reissued_when_sans_change() {
        let dir = std::env::temp_dir().join(format!("etcdops-pki-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut ca = CaRequest::new(dir.join("pki/ca.crt"), dir.join("pki/ca.key"));
        ca.check_mode = true;
        assert!(ensure_ca(&ca).unwrap().changed);
        assert!(!ca.cert_path.exists(), "check mode wrote the CA");
        ca.check_mode = false;
        let made = ensure_ca(&ca).unwrap();
        assert!(made.changed, "{made:?}");
        assert_eq!(mode(&ca.key_path), 0o600);
        assert_eq!(mode(&dir.join("pki")), 0o700);
        assert!(!ensure_ca(&ca).unwrap().changed);

        let mut member = MemberCertRequest::new(
            &ca,
            "etcd-1",
            dir.join("pki/etcd-1.crt"),
            dir.join("pki/etcd-1.key"),
        );
        member.dns_names = vec!["etcd-1.example.test".into(), "localhost".into()];
        member.ip_addresses = vec!["127.0.0.1".parse().unwrap()];
        let issued = ensure_member_certificate(&member).unwrap();
        assert!(issued.changed && issued.reason == "new", "{issued:?}");
        assert_eq!(
            issued.sans,
            ["DNS:etcd-1.example.test", "DNS:localhost", "IP:127.0.0.1"]
        );
        assert_eq!(mode(&member.key_path), 0o600);
        let key_before = std::fs::read(&member.key_path).unwrap();
        let kept = ensure_member_certificate(&member).unwrap();
        assert!(!kept.changed, "{kept:?}");
        assert_eq!(std::fs::read(&member.key_path).unwrap(), key_before);
        // The result never carries key material.
        let json = serde_json::to_string(&kept).unwrap();
        assert!(!json.contains("PRIVATE KEY"), "{json}");

        member.ip_addresses.push("10.0.0.1".parse().unwrap());
        member.check_mode = true;
        let would = ensure_member_certificate(&member).unwrap();
        assert!(would.changed && would.reason.starts_with("reissued: SANs were"));
        assert_eq!(std::fs::read(&member.key_path).unwrap(), key_before);
        member.check_mode = false;
        assert!(ensure_member_certificate(&member).unwrap().changed);
        assert!(!ensure_member_certificate(&member).unwrap().changed);

        // A certificate from another CA is replaced.
        let other = CaRequest::new(dir.join("other/ca.crt"), dir.join("other/ca.key"));
        ensure_ca(&other).unwrap();
        let mut foreign = member.clone();
        foreign.ca_cert = other.cert_path.clone();
        foreign.ca_key = other.key_path.clone();
        let swapped = ensure_member_certificate(&foreign).unwrap();
        assert_eq!(swapped.reason, "reissued: not signed by this CA");

        // Half a CA is never replaced.
        std::fs::remove_file(&ca.key_path).unwrap();
        let refused = ensure_ca(&ca).unwrap_err().to_string();
        assert!(refused.contains("give both files or neither"), "{refused}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_member_without_sans_or_ca_is_refused() {
        let ca = CaRequest::new("/nonexistent/ca.crt", "/nonexistent/ca.key");
        let mut member =
            MemberCertRequest::new(&ca, "m", "/nonexistent/m.crt", "/nonexistent/m.key");
        let e = ensure_member_certificate(&member).unwrap_err().to_string();
        assert!(e.contains("at least one DNS name or IP address"), "{e}");
        member.dns_names = vec!["m.example".into()];
        let e = ensure_member_certificate(&member).unwrap_err().to_string();
        assert!(e.contains("make the CA first"), "{e}");
    }

    /// An unusable CA file is hinted as the PKI's own option for it (`ca_cert`, `ca_key`:
    /// `--ca-cert` in `pki`, `ca_cert` in `etcd_certificate`), as a missing one is, not as
    /// the connection's `cacert`, which no `pki` command has.
    #[test]
    fn an_unusable_ca_file_is_hinted_as_the_ca_option_of_the_pki() {
        use etcd_common::{Hint, Hinted};
        let dir = std::env::temp_dir().join(format!("etcdops-pki-hint-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ca = CaRequest::new(dir.join("ca.crt"), dir.join("ca.key"));
        std::fs::write(&ca.cert_path, "not a certificate").unwrap();
        std::fs::write(&ca.key_path, "not a key").unwrap();
        let mut member = MemberCertRequest::new(&ca, "m0", dir.join("m0.crt"), dir.join("m0.key"));
        member.dns_names = vec!["m0.example".into()];
        let missing = MemberCertRequest::new(
            &CaRequest::new(dir.join("none.crt"), dir.join("none.key")),
            "m0",
            dir.join("m0.crt"),
            dir.join("m0.key"),
        );
        let missing = ensure_member_certificate(&MemberCertRequest {
            dns_names: member.dns_names.clone(),
            ..missing
        })
        .unwrap_err();
        assert_eq!(missing.hint(), Some(Hint::option(CA_CERT)), "{missing}");
        let bad_cert = ensure_member_certificate(&member).unwrap_err();
        assert_eq!(bad_cert.hint(), Some(Hint::option(CA_CERT)), "{bad_cert}");
        let bad_cert = ensure_ca(&ca).unwrap_err();
        assert_eq!(bad_cert.hint(), Some(Hint::option(CA_CERT)), "{bad_cert}");
        // A good CA certificate with an unusable key: the key is named.
        let good = CaRequest::new(dir.join("good.crt"), dir.join("good.key"));
        ensure_ca(&good).unwrap();
        std::fs::write(&good.key_path, "not a key").unwrap();
        let bad_key = ensure_ca(&good).unwrap_err();
        assert_eq!(bad_key.hint(), Some(Hint::option(CA_KEY)), "{bad_key}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
