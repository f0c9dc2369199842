//! Clusters whose members run under `tests/supervisor/etcd-supervisor`, the stand-in for
//! systemd that the Ansible roles stop and start (through `etcd_service_manager: command`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::etcd::EtcdVersion;
use crate::ports::free_port;

/// Path of the supervisor script.
pub fn supervisor_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("supervisor/etcd-supervisor")
}

/// One member: a directory with `etcd.env`, `etcd.bin`, its data dir and log.
#[derive(Debug, Clone)]
pub struct SupervisedMember {
    /// Member name.
    pub name: String,
    /// Client URL.
    pub client_url: String,
    /// Peer URL.
    pub peer_url: String,
    /// The member's directory (what the supervisor is given).
    pub dir: PathBuf,
}

impl SupervisedMember {
    /// Its data dir.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn port(url: &str) -> &str {
        url.rsplit(':').next().unwrap_or_default()
    }

    /// Its line in an Ansible inventory (local connection; the role variables set).
    pub fn inventory_line(&self) -> String {
        format!(
            "{} ansible_connection=local etcd_name={} etcd_peer_url={} etcd_client_url={} etcd_data_dir={} etcd_member_dir={} etcd_client_port={} etcd_peer_port={}\n",
            self.name,
            self.name,
            self.peer_url,
            self.client_url,
            self.data_dir().display(),
            self.dir.display(),
            Self::port(&self.client_url),
            Self::port(&self.peer_url),
        )
    }

    fn supervise(&self, action: &str) -> bool {
        Command::new(supervisor_path())
            .arg(action)
            .arg(&self.dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    /// Starts the member through the supervisor.
    pub fn start(&self) {
        assert!(
            self.supervise("start"),
            "supervisor could not start {}",
            self.name
        );
    }

    /// The pid of its etcd, from the supervisor's pid file, while that process lives.
    pub fn pid(&self) -> Option<String> {
        let pid = std::fs::read_to_string(self.dir.join("etcd.pid")).ok()?;
        let pid = pid.trim().to_string();
        Path::new("/proc").join(&pid).exists().then_some(pid)
    }

    /// Kills its etcd with SIGKILL (a crash; all members at once: a power cut, as far as
    /// the page cache survives it) and returns once the process is gone.
    pub fn kill(&self) {
        let Some(pid) = self.pid() else { return };
        let _ = Command::new("kill").args(["-9", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        // A killed child of the supervisor's nohup is reaped by init: gone from /proc.
        while Path::new("/proc").join(&pid).exists() && Instant::now() < deadline {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.split_whitespace().nth(2) == Some("Z") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // As systemd would see it: the unit is dead (a zombie may wait for its reaper).
        let _ = std::fs::remove_file(self.dir.join("etcd.pid"));
    }

    /// Stops the member through the supervisor (returns once the process is gone).
    pub fn stop(&self) {
        assert!(
            self.supervise("stop"),
            "supervisor could not stop {}",
            self.name
        );
    }
}

/// A plain-http cluster under the supervisor, stopped on drop.
#[derive(Debug)]
pub struct SupervisedCluster {
    /// Release under test.
    pub version: EtcdVersion,
    /// Members.
    pub members: Vec<SupervisedMember>,
    dir: tempfile::TempDir,
}

impl SupervisedCluster {
    /// Writes `size` members' settings, starts them and waits until each answers.
    pub fn start(size: usize) -> SupervisedCluster {
        let dir = tempfile::Builder::new()
            .prefix("etcdops-supervised-")
            .tempdir()
            .expect("temp dir");
        let mut cluster = SupervisedCluster {
            version: EtcdVersion::from_env(),
            members: Vec::new(),
            dir,
        };
        let members: Vec<SupervisedMember> =
            (0..size).map(|i| cluster.plan(&format!("m{i}"))).collect();
        let initial = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let token = format!("supervised-{}", free_port());
        for member in &members {
            let first_start = format!(
                "ETCD_NAME={}\nETCD_INITIAL_CLUSTER={initial}\nETCD_INITIAL_CLUSTER_STATE=new\nETCD_INITIAL_CLUSTER_TOKEN={token}\nETCD_INITIAL_ADVERTISE_PEER_URLS={}\n",
                member.name, member.peer_url
            );
            std::fs::write(member.dir.join("etcd-initial.env"), first_start).expect("write env");
            member.start();
        }
        cluster.members = members;
        for member in &cluster.members {
            cluster.wait_serving(member, Duration::from_secs(30));
        }
        cluster
    }

    /// Prepares (without starting) a member directory with its listen settings; a role writes
    /// its first-start settings (`etcd-initial.env`).
    pub fn plan(&self, name: &str) -> SupervisedMember {
        let member = SupervisedMember {
            name: name.to_string(),
            client_url: format!("http://127.0.0.1:{}", free_port()),
            peer_url: format!("http://127.0.0.1:{}", free_port()),
            dir: self.dir.path().join(name),
        };
        std::fs::create_dir_all(&member.dir).expect("member dir");
        let env = format!(
            "ETCD_DATA_DIR={}\nETCD_LISTEN_CLIENT_URLS={}\nETCD_ADVERTISE_CLIENT_URLS={}\nETCD_LISTEN_PEER_URLS={}\nETCD_HEARTBEAT_INTERVAL=50\nETCD_ELECTION_TIMEOUT=500\n",
            member.data_dir().display(),
            member.client_url,
            member.client_url,
            member.peer_url
        );
        std::fs::write(member.dir.join("etcd.env"), env).expect("write env");
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

    /// The inventory variables telling the roles to use the supervisor, and to keep the
    /// backups they take before a change under the cluster's directory.
    pub fn service_vars(&self) -> serde_json::Value {
        let supervisor = supervisor_path().display().to_string();
        serde_json::json!({
            "etcd_service_manager": "command",
            "etcd_stop_command": format!("{supervisor} stop {{{{ etcd_member_dir }}}}"),
            "etcd_start_command": format!("{supervisor} start {{{{ etcd_member_dir }}}}"),
            "etcd_stop_timeout": 60,
            "member_replace_backup_store": self.dir().join("before-change"),
            "restore_backup_store": self.dir().join("before-restore"),
        })
    }

    /// Client URLs of the members.
    pub fn client_urls(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// The directory the cluster lives in (for test files too).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Blocks until `member` answers `endpoint health`, or panics after `limit`.
    pub fn wait_serving(&self, member: &SupervisedMember, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let ok = Command::new(self.version.etcdctl())
                .env("ETCDCTL_API", "3")
                .args(["endpoint", "health", "--endpoints", &member.client_url])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false);
            if ok {
                return;
            }
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
}

impl Drop for SupervisedCluster {
    fn drop(&mut self) {
        for member in &self.members {
            if let Ok(pid) = std::fs::read_to_string(member.dir.join("etcd.pid")) {
                let _ = Command::new("kill").args(["-9", pid.trim()]).status();
            }
        }
    }
}
