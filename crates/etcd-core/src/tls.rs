//! Client TLS, built with rustls directly so that we control what tonic cannot express:
//! skipping server verification, a server-name override, and errors that say which file is
//! bad or which connection option fixes a failed handshake.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::{ResolvesClientCert, WebPkiServerVerifier, verify_server_name};
use tokio_rustls::rustls::crypto::{CryptoProvider, aws_lc_rs};
use tokio_rustls::rustls::server::ParsedCertificate;
use tokio_rustls::rustls::sign::{CertifiedKey, SingleCertAndKey};
use tokio_rustls::rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use x509_parser::prelude::{FromDer, X509Certificate};

use etcd_common::{Hint, OptionId, options};

use crate::config::{PemSource, TlsSettings};
use crate::error::{Error, Result};

/// Reads a PEM source into bytes, naming the file in the error.
fn read_pem(source: &PemSource, what: &'static str) -> Result<Vec<u8>> {
    match source {
        PemSource::File(path) => std::fs::read(path).map_err(|source| Error::ReadFile {
            what,
            path: path.clone(),
            source,
        }),
        PemSource::Inline(secret) => Ok(secret.expose().as_bytes().to_vec()),
    }
}

fn invalid_pem(source: &PemSource, what: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidPem {
        what,
        source_name: source.describe(),
        reason: reason.into(),
    }
}

pub(crate) fn load_certs(
    source: &PemSource,
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>> {
    let pem = read_pem(source, what)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| invalid_pem(source, what, e.to_string()))?;
    if certs.is_empty() {
        return Err(invalid_pem(
            source,
            what,
            "no 'BEGIN CERTIFICATE' block found; give a PEM certificate file",
        ));
    }
    Ok(certs)
}

fn load_key(source: &PemSource) -> Result<PrivateKeyDer<'static>> {
    const WHAT: &str = "client key";
    let pem = read_pem(source, WHAT)?;
    // Never echo key material: the reason names only the problem.
    PrivateKeyDer::from_pem_slice(&pem).map_err(|_| {
        invalid_pem(
            source,
            WHAT,
            "no PEM private key found (PKCS#8, PKCS#1 or SEC1); give the key that matches the client certificate",
        )
    })
}

/// The binary's one rustls crypto provider, aws-lc-rs (object_store's HTTPS uses it too): it
/// has every curve etcd's certificates use, P-521 of `etcd --auto-tls` included, which ring
/// lacks.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(aws_lc_rs::default_provider())
}

/// The client certificate and its key, checked to be a pair. rustls' own check parses the
/// certificate with webpki, which refuses X.509 v1 certificates (what `openssl x509 -req`
/// signs without an extension file); etcd and etcdctl accept them, so the pair is checked
/// here by comparing the key's public half with the certificate's, read with x509-parser.
fn client_identity(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> std::result::Result<Arc<dyn ResolvesClientCert>, String> {
    let signing = provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("unusable key: {e}"))?;
    let end_entity = certs
        .first()
        .ok_or("the certificate file holds no certificate")?;
    let (_, parsed) = X509Certificate::from_der(end_entity)
        .map_err(|e| format!("unusable client certificate: {e}"))?;
    let fits = signing
        .public_key()
        .is_some_and(|public| public.as_ref() == parsed.public_key().raw);
    if !fits {
        return Err("it does not fit the client certificate (another key pair's)".into());
    }
    let pair = CertifiedKey::new(certs, signing);
    Ok(Arc::new(SingleCertAndKey::from(pair)))
}

/// Builds the rustls client configuration for the given settings, reading every file now so
/// that a bad path fails before any connection is tried.
pub fn client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls {
            endpoint: "(all)".into(),
            reason: e.to_string(),
        })?;
    let builder = if settings.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert(provider())))
    } else {
        let mut roots = RootCertStore::empty();
        let mut bundle = Vec::new();
        match &settings.ca {
            Some(ca) => {
                for cert in load_certs(ca, "CA certificate")? {
                    roots.add(cert.clone()).map_err(|e| {
                        invalid_pem(ca, "CA certificate", format!("unusable certificate: {e}"))
                    })?;
                    bundle.push(cert);
                }
            }
            None => {
                // As etcdctl: without a CA certificate the system's trusted roots are used.
                let native = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(native.certs);
            }
        }
        if roots.is_empty() {
            // No trust anchor at all (no system roots): every server is refused as unknown.
            return finish(builder.with_root_certificates(roots), settings);
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| Error::Tls {
                endpoint: "(all)".into(),
                reason: format!("cannot use the CA certificates: {e}"),
            })?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(BundleVerifier {
                webpki,
                bundle,
                provider: provider(),
            }))
    };
    finish(builder, settings)
}

