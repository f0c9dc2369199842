//! The `etcd.core.quorum_recover` role against real etcd members run by the test supervisor:
//! a cluster that lost two of three members under a write load comes back with every write
//! etcd acknowledged, served at its revision; a power cut that left one disk compared with the
//! db-based rebuild; a power cut that left every disk restarts them and forces nothing; runs
//! killed at random steps converge; check mode changes nothing; and `etcd_static_pod`
//! starting a kubelet's etcd once with `--force-new-cluster`. The role on real-shaped hosts
//! (a healthy cluster, one member down, `--check` in every state): ansible_quorum_recover_role.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use etcdops_tests::{
    Collection, PlaybookRun, SupervisedCluster, SupervisedMember, block_on, etcdops, role_playbook,
};
use serde_json::json;

/// Every write the cluster acknowledged: key and the revision it was given.
type Acked = Vec<(String, i64)>;

/// A client writing unique keys as fast as it can, logging every acknowledged put.
struct Load {
    stop: Arc<AtomicBool>,
    acked: Arc<std::sync::Mutex<Acked>>,
    thread: std::thread::JoinHandle<()>,
}

impl Load {
    fn start(urls: &[String]) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (urls, flag, log) = (urls.to_vec(), stop.clone(), acked.clone());
        let thread = std::thread::spawn(move || {
            block_on(async move {
                let options = etcd_client::ConnectOptions::new()
                    .with_timeout(Duration::from_millis(800))
                    .with_connect_timeout(Duration::from_millis(800));
                let mut client = etcd_client::Client::connect(urls, Some(options))
                    .await
                    .expect("connect");
                let mut n = 0u64;
                while !flag.load(Ordering::SeqCst) {
                    n += 1;
                    let key = format!("/load/{n:08}");
                    if let Ok(put) = client.put(key.clone(), n.to_string(), None).await {
                        let revision = put.header().expect("header").revision();
                        log.lock().unwrap().push((key, revision));
                    }
                }
            })
        });
        Load {
            stop,
            acked,
            thread,
        }
    }

    /// Blocks until at least `n` writes were acknowledged (30 s at most).
    fn wait_acked(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.acked.lock().unwrap().len() < n {
            assert!(
                Instant::now() < deadline,
                "the load got no {n} writes through"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish(self) -> Acked {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().expect("load thread");
        self.acked.lock().unwrap().clone()
    }
}

async fn client(urls: &[String]) -> etcd_client::Client {
    etcd_client::Client::connect(urls.to_vec(), None)
        .await
        .expect("connect")
}

/// The acknowledged writes `urls` does not serve at their revision.
fn lost(urls: &[String], acked: &Acked) -> Vec<(String, i64)> {
    block_on(async {
        let mut c = client(urls).await;
        let all = c
            .get("/load/", Some(etcd_client::GetOptions::new().with_prefix()))
            .await
            .expect("read the load's keys");
        let served: std::collections::HashMap<String, i64> = all
            .kvs()
            .iter()
            .map(|kv| (kv.key_str().unwrap().to_string(), kv.mod_revision()))
            .collect();
        acked
            .iter()
            .filter(|(k, rev)| served.get(k) != Some(rev))
            .cloned()
            .collect()
    })
}

/// The leader's index among `cluster.members`.
fn leader(cluster: &SupervisedCluster) -> usize {
    block_on(async {
        let mut c = client(&cluster.client_urls()).await;
        let status = c.status().await.expect("status");
        let leader = status.leader();
        let members = c.member_list().await.expect("member list");
        let name = members
            .members()
            .iter()
            .find(|m| m.id() == leader)
            .map(|m| m.name().to_string())
            .expect("the leader is a member");
        cluster
            .members
            .iter()
            .position(|m| m.name == name)
            .expect("a known member")
    })
}

/// Makes a member's data dir unstartable: renamed away (kept, for the no-deletion check).
fn lose_data_dir(member: &SupervisedMember) -> PathBuf {
    let gone = member.dir.join("data.lost-by-test");
    std::fs::rename(member.data_dir(), &gone).expect("rename the data dir away");
    gone
}

/// Names in a member dir starting with `prefix`.
fn entries(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read member dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

struct Setup {
    cluster: SupervisedCluster,
    collection: Collection,
    inventory: String,
    play: String,
}

impl Setup {
    fn new(cluster: SupervisedCluster) -> Setup {
        let collection = Collection::install();
        // m0 leaves etcd_name to the role's default (its inventory name): hostvars hold no
        // etcd_name for it, so the cluster-wide tasks must read what each host named itself.
        let inventory = format!(
            "[etcd]\n{}",
            cluster
                .members
                .iter()
                .map(|m| {
                    let line = m.inventory_line();
                    if m.name == "m0" {
                        line.replace(" etcd_name=m0", "")
                    } else {
                        line
                    }
                })
                .collect::<String>()
        );
        let mut vars = cluster.service_vars();
        vars["quorum_recover_env_file"] = json!("{{ etcd_member_dir }}/etcd-initial.env");
        vars["quorum_recover_verify_delay"] = json!(1);
        vars["quorum_recover_promote_delay"] = json!(1);
        vars["quorum_recover_backup_store"] = json!(cluster.dir().join("quorum-before-change"));
        let play = role_playbook(
            "etcd",
            &cluster.client_urls(),
            "etcd.core.quorum_recover",
            vars,
        );
        Setup {
            cluster,
            collection,
            inventory,
            play,
        }
    }

    fn run(&self, extra: &[&str]) -> PlaybookRun {
        self.collection
            .playbook(&self.play, &self.inventory, &json!({}), &[], extra)
    }

    /// Three healthy voters named m0..m2.
    fn assert_three_voters(&self) {
        block_on(async {
            let mut c = client(&self.cluster.client_urls()).await;
            let members = c.member_list().await.expect("member list");
            let mut names: Vec<(String, bool)> = members
                .members()
                .iter()
                .map(|m| (m.name().to_string(), m.is_learner()))
                .collect();
            names.sort();
            let want: Vec<(String, bool)> = ["m0", "m1", "m2"]
                .iter()
                .map(|n| (n.to_string(), false))
                .collect();
            assert_eq!(names, want);
        });
        for member in &self.cluster.members {
            self.cluster.wait_serving(member, Duration::from_secs(10));
        }
    }

    /// The survivor the role named in its report.
    fn survivor(run: &PlaybookRun) -> String {
        let at = run
            .stdout
            .find("ecovered the quorum from ")
            .unwrap_or_else(|| panic!("no survivor reported:\n{run}"));
        run.stdout[at + "ecovered the quorum from ".len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    }
}

fn assert_unchanged(run: &PlaybookRun) {
    run.assert_ok();
    assert!(
        run.stdout.contains("changed=0") && !run.stdout.contains("changed=1"),
        "{run}"
    );
}

/// A put after the recovery gets a higher revision than every acknowledged one.
fn assert_revisions_continue(urls: &[String], acked: &Acked) {
    let newest = acked.iter().map(|(_, r)| *r).max().unwrap_or(0);
    let revision = block_on(async {
        let mut c = client(urls).await;
        c.put("/after-recovery", "v", None)
            .await
            .expect("write after the recovery")
            .header()
            .unwrap()
            .revision()
    });
    assert!(revision > newest, "{revision} after {newest}");
}

/// Three members under load; the two followers are SIGKILLed and lose their data dirs while
/// the leader keeps running, then the load stops.
fn two_members_lost() -> (Setup, Acked, Vec<PathBuf>) {
    let cluster = SupervisedCluster::start(3);
    let load = Load::start(&cluster.client_urls());
    load.wait_acked(300);
    let keep = leader(&cluster);
    let mut lost_dirs = Vec::new();
    for (i, member) in cluster.members.iter().enumerate() {
        if i != keep {
            member.kill();
            lost_dirs.push(lose_data_dir(member));
        }
    }
    let acked = load.finish();
    (Setup::new(cluster), acked, lost_dirs)
}

/// The survivor keeps running alone; its etcd reads a config file (as the etcd.core.cluster
/// role's units do), which makes etcd ignore ETCD_FORCE_NEW_CLUSTER: the forced start goes
/// into the file and the normal start takes it out again.
#[test]
fn quorum_recover_keeps_every_acknowledged_write_after_losing_two_members() {
    let (mut setup, acked, lost_dirs) = two_members_lost();
    let running = setup
        .cluster
        .members
        .iter()
        .find(|m| m.pid().is_some())
        .cloned()
        .unwrap();
    running.stop();
    let config = start_from_a_config_file(&setup.cluster, &running);
    let config_before = std::fs::read_to_string(&config).unwrap();
    running.start();
    setup.inventory = setup.inventory.replace(
        &format!("{} ansible_connection=local", running.name),
        &format!(
            "{} ansible_connection=local etcd_config_file={}",
            running.name,
            config.display()
        ),
    );
    // Check mode first: the survivor still runs, so it is not stopped, nothing is moved,
    // and the run says it would stop every member before choosing.
    let listing: Vec<Vec<PathBuf>> = setup
        .cluster
        .members
        .iter()
        .map(|m| entries(&m.dir, ""))
        .collect();
    let pids: Vec<Option<String>> = setup.cluster.members.iter().map(|m| m.pid()).collect();
    let disk_before = stable_files(&setup.cluster);
    let check = setup.run(&["--check"]);
    check.assert_ok();
    assert!(
        check
            .stdout
            .contains("Would stop every member, then choose the survivor"),
        "{check}"
    );
    assert_eq!(
        stable_files(&setup.cluster),
        disk_before,
        "check mode wrote"
    );
    let after: Vec<Vec<PathBuf>> = setup
        .cluster
        .members
        .iter()
        .map(|m| entries(&m.dir, ""))
        .collect();
    assert_eq!(listing, after, "check mode moved or copied a dir");
    assert_eq!(
        pids,
        setup
            .cluster
            .members
            .iter()
            .map(|m| m.pid())
            .collect::<Vec<_>>()
    );
    let run = setup.run(&[]);
    run.assert_ok();
    println!(
        "a full recovery: {} tasks",
        run.stdout.matches("TASK [").count()
    );
    let survivor = Setup::survivor(&run);
    assert_eq!(survivor, running.name);
    let log = std::fs::read_to_string(running.dir.join("etcd.log")).unwrap();
    assert!(log.contains("forcing restart"), "no forced start:\n{log}");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        config_before,
        "the config file kept the forced start"
    );
    let urls = setup.cluster.client_urls();
    assert_eq!(lost(&urls, &acked), Vec::new(), "acknowledged writes lost");
    assert_revisions_continue(&urls, &acked);
    setup.assert_three_voters();
    // The survivor's dir was copied aside; the lost dirs and every data dir remain.
    let member = setup
        .cluster
        .members
        .iter()
        .find(|m| m.name == survivor)
        .unwrap();
    assert_eq!(
        entries(&member.dir, "data.bak-").len(),
        1,
        "{survivor}'s copy"
    );
    for dir in &lost_dirs {
        assert!(dir.exists(), "{} was deleted", dir.display());
    }
    // A second run finds a healthy cluster and does nothing.
    assert_unchanged(&setup.run(&[]));
}

/// Every file under `dir` with its size and modification time (what a run that changed nothing
/// leaves as it was).
fn files(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut found = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in read.flatten() {
        let meta = entry.metadata().expect("metadata");
        if meta.is_dir() {
            found.extend(files(&entry.path()));
        } else {
            found.push((entry.path(), meta.len(), meta.modified().expect("mtime")));
        }
    }
    found.sort();
    found
}

/// Every file under the cluster's dir (data dirs, env files, the members' settings) with its
/// size and modification time, but the logs, and the WAL and db of a running member, which
/// are etcd's to write: what a run that changed nothing leaves as it was.
fn stable_files(cluster: &SupervisedCluster) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let running: Vec<&Path> = cluster
        .members
        .iter()
        .filter(|m| m.pid().is_some())
        .map(|m| m.dir.as_path())
        .collect();
    files(cluster.dir())
        .into_iter()
        .filter(|(path, _, _)| {
            let p = path.display().to_string();
            let etcds = p.contains("/member/wal/") || p.ends_with("/member/snap/db");
            let log = p.ends_with(".log") || p.ends_with(".pid");
            let etcd_writes = etcds && running.iter().any(|dir| path.starts_with(dir));
            !log && !etcd_writes
        })
        .collect()
}

#[test]
fn quorum_recover_after_a_power_cut_with_every_disk_intact_restarts_and_forces_nothing() {
    // A power cut: every member killed, every data dir intact. Raft restores the quorum once
    // they run again; forcing one would throw the others' copies away for nothing.
    let cluster = SupervisedCluster::start(3);
    let load = Load::start(&cluster.client_urls());
    load.wait_acked(100);
    for member in &cluster.members {
        member.kill();
    }
    let acked = load.finish();
    let setup = Setup::new(cluster);
    let listing = |m: &SupervisedMember| entries(&m.dir, "");
    let before: Vec<Vec<PathBuf>> = setup.cluster.members.iter().map(listing).collect();
    let disk_before = stable_files(&setup.cluster);
    let check = setup.run(&["--check"]);
    check.assert_ok();
    assert_eq!(
        stable_files(&setup.cluster),
        disk_before,
        "check mode wrote"
    );
    assert!(
        check
            .stdout
            .contains("Would start m0, m1, m2 normally, nothing forced"),
        "{check}"
    );
    let after: Vec<Vec<PathBuf>> = setup.cluster.members.iter().map(listing).collect();
    assert_eq!(before, after, "check mode moved or copied a dir");
    for member in &setup.cluster.members {
        assert_eq!(member.pid(), None, "check mode started {}", member.name);
    }
    let run = setup.run(&[]);
    run.assert_ok();
    assert!(
        run.stdout
            .contains("Starting m0, m1, m2 normally, nothing forced"),
        "{run}"
    );
    let urls = setup.cluster.client_urls();
    assert_eq!(lost(&urls, &acked), Vec::new(), "acknowledged writes lost");
    setup.assert_three_voters();
    for member in &setup.cluster.members {
        assert_eq!(
            entries(&member.dir, "data.bak-"),
            Vec::<PathBuf>::new(),
            "{}'s data dir was copied or moved although nothing was forced",
            member.name
        );
        let log = std::fs::read_to_string(member.dir.join("etcd.log")).unwrap_or_default();
        assert!(
            !log.contains("forcing restart"),
            "{} was started with force-new-cluster",
            member.name
        );
    }
    assert_unchanged(&setup.run(&[]));
}

/// Runs the role and kills ansible-playbook when its `n`th task starts; the task it was
/// killed in, or `None` when the run ended first.
fn run_killed_after(setup: &Setup, n: usize) -> Option<String> {
    use std::io::{BufRead, BufReader};
    let mut run = setup
        .collection
        .spawn_playbook(&setup.play, &setup.inventory);
    let mut tasks = 0;
    let mut killed = None;
    for line in BufReader::new(&mut run.stdout)
        .lines()
        .map_while(Result::ok)
    {
        if line.starts_with("TASK [") {
            tasks += 1;
            if tasks >= n {
                let _ = run.child.kill();
                killed = Some(line.trim_end_matches(['*', ' ']).to_string());
                break;
            }
        }
    }
    let _ = run.child.wait();
    killed
}

#[test]
fn quorum_recover_killed_at_random_steps_converges_without_deleting_a_dir() {
    let (setup, acked, lost_dirs) = two_members_lost();
    // ETCDOPS_TEST_SEED replays a run's kills (its seed is printed below).
    let seed = std::env::var("ETCDOPS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos() as u64
        });
    println!("kill seed {seed}");
    let mut state = seed | 1;
    let mut next = move || {
        // xorshift: a pseudo-random step, reproducible from the seed printed above.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // A full recovery prints about 120 tasks; each round is killed somewhere in it. A later
    // round starts where the earlier one left the cluster, with fewer tasks to go.
    for round in 0..3 {
        let n = 5 + (next() % (115 >> round)) as usize;
        let killed = run_killed_after(&setup, n);
        println!("round {round}: task {n}: killed in {killed:?}");
    }
    let run = setup.run(&[]);
    run.assert_ok();
    let urls = setup.cluster.client_urls();
    assert_eq!(lost(&urls, &acked), Vec::new(), "acknowledged writes lost");
    setup.assert_three_voters();
    for dir in &lost_dirs {
        assert!(dir.exists(), "{} was deleted", dir.display());
    }
    // The survivor's original dir exists as itself or as a copy; moved-aside dirs stay.
    for member in &setup.cluster.members {
        assert!(member.data_dir().exists());
    }
    assert_unchanged(&setup.run(&[]));
}

#[test]
fn quorum_recover_compared_with_the_db_rebuild_after_a_power_cut() {
    if etcdops_tests::in_slow_tier(
        "ansible_quorum::quorum_recover_after_a_power_cut_with_every_disk_intact_restarts_and_forces_nothing runs the recovery path",
    ) {
        return;
    }
    let cluster = SupervisedCluster::start(3);
    let load = Load::start(&cluster.client_urls());
    load.wait_acked(400);
    // The leader's disk survives: it holds every write it acknowledged. (A follower's may
    // lack the newest ones, acknowledged with the other follower's copy alone: a CI run lost
    // 13 that way, writes no tool can bring back once both of those disks are gone.)
    let keep = leader(&cluster);
    for member in &cluster.members {
        member.kill();
    }
    let acked = load.finish();
    for (i, member) in cluster.members.iter().enumerate() {
        if i != keep {
            lose_data_dir(member);
        }
    }
    let mut setup = Setup::new(cluster);
    let run = setup.run(&[]);
    run.assert_ok();
    let survivor = Setup::survivor(&run);
    let role_lost = lost(&setup.cluster.client_urls(), &acked);
    // The old way on the very same data: the survivor's db (its copy the role kept) restored
    // as a one-member cluster.
    let member = setup
        .cluster
        .members
        .iter()
        .find(|m| m.name == survivor)
        .unwrap();
    let copy = entries(&member.dir, "data.bak-").remove(0);
    let rebuilt = setup.cluster.plan("db-rebuild");
    setup.cluster.adopt(rebuilt.clone());
    let flags: Vec<String> = [
        "snapshot",
        "restore",
        "--from-data-dir",
        copy.to_str().unwrap(),
        "--data-dir",
        rebuilt.data_dir().to_str().unwrap(),
        "--name",
        "db-rebuild",
        "--initial-cluster",
        &format!("db-rebuild={}", rebuilt.peer_url),
        "--initial-cluster-token",
        "db-rebuild",
        "--initial-advertise-peer-urls",
        &rebuilt.peer_url,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let restored = etcdops(&flags, &[]);
    assert_eq!(restored.code, 0, "{restored}");
    std::fs::write(
        rebuilt.dir.join("etcd-initial.env"),
        format!(
            "ETCD_NAME=db-rebuild\nETCD_INITIAL_CLUSTER=db-rebuild={}\nETCD_INITIAL_CLUSTER_STATE=new\n",
            rebuilt.peer_url
        ),
    )
    .unwrap();
    rebuilt.start();
    setup
        .cluster
        .wait_serving(&rebuilt, Duration::from_secs(20));
    let db_lost = lost(std::slice::from_ref(&rebuilt.client_url), &acked);
    rebuilt.stop();
    let newest = acked.iter().map(|(_, r)| *r).max().unwrap_or(0);
    println!(
        "power cut, {} acknowledged writes (newest revision {newest}): the role lost {} {role_lost:?}, the db-based rebuild lost {}",
        acked.len(),
        role_lost.len(),
        db_lost.len()
    );
    // etcd's force-new-cluster keeps a WAL only up to its saved commit, which can lag the
    // newest acknowledged writes; the role commits the survivor's whole log first, so none is
    // lost.
    assert_eq!(role_lost, Vec::new(), "the role lost acknowledged writes");
}

/// `etcd_static_pod` on a kubeadm node whose etcd the kubelet stand-in runs: a forced start
/// puts `--force-new-cluster` in the manifest (etcd says it forces a restart), a normal start
/// takes it out again, byte for byte.
#[test]
fn static_pod_starts_etcd_once_with_force_new_cluster() {
    let node = crate::platform::KubeadmNode::start();
    let collection = Collection::install();
    let manifest = node.root().join("etc/kubernetes/manifests/etcd.yaml");
    let log = node.root().join("kubelet-etcd.log");
    let original = std::fs::read_to_string(&manifest).unwrap();
    let forced_starts = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("forcing restart")
            .count()
    };
    let cycle = |force: bool| {
        let task = |state: &str| {
            json!({"etcd.core.etcd_static_pod": {
                "state": state, "root": node.root(), "timeout": 60, "force_new_cluster": force,
            }})
        };
        let play = json!([{"hosts": "target", "gather_facts": false,
            "tasks": [task("stopped"), task("started")]}])
        .to_string();
        let inventory = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";
        let run = collection.playbook(&play, inventory, &json!({}), &[], &[]);
        run.assert_ok();
        run
    };
    let run = cycle(true);
    assert!(run.stdout.contains("--force-new-cluster added"), "{run}");
    let forced = std::fs::read_to_string(&manifest).unwrap();
    assert!(
        forced.contains("    - etcd\n    - --force-new-cluster\n"),
        "{forced}"
    );
    assert_eq!(forced_starts(), 1, "etcd did not start forced");
    let run = cycle(false);
    assert!(run.stdout.contains("--force-new-cluster removed"), "{run}");
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), original);
    assert_eq!(forced_starts(), 1, "a normal start forced again");
}

