//! `get` and `watch` as etcdctl drop-ins: etcdctl of the cluster's release and etcdops under
//! `ETCDOPS_COMPAT=etcdctl` side by side, stdout compared byte for byte (binary values
//! included: stdout is a pipe here, where both write the exact bytes).

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, EtcdVersion, Security, assert_same_json, block_on, etcdops_path};

/// A binary value as Kubernetes stores objects (protobuf with a `k8s\0` magic).
const BINARY: &[u8] = b"k8s\x00\n\x0bbinary\xff\xfe";
pub(crate) const SECRET: &str = "/registry/secrets/default/db";
pub(crate) const SECRET_VALUE: &str = "hunter2-secret";
/// Shows Secrets to a script written for etcdctl, whose command line has no --show-secrets.
const SHOW_SECRETS: &str = "ETCDOPS_SHOW_SECRETS";

/// A program's exact output.
#[derive(Debug)]
pub(crate) struct Raw {
    pub(crate) code: i32,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

impl std::fmt::Display for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{:?}\n--- stderr\n{}",
            self.code,
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        )
    }
}

/// `program args` with a clean ETCDCTL_* environment, etcdops in etcdctl compat mode. The
/// arguments need not be UTF-8 (binary keys).
pub(crate) fn command<A: AsRef<std::ffi::OsStr>>(
    program: &Path,
    args: &[A],
    env: &[(&str, &str)],
) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars() {
        if key.starts_with("ETCDCTL_") || key.starts_with("ETCDOPS_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("ETCDCTL_API", "3")
        .env("ETCDOPS_COMPAT", "etcdctl")
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs a program that ends by itself, within a deadline.
pub(crate) fn run_raw(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Raw {
    let child = command(program, args, env).spawn().expect("spawn");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{program:?} {args:?} did not end within 30 s"))
        .expect("wait");
    Raw {
        code: output.status.code().unwrap_or(-1),
        stdout: output.stdout,
        stderr: output.stderr,
    }
}

/// Both programs with the same arguments.
pub(crate) fn both(cluster: &Cluster, args: &[&str]) -> (Raw, Raw) {
    both_env(cluster, args, &[])
}

fn both_env(cluster: &Cluster, args: &[&str], env: &[(&str, &str)]) -> (Raw, Raw) {
    let endpoints = cluster.endpoints();
    let mut all = vec!["--endpoints", &endpoints];
    all.extend_from_slice(args);
    (
        run_raw(&cluster.version.etcdctl(), &all, env),
        run_raw(&etcdops_path(), &all, env),
    )
}

/// Asserts identical stdout bytes, exit codes and stderr emptiness; returns etcdops' run.
/// Secrets are shown (`ETCDOPS_SHOW_SECRETS`, which etcdctl ignores): etcdctl shows them.
fn same_bytes(cluster: &Cluster, args: &[&str]) -> Raw {
    let (theirs, ours) = both_env(cluster, args, &[(SHOW_SECRETS, "true")]);
    let report = format!("{args:?}\n=== etcdctl\n{theirs}\n=== etcdops\n{ours}");
    assert_eq!(theirs.code, ours.code, "exit codes differ: {report}");
    assert_eq!(theirs.stdout, ours.stdout, "stdout differs: {report}");
    assert_eq!(
        theirs.stderr.is_empty(),
        ours.stderr.is_empty(),
        "stderr: {report}"
    );
    ours
}

/// One member (one header for both), keys with versions, a range, a lease, a multi-line and a
/// binary value, and a Secret.
pub(crate) fn kv_cluster(extra: &[&str]) -> (Cluster, i64) {
    let cluster = Cluster::start_with(1, Security::Plain, extra);
    let early = block_on(async {
        let mut client = cluster.client().await;
        for (key, value) in [("/a/1", "one"), ("/a/2", "two"), ("/a/3", "three")] {
            client.put(key, value, None).await?;
        }
        let early = client.put("/a/2", "two again", None).await?;
        client.put("/a/2", "two, third version", None).await?;
        client.put("/b/multi", "line 1\nline 2", None).await?;
        client.put("/b/bin", BINARY.to_vec(), None).await?;
        let lease = client.lease_grant(600, None).await?.id();
        let options = etcd_client::PutOptions::new().with_lease(lease);
        client.put("/c/leased", "v", Some(options)).await?;
        client.put("/d", "", None).await?;
        client.put(SECRET, SECRET_VALUE, None).await?;
        Ok::<_, etcd_client::Error>(early.header().unwrap().revision())
    })
    .unwrap();
    (cluster, early)
}

#[test]
fn get_simple_is_etcdctls_byte_for_byte() {
    let (cluster, early) = kv_cluster(&[]);
    let early = early.to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["get", "/a/1"],
        vec!["get", "/a/", "--prefix"],
        vec!["get", "/a/", "--prefix=true"],
        vec!["get", "/a/1", "/a/3"],
        vec!["get", "/a/2", "--from-key"],
        vec!["get", "/b/", "--prefix"],
        vec!["get", "/b/bin", "--print-value-only"],
        vec!["get", "/b/", "--prefix", "--print-value-only"],
        vec!["get", "/a/", "--prefix", "--keys-only"],
        vec!["get", "/a/", "--prefix", "--limit", "2"],
        vec!["get", "/a/", "--prefix", "--rev", &early],
        vec![
            "get",
            "/a/",
            "--prefix",
            "--sort-by",
            "MODIFY",
            "--order",
            "DESCEND",
        ],
        vec!["get", "/a/", "--prefix", "--sort-by", "VERSION"],
        vec![
            "get",
            "/a/",
            "--prefix",
            "--sort-by",
            "CREATE",
            "--limit",
            "2",
        ],
        vec![
            "get",
            "/a/",
            "--prefix",
            "--sort-by",
            "VALUE",
            "--order",
            "DESCEND",
        ],
        vec!["get", "/a/", "--prefix", "--order", "DESCEND"],
        vec!["get", "/a/", "--prefix", "--consistency", "s"],
        vec!["get", "/c/leased"],
        vec!["get", "/d"],
        vec!["get", "/missing"],
        vec!["get", "", "--prefix"],
        vec!["get", "--from-key", ""],
        vec!["get", "", "--prefix", "--keys-only"],
    ];
    for args in &cases {
        same_bytes(&cluster, args);
    }
    // Every key: the binary value's exact bytes are in the pipe, as etcdctl writes them.
    let all = same_bytes(&cluster, &["get", "", "--prefix"]);
    let needle = [b"/b/bin\n".as_slice(), BINARY, b"\n"].concat();
    assert!(
        all.stdout.windows(needle.len()).any(|w| w == needle),
        "{all}"
    );
    let keys = same_bytes(&cluster, &["get", "", "--prefix", "--keys-only"]);
    assert!(
        String::from_utf8_lossy(&keys.stdout).starts_with("/a/1\n\n/a/2\n\n"),
        "{keys}"
    );
}

#[test]
fn get_redacts_secrets_under_compat_unless_asked() {
    let (cluster, _) = kv_cluster(&[]);
    let (theirs, ours) = both(&cluster, &["get", SECRET]);
    assert!(String::from_utf8_lossy(&theirs.stdout).contains(SECRET_VALUE));
    let shown = String::from_utf8_lossy(&ours.stdout);
    assert!(!shown.contains(SECRET_VALUE), "{ours}");
    assert!(shown.contains("redacted Kubernetes Secret"), "{ours}");
    let warned = String::from_utf8_lossy(&ours.stderr);
    assert!(warned.contains("--show-secrets"), "{ours}");
    assert!(warned.contains("ETCDOPS_SHOW_SECRETS"), "{ours}");
    assert_eq!(warned.lines().count(), 1, "one warning line: {ours}");
    // A script must not take the placeholder for the Secret: the command fails.
    assert_eq!(ours.code, 1, "{ours}");
    same_bytes(&cluster, &["get", SECRET]);
    let endpoints = cluster.endpoints();
    let get = |rest: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["--endpoints", &endpoints, "get"];
        args.extend_from_slice(rest);
        run_raw(&etcdops_path(), &args, env)
    };
    // etcdctl's JSON: the key without a `value` field, everything else printed, exit 1.
    let json = get(&["", "--prefix", "-w", "json"], &[]);
    assert_eq!(json.code, 1, "{json}");
    assert!(!String::from_utf8_lossy(&json.stdout).contains("aHVudGVyMi1zZWNyZXQ"));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("etcdctl's JSON");
    let kvs = doc["kvs"].as_array().expect("kvs");
    let secret = base64_of(SECRET.as_bytes());
    let redacted: Vec<_> = kvs.iter().filter(|kv| kv["key"] == secret).collect();
    assert_eq!(redacted.len(), 1, "{json}");
    assert!(redacted[0].get("value").is_none(), "{json}");
    assert!(redacted[0].get("mod_revision").is_some(), "{json}");
    assert!(
        kvs.iter()
            .any(|kv| kv["key"] == base64_of(b"/a/1") && kv.get("value").is_some())
    );
    // --print-value-only: nothing that could pass for the value.
    let value_only = get(&[SECRET, "--print-value-only"], &[]);
    assert_eq!(
        (value_only.code, value_only.stdout.as_slice()),
        (1, &b""[..]),
        "{value_only}"
    );
    // Asked for: the value, exit 0, no warning.
    let asked = get(&[SECRET, "--print-value-only"], &[(SHOW_SECRETS, "true")]);
    assert_eq!(asked.code, 0, "{asked}");
    assert_eq!(asked.stdout, format!("{SECRET_VALUE}\n").as_bytes());
    // Our own JSON keeps the marked placeholder, and succeeds.
    let ours_json = get(&[SECRET, "-w", "json"], &[("ETCDOPS_COMPAT", "etcdops")]);
    assert_eq!(ours_json.code, 0, "{ours_json}");
    let doc: serde_json::Value = serde_json::from_slice(&ours_json.stdout).expect("our JSON");
    assert_eq!(doc["kvs"][0]["value_encoding"], "redacted", "{ours_json}");
}

pub(crate) fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn get_json_is_etcdctls() {
    let (cluster, early) = kv_cluster(&[]);
    let endpoints = cluster.endpoints();
    let early = early.to_string();
    let e = |rest: &[&'static str]| {
        let mut args: Vec<String> = vec!["--endpoints".into(), endpoints.clone()];
        args.extend(rest.iter().map(|s| s.to_string()));
        args
    };
    let cases: Vec<Vec<String>> = vec![
        e(&["get", "", "--prefix", "-w", "json"]),
        e(&["get", "/a/", "--prefix", "--limit", "1", "-w", "json"]),
        e(&["get", "/a/", "--prefix", "--keys-only", "-w", "json"]),
        e(&["get", "/c/leased", "-w", "json"]),
        e(&["get", "/missing", "-w", "json"]),
        e(&["get", "/a/", "--prefix", "-w", "json", "--hex"]),
        {
            let mut args = e(&["get", "/a/", "--prefix", "-w", "json", "--rev"]);
            args.push(early.clone());
            args
        },
    ];
    for args in &cases {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (theirs, ours) = both_env(&cluster, &refs[2..], &[(SHOW_SECRETS, "true")]);
        let parse = |raw: &Raw| -> serde_json::Value {
            serde_json::from_slice(&raw.stdout).unwrap_or_else(|e| panic!("{e}: {raw}"))
        };
        assert_eq!(theirs.code, ours.code, "{refs:?}\n{theirs}\n{ours}");
        assert_eq!(parse(&theirs), parse(&ours), "{refs:?}");
        // Byte for byte too: etcdctl's field order, on one line.
        assert_eq!(theirs.stdout, ours.stdout, "{refs:?}\n{theirs}\n{ours}");
    }
    // What scripts read: `.kvs[0].value|@base64d`, `.header.revision`, `.more`.
    let (_, limited) = assert_same_json(
        &cluster,
        &["--endpoints", &endpoints, "get", "/b/bin", "-w", "json"],
        &[],
    );
    use base64::Engine;
    let value = base64::engine::general_purpose::STANDARD
        .decode(limited["kvs"][0]["value"].as_str().unwrap())
        .unwrap();
    assert_eq!(value, BINARY);
    assert!(limited["header"]["revision"].as_i64().unwrap() > 0);

    // --count-only: etcdctl 3.5 prints it only with -w fields and refuses it in every other
    // format (3.4 has no such flag); so does the personality, on either release.
    let count_only = |format: &str| {
        let args = [
            "--endpoints",
            &endpoints,
            "get",
            "/a/",
            "--prefix",
            "--count-only",
        ];
        let mut args = args.to_vec();
        args.extend(["-w", format]);
        run_raw(&etcdops_path(), &args, &[])
    };
    for format in ["json", "simple"] {
        let refused = count_only(format);
        assert_eq!(refused.code, 1, "{refused}");
        assert!(refused.stdout.is_empty(), "{refused}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.starts_with("Error: --count-only is only for `--write-out=fields`"),
            "{refused}"
        );
    }
    let fields = count_only("fields");
    assert_eq!(fields.code, 0, "{fields}");
    let text = String::from_utf8_lossy(&fields.stdout).into_owned();
    assert!(
        text.ends_with("\"More\" : false\n\"Count\" : 3\n"),
        "{fields}"
    );
    assert!(!text.contains("\"Key\""), "{fields}");
    if cluster.version != EtcdVersion::V3_4 {
        let (theirs, ours) = both(
            &cluster,
            &["get", "/a/", "--prefix", "--count-only", "-w", "fields"],
        );
        assert_eq!(
            (theirs.code, &theirs.stdout),
            (ours.code, &ours.stdout),
            "{theirs}\n{ours}"
        );
    }
    // etcdops' own conventions count in every format.
    let own = etcdops_tests::etcdops(
        &etcdops_tests::args(&[
            "--endpoints",
            &endpoints,
            "get",
            "/a/",
            "--prefix",
            "--count-only",
            "-w",
            "json",
        ]),
        &[],
    );
    own.expect_code(0);
    assert_eq!(own.json()["count"], 3, "{own}");
}

/// A running watch whose stdout is collected as it comes.
pub(crate) struct Live {
    child: Child,
    chunks: mpsc::Receiver<Vec<u8>>,
    stdout: Vec<u8>,
}

impl Live {
    pub(crate) fn start(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Live {
        Live::spawn(command(program, args, env))
    }

    pub(crate) fn spawn(mut command: Command) -> Live {
        let mut child = command.spawn().expect("spawn");
        let mut stdout = child.stdout.take().unwrap();
        let (tx, chunks) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Live {
            child,
            chunks,
            stdout: Vec::new(),
        }
    }

    /// Reads until `done` holds for the output so far (panics after 20 s).
    pub(crate) fn until(&mut self, done: impl Fn(&[u8]) -> bool) -> &[u8] {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(&self.stdout) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(chunk) => self.stdout.extend(chunk),
                Err(_) => panic!(
                    "output incomplete after 20 s:\n{}",
                    String::from_utf8_lossy(&self.stdout)
                ),
            }
        }
        &self.stdout
    }

    /// Waits (20 s at most) for the program to end by itself; its code and whole output.
    pub(crate) fn ended(self) -> (i32, Vec<u8>) {
        let Live {
            mut child,
            chunks,
            mut stdout,
        } = self;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let status = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the program ends by itself")
            .expect("wait");
        while let Ok(chunk) = chunks.recv_timeout(Duration::from_secs(10)) {
            stdout.extend(chunk);
        }
        (status.code().unwrap_or(-1), stdout)
    }

    /// Sends `signal`, waits for the exit and returns its code (-1: killed by the signal)
    /// and the whole output.
    pub(crate) fn finish(self, signal: &str) -> (i32, Vec<u8>) {
        let Live {
            mut child,
            chunks,
            mut stdout,
        } = self;
        let pid = child.id().to_string();
        Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let status = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the watch ends on the signal")
            .expect("wait");
        // The rest of the output, until the reader sees its end.
        while let Ok(chunk) = chunks.recv_timeout(Duration::from_secs(10)) {
            stdout.extend(chunk);
        }
        (status.code().unwrap_or(-1), stdout)
    }

    /// Sends `signal` and waits for the exit code (-1: killed by the signal).
    fn stop(self, signal: &str) -> i32 {
        self.finish(signal).0
    }
}

