//! The drills of `snapshot verify` after its checks pass: the backup compared with the live
//! cluster at its chain's last revision (the full backup and its delta segments replayed into
//! a scratch dir, then hashed offline), and the restore drill: the backup (or its chain's
//! last revision) restored into a scratch dir, a single-member etcd started on it on free
//! local ports, its `HashKV` and key count at the backup's revision compared with the
//! backup's own, then etcd stopped and the scratch dir removed (also when anything fails).
//! Neither touches the live cluster's data dir or ports; the restore drill does not need the
//! cluster at all.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_common::{Hint, options};
use etcd_core::{Client, ClusterConfig, GetRequest, Targets};
use etcd_data::{HashKv, HashKvRequest, hash_kv_data_dir};
use etcd_snapshot::{
    ChainReport, PointInTime, RestoreSource, SnapshotError, Unguarded, open_chain_point,
    open_restore_source, restore_point_in_time, restore_snapshot, split_backup_url,
};
use etcd_store::split_object_url;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::against::{AgainstCluster, backup_cluster, compare_with_cluster};
use super::verify::VerifyRequest;
use crate::error::{Error, Result};

/// What `verify` does once the backup and its chain passed: one declaration for the CLI's
/// flags and the module's options.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct DrillSettings {
    /// Compare the backup with the live cluster: etcd's KV hash of the backup (with delta
    /// segments: of its chain's last revision) against each member's `HashKV` at that
    /// revision.
    #[serde(default)]
    pub against_cluster: bool,
    /// Restore the backup (with delta segments: its chain's last revision) into a private
    /// scratch dir, start etcd on it on free 127.0.0.1 ports, compare its `HashKV` and key
    /// count at that revision with the backup's, then stop it and remove the scratch dir.
    #[serde(default)]
    pub restore_drill: bool,
    /// The etcd binary the restore drill starts (default: `etcd` on `PATH`).
    pub etcd_binary: Option<PathBuf>,
}

impl DrillSettings {
    /// Whether anything is asked.
    pub fn any(&self) -> bool {
        self.against_cluster || self.restore_drill
    }
}

/// What the restore drill found.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreDrill {
    /// The etcd binary started.
    pub etcd_binary: String,
    /// Its version, as `etcd --version` prints it.
    pub etcd_version: Option<String>,
    /// The revision compared (the backup's, or its chain's last).
    pub revision: i64,
    /// The delta segments replayed after the full backup (0: the full backup alone).
    pub segments: usize,
    /// The backup's KV hash at the revision, computed offline.
    pub backup_hash: u32,
    /// The restored etcd's `HashKV` at the revision.
    pub etcd_hash: Option<u32>,
    /// The keys live at the revision in the backup, counted offline.
    pub backup_keys: u64,
    /// The keys the restored etcd counts at the revision.
    pub etcd_keys: Option<i64>,
    /// Whether etcd served the backup with the same hash and key count.
    pub ok: bool,
    /// Why not, one line each.
    pub failures: Vec<String>,
}

impl RestoreDrill {
    /// One line: passed, or what failed.
    pub fn message(&self) -> String {
        if self.ok {
            format!(
                "the restore drill passed: etcd served the restored backup at revision {} with the same hash ({}) and key count ({})",
                self.revision, self.backup_hash, self.backup_keys
            )
        } else {
            format!("the restore drill failed: {}", self.failures.join("; "))
        }
    }
}

/// What the drills found (each present when asked).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Drilled {
    /// The comparison with the live cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against_cluster: Option<AgainstCluster>,
    /// The restore drill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_drill: Option<RestoreDrill>,
}

/// Runs the drills `settings` asks for on the backup of `request`, whose verify passed
/// (`chain`: its chain, as verify reported it). `config` is the live cluster (needed by
/// `against_cluster` only). A drill that ran and found a difference is a result; an error
/// is a drill that could not be run (the backup cannot be restored, etcd cannot be
/// started, no cluster answers).
pub async fn drill(
    config: &ClusterConfig,
    request: &VerifyRequest,
    chain: Option<&ChainReport>,
    settings: &DrillSettings,
) -> Result<Drilled> {
    let mut drilled = Drilled::default();
    let segments = chain.map_or(0, |c| c.segments.len());
    if settings.against_cluster && segments == 0 {
        drilled.against_cluster = Some(super::verify_against_cluster(config, request).await?);
    }
    if !(settings.restore_drill || settings.against_cluster && segments > 0) {
        return Ok(drilled);
    }
    let ports = if settings.restore_drill {
        Some(free_ports()?)
    } else {
        None
    };
    // SIGINT or SIGTERM while the scratch dir (and its etcd) exists: the drill is dropped,
    // so its guards stop etcd and remove the dir before the error ends the program.
    let interrupted = Interrupted::listen()?;
    tokio::select! {
        done = on_scratch(config, request, chain, settings, ports, drilled) => done,
        () = interrupted.wait() => Err(Error::Io {
            action: "finish the drill in",
            path: std::env::temp_dir(),
            source: std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted (SIGINT or SIGTERM); its etcd was stopped and its scratch dir removed",
            ),
        }),
    }
}

