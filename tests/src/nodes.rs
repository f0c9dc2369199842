//! Real-shaped hosts for the role tests: each member has its own loopback address
//! (127.0.0.2, .3, … as a real member has its node address) and listens there only, serves
//! clients and peers over TLS with a certificate that names that address alone, and reads its
//! settings the way a systemd unit does: `EnvironmentFile=` of the user's own env file (the
//! shape of `/etc/default/etcd`, with the listen and TLS settings the roles did not write) plus
//! drop-ins in `etcd.service.d/`. `tests/supervisor/etcd-supervisor` plays systemd. A role that
//! clobbers or ignores the user's file, or probes 127.0.0.1, fails here as on a real host.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, UNIX_EPOCH};

use etcd_client::{Client, ConnectOptions, TlsOptions};

use crate::certs::Certs;
use crate::etcd::EtcdVersion;
use crate::ports::free_port;
use crate::supervised::{SupervisedMember, supervisor_path};

static NEXT_ADDRESS: AtomicU32 = AtomicU32::new(0);

/// A cluster's ID and its members as `(name, member ID, learner)`, sorted by name.
pub type Membership = (u64, Vec<(String, u64, bool)>);

/// A loopback address no other host of this test process has: 127.0.0.2 onwards (Linux
/// answers on all of 127.0.0.0/8 without configuration).
fn next_address() -> Ipv4Addr {
    let n = NEXT_ADDRESS.fetch_add(1, Ordering::SeqCst);
    let (high, low) = (n / 250, n % 250);
    Ipv4Addr::new(
        127,
        0,
        u8::try_from(high).expect("fewer than 64000 hosts"),
        2 + low as u8,
    )
}

/// A port free on `ip` (and given to no other test of this process).
fn free_port_on(ip: Ipv4Addr) -> u16 {
    loop {
        let port = free_port();
        if TcpListener::bind((ip, port)).is_ok() {
            return port;
        }
    }
}

/// Three (or more) real-shaped member hosts, killed on drop.
#[derive(Debug)]
pub struct NodeCluster {
    /// Release under test.
    pub version: EtcdVersion,
    /// The members, in the order started or adopted.
    pub members: Vec<SupervisedMember>,
    /// The CA, the client certificate the tests and the roles use, and each host's own.
    pub certs: Certs,
    dir: tempfile::TempDir,
}

impl NodeCluster {
    /// Plans `size` hosts named `m0`, `m1`, …, each on its own address, writes their unit and
    /// env files (a new cluster's first start), starts them and waits until each serves.
    pub fn start(size: usize) -> NodeCluster {
        let dir = tempfile::Builder::new()
            .prefix("etcdops-nodes-")
            .tempdir()
            .expect("temp dir");
        let certs = Certs::generate(&dir.path().join("pki"));
        let mut cluster = NodeCluster {
            version: EtcdVersion::from_env(),
            members: Vec::new(),
            certs,
            dir,
        };
        let members: Vec<SupervisedMember> =
            (0..size).map(|i| cluster.plan(&format!("m{i}"))).collect();
        let initial = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let token = format!("nodes-{}", free_port());
        for member in &members {
            let mut env = std::fs::read_to_string(Self::env_file(member)).expect("read env");
            env = env
                .replace(
                    &format!("ETCD_INITIAL_CLUSTER={}={}\n", member.name, member.peer_url),
                    &format!("ETCD_INITIAL_CLUSTER={initial}\n"),
                )
                .replace(
                    "ETCD_INITIAL_CLUSTER_TOKEN=etcd-cluster\n",
                    &format!("ETCD_INITIAL_CLUSTER_TOKEN={token}\n"),
                );
            std::fs::write(Self::env_file(member), env).expect("write env");
            member.start();
        }
        cluster.members = members;
        for member in &cluster.members {
            cluster.wait_serving(member, Duration::from_secs(30));
        }
        cluster
    }