/// Both watches, each read until `done`, then stopped: etcdctl killed, etcdops interrupted
/// (SIGINT, which must end it with exit code 0). Returns both outputs.
pub(crate) fn watch_both(
    cluster: &Cluster,
    args: &[&str],
    env: &[(&str, &str)],
    done: impl Fn(&[u8]) -> bool + Copy,
) -> (Vec<u8>, Vec<u8>) {
    let endpoints = cluster.endpoints();
    let mut all = vec!["--endpoints", &endpoints, "watch"];
    all.extend_from_slice(args);
    let mut theirs = Live::start(&cluster.version.etcdctl(), &all, env);
    let mut ours = Live::start(&etcdops_path(), &all, env);
    let theirs_out = theirs.until(done).to_vec();
    let ours_out = ours.until(done).to_vec();
    theirs.stop("-KILL");
    assert_eq!(ours.stop("-INT"), 0, "SIGINT ends the watch cleanly");
    (theirs_out, ours_out)
}

pub(crate) fn ends_with(tail: &'static str) -> impl Fn(&[u8]) -> bool + Copy {
    move |out: &[u8]| out.ends_with(tail.as_bytes())
}

/// Past events: puts, a deletion, a binary value, replayed from the first revision.
pub(crate) fn watch_cluster() -> (Cluster, i64) {
    let (cluster, _) = kv_cluster(&[]);
    let first = block_on(async {
        let mut client = cluster.client().await;
        let first = client.put("/w/a", "1", None).await?;
        client.put("/w/a", "2", None).await?;
        client.put("/w/b", BINARY.to_vec(), None).await?;
        client.delete("/w/a", None).await?;
        client.put("/w/z", "end", None).await?;
        Ok::<_, etcd_client::Error>(first.header().unwrap().revision())
    })
    .unwrap();
    (cluster, first)
}

