//! The `etcd.core.member_replace` role on real-shaped hosts (`NodeCluster`: each member on
//! its own loopback address, listening only there, client and peer TLS, its admin's env file
//! read through a unit with drop-ins), as a newcomer runs it from the README: the documented
//! `member_replace_env_file: /etc/default/etcd` keeps every line the role did not write; a
//! rerun changes nothing; `--check` exits 0 and changes nothing with one member down, every
//! member healthy and every member down; a data dir of a member the cluster does not have is
//! refused saying how to check it; a run killed half-way converges when run again; a member
//! whose data is lost is replaced under its own name, as the role's refusal says.

use std::time::Duration;

use etcdops_tests::{Collection, NodeCluster, PlaybookRun, SupervisedMember, block_on};
use serde_json::{Value, json};

use crate::ansible_role_runs::{State, assert_no_change_reported, kill_after_task};

struct Replace {
    cluster: NodeCluster,
    collection: Collection,
}

impl Replace {
    /// Three members with data; `failed` stops (its host is gone); `new` is planned.
    fn start(failed: usize, new: &str) -> (Replace, SupervisedMember) {
        let mut cluster = NodeCluster::start(3);
        block_on(async {
            let mut c = cluster.client(&cluster.client_urls()).await;
            for i in 0..10 {
                c.put(format!("/replace/k{i}"), "v", None).await.unwrap();
            }
        });
        cluster.members[failed].stop();
        let replacement = cluster.plan(new);
        cluster.adopt(replacement.clone());
        let replace = Replace {
            cluster,
            collection: Collection::install(),
        };
        (replace, replacement)
    }

    /// The client URLs of the members other than `except` (the failed one) and `new`.
    fn survivors(&self, except: &[&str]) -> Vec<String> {
        self.cluster
            .members
            .iter()
            .filter(|m| !except.contains(&m.name.as_str()))
            .map(|m| m.client_url.clone())
            .collect()
    }

    fn vars(&self, failed: &str, extra: Value) -> Value {
        let mut vars = self.cluster.service_vars();
        vars["member_replace_failed"] = json!(failed);
        vars["member_replace_promote_delay"] = json!(1);
        vars["member_replace_backup_store"] = json!(self.cluster.dir().join("before-change"));
        for (k, v) in extra.as_object().unwrap() {
            vars[k] = v.clone();
        }
        vars
    }

    fn play(&self, new: &SupervisedMember, endpoints: &[String], vars: Value) -> String {
        self.cluster
            .role_playbook(&new.name, endpoints, "etcd.core.member_replace", vars)
    }

    fn run(&self, play: &str, new: &SupervisedMember, args: &[&str]) -> PlaybookRun {
        self.run_on(play, &NodeCluster::inventory(&[new]), args)
    }

    fn run_on(&self, play: &str, inventory: &str, args: &[&str]) -> PlaybookRun {
        self.collection
            .playbook(play, inventory, &json!({}), &[], args)
    }

    /// `--check --diff` passes, changes nothing, and says `expect`.
    fn assert_check(&self, play: &str, new: &SupervisedMember, urls: &[String], expect: &str) {
        let before = State::capture(&self.cluster, urls);
        let run = self.run(play, new, &["--check", "--diff"]);
        run.assert_ok();
        assert!(run.stdout.contains(expect), "no '{expect}':\n{run}");
        before.assert_same(&State::capture(&self.cluster, urls), &run);
        // Check mode waits for nothing only a real run could bring about: no retried task.
        assert!(!run.stdout.contains("FAILED - RETRYING"), "{run}");
    }

    fn voters(&self, urls: &[String]) -> Vec<(String, bool)> {
        let (_, members) = self.cluster.membership(urls);
        members.into_iter().map(|(n, _, l)| (n, l)).collect()
    }

    /// `member` listens on its own address only (client and peer), serves TLS, has the data.
    fn assert_serves_on_its_address(&self, member: &SupervisedMember) {
        self.cluster.assert_listens_only_on_its_addresses(member);
        let count = block_on(async {
            let mut c = self
                .cluster
                .client(std::slice::from_ref(&member.client_url))
                .await;
            let options = etcd_client::GetOptions::new()
                .with_prefix()
                .with_count_only();
            c.get("/replace/k", Some(options)).await.unwrap().count()
        });
        assert_eq!(count, 10, "{} serves the data", member.name);
    }
}

