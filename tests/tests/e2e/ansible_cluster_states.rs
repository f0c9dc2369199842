//! The `etcd.core.cluster` role through the states of one cluster on real-shaped hosts (each
//! member on its own loopback address, client and peer TLS from the role's own PKI, an `etcd.env`
//! of the site that the role must keep): check mode before any certificate exists, a bootstrap a
//! failed start interrupts and a rerun that finishes it, reruns and check runs that change
//! nothing (a listing with sizes, modes, mtimes and hashes of every host file before and after),
//! check mode with one member down and with all down, a run that starts them again, a grow, and
//! a shrink to two members with its warning and the verified backup it names. Then the role on
//! hosts whose etcd config files were written by hand.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use etcdops_tests::{
    Collection, PlaybookRun, StandaloneHost, StandaloneHosts, args, block_on, etcdops,
};
use serde_json::{Value, json};

fn play(vars: &Value) -> String {
    json!([{
        "hosts": "all",
        "gather_facts": false,
        "roles": [{"role": "etcd.core.cluster", "vars": vars}],
    }])
    .to_string()
}

fn play_run(collection: &Collection, inventory: &str, vars: &Value, extra: &[&str]) -> PlaybookRun {
    collection.playbook(&play(vars), inventory, &json!({}), &[], extra)
}

fn run_ok(collection: &Collection, inventory: &str, vars: &Value, extra: &[&str]) -> PlaybookRun {
    let run = play_run(collection, inventory, vars, extra);
    assert_eq!(run.code, 0, "{run}");
    run
}

/// `changed=N` of every host in the recap.
fn changed(run: &PlaybookRun) -> BTreeMap<String, u32> {
    run.stdout
        .lines()
        .filter(|l| l.contains(" : ok="))
        .map(|l| {
            let host = l.split_whitespace().next().unwrap().to_string();
            let n = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix("changed="))
                .unwrap()
                .parse()
                .unwrap();
            (host, n)
        })
        .collect()
}

fn assert_nothing_changed(run: &PlaybookRun) {
    let counts = changed(run);
    assert!(!counts.is_empty(), "no recap:\n{run}");
    assert!(counts.values().all(|n| *n == 0), "{counts:?}\n{run}");
}

/// A client of the cluster with the role's CA and h0's certificate (client TLS).
async fn client(hosts: &StandaloneHosts, urls: &[String]) -> etcd_client::Client {
    let pki = hosts.dir().join("controller-pki");
    let read = |name: &str| std::fs::read(pki.join(name)).unwrap();
    let tls = etcd_client::TlsOptions::new()
        .ca_certificate(etcd_client::Certificate::from_pem(read("ca.crt")))
        .identity(etcd_client::Identity::from_pem(
            read("h0.crt"),
            read("h0.key"),
        ));
    let options = etcd_client::ConnectOptions::new()
        .with_tls(tls)
        .with_timeout(Duration::from_secs(5));
    etcd_client::Client::connect(urls.to_vec(), Some(options))
        .await
        .expect("connect with TLS")
}

/// (name, is_learner, peer URLs) of every member, sorted by name.
fn members(hosts: &StandaloneHosts, urls: &[String]) -> Vec<(String, bool, Vec<String>)> {
    block_on(async {
        let mut c = client(hosts, urls).await;
        let mut out: Vec<_> = c
            .member_list()
            .await
            .expect("member list")
            .members()
            .iter()
            .map(|m| (m.name().to_string(), m.is_learner(), m.peer_urls().to_vec()))
            .collect();
        out.sort();
        out
    })
}

fn names(members: &[(String, bool, Vec<String>)]) -> Vec<String> {
    members.iter().map(|m| m.0.clone()).collect()
}

fn put(hosts: &StandaloneHosts, urls: &[String], key: &str, value: &str) -> i64 {
    block_on(async {
        let resp = client(hosts, urls)
            .await
            .put(key, value, None)
            .await
            .expect("put");
        resp.header().expect("header").revision()
    })
}

fn get(hosts: &StandaloneHosts, url: &str, key: &str) -> Option<String> {
    block_on(async {
        let resp = client(hosts, &[url.to_string()])
            .await
            .get(key, None)
            .await
            .expect("get");
        resp.kvs()
            .first()
            .map(|kv| kv.value_str().unwrap_or("").to_string())
    })
}

