//! The roles of `etcd.core` against real etcd members run by the test supervisor (a stand-in
//! for systemd, which is not PID 1 here): a backup then a whole-cluster restore, and the
//! replacement of a failed member.

use age::secrecy::ExposeSecret;
use etcdops_tests::{Collection, SupervisedCluster, block_on, role_playbook};
use serde_json::{Value, json};

fn playbook(hosts: &str, endpoints: &[String], role: &str, vars: Value) -> String {
    role_playbook(hosts, endpoints, role, vars)
}

async fn client(urls: &[String]) -> etcd_client::Client {
    etcd_client::Client::connect(urls.to_vec(), None)
        .await
        .expect("connect")
}

#[test]
fn backup_role_then_whole_cluster_restore_role() {
    let cluster = SupervisedCluster::start(3);
    let urls = cluster.client_urls();
    let old_cluster_id = block_on(async {
        let mut c = client(&urls).await;
        for i in 0..10 {
            c.put(format!("/dr/before-{i}"), "v", None).await.unwrap();
        }
        c.member_list()
            .await
            .unwrap()
            .header()
            .unwrap()
            .cluster_id()
    });
    let collection = Collection::install();
    let store = cluster.dir().join("backups");
    let inventory: String = cluster.members.iter().map(|m| m.inventory_line()).collect();
    // Encrypted to an age recipient; the restore gets the identity as a (vault) variable.
    let identity = age::x25519::Identity::generate();
    let secret = identity.to_string().expose_secret().to_string();
    let recipient = identity.to_public().to_string();
    let backup = playbook(
        "all",
        &urls,
        "etcd.core.backup",
        json!({"backup_dest": store, "backup_keep_last": 3, "backup_encrypt_to": [recipient]}),
    );
    let run = collection.playbook(&backup, &inventory, &json!({}), &[], &[]);
    run.assert_ok();
    let stored: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .flatten()
        .flat_map(|cluster_dir| std::fs::read_dir(cluster_dir.path()).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".manifest.json"))
        .collect();
    assert!(
        stored.len() == 1 && stored[0].ends_with(".db.zst.age"),
        "{stored:?}"
    );
    assert!(
        run.stdout.contains("changed=1"),
        "one backup for the cluster:\n{run}"
    );
    // Written after the backup: gone after the restore.
    block_on(async {
        client(&urls)
            .await
            .put("/dr/after", "v", None)
            .await
            .unwrap()
    });

    let mut vars = cluster.service_vars();
    vars["restore_store"] = json!(store);
    vars["restore_cluster_token"] = json!("restored-by-role");
    vars["restore_identity_content"] = json!(secret);
    let restore = playbook("all", &urls, "etcd.core.restore", vars);
    let run = collection.playbook(&restore, &inventory, &json!({}), &[], &["-vvv"]);
    run.assert_ok();
    assert!(
        !run.stdout.contains(&secret) && !run.stderr.contains(&secret),
        "{run}"
    );

    block_on(async {
        let mut c = client(&urls).await;
        let before = c
            .get(
                "/dr/before-",
                Some(
                    etcd_client::GetOptions::new()
                        .with_prefix()
                        .with_count_only(),
                ),
            )
            .await
            .unwrap();
        assert_eq!(before.count(), 10, "keys from before the backup");
        let after = c.get("/dr/after", None).await.unwrap();
        assert_eq!(
            after.count(),
            0,
            "a key written after the backup survived the restore"
        );
        let members = c.member_list().await.unwrap();
        assert_ne!(
            members.header().unwrap().cluster_id(),
            old_cluster_id,
            "the restored cluster has a new ID"
        );
        let mut names: Vec<String> = members
            .members()
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["m0", "m1", "m2"]);
        // New writes work.
        c.put("/dr/new", "v", None).await.unwrap();
    });
    // Nothing was deleted: every old data dir was moved aside.
    for member in &cluster.members {
        let parent = member.dir.clone();
        let aside = std::fs::read_dir(&parent)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with("data.bak-"));
        assert!(aside, "{} has no moved-aside data dir", member.name);
    }
}

#[test]
fn member_replace_role_swaps_a_failed_member() {
    let mut cluster = SupervisedCluster::start(3);
    let urls = cluster.client_urls();
    block_on(async {
        let mut c = client(&urls).await;
        for i in 0..10 {
            c.put(format!("/replace/k{i}"), "v", None).await.unwrap();
        }
    });
    // m2 fails.
    cluster.members[2].stop();
    let survivors: Vec<String> = urls[..2].to_vec();
    let replacement = cluster.plan("m3");
    cluster.adopt(replacement.clone());
    let collection = Collection::install();
    let mut vars = cluster.service_vars();
    vars["member_replace_failed"] = json!("m2");
    vars["member_replace_env_file"] = json!(replacement.dir.join("etcd-initial.env"));
    vars["member_replace_promote_delay"] = json!(1);
    let play = playbook("m3", &survivors, "etcd.core.member_replace", vars);
    let run = collection.playbook(&play, &replacement.inventory_line(), &json!({}), &[], &[]);
    run.assert_ok();
    block_on(async {
        let mut c = client(&survivors).await;
        let members = c.member_list().await.unwrap();
        let mut names: Vec<(String, bool)> = members
            .members()
            .iter()
            .map(|m| (m.name().to_string(), m.is_learner()))
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ("m0".to_string(), false),
                ("m1".to_string(), false),
                ("m3".to_string(), false)
            ]
        );
        // The replacement serves the data.
        let mut on_new = client(std::slice::from_ref(&replacement.client_url)).await;
        let got = on_new
            .get(
                "/replace/k",
                Some(
                    etcd_client::GetOptions::new()
                        .with_prefix()
                        .with_count_only(),
                ),
            )
            .await
            .unwrap();
        assert_eq!(got.count(), 10);
    });
}
