//! [`Client`] against a real etcd: one connection per endpoint, reused by every step of a
//! multi-step operation, and a failed dial never cached. The etcd binary is the one the
//! end-to-end suite uses (`ETCDOPS_ETCD35_BIN_DIR`, `ETCDOPS_ETCD34_BIN_DIR`, else
//! `/usr/bin/etcd`, which the project's install step provides).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::check::CheckOptions;
use crate::client::Client;
use crate::config::ClusterConfig;
use crate::guard::Unguarded;
use crate::maintenance::{CompactRequest, CompactTarget};
use crate::member::Targets;

fn etcd_binary() -> PathBuf {
    ["ETCDOPS_ETCD35_BIN_DIR", "ETCDOPS_ETCD34_BIN_DIR"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|dir| PathBuf::from(dir).join("etcd"))
        .find(|path| path.exists())
        .unwrap_or_else(|| PathBuf::from("/usr/bin/etcd"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A one-member etcd on loopback ports, killed and its data dir removed on drop.
struct Etcd {
    child: Child,
    dir: PathBuf,
    client_url: String,
}

impl Etcd {
    fn start() -> Etcd {
        let (client, peer) = (free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let dir =
            std::env::temp_dir().join(format!("etcd-core-client-{}-{client}", std::process::id()));
        let child = Command::new(etcd_binary())
            .args(["--name", "m0", "--data-dir"])
            .arg(&dir)
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("m0={peer_url}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("etcd starts (install it: scripts/install-deps)");
        Etcd {
            child,
            dir,
            client_url,
        }
    }

    /// Waits until etcd answers a member list (each try its own connection).
    async fn ready(&self) -> ClusterConfig {
        let config = ClusterConfig::for_endpoints([self.client_url.as_str()]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Client::new(config.clone()).members().list().await.is_err() {
            assert!(Instant::now() < deadline, "etcd did not start in 30s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        config
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn check_and_every_later_call_reuse_one_connection_per_member() {
    let etcd = Etcd::start();
    let client = Client::new(etcd.ready().await);
    assert_eq!(client.dials(), 0, "nothing is dialed before the first call");

    // `check` reads the member list, each member's status and health, the alarms and the KV
    // hashes: before the Client, each of those steps dialed again (2 per member + 3).
    let report = client.check(&CheckOptions::default()).await.unwrap();
    assert_eq!(report.cluster.members.len(), 1);
    assert!(report.alarms_error.is_none(), "{report:?}");
    assert!(report.hashkv.as_ref().is_some_and(|h| h.all_agree));
    assert_eq!(client.dials(), 1, "one member, one connection");

    // Later operations on the same handle (and its clones) dial nothing more.
    let clone = client.clone();
    clone.cluster_view().await.unwrap();
    clone.endpoints().health(Targets::Cluster).await.unwrap();
    let compacted = clone
        .maintenance()
        .compact(&CompactRequest::new(CompactTarget::KeepRevisions(0)).dry_run(true))
        .await
        .unwrap();
    assert!(compacted.changed && compacted.revision == compacted.current_revision);
    let defrag = clone
        .maintenance()
        .defrag(Targets::Cluster, &Unguarded)
        .await
        .unwrap();
    assert!(defrag.completed, "{defrag:?}");
    assert_eq!(client.dials(), 1);
}

#[tokio::test]
async fn concurrent_callers_share_one_dial() {
    let etcd = Etcd::start();
    let client = Client::new(etcd.ready().await);
    let url = etcd.client_url.clone();
    let results = client.each(&[url.clone(), url.clone(), url]).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(client.dials(), 1);
}

#[tokio::test]
async fn a_failed_dial_is_not_kept_the_next_call_dials_again() {
    // Nobody listens on this port: each call tries again (a member may come back during a
    // rolling operation), none reuses the failure.
    let port = free_port();
    let config = ClusterConfig::for_endpoints([format!("http://127.0.0.1:{port}")]).unwrap();
    let client = Client::new(config);
    for expected in 1..=2 {
        let err = client.members().list().await.unwrap_err();
        assert!(err.is_endpoint_failure(), "{err}");
        assert_eq!(client.dials(), expected);
    }
}

#[test]
fn a_client_never_prints_a_password_of_an_endpoint_url() {
    let mut config = ClusterConfig::for_endpoints(["http://127.0.0.1:2379"]).unwrap();
    config.endpoints = vec!["http://root:hunter2@127.0.0.1:2379".into()];
    let printed = format!("{:?}", Client::new(config));
    assert!(!printed.contains("hunter2"), "{printed}");
    assert!(printed.contains("127.0.0.1:2379"), "{printed}");
}

/// Refuses every change, naming it.
struct RefuseAll;

impl crate::guard::ChangeGuard for RefuseAll {
    type Error = crate::error::Error;

    fn check(&self, change: crate::guard::Change<'_>) -> crate::error::Result<()> {
        Err(crate::error::Error::Refused {
            reason: format!("test guard refuses {}", change.words()),
        })
    }
}

#[tokio::test]
async fn every_membership_primitive_asks_its_guard_before_changing() {
    use crate::membership::MemberAddRequest;
    let etcd = Etcd::start();
    let client = Client::new(etcd.ready().await);
    let members = client.members();
    let before = members.list().await.unwrap();
    let new_peer = vec![format!("http://127.0.0.1:{}", free_port())];
    let refused = members
        .update("m0", &new_peer, false, &RefuseAll)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("refuses member update"),
        "{refused}"
    );
    let refused = members.remove("m0", false, &RefuseAll).await.unwrap_err();
    assert!(
        refused.to_string().contains("refuses member remove"),
        "{refused}"
    );
    let add = MemberAddRequest {
        name: "m1".into(),
        peer_urls: new_peer.clone(),
        learner: true,
        dry_run: false,
    };
    let refused = members.add(&add, &RefuseAll).await.unwrap_err();
    assert!(
        refused.to_string().contains("refuses member add"),
        "{refused}"
    );
    // m0 votes already: promote confirms it without asking (nothing to change).
    assert!(
        !members
            .promote("m0", false, &RefuseAll)
            .await
            .unwrap()
            .changed
    );
    assert_eq!(members.list().await.unwrap(), before);
    // Unguarded is the named way past: the dry-run update goes through to its answer.
    let would = members
        .update("m0", &new_peer, true, &Unguarded)
        .await
        .unwrap();
    assert!(
        would.changed && would.message.contains("dry run"),
        "{would:?}"
    );
}
