//! S3 Object Lock on saved backups, against moto with a bucket created with Object Lock
//! enabled: moto refuses to delete a locked version before its date (403), as S3 does, and
//! lets a DELETE without a version id add a delete marker, as S3 does.

use std::time::Duration;

use chrono::{DateTime, Utc};
use etcdops_tests::{Cluster, Run, S3Server, Security, etcdops};

use crate::assert_clear_error;

const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "test-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "Very-Secret-Test-Key"),
    ("AWS_REGION", "us-east-1"),
];

fn run(cluster: &Cluster, s3: &S3Server, rest: &[&str]) -> Run {
    let mut args = cluster.client_flags();
    args.extend(rest.iter().map(|s| s.to_string()));
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

fn date(value: &serde_json::Value) -> DateTime<Utc> {
    value.as_str().unwrap().parse().unwrap()
}

#[test]
fn an_object_locked_backup_is_held_by_prune_until_its_date_then_deleted() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put("/k", "v");
    let s3 = S3Server::start();
    s3.create_locked_bucket("locked");
    let store = "s3://locked/prod";
    let retain = 40;
    let saved = run(
        &cluster,
        &s3,
        &[
            "snapshot",
            "save",
            store,
            "-w",
            "json",
            "--object-lock-mode",
            "compliance",
            "--object-lock-retain",
            &format!("{retain}s"),
        ],
    );
    saved.expect_code(0);
    let manifest = saved.json()["manifest"].clone();
    let locked = manifest["object"].as_str().unwrap().to_string();
    let lock = &manifest["object_lock"];
    assert_eq!(lock["mode"], "compliance", "{manifest}");
    let until = date(&lock["retain_until"]);
    let created = date(&manifest["created_at"]);
    let period = (until - created).num_milliseconds();
    assert!(
        (retain * 1000..retain * 1000 + 1000).contains(&period),
        "retain_until {until} is not {retain}s (rounded up to the second) after {created}"
    );
    // A newer backup without a lock: keep-last 1 keeps it and would delete the locked one.
    let newer = run(&cluster, &s3, &["snapshot", "save", store, "-w", "json"]);
    newer.expect_code(0);
    let unlocked = newer.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(newer.json()["manifest"].get("object_lock").is_none());

    let prune = run(
        &cluster,
        &s3,
        &["snapshot", "prune", store, "--keep-last", "1", "-w", "json"],
    );
    prune.expect_code(0);
    let report = prune.json();
    assert!(
        Utc::now() < until,
        "the prune ran after the date: retain longer"
    );
    assert_eq!(report["deleted"], serde_json::json!([]), "{report}");
    assert_eq!(report["held"][0]["object"], locked.as_str(), "{report}");
    assert_eq!(report["held"][0]["mode"], "compliance");
    assert_eq!(date(&report["held"][0]["retain_until"]), until);
    // The table says it too.
    let table = run(
        &cluster,
        &s3,
        &["snapshot", "prune", store, "--keep-last", "1"],
    );
    table.expect_code(0);
    assert!(
        table
            .stdout
            .lines()
            .any(|l| l.starts_with("| held ") && l.contains(&locked) && l.contains("compliance")),
        "{table}"
    );

    // On the server: the backup and its manifest are current versions (no delete marker),
    // and moto refuses to delete those versions: the lock is set and enforced.
    let key = format!("prod/{locked}");
    let manifest_key = format!("{key}.manifest.json");
    let (versions, markers) = s3.versions("locked");
    assert!(markers.is_empty(), "delete markers: {markers:?}");
    let version_of = |wanted: &str| -> String {
        let found: Vec<&(String, String)> = versions.iter().filter(|(k, _)| k == wanted).collect();
        assert_eq!(found.len(), 1, "{wanted} in {versions:?}");
        found[0].1.clone()
    };
    let (object_version, manifest_version) = (version_of(&key), version_of(&manifest_key));
    assert_eq!(s3.delete_version("locked", &key, &object_version), 403);
    assert_eq!(
        s3.delete_version("locked", &manifest_key, &manifest_version),
        403
    );
    // Deleting it by name is refused too, with the date.
    let delete = run(
        &cluster,
        &s3,
        &["snapshot", "delete", &format!("{store}/{locked}")],
    );
    assert_ne!(delete.code, 0, "{delete}");
    assert!(
        delete.stderr.contains("held by its S3 Object Lock") && delete.stderr.lines().count() == 1,
        "{delete}"
    );

    // After the date: the next prune deletes it (a delete marker over the now unlocked
    // version, as on S3), and the version itself may be deleted now.
    while Utc::now() <= until {
        std::thread::sleep(Duration::from_millis(200));
    }
    let prune = run(
        &cluster,
        &s3,
        &["snapshot", "prune", store, "--keep-last", "1", "-w", "json"],
    );
    prune.expect_code(0);
    let report = prune.json();
    assert_eq!(report["deleted"][0]["object"], locked.as_str(), "{report}");
    assert!(report.get("held").is_none(), "{report}");
    let list = run(&cluster, &s3, &["snapshot", "list", store, "-w", "json"]);
    let listed: Vec<String> = list.json()["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["object"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed, [unlocked]);
    let (_, markers) = s3.versions("locked");
    assert!(
        markers.contains(&key) && markers.contains(&manifest_key),
        "{markers:?}"
    );
    assert_eq!(s3.delete_version("locked", &key, &object_version), 204);
}

#[test]
fn object_lock_bad_input_is_refused_in_one_line_and_nothing_is_left() {
    let cluster = Cluster::start(1, Security::Plain);
    let s3 = S3Server::start();
    s3.create_locked_bucket("locked");
    s3.create_bucket("plain");
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("backups");
    let local = local.to_str().unwrap();

    let lock = [
        "--object-lock-mode",
        "compliance",
        "--object-lock-retain",
        "1d",
    ];
    let mut args = vec!["snapshot", "save", local];
    args.extend(lock);
    assert_clear_error(
        &run(&cluster, &s3, &args),
        "--object-lock-mode needs an S3 store",
    );
    assert!(!dir.path().join("backups").exists(), "nothing written");

    let missing_period = run(
        &cluster,
        &s3,
        &[
            "snapshot",
            "save",
            "s3://locked/p",
            "--object-lock-mode",
            "governance",
        ],
    );
    assert_clear_error(&missing_period, "--object-lock-retain not set");
    let missing_mode = run(
        &cluster,
        &s3,
        &[
            "snapshot",
            "save",
            "s3://locked/p",
            "--object-lock-retain",
            "1d",
        ],
    );
    assert_clear_error(&missing_mode, "--object-lock-mode not set");
    let (versions, _) = s3.versions("locked");
    assert!(versions.is_empty(), "{versions:?}");

    // A bucket without Object Lock: refused after the upload, which is removed again.
    let mut args = vec!["snapshot", "save", "s3://plain/p"];
    args.extend(lock);
    assert_clear_error(&run(&cluster, &s3, &args), "has no Object Lock enabled");
    let list = run(
        &cluster,
        &s3,
        &["snapshot", "list", "s3://plain/p", "-w", "json"],
    );
    list.expect_code(0);
    assert_eq!(list.json()["backups"], serde_json::json!([]), "{list}");
    let (versions, _) = s3.versions("plain");
    assert!(versions.is_empty(), "left in the bucket: {versions:?}");

    // A mode without a period takes max-age's: governance for a day.
    let saved = run(
        &cluster,
        &s3,
        &[
            "snapshot",
            "save",
            "s3://locked/p",
            "-w",
            "json",
            "--object-lock-mode",
            "governance",
            "--max-age",
            "1d",
        ],
    );
    saved.expect_code(0);
    let manifest = saved.json()["manifest"].clone();
    assert_eq!(manifest["object_lock"]["mode"], "governance", "{manifest}");
    let period = date(&manifest["object_lock"]["retain_until"]) - date(&manifest["created_at"]);
    assert!(
        (86_400_000..86_401_000).contains(&period.num_milliseconds()),
        "{manifest}"
    );
}

#[test]
fn the_retention_request_is_signed_as_s3_checks_it() {
    // moto checking SigV4 signatures: the PutObjectRetention request etcdops signs itself
    // (object_store has no call for it) passes where a wrong secret is refused.
    let cluster = Cluster::start(1, Security::Plain);
    let (s3, id, secret) = S3Server::start_signed("locked");
    let save = |secret: &str| {
        let mut args = cluster.client_flags();
        args.extend(
            [
                "snapshot",
                "save",
                "s3://locked/p",
                "-w",
                "json",
                "--object-lock-mode",
                "compliance",
                "--object-lock-retain",
                "1h",
                "--s3-endpoint",
                &s3.endpoint,
                "--allow-http",
                "--s3-path-style",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        etcdops(
            &args,
            &[
                ("AWS_ACCESS_KEY_ID", id.as_str()),
                ("AWS_SECRET_ACCESS_KEY", secret),
                ("AWS_REGION", "us-east-1"),
            ],
        )
    };
    let refused = save("not-the-secret");
    assert_ne!(refused.code, 0, "{refused}");
    assert!(
        refused.stderr.contains("SignatureDoesNotMatch"),
        "{refused}"
    );
    let saved = save(&secret);
    saved.expect_code(0);
    assert_eq!(
        saved.json()["manifest"]["object_lock"]["mode"],
        "compliance"
    );
}

#[test]
fn the_module_locks_the_backup_and_its_prune_reports_held() {
    let cluster = Cluster::start(1, Security::Plain);
    let s3 = S3Server::start();
    s3.create_locked_bucket("locked");
    let collection = etcdops_tests::Collection::install();
    let store = serde_json::json!({
        "dest": "s3://locked/p", "s3_endpoint": s3.endpoint, "s3_path_style": true,
        "allow_http": true,
    });
    let with = |extra: serde_json::Value| {
        let mut args = store.clone();
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let playbook = serde_json::json!([{
        "hosts": "target",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": cluster.client_urls()}},
        "tasks": [
            {"etcd.core.etcd_snapshot": with(serde_json::json!({
                "object_lock_mode": "compliance", "object_lock_retain": "1h"})),
             "register": "locked"},
            {"etcd.core.etcd_snapshot": with(serde_json::json!({"keep_last": 1})),
             "register": "newer"},
            {"ansible.builtin.assert": {"that": [
                "locked.manifest.object_lock.mode == 'compliance'",
                "newer.prune_report.held | length == 1",
                "newer.prune_report.held[0].object == locked.manifest.object",
                "newer.prune_report.held[0].mode == 'compliance'",
                "newer.pruned | length == 0",
            ]}},
        ],
    }])
    .to_string();
    let played = collection.playbook(
        &playbook,
        "target ansible_connection=local\n",
        &serde_json::json!({}),
        &S3_ENV,
        &[],
    );
    assert_eq!(played.code, 0, "{played}");
}

#[test]
fn backup_run_locks_its_full_backups_segments_and_their_manifests() {
    let cluster = Cluster::start(1, Security::Plain);
    let s3 = S3Server::start();
    s3.create_locked_bucket("locked");
    let run = crate::backup_run::BackupRun::start_at(
        &cluster,
        "s3://locked/run",
        &[
            "--s3-endpoint",
            &s3.endpoint,
            "--allow-http",
            "--s3-path-style",
            "--object-lock-mode",
            "governance",
            "--object-lock-retain",
            "2h",
        ],
        &S3_ENV,
    );
    let full = run.wait_for("a full backup", |e| e["event"] == "full_saved");
    let full = full["object"].as_str().unwrap().to_string();
    let revision = cluster.put("/locked/k", "v");
    run.wait_published(revision);
    let events = run.stop();
    let segment = events
        .iter()
        .find(|e| e["event"] == "segment_published")
        .expect("a segment")["object"]
        .as_str()
        .unwrap()
        .to_string();
    for object in [&full, &segment] {
        let manifest_key = format!("run/{object}.manifest.json");
        // moto refuses an anonymous GET of a private object; any signature passes (no IAM).
        let signed = (
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=test-key-id/20260101/us-east-1/s3/aws4_request, \
             SignedHeaders=host, Signature=test",
        );
        let got = etcdops_tests::http_request(
            s3.port,
            "GET",
            &format!("/locked/{manifest_key}"),
            &[signed],
            b"",
        )
        .expect("get the manifest");
        assert_eq!(got.status, 200, "{}", got.body);
        let manifest: serde_json::Value = serde_json::from_str(&got.body).unwrap();
        let lock = &manifest["object_lock"];
        assert_eq!(lock["mode"], "governance", "{manifest}");
        let minutes = (date(&lock["retain_until"]) - Utc::now()).num_minutes();
        assert!((100..=120).contains(&minutes), "{manifest}");
        let (versions, markers) = s3.versions("locked");
        // (the run's writer lock, removed at the stop, is the one delete marker: it is never
        // locked)
        assert!(
            markers.iter().all(|m| m.ends_with("/backup-run.lock.json")),
            "{markers:?}"
        );
        for key in [format!("run/{object}"), manifest_key] {
            let version = &versions
                .iter()
                .find(|(k, _)| *k == key)
                .expect("a version")
                .1;
            assert_eq!(s3.delete_version("locked", &key, version), 403, "{key}");
        }
    }
}
