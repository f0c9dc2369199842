//! A real DNS server (dnsmasq) on a loopback port, serving the SRV records a test needs.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::etcd::spawn_logged;
use crate::ports::free_port;

/// One SRV record: name, target host, port.
#[derive(Debug, Clone)]
pub struct SrvRecord {
    /// Full record name, e.g. `_etcd-client._tcp.example.test`.
    pub name: String,
    /// Target host name (must resolve for the client, e.g. `localhost`).
    pub target: String,
    /// Target port.
    pub port: u16,
}

/// A running dnsmasq that answers only for the given records (no upstream, no hosts file).
#[derive(Debug)]
pub struct DnsServer {
    /// `127.0.0.1:PORT`, for `--dns-server`.
    pub address: String,
    child: Child,
}

impl DnsServer {
    /// Starts dnsmasq with `records`, logging to `dir/dnsmasq.log`, and waits until it serves.
    pub fn start(dir: &Path, records: &[SrvRecord]) -> DnsServer {
        let port = free_port();
        let log = dir.join(format!("dnsmasq-{port}.log"));
        let mut cmd = Command::new("dnsmasq");
        cmd.args([
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--no-poll",
            "--bind-interfaces",
            "--listen-address=127.0.0.1",
            "--log-facility=-",
            "--log-queries",
            "--user=root",
            "--pid-file=",
            &format!("--port={port}"),
        ]);
        for r in records {
            cmd.arg(format!("--srv-host={},{},{},0,0", r.name, r.target, r.port));
        }
        let child = spawn_logged(cmd, &log);
        let server = DnsServer {
            address: format!("127.0.0.1:{port}"),
            child,
        };
        // dnsmasq logs "started" once its sockets are bound.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("started") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "dnsmasq did not start within 10s; log:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
