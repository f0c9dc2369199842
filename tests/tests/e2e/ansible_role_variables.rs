//! Role variables against each role's one declaration of them (its `meta/argument_specs.yml`):
//! every role fails at its first task on a misspelled variable with its prefix, naming the
//! closest declared one, through real ansible-playbook (no etcd: the check comes before anything
//! else); every variable that an example of the READMEs, the docs or the Automation Platform
//! playbooks sets for a role (a role parameter, the role's `vars:`, a play's `vars:`, a
//! group_vars block) is one that role declares, so an example a newcomer copies passes that
//! check; and every shared `etcd_*` variable of the collection README's table is declared by a
//! role.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use etcdops_tests::Collection;
use serde_json::json;
use serde_yaml_ng::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn collection() -> PathBuf {
    repo().join("ansible_collections/etcd/core")
}

/// Each role's declared variables (every entry point) and its prefixes, derived as the
/// role_variables action plugin derives them: `<role>_` and `etcd_<role>_`, each when some
/// declared variable carries it.
fn roles() -> BTreeMap<String, (BTreeSet<String>, Vec<String>)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(collection().join("roles")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(dir.join("meta/argument_specs.yml")).unwrap();
        let spec: Value = serde_yaml_ng::from_str(&text).unwrap();
        let mut declared = BTreeSet::new();
        for (_, entry_point) in spec["argument_specs"].as_mapping().unwrap() {
            if let Some(options) = entry_point["options"].as_mapping() {
                declared.extend(
                    options
                        .keys()
                        .filter_map(|k| k.as_str().map(str::to_string)),
                );
            }
        }
        let prefixes = [format!("{name}_"), format!("etcd_{name}_")]
            .into_iter()
            .filter(|p| declared.iter().any(|d| d.starts_with(p.as_str())))
            .collect();
        out.insert(name, (declared, prefixes));
    }
    out
}

/// The fenced yaml blocks of a Markdown file, or the whole file for a YAML one.
fn yaml_blocks(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "yml") {
        return vec![text];
    }
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.trim_start() == "```yaml" || line.trim_start() == "```yml" => {
                current = Some(String::new());
            }
            Some(block) if line.trim_start() == "```" => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// The variables an example sets: (the role it sets them for, if known, name).
fn settings(value: &Value, out: &mut Vec<(Option<String>, String)>) {
    match value {
        Value::Sequence(items) => items.iter().for_each(|v| settings(v, out)),
        Value::Mapping(map) => {
            let role = map
                .get("role")
                .or_else(|| {
                    [
                        "ansible.builtin.include_role",
                        "ansible.builtin.import_role",
                    ]
                    .iter()
                    .find_map(|k| map.get(*k))
                    .and_then(|inc| inc.get("name"))
                })
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("etcd.core."))
                .map(str::to_string);
            let keys = |m: &serde_yaml_ng::Mapping| -> Vec<String> {
                m.keys()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            };
            if let Some(vars) = map.get("vars").and_then(Value::as_mapping) {
                for key in keys(vars) {
                    out.push((role.clone(), key));
                }
            }
            if role.is_some() && map.contains_key("role") {
                // Role parameters beside `role:`.
                for key in keys(map) {
                    if !["role", "vars", "tags", "when", "become", "name"].contains(&key.as_str()) {
                        out.push((role.clone(), key));
                    }
                }
            }
            let is_play_or_task = map.contains_key("hosts")
                || map.contains_key("name")
                || map
                    .keys()
                    .any(|k| k.as_str().is_some_and(|k| k.contains('.')));
            if !is_play_or_task {
                // A group_vars block: its keys are variables.
                for key in keys(map) {
                    out.push((None, key));
                }
            }
            for (key, inner) in map {
                // A module's arguments (`etcd.core.etcd_member: {backup_to: …}`) and
                // `module_defaults` groups are options, not variables.
                if key.as_str().is_some_and(|k| k.contains('.')) {
                    continue;
                }
                settings(inner, out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_role_variable_the_examples_set_is_declared_by_its_role() {
    if etcdops_tests::skip_on_etcd_3_4("reads the collection's files; starts nothing") {
        return;
    }
    let roles = roles();
    let mut files: Vec<PathBuf> = vec![repo().join("README.md"), collection().join("README.md")];
    for dir in [collection().join("roles")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            files.push(entry.unwrap().path().join("README.md"));
        }
    }
    for dir in [
        repo().join("docs"),
        collection().join("extensions/aap/playbooks"),
    ] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md" || e == "yml") {
                files.push(path);
            }
        }
    }
    let mut unknown = Vec::new();
    let mut checked = 0;
    for file in &files {
        for (n, block) in yaml_blocks(file).iter().enumerate() {
            let value: Value = serde_yaml_ng::from_str(block).unwrap_or_else(|e| {
                panic!("{} block {n} is not YAML ({e}):\n{block}", file.display())
            });
            let mut found = Vec::new();
            settings(&value, &mut found);
            for (role, name) in found {
                // The role the name's prefix belongs to (the role it is set for wins).
                let owner = roles.iter().find(|(r, (_, prefixes))| {
                    role.as_deref().is_none_or(|set_for| set_for == r.as_str())
                        && prefixes.iter().any(|p| name.starts_with(p.as_str()))
                });
                let Some((owner, (declared, _))) = owner else {
                    continue;
                };
                checked += 1;
                if !declared.contains(&name) {
                    unknown.push(format!(
                        "{} block {n}: {name} is not a variable of etcd.core.{owner}",
                        file.strip_prefix(repo()).unwrap_or(file).display()
                    ));
                }
            }
        }
    }
    unknown.sort();
    unknown.dedup();
    assert!(unknown.is_empty(), "{unknown:#?}");
    assert!(
        checked > 20,
        "only {checked} role variables found in the examples"
    );

    // The README's table of shared variables names only variables some role declares.
    let readme = std::fs::read_to_string(collection().join("README.md")).unwrap();
    let table = readme
        .split("### Shared variables")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .find(|p| p.starts_with("| Variable"))
        .unwrap();
    let all: BTreeSet<&String> = roles.values().flat_map(|(d, _)| d).collect();
    let mut shared = 0;
    for row in table.lines().skip(2) {
        let first = row.split('|').nth(1).unwrap();
        for name in first.split('`').skip(1).step_by(2) {
            shared += 1;
            assert!(
                all.contains(&name.to_string()),
                "{name} (shared variables table) is declared by no role"
            );
        }
    }
    assert!(shared >= 15, "{shared} shared variables in the table");
}

