//! Which options the errors' hints name, and which errors are transient.

use std::time::Duration;

use etcd_common::{Hinted, InvalidOption, Style, with_hint};

use super::*;

fn cli(err: &K8sError) -> String {
    with_hint(&err.to_string(), err.hint().as_ref(), Style::Cli)
}

#[test]
fn wrapped_errors_give_their_own_hint_and_transience() {
    let unreachable = K8sError::Etcd(etcd_core::Error::Unreachable {
        endpoint: "https://10.0.0.1:2379".into(),
        timeout: Duration::from_secs(2),
        reason: "connection refused".into(),
    });
    assert!(unreachable.is_transient());
    let discovery = K8sError::Etcd(etcd_core::Error::Discovery {
        domain: "example.com".into(),
        looked_up: "x".into(),
        reason: "none".into(),
    });
    assert!(!discovery.is_transient());
    assert_eq!(discovery.hint(), Some(Hint::option(options::ENDPOINTS)));
    let store = K8sError::Store(etcd_store::StoreError::Unreachable {
        store: "s3://b".into(),
        reason: "connection refused".into(),
    });
    assert!(store.is_transient());
    let missing = K8sError::Store(etcd_store::StoreError::NotFound {
        store: "s3://b".into(),
        name: "x".into(),
    });
    assert!(!missing.is_transient());
}

#[test]
fn k8s_errors_name_the_option_that_fixes_them() {
    let nothing = K8sError::NothingScanned {
        prefix: "/registry".into(),
        resources: "secrets".into(),
    };
    assert!(!nothing.to_string().contains("--"), "{nothing}");
    assert!(
        cli(&nothing).ends_with("(--prefix or --resources)"),
        "{}",
        cli(&nothing)
    );
    let no_etcd = K8sError::NoEtcdFound {
        root: "/".into(),
        looked: "no manifest".into(),
    };
    assert!(cli(&no_etcd).contains("--endpoints"), "{}", cli(&no_etcd));
    assert!(!no_etcd.to_string().contains("--"), "{no_etcd}");
    let replace = K8sError::WouldReplace {
        path: "/etc/k/enc.yaml".into(),
        keys: "aescbc: k1".into(),
    };
    assert_eq!(
        with_hint(&replace.to_string(), replace.hint().as_ref(), Style::Module)
            .rsplit_once(" (")
            .map(|(_, h)| h),
        Some("force: true)")
    );
    let bad_prefix = K8sError::from(InvalidOption::new(PREFIX, "empty"));
    assert_eq!(bad_prefix.hint(), Some(Hint::option(PREFIX)));
    let resource = K8sError::from(InvalidOption::new(RESOURCES, "bad").called("resource"));
    assert_eq!(resource.hint(), Some(Hint::option(RESOURCES)));
    for option in ["key", "step", "configuration"] {
        let err = K8sError::from(InvalidOption::input(option, "bad"));
        assert_eq!(err.hint(), None, "{option}");
        assert!(!err.is_transient());
    }
}

#[test]
fn the_operator_guard_is_passed_with_force() {
    let err = K8sError::ManagedByOperator {
        operation: "defrag".into(),
        evidence: "found /etc/kubernetes/manifests/etcd-pod.yaml".into(),
        procedure: "use the operator".into(),
    };
    assert_eq!(err.hint(), Some(Hint::option(options::FORCE)));
    assert!(!err.is_transient());
}
