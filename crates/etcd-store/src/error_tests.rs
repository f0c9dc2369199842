//! Scrubbing, the mapping of I/O and object_store errors, hints and transience.

use super::*;

#[test]
fn scrub_removes_values_quoted_by_serde() {
    let text = r#"Unable to decode service account file: invalid type: string "-----BEGIN PRIVATE KEY-----\"x", expected a map at line 1 column 40"#;
    let out = scrub(text);
    assert!(!out.contains("PRIVATE"), "{out}");
    assert!(
        out.contains("string \"<redacted>\", expected a map"),
        "{out}"
    );
}

#[test]
fn scrub_removes_query_strings_and_userinfo() {
    let text = "Error performing GET https://acct.blob.core.windows.net/c/x?sv=2020&sig=SECRET%2B in 1s, \
                then http://user:pass@host:9000/b?X-Amz-Signature=abc done";
    let out = scrub(text);
    assert!(!out.contains("SECRET"), "{out}");
    assert!(!out.contains("pass"), "{out}");
    assert!(!out.contains("X-Amz-Signature=abc"), "{out}");
    assert!(
        out.contains("https://acct.blob.core.windows.net/c/x?<redacted>"),
        "{out}"
    );
    assert!(out.contains("http://host:9000/b?<redacted> done"), "{out}");
}

#[test]
fn scrub_redacts_sig_outside_urls_and_known_secrets() {
    let ctx = ErrorContext {
        secrets: vec!["hunter22".into()],
        ..ErrorContext::default()
    };
    let out = ctx.scrub("token sv=1&sig=abc%3D&se=2 and key hunter22");
    assert_eq!(out, "token sv=1&sig=<redacted>&se=2 and key <redacted>");
}

#[test]
fn enospc_and_edquot_are_no_space() {
    for code in [28, 122] {
        let err = map_io(
            io::Error::from_raw_os_error(code),
            "upload",
            "/backups",
            "x.db",
            std::path::Path::new("/backups/.x.db.partial-1"),
        );
        assert!(matches!(err, StoreError::NoSpace { .. }), "{code}: {err:?}");
        assert!(err.to_string().contains("free space"), "{err}");
    }
}

fn generic(text: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "S3",
        source: text.to_string().into(),
    }
}

fn ctx() -> ErrorContext {
    ErrorContext {
        store: "s3://b".into(),
        bucket: "b".into(),
        backend: "S3",
        auth_hint: "set AWS_ACCESS_KEY_ID".into(),
        looked_up: None,
        secrets: vec!["topsecretkey".into()],
    }
}

#[test]
fn server_trouble_and_unreachable_stores_are_transient_and_the_rest_is_not() {
    for text in [
        "Server returned non-2xx status code: 503 Service Unavailable: <Error><Code>SlowDown</Code></Error>",
        "Server returned non-2xx status code: 500 Internal Server Error: boom",
        "Server returned non-2xx status code: 429 Too Many Requests: slow down",
        "Server returned error response: <Error><Code>ServerBusy</Code></Error>",
    ] {
        let err = map_object(generic(text), "upload", &ctx(), "x");
        assert!(
            matches!(err, StoreError::Unavailable { .. }),
            "{text}: {err:?}"
        );
        assert!(err.is_transient(), "{err:?}");
        assert!(
            err.to_string().starts_with("upload 'x' in s3://b failed"),
            "{err}"
        );
    }
    let unreachable = StoreError::Unreachable {
        store: "s3://b".into(),
        reason: "connection refused".into(),
    };
    assert!(unreachable.is_transient());
    let permanent = [
        map_object(
            generic(
                "Server returned non-2xx status code: 403 Forbidden: <Error><Code>AccessDenied</Code></Error>",
            ),
            "list",
            &ctx(),
            "",
        ),
        map_object(
            generic("Server returned non-2xx status code: 400 Bad Request: nope"),
            "list",
            &ctx(),
            "",
        ),
        StoreError::NotFound {
            store: "s3://b".into(),
            name: "x".into(),
        },
        StoreError::NoSpace {
            path: "/b/x".into(),
        },
        invalid_option(PART_SIZE, "too small"),
    ];
    for err in &permanent {
        assert!(!err.is_transient(), "{err:?}");
    }
}

#[test]
fn store_options_are_the_hint_of_their_errors() {
    use etcd_common::Style;
    let hint = |err: &StoreError| err.hint().map(|h| h.render(Style::Cli));
    assert_eq!(
        hint(&invalid_option(PART_SIZE, "bad")).as_deref(),
        Some("--part-size")
    );
    let endpoint = invalid_named("endpoint_override", STORE_ENDPOINT, "bad");
    assert_eq!(hint(&endpoint).as_deref(), Some("--store-endpoint"));
    assert_eq!(
        endpoint.to_string(),
        "invalid store option endpoint_override: bad"
    );
    assert_eq!(hint(&invalid_setting("ETCDOPS_PART_SIZE", "bad")), None);
    assert_eq!(hint(&invalid_setting("s3", "bad")), None);
    let plain = StoreError::PlainHttp {
        option: "s3_endpoint",
        endpoint: "http://h:9000".into(),
    };
    assert!(!plain.to_string().contains("--"), "{plain}");
    // The words of every front-end: the CLI's environment variable is its own hint's business.
    assert!(!plain.to_string().contains("ETCDOPS_"), "{plain}");
    assert_eq!(
        plain.hint().map(|h| h.render(Style::Module)).as_deref(),
        Some("allow_http: true")
    );
}

