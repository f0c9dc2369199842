//! Invariants of one store shared by two clusters, under seeded random sequences of what real
//! stores live through: saves (some killed with SIGKILL mid-stream), retention from either
//! cluster, prunes, deletes, copies into a folder of the store itself, a nested store, a
//! `backup run` writing a chain while a save and a prune run beside it, and concurrent
//! writers. The store also holds foreign files (`.db`, `.db.zst`, `.age` and other names, a
//! folder named like ours, a sibling prefix). After every step:
//! - no foreign file changed, and nothing outside the store's own layout was touched;
//! - every listed backup is complete and verifies; listed names are in the store's own layout;
//! - each cluster keeps its newest complete backup through every retention rule, and a save
//!   with `--keep-*` from one cluster leaves the other cluster's backups as they were;
//! - a nested store is not seen, pruned or copied by the store around it;
//! - after a prune with no grace, no leftover (orphan, temporary file) remains.
//!
//! The short form runs in `scripts/test` (local dir and moto S3, on each etcd version);
//! `ETCDOPS_INVARIANT_STEPS=N` runs N steps per store, `ETCDOPS_INVARIANT_SEED=S` replays a
//! seed (printed at the start and in every failure).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcdops_tests::{Cluster, Run, S3Server, Security, etcdops, etcdops_path, http_request};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::backup_run::BackupRun;

const SHORT_STEPS: usize = 14;
const S3_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "invariant-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "invariant-secret"),
    ("AWS_REGION", "us-east-1"),
];

/// xorshift64*: small, seeded, good enough to pick steps.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn seed() -> u64 {
    std::env::var("ETCDOPS_INVARIANT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            u64::from(nanos) ^ (u64::from(std::process::id()) << 32) | 1
        })
}

