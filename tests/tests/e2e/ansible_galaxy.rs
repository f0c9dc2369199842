//! The etcd.core collection as Galaxy, Automation Hub and their users get it: the built
//! tarball passes `ansible-test sanity` (the importers run it on the tarball, not on our source
//! tree), `ansible-doc` reads every plugin without a warning, and the shim reaches a target
//! once per version: a later task copies only its arguments.

use etcdops_tests::{Cluster, Collection, PlaybookRun, Security, ansible_venv};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

const LOCAL: &str = "target ansible_connection=local ansible_python_interpreter=/nonexistent\n";

fn installed_collection_dir(collection: &Collection) -> PathBuf {
    collection.path().join("ansible_collections/etcd/core")
}

fn ansible_doc(collection: &Collection, args: &[&str]) -> std::process::Output {
    Command::new(ansible_venv().join("bin/ansible-doc"))
        .args(args)
        .env("ANSIBLE_COLLECTIONS_PATH", collection.path())
        .env("ANSIBLE_COLLECTIONS_SCAN_SYS_PATH", "false")
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .expect("run ansible-doc")
}

#[test]
fn the_installed_tarball_passes_ansible_test_sanity_and_ansible_doc_warns_about_nothing() {
    if etcdops_tests::skip_on_etcd_3_4(
        "builds and installs the tarball and runs ansible-test and ansible-doc; starts no etcd",
    ) {
        return;
    }
    let collection = Collection::install_tarball();
    let dir = installed_collection_dir(&collection);
    assert!(
        dir.join(format!("files/etcd_shim_{}", std::env::consts::ARCH))
            .is_file(),
        "the tarball carries no shim"
    );
    let sanity = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/sanity"))
        .arg("--dir")
        .arg(&dir)
        .output()
        .expect("run scripts/sanity");
    assert!(
        sanity.status.success(),
        "ansible-test sanity failed on the installed tarball:\n{}\n{}",
        String::from_utf8_lossy(&sanity.stdout),
        String::from_utf8_lossy(&sanity.stderr)
    );

    let list = ansible_doc(&collection, &["-l", "etcd.core"]);
    let listed = String::from_utf8_lossy(&list.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&list.stderr).into_owned();
    assert!(list.status.success(), "{listed}\n{stderr}");
    assert!(
        !stderr.contains("WARNING"),
        "ansible-doc -l warned:\n{stderr}"
    );
    let modules: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.starts_with("etcd.core."))
        .collect();
    // Every documented module is listed (the shim's sidecar docs, and the Python doc stubs of
    // the controller-side actions the roles use), and nothing else (no shim binary).
    let stubs: Vec<PathBuf> = std::fs::read_dir(dir.join("plugins/modules"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "py"))
        .collect();
    assert_eq!(modules.len(), stubs.len(), "{listed}");
    assert!(modules.iter().all(|m| !m.contains("shim")), "{listed}");
    for module in &modules {
        let doc = ansible_doc(&collection, &[module]);
        let stderr = String::from_utf8_lossy(&doc.stderr);
        assert!(doc.status.success(), "ansible-doc {module}: {stderr}");
        assert!(
            !stderr.contains("WARNING"),
            "ansible-doc {module} warned:\n{stderr}"
        );
        // Its options are shown, unless it documents none (`options: {}`).
        let name = module.trim_start_matches("etcd.core.");
        let stub = stubs
            .iter()
            .find(|p| p.file_stem().is_some_and(|s| s == name))
            .unwrap();
        let no_options = std::fs::read_to_string(stub)
            .unwrap()
            .contains("\noptions: {}");
        assert!(
            no_options || String::from_utf8_lossy(&doc.stdout).contains("OPTIONS"),
            "{module}"
        );
    }
    // Every role documents its variables (meta/argument_specs.yml), as AAP surveys read them.
    let roles: Vec<String> = std::fs::read_dir(dir.join("roles"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(roles.len() >= 5, "{roles:?}");
    for role in &roles {
        let name = format!("etcd.core.{role}");
        let doc = ansible_doc(&collection, &["-t", "role", &name]);
        let stdout = String::from_utf8_lossy(&doc.stdout);
        let stderr = String::from_utf8_lossy(&doc.stderr);
        assert!(doc.status.success(), "ansible-doc -t role {name}: {stderr}");
        assert!(
            !stderr.contains("WARNING"),
            "ansible-doc -t role {name} warned:\n{stderr}"
        );
        // Each option of the entry points' argument specs (six-space keys under `options:`)
        // is in the output.
        let spec =
            std::fs::read_to_string(dir.join("roles").join(role).join("meta/argument_specs.yml"))
                .unwrap_or_else(|e| panic!("{role} has no meta/argument_specs.yml: {e}"));
        let options: Vec<&str> = spec
            .lines()
            .filter(|l| l.starts_with("      ") && !l.starts_with("       "))
            .filter_map(|l| l.trim().strip_suffix(':'))
            .collect();
        assert!(
            !options.is_empty(),
            "{role}: no options in its argument spec"
        );
        for option in options {
            assert!(
                stdout.contains(option),
                "{name} does not show {option}:\n{stdout}"
            );
        }
    }
}

/// Names in the target's shim cache (this install's `shim-cache`).
fn cached(collection: &Collection) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(collection.shim_cache_dir())
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// How many times the run copied the shim binary to the target (`-vvv` logs every PUT).
fn shim_puts(run: &PlaybookRun) -> usize {
    run.stdout
        .lines()
        .filter(|l| l.contains("PUT ") && l.contains("files/etcd_shim_"))
        .count()
}

fn set_mtime_days_ago(path: &Path, days: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(when).unwrap();
}

#[test]
fn the_shim_is_copied_once_per_version_and_only_its_own_stale_copies_are_removed() {
    if etcdops_tests::skip_on_etcd_3_4(
        "tests the action plugin's shim cache; etcd is only the target of a read-only info task",
    ) {
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    let collection = Collection::install();
    let arch = std::env::consts::ARCH;
    let task = json!({"etcd.core.etcd_cluster_info": {"endpoints": cluster.client_urls()}});
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [task.clone(), task.clone(), task],
    }])
    .to_string();

    // First run: one copy for three tasks, under a name that holds the shim's checksum.
    let run = collection.playbook(&playbook, LOCAL, &json!({}), &[], &["-vvv"]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(shim_puts(&run), 1, "{run}");
    let names = cached(&collection);
    assert_eq!(names.len(), 1, "{names:?}");
    let digest = {
        use sha2::Digest;
        let shim = std::fs::read(
            installed_collection_dir(&collection).join(format!("files/etcd_shim_{arch}")),
        )
        .unwrap();
        format!("{:x}", sha2::Sha256::digest(&shim))
    };
    assert_eq!(names[0], format!("etcd_shim_{arch}-{}", &digest[..32]));

    // Beside it: an old version of ours, a fresh other version (another collection's run may
    // still use it), a partial copy a killed transfer left, and a file that is not ours.
    let cache = collection.shim_cache_dir();
    let old = cache.join(format!("etcd_shim_{arch}-{}", "0".repeat(32)));
    let fresh = cache.join(format!("etcd_shim_{arch}-{}", "1".repeat(32)));
    let partial = cache.join(format!(".etcd_shim_{arch}-{}.42.part", "2".repeat(32)));
    let foreign = cache.join("notes.txt");
    for path in [&old, &fresh, &partial, &foreign] {
        std::fs::write(path, b"x").unwrap();
    }
    let ours = cache.join(&names[0]);
    for path in [&old, &partial, &foreign, &ours] {
        set_mtime_days_ago(path, 3);
    }
    // A second run reuses the cached copy: no copy, nothing removed, and the copy it ran is
    // marked as used (another version's copy removes only copies unused for a day).
    let run = collection.playbook(&playbook, LOCAL, &json!({}), &[], &["-vvv"]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(shim_puts(&run), 0, "{run}");
    assert_eq!(cached(&collection).len(), 5);
    let used = std::fs::metadata(&ours).unwrap().modified().unwrap();
    assert!(
        used.elapsed().unwrap() < std::time::Duration::from_secs(3600),
        "the cached copy was not marked as used"
    );

    // A new version (the cached copy of this one is gone, as after an upgrade) is copied once,
    // and the copy removes its own old versions and partial copies: only those.
    std::fs::remove_file(cache.join(&names[0])).unwrap();
    let run = collection.playbook(&playbook, LOCAL, &json!({}), &[], &["-vvv"]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(shim_puts(&run), 1, "{run}");
    assert!(
        !old.exists() && !partial.exists(),
        "{:?}",
        cached(&collection)
    );
    assert!(
        fresh.exists() && foreign.exists(),
        "{:?}",
        cached(&collection)
    );
    assert!(cache.join(&names[0]).exists());
}

#[test]
fn a_cache_dir_that_cannot_be_created_fails_with_the_variable_to_set() {
    if etcdops_tests::skip_on_etcd_3_4(
        "tests the action plugin's shim cache; etcd is only the target of a read-only info task",
    ) {
        return;
    }
    let cluster = Cluster::start(1, Security::Plain);
    let collection = Collection::install();
    let blocker = collection.path().join("not-a-dir");
    std::fs::write(&blocker, b"").unwrap();
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [{"etcd.core.etcd_cluster_info": {"endpoints": cluster.client_urls()}}],
    }])
    .to_string();
    let vars = json!({ "etcd_core_shim_cache_dir": blocker.join("cache") });
    // Extra vars given to the play override the harness's cache dir.
    let run = collection.playbook(
        &playbook,
        LOCAL,
        &json!({}),
        &[],
        &["-e", &vars.to_string()],
    );
    assert_ne!(run.code, 0, "{run}");
    assert!(
        run.stdout.contains("etcd_core_shim_cache_dir"),
        "the failure does not name the variable:\n{run}"
    );
}

#[test]
fn a_cache_dir_others_may_write_in_is_never_run_from() {
    if etcdops_tests::skip_on_etcd_3_4(
        "tests the action plugin's shim cache; etcd is only the target of a read-only info task",
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let cluster = Cluster::start(1, Security::Plain);
    let collection = Collection::install();
    // Like /tmp: anyone could swap the copy between the check and the run.
    let shared = collection.path().join("shared-cache");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let playbook = json!([{
        "hosts": "target",
        "gather_facts": false,
        "tasks": [{"etcd.core.etcd_cluster_info": {"endpoints": cluster.client_urls()}}],
    }])
    .to_string();
    let vars = json!({ "etcd_core_shim_cache_dir": shared });
    let run = collection.playbook(
        &playbook,
        LOCAL,
        &json!({}),
        &[],
        &["-e", &vars.to_string()],
    );
    assert_eq!(run.code, 0, "{run}");
    let output = format!("{}{}", run.stdout, run.stderr);
    assert!(
        output.contains("not running the shim from the cache"),
        "no warning:\n{run}"
    );
    assert_eq!(
        std::fs::read_dir(&shared).unwrap().count(),
        0,
        "a copy was cached"
    );
}
