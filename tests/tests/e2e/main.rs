//! End-to-end tests of `etcdops` against real etcd (version from `ETCDOPS_TEST_ETCD`), with
//! etcdctl of the same release as the oracle where it gives an answer.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

mod access;
mod ansible;
mod ansible_aap;
mod ansible_backup_role;
mod ansible_check_mode;
mod ansible_cluster;
mod ansible_cluster_states;
mod ansible_docs;
mod ansible_encryption;
mod ansible_galaxy;
mod ansible_member_replace_role;
mod ansible_module_defaults;
mod ansible_platform;
mod ansible_quorum;
mod ansible_quorum_recover_role;
mod ansible_restore_controller;
mod ansible_restore_role;
mod ansible_restore_role_reruns;
mod ansible_role_runs;
mod ansible_role_variables;
mod ansible_roles;
mod ansible_service_role;
mod ansible_shim;
mod ansible_snapshot_compact;
mod ansible_snapshot_drill;
mod ansible_usage;
mod auth;
mod auth_tokens;
mod auto_tls;
mod backup_before_change;
mod backup_copy_to;
mod backup_run;
mod backup_run_compaction;
mod backup_run_leases;
mod backup_run_metrics;
mod backup_run_safety;
mod backup_run_seams;
mod check_backup;
mod check_findings;
mod check_hostile_inputs;
mod cluster_ops;
mod compat_access;
mod compat_edges;
mod compat_endpoint;
mod compat_fragments;
mod compat_global;
mod compat_kv;
mod compat_script;
mod compat_snapshot;
mod compat_watch;
mod completion;
mod data_dir_inspect;
mod data_dir_tail;
mod deploy_manifests;
mod discovery;
mod downgrade;
mod endpoint;
mod env;
mod errors;
mod failover;
mod faults;
mod get_binary_keys;
mod get_pages;
mod invariants;
mod k8s;
mod keys;
mod load;
mod member;
mod member_promote_wait;
mod pitr_clock;
mod platform;
mod private_files;
mod prune_safety;
mod quorum_force_guards;
mod quorum_plan;
mod restore_failures;
mod restore_host;
mod restore_safety;
mod restore_stream;
mod secrets;
mod snapshot;
mod snapshot_against_cluster;
mod snapshot_compact;
mod snapshot_compact_chains;
mod snapshot_copy;
mod snapshot_drill;
mod snapshot_encryption;
mod snapshot_failures;
mod snapshot_learner;
mod snapshot_object_lock;
mod snapshot_restore;
mod snapshot_restore_parity;
mod snapshot_save_pipeline;
mod snapshot_status;
mod snapshot_stores;
mod store_foreign_entries;
mod store_layout;
mod terminal;
mod tls;
mod unpack_limits;
mod usage;
mod usage_oracle;
mod workflow_parity;

use etcdops_tests::{Cluster, Run, etcdops};

/// Runs etcdops with the cluster's connection flags followed by `rest`.
pub fn run(cluster: &Cluster, rest: &[&str]) -> Run {
    let mut args = cluster.client_flags();
    args.extend(rest.iter().map(|s| s.to_string()));
    etcdops(&args, &[])
}

/// Saves with etcdops into `store` (`--compression none|zstd`) and returns the stored file.
pub fn save_snapshot(
    cluster: &Cluster,
    store: &std::path::Path,
    compression: &str,
) -> std::path::PathBuf {
    let store_arg = store.display().to_string();
    let saved = run(
        cluster,
        &[
            "snapshot",
            "save",
            &store_arg,
            "--compression",
            compression,
            "-w",
            "json",
        ],
    );
    saved.expect_code(0);
    store.join(saved.json()["manifest"]["object"].as_str().unwrap())
}

/// Runs the cluster's etcdctl and parses its JSON output.
pub fn etcdctl_json(cluster: &Cluster, args: &[&str]) -> (i32, serde_json::Value) {
    let out = cluster.etcdctl(args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "etcdctl {args:?} printed no JSON ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), value)
}

/// Asserts that stderr is one clear line: no panic, no backtrace, and it contains `needle`.
pub fn assert_clear_error(run: &Run, needle: &str) {
    assert_eq!(run.code, 2, "expected exit code 2:\n{run}");
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.contains("warning:"))
        .collect();
    assert_eq!(lines.len(), 1, "expected a one-line error:\n{run}");
    assert!(lines[0].starts_with("etcdops: error: "), "{run}");
    assert!(!run.stderr.contains("panicked"), "{run}");
    assert!(
        run.stderr.to_lowercase().contains(&needle.to_lowercase()),
        "stderr should mention {needle:?}:\n{run}"
    );
}

/// Hex as etcd prints IDs, from etcdctl's decimal JSON numbers.
pub fn hex(value: &serde_json::Value) -> String {
    format!("{:x}", value.as_u64().expect("ID is a u64"))
}