/// The client identity and ALPN, on a builder whose server verification is settled.
fn finish(
    builder: tokio_rustls::rustls::ConfigBuilder<
        ClientConfig,
        tokio_rustls::rustls::client::WantsClientCert,
    >,
    settings: &TlsSettings,
) -> Result<Arc<ClientConfig>> {
    let mut config = match &settings.identity {
        Some(identity) => {
            let certs = load_certs(&identity.cert, "client certificate")?;
            let key = load_key(&identity.key)?;
            let resolver = client_identity(certs, key).map_err(|reason| Error::InvalidPem {
                what: "client key",
                source_name: identity.key.describe(),
                reason,
            })?;
            builder.with_client_cert_resolver(resolver)
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// [`client_config`] for HTTP/1.1 requests (etcd's `/metrics`): the same trust and identity,
/// without the `h2` protocol offer, so the server answers in HTTP/1.
pub(crate) fn http1_client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>> {
    let mut config = (*client_config(settings)?).clone();
    config.alpn_protocols.clear();
    Ok(Arc::new(config))
}

/// The certificate chain the server at `host_port` presents (end entity first), read from a
/// TLS handshake that accepts any certificate: this looks at what is served, it trusts
/// nothing. The client identity is offered when configured; a server that then refuses the
/// handshake has still shown its certificate, which is what is returned.
pub(crate) async fn served_certificates(
    settings: &TlsSettings,
    host: &str,
    host_port: &str,
    limit: std::time::Duration,
) -> std::result::Result<Vec<CertificateDer<'static>>, String> {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let recorder = Arc::new(RecordServerCert {
        inner: AcceptAnyServerCert(provider()),
        seen: seen.clone(),
    });
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(recorder);
    let config = match &settings.identity {
        Some(identity) => {
            let certs =
                load_certs(&identity.cert, "client certificate").map_err(|e| e.to_string())?;
            let key = load_key(&identity.key).map_err(|e| e.to_string())?;
            builder.with_client_cert_resolver(client_identity(certs, key)?)
        }
        None => builder.with_no_client_auth(),
    };
    let name = server_name(settings, host).map_err(|e| e.to_string())?;
    let handshake = async {
        let tcp = tokio::net::TcpStream::connect(host_port)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map(drop)
            .map_err(|e| format!("TLS handshake failed: {e}"))
    };
    let outcome = tokio::time::timeout(limit, handshake)
        .await
        .unwrap_or_else(|_| Err(format!("no TLS handshake within {limit:?}")));
    let chain = seen.lock().map(|s| s.clone()).unwrap_or_default();
    match (chain.is_empty(), outcome) {
        (false, _) => Ok(chain),
        (true, Err(e)) => Err(e),
        (true, Ok(())) => Err("the server presented no certificate".into()),
    }
}

/// Accepts any server certificate (see [`AcceptAnyServerCert`]) and keeps a copy of it.
#[derive(Debug)]
struct RecordServerCert {
    inner: AcceptAnyServerCert,
    seen: Arc<std::sync::Mutex<Vec<CertificateDer<'static>>>>,
}

impl ServerCertVerifier for RecordServerCert {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, tokio_rustls::rustls::Error> {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = std::iter::once(end_entity)
                .chain(intermediates)
                .map(|c| c.clone().into_owned())
                .collect();
        }
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, tokio_rustls::rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, tokio_rustls::rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The name to check the server certificate against: the override, else the endpoint host.
pub fn server_name(settings: &TlsSettings, host: &str) -> Result<ServerName<'static>> {
    let name = settings.server_name.as_deref().unwrap_or(host);
    let name = name.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(name.to_string()).map_err(|_| {
        etcd_common::InvalidOption::new(
            crate::error::SERVER_NAME,
            format!("'{name}' is not a valid DNS name or IP address"),
        )
        .into()
    })
}

/// Whether the server at `host_port` answers a TLS handshake within `limit` (any certificate
/// accepted: this only asks whether it speaks TLS, nothing is sent after the handshake). A
/// TLS alert from the server (it wants a client certificate) counts as speaking TLS.
pub(crate) async fn speaks_tls(host_port: &str, limit: std::time::Duration) -> bool {
    let Ok(builder) =
        ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()
    else {
        return false;
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert(provider())))
        .with_no_client_auth();
    let host = host_port
        .rsplit_once(':')
        .map_or(host_port, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let Ok(name) = ServerName::try_from(host.to_string()) else {
        return false;
    };
    let probe = async {
        let tcp = tokio::net::TcpStream::connect(host_port).await.ok()?;
        let answer = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await;
        Some(match answer {
            Ok(_) => true,
            Err(e) => e.to_string().to_ascii_lowercase().contains("alert"),
        })
    };
    matches!(tokio::time::timeout(limit, probe).await, Ok(Some(true)))
}

