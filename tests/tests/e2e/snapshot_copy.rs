//! `snapshot copy` between a local dir and S3 (moto): every complete backup copied and still
//! verifying at the destination, a repeat copying nothing, a damaged source refused with
//! nothing listed at the destination.

use etcdops_tests::{Cluster, Run, S3Server, Security, etcdops};

use crate::run;

const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "Very-Secret-Test-Key"),
    ("AWS_REGION", "us-east-1"),
];

fn with_s3(s3: &S3Server, rest: &[&str]) -> Run {
    let mut args: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
    args.extend(
        [
            "--s3-endpoint",
            &s3.endpoint,
            "--allow-http",
            "--s3-path-style",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    etcdops(&args, &S3_ENV)
}

fn listed(run: &Run) -> Vec<String> {
    run.expect_code(0);
    let mut objects: Vec<String> = run.json()["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["object"].as_str().unwrap().to_string())
        .collect();
    objects.sort();
    objects
}

#[test]
fn copy_to_s3_and_back_verifies_and_a_repeat_copies_nothing() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_random("/copy/", 20, 50_000);
    let local = cluster.dir().join("backups");
    let local_arg = local.display().to_string();
    for compression in ["zstd", "none"] {
        run(
            &cluster,
            &["snapshot", "save", &local_arg, "--compression", compression],
        )
        .expect_code(0);
    }
    let originals = listed(&run(
        &cluster,
        &["snapshot", "list", &local_arg, "-w", "json"],
    ));
    assert_eq!(originals.len(), 2);
    let s3 = S3Server::start();
    s3.create_bucket("offsite");
    let remote = "s3://offsite/etcd";

    // A dry run copies nothing.
    let dry = with_s3(
        &s3,
        &[
            "snapshot",
            "copy",
            &local_arg,
            remote,
            "--dry-run",
            "-w",
            "json",
        ],
    );
    dry.expect_code(0);
    assert_eq!(dry.json()["copied"], 2, "{dry}");
    assert!(listed(&with_s3(&s3, &["snapshot", "list", remote, "-w", "json"])).is_empty());

    let copied = with_s3(&s3, &["snapshot", "copy", &local_arg, remote, "-w", "json"]);
    copied.expect_code(0);
    assert_eq!(copied.json()["copied"], 2, "{copied}");
    assert!(!copied.stderr.contains("Very-Secret"), "{copied}");
    assert_eq!(
        listed(&with_s3(&s3, &["snapshot", "list", remote, "-w", "json"])),
        originals
    );
    for object in &originals {
        with_s3(&s3, &["snapshot", "verify", &format!("{remote}/{object}")]).expect_code(0);
    }

    // Again: nothing to do.
    let again = with_s3(&s3, &["snapshot", "copy", &local_arg, remote, "-w", "json"]);
    again.expect_code(0);
    assert_eq!(again.json()["copied"], 0, "{again}");
    assert_eq!(again.json()["already_present"], 2, "{again}");

    // Back from S3 into a new dir, one backup by name: the same bytes as the original.
    let back = cluster.dir().join("restored-copies");
    let back_arg = back.display().to_string();
    let one = with_s3(
        &s3,
        &[
            "snapshot",
            "copy",
            remote,
            &back_arg,
            "--backup",
            &originals[0],
            "-w",
            "json",
        ],
    );
    one.expect_code(0);
    assert_eq!(one.json()["copied"], 1, "{one}");
    assert_eq!(
        std::fs::read(back.join(&originals[0])).unwrap(),
        std::fs::read(local.join(&originals[0])).unwrap()
    );
    assert_eq!(
        std::fs::read(back.join(format!("{}.manifest.json", originals[0]))).unwrap(),
        std::fs::read(local.join(format!("{}.manifest.json", originals[0]))).unwrap()
    );

    // A backup the source does not hold: a clear error.
    let missing = with_s3(
        &s3,
        &["snapshot", "copy", remote, &back_arg, "--backup", "nope.db"],
    );
    assert_eq!(missing.code, 2, "{missing}");
    assert!(missing.stderr.contains("snapshot list"), "{missing}");
}

#[test]
fn copy_refuses_a_damaged_source_and_lists_nothing_at_the_destination() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put_keys("/copy/", 50);
    let local = cluster.dir().join("backups");
    let local_arg = local.display().to_string();
    let saved = run(&cluster, &["snapshot", "save", &local_arg, "-w", "json"]);
    saved.expect_code(0);
    let object = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    let path = local.join(&object);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();

    let dest = cluster.dir().join("offsite");
    let dest_arg = dest.display().to_string();
    let refused = run(&cluster, &["snapshot", "copy", &local_arg, &dest_arg]);
    assert_eq!(refused.code, 2, "{refused}");
    assert!(refused.stderr.contains("damaged"), "{refused}");
    assert_eq!(refused.stderr.lines().count(), 1, "{refused}");
    let after = run(
        &cluster,
        &["snapshot", "list", &dest_arg, "--orphans", "-w", "json"],
    );
    assert!(listed(&after).is_empty(), "{after}");
    assert!(
        after.json()["orphans"].as_array().unwrap().is_empty(),
        "{after}"
    );
}
