//! Fills an etcd with many small keys quickly, for benchmarks (`scripts/bench get`).
//!
//! `cargo run --release -p etcdops-tests --example fill_keys -- ENDPOINT PREFIX COUNT`
//! writes PREFIX000000000 .. with 100-byte values, 64 writes in flight.

use std::process::ExitCode;

use etcd_client::Client;

const IN_FLIGHT: usize = 64;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(endpoint), Some(prefix), Some(count)) = (
        args.get(1),
        args.get(2),
        args.get(3).and_then(|c| c.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: fill_keys ENDPOINT PREFIX COUNT");
        return ExitCode::from(2);
    };
    let client = match Client::connect([endpoint.as_str()], None).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fill_keys: cannot connect to {endpoint}: {e}");
            return ExitCode::from(1);
        }
    };
    let value = "v".repeat(100);
    let mut tasks = Vec::new();
    for worker in 0..IN_FLIGHT {
        let mut client = client.clone();
        let prefix = prefix.clone();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = worker;
            while i < count {
                client
                    .put(format!("{prefix}{i:09}"), value.clone(), None)
                    .await?;
                i += IN_FLIGHT;
            }
            Ok::<_, etcd_client::Error>(())
        }));
    }
    for task in tasks {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("fill_keys: write failed: {e}");
                return ExitCode::from(1);
            }
            Err(e) => {
                eprintln!("fill_keys: worker failed: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
