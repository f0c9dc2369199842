//! The changing primitives under the facade (`etcd_core`'s defrag, membership and access
//! changes, `etcd_snapshot`'s restores) cannot be called without a guard decision:
//! the only real one is the [`Passed`] that [`Guards::check`] hands out, refused on an
//! OpenShift host unless forced, and refused by the primitive for any other operation than
//! the one checked. `Unguarded` is the only way around, and says so. No etcd needed: every
//! refusal comes before a dial.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

use std::path::Path;

use etcd_common::options::FORCE;
use etcd_core::{Client, Targets};
use etcd_snapshot::{
    Identities, PointInTime, RestoreRequest, Unguarded, open_snapshot_file, restore_snapshot,
    restore_to_point,
};
use etcdops::guard::{Force, Guards, Operation, Passed};
use etcdops::store::StoreOptions;
use etcdops::{Error, hint_of};

mod common;
use common::{openshift_host, unreachable_cluster};

async fn passed(host: &Path, operation: Operation, force: bool) -> etcdops::Result<Passed> {
    Guards::on_host(host)
        .check(operation, Force(force), None)
        .await
}

fn restore_into(dir: &Path) -> RestoreRequest {
    RestoreRequest {
        name: "m1".into(),
        initial_cluster: "m1=http://127.0.0.1:2380".into(),
        initial_cluster_token: "t".into(),
        initial_advertise_peer_urls: vec!["http://127.0.0.1:2380".into()],
        data_dir: dir.join("data"),
        ..RestoreRequest::default()
    }
}

#[tokio::test]
async fn on_openshift_no_decision_exists_for_the_core_defrag_unless_forced() {
    let host = openshift_host();
    let refused = passed(host.path(), Operation::Defrag, false)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("refusing `defrag`"),
        "{refused}"
    );
    assert_eq!(hint_of(&refused).unwrap().options, vec![FORCE]);
    // Forced, the decision lets the primitive through (it then fails on the dial).
    let forced = passed(host.path(), Operation::Defrag, true).await.unwrap();
    assert!(forced.warning().is_some());
    let client = Client::new(unreachable_cluster());
    let report = client
        .maintenance()
        .defrag(Targets::Configured, &forced)
        .await
        .unwrap();
    assert!(
        !report.completed && report.steps[0].error.is_some(),
        "{report:?}"
    );
    assert_eq!(client.dials(), 1);
}

#[tokio::test]
async fn the_core_defrag_refuses_a_decision_taken_for_another_operation_before_any_dial() {
    let plain = tempfile::tempdir().unwrap();
    let restore = passed(plain.path(), Operation::SnapshotRestore, false)
        .await
        .unwrap();
    let client = Client::new(unreachable_cluster());
    let refused: Error = client
        .maintenance()
        .defrag(Targets::Cluster, &restore)
        .await
        .unwrap_err();
    let message = refused.to_string();
    assert!(
        message.contains("checked for `snapshot restore`, not for `defrag`"),
        "{message}"
    );
    assert_eq!(client.dials(), 0);
    let free = etcd_core::Client::new(unreachable_cluster())
        .maintenance()
        .defrag(Targets::Configured, &restore)
        .await;
    assert!(free.is_err_and(|e| e.to_string().contains("not for `defrag`")));
}

#[tokio::test]
async fn the_snapshot_restore_primitives_refuse_without_the_restore_decision() {
    let host = openshift_host();
    let refused = passed(host.path(), Operation::SnapshotRestore, false)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("refusing `snapshot restore`"),
        "{refused}"
    );
    // A decision for another operation (taken on a plain host) does not restore.
    let plain = tempfile::tempdir().unwrap();
    let defrag = passed(plain.path(), Operation::Defrag, false)
        .await
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("backup.db");
    std::fs::write(&file, vec![0u8; 4096]).unwrap();
    let snapshot = open_snapshot_file(&file, None).unwrap();
    let request = restore_into(work.path());
    let error = restore_snapshot("backup.db", &snapshot, &request, &defrag).unwrap_err();
    assert!(
        error.to_string().contains("not for `snapshot restore`"),
        "{error}"
    );
    assert!(
        !request.data_dir.exists(),
        "a refused restore wrote nothing"
    );
    let mut request = restore_into(work.path());
    let pitr = restore_to_point(
        &mut request,
        "file:///nonexistent-store",
        PointInTime::Revision(5),
        &StoreOptions::default(),
        &Identities::none(),
        &defrag,
    )
    .await;
    let error = pitr.unwrap_err().to_string();
    assert!(error.contains("not for `snapshot restore`"), "{error}");
    assert!(!request.data_dir.exists());
}

#[tokio::test]
async fn the_restore_decision_and_unguarded_let_the_restore_through_to_its_own_checks() {
    let plain = tempfile::tempdir().unwrap();
    let restore = passed(plain.path(), Operation::SnapshotRestore, false)
        .await
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("backup.db");
    std::fs::write(&file, vec![0u8; 4096]).unwrap();
    let snapshot = open_snapshot_file(&file, None).unwrap();
    let request = restore_into(work.path());
    // Past the guard, the restore's own checks refuse a file that is not a db.
    for guard in [&restore as &dyn etcd_snapshot::RestoreGuard, &Unguarded] {
        let error = restore_snapshot("backup.db", &snapshot, &request, guard).unwrap_err();
        let message = error.to_string();
        assert!(!message.contains("snapshot restore`"), "{message}");
    }
}

/// The access primitives (auth, users, roles) take the guards' decision too: a decision for
/// another operation is refused before any member is dialled, and only one for
/// `AccessChange` lets the change through (to the dial, here).
#[tokio::test]
async fn the_access_primitives_refuse_without_the_access_decision() {
    let plain = tempfile::tempdir().unwrap();
    let client = Client::new(unreachable_cluster());
    let defrag = passed(plain.path(), Operation::Defrag, false)
        .await
        .unwrap();
    let refused = client.users().delete("root", &defrag).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("not for `auth, user or role change`"),
        "{refused}"
    );
    let refused = client.auth().disable(&defrag).await.unwrap_err();
    assert!(refused.to_string().contains("not for `auth"), "{refused}");
    let access = passed(plain.path(), Operation::AccessChange, false)
        .await
        .unwrap();
    let dialled = client.roles().add("r", &access).await.unwrap_err();
    assert!(
        !dialled.to_string().contains("the guards were checked"),
        "{dialled}"
    );
}

/// A downgrade enable through the `Client` takes the guards' decision too (validate and
/// cancel change no version): one for another operation is refused before any dial.
#[tokio::test]
async fn the_downgrade_enable_primitive_refuses_without_the_downgrade_decision() {
    use etcdops::downgrade::DowngradeCall;
    let plain = tempfile::tempdir().unwrap();
    let client = Client::new(unreachable_cluster());
    let defrag = passed(plain.path(), Operation::Defrag, false)
        .await
        .unwrap();
    let refused = client
        .downgrade(&DowngradeCall::enable("3.5"), &defrag)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("not for `downgrade`"),
        "{refused}"
    );
    assert_eq!(client.dials(), 0, "refused before dialing");
}
