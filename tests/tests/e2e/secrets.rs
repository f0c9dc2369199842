//! No secret in any output, whatever the failure: every command is run with credentials in
//! endpoints, flags, the environment, files and store variables, failing every way we can
//! make it fail (bad host, bad TLS, bad auth, bad store credentials, bad JSON), and all of
//! stdout and stderr is searched for the secrets.

use std::path::Path;
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Run, Security, args, etcdops, free_port, shim_path};

/// Environment variables for one run.
type Env = Vec<(&'static str, String)>;

/// Every secret planted below. None may appear in any output.
const ETCD_PW: &str = "Etcd-Pw-7f3a9c";
const URL_PW: &str = "Url-Pw-2b8d41";
const KEY_FILE_SECRET: &str = "KeyFile-Secret-91b2e0";
const S3_SECRET: &str = "Aws-Secret-0d4e77";
const S3_TOKEN: &str = "Aws-Token-55aa12";
const S3_URL_PW: &str = "S3Url-Pw-1c2d90";
const AZURE_KEY: &str = "Azure-Key-8e8e31";
const AZURE_SIG: &str = "Azure-Sig-3f3f64";
const GCS_PK: &str = "Gcs-Pk-6b6b05";
const GCS_STR: &str = "Gcs-Str-4c4c88";
const AGE_SECRET: &str = "AGE-SECRET-KEY-1QQQGARBAGEQQQ9X7";

const ALL: &[&str] = &[
    ETCD_PW,
    URL_PW,
    KEY_FILE_SECRET,
    S3_SECRET,
    S3_TOKEN,
    S3_URL_PW,
    AZURE_KEY,
    AZURE_SIG,
    GCS_PK,
    GCS_STR,
    AGE_SECRET,
];

/// Fails with the run when any secret appears in its output.
fn assert_no_secret(run: &Run) {
    for secret in ALL {
        assert!(
            !run.stdout.contains(secret) && !run.stderr.contains(secret),
            "secret {secret} in the output:\n{run}"
        );
    }
    assert!(!run.stderr.contains("panicked"), "{run}");
}

/// The commands that talk to etcd, with the arguments each needs.
fn etcd_commands(store: &str) -> Vec<Vec<String>> {
    let c = |parts: &[&str]| args(parts);
    vec![
        c(&["member", "list"]),
        c(&["member", "list", "-w", "json"]),
        c(&["member", "remove", "abc"]),
        c(&["endpoint", "health", "-w", "json"]),
        c(&["endpoint", "status", "-w", "table"]),
        c(&["endpoint", "hashkv"]),
        c(&["get", "foo"]),
        c(&["get", "foo", "-w", "json"]),
        c(&["history", "foo"]),
        c(&["watch", "foo", "--timeout", "1s"]),
        c(&["lease", "list"]),
        c(&["alarm", "list"]),
        c(&["auth", "status"]),
        c(&["user", "list"]),
        c(&["role", "list"]),
        c(&["check"]),
        c(&["version"]),
        c(&["defrag"]),
        c(&["compact", "1"]),
        c(&["move-leader", "abc"]),
        c(&["snapshot", "save", store]),
        c(&["snapshot", "save", store, "-w", "json"]),
        c(&["k8s", "encryption-status"]),
        c(&["usage"]),
        c(&["usage", "-w", "json"]),
        c(&["k8s", "get", "/registry/secrets/default/x"]),
    ]
}

/// Runs `etcdops` with `connection` before `command`, and checks its output.
fn check(connection: &[String], command: &[String], env: &[(&str, &str)]) -> Run {
    let mut a = connection.to_vec();
    a.extend(args(&[
        "--dial-timeout",
        "500ms",
        "--command-timeout",
        "1s",
    ]));
    a.extend(command.iter().cloned());
    let run = etcdops(&a, env);
    assert_no_secret(&run);
    run
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn no_etcd_credential_appears_in_any_output() {
    let auth = Cluster::start(1, Security::Auth);
    let tls = Cluster::start(1, Security::Tls);
    let certs = tls.certs.as_ref().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store").display().to_string();
    let closed = format!("127.0.0.1:{}", free_port());
    let auth_host = auth.members[0].client_url.trim_start_matches("http://");
    let bad_key = write(
        dir.path(),
        "bad-key.pem",
        &format!("-----BEGIN PRIVATE KEY-----\n{KEY_FILE_SECRET}\n-----END PRIVATE KEY-----\n"),
    );
    let path = |p: &Path| p.display().to_string();

    // (connection flags, environment): each fails differently.
    let user_pw = format!("root:{ETCD_PW}");
    let url_with_pw = format!("http://root:{URL_PW}@{auth_host}");
    let modes: Vec<(Vec<String>, Env)> = vec![
        // Credentials in the endpoint URL: refused.
        (args(&["--endpoints", &url_with_pw]), vec![]),
        (
            args(&["--endpoints", &format!("root:{URL_PW}@{auth_host}")]),
            vec![],
        ),
        (
            args(&["--endpoints", &format!("https://{URL_PW}@{auth_host}")]),
            vec![],
        ),
        (vec![], vec![("ETCDCTL_ENDPOINTS", url_with_pw.clone())]),
        // Wrong password, by flag and by environment.
        (
            args(&["--endpoints", &auth.endpoints(), "--user", &user_pw]),
            vec![],
        ),
        (
            args(&[
                "--endpoints",
                &auth.endpoints(),
                "--user",
                "root",
                "--password",
                ETCD_PW,
            ]),
            vec![],
        ),
        (
            args(&["--endpoints", &auth.endpoints()]),
            vec![
                ("ETCDCTL_USER", "root".into()),
                ("ETCDCTL_PASSWORD", ETCD_PW.into()),
            ],
        ),
        (
            args(&["--endpoints", &auth.endpoints()]),
            vec![("ETCDCTL_USER", user_pw.clone())],
        ),
        // A host that is not there.
        (
            args(&[
                "--endpoints",
                &format!("http://{closed}"),
                "--user",
                &user_pw,
            ]),
            vec![],
        ),
        // TLS: an unrelated CA, a key file that is not a key.
        (
            args(&[
                "--endpoints",
                &tls.endpoints(),
                "--cacert",
                &path(&certs.other_ca),
                "--cert",
                &path(&certs.client_cert),
                "--key",
                &path(&certs.client_key),
                "--user",
                &user_pw,
            ]),
            vec![],
        ),
        (
            args(&[
                "--endpoints",
                &tls.endpoints(),
                "--cacert",
                &path(&certs.ca),
                "--cert",
                &path(&certs.client_cert),
                "--key",
                &bad_key,
                "--user",
                &user_pw,
            ]),
            vec![],
        ),
    ];
    for (connection, env) in &modes {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        for command in etcd_commands(&store) {
            check(connection, &command, &env);
        }
        // Each mode is a failure.
        let list = check(connection, &args(&["member", "list"]), &env);
        assert_ne!(list.code, 0, "{list}");
    }

    // The endpoint is still named, without its password.
    let run = check(
        &args(&["--endpoints", &url_with_pw]),
        &args(&["member", "list"]),
        &[],
    );
    assert!(run.stderr.contains("root:***@"), "{run}");

    // A single endpoint given to `snapshot save` and `backup run` directly.
    let save = check(
        &args(&["--endpoints", &auth.endpoints(), "--user", &user_pw]),
        &args(&["snapshot", "save", &store, "--endpoint", &url_with_pw]),
        &[],
    );
    assert_ne!(save.code, 0, "{save}");
    let backup = run_for(
        &args(&[
            "--endpoints",
            &auth.endpoints(),
            "--user",
            &user_pw,
            "backup",
            "run",
            &store,
            "--endpoint",
            &url_with_pw,
        ]),
        &[],
        Duration::from_secs(6),
    );
    assert_no_secret(&backup);
}

/// Runs `etcdops` for at most `limit` (a long-running command), then kills it.
fn run_for(a: &[String], env: &[(&str, &str)], limit: Duration) -> Run {
    use std::process::{Command, Stdio};
    let mut child = Command::new(etcdops_tests::etcdops_path())
        .args(a)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    Run {
        args: a.to_vec(),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn no_store_or_encryption_secret_appears_in_any_output() {
    let cluster = Cluster::start(1, Security::Plain);
    let dir = tempfile::tempdir().unwrap();
    let closed = free_port();
    let data_dir = dir.path().join("restored").display().to_string();
    let identity = write(dir.path(), "identity.txt", &format!("{AGE_SECRET}\n"));
    let gcs_file = write(
        dir.path(),
        "gcs.json",
        &format!(r#"{{"private_key": "{GCS_PK}", "client_email": 5}}"#),
    );
    let s3_env: Vec<(&str, String)> = vec![
        ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE".into()),
        ("AWS_SECRET_ACCESS_KEY", S3_SECRET.into()),
        ("AWS_SESSION_TOKEN", S3_TOKEN.into()),
        (
            "ETCDOPS_S3_ENDPOINT",
            format!("http://s3user:{S3_URL_PW}@127.0.0.1:{closed}"),
        ),
        ("ETCDOPS_ALLOW_HTTP", "true".into()),
        ("ETCDOPS_S3_PATH_STYLE", "true".into()),
        ("ETCDOPS_STORE_MAX_RETRIES", "0".into()),
    ];
    let azure_env: Vec<(&str, String)> = vec![
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct".into()),
        (
            "AZURE_STORAGE_ACCOUNT_KEY",
            format!("{AZURE_KEY}!!not-base64"),
        ),
        ("ETCDOPS_STORE_MAX_RETRIES", "0".into()),
    ];
    let azure_sas_env: Vec<(&str, String)> = vec![
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct".into()),
        (
            "AZURE_STORAGE_SAS_TOKEN",
            format!("sv=2020&sig={AZURE_SIG}"),
        ),
        (
            "ETCDOPS_STORE_ENDPOINT",
            format!("http://127.0.0.1:{closed}"),
        ),
        ("ETCDOPS_ALLOW_HTTP", "true".into()),
        ("ETCDOPS_STORE_MAX_RETRIES", "0".into()),
    ];
    let gcs_json_as_path: Vec<(&str, String)> = vec![(
        "GOOGLE_SERVICE_ACCOUNT",
        format!(r#"{{"type": "service_account", "private_key": "{GCS_PK}""#),
    )];
    let gcs_bad_key: Vec<(&str, String)> = vec![(
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        format!(
            r#"{{"private_key": "{GCS_PK}", "private_key_id": "k", "client_email": "a@b.c", "disable_oauth": "{GCS_STR}"}}"#
        ),
    )];
    let gcs_bad_file: Vec<(&str, String)> = vec![("GOOGLE_APPLICATION_CREDENTIALS", gcs_file)];
    let stores: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("s3://bucket/etcd", s3_env),
        ("az://container/etcd", azure_env),
        ("az://container/etcd", azure_sas_env),
        ("gs://bucket/etcd", gcs_json_as_path),
        ("gs://bucket/etcd", gcs_bad_key),
        ("gs://bucket/etcd", gcs_bad_file),
        (
            // A store URL with credentials in it.
            &*Box::leak(format!("s3://bucket/etcd?secret={S3_SECRET}").into_boxed_str()),
            vec![],
        ),
    ];
    let object = |store: &str| format!("{store}/etcd-1/x.db");
    for (store, env) in &stores {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let commands = vec![
            args(&["snapshot", "list", store]),
            args(&["snapshot", "list", store, "-w", "json"]),
            args(&["snapshot", "save", store]),
            args(&["snapshot", "save", store, "-w", "json"]),
            args(&[
                "snapshot",
                "verify",
                &object(store),
                "--identity",
                &identity,
            ]),
            args(&[
                "snapshot",
                "status",
                &object(store),
                "--identity",
                &identity,
            ]),
            args(&["snapshot", "prune", store, "--keep-last", "1"]),
            args(&["snapshot", "delete", &object(store)]),
            args(&[
                "snapshot",
                "copy",
                store,
                &dir.path().join("copy").display().to_string(),
            ]),
            args(&[
                "snapshot",
                "restore",
                &object(store),
                "--data-dir",
                &data_dir,
                "--name",
                "m0",
                "--initial-cluster",
                "m0=http://127.0.0.1:2380",
                "--initial-advertise-peer-urls",
                "http://127.0.0.1:2380",
                "--identity",
                &identity,
            ]),
            args(&["k8s", "encryption-status", "--snapshot", &object(store)]),
        ];
        for command in commands {
            let run = check(&cluster.client_flags(), &command, &env);
            assert_ne!(run.code, 0, "{run}");
        }
        let backup = run_for(
            &[cluster.client_flags(), args(&["backup", "run", store])].concat(),
            &env,
            Duration::from_secs(4),
        );
        assert_no_secret(&backup);
    }

    // An identity file that is not one, on a real encrypted backup.
    let local = dir.path().join("local").display().to_string();
    let saved = check(
        &cluster.client_flags(),
        &args(&[
            "snapshot",
            "save",
            &local,
            "--encrypt-to",
            "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
            "-w",
            "json",
        ]),
        &[],
    );
    saved.expect_code(0);
    let name = saved.json()["manifest"]["object"]
        .as_str()
        .unwrap()
        .to_string();
    for command in [
        args(&[
            "snapshot",
            "verify",
            &format!("{local}/{name}"),
            "--identity",
            &identity,
        ]),
        args(&[
            "snapshot",
            "status",
            &format!("{local}/{name}"),
            "--identity",
            &identity,
        ]),
    ] {
        let run = check(&cluster.client_flags(), &command, &[]);
        assert_ne!(run.code, 0, "{run}");
    }
}

#[test]
fn no_credential_appears_in_a_module_result() {
    let auth = Cluster::start(1, Security::Auth);
    let host = auth.members[0]
        .client_url
        .trim_start_matches("http://")
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        serde_json::json!({
            "_etcd_module": "etcd_cluster_info",
            "endpoints": [format!("http://root:{URL_PW}@{host}")],
        }),
        serde_json::json!({
            "_etcd_module": "etcd_cluster_info",
            "endpoints": [format!("root:{URL_PW}@{host}")],
        }),
        serde_json::json!({
            "_etcd_module": "etcd_kv_info",
            "endpoints": [auth.endpoints()],
            "user": format!("root:{ETCD_PW}"),
            "etcd_key": "foo",
        }),
        serde_json::json!({
            "_etcd_module": "etcd_member",
            "endpoints": [format!("http://root:{URL_PW}@{host}")],
            "password": ETCD_PW,
            "user": "root",
            "state": "absent",
            "member": "x",
        }),
    ];
    for (i, case) in cases.iter().enumerate() {
        let file = dir.path().join(format!("args-{i}.json"));
        std::fs::write(&file, case.to_string()).unwrap();
        let output = std::process::Command::new(shim_path())
            .arg(&file)
            .output()
            .unwrap();
        let run = Run {
            args: vec![case.to_string()],
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        // The arguments themselves hold the secrets: show them scrubbed on failure.
        let shown = Run {
            args: vec![format!("case {i}")],
            ..run
        };
        assert_no_secret(&shown);
        let result: serde_json::Value = serde_json::from_str(&shown.stdout)
            .unwrap_or_else(|e| panic!("no JSON result ({e}):\n{shown}"));
        assert_eq!(result["failed"], true, "{shown}");
    }
}
