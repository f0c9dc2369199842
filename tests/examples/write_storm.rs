//! A write storm against one etcd, for the `backup run` benchmark (`scripts/bench-storm`).
//!
//! `write_storm ENDPOINT PREFIX SECONDS KEYS [RATE] [TIMELINE]` writes flat out (RATE 0, the
//! default) or at about RATE requests a second, 64 in flight, for SECONDS, over KEYS keys under
//! PREFIX, the way a rollout or an operator rewriting every object does:
//! - 70%: a put of 1 KiB (base64 of random bytes) to a random key (a create or an overwrite);
//! - 15%: a delete of a random key (often absent: no revision then, as in real clients);
//! - 14%: a put of 1 KiB to a key under `PREFIX` `leased/`, attached to one of 256 leases;
//! - 1%: a lease replaced: a new one granted (TTL 600 s) and the old one revoked, which deletes
//!   its keys (several delete events in one revision).
//!
//! With TIMELINE (the word `timeline`), a line `t UNIX_SECONDS REVISION` goes to stdout every
//! 100 ms: the highest revision any answer carried by then (the store's revision, observed
//! without asking etcd for it). At the end one line of JSON on stdout: requests by kind, the
//! first and last revision, seconds.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use etcd_client::{Client, PutOptions};
use tokio::sync::Mutex;

#[path = "shared/load.rs"]
mod load;

use load::Rng;

const IN_FLIGHT: usize = 64;
const LEASES: usize = 256;
const LEASE_TTL: i64 = 600;

/// A value of 1 KiB: base64 of 768 random bytes.
fn value(rng: &mut Rng) -> String {
    base64::engine::general_purpose::STANDARD.encode(rng.bytes(768))
}

/// What the storm did, for its summary line.
#[derive(Default)]
struct Counts {
    puts: AtomicU64,
    deletes: AtomicU64,
    leased_puts: AtomicU64,
    lease_replacements: AtomicU64,
    highest_revision: AtomicI64,
}

impl Counts {
    fn saw(&self, revision: i64) {
        self.highest_revision.fetch_max(revision, Ordering::Relaxed);
    }
}

struct Storm {
    prefix: String,
    keys: u64,
    /// Seconds between two requests of one worker at the target rate (0: flat out).
    pace: Duration,
    until: Instant,
    leases: Mutex<Vec<i64>>,
    counts: Counts,
}

impl Storm {
    async fn worker(&self, mut client: Client, worker: usize) -> Result<(), etcd_client::Error> {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((worker as u64 + 1) << 32));
        let mut next = Instant::now();
        while Instant::now() < self.until {
            if !self.pace.is_zero() {
                tokio::time::sleep_until(next.into()).await;
                next += self.pace;
            }
            let roll = rng.next() % 100;
            let key = format!("{}{:09}", self.prefix, rng.next() % self.keys);
            let revision = match roll {
                0..70 => {
                    self.counts.puts.fetch_add(1, Ordering::Relaxed);
                    client
                        .put(key, value(&mut rng), None)
                        .await?
                        .header()
                        .map(|h| h.revision())
                }
                70..85 => {
                    self.counts.deletes.fetch_add(1, Ordering::Relaxed);
                    client
                        .delete(key, None)
                        .await?
                        .header()
                        .map(|h| h.revision())
                }
                85..99 => {
                    let lease = {
                        let leases = self.leases.lock().await;
                        leases[(rng.next() % leases.len() as u64) as usize]
                    };
                    self.counts.leased_puts.fetch_add(1, Ordering::Relaxed);
                    let key = format!("{}leased/{:09}", self.prefix, rng.next() % self.keys);
                    let options = PutOptions::new().with_lease(lease);
                    match client.put(key, value(&mut rng), Some(options)).await {
                        Ok(answer) => answer.header().map(|h| h.revision()),
                        // The lease was replaced meanwhile: as a real client, go on.
                        Err(e) if e.to_string().contains("lease not found") => None,
                        Err(e) => return Err(e),
                    }
                }
                _ => {
                    let granted = client.lease_grant(LEASE_TTL, None).await?;
                    let old = {
                        let mut leases = self.leases.lock().await;
                        let slot = (rng.next() % leases.len() as u64) as usize;
                        std::mem::replace(&mut leases[slot], granted.id())
                    };
                    self.counts
                        .lease_replacements
                        .fetch_add(1, Ordering::Relaxed);
                    match client.lease_revoke(old).await {
                        Ok(answer) => answer.header().map(|h| h.revision()),
                        Err(e) if e.to_string().contains("lease not found") => None,
                        Err(e) => return Err(e),
                    }
                }
            };
            if let Some(revision) = revision {
                self.counts.saw(revision);
            }
        }
        Ok(())
    }
}

