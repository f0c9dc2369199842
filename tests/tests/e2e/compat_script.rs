//! The drop-in acceptance test: tests/scripts/etcdctl-script.sh, an operator's script written
//! for etcdctl (health check, leader lookup with awk, member URLs and values with jq, a
//! snapshot to a file checked without etcdutl), runs first with the cluster's real etcdctl
//! (the oracle: it must pass), then unchanged with etcdops put in etcdctl's place as a
//! symlink named `etcdctl` on PATH. Both runs must succeed and print the same lines.

use std::path::{Path, PathBuf};
use std::process::Command;

use etcdops_tests::{Cluster, Security, etcdops_path};

/// The script, from the repository.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/etcdctl-script.sh")
}

/// One run of a script with `tool` as `etcdctl` first on PATH.
pub struct ScriptRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Display for ScriptRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs the script with a directory holding only `etcdctl -> tool` first on PATH, the
/// cluster's endpoints in ETCDCTL_ENDPOINTS and nothing else of etcdctl's environment;
/// bounded by coreutils' `timeout`.
fn run_script(cluster: &Cluster, tool: &Path, name: &str) -> ScriptRun {
    let backups = cluster.dir().join(format!("backups-{name}"));
    std::fs::create_dir_all(&backups).unwrap();
    let env = [("BACKUP_DIR", backups.display().to_string())];
    run_script_file(cluster, tool, name, &script(), &env)
}

/// Runs `script` with bash, `etcdctl -> tool` first on PATH (a directory per `name`), the
/// cluster's endpoints in ETCDCTL_ENDPOINTS, `env`, and nothing else of etcdctl's or etcdops'
/// environment; bounded by coreutils' `timeout`.
pub fn run_script_file(
    cluster: &Cluster,
    tool: &Path,
    name: &str,
    script: &Path,
    env: &[(&str, String)],
) -> ScriptRun {
    let bin = cluster.dir().join(format!("path-{name}"));
    if !bin.join("etcdctl").exists() {
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(tool, bin.join("etcdctl")).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("timeout");
    for (key, _) in std::env::vars() {
        if key.starts_with("ETCDCTL_") || key.starts_with("ETCDOPS_") {
            cmd.env_remove(key);
        }
    }
    let output = cmd
        .args(["120", "bash"])
        .arg(script)
        .env("PATH", path)
        .env("ETCDCTL_ENDPOINTS", cluster.endpoints())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run bash");
    ScriptRun {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn the_etcdctl_script_runs_unchanged_with_etcdops_as_etcdctl() {
    let jq = Command::new("sh").args(["-c", "command -v jq"]).output();
    assert!(
        jq.is_ok_and(|o| o.status.success()),
        "jq is missing: the script uses it as SREs do (scripts/install-deps test installs it)"
    );
    let cluster = Cluster::start(3, Security::Plain);
    cluster.put("/config/app", "hello world");
    cluster.put("/config/db", "postgres://db.internal:5432/app");
    cluster.put("/config/empty", "");
    cluster.put("/other/key", "not under the prefix");

    let oracle = run_script(&cluster, &cluster.version.etcdctl(), "etcdctl");
    assert_eq!(
        oracle.code, 0,
        "the script fails with etcdctl itself:\n{oracle}"
    );
    assert!(
        oracle.stdout.contains("healthy members: 3") && oracle.stdout.ends_with("done\n"),
        "the oracle did not get through:\n{oracle}"
    );

    let ours = run_script(&cluster, &etcdops_path(), "etcdops");
    assert_eq!(
        ours.code, 0,
        "the script fails with etcdops as etcdctl:\n{ours}\n=== with etcdctl\n{oracle}"
    );
    assert_eq!(
        oracle.stdout, ours.stdout,
        "the script printed other values with etcdops as etcdctl\n=== etcdctl\n{oracle}\n=== etcdops\n{ours}"
    );
}