/// The drills that need the backup restored: into a scratch dir, hashed, served.
async fn on_scratch(
    config: &ClusterConfig,
    request: &VerifyRequest,
    chain: Option<&ChainReport>,
    settings: &DrillSettings,
    ports: Option<(u16, u16)>,
    mut drilled: Drilled,
) -> Result<Drilled> {
    let segments = chain.map_or(0, |c| c.segments.len());
    let scratch = Scratch::restore(request, chain.filter(|_| segments > 0), ports).await?;
    let own = scratch.hash(&HashKvRequest::default())?;
    if settings.against_cluster && segments > 0 {
        let hash = |asked: &HashKvRequest| hash_kv_data_dir(&scratch.data_dir, asked);
        let cluster = backup_cluster(request).await;
        let mut against =
            compare_with_cluster(config, &request.snapshot, cluster, segments, &hash).await?;
        against.warnings = scratch.warnings.clone();
        drilled.against_cluster = Some(against);
    }
    if let Some((client_port, _)) = ports {
        let binary = settings
            .etcd_binary
            .clone()
            .unwrap_or_else(|| PathBuf::from("etcd"));
        drilled.restore_drill = Some(run_drill(&scratch, &binary, client_port, &own).await?);
    }
    Ok(drilled)
}

/// SIGINT and SIGTERM, listened to while a drill runs.
struct Interrupted {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Interrupted {
    fn listen() -> Result<Interrupted> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| {
            signal(kind).map_err(|source| Error::Io {
                action: "listen for signals in",
                path: PathBuf::from("/"),
                source,
            })
        };
        Ok(Interrupted {
            int: listen(SignalKind::interrupt())?,
            term: listen(SignalKind::terminate())?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

/// The name and token of the one-member cluster a drill restores.
const DRILL_NAME: &str = "etcdops-drill";

/// Two free ports on 127.0.0.1 (client, peer), as the OS hands them out.
fn free_ports() -> Result<(u16, u16)> {
    let failed = |source| Error::Io {
        action: "bind a free port on",
        path: PathBuf::from("127.0.0.1"),
        source,
    };
    let bind = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr().map(|a| (l, a.port())))
            .map_err(failed)
    };
    // Both held while the second is asked, so they differ.
    let (_first, client) = bind()?;
    let (_second, peer) = bind()?;
    Ok((client, peer))
}

/// A backup restored into a private temporary dir (0700), removed when dropped.
struct Scratch {
    /// The temporary dir (removed on drop).
    _dir: tempfile::TempDir,
    /// The restored data dir inside it.
    data_dir: PathBuf,
    /// The restored member's peer URL.
    peer_url: String,
    /// The delta segments replayed.
    segments: usize,
    /// What opening the backup warned of.
    warnings: Vec<String>,
}

impl Scratch {
    /// Restores the backup of `request` (with `chain`: to its chain's last revision) as the
    /// single member of a new cluster whose peer URL uses `ports`' peer port.
    async fn restore(
        request: &VerifyRequest,
        chain: Option<&ChainReport>,
        ports: Option<(u16, u16)>,
    ) -> Result<Scratch> {
        let tmp = std::env::temp_dir();
        let dir = etcd_common::private::temp_dir_in(&tmp, "etcdops-drill-").map_err(|source| {
            Error::Io {
                action: "create a scratch dir for the drill in",
                path: tmp.clone(),
                source,
            }
        })?;
        let data_dir = dir.path().join("data");
        let peer_port = ports.map_or(2380, |(_, peer)| peer);
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let mut library = etcd_snapshot::RestoreRequest {
            name: DRILL_NAME.into(),
            initial_cluster: format!("{DRILL_NAME}={peer_url}"),
            initial_cluster_token: DRILL_NAME.into(),
            initial_advertise_peer_urls: vec![peer_url.clone()],
            data_dir: data_dir.clone(),
            ..Default::default()
        };
        let (identities, warnings) = request.identity.identities()?;
        let options = request.store.options();
        match chain {
            Some(chain) => {
                // The store that lists the chain: the one holding the cluster folder.
                let (store_url, full) = split_backup_url(&request.snapshot).unwrap_or_else(|| {
                    (split_object_url(&request.snapshot).0, chain.object.clone())
                });
                let point = PointInTime::Revision(chain.to_revision);
                let mut opened = open_chain_point(
                    &mut library,
                    &store_url,
                    &full,
                    point,
                    &options,
                    &identities,
                )
                .await?;
                restore_point_in_time(
                    &opened.name,
                    &opened.snapshot,
                    &library,
                    Some(&mut opened.replay),
                    &Unguarded,
                )?;
            }
            None => {
                let from = RestoreSource::Snapshot(&request.snapshot);
                let (name, snapshot) =
                    open_restore_source(&mut library, from, &options, &identities).await?;
                restore_snapshot(&name, &snapshot, &library, &Unguarded)?;
            }
        }
        Ok(Scratch {
            _dir: dir,
            data_dir,
            peer_url,
            segments: chain.map_or(0, |c| c.segments.len()),
            warnings,
        })
    }

