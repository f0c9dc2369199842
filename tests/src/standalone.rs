//! Hosts for the `etcd.core.cluster` role, shaped like real ones: one directory per would-be
//! member, each with its own loopback address (127.0.0.2, .3, ...: Linux routes all of 127/8 to
//! loopback), run by `tests/supervisor/etcd-supervisor` (the stand-in for systemd) with etcd
//! reading the config file the role writes (`ETCD_CONFIG_FILE`, set in the host's `etcd.env`
//! among site settings the role must leave alone, as in `/etc/default/etcd`). Nothing runs until
//! the role starts it. [`StandaloneHosts::start_by_hand`] starts a cluster from config files
//! written by hand instead (the role did not write them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::etcd::EtcdVersion;
use crate::ports::free_port;
use crate::supervised::supervisor_path;

/// One host of the inventory: its address, ports and directory.
#[derive(Debug, Clone)]
pub struct StandaloneHost {
    /// Inventory name and etcd member name.
    pub name: String,
    /// Its own loopback address (127.0.0.2, ...): etcd listens there, as on a node's address.
    pub ip: String,
    /// The address other members reach it at (`cluster_address`): its IP, or a name the
    /// test's DNS resolves to it.
    pub address: String,
    /// Client port.
    pub client_port: u16,
    /// Peer port.
    pub peer_port: u16,
    /// The host's directory: `etcd.env`, `etcd.bin`, `etcd.yaml`, `data/`, `pki/`, `etcd.log`.
    pub dir: PathBuf,
}

impl StandaloneHost {
    /// `http://IP:PORT` of its client listener.
    pub fn client_url(&self) -> String {
        format!("http://{}:{}", self.ip, self.client_port)
    }

    /// `https://IP:PORT` of its client listener (client TLS).
    pub fn https_url(&self) -> String {
        format!("https://{}:{}", self.ip, self.client_port)
    }

    /// Its data dir.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The config file the role writes.
    pub fn config_file(&self) -> PathBuf {
        self.dir.join("etcd.yaml")
    }

    /// The environment file of its etcd (site settings; the role never writes it).
    pub fn env_file(&self) -> PathBuf {
        self.dir.join("etcd.env")
    }

    /// What etcd printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
    }

    /// Whether something accepts TCP connections on `ip:port`.
    pub fn listens(ip: &str, port: u16) -> bool {
        let addr = format!("{ip}:{port}").parse().expect("socket address");
        std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
    }

    /// Stops its etcd through the supervisor (a member going down).
    pub fn stop(&self) {
        let ok = Command::new(supervisor_path())
            .arg("stop")
            .arg(&self.dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "supervisor could not stop {}", self.name);
    }

    /// Its inventory line: local connection, the role's per-host variables, `extra` appended.
    /// Only the address is set when it is the host's IP: the role derives the client and
    /// listen addresses from it, as on a real host.
    pub fn inventory_line(&self, extra: &str) -> String {
        let own_ip = if self.address == self.ip {
            String::new()
        } else {
            format!(
                "cluster_client_address={ip} cluster_listen_address={ip} ",
                ip = self.ip
            )
        };
        format!(
            "{name} ansible_connection=local etcd_name={name} cluster_address={} {own_ip}etcd_client_port={} etcd_peer_port={} etcd_data_dir={} cluster_config_file={} cluster_pki_dir={} etcd_member_dir={} {extra}\n",
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

/// The `etcd.env` every host starts with: the supervisor's `ETCD_CONFIG_FILE` among settings
/// of the site that the role must keep (it writes etcd's config file, never this one).
fn site_env(config_file: &Path) -> String {
    format!(
        "# etcd's environment on this host (site settings, kept by every etcd.core role)\nETCD_CONFIG_FILE={}\nGOMAXPROCS=2\n",
        config_file.display()
    )
}

impl StandaloneHosts {
    /// Plans `count` hosts named `h0`, `h1`, ... on 127.0.0.2, 127.0.0.3, ...
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

    /// Plans one more host, on the next loopback address.
    pub fn add(&mut self, name: &str) -> StandaloneHost {
        let ip = format!("127.0.0.{}", self.hosts.len() + 2);
        let host = StandaloneHost {
            name: name.to_string(),
            address: ip.clone(),
            ip,
            client_port: free_port(),
            peer_port: free_port(),
            dir: self.dir.path().join(name),
        };
        std::fs::create_dir_all(&host.dir).expect("host dir");
        std::fs::write(host.env_file(), site_env(&host.config_file())).expect("write etcd.env");
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
    /// generated PKI kept under the test's directory. (The role's older `etcd_*` names, which
    /// still set its `cluster_*` variables.)
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

    /// Every file under the hosts' directory (the controller's PKI and any backup store
    /// there included) with its size, mode, mtime and SHA-256; etcd's own data dirs and logs
    /// left out (a running etcd writes to them). A pid file is in it: a restart changes it.
    pub fn listing(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        list_files(self.dir.path(), self.dir.path(), &mut out);
        out
    }

    /// Starts the hosts as one cluster from config files written here, not by the role
    /// (plain http, each host on its own address), and waits until every member answers.
    pub fn start_by_hand(&self, token: &str) {
        let initial: Vec<String> = self
            .hosts
            .iter()
            .map(|h| format!("{}=http://{}:{}", h.name, h.ip, h.peer_port))
            .collect();
        for host in &self.hosts {
            let peer = format!("http://{}:{}", host.ip, host.peer_port);
            let client = host.client_url();
            let text = format!(
                "# written by hand\nname: {name}\ndata-dir: {data}\nlisten-client-urls: {client}\nadvertise-client-urls: {client}\nlisten-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\ninitial-cluster: {initial}\ninitial-cluster-state: new\ninitial-cluster-token: {token}\nheartbeat-interval: 50\nelection-timeout: 500\nlogger: zap\n",
                name = host.name,
                data = host.data_dir().display(),
                initial = initial.join(","),
            );
            std::fs::write(host.config_file(), text).expect("write etcd.yaml");
            let ok = Command::new(supervisor_path())
                .arg("start")
                .arg(&host.dir)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "supervisor could not start {}", host.name);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for host in &self.hosts {
            while !StandaloneHost::listens(&host.ip, host.client_port) {
                assert!(
                    Instant::now() < deadline,
                    "{} did not start:\n{}",
                    host.name,
                    host.log()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

fn list_files(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        if meta.is_dir() {
            if name == "data" || name.starts_with("data.removed-") {
                out.insert(rel, "data dir".into());
                continue;
            }
            list_files(root, &path, out);
        } else if name != "etcd.log" {
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            let bytes = std::fs::read(&path).unwrap_or_default();
            let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777;
            out.insert(
                rel,
                format!(
                    "{} bytes, mode {mode:o}, mtime {mtime}, sha256 {}",
                    meta.len(),
                    hex::encode(Sha256::digest(&bytes))
                ),
            );
        }
    }
}

impl Drop for StandaloneHosts {
    fn drop(&mut self) {
        for host in &self.hosts {
            let Ok(pid) = std::fs::read_to_string(host.dir.join("etcd.pid")) else {
                continue;
            };
            // A pid file the supervisor left behind may name a process that exited long ago
            // (a removed member stops by itself): kill only the etcd of this host.
            let pid = pid.trim();
            let marker = format!("ETCD_CONFIG_FILE={}", host.config_file().display());
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            if environ
                .split(|b| *b == 0)
                .any(|entry| entry == marker.as_bytes())
            {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
        }
    }
}