fn unix_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let number = |i: usize, default: Option<u64>| match args.get(i) {
        Some(text) => text.parse::<u64>().ok(),
        None => default,
    };
    let (Some(endpoint), Some(prefix), Some(seconds), Some(keys @ 1..), Some(rate)) = (
        args.get(1),
        args.get(2),
        number(3, None),
        number(4, None),
        number(5, Some(0)),
    ) else {
        eprintln!("usage: write_storm ENDPOINT PREFIX SECONDS KEYS [RATE] [TIMELINE]");
        return ExitCode::from(2);
    };
    let client = match Client::connect([endpoint.as_str()], None).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("write_storm: cannot connect to {endpoint}: {e}");
            return ExitCode::from(1);
        }
    };
    let mut leases = Vec::with_capacity(LEASES);
    for _ in 0..LEASES {
        match client.clone().lease_grant(LEASE_TTL, None).await {
            Ok(granted) => leases.push(granted.id()),
            Err(e) => {
                eprintln!("write_storm: cannot grant a lease: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let started = Instant::now();
    let storm = Arc::new(Storm {
        prefix: prefix.clone(),
        keys,
        pace: match rate {
            0 => Duration::ZERO,
            rate => Duration::from_secs_f64(IN_FLIGHT as f64 / rate as f64),
        },
        until: started + Duration::from_secs(seconds),
        leases: Mutex::new(leases),
        counts: Counts::default(),
    });
    let first_revision = match client.clone().get("storm-start", None).await {
        Ok(answer) => answer.header().map_or(0, |h| h.revision()),
        Err(e) => {
            eprintln!("write_storm: cannot read the revision: {e}");
            return ExitCode::from(1);
        }
    };
    storm.counts.saw(first_revision);
    let timeline = (args.get(6).map(String::as_str) == Some("timeline")).then(|| {
        let storm = storm.clone();
        tokio::spawn(async move {
            let mut out = std::io::stdout();
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            while Instant::now() < storm.until + Duration::from_millis(200) {
                tick.tick().await;
                let revision = storm.counts.highest_revision.load(Ordering::Relaxed);
                let _ = writeln!(out, "t {:.3} {revision}", unix_seconds());
            }
        })
    });
    let tasks: Vec<_> = (0..IN_FLIGHT)
        .map(|worker| {
            let storm = storm.clone();
            let client = client.clone();
            tokio::spawn(async move { storm.worker(client, worker).await })
        })
        .collect();
    if let Err(code) = load::join_workers("write_storm", tasks).await {
        return code;
    }
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(timeline) = timeline {
        let _ = timeline.await;
    }
    let c = &storm.counts;
    let requests = c.puts.load(Ordering::Relaxed)
        + c.deletes.load(Ordering::Relaxed)
        + c.leased_puts.load(Ordering::Relaxed)
        + c.lease_replacements.load(Ordering::Relaxed) * 2;
    println!(
        "{}",
        serde_json::json!({
            "seconds": (elapsed * 1000.0).round() / 1000.0,
            "requests": requests,
            "requests_per_second": (requests as f64 / elapsed).round(),
            "puts": c.puts.load(Ordering::Relaxed),
            "deletes": c.deletes.load(Ordering::Relaxed),
            "leased_puts": c.leased_puts.load(Ordering::Relaxed),
            "lease_replacements": c.lease_replacements.load(Ordering::Relaxed),
            "first_revision": first_revision,
            "last_revision": c.highest_revision.load(Ordering::Relaxed),
        })
    );
    ExitCode::SUCCESS
}
