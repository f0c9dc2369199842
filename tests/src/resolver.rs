//! DNS for programs that only use the system resolver (etcd's `--discovery-srv` reads
//! `/etc/resolv.conf` and asks port 53): a dnsmasq on its own loopback address `127.53.X.Y:53`,
//! and a wrapper that runs a program in a private mount namespace (`unshare --mount`, as root)
//! with a resolv.conf naming that address bound over `/etc/resolv.conf`. The host's own
//! `/etc/resolv.conf` is never touched.

use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::dns::SrvRecord;
use crate::etcd::spawn_logged;
use crate::ports::free_port;

/// A dnsmasq answering for SRV and A records on `ip:53`, stopped on drop.
#[derive(Debug)]
pub struct SystemDns {
    /// Its loopback address (port 53).
    pub ip: String,
    /// A resolv.conf naming only it.
    pub resolv_conf: PathBuf,
    log: PathBuf,
    child: Child,
}

impl SystemDns {
    /// Why programs cannot be pointed at a private resolver here (not root, no `unshare`),
    /// or `None` when they can.
    pub fn unavailable() -> Option<String> {
        let out = Command::new("unshare")
            .args([
                "--mount",
                "sh",
                "-c",
                "mount --bind /dev/null /etc/hostname",
            ])
            .output();
        match out {
            Ok(o) if o.status.success() => None,
            Ok(o) => Some(format!(
                "unshare --mount with a bind mount failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Some(format!("cannot run unshare: {e}")),
        }
    }

    /// Starts dnsmasq with `srv` records and `hosts` (name, IPv4) A records, in `dir`.
    pub fn start(dir: &Path, srv: &[SrvRecord], hosts: &[(&str, &str)]) -> SystemDns {
        // A loopback address of its own whose port 53 is free (127.0.0.0/8 is all local).
        let ip = loop {
            let n = free_port();
            let ip = format!("127.53.{}.{}", n >> 8, (n & 0xff).max(1));
            let free = UdpSocket::bind((ip.as_str(), 53)).is_ok()
                && TcpListener::bind((ip.as_str(), 53)).is_ok();
            if free {
                break ip;
            }
        };
        let log = dir.join(format!("dnsmasq-{ip}.log"));
        let mut cmd = Command::new("dnsmasq");
        cmd.args([
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--no-poll",
            "--bind-interfaces",
            &format!("--listen-address={ip}"),
            "--port=53",
            "--log-facility=-",
            "--log-queries",
            "--user=root",
            "--pid-file=",
        ]);
        for r in srv {
            cmd.arg(format!("--srv-host={},{},{},0,0", r.name, r.target, r.port));
        }
        for (name, addr) in hosts {
            cmd.arg(format!("--host-record={name},{addr}"));
        }
        let child = spawn_logged(cmd, &log);
        let resolv_conf = dir.join(format!("resolv-{ip}.conf"));
        std::fs::write(
            &resolv_conf,
            format!("nameserver {ip}\noptions attempts:2 timeout:1\n"),
        )
        .expect("write resolv.conf");
        let dns = SystemDns {
            ip,
            resolv_conf,
            log: log.clone(),
            child,
        };
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
        dns
    }

    /// The queries dnsmasq answered so far (its log).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Writes `dir/NAME` that execs `binary` (same pid, arguments passed on) with this
    /// resolver as `/etc/resolv.conf` in a private mount namespace.
    pub fn wrapper(&self, dir: &Path, name: &str, binary: &Path) -> PathBuf {
        let path = dir.join(name);
        let script = format!(
            "#!/bin/sh\nexec unshare --mount sh -c 'mount --bind {} /etc/resolv.conf && exec \"$0\" \"$@\"' {} \"$@\"\n",
            self.resolv_conf.display(),
            binary.display()
        );
        std::fs::write(&path, script).expect("write wrapper");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("chmod wrapper");
        path
    }
}

impl Drop for SystemDns {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
