//! `get` of binary keys in etcdctl-compatible mode: paged reads of binary and skewed keys
//! byte for byte as etcdctl prints them, and key arguments that are not UTF-8.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use etcdops_tests::{Cluster, Security, block_on, etcdops_path};

/// Runs `program` with byte arguments (not necessarily UTF-8) in etcdctl-compatible mode.
pub(crate) fn raw_bytes(
    program: &Path,
    args: &[&[u8]],
    env: &[(&str, &str)],
    dir: Option<&Path>,
) -> (i32, Vec<u8>, String) {
    let args: Vec<&OsStr> = args.iter().map(|a| OsStr::from_bytes(a)).collect();
    let mut cmd = crate::compat_kv::command(program, &args, env);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let out = cmd.output().expect("run");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Binary keys (0x00, 0xff, runs of 0xff), keys that are prefixes of each other, empty
/// values, a dense run then one far key, dense clusters at both ends of the byte range.
fn binary_cluster() -> Cluster {
    let cluster = Cluster::start_with(1, Security::Plain, &[]);
    block_on(async {
        let mut c = cluster.client().await;
        let keys: Vec<Vec<u8>> = vec![
            vec![0],
            vec![0, 0],
            vec![0, 1],
            vec![1],
            vec![0xfe, 0xff],
            vec![0xff],
            vec![0xff, 0],
            vec![0xff, 0xff],
            vec![0xff, 0xff, 0xff],
            vec![0xff, 0xff, 0xff, 0xff],
            b"a".to_vec(),
            b"a\0".to_vec(),
            b"a\0\0".to_vec(),
            b"a\xff".to_vec(),
            b"ab".to_vec(),
            b"abc".to_vec(),
            b"b".to_vec(),
        ];
        for (i, k) in keys.iter().enumerate() {
            let v = if i % 2 == 0 {
                format!("v{i}").into_bytes()
            } else {
                Vec::new()
            };
            c.put(k.clone(), v, None).await?;
        }
        for i in 0..1000 {
            c.put(format!("s/a{i:05}"), "val", None).await?;
        }
        c.put("s/z", "last", None).await?;
        for i in 0..300 {
            let mut k = b"t/\0".to_vec();
            k.extend(format!("{i:03}").bytes());
            c.put(k, "", None).await?;
        }
        c.put(b"t/\x80".to_vec(), "mid", None).await?;
        for i in 0..300 {
            let mut k = b"t/\xff".to_vec();
            k.extend(format!("{i:03}").bytes());
            c.put(k, "x", None).await?;
        }
        for i in 0..300 {
            c.put(format!("u/{}", "a".repeat(i)), "", None).await?;
        }
        Ok::<_, etcd_client::Error>(())
    })
    .unwrap();
    cluster
}

#[test]
fn paged_get_of_binary_and_skewed_keys_is_etcdctls_byte_for_byte() {
    let cluster = binary_cluster();
    let endpoints = cluster.endpoints();
    let cases: Vec<Vec<&str>> = vec![
        vec!["get", "", "--prefix"],
        vec!["get", "", "--prefix", "-w", "json"],
        vec!["get", "", "--prefix", "--keys-only", "-w", "json"],
        vec!["get", "--from-key", ""],
        vec!["get", "--from-key", "\u{1}"],
        vec!["get", "a", "--prefix"],
        vec!["get", "s/", "--prefix", "-w", "json"],
        vec!["get", "s/", "--prefix", "--limit", "1000", "-w", "json"],
        vec!["get", "s/", "--prefix", "--limit", "1001", "-w", "json"],
        vec!["get", "s/", "--prefix", "--limit", "3", "-w", "json"],
        vec!["get", "s/", "--prefix", "--limit", "6", "-w", "json"],
        vec!["get", "t/", "--prefix", "-w", "json"],
        vec!["get", "u/", "--prefix", "--keys-only"],
        vec!["get", "u/", "--prefix", "--limit", "4", "-w", "json"],
        vec!["get", "s/", "--prefix", "--rev", "30", "-w", "json"],
        vec![
            "get", "s/", "--prefix", "--order", "DESCEND", "--limit", "5",
        ],
        vec!["get", "a", "b"],
    ];
    // etcdctl's answers, once (the data does not change).
    let with_endpoints = |args: &[&str]| -> Vec<Vec<u8>> {
        let mut all = vec![b"--endpoints".to_vec(), endpoints.as_bytes().to_vec()];
        all.extend(args.iter().map(|a| a.as_bytes().to_vec()));
        all
    };
    let theirs: Vec<_> = cases
        .iter()
        .map(|args| {
            let all = with_endpoints(args);
            let all: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
            raw_bytes(&cluster.version.etcdctl(), &all, &[], None)
        })
        .collect();
    for pages in ["3", "1", "2", "0"] {
        for (args, theirs) in cases.iter().zip(&theirs) {
            let all = with_endpoints(args);
            let all: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
            let ours = raw_bytes(
                &etcdops_path(),
                &all,
                &[("ETCDOPS_GET_PAGE_KEYS", pages)],
                None,
            );
            assert_eq!(theirs.0, 0, "{args:?}: {}", theirs.2);
            assert_eq!(theirs.0, ours.0, "{pages} {args:?}: {}", ours.2);
            assert!(
                theirs.1 == ours.1,
                "pages {pages}, {args:?}: stdout differs"
            );
        }
    }
}

#[test]
#[ignore = "known gap: key arguments are UTF-8 strings from the CLI to the library (KeyQuery)"]
fn get_takes_a_non_utf8_key_as_etcdctl_does() {
    // Not yet: etcdctl takes `get $'\xff' --prefix`; etcdops (clap) refuses any non-UTF-8
    // argument ("invalid UTF-8 was detected in one or more arguments", exit 1), so binary
    // keys and prefixes cannot be read by name in compat mode.
    let cluster = binary_cluster();
    let endpoints = cluster.endpoints();
    for args in [
        vec![b"get".as_slice(), b"\xff", b"--prefix"],
        vec![b"get", b"\xff", b"--from-key"],
        vec![b"get", b"\xff\xff", b"--prefix", b"-w", b"json"],
        vec![b"get", b"a", b"\xff"],
    ] {
        let mut all: Vec<&[u8]> = vec![b"--endpoints", endpoints.as_bytes()];
        all.extend(args.iter().copied());
        let theirs = raw_bytes(&cluster.version.etcdctl(), &all, &[], None);
        let ours = raw_bytes(
            &etcdops_path(),
            &all,
            &[("ETCDOPS_GET_PAGE_KEYS", "3")],
            None,
        );
        assert_eq!(theirs.0, 0, "{}", theirs.2);
        assert_eq!(ours.0, 0, "{args:?}: {}", ours.2);
        assert!(theirs.1 == ours.1, "{args:?}: stdout differs");
    }
}
