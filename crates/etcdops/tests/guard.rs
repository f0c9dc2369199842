//! A library caller, not a front-end, is refused by the OpenShift operator guard: the
//! workflows of `etcdops::member` pass it themselves, with `force` as the refusal's hint.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

use etcd_common::{Style, options::FORCE, with_hint};

use etcdops::guard::{Force, Guards, Operation};
use etcdops::member::{self, AddRequest, MemberRequest, RemoveRequest, Wanted};
use etcdops::{Error, hint_of};

mod common;
use common::{openshift_host, unreachable_cluster};

fn assert_operator_refusal(error: &Error, operation: &str) {
    let message = error.to_string();
    assert!(
        message.contains("OpenShift's cluster-etcd-operator manages this etcd"),
        "{message}"
    );
    assert!(
        message.contains(&format!("refusing `{operation}`")),
        "{message}"
    );
    assert!(
        message.contains("etc/kubernetes/manifests/etcd-pod.yaml"),
        "{message}"
    );
    // Neutral words: no front-end's spelling in the message; the hint carries the option.
    assert!(
        !message.contains("--") && !message.contains("etcdops "),
        "{message}"
    );
    let hint = hint_of(error).expect("the refusal names the option that gets past it");
    assert_eq!(hint.options, vec![FORCE]);
    assert!(with_hint(&message, Some(&hint), Style::Cli).ends_with(" (--force)"));
    assert!(with_hint(&message, Some(&hint), Style::Module).ends_with(" (force: true)"));
}

#[tokio::test]
async fn member_remove_called_from_a_program_is_refused_on_openshift() {
    let host = openshift_host();
    let request = RemoveRequest {
        member: "etcd-2".into(),
        ..Default::default()
    };
    let refused = member::remove(
        &unreachable_cluster(),
        &Guards::on_host(host.path()),
        &request,
    )
    .await
    .unwrap_err();
    assert_operator_refusal(&refused, "member remove");
}

#[tokio::test]
async fn every_membership_change_is_refused_on_openshift_also_in_a_dry_run() {
    let host = openshift_host();
    let guards = Guards::on_host(host.path());
    let config = unreachable_cluster();
    let add = AddRequest {
        name: "etcd-9".into(),
        peer_urls: vec!["https://10.0.0.9:2380".into()],
        learner: true,
        dry_run: true,
        ..Default::default()
    };
    assert_operator_refusal(
        &member::add(&config, &guards, &add).await.unwrap_err(),
        "member add",
    );
    for (state, operation) in [
        (Wanted::Absent, "member remove"),
        (Wanted::Promoted, "member promote"),
        (Wanted::Updated, "member update"),
    ] {
        let request = MemberRequest {
            state,
            member: Some("etcd-2".into()),
            peer_urls: vec!["https://10.0.0.2:2380".into()],
            dry_run: true,
            ..Default::default()
        };
        let refused = member::apply(&config, &guards, &request).await.unwrap_err();
        assert_operator_refusal(&refused, operation);
    }
}

#[tokio::test]
async fn forced_the_guard_passes_with_its_warning_and_the_workflow_goes_on() {
    let host = openshift_host();
    let guards = Guards::on_host(host.path());
    let passed = guards
        .check(Operation::MemberRemove, Force(true), None)
        .await
        .unwrap();
    let warning = passed.warning().expect("a forced guard warns");
    assert!(
        warning.starts_with("forced: running `member remove`"),
        "{warning}"
    );
    assert!(warning.contains("behind the operator's back"), "{warning}");

    // Forced, the removal gets past the guard and only then fails: nobody listens.
    let request = RemoveRequest {
        member: "etcd-2".into(),
        force: Force(true),
        dry_run: true,
    };
    let error = member::remove(&unreachable_cluster(), &guards, &request)
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(!message.contains("cluster-etcd-operator"), "{message}");
    assert_ne!(
        hint_of(&error).map(|h| h.options),
        Some(vec![FORCE]),
        "{message}"
    );
}

#[tokio::test]
async fn a_plain_host_is_not_refused() {
    let plain = tempfile::tempdir().unwrap();
    let passed = Guards::on_host(plain.path())
        .check(Operation::Defrag, Force(false), None)
        .await
        .unwrap();
    assert_eq!(passed.warning(), None);
    assert!(!passed.operator.managed_by_operator);
}

