//! Connection-error classification: which tonic, hyper, I/O and rustls failures become which
//! [`Error`] variant, with which message and which hint. One test per class: unreachable,
//! refused, DNS, dial timeout, TLS (unknown CA, wrong name, expired, client certificate,
//! not TLS at all), a plain `http://` endpoint whose server speaks TLS, a request timeout,
//! authentication, and etcd's own answers. And the key types of etcd's certificates (P-521 of
//! `--auto-tls`, P-384, P-256, RSA, Ed25519), each through a real handshake.

use std::io::{Error as IoError, ErrorKind};
use std::sync::Arc;
use std::time::Duration;

use etcd_common::{Hint, options};

use crate::config::{ClientIdentity, PemSource, TlsSettings};
use crate::connect::{ErrorContext, classify, plain_http_to_tls};
use crate::error::Error;
use crate::tls::explain_handshake_error;

const HTTP: &str = "http://127.0.0.1:2379";
const HTTPS: &str = "https://127.0.0.1:2379";

fn ctx<'a>(endpoint: &'a str, operation: &'static str, tls: &'a TlsSettings) -> ErrorContext<'a> {
    ErrorContext {
        endpoint,
        operation,
        user: Some("root"),
        tls,
        timeout: Duration::from_secs(2),
    }
}

fn io(kind: ErrorKind, message: &str) -> etcd_client::Error {
    etcd_client::Error::IoError(IoError::new(kind, message.to_string()))
}

fn status(status: tonic::Status) -> etcd_client::Error {
    etcd_client::Error::GRpcStatus(status)
}

fn with_ca() -> TlsSettings {
    TlsSettings {
        ca: Some(PemSource::File("/etc/etcd/ca.crt".into())),
        ..TlsSettings::default()
    }
}

fn with_identity() -> TlsSettings {
    TlsSettings {
        identity: Some(ClientIdentity {
            cert: PemSource::File("/etc/etcd/client.crt".into()),
            key: PemSource::File("/etc/etcd/client.key".into()),
        }),
        ..with_ca()
    }
}

