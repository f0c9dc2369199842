//! The guards of `downgrade enable`, decided before any connection: refused on a host where
//! OpenShift's cluster-etcd-operator owns etcd (its version included) unless forced, and
//! refused without a store to find a verified backup in unless forced; validate and cancel
//! are not guarded. No etcd needed: every refusal comes before a dial (the cluster here has
//! nobody listening).
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

use etcd_common::options::FORCE;
use etcd_core::Client;
use etcdops::downgrade::{DowngradeCall, DowngradeRequest, MAX_BACKUP_AGE, STORE, downgrade};
use etcdops::guard::Guards;
use etcdops::hint_of;

mod common;
use common::{openshift_host, unreachable_cluster};

/// OpenShift's operator guard refused the enable, with `force` as the way past it, before
/// `client` dialled anything.
fn assert_refused_for_openshift(refused: &etcdops::Error, client: &Client) {
    assert!(
        refused.to_string().contains("refusing `downgrade`"),
        "{refused}"
    );
    assert_eq!(hint_of(refused).unwrap().options, vec![FORCE]);
    assert_eq!(client.dials(), 0, "refused before dialing");
}

#[tokio::test]
async fn enable_without_a_store_is_refused_before_any_connection() {
    let plain = tempfile::tempdir().unwrap();
    let client = Client::new(unreachable_cluster());
    let request = DowngradeRequest::new(DowngradeCall::enable("3.5"));
    let refused = downgrade(&client, &Guards::on_host(plain.path()), &request)
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("verified backup of this cluster newer than 1h"),
        "{refused}"
    );
    assert_eq!(hint_of(&refused).unwrap().options, vec![STORE, FORCE]);
    assert_eq!(client.dials(), 0, "refused before dialing");
    assert_ne!(STORE, MAX_BACKUP_AGE);

    // Forced, it goes on to etcd (and fails there, nobody listens).
    let forced = downgrade(
        &client,
        &Guards::on_host(plain.path()),
        &request.force(true),
    )
    .await
    .unwrap_err();
    assert!(
        hint_of(&forced).is_none_or(|h| !h.options.contains(&STORE)),
        "{forced}"
    );
    assert!(client.dials() > 0, "forced, it dials");
}

#[tokio::test]
async fn on_openshift_enable_is_refused_unless_forced_validate_is_not() {
    let host = openshift_host();
    let guards = Guards::on_host(host.path());
    let client = Client::new(unreachable_cluster());
    let enable = DowngradeRequest::new(DowngradeCall::enable("3.5")).store("/nonexistent");
    let refused = downgrade(&client, &guards, &enable).await.unwrap_err();
    assert_refused_for_openshift(&refused, &client);

    // Validate changes nothing: not guarded, it goes to etcd.
    let validate = DowngradeRequest::new(DowngradeCall::validate("3.5"));
    let unreachable = downgrade(&client, &guards, &validate).await.unwrap_err();
    assert!(
        !unreachable.to_string().contains("refusing"),
        "{unreachable}"
    );
    assert!(client.dials() > 0);
}

/// With a backup asked before the change, the guards still come first: on OpenShift the
/// refusal comes before etcd is asked and before anything is written to the backup store.
#[tokio::test]
async fn on_openshift_enable_with_a_backup_before_is_refused_before_the_backup() {
    let host = openshift_host();
    let guards = Guards::on_host(host.path());
    let client = Client::new(unreachable_cluster());
    let store = tempfile::tempdir().unwrap();
    let mut enable = DowngradeRequest::new(DowngradeCall::enable("3.5"));
    enable.backup_to = Some(store.path().display().to_string());
    let refused = downgrade(&client, &guards, &enable).await.unwrap_err();
    assert_refused_for_openshift(&refused, &client);
    let written: Vec<_> = std::fs::read_dir(store.path()).unwrap().collect();
    assert!(written.is_empty(), "a refused downgrade wrote {written:?}");
}