    /// The user's env file of `member` (its `/etc/default/etcd`).
    pub fn env_file(member: &SupervisedMember) -> PathBuf {
        member.dir.join("etcd.env")
    }

    /// The drop-in directory of `member`'s unit (its `/etc/systemd/system/etcd.service.d`).
    pub fn dropin_dir(member: &SupervisedMember) -> PathBuf {
        member.dir.join("etcd.service.d")
    }

    /// Prepares (without starting) a host: its address, certificate, unit and env file with
    /// the settings its admin wrote (name, data dir, listen and advertise URLs on its address,
    /// client and peer TLS, and a package's single-member first-start defaults a role must
    /// override). Not in the cluster until [`NodeCluster::adopt`].
    pub fn plan(&self, name: &str) -> SupervisedMember {
        let ip = next_address();
        let member = SupervisedMember {
            name: name.to_string(),
            client_url: format!("https://{ip}:{}", free_port_on(ip)),
            peer_url: format!("https://{ip}:{}", free_port_on(ip)),
            dir: self.dir.path().join(name),
        };
        std::fs::create_dir_all(&member.dir).expect("member dir");
        let host = self.certs.host_cert(name, IpAddr::V4(ip));
        let env = format!(
            "# etcd settings of {name} (the admin's /etc/default/etcd)\n\
             ETCD_NAME={name}\n\
             ETCD_DATA_DIR={data}\n\
             ETCD_LISTEN_CLIENT_URLS={client}\n\
             ETCD_ADVERTISE_CLIENT_URLS={client}\n\
             ETCD_LISTEN_PEER_URLS={peer}\n\
             ETCD_INITIAL_ADVERTISE_PEER_URLS={peer}\n\
             ETCD_INITIAL_CLUSTER={name}={peer}\n\
             ETCD_INITIAL_CLUSTER_STATE=new\n\
             ETCD_INITIAL_CLUSTER_TOKEN=etcd-cluster\n\
             ETCD_CERT_FILE={cert}\n\
             ETCD_KEY_FILE={key}\n\
             ETCD_TRUSTED_CA_FILE={ca}\n\
             ETCD_CLIENT_CERT_AUTH=true\n\
             ETCD_PEER_CERT_FILE={cert}\n\
             ETCD_PEER_KEY_FILE={key}\n\
             ETCD_PEER_TRUSTED_CA_FILE={ca}\n\
             ETCD_PEER_CLIENT_CERT_AUTH=true\n\
             ETCD_HEARTBEAT_INTERVAL=50\n\
             ETCD_ELECTION_TIMEOUT=500\n",
            data = member.data_dir().display(),
            client = member.client_url,
            peer = member.peer_url,
            cert = host.cert.display(),
            key = host.key.display(),
            ca = self.certs.ca.display(),
        );
        std::fs::write(Self::env_file(&member), env).expect("write env");
        std::fs::write(
            member.dir.join("etcd.unit"),
            format!(
                "[Unit]\nDescription=etcd {name}\n[Service]\nEnvironmentFile={}\nExecStart={}\n",
                Self::env_file(&member).display(),
                self.version.etcd().display()
            ),
        )
        .expect("write unit");
        std::fs::write(
            member.dir.join("etcd.bin"),
            self.version.etcd().display().to_string(),
        )
        .expect("write etcd.bin");
        member
    }

    /// Adds a planned member to those stopped on drop.
    pub fn adopt(&mut self, member: SupervisedMember) {
        self.members.push(member);
    }