/// On OpenShift the platform's operator owns etcd: the role refuses before it stops anything.
#[test]
fn quorum_recover_refuses_openshift_before_stopping_anything() {
    let tls = etcdops_tests::Cluster::start(1, etcdops_tests::Security::Tls);
    let host = tls.dir().join("host");
    std::fs::create_dir_all(&host).unwrap();
    etcdops_tests::write_openshift_tree(
        &host,
        "cp0",
        &tls.members[0].client_url,
        tls.certs.as_ref().unwrap(),
    );
    crate::platform::write_static_pod_resources(&host);
    let cluster = SupervisedCluster::start(1);
    let collection = Collection::install();
    let inventory = format!("[etcd]\n{}", cluster.members[0].inventory_line());
    let mut vars = cluster.service_vars();
    vars["etcd_platform_root"] = json!(host);
    let play = role_playbook(
        "etcd",
        &cluster.client_urls(),
        "etcd.core.quorum_recover",
        vars,
    );
    let pid = cluster.members[0].pid();
    let run = collection.playbook(&play, &inventory, &json!({}), &[], &[]);
    assert_ne!(run.code, 0, "{run}");
    assert!(
        run.stdout
            .contains("OpenShift's cluster-etcd-operator manages etcd")
            && run.stdout.contains("Nothing was stopped or changed"),
        "{run}"
    );
    assert_eq!(cluster.members[0].pid(), pid, "the member was restarted");
    assert!(pid.is_some());
}