fn wait_until(limit: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn urls(hosts: &[&StandaloneHost]) -> Vec<String> {
    hosts.iter().map(|h| h.https_url()).collect()
}

fn env_files(hosts: &StandaloneHosts) -> Vec<Vec<u8>> {
    hosts
        .hosts
        .iter()
        .map(|h| std::fs::read(h.env_file()).unwrap())
        .collect()
}

/// Each member listens on its own address only: its peer port nowhere else (not on
/// 127.0.0.1, not on another host's address); its client port on its address and, by the
/// role's design, on 127.0.0.1 (for tools on the host), never on another host's address.
fn assert_listens_on_its_own_address(hosts: &StandaloneHosts, host: &StandaloneHost) {
    assert!(
        StandaloneHost::listens(&host.ip, host.peer_port),
        "{}: no peer listener on {}",
        host.name,
        host.ip
    );
    assert!(StandaloneHost::listens(&host.ip, host.client_port));
    assert!(
        !StandaloneHost::listens("127.0.0.1", host.peer_port),
        "{}'s peers listen on 127.0.0.1",
        host.name
    );
    for other in hosts.hosts.iter().filter(|o| o.name != host.name) {
        for port in [host.peer_port, host.client_port] {
            assert!(
                !StandaloneHost::listens(&other.ip, port),
                "{} listens on {}'s address {}:{port}",
                host.name,
                other.name,
                other.ip
            );
        }
    }
}

#[test]
fn cluster_role_through_check_interrupted_bootstrap_rerun_members_down_grow_and_shrink() {
    let mut hosts = StandaloneHosts::plan(3);
    let collection = Collection::install();
    let mut vars = hosts.role_vars();
    vars["cluster_pki"] = json!("generate");
    vars["cluster_peer_tls"] = json!(true);
    vars["cluster_client_tls"] = json!(true);
    let store = hosts.dir().join("backups");
    vars["cluster_backup_dest"] = json!(store);
    let mut site_env = env_files(&hosts);
    let three: Vec<&StandaloneHost> = hosts.hosts.iter().collect();
    let inventory = hosts.inventory(&three, "");

    // Check mode before anything exists: every certificate and start is reported, nothing made.
    let before = hosts.listing();
    let run = run_ok(&collection, &inventory, &vars, &["--check"]);
    assert_eq!(hosts.listing(), before, "check mode wrote:\n{run}");
    assert!(!hosts.dir().join("controller-pki").exists());
    assert!(changed(&run).values().all(|n| *n > 0), "{run}");
    for host in &hosts.hosts {
        for said in [
            format!("check mode: a real run starts etcd on {} here", host.name),
            format!("issues {}'s", host.name),
        ] {
            assert!(run.stdout.contains(&said), "{said}:\n{run}");
        }
    }

    // A bootstrap that h1's and h2's failed starts interrupt: h0 alone runs, without a quorum.
    let broken = Path::new("/bin/false");
    hosts.set_binary(&hosts.hosts[1], broken);
    hosts.set_binary(&hosts.hosts[2], broken);
    let mut impatient = vars.clone();
    impatient["etcd_stop_timeout"] = json!(3);
    impatient["etcd_wait_retries"] = json!(2);
    let failed = play_run(&collection, &inventory, &impatient, &[]);
    assert_ne!(failed.code, 0, "{failed}");
    assert!(hosts.hosts[0].data_dir().join("member").exists());
    // The rerun finishes it: the same initial members start with the same first-start file.
    hosts.set_binary(&hosts.hosts[1], &hosts.version.etcd());
    hosts.set_binary(&hosts.hosts[2], &hosts.version.etcd());
    run_ok(&collection, &inventory, &vars, &[]);
    let three_urls = urls(&three);
    let listed = members(&hosts, &three_urls);
    assert_eq!(names(&listed), ["h0", "h1", "h2"]);
    for ((name, learner, peers), host) in listed.iter().zip(&hosts.hosts) {
        assert!(!learner, "{name}");
        assert_eq!(
            peers,
            &[format!("https://{}:{}", host.ip, host.peer_port)],
            "{name}"
        );
    }
    for host in &hosts.hosts {
        let text = std::fs::read_to_string(host.config_file()).unwrap();
        assert!(!text.contains("initial-cluster"), "{text}");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(host.config_file()).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        assert_listens_on_its_own_address(&hosts, host);
    }
    let revision = put(&hosts, &three_urls, "/states/k", "v1");

    // A rerun, then a check run: nothing changes, on disk or in the cluster.
    let before = hosts.listing();
    assert_nothing_changed(&run_ok(&collection, &inventory, &vars, &[]));
    assert_eq!(hosts.listing(), before, "the rerun touched files");
    assert_nothing_changed(&run_ok(&collection, &inventory, &vars, &["--check"]));
    assert_eq!(hosts.listing(), before, "the check run touched files");

    // One member down: check mode says a real run starts it, and starts nothing.
    hosts.hosts[1].stop();
    let before = hosts.listing();
    let run = run_ok(&collection, &inventory, &vars, &["--check"]);
    let expected: BTreeMap<String, u32> = [("h0", 0), ("h1", 1), ("h2", 0)]
        .map(|(h, n)| (h.to_string(), n))
        .into();
    assert_eq!(changed(&run), expected, "{run}");
    assert!(run.stdout.contains("a real run starts etcd on h1 here"));
    assert_eq!(hosts.listing(), before);
    assert!(!StandaloneHost::listens(
        &hosts.hosts[1].ip,
        hosts.hosts[1].client_port
    ));
    // All down: the same, and it says it cannot see further.
    hosts.hosts[0].stop();
    hosts.hosts[2].stop();
    let before = hosts.listing();
    let run = run_ok(&collection, &inventory, &vars, &["--check"]);
    assert!(changed(&run).values().all(|n| *n == 1), "{run}");
    assert!(
        run.stdout.contains("no member of the cluster answers"),
        "{run}"
    );
    assert_eq!(hosts.listing(), before);
    // A real run starts them again.
    run_ok(&collection, &inventory, &vars, &[]);
    for host in &hosts.hosts {
        assert_listens_on_its_own_address(&hosts, host);
    }
    assert_eq!(
        get(&hosts, &hosts.hosts[1].https_url(), "/states/k").as_deref(),
        Some("v1")
    );

    // h2's host out of reach and its etcd down: a configuration change that restarts members
    // stops before the first one (a second member down would take the quorum), on every host.
    hosts.hosts[2].stop();
    let unreachable: String = hosts
        .hosts
        .iter()
        .map(|h| {
            let line = h.inventory_line("");
            if h.name == "h2" {
                line.replace(
                    "ansible_connection=local",
                    "ansible_connection=ssh ansible_port=1",
                )
            } else {
                line
            }
        })
        .collect();
    let mut change = vars.clone();
    change["cluster_snapshot_count"] = json!(5000);
    change["etcd_wait_retries"] = json!(2);
    let pids = |hosts: &StandaloneHosts| -> Vec<String> {
        hosts.hosts[..2]
            .iter()
            .map(|h| std::fs::read_to_string(h.dir.join("etcd.pid")).unwrap())
            .collect()
    };
    let (before, running) = (hosts.listing(), pids(&hosts));
    let refused = play_run(&collection, &unreachable, &change, &[]);
    assert_ne!(refused.code, 0, "{refused}");
    assert!(
        refused.stdout.contains("unhealthy members: h2"),
        "{refused}"
    );
    assert_eq!(
        pids(&hosts),
        running,
        "a member restarted while h2 was down"
    );
    assert_eq!(hosts.listing(), before, "{refused}");

    // Grow: check mode first (h3's certificate not made yet), then for real (h2 back first).
    // (Members are listed through h0 from here: h2 is down until that run starts it.)
    let h0_url = [hosts.hosts[0].https_url()];
    let h3 = hosts.add("h3");
    site_env.push(std::fs::read(h3.env_file()).unwrap());
    let four: Vec<&StandaloneHost> = hosts.hosts.iter().collect();
    let inventory = hosts.inventory(&four, "");
    let before = hosts.listing();
    let run = run_ok(&collection, &inventory, &vars, &["--check"]);
    assert_eq!(hosts.listing(), before, "{run}");
    assert!(changed(&run)["h3"] > 0, "{run}");
    assert_eq!(names(&members(&hosts, &h0_url)), ["h0", "h1", "h2"]);
    let run = run_ok(&collection, &inventory, &vars, &[]);
    assert!(
        run.stdout.contains("\"is_learner\": true"),
        "added as a learner:\n{run}"
    );
    let listed = members(&hosts, &h0_url);
    assert_eq!(names(&listed), ["h0", "h1", "h2", "h3"]);
    assert!(listed.iter().all(|m| !m.1), "h3 promoted: {listed:?}");
    assert_eq!(
        get(&hosts, &h3.https_url(), "/states/k").as_deref(),
        Some("v1")
    );
    assert_listens_on_its_own_address(&hosts, &h3);

    // Shrink to two: h1 and h3 leave. Without a store for the backup, nothing happens.
    let leaving = |h: &StandaloneHost| {
        h.inventory_line(if h.name == "h1" || h.name == "h3" {
            "cluster_member_state=absent"
        } else {
            ""
        })
    };
    let inventory: String = hosts.hosts.iter().map(leaving).collect();
    let mut no_store = vars.clone();
    no_store
        .as_object_mut()
        .unwrap()
        .remove("cluster_backup_dest");
    let before = hosts.listing();
    let refused = play_run(&collection, &inventory, &no_store, &[]);
    assert_ne!(refused.code, 0, "{refused}");
    assert!(
        refused.stdout.contains(
            "removing h1, h3 takes a verified backup of the cluster first: set cluster_backup_dest"
        ),
        "{refused}"
    );
    assert_eq!(hosts.listing(), before);
    assert_eq!(members(&hosts, &h0_url).len(), 4);
    let warning = "2 members remain (h0, h2): the cluster tolerates no failure";
    let run = run_ok(&collection, &inventory, &vars, &["--check"]);
    assert!(
        run.stdout.contains(warning) || run.stderr.contains(warning),
        "{run}"
    );
    assert!(
        run.stdout
            .contains("check mode: a real run backs up the cluster into")
    );
    assert_eq!(hosts.listing(), before);
    assert_eq!(members(&hosts, &h0_url).len(), 4);
    let run = run_ok(&collection, &inventory, &vars, &[]);
    assert!(
        run.stdout.contains(warning) || run.stderr.contains(warning),
        "{run}"
    );
    let named = run
        .stdout
        .lines()
        .find_map(|l| {
            l.split("backup of the cluster before removing h1, h3: ")
                .nth(1)
        })
        .unwrap_or_else(|| panic!("no backup named:\n{run}"));
    let object = named.split(" (revision ").next().unwrap();
    assert!(object.starts_with(&store.display().to_string()), "{object}");
    let backup_revision: i64 = named
        .split(" (revision ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(backup_revision >= revision, "{named}");
    // The backup verifies, as etcdops reads it.
    let verified = etcdops(&args(&["snapshot", "verify", object]), &[]);
    assert_eq!(verified.code, 0, "{verified}");
    let two: Vec<&StandaloneHost> = [&hosts.hosts[0], &hosts.hosts[2]].into();
    let two_urls = urls(&two);
    assert_eq!(names(&members(&hosts, &two_urls)), ["h0", "h2"]);
    for gone in [&hosts.hosts[1], &hosts.hosts[3]] {
        assert!(
            !gone.data_dir().exists(),
            "{}'s data dir in place",
            gone.name
        );
        let aside = std::fs::read_dir(&gone.dir)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with("data.removed-"));
        assert!(aside, "{}'s data dir not moved aside", gone.name);
        wait_until(
            Duration::from_secs(10),
            "the removed member stopped",
            || !StandaloneHost::listens(&gone.ip, gone.client_port),
        );
    }
    put(&hosts, &two_urls, "/states/after-shrink", "v");
    let before = hosts.listing();
    assert_nothing_changed(&run_ok(&collection, &inventory, &vars, &[]));
    assert_eq!(hosts.listing(), before);
    // The site's own settings next to etcd's config file were never touched.
    assert_eq!(env_files(&hosts), site_env);
}

#[test]
fn cluster_role_never_replaces_config_files_it_did_not_write_that_hold_settings_of_their_own() {
    if etcdops_tests::skip_on_etcd_3_4(
        "the role refuses before it changes anything; etcd only serves as the running target",
    ) {
        return;
    }
    let hosts = StandaloneHosts::plan(3);
    hosts.start_by_hand("by-hand");
    let pids: Vec<String> = hosts
        .hosts
        .iter()
        .map(|h| std::fs::read_to_string(h.dir.join("etcd.pid")).unwrap())
        .collect();
    let collection = Collection::install();
    let mut vars = hosts.role_vars();
    vars["cluster_heartbeat_interval"] = json!(50);
    vars["cluster_election_timeout"] = json!(500);
    let all: Vec<&StandaloneHost> = hosts.hosts.iter().collect();
    let inventory = hosts.inventory(&all, "");
    let before = hosts.listing();
    for extra in [&["--check"][..], &[][..]] {
        let refused = play_run(&collection, &inventory, &vars, extra);
        assert_ne!(refused.code, 0, "{refused}");
        for host in &hosts.hosts {
            let said = format!(
                "{} on {} was not written by etcd.core and holds settings this run would drop or change: listen-client-urls",
                host.config_file().display(),
                host.name
            );
            assert!(refused.stdout.contains(&said), "{said}:\n{refused}");
        }
        assert_eq!(hosts.listing(), before, "{refused}");
    }
    // The hand-made cluster runs on, its members never restarted.
    for (host, pid) in hosts.hosts.iter().zip(&pids) {
        assert_eq!(
            &std::fs::read_to_string(host.dir.join("etcd.pid")).unwrap(),
            pid
        );
        assert!(StandaloneHost::listens(&host.ip, host.client_port));
    }
}