    /// The directory the hosts live in (for test files too).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Client URLs of the members.
    pub fn client_urls(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// The inventory line of `member` as a newcomer writes it from the collection README:
    /// its address, name, URLs and data dir (no ports: the roles read them from the URLs).
    pub fn inventory_line(member: &SupervisedMember) -> String {
        let ip = member
            .client_url
            .trim_start_matches("https://")
            .rsplit_once(':')
            .map(|(host, _)| host.to_string())
            .unwrap_or_default();
        format!(
            "{name} ansible_connection=local ansible_host={ip} etcd_name={name} etcd_peer_url={} etcd_client_url={} etcd_data_dir={} etcd_member_dir={}\n",
            member.peer_url,
            member.client_url,
            member.data_dir().display(),
            member.dir.display(),
            name = member.name,
        )
    }

    /// The inventory of `members` in the group `etcd`.
    pub fn inventory(members: &[&SupervisedMember]) -> String {
        let lines: String = members.iter().map(|m| Self::inventory_line(m)).collect();
        format!("[etcd]\n{lines}")
    }

    /// How the roles run etcd here: `command` through the supervisor, whose drop-in
    /// directory is the unit's (`etcd_service_dropin_dir`); the backups the roles take before
    /// a change kept under the hosts' directory.
    pub fn service_vars(&self) -> serde_json::Value {
        let supervisor = supervisor_path().display().to_string();
        serde_json::json!({
            "etcd_service_manager": "command",
            "etcd_stop_command": format!("{supervisor} stop {{{{ etcd_member_dir }}}}"),
            "etcd_start_command": format!("{supervisor} start {{{{ etcd_member_dir }}}}"),
            "etcd_service_dropin_dir": "{{ etcd_member_dir }}/etcd.service.d",
            "etcd_stop_timeout": 60,
            "member_replace_backup_store": self.dir().join("before-change"),
            "restore_backup_store": self.dir().join("before-restore"),
        })
    }

    /// The connection settings a play sets once (`group/etcd.core.etcd` module defaults):
    /// `endpoints` and the client certificate with its CA.
    pub fn connection(&self, endpoints: &[String]) -> serde_json::Value {
        serde_json::json!({
            "endpoints": endpoints,
            "cacert": self.certs.ca,
            "cert": self.certs.client_cert,
            "key": self.certs.client_key,
        })
    }

    /// A play over `hosts` running `role` with `vars`, connected to `endpoints` with TLS.
    pub fn role_playbook(
        &self,
        hosts: &str,
        endpoints: &[String],
        role: &str,
        vars: serde_json::Value,
    ) -> String {
        serde_json::json!([{
            "hosts": hosts,
            "gather_facts": false,
            "module_defaults": {"group/etcd.core.etcd": self.connection(endpoints)},
            "roles": [{"role": role, "vars": vars}],
        }])
        .to_string()
    }

    /// A TLS client connected to `urls` (test setup and oracles only).
    pub async fn client(&self, urls: &[String]) -> Client {
        let read = |p: &PathBuf| std::fs::read(p).expect("read test cert");
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_timeout(Duration::from_secs(5))
            .with_tls(
                TlsOptions::new()
                    .ca_certificate(etcd_client::Certificate::from_pem(read(&self.certs.ca)))
                    .identity(etcd_client::Identity::from_pem(
                        read(&self.certs.client_cert),
                        read(&self.certs.client_key),
                    )),
            );
        Client::connect(urls.to_vec(), Some(options))
            .await
            .expect("connect test client")
    }

    /// `etcdctl` with the client certificate, against `endpoints`.
    pub fn etcdctl(&self, endpoints: &[String], args: &[&str]) -> std::process::Output {
        Command::new(self.version.etcdctl())
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &endpoints.join(",")])
            .arg("--cacert")
            .arg(&self.certs.ca)
            .arg("--cert")
            .arg(&self.certs.client_cert)
            .arg("--key")
            .arg(&self.certs.client_key)
            .args(["--dial-timeout", "2s", "--command-timeout", "5s"])
            .args(args)
            .output()
            .expect("run etcdctl")
    }

    /// Whether `member` answers `endpoint health` on its own URL.
    pub fn is_serving(&self, member: &SupervisedMember) -> bool {
        self.etcdctl(
            std::slice::from_ref(&member.client_url),
            &["endpoint", "health"],
        )
        .status
        .success()
    }

    /// Blocks until `member` answers `endpoint health`, or panics after `limit`.
    pub fn wait_serving(&self, member: &SupervisedMember, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.is_serving(member) {
            if Instant::now() > deadline {
                panic!(
                    "{} did not become healthy within {limit:?}; log:\n{}",
                    member.name,
                    std::fs::read_to_string(member.dir.join("etcd.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The cluster as the members see it: `(cluster ID, [(name, member ID, learner)])`
    /// sorted by name, read from `urls`.
    pub fn membership(&self, urls: &[String]) -> Membership {
        crate::etcd::block_on(async {
            let mut client = self.client(urls).await;
            let list = client.member_list().await.expect("member list");
            let mut members: Vec<(String, u64, bool)> = list
                .members()
                .iter()
                .map(|m| (m.name().to_string(), m.id(), m.is_learner()))
                .collect();
            members.sort();
            (list.header().expect("header").cluster_id(), members)
        })
    }

    /// Every file under the hosts' directories (data dirs, env files, units, drop-ins; not
    /// etcd's log or the supervisor's pid file) with its size, modification time and, for
    /// files up to 64 KiB, its content hash: what a run that changed nothing leaves as it was.
    /// The WAL and db of a running member are etcd's to write (an election, a member's
    /// published attributes, the commit a hash read forces): for those, their inode stands,
    /// which a restore or a move aside changes and etcd's own writes do not.
    pub fn disk_state(&self) -> BTreeMap<String, String> {
        let mut state = BTreeMap::new();
        for member in &self.members {
            walk(&member.dir, member.pid().is_some(), &mut state);
        }
        state
    }

    /// The pids of the members' etcd processes (`None` for a stopped one).
    pub fn pids(&self) -> Vec<Option<String>> {
        self.members.iter().map(SupervisedMember::pid).collect()
    }

    /// The addresses `member` listens on (client and peer), as `ss` sees them.
    pub fn listening(&self, member: &SupervisedMember) -> Vec<String> {
        let Some(pid) = member.pid() else {
            return Vec::new();
        };
        let out = Command::new("ss")
            .args(["-Hltnp"])
            .output()
            .expect("run ss");
        let mut found: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&format!("pid={pid},")))
            .filter_map(|l| l.split_whitespace().nth(3).map(str::to_string))
            .collect();
        found.sort();
        found
    }

    /// Asserts that `member` listens on its own client and peer addresses, and on nothing else.
    pub fn assert_listens_only_on_its_addresses(&self, member: &SupervisedMember) {
        let host_port = |url: &str| url.trim_start_matches("https://").to_string();
        let mut own = vec![host_port(&member.client_url), host_port(&member.peer_url)];
        own.sort();
        assert_eq!(self.listening(member), own, "{}", member.name);
    }
}

fn walk(dir: &Path, running: bool, state: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "etcd.log" || name == "etcd.pid" {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            state.insert(format!("{}/", path.display()), String::new());
            walk(&path, running, state);
            continue;
        }
        let text = path.to_string_lossy();
        if running && (text.contains("/member/wal/") || text.ends_with("/member/snap/db")) {
            use std::os::unix::fs::MetadataExt;
            state.insert(text.into_owned(), format!("inode {}", meta.ino()));
            continue;
        }
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let hash = if meta.len() <= 64 * 1024 {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(
                std::fs::read(&path).unwrap_or_default(),
            ))
        } else {
            String::new()
        };
        state.insert(
            path.display().to_string(),
            format!("{} bytes, mtime {modified}, {hash}", meta.len()),
        );
    }
}

impl Drop for NodeCluster {
    fn drop(&mut self) {
        for member in &self.members {
            if let Ok(pid) = std::fs::read_to_string(member.dir.join("etcd.pid")) {
                let _ = Command::new("kill").args(["-9", pid.trim()]).status();
            }
        }
    }
}