#[tokio::test]
async fn every_access_change_is_refused_on_openshift() {
    use etcdops::access::{
        AccessChange, AccessRequest, KeyRange, PermissionGrant, PermissionKind, change,
    };

    let host = openshift_host();
    let guards = Guards::on_host(host.path());
    let client = etcdops::client::Client::new(unreachable_cluster());
    let keys = KeyRange {
        key: "/app/".into(),
        prefix: true,
        ..Default::default()
    };
    let changes = [
        AccessChange::AuthEnable,
        AccessChange::AuthDisable,
        AccessChange::UserAdd {
            name: "app".into(),
            password: None,
        },
        AccessChange::UserDelete { name: "app".into() },
        AccessChange::UserPasswd {
            name: "app".into(),
            password: etcdops::client::Secret::new("s3cret"),
        },
        AccessChange::UserGrantRole {
            name: "app".into(),
            role: "app".into(),
        },
        AccessChange::UserRevokeRole {
            name: "app".into(),
            role: "app".into(),
        },
        AccessChange::RoleAdd { name: "app".into() },
        AccessChange::RoleDelete { name: "app".into() },
        AccessChange::RoleGrantPermission(PermissionGrant {
            role: "app".into(),
            permission: PermissionKind::Read,
            keys: keys.clone(),
        }),
        AccessChange::RoleRevokePermission {
            role: "app".into(),
            keys,
        },
    ];
    for asked in changes {
        let refused = change(&client, &guards, &AccessRequest::new(asked.clone()))
            .await
            .unwrap_err();
        assert_operator_refusal(&refused, Operation::AccessChange.words());
        assert!(!refused.to_string().contains("s3cret"), "{refused}");
    }
}

/// The host-file changes a platform owns pass the operator guard too, in check mode as well:
/// refused on OpenShift before anything is written; forced, they run and say so.
#[tokio::test]
async fn every_host_file_change_is_refused_on_openshift_before_it_writes() {
    use etcdops::host_files::{
        adopt_wal_tail, encryption_config, ensure_ca, ensure_member_certificate,
        write_server_config,
    };

    let host = openshift_host();
    let guards = Guards::on_host(host.path());
    let dir = tempfile::tempdir().unwrap();
    let ca_cert = dir.path().join("ca.crt");
    let ca_key = dir.path().join("ca.key");
    let mut ca = etcd_host::CaRequest::new(&ca_cert, &ca_key);
    let member = etcd_host::MemberCertRequest::new(
        &ca,
        "m0",
        dir.path().join("m0.crt"),
        dir.path().join("m0.key"),
    );
    let server = etcd_host::ServerConfigRequest {
        path: dir.path().join("etcd.yaml"),
        config: etcd_host::ServerConfig {
            name: "m0".into(),
            ..Default::default()
        },
        check_mode: false,
    };
    let encryption = etcd_k8s::EncryptionConfigRequest {
        path: dir.path().join("encryption.yaml"),
        step: etcd_k8s::ConfigStep::Promote,
        provider: Default::default(),
        resources: vec!["secrets".into()],
        key: None,
        key_name: Some("k1".into()),
        check_mode: false,
        force: false,
        identity_first: false,
    };
    let data_dir = dir.path().join("member-data");
    for check_mode in [true, false] {
        ca.check_mode = check_mode;
        let refusals = [
            (
                ensure_ca(&guards, &ca, Force(false)).await.unwrap_err(),
                Operation::CertificateIssue,
            ),
            (
                ensure_member_certificate(&guards, &member, Force(false))
                    .await
                    .unwrap_err(),
                Operation::CertificateIssue,
            ),
            (
                write_server_config(&guards, &server, Force(false))
                    .await
                    .unwrap_err(),
                Operation::ServerConfigWrite,
            ),
            (
                encryption_config(&guards, &encryption).await.unwrap_err(),
                Operation::EncryptionConfig,
            ),
            (
                adopt_wal_tail(&guards, &data_dir, check_mode, Force(false))
                    .await
                    .unwrap_err(),
                Operation::WalTailAdoption,
            ),
        ];
        for (refused, operation) in refusals {
            assert_operator_refusal(&refused, operation.words());
        }
    }
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(written.is_empty(), "refused changes wrote {written:?}");

    // Forced, the CA is made, with the guard's warning; the others get past the guard and
    // then meet their own checks (no OpenShift refusal).
    ca.check_mode = false;
    let done = ensure_ca(&guards, &ca, Force(true)).await.unwrap();
    assert!(done.result.changed && ca_cert.exists());
    let warning = done.forced.expect("a forced change says so");
    assert!(warning.contains("OpenShift"), "{warning}");
    let forced = [
        write_server_config(&guards, &server, Force(true))
            .await
            .err(),
        encryption_config(
            &guards,
            &etcd_k8s::EncryptionConfigRequest {
                force: true,
                ..encryption.clone()
            },
        )
        .await
        .err(),
        adopt_wal_tail(&guards, &data_dir, false, Force(true))
            .await
            .err(),
    ];
    for error in forced.into_iter().flatten() {
        let message = error.to_string();
        assert!(!message.contains("cluster-etcd-operator"), "{message}");
    }
}
