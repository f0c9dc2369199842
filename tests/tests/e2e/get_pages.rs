//! `get` over many pages (forced small with ETCDOPS_GET_PAGE_KEYS): the same bytes as
//! etcdctl's one request, one revision for every page (a key written between pages does
//! not appear), `--limit` across page bounds, and a compaction between pages ending the
//! read with a one-line error and a non-zero exit.

use std::io::Read;
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

use etcdops_tests::{Cluster, Security, block_on, etcdops_path};

use crate::compat_kv::{Raw, command, run_raw};

/// Keys per page: small, so a prefix of a few thousand keys takes hundreds of pages.
const PAGE_KEYS: &str = "7";
const PREFIX: &str = "/p/";
/// Keys under PREFIX.
const KEYS: usize = 2_000;

/// Keys `/p/NNNN-name` of varied shapes and values (text of varied lengths, binary, empty),
/// keys around the prefix, and a few overwrites and deletions; the revision after the
/// first half was written.
fn paged_cluster() -> (Cluster, i64) {
    let cluster = Cluster::start_with(1, Security::Plain, &[]);
    let early = block_on(async {
        let mut client = cluster.client().await;
        client.put("/o", "before", None).await?;
        client
            .put("/p", "the prefix itself, without its slash", None)
            .await?;
        client.put("/q/after", "after", None).await?;
        let mut early = 0;
        for i in 0..KEYS {
            let key = format!(
                "{PREFIX}{:04}-{}",
                i * 7 % 10_000,
                ["a", "bb", "c-c"][i % 3]
            );
            let value: Vec<u8> = match i % 5 {
                0 => vec![0xff, 0, b'k', b'8', b's', (i % 256) as u8],
                1 => Vec::new(),
                _ => format!("value {i} {}", "x".repeat(i % 700)).into_bytes(),
            };
            let response = client.put(key, value, None).await?;
            if i == KEYS / 2 {
                early = response.header().unwrap().revision();
            }
        }
        for i in (0..KEYS).step_by(97) {
            let key = format!(
                "{PREFIX}{:04}-{}",
                i * 7 % 10_000,
                ["a", "bb", "c-c"][i % 3]
            );
            client.put(key.clone(), "overwritten", None).await?;
            if i % 2 == 1 {
                client.delete(key, None).await?;
            }
        }
        Ok::<_, etcd_client::Error>(early)
    })
    .unwrap();
    (cluster, early)
}

/// etcdctl, then etcdops with small pages, on the same arguments.
fn both_paged(cluster: &Cluster, args: &[&str]) -> (Raw, Raw) {
    let endpoints = cluster.endpoints();
    let mut all = vec!["--endpoints", &endpoints];
    all.extend_from_slice(args);
    (
        run_raw(&cluster.version.etcdctl(), &all, &[]),
        run_raw(
            &etcdops_path(),
            &all,
            &[("ETCDOPS_GET_PAGE_KEYS", PAGE_KEYS)],
        ),
    )
}