#[test]
fn watch_prints_events_as_etcdctl() {
    let (cluster, first) = watch_cluster();
    let rev = first.to_string();
    let cases: Vec<(Vec<&str>, &'static str)> = vec![
        (vec!["/w/", "--prefix", "--rev", &rev], "/w/z\nend\n"),
        (
            vec!["/w/", "--prefix", "--rev", &rev, "--prev-kv"],
            "/w/z\nend\n",
        ),
        (vec!["/w/a", "/w/c", "--rev", &rev], "DELETE\n/w/a\n\n"),
        (vec!["--rev", &rev, "/w/", "--prefix=true"], "/w/z\nend\n"),
        (vec!["", "--prefix", "--rev", &rev], "/w/z\nend\n"),
    ];
    for (args, tail) in &cases {
        let (theirs, ours) = watch_both(&cluster, args, &[], ends_with(tail));
        assert_eq!(
            String::from_utf8_lossy(&theirs),
            String::from_utf8_lossy(&ours),
            "{args:?}"
        );
        assert_eq!(theirs, ours, "{args:?}: exact bytes");
    }
    let (_, ours) = watch_both(
        &cluster,
        &["/w/a", "--rev", &rev, "--prev-kv"],
        &[],
        ends_with("DELETE\n/w/a\n2\n/w/a\n\n"),
    );
    assert!(ours.starts_with(b"PUT\n/w/a\n1\nPUT\n/w/a\n1\n/w/a\n2\n"));

    // ETCDCTL_WATCH_KEY stands for the key argument, as in etcdctl.
    let (theirs, ours) = watch_both(
        &cluster,
        &["--rev", &rev],
        &[("ETCDCTL_WATCH_KEY", "/w/z")],
        ends_with("/w/z\nend\n"),
    );
    assert_eq!(theirs, ours);
}