/// Every line of `original` that sets none of the role's keys is still in `now`.
fn assert_admin_lines_kept(original: &str, now: &str) {
    const ROLE_KEYS: [&str; 6] = [
        "ETCD_NAME=",
        "ETCD_DATA_DIR=",
        "ETCD_INITIAL_CLUSTER=",
        "ETCD_INITIAL_CLUSTER_STATE=",
        "ETCD_INITIAL_ADVERTISE_PEER_URLS=",
        "ETCD_ADVERTISE_CLIENT_URLS=",
    ];
    for line in original.lines() {
        if ROLE_KEYS.iter().any(|k| line.starts_with(k)) {
            continue;
        }
        assert!(
            now.lines().any(|l| l == line),
            "the role removed '{line}' from the admin's env file:\n{now}"
        );
    }
}

#[test]
fn member_replace_role_keeps_the_admins_env_file_and_converges_on_node_address_hosts() {
    let (replace, m3) = Replace::start(2, "m3");
    let env_file = NodeCluster::env_file(&m3);
    let original = std::fs::read_to_string(&env_file).unwrap();
    let endpoints = replace.survivors(&["m2", "m3"]);
    // As the README documents it: the unit's EnvironmentFile (/etc/default/etcd).
    let play = replace.play(
        &m3,
        &endpoints,
        replace.vars(
            "m2",
            json!({"member_replace_env_file": "{{ etcd_member_dir }}/etcd.env"}),
        ),
    );

    // Check mode with the failed member down: the plan, nothing done, no wait for m2.
    replace.assert_check(&play, &m3, &endpoints, "remove m2");

    let first = replace.run(&play, &m3, &[]);
    first.assert_ok();
    assert!(first.stdout.contains("before-change"), "{first}");
    let now = std::fs::read_to_string(&env_file).unwrap();
    assert_admin_lines_kept(&original, &now);
    assert!(
        now.contains("ETCD_INITIAL_CLUSTER_STATE=existing\n"),
        "{now}"
    );
    let urls = replace.survivors(&["m2"]);
    assert_eq!(
        replace.voters(&urls),
        [
            ("m0".to_string(), false),
            ("m1".to_string(), false),
            ("m3".to_string(), false)
        ]
    );
    replace.assert_serves_on_its_address(&m3);
    // The backup before the change: in the store, with its manifest.
    let stored: Vec<String> = walk(&replace.cluster.dir().join("before-change"));
    assert!(
        stored.iter().any(|f| f.ends_with(".db.zst"))
            && stored.iter().any(|f| f.ends_with(".manifest.json")),
        "{stored:?}"
    );

    // A second run: nothing to do, nothing touched.
    let before = State::capture(&replace.cluster, &urls);
    let again = replace.run(&play, &m3, &[]);
    assert_no_change_reported(&again);
    assert!(again.stdout.contains("already"), "{again}");
    before.assert_same(&State::capture(&replace.cluster, &urls), &again);

    // Check mode, every member healthy.
    replace.assert_check(&play, &m3, &urls, "already");

    // A member down: check mode and a real rerun both leave everything as it is.
    replace.cluster.members[0].stop();
    replace.assert_check(&play, &m3, &urls, "already");
    let before = State::capture(&replace.cluster, &urls);
    let down = replace.run(&play, &m3, &[]);
    assert_no_change_reported(&down);
    before.assert_same(&State::capture(&replace.cluster, &urls), &down);
    replace.cluster.members[0].start();
    replace
        .cluster
        .wait_serving(&replace.cluster.members[0], Duration::from_secs(30));

    // Every member down: check mode says a real run would refuse, and changes nothing.
    for member in &replace.cluster.members {
        member.stop();
    }
    replace.assert_check(&play, &m3, &urls, "would refuse");
    let before = State::capture(&replace.cluster, &urls);
    let refused = replace.run(&play, &m3, &[]);
    assert_ne!(refused.code, 0, "{refused}");
    assert!(refused.stdout.contains("quorum_recover"), "{refused}");
    before.assert_same(&State::capture(&replace.cluster, &urls), &refused);
}

