//! Running the real `etcdops` binary, with a readable failure report.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Path of the `etcdops` binary built beside this test binary (or `ETCDOPS_BIN`).
pub fn etcdops_path() -> PathBuf {
    built_binary("etcdops", "ETCDOPS_BIN", "etcd-cli")
}

/// A binary of this workspace: `$env_var` when set, else the one cargo built beside this test
/// binary (`target/<profile>/deps/<test>` -> `target/<profile>/<name>`).
pub fn built_binary(name: &str, env_var: &str, package: &str) -> PathBuf {
    if let Ok(path) = std::env::var(env_var) {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: build it first with `cargo build -p {package}`",
        bin.display()
    );
    bin
}

/// The result of one run of `etcdops`.
#[derive(Debug)]
pub struct Run {
    /// The arguments, for failure messages.
    pub args: Vec<String>,
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Parses stdout as JSON, panicking with the whole run on failure.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{self}"))
    }

    /// Panics with the whole run unless the exit code is `code`.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code:\n{self}");
        self
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "$ etcdops {}\nexit code: {}\n--- stdout\n{}\n--- stderr\n{}",
            self.args.join(" "),
            self.code,
            self.stdout,
            self.stderr
        )
    }
}

/// Runs `etcdops args...` with a clean `ETCDCTL_*` environment plus `env`.
pub fn etcdops(args: &[String], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(etcdops_path());
    for (key, _) in std::env::vars() {
        if key.starts_with("ETCDCTL_") || key == "ETCDOPS_DNS_SERVER" {
            cmd.env_remove(key);
        }
    }
    cmd.args(args).envs(env.iter().copied());
    let output: Output = cmd.output().expect("run etcdops");
    Run {
        args: args.to_vec(),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Builds an argument vector from string slices.
pub fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}