#[test]
fn paged_gets_are_etcdctls_one_request_byte_for_byte() {
    let (cluster, early) = paged_cluster();
    let early = early.to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["get", PREFIX, "--prefix"],
        vec!["get", PREFIX, "--prefix", "--keys-only"],
        vec!["get", PREFIX, "--prefix", "-w", "json"],
        vec!["get", PREFIX, "--prefix", "--keys-only", "-w", "json"],
        vec!["get", PREFIX, "--prefix", "--rev", &early],
        vec!["get", PREFIX, "--prefix", "--rev", &early, "-w", "json"],
        // --limit across page bounds: fewer, exactly, and more than the keys.
        vec!["get", PREFIX, "--prefix", "--limit", "1000"],
        vec!["get", PREFIX, "--prefix", "--limit", "1000", "-w", "json"],
        vec!["get", PREFIX, "--prefix", "--limit", "1", "-w", "json"],
        vec!["get", PREFIX, "--prefix", "--limit", "1990", "-w", "json"],
        vec!["get", PREFIX, "--prefix", "--limit", "5000", "-w", "json"],
        vec!["get", "/p/0500", "/p/0900"],
        vec!["get", "/p/0500", "/p/0900", "-w", "json"],
        vec!["get", "/p/9000", "--from-key"],
        vec![
            "get",
            "/p/9000",
            "--from-key",
            "--limit",
            "250",
            "-w",
            "json",
        ],
        vec!["get", "", "--prefix", "--keys-only"],
        vec!["get", "--from-key", ""],
        vec!["get", PREFIX, "--prefix", "--print-value-only"],
        // Non-key sorts: one request, sorted by etcd.
        vec![
            "get",
            PREFIX,
            "--prefix",
            "--sort-by",
            "MODIFY",
            "--order",
            "DESCEND",
        ],
        vec![
            "get", PREFIX, "--prefix", "--order", "DESCEND", "--limit", "30",
        ],
    ];
    for args in &cases {
        let (theirs, ours) = both_paged(&cluster, args);
        let report = format!("{args:?}\n=== etcdctl\n{theirs}\n=== etcdops\n{ours}");
        assert_eq!(theirs.code, 0, "{report}");
        assert_eq!(theirs.code, ours.code, "exit codes differ: {report}");
        assert!(
            theirs.stdout == ours.stdout,
            "stdout differs ({} and {} bytes): {args:?}\n{}",
            theirs.stdout.len(),
            ours.stdout.len(),
            String::from_utf8_lossy(&ours.stderr)
        );
    }
    // The JSON summary as etcdctl reports it: the count of the whole range, `more` when the
    // limit left keys out.
    let (_, ours) = both_paged(
        &cluster,
        &["get", PREFIX, "--prefix", "--limit", "1000", "-w", "json"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&ours.stdout).unwrap();
    assert_eq!(doc["kvs"].as_array().unwrap().len(), 1000);
    assert_eq!(doc["more"], true);
    assert!(doc["count"].as_i64().unwrap() > 1900, "{}", doc["count"]);
}

/// etcdops reading PREFIX with small pages, its stdout not read yet: once the pipe is full
/// it waits, between two pages.
fn stalled_get(cluster: &Cluster, args: &[&str]) -> Child {
    let endpoints = cluster.endpoints();
    let mut all = vec!["--endpoints", endpoints.as_str(), "get", PREFIX, "--prefix"];
    all.extend_from_slice(args);
    command(
        &etcdops_path(),
        &all,
        &[
            ("ETCDOPS_GET_PAGE_KEYS", PAGE_KEYS),
            ("ETCDOPS_SHOW_SECRETS", "true"),
        ],
    )
    .spawn()
    .expect("spawn etcdops")
}

/// Reads `n` bytes of the child's stdout: it has read its first pages (and pinned its
/// revision) and is far from done (the output is much larger than a pipe).
fn read_some(child: &mut Child, n: usize) -> Vec<u8> {
    let mut head = vec![0u8; n];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut head)
        .expect("the first bytes of the output");
    head
}

/// The rest of the child's output, its exit code and stderr (30 s at most).
fn rest(mut child: Child) -> (i32, Vec<u8>, String) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = child.stdout.take().unwrap().read_to_end(&mut out);
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        let status = child.wait().expect("wait");
        let _ = tx.send((status.code().unwrap_or(-1), out, err));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("etcdops ends within 30 s")
}