#[test]
fn watch_json_is_one_etcdctl_object_per_response() {
    let (cluster, first) = watch_cluster();
    let rev = first.to_string();
    let complete = |out: &[u8]| out.ends_with(b"\n") && out.windows(4).any(|w| w == b"L3cv");
    let (theirs, ours) = watch_both(
        &cluster,
        &["/w/", "--prefix", "--rev", &rev, "--prev-kv", "-w", "json"],
        &[],
        complete,
    );
    let parse = |out: &[u8]| -> Vec<serde_json::Value> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (theirs_json, ours_json) = (parse(&theirs), parse(&ours));
    assert_eq!(theirs_json, ours_json);
    assert_eq!(theirs, ours, "byte for byte");
    assert_eq!(ours_json[0]["Events"].as_array().unwrap().len(), 5);
    assert_eq!(ours_json[0]["Events"][3]["type"], 1);

    // Our own JSON for an unbounded watch: one event per line (JSON Lines).
    let endpoints = cluster.endpoints();
    let mut live = Live::start(
        &etcdops_path(),
        &[
            "--compat",
            "etcdops",
            "--endpoints",
            &endpoints,
            "watch",
            "/w/",
            "--prefix",
            "--rev",
            &rev,
            "-w",
            "json",
        ],
        &[],
    );
    let out = live
        .until(|out| String::from_utf8_lossy(out).lines().count() >= 5)
        .to_vec();
    assert_eq!(live.stop("-TERM"), 0, "SIGTERM ends the watch cleanly");
    let kinds: Vec<(String, String)> = String::from_utf8_lossy(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["kind"].to_string(), v["key"].to_string())
        })
        .collect();
    assert_eq!(kinds[3], ("\"delete\"".into(), "\"/w/a\"".into()));

    // A bounded watch's document is closed when it is interrupted: still one JSON document.
    let mut live = Live::start(
        &etcdops_path(),
        &[
            "--compat",
            "etcdops",
            "--endpoints",
            &endpoints,
            "watch",
            "/w/",
            "--prefix",
            "--rev",
            &rev,
            "--timeout",
            "5m",
            "-w",
            "json",
        ],
        &[],
    );
    live.until(|out| String::from_utf8_lossy(out).matches("\"kind\"").count() >= 5);
    let (code, out) = live.finish("-INT");
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["events"].as_array().unwrap().len(), 5, "{doc}");
    assert_eq!(doc["summary"]["ended_by"], "interrupted");
    assert_eq!(doc["summary"]["events"], 5);
}