#[test]
fn local_io_errors_keep_their_source() {
    let err = map_io(
        io::Error::from(io::ErrorKind::PermissionDenied),
        "upload",
        "/backups",
        "x.db",
        std::path::Path::new("/backups/x.db"),
    );
    assert!(std::error::Error::source(&err).is_some(), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("(/backups/x.db): check the permissions"),
        "{text}"
    );
    assert!(!err.is_transient());
}

#[test]
fn object_errors_map_to_variants() {
    let missing = generic(
        "Error performing PUT http://h/b/x in 1ms - Server returned non-2xx status code: \
         404 Not Found: <Error><Code>NoSuchBucket</Code><Message>The specified bucket does \
         not exist</Message></Error>",
    );
    assert!(matches!(
        map_object(missing, "upload", &ctx(), "x"),
        StoreError::MissingBucket { .. }
    ));
    let denied = generic(
        "Error performing GET https://h/b?sig=topsecretkey in 1ms - Server returned non-2xx \
         status code: 403 Forbidden: <Error><Code>SignatureDoesNotMatch</Code><Message>key \
         topsecretkey bad</Message></Error>",
    );
    let err = map_object(denied, "download", &ctx(), "x");
    let text = err.to_string();
    assert!(matches!(err, StoreError::Auth { .. }), "{err:?}");
    assert!(text.contains("SignatureDoesNotMatch"), "{text}");
    assert!(text.contains("set AWS_ACCESS_KEY_ID"), "{text}");
    assert!(!text.contains("topsecretkey"), "{text}");
    let not_found = object_store::Error::NotFound {
        path: "x".into(),
        source: "404".into(),
    };
    assert!(matches!(
        map_object(not_found, "download", &ctx(), "x"),
        StoreError::NotFound { .. }
    ));
    // A server error is the transient kind of a failed operation.
    let other = generic("Server returned non-2xx status code: 500 Internal: boom");
    assert!(matches!(
        map_object(other, "list", &ctx(), ""),
        StoreError::Unavailable {
            operation: "list",
            ..
        }
    ));
    let other = generic("Server returned non-2xx status code: 400 Bad Request: no");
    assert!(matches!(
        map_object(other, "list", &ctx(), ""),
        StoreError::Operation {
            operation: "list",
            ..
        }
    ));
}

#[test]
fn without_credentials_a_refusal_that_is_not_the_stores_says_none_were_found() {
    // The instance metadata service (or a proxy in its way) refused: no S3 error code.
    let imds = generic(
        "Error performing PUT http://169.254.169.254/latest/api/token in 1ms - Server returned \
         non-2xx status code: 403 Forbidden: resolve_deny: denied destination",
    );
    let looked = ErrorContext {
        looked_up: Some("the environment (AWS_ACCESS_KEY_ID)".into()),
        ..ctx()
    };
    let err = map_object(imds, "list", &looked, "x");
    let text = err.to_string();
    assert!(matches!(err, StoreError::NoCredentials { .. }), "{err:?}");
    assert!(
        text.starts_with("no S3 credentials found for s3://b: looked in the environment"),
        "{text}"
    );
    assert!(!text.contains("refused"), "{text}");
    assert!(text.contains("set AWS_ACCESS_KEY_ID"), "{text}");
    // With credentials given, the same answer is a refusal of them.
    let imds = generic(
        "Server returned non-2xx status code: 403 Forbidden: resolve_deny: denied destination",
    );
    assert!(matches!(
        map_object(imds, "list", &ctx(), "x"),
        StoreError::Auth { .. }
    ));
    // The store's own refusal (an S3 error code) stays a refusal even without credentials:
    // an instance role's were used.
    let denied = generic(
        "Server returned non-2xx status code: 403 Forbidden: <Error><Code>AccessDenied</Code>\
         </Error>",
    );
    assert!(matches!(
        map_object(denied, "list", &looked, "x"),
        StoreError::Auth { .. }
    ));
    // The metadata service out of reach (off a cloud): none found, not an unreachable store.
    let unreachable = generic(
        "Error performing PUT http://169.254.169.254/latest/api/token in 2s - error sending \
         request: Connection refused",
    );
    let err = map_object(unreachable, "list", &looked, "x");
    assert!(matches!(err, StoreError::NoCredentials { .. }), "{err:?}");
}