/// Makes `member` start etcd with `--config-file` (as the units of the etcd.core.cluster role
/// do): etcd then ignores its environment, so a forced start must go into the file. Returns
/// the file.
fn start_from_a_config_file(cluster: &SupervisedCluster, member: &SupervisedMember) -> PathBuf {
    let initial = cluster
        .members
        .iter()
        .map(|m| format!("{}={}", m.name, m.peer_url))
        .collect::<Vec<_>>()
        .join(",");
    let config = member.dir.join("etcd.yaml");
    std::fs::write(
        &config,
        format!(
            "# written by the test, as etcd.core.etcd_config would\nname: {}\ndata-dir: {}\nlisten-client-urls: {}\nadvertise-client-urls: {}\nlisten-peer-urls: {}\ninitial-advertise-peer-urls: {}\ninitial-cluster: {initial}\ninitial-cluster-state: new\nheartbeat-interval: 50\nelection-timeout: 500\n",
            member.name,
            member.data_dir().display(),
            member.client_url,
            member.client_url,
            member.peer_url,
            member.peer_url,
        ),
    )
    .unwrap();
    let etcd = std::fs::read_to_string(member.dir.join("etcd.bin")).unwrap();
    let wrapper = member.dir.join("etcd-with-config-file");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec {} --config-file {}\n",
            etcd.trim(),
            config.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(member.dir.join("etcd.bin"), wrapper.display().to_string()).unwrap();
    config
}
