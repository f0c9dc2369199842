//! What the load generators (`fill_keys`, `write_storm`) share: a seedable generator of bytes
//! that do not compress, and waiting for their workers.

use std::process::ExitCode;

/// A small, seedable generator (xorshift64*): the benchmarks need bytes that do not compress,
/// not cryptographic randomness.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n.div_ceil(8))
            .flat_map(|_| self.next().to_le_bytes())
            .take(n)
            .collect()
    }
}

/// Waits for every worker of `tool`; the first failure is printed and exits 1.
pub async fn join_workers(
    tool: &str,
    tasks: Vec<tokio::task::JoinHandle<Result<(), etcd_client::Error>>>,
) -> Result<(), ExitCode> {
    for task in tasks {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("{tool}: a request failed: {e}");
                return Err(ExitCode::from(1));
            }
            Err(e) => {
                eprintln!("{tool}: a worker failed: {e}");
                return Err(ExitCode::from(1));
            }
        }
    }
    Ok(())
}