    /// The restored db's KV hash (offline; never while etcd runs on it).
    fn hash(&self, request: &HashKvRequest) -> Result<HashKv> {
        hash_kv_data_dir(&self.data_dir, request).map_err(|e| SnapshotError::Data(e).into())
    }
}

/// An etcd started by the drill, in a process group of its own: the whole group killed (a
/// wrapper script's etcd too) and the child reaped when dropped, whatever happened.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let group = rustix::process::Pid::from_child(&self.0);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How long the restored etcd has to serve.
const SERVE_WITHIN: Duration = Duration::from_secs(60);

/// Starts `binary` on the scratch dir, waits until it serves, compares its hash and key
/// count at the backup's revision with `own` (the restored db's, offline), stops it. An etcd
/// that exits or does not serve is a failed drill; one that cannot be started is an error.
async fn run_drill(
    scratch: &Scratch,
    binary: &Path,
    client_port: u16,
    own: &HashKv,
) -> Result<RestoreDrill> {
    let peer_url = scratch.peer_url.as_str();
    let client_url = format!("http://127.0.0.1:{client_port}");
    let mut drill = RestoreDrill {
        etcd_binary: binary.display().to_string(),
        etcd_version: etcd_version(binary).await,
        revision: own.hash_revision,
        segments: scratch.segments,
        backup_hash: own.hash,
        etcd_hash: None,
        backup_keys: own.live_keys,
        etcd_keys: None,
        ok: false,
        failures: Vec::new(),
    };
    let log_path = scratch.data_dir.with_file_name("etcd.log");
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io {
            action,
            path,
            source,
        }
    };
    let log = etcd_common::private::create_new_file(&log_path).map_err(io("create", &log_path))?;
    let log_err = log.try_clone().map_err(io("create", &log_path))?;
    let child = Command::new(binary)
        .process_group(0)
        .arg("--name")
        .arg(DRILL_NAME)
        .arg("--data-dir")
        .arg(&scratch.data_dir)
        .args(["--listen-client-urls", &client_url])
        .args(["--advertise-client-urls", &client_url])
        .args(["--listen-peer-urls", peer_url])
        .args(["--initial-advertise-peer-urls", peer_url])
        .args(["--initial-cluster", &format!("{DRILL_NAME}={peer_url}")])
        .args(["--initial-cluster-token", DRILL_NAME])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| {
            Error::invalid(
                format!(
                    "cannot start the etcd binary {} for the restore drill: {e}; give its path, or put etcd on PATH",
                    binary.display()
                ),
                Some(Hint::option(options::ETCD_BINARY)),
            )
        })?;
    let mut etcd = Started(child);
    let config = ClusterConfig {
        endpoints: vec![client_url.clone()],
        dial_timeout: Duration::from_secs(2),
        command_timeout: Duration::from_secs(10),
        ..ClusterConfig::default()
    };
    let client = Client::new(config);
    let count = GetRequest {
        from_key: true,
        count_only: true,
        revision: own.hash_revision,
        ..GetRequest::default()
    };
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = etcd.0.try_wait() {
            drill.failures.push(format!(
                "etcd ({}) exited ({status}) before it served the restored backup; its log: {}",
                binary.display(),
                log_tail(&log_path)
            ));
            return Ok(drill);
        }
        let health = client.endpoints().health(Targets::Configured).await;
        if health.as_ref().is_ok_and(|h| h.all_healthy) {
            break;
        }
        if started.elapsed() > SERVE_WITHIN {
            let why = match health {
                Ok(h) => h
                    .endpoints
                    .into_iter()
                    .find_map(|e| e.error)
                    .unwrap_or_else(|| "unhealthy".into()),
                Err(e) => e.to_string(),
            };
            drill.failures.push(format!(
                "etcd ({}) did not serve the restored backup within {}s: {why}; its log: {}",
                binary.display(),
                SERVE_WITHIN.as_secs(),
                log_tail(&log_path)
            ));
            return Ok(drill);
        }
        // Not serving yet: asked again shortly.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let revision = own.hash_revision;
    match client.kv().get_pages(&count, |_| Ok(())).await {
        Ok(summary) => drill.etcd_keys = Some(summary.count),
        Err(e) => drill.failures.push(format!(
            "etcd cannot count the keys at revision {revision}: {e}"
        )),
    }
    let report = client
        .endpoints()
        .hashkv(Targets::Configured, revision)
        .await;
    drop(etcd);
    let row = report?.endpoints.into_iter().next();
    drill.etcd_hash = row.as_ref().and_then(|r| r.hash);
    match &row {
        None => drill.failures.push("etcd gave no hash".into()),
        Some(r) => {
            if let Some(error) = &r.error {
                drill
                    .failures
                    .push(format!("etcd gave no hash at revision {revision}: {error}"));
            }
            if let Some(compact) = r.compact_revision.filter(|c| *c != own.compact_revision) {
                drill.failures.push(format!(
                    "etcd reports compaction {compact} where the backup has {}",
                    own.compact_revision
                ));
            }
        }
    }
    if let Some(hash) = drill.etcd_hash.filter(|h| *h != own.hash) {
        drill.failures.push(format!(
            "etcd hashes revision {revision} as {hash} where the backup hashes it as {}",
            own.hash
        ));
    }
    if let Some(counted) = drill
        .etcd_keys
        .filter(|c| u64::try_from(*c).ok() != Some(own.live_keys))
    {
        drill.failures.push(format!(
            "etcd counts {counted} keys at revision {revision} where the backup holds {}",
            own.live_keys
        ));
    }
    drill.ok = drill.failures.is_empty();
    Ok(drill)
}

