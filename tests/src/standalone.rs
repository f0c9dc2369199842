//! Hosts for the `etcd.core.cluster` role: one directory per would-be member, run by
//! `tests/supervisor/etcd-supervisor` (the stand-in for systemd), with etcd reading the config
//! file the role writes (`ETCD_CONFIG_FILE`). Nothing runs until the role starts it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::etcd::EtcdVersion;
use crate::ports::free_port;
use crate::supervised::supervisor_path;

/// One host of the inventory: its ports and its directory.
#[derive(Debug, Clone)]
pub struct StandaloneHost {
    /// Inventory name and etcd member name.
    pub name: String,
    /// The address other members reach it at (`etcd_address`): 127.0.0.1, or a name the
    /// test's DNS resolves to it.
    pub address: String,
    /// Client port on 127.0.0.1.
    pub client_port: u16,
    /// Peer port on 127.0.0.1.
    pub peer_port: u16,
    /// The host's directory: `etcd.env`, `etcd.bin`, `etcd.yaml`, `data/`, `pki/`, `etcd.log`.
    pub dir: PathBuf,
}

impl StandaloneHost {
    /// `http://127.0.0.1:PORT` of its client listener.
    pub fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Its data dir.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The config file the role writes.
    pub fn config_file(&self) -> PathBuf {
        self.dir.join("etcd.yaml")
    }

    /// What etcd printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
    }

    /// Its inventory line: local connection, the role's per-host variables, `extra` appended.
    pub fn inventory_line(&self, extra: &str) -> String {
        format!(
            "{name} ansible_connection=local etcd_name={name} etcd_address={} etcd_client_address=127.0.0.1 etcd_listen_address=127.0.0.1 etcd_client_port={} etcd_peer_port={} etcd_data_dir={} etcd_config_file={} etcd_pki_dir={} etcd_member_dir={} {extra}\n",
            self.address,
            self.client_port,
            self.peer_port,
            self.data_dir().display(),
            self.config_file().display(),
            self.dir.join("pki").display(),
            self.dir.display(),
            name = self.name,
        )
    }
}

/// Would-be members, their etcd processes killed on drop.
#[derive(Debug)]
pub struct StandaloneHosts {
    /// Release under test.
    pub version: EtcdVersion,
    /// The hosts, in the order planned.
    pub hosts: Vec<StandaloneHost>,
    dir: tempfile::TempDir,
}

impl StandaloneHosts {
    /// Plans `count` hosts named `h0`, `h1`, ...
    pub fn plan(count: usize) -> StandaloneHosts {
        let dir = tempfile::Builder::new()
            .prefix("etcdops-standalone-")
            .tempdir()
            .expect("temp dir");
        let mut hosts = StandaloneHosts {
            version: EtcdVersion::from_env(),
            hosts: Vec::new(),
            dir,
        };
        for i in 0..count {
            hosts.add(&format!("h{i}"));
        }
        hosts
    }

    /// Plans one more host.
    pub fn add(&mut self, name: &str) -> StandaloneHost {
        let host = StandaloneHost {
            name: name.to_string(),
            address: "127.0.0.1".into(),
            client_port: free_port(),
            peer_port: free_port(),
            dir: self.dir.path().join(name),
        };
        std::fs::create_dir_all(&host.dir).expect("host dir");
        std::fs::write(
            host.dir.join("etcd.env"),
            format!("ETCD_CONFIG_FILE={}\n", host.config_file().display()),
        )
        .expect("write etcd.env");
        self.set_binary(&host, &self.version.etcd());
        self.hosts.push(host.clone());
        host
    }

    /// Makes the supervisor run `binary` (etcd, or a wrapper that execs it) for `host`.
    pub fn set_binary(&self, host: &StandaloneHost, binary: &Path) {
        std::fs::write(host.dir.join("etcd.bin"), binary.display().to_string())
            .expect("write etcd.bin");
    }

    /// The directory the hosts live in (for test files too).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The inventory of `hosts` (each line with `extra`).
    pub fn inventory(&self, hosts: &[&StandaloneHost], extra: &str) -> String {
        hosts.iter().map(|h| h.inventory_line(extra)).collect()
    }

    /// The role variables that drive etcd through the supervisor, fast elections, and the
    /// generated PKI kept under the test's directory.
    pub fn role_vars(&self) -> serde_json::Value {
        let supervisor = supervisor_path().display().to_string();
        serde_json::json!({
            "etcd_service_manager": "command",
            "etcd_stop_command": format!("{supervisor} stop {{{{ etcd_member_dir }}}}"),
            "etcd_start_command": format!("{supervisor} start {{{{ etcd_member_dir }}}}"),
            "etcd_stop_timeout": 60,
            "etcd_heartbeat_interval": 50,
            "etcd_election_timeout": 500,
            "etcd_wait_delay": 1,
            "etcd_wait_retries": 60,
            "etcd_pki_controller_dir": self.dir.path().join("controller-pki"),
            "etcd_cluster_token": format!("standalone-{}", free_port()),
        })
    }
}

impl Drop for StandaloneHosts {
    fn drop(&mut self) {
        for host in &self.hosts {
            if let Ok(pid) = std::fs::read_to_string(host.dir.join("etcd.pid")) {
                let _ = Command::new("kill").args(["-9", pid.trim()]).status();
            }
        }
    }
}
