//! The `etcd.core.backup` role against a cluster on real-shaped hosts (each member on its own
//! loopback address, its config written by hand), in the forms its README shows: retention
//! with the count rule turned off (`backup_keep_last: null` or `0`), check mode (also into a
//! directory a real run creates), reruns that
//! take no backup within `backup_min_interval`, and misspelled variables in play vars, group
//! vars and extra vars failing the role at its start while another role's variables pass.

use std::path::Path;

use etcdops_tests::{Collection, PlaybookRun, StandaloneHost, StandaloneHosts};
use serde_json::{Value, json};

fn play(endpoints: &[String], vars: &Value) -> String {
    json!([{
        "hosts": "etcd",
        "gather_facts": false,
        "module_defaults": {"group/etcd.core.etcd": {"endpoints": endpoints}},
        "roles": [{"role": "etcd.core.backup", "vars": vars}],
    }])
    .to_string()
}

/// The complete backups in a local store (one manifest each), sorted.
fn backups(store: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(store)
        .map(|dirs| {
            dirs.flatten()
                .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".manifest.json"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn changed_on(run: &PlaybookRun, host: &str) -> u32 {
    run.stdout
        .lines()
        .find(|l| l.starts_with(&format!("{host} ")) && l.contains(" : ok="))
        .and_then(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("changed="))
        })
        .unwrap_or_else(|| panic!("no recap for {host}:\n{run}"))
        .parse()
        .unwrap()
}

#[test]
fn backup_role_turns_the_count_rule_off_skips_recent_backups_and_names_misspelled_variables() {
    if etcdops_tests::skip_on_etcd_3_4(
        "the role's retention options, rerun logic and variable checks; etcd_snapshot itself runs on both releases in ansible_roles.rs",
    ) {
        return;
    }
    let hosts = StandaloneHosts::plan(3);
    hosts.start_by_hand("backup-role");
    let endpoints: Vec<String> = hosts.hosts.iter().map(|h| h.client_url()).collect();
    let collection = Collection::install();
    let store = hosts.dir().join("backups");
    let all: Vec<&StandaloneHost> = hosts.hosts.iter().collect();
    let inventory = |group_vars: &str| {
        format!(
            "[etcd]\n{}[etcd:vars]\n{group_vars}\n",
            hosts.inventory(&all, "")
        )
    };
    let run = |vars: &Value, group_vars: &str, extra_vars: &Value, args: &[&str]| {
        collection.playbook(
            &play(&endpoints, vars),
            &inventory(group_vars),
            extra_vars,
            &[],
            args,
        )
    };

    // The README's play: only one backup a day kept, no count rule. Twice: still one backup.
    for keep_last in [Value::Null, json!(0)] {
        let vars =
            json!({"backup_dest": store, "backup_keep_last": keep_last, "backup_keep_daily": 7});
        let taken = run(&vars, "", &json!({}), &[]);
        assert_eq!(taken.code, 0, "backup_keep_last {keep_last}: {taken}");
        assert_eq!(changed_on(&taken, "h0"), 1, "{taken}");
        assert_eq!(
            backups(&store).len(),
            1,
            "backup_keep_last {keep_last}: the count rule still kept more than the daily one"
        );
    }
    let kept = backups(&store);

    // Check mode: reports the backup a real run would take, takes and deletes nothing.
    let vars = json!({"backup_dest": store, "backup_keep_last": null, "backup_keep_daily": 7});
    let checked = run(&vars, "", &json!({}), &["--check"]);
    assert_eq!(checked.code, 0, "{checked}");
    assert_eq!(changed_on(&checked, "h0"), 1, "{checked}");
    assert_eq!(backups(&store), kept);

    // backup_min_interval in group vars (beside a variable of the restore role): a rerun takes
    // none and reports nothing changed, in check mode too.
    let group_vars = "backup_min_interval=1h\nrestore_store=s3://etcd-backups/prod";
    // A store that does not exist yet holds no recent backup: the first run takes one; its
    // check first says so, as the real run creates the directory, and creates nothing.
    let fresh = hosts.dir().join("fresh-store");
    let check = run(
        &json!({"backup_dest": fresh}),
        group_vars,
        &json!({}),
        &["--check"],
    );
    assert_eq!(check.code, 0, "{check}");
    assert_eq!(changed_on(&check, "h0"), 1, "{check}");
    assert!(!fresh.exists(), "check mode created the store:\n{check}");
    let first = run(&json!({"backup_dest": fresh}), group_vars, &json!({}), &[]);
    assert_eq!(first.code, 0, "{first}");
    assert_eq!(changed_on(&first, "h0"), 1, "{first}");
    assert_eq!(backups(&fresh).len(), 1);
    for args in [&[][..], &["--check"][..]] {
        let rerun = run(&vars, group_vars, &json!({}), args);
        assert_eq!(rerun.code, 0, "{rerun}");
        assert!(
            rerun
                .stdout
                .lines()
                .all(|l| !l.contains(" : ok=") || l.contains("changed=0")),
            "{rerun}"
        );
        assert!(rerun.stdout.contains("no new backup taken"), "{rerun}");
        assert_eq!(backups(&store), kept);
    }
    // An interval shorter than the newest backup's age: a new one.
    let due = run(&vars, "backup_min_interval=1s", &json!({}), &[]);
    assert_eq!(due.code, 0, "{due}");
    assert_eq!(changed_on(&due, "h0"), 1, "{due}");
    assert_ne!(backups(&store), kept);

    // A misspelled variable fails the role at its start, wherever it is set.
    let suggestion = "unknown variable backup_keep_lst; did you mean backup_keep_last?";
    let mut typo = vars.clone();
    typo["backup_keep_lst"] = json!(3);
    for (vars, group_vars, extra) in [
        (&typo, "", json!({})),
        (&vars, "backup_keep_lst=3", json!({})),
        (&vars, "", json!({"backup_keep_lst": 3})),
    ] {
        let before = backups(&store);
        let failed = run(vars, group_vars, &extra, &[]);
        assert_ne!(failed.code, 0, "{failed}");
        assert!(failed.stdout.contains(suggestion), "{failed}");
        assert_eq!(
            backups(&store),
            before,
            "a backup was taken before the check"
        );
    }
    // A variable of another tool that shares the prefix, once listed, passes.
    let foreign = run(
        &vars,
        "backup_dir=/srv/other-tool\netcd_core_unchecked_variables=['backup_dir']\nbackup_min_interval=1h",
        &json!({}),
        &[],
    );
    assert_eq!(foreign.code, 0, "{foreign}");
}
