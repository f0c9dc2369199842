//! Prints the status of a snapshot file (plain or zstd) as JSON, as `etcdops snapshot status
//! -w json` does: `cargo run --release -p etcd-snapshot --example status -- FILE
//! [--skip-hash-check]`.

use std::io::Write;

use etcd_snapshot::{StatusOptions, open_snapshot_file};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: status FILE [--skip-hash-check]")?;
    let options = StatusOptions {
        skip_hash_check: args.next().as_deref() == Some("--skip-hash-check"),
    };
    let snapshot = open_snapshot_file(std::path::Path::new(&path), None)?;
    let status = snapshot.status(&path, &options)?;
    // An error, not a panic, when stdout is closed (`| head`).
    writeln!(
        std::io::stdout(),
        "{}",
        serde_json::to_string_pretty(&status)?
    )?;
    Ok(())
}