#[test]
fn watch_runs_a_command_per_event_with_etcdctls_variables() {
    let (cluster, first) = watch_cluster();
    let rev = first.to_string();
    let dir = cluster.dir().to_path_buf();
    let script = "printf '%s|%s|%s|%s\\n' \"$ETCD_WATCH_REVISION\" \"$ETCD_WATCH_EVENT_TYPE\" \
                  \"$ETCD_WATCH_KEY\" \"$ETCD_WATCH_VALUE\" >> \"$OUT\"; echo ran";
    let events = |out: &[u8]| String::from_utf8_lossy(out).matches("ran\n").count() >= 5;
    let files: Vec<std::path::PathBuf> = ["etcdctl", "etcdops"]
        .iter()
        .map(|n| dir.join(format!("{n}.env")))
        .collect();
    // The same output file name for both would mix them: run one after the other.
    let mut outputs = Vec::new();
    for (file, program) in files
        .iter()
        .zip([cluster.version.etcdctl(), etcdops_path()])
    {
        let endpoints = cluster.endpoints();
        let out = file.display().to_string();
        let args = [
            "--endpoints",
            &endpoints,
            "watch",
            "/w/",
            "--prefix",
            "--rev",
            &rev,
            "--",
            "sh",
            "-c",
            script,
        ];
        let mut live = Live::start(&program, &args, &[("OUT", &out)]);
        outputs.push(live.until(events).to_vec());
        live.stop("-KILL");
    }
    assert_eq!(outputs[0], outputs[1], "stdout: events, then the command's");
    let theirs = std::fs::read_to_string(&files[0]).unwrap();
    let ours = std::fs::read_to_string(&files[1]).unwrap();
    assert_eq!(theirs, ours);
    assert!(ours.contains("|\"DELETE\"|\"/w/a\"|\"\"\n"), "{ours}");
    assert!(
        ours.contains("|\"PUT\"|\"/w/b\"|\"k8s\\x00\\n\\vbinary\\xff\\xfe\"\n"),
        "{ours}"
    );

    // A failing command ends both with exit code 1 and etcdctl's message.
    let (theirs, ours) = both(&cluster, &["watch", "/w/z", "--rev", &rev, "--", "false"]);
    assert_eq!((theirs.code, ours.code), (1, 1));
    assert_eq!(theirs.stdout, ours.stdout);
    assert_eq!(
        String::from_utf8_lossy(&ours.stderr),
        "command [\"false\"] error (exit status 1)\n"
    );
    assert_eq!(theirs.stderr, ours.stderr);
    // `watch -- COMMAND` with the key in ETCDCTL_WATCH_KEY.
    let (theirs, ours) = both_env(
        &cluster,
        &["watch", "--rev", &rev, "--", "false"],
        &[("ETCDCTL_WATCH_KEY", "/w/z")],
    );
    assert_eq!((theirs.code, ours.code), (1, 1), "{theirs}\n{ours}");
    assert_eq!(theirs.stdout, ours.stdout);
    assert_eq!(theirs.stdout, b"PUT\n/w/z\nend\n");
}