/// `etcd --version`'s version (`etcd Version: 3.5.1`), when it answers within 10 s (a
/// binary that does not is killed: the drill then fails on starting it, saying why).
async fn etcd_version(binary: &Path) -> Option<String> {
    let child = tokio::process::Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("etcd Version:"))
        .map(|v| v.trim().to_string())
}

/// The last lines of etcd's log, for an error message.
fn log_tail(path: &Path) -> String {
    let Ok(file) = std::fs::File::open(path) else {
        return "no log".into();
    };
    let lines: Vec<String> = BufReader::new(file).lines().map_while(|l| l.ok()).collect();
    let tail: Vec<String> = lines
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(|l| l.chars().take(400).collect())
        .collect();
    if tail.is_empty() {
        "its log is empty".into()
    } else {
        tail.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drill_ports_differ_and_are_free_to_bind() {
        let (client, peer) = free_ports().unwrap();
        assert_ne!(client, peer);
        for port in [client, peer] {
            std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        }
    }

    #[test]
    fn the_log_tail_is_the_last_three_lines_cut_short() {
        let dir = etcd_common::private::temp_dir_in(&std::env::temp_dir(), "drill-test-").unwrap();
        let log = dir.path().join("etcd.log");
        assert_eq!(log_tail(&log), "no log");
        std::fs::write(&log, "").unwrap();
        assert_eq!(log_tail(&log), "its log is empty");
        let long = "x".repeat(1000);
        std::fs::write(&log, format!("one\ntwo\nthree\n{long}\n")).unwrap();
        let tail = log_tail(&log);
        assert!(tail.starts_with("two | three | x"), "{tail}");
        assert_eq!(tail.len(), "two | three | ".len() + 400);
    }

    #[test]
    fn a_drill_says_what_passed_or_every_failure() {
        let mut drill = RestoreDrill {
            etcd_binary: "etcd".into(),
            etcd_version: Some("3.5.1".into()),
            revision: 9,
            segments: 2,
            backup_hash: 7,
            etcd_hash: Some(7),
            backup_keys: 3,
            etcd_keys: Some(3),
            ok: true,
            failures: Vec::new(),
        };
        assert!(drill.message().contains("passed"), "{}", drill.message());
        drill.ok = false;
        drill.failures = vec!["a".into(), "b".into()];
        assert_eq!(drill.message(), "the restore drill failed: a; b");
        assert!(!DrillSettings::default().any());
        let asked = DrillSettings {
            restore_drill: true,
            ..DrillSettings::default()
        };
        assert!(asked.any());
    }
}
