//! Real script patterns (tests/scripts/fragments: Kubernetes' encryption check, etcd's
//! compaction recipe, kubeadm's bracketed liveness probe, OpenShift 3.x's fields discovery,
//! kubespray's health and membership checks, must-gather's object counts, Rancher's jq reads,
//! etcd's readiness loop), each run with the cluster's own etcdctl and then with etcdops as
//! `etcdctl` on PATH: the same exit code and the same stdout, parsed by the fragment's own
//! awk, jq, grep and hexdump. Then the same with an active alarm (each release's verdict), and
//! the one designed difference: a plaintext Secret is not printed, and that fails.

use std::path::{Path, PathBuf};

use etcd_client::{AlarmAction, AlarmOptions, AlarmType};
use etcdops_tests::{Cluster, Security, block_on, etcdops_path};

use crate::compat_script::{ScriptRun, run_script_file};

/// A fragment of tests/scripts/fragments.
fn fragment(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scripts/fragments/{name}.sh"))
}

/// The fragment's runs with etcdctl and with etcdops, after `before` (which may write).
fn both(
    cluster: &Cluster,
    name: &str,
    env: &[(&str, String)],
    before: impl Fn(),
) -> (ScriptRun, ScriptRun) {
    let script = fragment(name);
    let work = |tool: &str| {
        let dir = cluster.dir().join(format!("work-{name}-{tool}"));
        std::fs::create_dir_all(&dir).unwrap();
        dir.display().to_string()
    };
    let with = |tool: &str| {
        let mut env = env.to_vec();
        env.push(("WORK", work(tool)));
        env
    };
    before();
    let oracle = run_script_file(
        cluster,
        &cluster.version.etcdctl(),
        "etcdctl",
        &script,
        &with("etcdctl"),
    );
    before();
    let ours = run_script_file(
        cluster,
        &etcdops_path(),
        "etcdops",
        &script,
        &with("etcdops"),
    );
    (oracle, ours)
}

/// Asserts the same outcome: exit code and stdout.
fn assert_same_outcome(name: &str, oracle: &ScriptRun, ours: &ScriptRun) {
    assert_eq!(
        (oracle.code, &oracle.stdout),
        (ours.code, &ours.stdout),
        "{name}: another outcome with etcdops as etcdctl\n=== etcdctl\n{oracle}\n=== etcdops\n{ours}"
    );
}

/// The first member's name, as `member list` prints it.
fn a_member_name(cluster: &Cluster) -> String {
    let endpoints = cluster.endpoints();
    let out = cluster.etcdctl(&["--endpoints", &endpoints, "member", "list"]);
    let list = String::from_utf8_lossy(&out.stdout).into_owned();
    list.lines()
        .next()
        .and_then(|l| l.split(", ").nth(2))
        .expect("a member in etcdctl's member list")
        .to_string()
}

#[test]
fn real_script_patterns_end_as_they_do_with_etcdctl() {
    let cluster = Cluster::start(3, Security::Plain);
    for (key, value) in [
        ("/registry/configmaps/default/a", &b"{}"[..]),
        ("/registry/configmaps/default/b", b"{}"),
        ("/registry/pods/default/p", b"\x6b\x38\x73\x00pod"),
        ("foo", b"bar"),
    ] {
        cluster.put(key, value);
    }
    let secret_key = "/registry/secrets/default/secret1";
    cluster.put(
        secret_key,
        &b"k8s:enc:aescbc:v1:key1:\x9a\x00\xf3ciphertext\xff"[..],
    );
    let client_url = cluster.client_urls()[0].clone();
    let port = client_url.rsplit(':').next().unwrap().to_string();
    let env = [
        ("PORT", port),
        ("SECRET_KEY", secret_key.to_string()),
        ("MEMBER_NAME", a_member_name(&cluster)),
    ];
    let fragments = [
        "k8s-encryption-check",
        "kubeadm-liveness-bracketed",
        "openshift3-discovery-fields",
        "kubespray-health-and-membership",
        "must-gather-object-counts",
        "rancher-status-json",
        "etcd-test-images-readiness",
        "etcd-compaction-recipe",
    ];
    for name in fragments {
        // A new revision before each run, so that each compaction has one to compact to.
        let (oracle, ours) = both(&cluster, name, &env, || {
            cluster.put("/tick", "t");
        });
        assert_eq!(
            oracle.code, 0,
            "{name} fails with etcdctl itself:\n{oracle}"
        );
        assert!(
            !oracle.stdout.is_empty(),
            "{name} printed nothing:\n{oracle}"
        );
        assert_same_outcome(name, &oracle, &ours);
    }
    // The encryption check must have seen the ciphertext, not a redaction notice.
    let (_, ours) = both(&cluster, "k8s-encryption-check", &env, || {});
    assert!(ours.stdout.starts_with("encrypted with aescbc\n"), "{ours}");

    // An active alarm: etcdctl 3.4 still calls the member healthy, 3.5 does not; etcdops as
    // etcdctl gives the verdict of the cluster's own release.
    let member_id = block_on(async {
        let mut client = cluster.client().await;
        let status = client.status().await.expect("status");
        let id = status.header().map(|h| h.member_id()).unwrap_or_default();
        let mut options = AlarmOptions::new();
        options.with_member(id);
        client
            .alarm(AlarmAction::Activate, AlarmType::Nospace, Some(options))
            .await
            .expect("raise NOSPACE");
        id
    });
    for name in [
        "etcd-test-images-readiness",
        "kubespray-health-and-membership",
    ] {
        let (oracle, ours) = both(&cluster, name, &env, || {});
        assert_same_outcome(name, &oracle, &ours);
    }
    block_on(async {
        let mut client = cluster.client().await;
        let mut options = AlarmOptions::new();
        options.with_member(member_id);
        client
            .alarm(AlarmAction::Deactivate, AlarmType::Nospace, Some(options))
            .await
            .expect("disarm NOSPACE");
    });

    // The designed difference: a Secret stored in the clear is not printed, and a script
    // reading it fails instead of taking an empty value for it.
    cluster.put("/registry/secrets/default/plain", "hunter2");
    let sizes = cluster.dir().join("secret-size.sh");
    std::fs::write(
        &sizes,
        "set -euo pipefail\nsize=$(etcdctl get /registry/secrets/default/plain --print-value-only | wc -c)\necho \"size: $size\"\n",
    )
    .unwrap();
    let oracle = run_script_file(
        &cluster,
        &cluster.version.etcdctl(),
        "etcdctl",
        &sizes,
        &env,
    );
    assert_eq!(
        (oracle.code, oracle.stdout.as_str()),
        (0, "size: 8\n"),
        "{oracle}"
    );
    let ours = run_script_file(&cluster, &etcdops_path(), "etcdops", &sizes, &env);
    assert_ne!(
        ours.code, 0,
        "a redacted Secret must fail the script:\n{ours}"
    );
    assert!(!ours.stdout.contains("size:"), "{ours}");
    assert!(ours.stderr.contains("redacted"), "{ours}");
    assert!(!ours.stdout.contains("hunter2") && !ours.stderr.contains("hunter2"));
}