/// The hint's option names, for short assertions.
fn hint_names(err: &Error) -> Vec<&'static str> {
    match err {
        Error::TlsSetting { hint, .. } => hint.options.iter().map(|o| o.name).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn a_refused_connection_is_unreachable_connection_refused() {
    let tls = TlsSettings::default();
    let err = classify(
        &io(
            ErrorKind::ConnectionRefused,
            "tcp connect error: Connection refused (os error 111)",
        ),
        &ctx(HTTP, "connect", &tls),
    );
    match &err {
        Error::Unreachable {
            endpoint, reason, ..
        } => {
            assert_eq!(endpoint, HTTP);
            assert_eq!(reason, "connection refused");
        }
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("check that etcd listens there"), "{text}");
    assert!(err.is_endpoint_failure());
}

#[test]
fn no_route_and_an_unknown_host_are_unreachable_with_the_cause() {
    let tls = TlsSettings::default();
    for cause in [
        "tcp connect error: No route to host (os error 113)",
        "dns error: failed to lookup address information: Name or service not known",
        "tcp connect error: Network is unreachable (os error 101)",
    ] {
        let err = classify(&io(ErrorKind::Other, cause), &ctx(HTTP, "connect", &tls));
        match &err {
            Error::Unreachable { reason, .. } => assert_eq!(reason, cause),
            other => panic!("{cause}: {other:?}"),
        }
    }
}

#[test]
fn a_dial_that_timed_out_is_unreachable_in_time() {
    let tls = TlsSettings::default();
    for cause in [
        "tcp connect error: operation timed out",
        "deadline has elapsed",
    ] {
        let err = classify(&io(ErrorKind::TimedOut, cause), &ctx(HTTP, "connect", &tls));
        match &err {
            Error::Unreachable {
                reason, timeout, ..
            } => {
                assert_eq!(reason, "no connection established in time");
                assert_eq!(*timeout, Duration::from_secs(2));
            }
            other => panic!("{cause}: {other:?}"),
        }
        assert!(err.to_string().contains("within 2s"), "{err}");
    }
}

#[test]
fn a_connection_broken_during_a_request_is_unavailable_not_unreachable() {
    let tls = TlsSettings::default();
    let err = classify(
        &io(
            ErrorKind::ConnectionReset,
            "connection reset by peer (os error 104)",
        ),
        &ctx(HTTP, "member list", &tls),
    );
    match &err {
        Error::Unavailable {
            operation, message, ..
        } => {
            assert_eq!(*operation, "member list");
            assert!(message.starts_with("the connection failed"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.is_endpoint_failure());
}

#[test]
fn an_unknown_ca_names_the_ca_given_and_hints_cacert() {
    let err = classify(
        &io(
            ErrorKind::InvalidData,
            "invalid peer certificate: UnknownIssuer",
        ),
        &ctx(HTTPS, "connect", &with_ca()),
    );
    let text = err.to_string();
    assert!(
        text.contains("not signed by the CA in /etc/etcd/ca.crt"),
        "{text}"
    );
    assert_eq!(hint_names(&err), ["cacert", "insecure_skip_tls_verify"]);
    assert!(!text.contains("--"), "no front-end spelling: {text}");
    assert!(
        err.is_endpoint_failure(),
        "another member may have the right cert"
    );

    let tls = TlsSettings::default();
    let system = explain_handshake_error("invalid peer certificate: UnknownIssuer", &tls);
    assert!(
        system
            .reason
            .contains("the system's trusted roots (no CA certificate given)"),
        "{system:?}"
    );
}

#[test]
fn a_certificate_for_another_name_hints_the_endpoint_or_the_expected_name() {
    let tls = with_ca();
    let err = classify(
        &io(
            ErrorKind::InvalidData,
            "invalid peer certificate: NotValidForName",
        ),
        &ctx(HTTPS, "connect", &tls),
    );
    assert!(
        err.to_string()
            .contains("not valid for this host name or IP"),
        "{err}"
    );
    assert_eq!(hint_names(&err), ["endpoints", "server_name"]);
}

#[test]
fn an_expired_certificate_is_tls_with_no_option_to_fix_it() {
    let tls = with_ca();
    let err = classify(
        &io(ErrorKind::InvalidData, "invalid peer certificate: Expired"),
        &ctx(HTTPS, "connect", &tls),
    );
    match &err {
        Error::Tls { reason, .. } => assert!(reason.contains("has expired"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_or_untrusted_client_certificate_hints_cert_and_key() {
    let alert = "received fatal alert: CertificateRequired";
    let missing = classify(
        &io(ErrorKind::InvalidData, alert),
        &ctx(HTTPS, "connect", &with_ca()),
    );
    assert!(
        missing
            .to_string()
            .contains("requires a client certificate"),
        "{missing}"
    );
    assert_eq!(hint_names(&missing), ["cert", "key"]);

    let rejected = classify(
        &io(
            ErrorKind::InvalidData,
            "received fatal alert: BadCertificate",
        ),
        &ctx(HTTPS, "connect", &with_identity()),
    );
    assert!(
        rejected
            .to_string()
            .contains("rejected the client certificate"),
        "{rejected}"
    );
    assert_eq!(hint_names(&rejected), ["cert", "key"]);
}

#[test]
fn etcd_dropping_the_connection_after_a_tls_13_handshake_means_the_client_certificate() {
    // TLS 1.3: etcd checks the client certificate after the handshake and, when it is
    // missing or untrusted, only drops the connection.
    for (tls, words) in [
        (with_ca(), "it requires a client certificate"),
        (with_identity(), "it may not trust the client certificate"),
    ] {
        let err = classify(
            &io(ErrorKind::BrokenPipe, "broken pipe"),
            &ctx(HTTPS, "member list", &tls),
        );
        assert!(err.to_string().contains(words), "{err}");
        assert_eq!(hint_names(&err), ["cert", "key"]);
        assert!(!err.to_string().contains("--"), "{err}");
    }
}

#[test]
fn https_to_a_plain_http_server_says_use_http() {
    let tls = with_ca();
    for cause in [
        "received corrupt message of type InvalidContentType",
        "tls handshake eof",
    ] {
        let err = classify(
            &io(ErrorKind::InvalidData, cause),
            &ctx(HTTPS, "connect", &tls),
        );
        match &err {
            Error::Tls { reason, .. } => assert!(reason.contains("http://"), "{reason}"),
            other => panic!("{cause}: {other:?}"),
        }
    }
    // A reset during the dial of an https:// endpoint: the server did not speak TLS.
    let reset = classify(
        &io(ErrorKind::ConnectionReset, "connection reset by peer"),
        &ctx(HTTPS, "connect", &tls),
    );
    assert!(
        matches!(&reset, Error::Tls { reason, .. } if reason.contains("use an http:// endpoint")),
        "{reset:?}"
    );
}

#[test]
fn a_request_without_answer_in_time_is_a_timeout_that_mentions_the_client_certificate() {
    let tls = with_ca();
    let err = classify(
        &status(tonic::Status::deadline_exceeded(
            "context deadline exceeded",
        )),
        &ctx(HTTPS, "member list", &tls),
    );
    match &err {
        Error::Timeout {
            operation, hint, ..
        } => {
            assert_eq!(*operation, "member list");
            assert!(hint.contains("client certificate"), "{hint}");
            assert!(!hint.contains("--"), "{hint}");
        }
        other => panic!("{other:?}"),
    }
    // With a client certificate given, or over plain HTTP, there is nothing to add.
    let plain = TlsSettings::default();
    let err = classify(
        &status(tonic::Status::deadline_exceeded(
            "context deadline exceeded",
        )),
        &ctx(HTTP, "member list", &plain),
    );
    assert!(
        matches!(&err, Error::Timeout { hint, .. } if hint.is_empty()),
        "{err:?}"
    );
}

#[test]
fn wrong_credentials_are_auth_failed_naming_the_user_never_the_password() {
    let tls = TlsSettings::default();
    let err = classify(
        &status(tonic::Status::invalid_argument(
            "etcdserver: authentication failed, invalid user ID or password",
        )),
        &ctx(HTTP, "authenticate", &tls),
    );
    match &err {
        Error::AuthFailed { user, detail, .. } => {
            assert_eq!(user, "root");
            assert!(detail.contains("invalid user ID or password"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!err.is_endpoint_failure(), "every member would refuse it");
}

#[test]
fn etcd_unavailable_goes_on_and_its_other_answers_are_requests() {
    let tls = TlsSettings::default();
    let no_leader = classify(
        &status(tonic::Status::unavailable("etcdserver: no leader")),
        &ctx(HTTP, "member list", &tls),
    );
    assert!(
        matches!(&no_leader, Error::Unavailable { message, .. } if message == "etcdserver: no leader"),
        "{no_leader:?}"
    );
    let compacted = classify(
        &status(tonic::Status::out_of_range(
            "etcdserver: mvcc: required revision has been compacted",
        )),
        &ctx(HTTP, "get", &tls),
    );
    match &compacted {
        Error::Request {
            operation, message, ..
        } => {
            assert_eq!(*operation, "get");
            assert_eq!(
                message,
                "etcdserver: mvcc: required revision has been compacted"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_tls_setting_error_carries_its_options_for_the_front_ends() {
    let tls = with_ca();
    let err = classify(
        &io(
            ErrorKind::InvalidData,
            "invalid peer certificate: UnknownIssuer",
        ),
        &ctx(HTTPS, "connect", &tls),
    );
    let hint = etcd_common::Hinted::hint(&err).expect("a hint");
    assert_eq!(
        hint,
        Hint::any_of(&[options::CACERT, options::INSECURE_SKIP_TLS_VERIFY])
    );
    // Each front-end spells it; the library's message names no option.
    assert_eq!(
        hint.render(etcd_common::Style::Cli),
        "--cacert or --insecure-skip-tls-verify"
    );
    let module = etcd_common::with_hint(&err.to_string(), Some(&hint), etcd_common::Style::Module);
    assert!(
        module.ends_with("(cacert or insecure_skip_tls_verify: true)"),
        "{module}"
    );
    assert!(!etcd_common::Hinted::is_transient(&err));
}

/// A TLS acceptor serving `cert` with `key`, on the one crypto provider of the binary.
fn tls_acceptor(
    cert: rustls_pki_types::CertificateDer<'static>,
    key: rustls_pki_types::PrivateKeyDer<'static>,
) -> tokio_rustls::TlsAcceptor {
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(Arc::new(
        tokio_rustls::rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// A TLS server on a loopback port that completes handshakes and then closes.
async fn tls_listener() -> std::net::SocketAddr {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let cert = certified.cert.der().clone();
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let acceptor = tls_acceptor(cert, key);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = acceptor.accept(tcp).await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn an_http_endpoint_whose_server_speaks_tls_says_use_https() {
    let addr = tls_listener().await;
    let endpoint = format!("http://{addr}");
    let timed_out = Error::Timeout {
        operation: "member list",
        endpoint: endpoint.clone(),
        timeout: Duration::from_secs(1),
        hint: String::new(),
    };
    let err = plain_http_to_tls(timed_out, &endpoint, Duration::from_secs(1)).await;
    match &err {
        Error::InvalidEndpoint { reason, .. } => {
            assert_eq!(
                reason,
                &format!("the server there speaks TLS: use https://{addr}")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_plain_server_or_an_answer_from_etcd_keeps_its_error() {
    // A plain TCP server that closes at once does not speak TLS: the error stays.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            drop(tcp);
        }
    });
    let endpoint = format!("http://{addr}");
    let timed_out = Error::Timeout {
        operation: "member list",
        endpoint: endpoint.clone(),
        timeout: Duration::from_secs(1),
        hint: String::new(),
    };
    let err = plain_http_to_tls(timed_out, &endpoint, Duration::from_secs(1)).await;
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");

    // An answer from etcd proves plain HTTP/2 works there: not even probed.
    let tls_addr = tls_listener().await;
    let endpoint = format!("http://{tls_addr}");
    let answered = Error::Request {
        operation: "get",
        endpoint: endpoint.clone(),
        message: "etcdserver: permission denied".into(),
    };
    let err = plain_http_to_tls(answered, &endpoint, Duration::from_secs(1)).await;
    assert!(matches!(err, Error::Request { .. }), "{err:?}");
}

/// A CA and a server certificate for 127.0.0.1 signed by it, both with keys of `algorithm`.
fn ca_and_server(
    algorithm: &'static rcgen::SignatureAlgorithm,
) -> (
    String,
    rustls_pki_types::CertificateDer<'static>,
    rustls_pki_types::PrivateKeyDer<'static>,
) {
    ca_and_server_for(algorithm, "127.0.0.1")
}

/// A CA and a server certificate for `name` signed by it, both with keys of `algorithm`.
fn ca_and_server_for(
    algorithm: &'static rcgen::SignatureAlgorithm,
    name: &str,
) -> (
    String,
    rustls_pki_types::CertificateDer<'static>,
    rustls_pki_types::PrivateKeyDer<'static>,
) {
    let ca_key = rcgen::KeyPair::generate_for(algorithm).unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate_for(algorithm).unwrap();
    let cert = rcgen::CertificateParams::new(vec![name.to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    (ca.pem(), cert.der().clone(), key)
}

/// A TLS server (aws-lc-rs, as etcd's Go TLS offers every curve) on a loopback port for one
/// connection: it reports its side of the handshake, then holds the connection until the
/// client closes it.
async fn one_handshake_server(
    cert: rustls_pki_types::CertificateDer<'static>,
    key: rustls_pki_types::PrivateKeyDer<'static>,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Receiver<Result<(), String>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (acceptor, handshake) = serve_one_handshake(cert, key);
    tokio::spawn(async move {
        if let Ok((tcp, _)) = listener.accept().await {
            acceptor(tcp).await;
        }
    });
    (addr, handshake)
}

/// What [`one_handshake_server`] does with its one connection, for any listener: the
/// function to run on the accepted stream, and where its side of the handshake is reported.
#[allow(clippy::type_complexity)]
fn serve_one_handshake<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static>(
    cert: rustls_pki_types::CertificateDer<'static>,
    key: rustls_pki_types::PrivateKeyDer<'static>,
) -> (
    impl FnOnce(S) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    tokio::sync::oneshot::Receiver<Result<(), String>>,
) {
    use tokio::io::AsyncReadExt;
    let acceptor = tls_acceptor(cert, key);
    let (report, handshake) = tokio::sync::oneshot::channel();
    let serve =
        move |stream: S| -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
            Box::pin(async move {
                match acceptor.accept(stream).await {
                    Ok(mut stream) => {
                        let _ = report.send(Ok(()));
                        let mut sink = Vec::new();
                        let _ = stream.read_to_end(&mut sink).await;
                    }
                    Err(e) => {
                        let _ = report.send(Err(e.to_string()));
                    }
                }
            })
        };
    (serve, handshake)
}

/// Connects with our own client TLS, through `connect_endpoint`, to a server whose
/// certificate and CA have keys of `algorithm`; the handshake must complete on both sides.
async fn connects_to_a_server_with(
    algorithm: &'static rcgen::SignatureAlgorithm,
    insecure_skip_tls_verify: bool,
) {
    let (ca_pem, cert, key) = ca_and_server(algorithm);
    let (addr, handshake) = one_handshake_server(cert, key).await;
    let config = crate::config::ConnectionOptions {
        endpoints: Some(vec![format!("https://{addr}")]),
        cacert_pem: (!insecure_skip_tls_verify).then_some(ca_pem),
        insecure_skip_tls_verify: Some(insecure_skip_tls_verify),
        ..Default::default()
    }
    .build()
    .unwrap();
    let client = config.connect_endpoint(&format!("https://{addr}")).await;
    let server_side = handshake.await.unwrap();
    assert_eq!(server_side, Ok(()), "{algorithm:?}");
    assert!(client.is_ok(), "{algorithm:?}: {:?}", client.err());
}

#[tokio::test]
async fn a_p521_certificate_as_etcd_auto_tls_makes_is_accepted_verified_or_not() {
    connects_to_a_server_with(&rcgen::PKCS_ECDSA_P521_SHA512, false).await;
    connects_to_a_server_with(&rcgen::PKCS_ECDSA_P521_SHA512, true).await;
}

#[tokio::test]
async fn a_p384_certificate_is_accepted_verified_or_not() {
    connects_to_a_server_with(&rcgen::PKCS_ECDSA_P384_SHA384, false).await;
    connects_to_a_server_with(&rcgen::PKCS_ECDSA_P384_SHA384, true).await;
}

#[tokio::test]
async fn p256_rsa_and_ed25519_certificates_are_accepted() {
    for algorithm in [
        &rcgen::PKCS_ECDSA_P256_SHA256,
        &rcgen::PKCS_RSA_SHA256,
        &rcgen::PKCS_ED25519,
    ] {
        connects_to_a_server_with(algorithm, false).await;
    }
}

#[tokio::test]
async fn a_unixs_endpoint_is_tls_over_the_socket_checked_against_its_file_name() {
    let (ca_pem, cert, key) = ca_and_server_for(&rcgen::PKCS_ECDSA_P521_SHA512, "localhost");
    let dir = tempfile::tempdir().unwrap();
    // etcd's own spelling of a socket it listens on: the file `localhost:2379`.
    let socket = dir.path().join("localhost:2379");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let (serve, handshake) = serve_one_handshake(cert, key);
    tokio::spawn(async move {
        if let Ok((stream, _)) = listener.accept().await {
            serve(stream).await;
        }
    });
    let endpoint = format!("unixs://{}", socket.display());
    let config = crate::config::ConnectionOptions {
        endpoints: Some(vec![endpoint.clone()]),
        cacert_pem: Some(ca_pem),
        ..Default::default()
    }
    .build()
    .unwrap();
    let client = config.connect_endpoint(&endpoint).await;
    assert_eq!(handshake.await.unwrap(), Ok(()));
    let client = client.unwrap();
    assert_eq!(client.endpoint(), endpoint);
}