use etcd_common::options::SERVER_NAME;

/// A failed handshake in words an operator can act on, with the options that fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handshake {
    /// What failed and what to do, without a front-end's spelling of an option.
    pub(crate) reason: String,
    /// The connection options that fix it, when one does.
    pub(crate) hint: Option<Hint>,
}

impl Handshake {
    fn fixed_by(reason: impl Into<String>, options: &[OptionId]) -> Handshake {
        Handshake {
            reason: reason.into(),
            hint: Some(Hint::any_of(options)),
        }
    }

    fn plain(reason: impl Into<String>) -> Handshake {
        Handshake {
            reason: reason.into(),
            hint: None,
        }
    }

    /// The error for `endpoint`: [`Error::TlsSetting`] when an option fixes it.
    pub(crate) fn into_error(self, endpoint: String) -> Error {
        match self.hint {
            Some(hint) => Error::TlsSetting {
                endpoint,
                reason: self.reason,
                hint,
            },
            None => Error::Tls {
                endpoint,
                reason: self.reason,
            },
        }
    }
}

/// Explains a rustls or I/O error from a handshake in words an operator can act on.
pub(crate) fn explain_handshake_error(message: &str, settings: &TlsSettings) -> Handshake {
    let lower = message.to_ascii_lowercase();
    if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        let ca = settings
            .ca
            .as_ref()
            .map(|c| format!("the CA in {}", c.describe()))
            .unwrap_or_else(|| "the system's trusted roots (no CA certificate given)".into());
        Handshake::fixed_by(
            format!(
                "the server's certificate is not signed by {ca}; give the CA that signed etcd's certificate"
            ),
            &[options::CACERT, options::INSECURE_SKIP_TLS_VERIFY],
        )
    } else if lower.contains("notvalidforname") || lower.contains("not valid for name") {
        Handshake::fixed_by(
            "the server's certificate is not valid for this host name or IP; connect by a name in its subjectAltName or set the name to expect",
            &[options::ENDPOINTS, SERVER_NAME],
        )
    } else if lower.contains("expired") {
        Handshake::plain("the server's certificate has expired (or the clock is wrong)")
    } else if lower.contains("certificaterequired")
        || lower.contains("certificate required")
        || lower.contains("badcertificate")
        || lower.contains("bad certificate")
        || lower.contains("unknownca")
        || lower.contains("unknown ca")
    {
        let reason = if settings.identity.is_some() {
            "etcd rejected the client certificate: it is not signed by a CA etcd trusts (its trusted CA file); check the client certificate and key"
        } else {
            "etcd requires a client certificate; give a client certificate and its key"
        };
        Handshake::fixed_by(reason, &[options::CERT, options::KEY])
    } else if lower.contains("corrupt message") || lower.contains("invalidcontenttype") {
        Handshake::plain(
            "the server did not answer with TLS; use an http:// endpoint if etcd serves plain HTTP",
        )
    } else if lower.contains("handshake eof") {
        Handshake::plain(CLOSED_DURING_HANDSHAKE)
    } else {
        Handshake::plain(message)
    }
}

/// A server that closed the connection in the middle of the TLS handshake.
pub(crate) const CLOSED_DURING_HANDSHAKE: &str = "the server closed the connection during the TLS handshake; if etcd serves plain HTTP there, use an http:// endpoint";

/// The standard (webpki) verifier, plus one case etcdctl accepts and webpki does not: a
/// self-signed server certificate with `CA:TRUE` (what `openssl req -x509` makes by default)
/// that is itself in the CA bundle, byte for byte. Then the certificate is trusted because it
/// was given, its validity was checked by webpki before it refused the CA flag, and its name
/// is checked here. The handshake signature is always verified.
#[derive(Debug)]
struct BundleVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    bundle: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
}

/// Whether webpki refused the end-entity certificate only because it is a CA.
fn is_ca_used_as_end_entity(err: &tokio_rustls::rustls::Error) -> bool {
    matches!(
        err,
        tokio_rustls::rustls::Error::InvalidCertificate(CertificateError::Other(other))
            if format!("{other:?}").contains("CaUsedAsEndEntity")
    )
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, tokio_rustls::rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(err)
                if is_ca_used_as_end_entity(&err)
                    && self
                        .bundle
                        .iter()
                        .any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                let parsed = ParsedCertificate::try_from(end_entity)?;
                verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, tokio_rustls::rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, tokio_rustls::rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Verifier for `insecure_skip_tls_verify`: accepts any certificate but still checks that
/// the server holds its key, so the connection is encrypted, only not authenticated.
#[derive(Debug)]
struct AcceptAnyServerCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, tokio_rustls::rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, tokio_rustls::rustls::Error> {
        tokio_rustls::rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, tokio_rustls::rustls::Error> {
        tokio_rustls::rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