fn steps() -> usize {
    std::env::var("ETCDOPS_INVARIANT_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SHORT_STEPS)
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Where the store lives: a local directory tree, or a bucket of moto.
enum Backend {
    Local(tempfile::TempDir),
    S3(S3Server),
}

/// The store under test (`<base>/root`) and what surrounds it: `<base>/root-other` (a
/// sibling whose name starts with the store's), `root/nested` (a store inside it) and
/// `root/dr` (a copy destination inside it).
struct Place {
    backend: Backend,
}

const BUCKET: &str = "inv";

impl Place {
    fn local() -> Place {
        Place {
            backend: Backend::Local(tempfile::tempdir().unwrap()),
        }
    }

    fn s3() -> Place {
        let server = S3Server::start();
        server.create_bucket(BUCKET);
        Place {
            backend: Backend::S3(server),
        }
    }

    /// URL of a store at `rel` (relative to the base: `root`, `root/nested`, ...).
    fn url(&self, rel: &str) -> String {
        match &self.backend {
            Backend::Local(dir) => dir.path().join(rel).display().to_string(),
            Backend::S3(_) => format!("s3://{BUCKET}/{rel}"),
        }
    }

    /// Store flags every command against this place needs.
    fn flags(&self) -> Vec<String> {
        match &self.backend {
            Backend::Local(_) => Vec::new(),
            Backend::S3(server) => [
                "--s3-endpoint",
                &server.endpoint,
                "--allow-http",
                "--s3-path-style",
            ]
            .map(String::from)
            .to_vec(),
        }
    }

    fn env(&self) -> Vec<(&'static str, &'static str)> {
        match &self.backend {
            Backend::Local(_) => Vec::new(),
            Backend::S3(_) => S3_ENV.to_vec(),
        }
    }

    fn write(&self, rel: &str, bytes: &[u8]) {
        match &self.backend {
            Backend::Local(dir) => {
                let path = dir.path().join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, bytes).unwrap();
            }
            Backend::S3(server) => {
                let r = http_request(server.port, "PUT", &format!("/{BUCKET}/{rel}"), &[], bytes)
                    .unwrap();
                assert_eq!(r.status, 200, "put {rel}: {}", r.body);
            }
        }
    }

    fn read(&self, rel: &str) -> Option<Vec<u8>> {
        match &self.backend {
            Backend::Local(dir) => std::fs::read(dir.path().join(rel)).ok(),
            Backend::S3(server) => {
                // moto refuses anonymous reads but does not check signatures.
                let auth = "AWS4-HMAC-SHA256 Credential=k/20260101/us-east-1/s3/aws4_request, \
                            SignedHeaders=host, Signature=0";
                let r = http_request(
                    server.port,
                    "GET",
                    &format!("/{BUCKET}/{rel}"),
                    &[("Authorization", auth)],
                    b"",
                )
                .unwrap();
                (r.status == 200).then(|| r.body.into_bytes())
            }
        }
    }

    /// Files (local) or open multipart uploads (S3) under `root/` that are neither listed
    /// objects nor manifests nor locks: what a prune with no grace must have removed.
    /// Open multipart uploads under the store's cluster folders (none for a local store).
    fn open_uploads(&self) -> BTreeSet<String> {
        match &self.backend {
            Backend::Local(_) => BTreeSet::new(),
            Backend::S3(server) => server
                .multipart_uploads(BUCKET)
                .into_iter()
                .filter(|k| k.starts_with("root/etcd-"))
                .collect(),
        }
    }

    fn leftovers(
        &self,
        listed: &BTreeSet<String>,
        foreign: &BTreeMap<String, String>,
        killed_uploads: &BTreeSet<String>,
    ) -> Vec<String> {
        match &self.backend {
            Backend::Local(dir) => {
                let root = dir.path().join("root");
                let mut found = Vec::new();
                for cluster_dir in std::fs::read_dir(&root).unwrap().map_while(Result::ok) {
                    let name = cluster_dir.file_name().to_string_lossy().into_owned();
                    if !is_cluster_folder(&name) {
                        continue;
                    }
                    walk(&cluster_dir.path(), &mut |path| {
                        let rel = path.strip_prefix(&root).unwrap().display().to_string();
                        let object = rel.trim_end_matches(".manifest.json");
                        let ours = !foreign.contains_key(&format!("root/{rel}"));
                        let chain = object.split_once(".deltas/").map(|(stem, _)| stem);
                        let in_chain =
                            chain.is_some_and(|stem| listed.iter().any(|l| l.starts_with(stem)));
                        if ours
                            && !listed.contains(object)
                            && !in_chain
                            && !rel.ends_with("backup-run.lock.json")
                        {
                            found.push(rel);
                        }
                    });
                }
                found
            }
            // A process killed with SIGKILL cannot abort its multipart upload, and object_store
            // cannot list open uploads for a prune to abort: a bucket lifecycle rule removes
            // those (docs/MANIFEST.md). Any other open upload is a leftover.
            Backend::S3(_) => self
                .open_uploads()
                .into_iter()
                .filter(|k| !killed_uploads.contains(k))
                .collect(),
        }
    }
}

fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) {
    for entry in std::fs::read_dir(dir).unwrap().map_while(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, visit);
        } else {
            visit(&path);
        }
    }
}

