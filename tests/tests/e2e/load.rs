//! Bounded load: 50 concurrent `endpoint health` and `get` calls and 5 concurrent saves
//! against a three-member cluster. No call fails; no temporary object or file is left.

use etcdops_tests::{Cluster, Security, etcdops};

#[test]
fn fifty_concurrent_reads_and_five_concurrent_saves_all_succeed() {
    // Elections at the suite's fast timeouts (500 ms) happen when 55 clients starve the
    // members of CPU, and a health read across one fails as etcdctl's does: this test is about
    // etcdops under concurrency, so its members keep their leader through the load.
    let extra = ["--heartbeat-interval", "100", "--election-timeout", "3000"];
    let cluster = Cluster::start_with(3, Security::Tls, &extra);
    cluster.put_keys("/load/k", 200);
    let flags = cluster.client_flags();
    let store = cluster.dir().join("backups");
    let store_arg = store.display().to_string();
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for i in 0..50 {
            let mut args = flags.clone();
            if i % 2 == 0 {
                args.extend(["endpoint", "health", "--cluster"].map(String::from));
            } else {
                args.extend(["get", "/load/k", "--prefix", "--count-only"].map(String::from));
            }
            handles.push(scope.spawn(move || etcdops(&args, &[])));
        }
        for _ in 0..5 {
            let mut args = flags.clone();
            args.extend(["snapshot", "save", &store_arg, "--quiet"].map(String::from));
            handles.push(scope.spawn(move || etcdops(&args, &[])));
        }
        for handle in handles {
            let run = handle.join().expect("thread");
            assert_eq!(run.code, 0, "a call failed under load:\n{run}");
        }
    });
    let run = etcdops(
        &[
            "snapshot".into(),
            "list".into(),
            store_arg.clone(),
            "-w".into(),
            "json".into(),
        ],
        &[],
    );
    run.expect_code(0);
    let catalog = run.json();
    let backups = catalog["backups"].as_array().unwrap();
    assert_eq!(backups.len(), 5, "five saves, five backups:\n{catalog}");
    assert!(backups.iter().all(|b| b["complete"] == true), "{catalog}");
    assert_eq!(catalog["orphans"].as_array().unwrap().len(), 0, "{catalog}");
    // No temporary file left anywhere in the store.
    let mut stack = vec![store.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                assert!(
                    name.ends_with(".db.zst") || name.ends_with(".json"),
                    "a leftover file in the store: {}",
                    path.display()
                );
            }
        }
    }
}