#[test]
fn watch_progress_notifications_appear() {
    let (cluster, _) = kv_cluster(&["--experimental-watch-progress-notify-interval=200ms"]);
    let revision = block_on(async {
        let mut client = cluster.client().await;
        client
            .get("/a/1", None)
            .await
            .map(|r| r.header().unwrap().revision())
    })
    .unwrap();
    let line = format!("progress notify: {revision}\n");
    let has = |out: &[u8], line: &str| String::from_utf8_lossy(out).matches(line).count();
    let endpoints = cluster.endpoints();
    let args = [
        "--endpoints",
        &endpoints,
        "watch",
        "/nothing",
        "--progress-notify",
    ];
    let mut ours = Live::start(&etcdops_path(), &args, &[]);
    let out = ours.until(|out| has(out, &line) >= 2).to_vec();
    assert_eq!(ours.stop("-INT"), 0);
    assert!(String::from_utf8_lossy(&out).starts_with(&line));
    if cluster.version == EtcdVersion::V3_4 {
        return; // etcdctl 3.4 has no --progress-notify
    }
    let mut theirs = Live::start(&cluster.version.etcdctl(), &args, &[]);
    let out_theirs = theirs.until(|out| has(out, &line) >= 2).to_vec();
    theirs.stop("-KILL");
    assert_eq!(out_theirs, out);

    // In JSON each notification is the line and the empty response, as etcdctl prints them.
    let json_args = [&args[..], &["-w", "json"]].concat();
    let (theirs, ours) = (
        Live::start(&cluster.version.etcdctl(), &json_args, &[]),
        Live::start(&etcdops_path(), &json_args, &[]),
    );
    let mut outs = Vec::new();
    for mut live in [theirs, ours] {
        outs.push(
            live.until(|out| has(out, "\"Events\":[]") >= 1 && out.ends_with(b"\n"))
                .to_vec(),
        );
        live.stop("-KILL");
    }
    let first_two = |out: &[u8]| {
        String::from_utf8_lossy(out)
            .lines()
            .take(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(first_two(&outs[0]), first_two(&outs[1]));
}

#[test]
fn protobuf_output_is_etcdctls_response_message_byte_for_byte() {
    let cluster = Cluster::start(1, Security::Plain);
    cluster.put("/p/a", "1");
    cluster.put("/p/b", &b"\x00\xffbinary\n"[..]);
    cluster.put("/p/b", "2");
    for args in [
        &["get", "/p/", "--prefix", "-w", "protobuf"][..],
        &["get", "/p/", "--prefix", "--limit", "1", "-w", "protobuf"],
        &["get", "/p/none", "-w", "protobuf"],
        &["member", "list", "-w", "protobuf"],
        &["alarm", "list", "-w", "protobuf"],
    ] {
        let (theirs, ours) = both(&cluster, args);
        assert_eq!(theirs.code, 0, "{args:?}\n{theirs}");
        // (etcdctl 3.4 prints nothing for an alarm list without alarms.)
        if args[0] == "get" || args[0] == "member" {
            assert!(!theirs.stdout.is_empty(), "{args:?}\n{theirs}");
        }
        assert_eq!(
            (theirs.code, &theirs.stdout),
            (ours.code, &ours.stdout),
            "{args:?}\n{theirs}\n{ours}"
        );
    }
    // A command whose answer is no single message: refused in one line, nothing on stdout.
    let (_, ours) = both(&cluster, &["endpoint", "status", "-w", "protobuf"]);
    assert_eq!(ours.code, 1, "{ours}");
    assert!(ours.stdout.is_empty(), "{ours}");
}
