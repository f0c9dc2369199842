//! etcdctl and etcdops (`--compat etcdctl`) side by side on the same cluster: the
//! differential oracle of the drop-in promise. Both get the same arguments and the cluster's
//! TLS and auth flags; their stdout, stderr and exit code are compared.

use std::process::Command;

use crate::cli::{Run, etcdops_path};
use crate::etcd::Cluster;

/// The runs of etcdctl and of etcdops with the same arguments.
#[derive(Debug)]
pub struct SideBySide {
    /// etcdctl of the cluster's release.
    pub etcdctl: Run,
    /// etcdops under `ETCDOPS_COMPAT=etcdctl`.
    pub etcdops: Run,
}

impl std::fmt::Display for SideBySide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "=== etcdctl\n{}\n=== etcdops --compat etcdctl\n{}",
            self.etcdctl, self.etcdops
        )
    }
}

/// Runs `program` with a clean `ETCDCTL_*` environment plus `env`.
fn run_program(program: &std::path::Path, args: Vec<String>, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars() {
        if key.starts_with("ETCDCTL_") || key.starts_with("ETCDOPS_COMPAT") {
            cmd.env_remove(key);
        }
    }
    cmd.env("ETCDCTL_API", "3")
        .args(&args)
        .envs(env.iter().copied());
    let output = cmd.output().expect("run the program");
    Run {
        args,
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `args` with etcdctl and with etcdops under `ETCDOPS_COMPAT=etcdctl`, both with the
/// cluster's TLS and auth flags and the same extra environment.
pub fn side_by_side(cluster: &Cluster, args: &[&str], env: &[(&str, &str)]) -> SideBySide {
    let mut all = cluster.security_flags();
    all.extend(args.iter().map(|s| s.to_string()));
    let etcdctl = run_program(&cluster.version.etcdctl(), all.clone(), env);
    let mut ours_env = env.to_vec();
    ours_env.push(("ETCDOPS_COMPAT", "etcdctl"));
    let etcdops = run_program(&etcdops_path(), all, &ours_env);
    SideBySide { etcdctl, etcdops }
}

/// Asserts the two runs agree byte for byte on stdout, on whether stderr is empty, and on
/// the exit code. Returns them for further checks.
pub fn assert_same_output(cluster: &Cluster, args: &[&str]) -> SideBySide {
    let both = side_by_side(cluster, args, &[]);
    assert_eq!(
        both.etcdctl.code, both.etcdops.code,
        "exit codes differ:\n{both}"
    );
    assert_eq!(
        both.etcdctl.stdout, both.etcdops.stdout,
        "stdout differs:\n{both}"
    );
    assert_eq!(
        both.etcdctl.stderr.is_empty(),
        both.etcdops.stderr.is_empty(),
        "one wrote to stderr, the other did not:\n{both}"
    );
    both
}

/// Asserts that both print JSON that is equal field for field once the fields at the
/// `volatile` JSON pointers (`/0/took`, `/header/raft_term`) are removed (a pointer segment
/// `*` stands for every array element), and the same exit code. Returns the parsed JSON of
/// etcdctl and of etcdops.
pub fn assert_same_json(
    cluster: &Cluster,
    args: &[&str],
    volatile: &[&str],
) -> (serde_json::Value, serde_json::Value) {
    let both = side_by_side(cluster, args, &[]);
    assert_eq!(
        both.etcdctl.code, both.etcdops.code,
        "exit codes differ:\n{both}"
    );
    let parse = |run: &Run| -> serde_json::Value {
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{both}"))
    };
    let (mut theirs, mut ours) = (parse(&both.etcdctl), parse(&both.etcdops));
    for pointer in volatile {
        remove_pointer(&mut theirs, pointer);
        remove_pointer(&mut ours, pointer);
    }
    assert_eq!(
        theirs, ours,
        "JSON differs (volatile fields {volatile:?} removed):\n{both}"
    );
    (parse(&both.etcdctl), parse(&both.etcdops))
}

/// Removes the field at `pointer` (`*` matching every array element or object field).
pub fn remove_pointer(value: &mut serde_json::Value, pointer: &str) {
    let segments: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    remove_segments(value, &segments);
}

fn remove_segments(value: &mut serde_json::Value, segments: &[&str]) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    let last = rest.is_empty();
    match value {
        serde_json::Value::Object(map) => {
            if *first == "*" {
                if last {
                    map.clear();
                } else {
                    map.values_mut().for_each(|v| remove_segments(v, rest));
                }
            } else if last {
                map.remove(*first);
            } else if let Some(v) = map.get_mut(*first) {
                remove_segments(v, rest);
            }
        }
        serde_json::Value::Array(items) => {
            if *first == "*" {
                if last {
                    items.clear();
                } else {
                    items.iter_mut().for_each(|v| remove_segments(v, rest));
                }
            } else if let Ok(index) = first.parse::<usize>() {
                if last {
                    if index < items.len() {
                        items.remove(index);
                    }
                } else if let Some(v) = items.get_mut(index) {
                    remove_segments(v, rest);
                }
            }
        }
        _ => {}
    }
}
