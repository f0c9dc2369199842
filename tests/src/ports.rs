//! Free loopback ports, never handed out twice in one test process.

use std::collections::HashSet;
use std::net::{TcpListener, UdpSocket};
use std::sync::Mutex;

static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A TCP (and UDP) port on 127.0.0.1 that is free now and not yet given to another test.
pub fn free_port() -> u16 {
    let mut guard = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let used = guard.get_or_insert_with(HashSet::new);
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local addr").port();
        // Also free for UDP, so the same helper serves the DNS server.
        if UdpSocket::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        if used.insert(port) {
            return port;
        }
    }
}