#[test]
fn every_role_fails_at_its_first_task_on_a_misspelled_variable_wherever_it_is_set() {
    if etcdops_tests::skip_on_etcd_3_4(
        "the check is the roles' first task, before any etcd is reached; starts no etcd",
    ) {
        return;
    }
    let collection = Collection::install();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("messages.json");
    // (role, entry point, misspelled variable, the declared one it means)
    let cases = [
        ("backup", "main", "backup_keep_lst", "backup_keep_last"),
        (
            "restore",
            "main",
            "restore_s3_endpoit",
            "restore_s3_endpoint",
        ),
        (
            "member_replace",
            "main",
            "member_replace_faild",
            "member_replace_failed",
        ),
        (
            "quorum_recover",
            "main",
            "quorum_recover_lost_member",
            "quorum_recover_lost_members",
        ),
        ("cluster", "main", "cluster_tokn", "cluster_token"),
        (
            "service",
            "start",
            "etcd_service_manger",
            "etcd_service_manager",
        ),
        ("service", "stop", "etcd_service_nme", "etcd_service_name"),
    ];
    let mut tasks = Vec::new();
    for (role, entry, typo, _) in cases {
        tasks.push(serde_json::json!({
            "block": [{
                "ansible.builtin.include_role": {"name": format!("etcd.core.{role}"), "tasks_from": entry},
                "vars": {typo: "x"},
            }],
            "rescue": [{"ansible.builtin.set_fact": {
                "messages": format!("{{{{ messages + ['{role}/{entry}: ' ~ ansible_failed_result.msg] }}}}"),
            }}],
        }));
    }
    tasks.push(serde_json::json!({"ansible.builtin.copy": {"content": "{{ messages | to_json }}", "dest": out}}));
    // Another role's variables and a listed foreign one pass the check of the backup role:
    // it fails only later, on its missing destination.
    tasks.push(serde_json::json!({
        "block": [{
            "ansible.builtin.include_role": {"name": "etcd.core.backup"},
            "vars": {"restore_store": "s3://etcd-backups/prod", "cluster_token": "prod-etcd", "backup_dir": "/srv"},
        }],
        "rescue": [{"ansible.builtin.copy": {
            "content": "{{ ansible_failed_result.msg }}",
            "dest": dir.path().join("backup.txt"),
        }}],
    }));
    let play = serde_json::json!([{
        "hosts": "all",
        "gather_facts": false,
        "vars": {"messages": [], "etcd_core_unchecked_variables": ["backup_dir"]},
        "tasks": tasks,
    }])
    .to_string();
    let run = collection.playbook(
        &play,
        "m0 ansible_connection=local\n",
        &serde_json::json!({}),
        &[],
        &[],
    );
    assert_eq!(run.code, 0, "{run}");
    let messages: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(messages.len(), cases.len(), "{messages:#?}\n{run}");
    for ((role, entry, typo, meant), message) in cases.iter().zip(&messages) {
        let expected = format!(
            "{role}/{entry}: etcd.core.{role}: unknown variable {typo}; did you mean {meant}?"
        );
        assert!(message.starts_with(&expected), "{expected}\n{message}");
    }
    let backup = std::fs::read_to_string(dir.path().join("backup.txt")).unwrap();
    assert!(backup.starts_with("set backup_dest"), "{backup}");
}

#[test]
fn role_variables_are_documented_and_validated() {
    if etcdops_tests::skip_on_etcd_3_4(
        "ansible-doc and the role's argument spec check; fails before any task, starts no etcd",
    ) {
        return;
    }
    let collection = Collection::install();
    let doc = std::process::Command::new(etcdops_tests::ansible_venv().join("bin/ansible-doc"))
        .args(["-t", "role", "etcd.core.restore"])
        .env("ANSIBLE_COLLECTIONS_PATH", collection.path())
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .expect("run ansible-doc");
    let text = String::from_utf8_lossy(&doc.stdout);
    assert!(doc.status.success(), "{text}");
    for option in ["restore_store", "restore_force", "restore_s3_endpoint"] {
        assert!(text.contains(option), "ansible-doc lacks {option}:\n{text}");
    }
    // A misspelled role parameter and a mistyped one fail before any task runs.
    for (params, expect) in [
        (json!({"restore_stor": "/backups"}), "restore_stor"),
        (
            json!({"restore_store": "/b", "restore_verify": "maybe"}),
            "restore_verify",
        ),
    ] {
        let mut role = json!({"role": "etcd.core.restore"});
        role.as_object_mut()
            .unwrap()
            .extend(params.as_object().unwrap().clone());
        let play = json!([{"hosts": "all", "gather_facts": false, "roles": [role]}]).to_string();
        let run = collection.playbook(&play, "m0 ansible_connection=local\n", &json!({}), &[], &[]);
        assert_ne!(run.code, 0, "{run}");
        assert!(
            run.stdout.contains("Validating arguments against arg spec")
                && run.stdout.contains(expect),
            "{run}"
        );
    }
}
