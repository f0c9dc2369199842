//! The save pipeline of #24 (receiving, compressing with zstd's worker threads, storing, all at
//! once): what it stores is what etcdctl saves, at the default level and at another one.

use etcdops_tests::{Cluster, Security};

use crate::run;

/// Saves into `store` with `extra` flags; returns the manifest and the decompressed object.
fn save(
    cluster: &Cluster,
    store: &std::path::Path,
    extra: &[&str],
) -> (serde_json::Value, Vec<u8>) {
    let store_arg = store.display().to_string();
    let mut args = vec!["snapshot", "save", &store_arg, "-w", "json"];
    args.extend_from_slice(extra);
    let saved = run(cluster, &args);
    saved.expect_code(0);
    let manifest = saved.json()["manifest"].clone();
    let object = std::fs::read(store.join(manifest["object"].as_str().unwrap())).unwrap();
    assert_eq!(
        object.len() as u64,
        manifest["object_size"].as_u64().unwrap()
    );
    (manifest, zstd::decode_all(&object[..]).unwrap())
}

#[test]
fn a_save_over_many_zstd_jobs_stores_exactly_what_etcdctl_saves_at_level_1_by_default() {
    let cluster = Cluster::start(1, Security::Plain);
    // Over 12 MiB: many of zstd's 1 MiB jobs, incompressible and compressible parts.
    cluster.put_random("/registry/secrets/bench/r-", 96, 128 << 10);
    cluster.put_keys("/registry/configmaps/bench/c-", 2000);
    let reference = cluster.dir().join("etcdctl.db");
    let out = cluster.etcdctl(&[
        "--endpoints",
        &cluster.endpoints(),
        "snapshot",
        "save",
        &reference.display().to_string(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let reference = std::fs::read(&reference).unwrap();
    assert!(reference.len() > 12 << 20, "{}", reference.len());

    let (manifest, db) = save(&cluster, &cluster.dir().join("default"), &[]);
    assert_eq!(manifest["compression"], "zstd");
    assert_eq!(manifest["compression_level"], 1, "{manifest}");
    assert_eq!(db.len(), reference.len());
    assert!(
        db == reference,
        "the stored stream is etcdctl's file byte for byte"
    );
    assert_eq!(
        manifest["db_size"].as_u64().unwrap(),
        reference.len() as u64 - 32
    );

    let (manifest, db) = save(
        &cluster,
        &cluster.dir().join("level3"),
        &["--compression-level", "3"],
    );
    assert_eq!(manifest["compression_level"], 3, "{manifest}");
    assert!(db == reference, "level 3 stores the same stream");
}