#[test]
fn every_page_is_read_at_the_first_pages_revision() {
    let (cluster, _) = paged_cluster();
    let endpoints = cluster.endpoints();
    let before = run_raw(
        &cluster.version.etcdctl(),
        &["--endpoints", &endpoints, "get", PREFIX, "--prefix"],
        &[],
    );
    assert!(
        before.stdout.len() > 256 << 10,
        "{} bytes",
        before.stdout.len()
    );
    let mut child = stalled_get(&cluster, &[]);
    let mut ours = read_some(&mut child, 4096);
    // Between pages: a key added at the end, one deleted and one changed at the start.
    block_on(async {
        let mut client = cluster.client().await;
        client
            .put("/p/9999-late", "written between pages", None)
            .await?;
        client.delete("/p/0007-bb", None).await?;
        client
            .put("/p/0014-c-c", "changed between pages", None)
            .await?;
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    let (code, tail, stderr) = rest(child);
    ours.extend(tail);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        ours == before.stdout,
        "not the view of one revision ({} and {} bytes)",
        ours.len(),
        before.stdout.len()
    );
    let text = String::from_utf8_lossy(&ours);
    assert!(!text.contains("written between pages") && !text.contains("/p/9999-late"));
    // A read now sees the writes.
    let after = run_raw(
        &etcdops_path(),
        &["--endpoints", &endpoints, "get", "/p/9999-late"],
        &[],
    );
    assert!(String::from_utf8_lossy(&after.stdout).contains("written between pages"));
}

#[test]
fn a_compaction_between_pages_ends_the_read_with_one_line() {
    let (cluster, _) = paged_cluster();
    for format in [None, Some("json")] {
        let args: Vec<&str> = format.map_or(vec![], |f| vec!["-w", f]);
        let mut child = stalled_get(&cluster, &args);
        read_some(&mut child, 4096);
        // Newer revisions, then history compacted up to the newest: the pinned one is gone.
        let revision = block_on(async {
            let mut client = cluster.client().await;
            let r = client.put("/elsewhere", "new revision", None).await?;
            let revision = r.header().unwrap().revision();
            client.compact(revision, None).await?;
            Ok::<_, etcd_client::Error>(revision)
        })
        .unwrap();
        let (code, out, stderr) = rest(child);
        assert_ne!(code, 0, "{format:?}: a compacted read must fail");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{format:?}: {stderr}");
        assert!(stderr.contains("compacted"), "{format:?}: {stderr}");
        if format.is_some() {
            // No JSON document that parses, so none passes for the whole range.
            assert!(serde_json::from_slice::<serde_json::Value>(&out).is_err());
        }
        assert!(revision > 0);
    }
}

#[test]
fn huge_values_after_small_ones_come_in_smaller_pages() {
    // Adaptive pages: thousands of small keys grow them to thousands of keys; then values of
    // 1.4 MiB (under etcd's 1.5 MiB request limit): the page over them is refused before it
    // is buffered and asked again with fewer keys, and the bytes are etcdctl's.
    let cluster = Cluster::start_with(1, Security::Plain, &[]);
    block_on(async {
        let mut client = cluster.client().await;
        for i in 0..3_000 {
            client
                .put(format!("/h/a-{i:05}"), format!("small {i}"), None)
                .await?;
        }
        for i in 0..24u8 {
            let value = vec![b'A' + i % 26; 1_400 * 1024];
            client.put(format!("/h/b-{i:03}"), value, None).await?;
        }
        client.put("/h/c-after", "after", None).await?;
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    let endpoints = cluster.endpoints();
    for extra in [None, Some("--keys-only")] {
        let mut args = vec!["--endpoints", endpoints.as_str(), "get", "/h/", "--prefix"];
        args.extend(extra);
        let theirs = run_raw(&cluster.version.etcdctl(), &args, &[]);
        let ours = run_raw(&etcdops_path(), &args, &[]);
        assert_eq!(theirs.code, 0, "{theirs}");
        assert_eq!(ours.code, 0, "{}", String::from_utf8_lossy(&ours.stderr));
        assert!(
            theirs.stdout == ours.stdout,
            "{extra:?}: {} and {} bytes",
            theirs.stdout.len(),
            ours.stdout.len()
        );
    }
}
