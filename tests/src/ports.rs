//! Free loopback ports, never handed out twice in one test process, nor by two test
//! processes that run at once with different classes (`ETCDOPS_TEST_PORT_CLASS`).

use std::collections::HashSet;
use std::net::{TcpListener, UdpSocket};
use std::sync::{Mutex, OnceLock};

static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// `ETCDOPS_TEST_PORT_CLASS=K/N`: this process takes only the ports whose half is K modulo N.
/// `scripts/test` runs the passes of both etcd releases at once, one class each, so a port
/// one process has picked but its etcd not yet bound is never the other's pick too.
fn port_class() -> Option<(u16, u16)> {
    static CLASS: OnceLock<Option<(u16, u16)>> = OnceLock::new();
    *CLASS.get_or_init(|| {
        let text = std::env::var("ETCDOPS_TEST_PORT_CLASS").ok()?;
        let parsed = text
            .split_once('/')
            .and_then(|(k, n)| Some((k.trim().parse().ok()?, n.trim().parse().ok()?)))
            .filter(|&(k, n): &(u16, u16)| n > 0 && k < n);
        assert!(
            parsed.is_some(),
            "ETCDOPS_TEST_PORT_CLASS={text}: want K/N with K < N, e.g. 0/2"
        );
        parsed
    })
}

/// A TCP (and UDP) port on 127.0.0.1 that is free now and not yet given to another test.
pub fn free_port() -> u16 {
    let mut guard = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let used = guard.get_or_insert_with(HashSet::new);
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local addr").port();
        // By `port / 2`: Linux's bind() to port 0 hands out odd ports while it has some
        // (leaving even ones to connect()), so `port % 2` would leave class 0 none at all.
        if port_class().is_some_and(|(k, n)| (port / 2) % n != k) {
            continue;
        }
        // Also free for UDP, so the same helper serves the DNS server.
        if UdpSocket::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        if used.insert(port) {
            return port;
        }
    }
}
