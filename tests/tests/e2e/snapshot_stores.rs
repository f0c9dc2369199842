//! `snapshot save | list | verify | prune` through the CLI against S3 (moto) and Azure
//! (Azurite).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{AzuriteServer, Cluster, Run, S3Server, Security, etcdops, etcdops_path};

use crate::assert_clear_error;

const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "Very-Secret-Test-Key"),
    ("AWS_REGION", "us-east-1"),
];

fn with_store_env(cluster: &Cluster, env: &[(&str, &str)], rest: &[&str]) -> Run {
    let mut a = cluster.client_flags();
    a.extend(rest.iter().map(|s| s.to_string()));
    etcdops(&a, env)
}

#[test]
fn s3_save_list_verify_and_prune_through_multipart_uploads() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 12, 1_000_000);
    let s3 = S3Server::start();
    s3.create_bucket("backups");
    let flags = [
        "--s3-endpoint",
        &s3.endpoint,
        "--allow-http",
        "--s3-path-style",
        "--part-size",
        "5MiB",
    ];
    let store = "s3://backups/prod/etcd";
    let mut saved = Vec::new();
    for _ in 0..2 {
        let mut rest = vec![
            "snapshot",
            "save",
            store,
            "-w",
            "json",
            "--verify-after-upload",
        ];
        rest.extend_from_slice(&flags);
        let run = with_store_env(&cluster, &S3_ENV, &rest);
        run.expect_code(0);
        assert!(!run.stderr.contains("Very-Secret"), "{run}");
        let manifest = run.json()["manifest"].clone();
        // 12 MB of incompressible data: more than two 5 MiB parts.
        assert!(
            manifest["object_size"].as_u64().unwrap() > 10_000_000,
            "{manifest}"
        );
        assert_eq!(manifest["verified_after_upload"], true);
        saved.push(manifest["object"].as_str().unwrap().to_string());
    }
    assert!(
        s3.multipart_uploads("backups").is_empty(),
        "every multipart upload completed"
    );

    let mut rest = vec!["snapshot", "list", store, "-w", "json"];
    rest.extend_from_slice(&flags);
    let list = with_store_env(&cluster, &S3_ENV, &rest);
    list.expect_code(0);
    let listed: Vec<String> = list.json()["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["object"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, [saved[1].clone(), saved[0].clone()], "newest first");

    let url = format!("{store}/{}", saved[0]);
    let mut rest = vec!["snapshot", "verify", url.as_str(), "-w", "json"];
    rest.extend_from_slice(&flags);
    let verify = with_store_env(&cluster, &S3_ENV, &rest);
    verify.expect_code(0);
    assert_eq!(verify.json()["manifest_checked"], true);

    let mut rest = vec!["snapshot", "prune", store, "--keep-last", "1", "-w", "json"];
    rest.extend_from_slice(&flags);
    let prune = with_store_env(&cluster, &S3_ENV, &rest);
    prune.expect_code(0);
    assert_eq!(prune.json()["deleted"][0]["object"], saved[0].as_str());

    // A bucket that does not exist: a clear error and nothing stored.
    let mut rest = vec!["snapshot", "save", "s3://no-such-bucket/etcd"];
    rest.extend_from_slice(&flags);
    let missing = with_store_env(&cluster, &S3_ENV, &rest);
    assert_clear_error(&missing, "does not exist");
    assert!(!missing.stderr.contains("Very-Secret"), "{missing}");
}

#[test]
fn s3_going_away_mid_upload_fails_the_save() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/big/", 100, 1_000_000);
    let mut s3 = S3Server::start();
    s3.create_bucket("backups");
    let mut child = Command::new(etcdops_path())
        .args([
            "--endpoints",
            &cluster.endpoints(),
            "snapshot",
            "save",
            "s3://backups/etcd",
        ])
        .args([
            "--s3-endpoint",
            &s3.endpoint,
            "--allow-http",
            "--s3-path-style",
        ])
        .args(["--part-size", "5MiB", "--compression", "none"])
        .envs(S3_ENV)
        .env("ETCDOPS_STORE_MAX_RETRIES", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while s3.multipart_uploads("backups").is_empty() {
        assert!(Instant::now() < deadline, "the upload never started");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the save ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    s3.kill();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("s3://backups/etcd"),
        "names the store: {stderr}"
    );
    assert!(!stderr.contains("Very-Secret"), "{stderr}");
}

#[test]
fn azure_save_list_and_verify_on_azurite() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/registry/configmaps/x/", 50);
    let azurite = AzuriteServer::start();
    azurite.create_container("etcd-backups");
    let flags = ["--azure-emulator", "--store-endpoint", &azurite.endpoint];
    let store = "az://etcd-backups/cluster-a";
    let mut rest = vec!["snapshot", "save", store, "-w", "json"];
    rest.extend_from_slice(&flags);
    let saved = with_store_env(&cluster, &[], &rest);
    saved.expect_code(0);
    let object = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();

    let mut rest = vec!["snapshot", "list", store, "-w", "json"];
    rest.extend_from_slice(&flags);
    let list = with_store_env(&cluster, &[], &rest);
    list.expect_code(0);
    assert_eq!(list.json()["backups"][0]["object"], object.as_str());

    let url = format!("{store}/{object}");
    let mut rest = vec!["snapshot", "verify", url.as_str()];
    rest.extend_from_slice(&flags);
    with_store_env(&cluster, &[], &rest).expect_code(0);

    let mut rest = vec!["snapshot", "save", "az://missing-container/x"];
    rest.extend_from_slice(&flags);
    let missing = with_store_env(&cluster, &[], &rest);
    assert_clear_error(&missing, "does not exist");
}