#[test]
fn member_replace_role_refuses_an_unknown_data_dir_then_converges_through_its_own_dropin() {
    if etcdops_tests::skip_on_etcd_3_4(
        "where the role writes its settings and how it refuses and resumes; the replacement \
         itself runs on both releases in the test with the admin's env file",
    ) {
        return;
    }
    let (replace, m3) = Replace::start(1, "m3");
    let env_file = NodeCluster::env_file(&m3);
    let original = std::fs::read_to_string(&env_file).unwrap();
    // The new host still holds a data dir of a member the cluster does not have.
    let stale = replace.cluster.members[1].data_dir();
    copy_dir(&stale, &m3.data_dir());
    let endpoints = replace.survivors(&["m1", "m3"]);
    let play = replace.play(&m3, &endpoints, replace.vars("m1", json!({})));
    let urls = replace.survivors(&["m1"]);
    let before = State::capture(&replace.cluster, &endpoints);
    let refused = replace.run(&play, &m3, &[]);
    assert_ne!(refused.code, 0, "{refused}");
    assert!(
        refused.stdout.contains("etcd_data_dir_info") && !refused.stdout.contains("(mv "),
        "the refusal says how to check the data dir first:\n{refused}"
    );
    before.assert_same(&State::capture(&replace.cluster, &endpoints), &refused);

    // Checked (it is m1's old data) and moved aside as the refusal says; then a run killed
    // once the learner was added, and a rerun that finishes the replacement.
    std::fs::rename(m3.data_dir(), m3.dir.join("data.checked-aside")).unwrap();
    kill_after_task(
        &replace.collection,
        &play,
        &NodeCluster::inventory(&[&m3]),
        "Start etcd",
    );
    let finished = replace.run(&play, &m3, &[]);
    finished.assert_ok();
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        original,
        "the admin's env file was changed"
    );
    let dropins: Vec<String> = walk(&NodeCluster::dropin_dir(&m3));
    assert!(
        dropins.iter().any(|f| f.ends_with(".conf")),
        "no drop-in: {dropins:?}"
    );
    assert_eq!(
        replace.voters(&urls),
        [
            ("m0".to_string(), false),
            ("m2".to_string(), false),
            ("m3".to_string(), false)
        ]
    );
    replace.assert_serves_on_its_address(&m3);
    let before = State::capture(&replace.cluster, &urls);
    let again = replace.run(&play, &m3, &[]);
    assert_no_change_reported(&again);
    before.assert_same(&State::capture(&replace.cluster, &urls), &again);

    // m3's data disk dies (its /etc stays): the rerun refuses, saying to replace it under
    // its own name; done as it says (check first), m3 comes back as a new member of that name.
    let (_, members) = replace.cluster.membership(&urls);
    let old_id = members.iter().find(|m| m.0 == "m3").unwrap().1;
    m3.stop();
    std::fs::rename(m3.data_dir(), m3.dir.join("data.lost-disk")).unwrap();
    let survivors = replace.survivors(&["m1", "m3"]);
    let before = State::capture(&replace.cluster, &survivors);
    let refused = replace.run(&play, &m3, &[]);
    assert_ne!(refused.code, 0, "{refused}");
    assert!(
        refused
            .stdout
            .contains("running the role with member_replace_failed: m3"),
        "{refused}"
    );
    before.assert_same(&State::capture(&replace.cluster, &survivors), &refused);
    let same_name = replace.play(&m3, &survivors, replace.vars("m3", json!({})));
    replace.assert_check(&same_name, &m3, &survivors, "remove m3");
    let replaced = replace.run(&same_name, &m3, &[]);
    replaced.assert_ok();
    assert_eq!(
        replace.voters(&urls),
        [
            ("m0".to_string(), false),
            ("m2".to_string(), false),
            ("m3".to_string(), false)
        ],
        "{replaced}"
    );
    let (_, members) = replace.cluster.membership(&urls);
    assert_ne!(members.iter().find(|m| m.0 == "m3").unwrap().1, old_id);
    replace.assert_serves_on_its_address(&m3);
    let before = State::capture(&replace.cluster, &urls);
    let again = replace.run(&same_name, &m3, &[]);
    assert_no_change_reported(&again);
    before.assert_same(&State::capture(&replace.cluster, &urls), &again);
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// The files under `dir`, relative paths.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(
                walk(&path)
                    .into_iter()
                    .map(|f| format!("{}/{f}", entry.file_name().to_string_lossy())),
            );
        } else {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

/// A new host whose etcd reads a config file (`--config-file`, as the units of the
/// etcd.core.cluster role start it): etcd ignores its environment then, so the role sets its
/// keys in that file, key by key, and every setting of the admin's stays.
#[test]
fn member_replace_role_sets_its_keys_in_etcds_config_file() {
    if etcdops_tests::skip_on_etcd_3_4(
        "where the role writes its settings and how it refuses and resumes; the replacement \
         itself runs on both releases in the test with the admin's env file",
    ) {
        return;
    }
    let (replace, m3) = Replace::start(2, "m3");
    let env = std::fs::read_to_string(NodeCluster::env_file(&m3)).unwrap();
    let setting = |key: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key}"))
            .to_string()
    };
    let config = m3.dir.join("etcd.yaml");
    let original = format!(
        "# etcd settings of m3 (the admin's /etc/etcd/etcd.yaml)\n\
         name: m3\n\
         data-dir: {data}\n\
         listen-client-urls: {client}\n\
         advertise-client-urls: {client}\n\
         listen-peer-urls: {peer}\n\
         initial-advertise-peer-urls: {peer}\n\
         initial-cluster: m3={peer}\n\
         initial-cluster-state: new\n\
         client-transport-security:\n  cert-file: {cert}\n  key-file: {key}\n  trusted-ca-file: {ca}\n  client-cert-auth: true\n\
         peer-transport-security:\n  cert-file: {cert}\n  key-file: {key}\n  trusted-ca-file: {ca}\n  client-cert-auth: true\n\
         heartbeat-interval: 50\n\
         election-timeout: 500\n",
        data = m3.data_dir().display(),
        client = m3.client_url,
        peer = m3.peer_url,
        cert = setting("ETCD_CERT_FILE"),
        key = setting("ETCD_KEY_FILE"),
        ca = setting("ETCD_TRUSTED_CA_FILE"),
    );
    std::fs::write(&config, &original).unwrap();
    // Its unit starts etcd with the config file and no environment file.
    std::fs::remove_file(NodeCluster::env_file(&m3)).unwrap();
    let etcd = std::fs::read_to_string(m3.dir.join("etcd.bin")).unwrap();
    let wrapper = m3.dir.join("etcd-with-config-file");
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
    std::fs::write(m3.dir.join("etcd.bin"), wrapper.display().to_string()).unwrap();
    std::fs::write(
        m3.dir.join("etcd.unit"),
        format!(
            "[Service]\nExecStart={} --config-file {}\n",
            etcd.trim(),
            config.display()
        ),
    )
    .unwrap();

    let inventory = NodeCluster::inventory(&[&m3]).replace(
        " etcd_member_dir=",
        &format!(" etcd_config_file={} etcd_member_dir=", config.display()),
    );
    let endpoints = replace.survivors(&["m2", "m3"]);
    let play = replace.play(&m3, &endpoints, replace.vars("m2", json!({})));
    let run = replace.run_on(&play, &inventory, &[]);
    run.assert_ok();
    let now = std::fs::read_to_string(&config).unwrap();
    for line in original.lines() {
        let key = line.split(':').next().unwrap();
        let role_key = [
            "name",
            "data-dir",
            "initial-cluster",
            "initial-cluster-state",
            "initial-advertise-peer-urls",
            "advertise-client-urls",
        ]
        .contains(&key);
        assert!(
            role_key || now.lines().any(|l| l == line),
            "'{line}' lost:\n{now}"
        );
    }
    assert!(now.contains("initial-cluster-state: 'existing'"), "{now}");
    assert!(
        walk(&NodeCluster::dropin_dir(&m3)).is_empty(),
        "a drop-in etcd does not read was written"
    );
    let urls = replace.survivors(&["m2"]);
    assert_eq!(
        replace.voters(&urls),
        [
            ("m0".to_string(), false),
            ("m1".to_string(), false),
            ("m3".to_string(), false)
        ]
    );
    replace.assert_serves_on_its_address(&m3);
    let before = State::capture(&replace.cluster, &urls);
    let again = replace.run_on(&play, &inventory, &[]);
    assert_no_change_reported(&again);
    before.assert_same(&State::capture(&replace.cluster, &urls), &again);
}
