//! Which errors are transient, and which options their hints name.

use std::time::Duration;

use etcd_common::{Hinted, InvalidOption, Style, with_hint};

use super::*;

fn cli(err: &Error) -> String {
    with_hint(&err.to_string(), err.hint().as_ref(), Style::Cli)
}

#[test]
fn endpoint_trouble_is_transient_and_bad_input_is_not() {
    let transient = [
        Error::Unreachable {
            endpoint: "https://10.0.0.1:2379".into(),
            timeout: Duration::from_secs(2),
            reason: "connection refused".into(),
        },
        Error::Unavailable {
            operation: "get",
            endpoint: "https://10.0.0.1:2379".into(),
            message: "etcdserver: leader changed".into(),
        },
        Error::Timeout {
            operation: "status",
            endpoint: "https://10.0.0.1:2379".into(),
            timeout: Duration::from_secs(5),
            hint: String::new(),
        },
        Error::NoEndpointAvailable {
            errors: vec![
                Error::Unreachable {
                    endpoint: "a".into(),
                    timeout: Duration::from_secs(5),
                    reason: "refused".into(),
                },
                Error::Unreachable {
                    endpoint: "b".into(),
                    timeout: Duration::from_secs(5),
                    reason: "refused".into(),
                },
            ],
        },
        Error::Request {
            operation: "put",
            endpoint: "e".into(),
            message: "etcdserver: too many requests".into(),
        },
    ];
    for err in &transient {
        assert!(err.is_transient(), "should be transient: {err:?}");
    }
    let permanent = [
        InvalidOption::new(DIAL_TIMEOUT, "must be greater than zero").into(),
        Error::AuthFailed {
            endpoint: "e".into(),
            user: "root".into(),
            detail: "authentication failed".into(),
        },
        Error::Tls {
            endpoint: "e".into(),
            reason: "unknown issuer".into(),
        },
        Error::Request {
            operation: "user get",
            endpoint: "e".into(),
            message: "etcdserver: user name not found".into(),
        },
        Error::PermissionDenied {
            operation: "user list",
            endpoint: "e".into(),
            message: "etcdserver: permission denied".into(),
        },
        Error::Refused {
            reason: "no".into(),
        },
    ];
    for err in &permanent {
        assert!(!err.is_transient(), "should not be transient: {err:?}");
    }
}

#[test]
fn connection_options_are_the_hint_of_their_invalid_option() {
    let err = Error::from(InvalidOption::new(
        DIAL_TIMEOUT,
        "must be greater than zero (for example 5s)",
    ));
    assert_eq!(
        cli(&err),
        "invalid dial_timeout: must be greater than zero (for example 5s) (--dial-timeout)"
    );
    // A connection option is the hint of its error.
    let err = Error::from(InvalidOption::new(SERVER_NAME, "not a name"));
    assert_eq!(err.hint(), Some(Hint::option(SERVER_NAME)));
    // An environment variable or a name that is no option has no hint.
    for option in ["ETCDCTL_DIAL_TIMEOUT", "lease ID", "user name"] {
        let err = Error::from(InvalidOption::input(option, "bad"));
        assert_eq!(err.hint(), None, "{option}");
    }
}

#[test]
fn variants_name_the_option_that_fixes_them() {
    let discovery = Error::Discovery {
        domain: "example.com".into(),
        looked_up: "_etcd-client-ssl._tcp.example.com".into(),
        reason: "no records".into(),
    };
    assert!(!discovery.to_string().contains("--"), "{discovery}");
    assert!(cli(&discovery).ends_with("(--endpoints)"), "{discovery}");

    let denied = Error::PermissionDenied {
        operation: "auth disable",
        endpoint: "e".into(),
        message: "permission denied".into(),
    };
    assert_eq!(denied.hint(), Some(Hint::option(options::USER)));

    let guarded = Error::Guarded {
        reason: "the cluster holds Kubernetes data".into(),
        hint: Hint::option(options::FORCE),
    };
    assert_eq!(
        cli(&guarded),
        "refused: the cluster holds Kubernetes data (--force)"
    );
    assert_eq!(
        with_hint(&guarded.to_string(), guarded.hint().as_ref(), Style::Module),
        "refused: the cluster holds Kubernetes data (force: true)"
    );

    let ca = Error::ReadFile {
        what: "CA certificate",
        path: "/nope/ca.crt".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    };
    assert_eq!(ca.hint(), Some(Hint::option(options::CACERT)));
    assert!(std::error::Error::source(&ca).is_some());

    let timeout = |hint: &str| Error::Timeout {
        operation: "status",
        endpoint: "https://e:2379".into(),
        timeout: Duration::from_secs(5),
        hint: hint.into(),
    };
    assert_eq!(timeout("").hint(), None);
    assert_eq!(
        timeout("; etcd may require a client certificate").hint(),
        Some(Hint::any_of(&[options::CERT, options::KEY]))
    );
    assert_eq!(
        Error::Refused {
            reason: "no".into()
        }
        .hint(),
        None
    );
}

#[test]
fn endpoints_failing_alike_keep_their_hint_and_a_bad_ca_is_not_worth_a_retry() {
    let tls = |endpoint: &str| Error::TlsSetting {
        endpoint: endpoint.into(),
        reason: "the server's certificate is not signed by a trusted CA".into(),
        hint: Hint::any_of(&[options::CACERT, options::INSECURE_SKIP_TLS_VERIFY]),
    };
    let all = Error::NoEndpointAvailable {
        errors: vec![tls("https://a:2379"), tls("https://b:2379")],
    };
    assert_eq!(
        all.hint(),
        Some(Hint::any_of(&[
            options::CACERT,
            options::INSECURE_SKIP_TLS_VERIFY
        ]))
    );
    assert!(!all.is_transient());
    assert!(
        all.to_string().contains("https://a:2379") && all.to_string().contains("https://b:2379")
    );
}