/// `etcd-` followed by a cluster ID in hex, as etcdops names a cluster's folder.
fn is_cluster_folder(name: &str) -> bool {
    name.strip_prefix("etcd-").is_some_and(|id| {
        !id.is_empty() && id.len() <= 16 && id.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// One listed backup.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Listed {
    cluster: String,
    created_at: String,
    object: String,
    object_sha256: String,
}

/// The whole test: the clusters, the place, what is known to be there, the seed.
struct World {
    clusters: [Cluster; 2],
    ids: [String; 2],
    place: Place,
    foreign: BTreeMap<String, String>,
    verified: BTreeSet<(String, String)>,
    /// Open multipart uploads of processes killed with SIGKILL (S3): known, documented.
    killed_uploads: BTreeSet<String>,
    seed: u64,
    step: usize,
    what: String,
}

impl World {
    fn context(&self) -> String {
        format!(
            "seed {} (ETCDOPS_INVARIANT_SEED={} replays it), step {}: {}",
            self.seed, self.seed, self.step, self.what
        )
    }

    fn cmd(&self, cluster: Option<usize>, parts: &[&str]) -> Run {
        let mut args: Vec<String> = cluster
            .map(|c| self.clusters[c].client_flags())
            .unwrap_or_default();
        args.extend(parts.iter().map(|s| s.to_string()));
        args.extend(self.place.flags());
        etcdops(&args, &self.place.env())
    }

    fn ok(&self, cluster: Option<usize>, parts: &[&str]) -> Run {
        let run = self.cmd(cluster, parts);
        assert_eq!(run.code, 0, "{}\n{run}", self.context());
        run
    }

    fn list(&self, rel: &str) -> Vec<Listed> {
        let url = self.place.url(rel);
        let run = self.cmd(None, &["snapshot", "list", &url, "-w", "json"]);
        // A local folder that does not exist is no store (exit 2, one line): nothing in it.
        if run.code == 2 && run.stderr.contains("does not exist") {
            return Vec::new();
        }
        assert_eq!(run.code, 0, "{}\n{run}", self.context());
        let catalog = run.json();
        catalog["backups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                assert_eq!(
                    b["complete"],
                    true,
                    "{}: incomplete backup listed: {b}",
                    self.context()
                );
                Listed {
                    cluster: b["manifest"]["cluster_id"].as_str().unwrap().to_string(),
                    created_at: b["manifest"]["created_at"].as_str().unwrap().to_string(),
                    object: b["object"].as_str().unwrap().to_string(),
                    object_sha256: b["manifest"]["object_sha256"].as_str().unwrap().to_string(),
                }
            })
            .collect()
    }

    fn save(&self, c: usize, rel: &str, extra: &[&str]) -> Run {
        let url = self.place.url(rel);
        let mut parts = vec!["snapshot", "save", url.as_str(), "-w", "json"];
        parts.extend(extra);
        self.ok(Some(c), &parts)
    }

    /// Spawns `etcdops` with the place's store flags, for kills and concurrency.
    fn spawn(&self, cluster: Option<usize>, parts: &[&str]) -> Child {
        let mut args: Vec<String> = cluster
            .map(|c| self.clusters[c].client_flags())
            .unwrap_or_default();
        args.extend(parts.iter().map(|s| s.to_string()));
        args.extend(self.place.flags());
        Command::new(etcdops_path())
            .args(&args)
            .envs(self.place.env())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn wait_ok(&self, child: Child, what: &str) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}: {what} failed: {}\n{}",
            self.context(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Places the foreign files, and a nested store with a backup of its own.
    fn furnish(&mut self, rng: &mut Rng) {
        let tag = rng.next();
        let a = self.ids[0].clone();
        let files = [
            "root/manual/x.db".to_string(),
            "root/app/app.db".to_string(),
            "root/notes.db.zst".to_string(),
            "root/keys.age".to_string(),
            "root/README.txt".to_string(),
            "root/etcd-old/legacy.db".to_string(),
            format!("root/etcd-{a}/notes.db"),
            format!("root/etcd-{a}/20200101T000000.000Z-rev1-deadbeef.db.zst.bak"),
            format!("root/etcd-{a}/sub/20200101T000000.000Z-rev1-deadbeef.db.zst"),
            format!("root-other/etcd-{a}/20200101T000000.000Z-rev1-00000001.db"),
        ];
        for (i, rel) in files.iter().enumerate() {
            let body = format!("foreign file {i} {tag:x}, not written by etcdops");
            self.place.write(rel, body.as_bytes());
            self.foreign.insert(rel.clone(), sha(body.as_bytes()));
        }
        self.save(0, "root/nested", &[]);
    }

    /// Everything under `root/nested`, as its own listing says.
    fn nested(&self) -> Vec<Listed> {
        self.list("root/nested")
    }

    fn newest_by_cluster(listed: &[Listed]) -> BTreeMap<String, String> {
        let mut newest: BTreeMap<String, String> = BTreeMap::new();
        for l in listed {
            let e = newest.entry(l.cluster.clone()).or_default();
            if l.created_at > *e {
                *e = l.created_at.clone();
            }
        }
        newest
    }

    /// The checks that hold after every step; `before` is the root listing before it.
    fn check(&mut self, before: &[Listed], nested_before: &[Listed], step: &Step) {
        for (rel, want) in &self.foreign {
            let got = self.place.read(rel).map(|b| sha(&b));
            assert_eq!(
                got.as_deref(),
                Some(want.as_str()),
                "{}: foreign file {rel} was changed or deleted",
                self.context()
            );
        }
        let after = self.list("root");
        for l in &after {
            let (folder, file) = l.object.split_once('/').unwrap_or(("", ""));
            assert!(
                is_cluster_folder(folder) && !file.contains('/'),
                "{}: {} is listed but is not in the store's own layout",
                self.context(),
                l.object
            );
            if self
                .verified
                .insert((l.object.clone(), l.object_sha256.clone()))
            {
                let url = format!("{}/{}", self.place.url("root"), l.object);
                self.ok(None, &["snapshot", "verify", &url]);
            }
        }
        let newest_after = Self::newest_by_cluster(&after);
        for (cluster, newest) in Self::newest_by_cluster(before) {
            if matches!(step, Step::Delete { cluster: c } if *c == cluster) {
                continue;
            }
            let kept = newest_after.get(&cluster).is_some_and(|n| *n >= newest);
            assert!(
                kept,
                "{}: cluster {cluster} lost its newest complete backup ({newest})\nbefore: {before:#?}\nafter: {after:#?}",
                self.context()
            );
        }
        if let Step::SaveKeep { cluster, .. } = step {
            let other = |l: &&Listed| l.cluster != self.ids[*cluster];
            let b: Vec<&Listed> = before.iter().filter(other).collect();
            let a: Vec<&Listed> = after.iter().filter(other).collect();
            assert_eq!(
                b,
                a,
                "{}: a save with retention from one cluster changed another cluster's backups",
                self.context()
            );
        }
        if !matches!(step, Step::SaveNested) {
            assert_eq!(
                self.nested(),
                nested_before,
                "{}: the nested store was changed by an operation on the store around it",
                self.context()
            );
        }
        if let Step::Prune { .. } = step {
            let listed: BTreeSet<String> = after.iter().map(|l| l.object.clone()).collect();
            let left = self
                .place
                .leftovers(&listed, &self.foreign, &self.killed_uploads);
            assert!(
                left.is_empty(),
                "{}: a prune with no grace left these behind: {left:?}",
                self.context()
            );
            let url = self.place.url("root");
            let orphans = self.ok(None, &["snapshot", "list", &url, "--orphans", "-w", "json"]);
            assert_eq!(
                orphans.json()["orphans"].as_array().map(Vec::len),
                Some(0),
                "{}: orphans after a prune with no grace:\n{orphans}",
                self.context()
            );
        }
    }
}

/// One step of a sequence.
#[derive(Debug)]
enum Step {
    Save { cluster: usize },
    SaveKeep { cluster: usize, keep: u64 },
    SaveNested,
    KilledSave { cluster: usize, after_ms: u64 },
    Prune { keep: u64 },
    Delete { cluster: String },
    CopyInside,
    Concurrent,
    LiveChain { kill: bool },
}

fn pick(rng: &mut Rng, listed: &[Listed]) -> Step {
    let cluster = rng.below(2) as usize;
    match rng.below(10) {
        0 | 1 => Step::Save { cluster },
        2 | 3 => Step::SaveKeep {
            cluster,
            keep: 1 + rng.below(2),
        },
        4 => Step::SaveNested,
        5 => Step::KilledSave {
            cluster,
            after_ms: rng.below(400),
        },
        6 => Step::Prune {
            keep: 1 + rng.below(3),
        },
        7 if !listed.is_empty() => Step::Delete {
            cluster: listed[rng.below(listed.len() as u64) as usize]
                .cluster
                .clone(),
        },
        7 => Step::Save { cluster },
        8 => {
            if rng.below(2) == 0 {
                Step::CopyInside
            } else {
                Step::Concurrent
            }
        }
        _ => Step::LiveChain {
            kill: rng.below(2) == 0,
        },
    }
}

impl World {
    fn apply(&mut self, rng: &mut Rng, step: &Step, before: &[Listed]) {
        let root = self.place.url("root");
        match step {
            Step::Save { cluster } => {
                self.save(*cluster, "root", &[]);
            }
            Step::SaveKeep { cluster, keep } => {
                self.save(*cluster, "root", &["--keep-last", &keep.to_string()]);
            }
            Step::SaveNested => {
                self.save(0, "root/nested", &["--keep-last", "1"]);
            }
            Step::KilledSave { cluster, after_ms } => {
                let mut child = self.spawn(Some(*cluster), &["snapshot", "save", &root]);
                let deadline = Instant::now() + Duration::from_millis(*after_ms);
                while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
            Step::Prune { keep } => {
                self.ok(
                    None,
                    &[
                        "snapshot",
                        "prune",
                        &root,
                        "--keep-last",
                        &keep.to_string(),
                        "--orphan-grace",
                        "0s",
                    ],
                );
            }
            Step::Delete { cluster } => {
                let mine: Vec<&Listed> = before.iter().filter(|l| l.cluster == *cluster).collect();
                let victim = mine[rng.below(mine.len() as u64) as usize];
                let url = format!("{root}/{}", victim.object);
                self.ok(None, &["snapshot", "delete", &url]);
            }
            Step::CopyInside => {
                let dr = self.place.url("root/dr");
                for _ in 0..2 {
                    self.ok(None, &["snapshot", "copy", &root, &dr]);
                }
                let copied: BTreeSet<String> =
                    self.list("root/dr").into_iter().map(|l| l.object).collect();
                for l in self.list("root") {
                    assert!(
                        copied.contains(&l.object),
                        "{}: {} was not copied to the destination inside the store",
                        self.context(),
                        l.object
                    );
                }
                assert!(
                    self.list("root/dr/dr").is_empty(),
                    "{}: a copy into a folder of its own source nested itself",
                    self.context()
                );
            }
            Step::Concurrent => {
                let a = self.spawn(Some(0), &["snapshot", "save", &root, "--keep-last", "1"]);
                let b = self.spawn(Some(1), &["snapshot", "save", &root, "--keep-last", "1"]);
                let p = self.spawn(None, &["snapshot", "prune", &root, "--keep-last", "2"]);
                self.wait_ok(a, "a concurrent save of cluster A");
                self.wait_ok(b, "a concurrent save of cluster B");
                self.wait_ok(p, "a concurrent prune");
            }
            Step::LiveChain { kill } => self.live_chain(*kill),
        }
    }

    /// A `backup run` of cluster A writes a chain while a save with `--keep-last 1` and a
    /// prune with `--keep-last 1` run beside it: the chain and its full backup survive, and
    /// the run goes on publishing into a chain that is still there.
    fn live_chain(&mut self, kill: bool) {
        let root = self.place.url("root");
        let store_flags = self.place.flags();
        let mut extra = vec!["--delta-every", "300ms"];
        extra.extend(store_flags.iter().map(String::as_str));
        let mut run = BackupRun::start_with(
            self.clusters[0].client_flags(),
            self.clusters[0].dir(),
            &root,
            &extra,
            &self.place.env(),
        );
        let wait_segment_past = |revision: i64, run: &mut BackupRun| -> Value {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let found = run.events().into_iter().find(|e| {
                    e["event"] == "segment_published"
                        && e["to_revision"].as_i64().unwrap_or(0) >= revision
                });
                if let Some(e) = found {
                    return e;
                }
                assert!(
                    run.child.try_wait().unwrap().is_none(),
                    "{}: backup run exited early: {:#?}",
                    self.context(),
                    run.events()
                );
                assert!(
                    Instant::now() < deadline,
                    "{}: no segment past {revision}",
                    self.context()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        };
        let first = self.clusters[0].put(&format!("/live/{}/a", self.step), "1");
        let segment = wait_segment_past(first, &mut run);
        let object = segment["object"].as_str().unwrap_or_default();
        let stem = object
            .split_once(".deltas/")
            .map(|(stem, _)| stem.to_string());
        let full = stem.and_then(|stem| {
            self.list("root")
                .into_iter()
                .map(|l| l.object)
                .find(|o| o.starts_with(&stem) && !o.contains(".deltas/"))
        });
        assert!(
            full.is_some(),
            "{}: no full backup listed for segment {object}",
            self.context()
        );
        self.save(0, "root", &["--keep-last", "1"]);
        self.ok(None, &["snapshot", "prune", &root, "--keep-last", "1"]);
        let second = self.clusters[0].put(&format!("/live/{}/b", self.step), "2");
        wait_segment_past(second, &mut run);
        let listed = self.list("root");
        if let Some(full) = &full {
            assert!(
                listed.iter().any(|l| l.object == *full),
                "{}: retention deleted the full backup {full} of a chain being written:\n{listed:#?}",
                self.context()
            );
        }
        if kill {
            run.kill();
        } else {
            // SIGTERM: exits 0 once the last segment is published (asserted by stop).
            run.stop();
        }
        if let Some(full) = full {
            self.ok(None, &["snapshot", "verify", &format!("{root}/{full}")]);
        }
    }
}

fn run_sequence(place: Place) {
    let seed = seed();
    eprintln!("invariants: seed {seed} (ETCDOPS_INVARIANT_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let clusters = [
        Cluster::start(1, Security::Plain),
        Cluster::start(1, Security::Plain),
    ];
    clusters[0].put_keys("/a/", 50);
    clusters[1].put_keys("/b/", 50);
    let mut world = World {
        clusters,
        ids: [String::new(), String::new()],
        place,
        foreign: BTreeMap::new(),
        verified: BTreeSet::new(),
        killed_uploads: BTreeSet::new(),
        seed,
        step: 0,
        what: "setup".into(),
    };
    for c in 0..2 {
        let saved = world.save(c, "root", &[]).json();
        world.ids[c] = saved["manifest"]["cluster_id"]
            .as_str()
            .unwrap()
            .to_string();
    }
    assert_ne!(world.ids[0], world.ids[1], "two clusters, two IDs");
    world.furnish(&mut rng);
    for n in 0..steps() {
        let before = world.list("root");
        let nested_before = world.nested();
        let step = pick(&mut rng, &before);
        world.step = n + 1;
        world.what = format!("{step:?}");
        eprintln!("invariants: step {}: {step:?}", world.step);
        world.apply(&mut rng, &step, &before);
        if matches!(
            step,
            Step::KilledSave { .. } | Step::LiveChain { kill: true }
        ) {
            let open = world.place.open_uploads();
            world.killed_uploads.extend(open);
        }
        world.check(&before, &nested_before, &step);
        // A little new data between steps, so backups differ.
        world.clusters[n % 2].put(&format!("/step/{n}"), "x");
    }
}

#[test]
fn a_store_shared_by_two_clusters_with_foreign_files_keeps_every_invariant_locally() {
    run_sequence(Place::local());
}

#[test]
fn a_store_shared_by_two_clusters_with_foreign_files_keeps_every_invariant_in_s3() {
    run_sequence(Place::s3());
}

/// Sanity of the test's own layout matcher (it must reject what the store must ignore).
#[test]
fn the_invariant_suites_layout_matcher_tells_cluster_folders_apart() {
    assert!(is_cluster_folder("etcd-cdf818194e3a8c32"));
    assert!(!is_cluster_folder("etcd-old"));
    assert!(!is_cluster_folder("etcd"));
    assert!(!is_cluster_folder("etcd-"));
}
