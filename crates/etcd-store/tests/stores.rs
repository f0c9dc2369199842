//! etcd-store against real destinations: a local directory, moto (S3), Azurite (Azure Blob)
//! and fake-gcs-server (GCS, read side only). Every test starts its own server on a free
//! port and uses its own bucket or container.
#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // test code: fixtures are made with std's creating calls

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcd_store::{ObjectInfo, Store, StoreError, StoreOptions};
use etcdops_tests::{AzuriteServer, FakeGcsServer, S3Server, free_port};
use futures::TryStreamExt;

const MIB: usize = 1024 * 1024;

/// Deterministic, incompressible test data.
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

async fn upload_in_chunks(store: &Store, name: &str, bytes: &[u8], chunk: usize) -> ObjectInfo {
    let mut upload = store.begin_upload(name).await.unwrap();
    for piece in bytes.chunks(chunk) {
        upload.write(Bytes::copy_from_slice(piece)).await.unwrap();
    }
    upload.complete().await.unwrap()
}

async fn read_all(store: &Store, name: &str) -> (ObjectInfo, Vec<u8>) {
    let (info, stream) = store.get(name).await.unwrap();
    let chunks: Vec<Bytes> = stream.try_collect().await.unwrap();
    (info, chunks.concat())
}

fn names(list: &[ObjectInfo]) -> Vec<&str> {
    list.iter().map(|o| o.name.as_str()).collect()
}

fn assert_rfc3339_utc(ts: &str) {
    let parsed = chrono::DateTime::parse_from_rfc3339(ts)
        .unwrap_or_else(|e| panic!("'{ts}' is not RFC 3339: {e}"));
    assert!(ts.ends_with('Z'), "'{ts}' is not UTC");
    let age = chrono::Utc::now().signed_duration_since(parsed);
    assert!(
        age.num_seconds().abs() < 3600,
        "'{ts}' is far from now ({age})"
    );
}

/// The full round trip every backend that accepts uploads must pass.
async fn round_trip(store: &Store, part_size: usize) {
    // More than two parts, last one short.
    let big = data(2 * part_size + part_size / 2 + 7, 1);
    let info = upload_in_chunks(store, "c1/snapshot.db", &big, MIB / 3).await;
    assert_eq!(info.name, "c1/snapshot.db");
    assert_eq!(info.size, big.len() as u64);
    assert_rfc3339_utc(&info.last_modified);

    let (got_info, got) = read_all(store, "c1/snapshot.db").await;
    assert_eq!(got_info.size, big.len() as u64);
    assert!(got == big, "downloaded bytes differ from uploaded ones");

    let manifest = Bytes::from_static(b"{\"manifest\":1}");
    let m = store
        .put_small("c1/snapshot.json", manifest.clone())
        .await
        .unwrap();
    assert_eq!(m.size, manifest.len() as u64);
    assert_eq!(store.get_small("c1/snapshot.json").await.unwrap(), manifest);
    // Overwrite is atomic: the new content replaces the old whole.
    let manifest2 = Bytes::from_static(b"{\"manifest\":2,\"more\":true}");
    store
        .put_small("c1/snapshot.json", manifest2.clone())
        .await
        .unwrap();
    assert_eq!(
        store.get_small("c1/snapshot.json").await.unwrap(),
        manifest2
    );

    // An empty upload is a valid, empty object.
    let empty = store.begin_upload("c2/empty").await.unwrap();
    assert_eq!(empty.complete().await.unwrap().size, 0);

    let all = store.list("").await.unwrap();
    assert_eq!(
        names(&all),
        ["c1/snapshot.db", "c1/snapshot.json", "c2/empty"]
    );
    assert_eq!(all[0].size, big.len() as u64);
    assert_eq!(
        names(&store.list("c1/snap").await.unwrap()),
        ["c1/snapshot.db", "c1/snapshot.json"]
    );
    assert_eq!(names(&store.list("c2/").await.unwrap()), ["c2/empty"]);
    assert!(store.list("c3").await.unwrap().is_empty());

    let head = store.head("c1/snapshot.json").await.unwrap().unwrap();
    assert_eq!(head.size, manifest2.len() as u64);
    assert_rfc3339_utc(&head.last_modified);
    assert_eq!(store.head("c1/absent").await.unwrap(), None);
    let err = store.get("c1/absent").await.err().unwrap();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    let err = store.get_small("c1/absent").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");

    store.delete("c1/snapshot.db").await.unwrap();
    assert_eq!(store.head("c1/snapshot.db").await.unwrap(), None);
    // Deleting an absent object is fine.
    store.delete("c1/snapshot.db").await.unwrap();
    assert_eq!(
        names(&store.list("").await.unwrap()),
        ["c1/snapshot.json", "c2/empty"]
    );
}

// ---------------------------------------------------------------------------------------
// Local directory

fn local_store(dir: &std::path::Path) -> Store {
    Store::open(dir.to_str().unwrap(), &StoreOptions::default()).unwrap()
}

/// Every file under `dir`, relative, including hidden ones.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(
                    e.path()
                        .strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn local_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir.path().join("backups"));
    assert_eq!(
        store.url(),
        dir.path().join("backups").display().to_string()
    );
    round_trip(&store, 5 * MIB).await;
    // No temporary file is left behind by any of it.
    let left = files_under(&dir.path().join("backups"));
    assert_eq!(left, ["c1/snapshot.json", "c2/empty"]);
}

#[tokio::test]
async fn local_file_url_works_like_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}/nfs", dir.path().display());
    let store = Store::open(&url, &StoreOptions::default()).unwrap();
    store
        .put_small("a/b.json", Bytes::from_static(b"x"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("nfs/a/b.json")).unwrap(),
        b"x"
    );
}

#[tokio::test]
async fn local_unfinished_uploads_and_folders_are_listed_without_reading_below() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let store = local_store(&root);
    assert!(!store.exists().await.unwrap(), "not created yet");
    let mut upload = store.begin_upload("c1/snapshot.db").await.unwrap();
    upload.write(Bytes::from(data(1000, 6))).await.unwrap();
    store
        .put_small("c2/deep/er/x.json", Bytes::from_static(b"x"))
        .await
        .unwrap();
    std::fs::write(root.join("c1/.foreign.partial-XYZ"), b"not ours").unwrap();
    assert!(store.exists().await.unwrap());
    assert_eq!(store.list_folders("").await.unwrap(), ["c1", "c2"]);
    assert_eq!(store.list_folders("c2").await.unwrap(), ["c2/deep"]);
    assert!(store.list_folders("c3").await.unwrap().is_empty());

    // The killed process's temporary file, named with what it was to become.
    let unfinished = store.list_unfinished("c1/").await.unwrap();
    assert_eq!(unfinished.len(), 1, "{unfinished:?}");
    assert_eq!(unfinished[0].target, "c1/snapshot.db");
    assert!(
        unfinished[0]
            .info
            .name
            .starts_with("c1/.snapshot.db.partial-")
    );
    assert_eq!(unfinished[0].info.size, 1000);
    assert!(store.list_unfinished("c2/").await.unwrap().is_empty());

    // Only temporary names are discarded this way.
    for bad in [
        "c1/snapshot.db",
        "c1/.foreign.partial-XYZ",
        "../x/.a.partial-1",
    ] {
        assert!(store.discard_unfinished(bad).await.is_err(), "{bad}");
    }
    let name = unfinished[0].info.name.clone();
    std::mem::forget(upload); // as a killed process would leave it
    store.discard_unfinished(&name).await.unwrap();
    assert_eq!(
        files_under(&root),
        ["c1/.foreign.partial-XYZ", "c2/deep/er/x.json"]
    );
    // A file where the store's directory should be is an error, not an empty store.
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert!(local_store(&file).exists().await.is_err());
}

#[tokio::test]
async fn local_partial_files_are_never_listed_and_drop_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    let mut upload = store.begin_upload("c1/snapshot.db").await.unwrap();
    upload.write(Bytes::from(data(100_000, 2))).await.unwrap();

    // The bytes are on disk under a hidden temporary name...
    let on_disk = files_under(dir.path());
    assert_eq!(on_disk.len(), 1, "{on_disk:?}");
    assert!(
        on_disk[0].starts_with("c1/.snapshot.db.partial-"),
        "{on_disk:?}"
    );
    // ...which neither list nor head shows.
    assert!(store.list("").await.unwrap().is_empty());
    assert!(store.list("c1/").await.unwrap().is_empty());
    assert_eq!(store.head("c1/snapshot.db").await.unwrap(), None);

    drop(upload);
    assert!(
        files_under(dir.path()).is_empty(),
        "{:?}",
        files_under(dir.path())
    );
    assert_eq!(store.head("c1/snapshot.db").await.unwrap(), None);
}

#[tokio::test]
async fn local_abort_removes_the_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    let mut upload = store.begin_upload("x.db").await.unwrap();
    upload.write(Bytes::from_static(b"partial")).await.unwrap();
    assert_eq!(files_under(dir.path()).len(), 1);
    upload.abort().await.unwrap();
    assert!(files_under(dir.path()).is_empty());
}

#[tokio::test]
async fn local_completed_upload_replaces_an_existing_object_only_at_complete() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    store
        .put_small("x.db", Bytes::from_static(b"old"))
        .await
        .unwrap();
    let mut upload = store.begin_upload("x.db").await.unwrap();
    upload
        .write(Bytes::from_static(b"new content"))
        .await
        .unwrap();
    // Until complete, readers see the old object.
    assert_eq!(store.get_small("x.db").await.unwrap(), &b"old"[..]);
    upload.complete().await.unwrap();
    assert_eq!(store.get_small("x.db").await.unwrap(), &b"new content"[..]);
}

#[tokio::test]
async fn local_files_are_0600_and_new_directories_0700() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(&dir.path().join("root"));
    store
        .put_small("deep/er/manifest.json", Bytes::from_static(b"{}"))
        .await
        .unwrap();
    upload_in_chunks(&store, "deep/snap.db", b"secret bytes", 4).await;
    let mode = |p: &str| {
        std::fs::metadata(dir.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("root"), 0o700);
    assert_eq!(mode("root/deep"), 0o700);
    assert_eq!(mode("root/deep/er"), 0o700);
    assert_eq!(mode("root/deep/er/manifest.json"), 0o600);
    assert_eq!(mode("root/deep/snap.db"), 0o600);
}

/// What a red team plants in a store it may write but whose files it may not read: links to
/// a secret file and to a dir outside, a FIFO, a socket, a dir named like an object. None is
/// listed as an object, read, written through or deleted; each is refused by name, and no
/// message holds a byte of the secret.
#[tokio::test]
async fn local_links_fifos_sockets_and_dirs_are_never_read_written_through_or_deleted() {
    const SECRET: &[u8] = b"TOP-SECRET-SHADOW-LINE";
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let secret = outside.join("shadow");
    std::fs::write(&secret, SECRET).unwrap();
    let root = dir.path().join("store");
    let store = local_store(&root);
    store
        .put_small("c1/real.db", Bytes::from_static(b"ours"))
        .await
        .unwrap();
    let c1 = root.join("c1");
    std::os::unix::fs::symlink(&secret, c1.join("link.db")).unwrap();
    std::os::unix::fs::symlink(&outside, c1.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("c2")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        c1.join("fifo.db"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(c1.join("socket.db")).unwrap();
    std::fs::create_dir(c1.join("dir.db")).unwrap();
    let kind_of = |e: StoreError| match e {
        StoreError::NotRegular { name, kind, .. } => format!("{name}: {kind}"),
        other => panic!("not refused as not regular: {other:?}"),
    };
    let no_secret = |text: &str| {
        assert!(
            !text.contains("TOP-SECRET") && !text.contains(&hex_of(SECRET)),
            "{text}"
        )
    };

    // Listings: only the regular file is an object; the rest is reported, not read.
    assert_eq!(names(&store.list("").await.unwrap()), ["c1/real.db"]);
    assert_eq!(store.list_folders("").await.unwrap(), ["c1"]);
    assert_eq!(store.list_folders("c1").await.unwrap(), ["c1/dir.db"]);
    let reported: Vec<String> = store
        .list_not_regular("c1")
        .await
        .unwrap()
        .into_iter()
        .map(|e| format!("{}: {}", e.name, e.kind))
        .collect();
    assert_eq!(
        reported,
        [
            "c1/fifo.db: a FIFO",
            "c1/link.db: a symbolic link",
            "c1/socket.db: a socket",
            "c1/sub: a symbolic link"
        ]
    );
    assert_eq!(
        store.list_not_regular("").await.unwrap()[0].name,
        "c2",
        "a linked folder at the root is reported"
    );

    // Reads: refused by name, in bounded time (a FIFO is never opened for reading).
    let refused = [
        ("c1/link.db", "c1/link.db: a symbolic link"),
        ("c1/fifo.db", "c1/fifo.db: a FIFO"),
        ("c1/socket.db", "c1/socket.db: a socket"),
        ("c1/dir.db", "c1/dir.db: a directory"),
        ("c1/sub/shadow", "c1/sub: a symbolic link"),
        ("c2/shadow", "c2: a symbolic link"),
    ];
    for (name, want) in refused {
        let get = tokio::time::timeout(Duration::from_secs(10), store.get(name))
            .await
            .unwrap_or_else(|_| panic!("get {name} hung"));
        let err = get.map(|_| ()).unwrap_err();
        no_secret(&err.to_string());
        assert!(
            err.to_string().contains("not a file etcdops wrote"),
            "{err}"
        );
        assert_eq!(kind_of(err), want, "get {name}");
        let err = store.get_small(name).await.unwrap_err();
        assert_eq!(kind_of(err), want, "get_small {name}");
        let err = store.head(name).await.unwrap_err();
        assert_eq!(kind_of(err), want, "head {name}");
        let err = store.delete(name).await.unwrap_err();
        assert_eq!(kind_of(err), want, "delete {name}");
    }
    // Writes never go through a linked dir.
    for name in ["c1/sub/new.db", "c2/new.db"] {
        let err = store.begin_upload(name).await.map(|_| ()).unwrap_err();
        assert!(matches!(err, StoreError::NotRegular { .. }), "{err:?}");
        let err = store
            .put_small(name, Bytes::from_static(b"x"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::NotRegular { .. }), "{err:?}");
    }
    assert!(!store.remove_empty_folder("c1/sub").await.unwrap());
    // Everything planted is still there, the secret unchanged and alone outside.
    for planted in ["link.db", "sub", "fifo.db", "socket.db", "dir.db"] {
        assert!(
            c1.join(planted).symlink_metadata().is_ok(),
            "{planted} removed"
        );
    }
    assert!(root.join("c2").symlink_metadata().is_ok());
    assert_eq!(std::fs::read(&secret).unwrap(), SECRET);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

    // An object swapped for a link after it was listed is refused, not read.
    store
        .put_small("c1/swap.db", Bytes::from_static(b"ours too"))
        .await
        .unwrap();
    assert!(names(&store.list("c1/").await.unwrap()).contains(&"c1/swap.db"));
    let swap = c1.join(".swap");
    std::os::unix::fs::symlink(&secret, &swap).unwrap();
    std::fs::rename(&swap, c1.join("swap.db")).unwrap();
    let err = store.get("c1/swap.db").await.map(|_| ()).unwrap_err();
    assert_eq!(kind_of(err), "c1/swap.db: a symbolic link");
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn local_put_small_is_atomic_under_concurrent_readers() {
    // A reader polling while a writer replaces the object must only ever see a whole
    // version, never a truncated or mixed one.
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    let versions: Vec<Vec<u8>> = (0..20).map(|i| vec![b'a' + i as u8; 256 * 1024]).collect();
    store
        .put_small("m.json", Bytes::from(versions[0].clone()))
        .await
        .unwrap();
    let reader_store = store.clone();
    let expected = versions.clone();
    let reader = tokio::spawn(async move {
        let mut reads = 0;
        for _ in 0..200 {
            let got = reader_store.get_small("m.json").await.unwrap();
            assert!(
                expected.iter().any(|v| v[..] == got[..]),
                "read a torn object of {} bytes",
                got.len()
            );
            reads += 1;
            tokio::task::yield_now().await;
        }
        reads
    });
    for v in &versions[1..] {
        store
            .put_small("m.json", Bytes::from(v.clone()))
            .await
            .unwrap();
    }
    assert_eq!(reader.await.unwrap(), 200);
    assert_eq!(files_under(dir.path()), ["m.json"]);
}

/// A small tmpfs, unmounted on drop (mounting needs root, as on CI).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &std::path::Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(status.success(), "mounting a tmpfs needs root");
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[tokio::test]
async fn local_full_disk_is_no_space_and_leaves_nothing_partial() {
    let dir = tempfile::tempdir().unwrap();
    let _tmpfs = Tmpfs::mount(&dir.path().join("small"), "1m");
    let store = local_store(&dir.path().join("small"));
    store
        .put_small("kept.json", Bytes::from_static(b"{}"))
        .await
        .unwrap();

    let mut upload = store.begin_upload("big.db").await.unwrap();
    let mut failure = None;
    for _ in 0..8 {
        // 8 x 256 KiB = 2 MiB into a 1 MiB file system.
        if let Err(e) = upload.write(Bytes::from(data(256 * 1024, 7))).await {
            failure = Some(e);
            break;
        }
    }
    let err = match failure {
        Some(e) => {
            drop(upload);
            e
        }
        None => upload.complete().await.unwrap_err(),
    };
    assert!(matches!(err, StoreError::NoSpace { .. }), "{err:?}");
    assert!(err.to_string().contains("no space left"), "{err}");
    assert_eq!(files_under(&dir.path().join("small")), ["kept.json"]);

    let err = store
        .put_small("big.json", Bytes::from(data(2 * MIB, 8)))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NoSpace { .. }), "{err:?}");
    assert_eq!(files_under(&dir.path().join("small")), ["kept.json"]);
}

#[tokio::test]
async fn local_bad_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = local_store(dir.path());
    for bad in ["../escape", "/etc/passwd", "a//b", "d/.x.partial-1"] {
        let err = store.put_small(bad, Bytes::new()).await.unwrap_err();
        assert!(
            matches!(err, StoreError::InvalidName { .. }),
            "{bad}: {err:?}"
        );
    }
    assert!(files_under(dir.path()).is_empty());
}

// ---------------------------------------------------------------------------------------
// S3 (moto)

fn s3_options(server: &S3Server) -> StoreOptions {
    StoreOptions {
        s3_endpoint: Some(server.endpoint.clone()),
        s3_region: Some("us-east-1".into()),
        allow_http: true,
        s3_path_style: true,
        part_size: 5 * MIB,
        extra: vec![
            ("aws_access_key_id".into(), "AKIAMOTOTEST".into()),
            (
                "aws_secret_access_key".into(),
                "moto-secret-never-shown".into(),
            ),
        ],
        max_retries: Some(1),
        ..StoreOptions::default()
    }
}

#[tokio::test]
async fn s3_round_trip_with_multipart_upload() {
    let server = S3Server::start();
    server.create_bucket("roundtrip");
    let store = Store::open("s3://roundtrip/etcd/prod", &s3_options(&server)).unwrap();
    assert_eq!(store.url(), "s3://roundtrip/etcd/prod");
    round_trip(&store, 5 * MIB).await;
    assert!(server.multipart_uploads("roundtrip").is_empty());
    // Objects live under the prefix.
    let other = Store::open("s3://roundtrip", &s3_options(&server)).unwrap();
    assert_eq!(
        names(&other.list("").await.unwrap()),
        ["etcd/prod/c1/snapshot.json", "etcd/prod/c2/empty"]
    );
}

#[tokio::test]
async fn s3_folders_are_listed_one_level_at_a_time() {
    let server = S3Server::start();
    server.create_bucket("folders");
    // The prefixed store first, so that the bucket root then holds its folder "pre".
    for store_url in ["s3://folders/pre/fix", "s3://folders"] {
        let store = Store::open(store_url, &s3_options(&server)).unwrap();
        for name in [
            "etcd-abc/a.db",
            "etcd-abc/x.deltas/1",
            "etcd/etcd-abc/b.db",
            "top.db",
        ] {
            store
                .put_small(name, Bytes::from_static(b"x"))
                .await
                .unwrap();
        }
        let mut expected = vec!["etcd", "etcd-abc"];
        if store_url == "s3://folders" {
            expected.push("pre");
        }
        assert_eq!(
            store.list_folders("").await.unwrap(),
            expected,
            "{store_url}"
        );
        assert_eq!(
            store.list_folders("etcd-abc").await.unwrap(),
            ["etcd-abc/x.deltas"],
            "{store_url}"
        );
        assert!(store.list_unfinished("").await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn s3_upload_is_invisible_until_complete_and_abort_leaves_nothing() {
    let server = S3Server::start();
    server.create_bucket("aborts");
    let store = Store::open("s3://aborts", &s3_options(&server)).unwrap();
    let mut upload = store.begin_upload("snap.db").await.unwrap();
    // Two full parts go out while writing.
    upload.write(Bytes::from(data(11 * MIB, 3))).await.unwrap();
    assert_eq!(server.multipart_uploads("aborts"), ["snap.db"]);
    assert!(store.list("").await.unwrap().is_empty());
    assert_eq!(store.head("snap.db").await.unwrap(), None);
    upload.abort().await.unwrap();
    assert!(server.multipart_uploads("aborts").is_empty());
    assert!(store.list("").await.unwrap().is_empty());
}

/// On a current-thread runtime a drop cannot wait: the abort runs in the background, and
/// `dropped_uploads_settled` returns once it is done.
#[tokio::test]
async fn s3_dropped_upload_is_aborted_in_the_background_and_settled_awaits_it() {
    let server = S3Server::start();
    server.create_bucket("drops");
    let store = Store::open("s3://drops", &s3_options(&server)).unwrap();
    let mut upload = store.begin_upload("snap.db").await.unwrap();
    upload.write(Bytes::from(data(6 * MIB, 4))).await.unwrap();
    drop(upload);
    assert_eq!(server.multipart_uploads("drops"), ["snap.db"]);
    etcd_store::dropped_uploads_settled(Duration::from_secs(10)).await;
    assert!(server.multipart_uploads("drops").is_empty());
    assert_eq!(store.head("snap.db").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_a_cancelled_upload_has_aborted_its_multipart_upload_when_the_drop_returns() {
    let server = S3Server::start();
    server.create_bucket("cancels");
    let store = Store::open("s3://cancels", &s3_options(&server)).unwrap();
    let mut upload = store.begin_upload("snap.db").await.unwrap();
    // A writer cancelled mid-stream (as a select! with a signal cancels a save).
    let writing = async {
        upload.write(Bytes::from(data(6 * MIB, 5))).await.unwrap();
        std::future::pending::<()>().await;
    };
    let cancelled = tokio::time::timeout(Duration::from_millis(500), writing).await;
    assert!(cancelled.is_err());
    assert_eq!(server.multipart_uploads("cancels"), ["snap.db"]);
    drop(upload);
    // No waiting: the process could exit now.
    assert!(server.multipart_uploads("cancels").is_empty());
    assert_eq!(store.head("snap.db").await.unwrap(), None);
}

#[tokio::test]
async fn s3_missing_bucket_is_reported_as_such() {
    let server = S3Server::start();
    let store = Store::open("s3://no-such-bucket/x", &s3_options(&server)).unwrap();
    let err = store.list("").await.unwrap_err();
    assert!(
        matches!(err, StoreError::MissingBucket { ref bucket, .. } if bucket == "no-such-bucket"),
        "{err:?}"
    );
    let err = store.begin_upload("a").await.unwrap_err();
    assert!(matches!(err, StoreError::MissingBucket { .. }), "{err:?}");
    let err = store
        .put_small("a", Bytes::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::MissingBucket { .. }), "{err:?}");
    assert!(err.to_string().contains("create it first"), "{err}");
    assert!(!format!("{err} {err:?}").contains("moto-secret-never-shown"));
}

#[tokio::test]
async fn s3_unreachable_endpoint_is_reported_as_such() {
    // A free port: nothing listens there.
    let options = StoreOptions {
        s3_endpoint: Some(format!("http://127.0.0.1:{}", free_port())),
        max_retries: Some(0),
        ..s3_options_without_server()
    };
    let store = Store::open("s3://bucket", &options).unwrap();
    let started = Instant::now();
    let err = store.list("").await.unwrap_err();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let text = format!("{err} {err:?}");
    assert!(text.contains("check the S3 endpoint"), "{text}");
    assert!(!text.contains("moto-secret-never-shown"), "{text}");
    let err = store.begin_upload("a").await.unwrap_err();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
}

fn s3_options_without_server() -> StoreOptions {
    StoreOptions {
        s3_region: Some("us-east-1".into()),
        allow_http: true,
        s3_path_style: true,
        extra: vec![
            ("aws_access_key_id".into(), "AKIAMOTOTEST".into()),
            (
                "aws_secret_access_key".into(),
                "moto-secret-never-shown".into(),
            ),
        ],
        ..StoreOptions::default()
    }
}

// ---------------------------------------------------------------------------------------
// Azure (Azurite)

fn azure_options(server: &AzuriteServer, part_size: usize) -> StoreOptions {
    StoreOptions {
        azure_use_emulator: true,
        endpoint_override: Some(server.endpoint.clone()),
        part_size,
        max_retries: Some(1),
        ..StoreOptions::default()
    }
}

#[tokio::test]
async fn azure_round_trip_with_block_upload() {
    let server = AzuriteServer::start();
    server.create_container("roundtrip");
    // Azure has no 5 MiB minimum: small parts keep the test quick.
    let store = Store::open("az://roundtrip/etcd", &azure_options(&server, MIB)).unwrap();
    assert_eq!(store.url(), "az://roundtrip/etcd");
    round_trip(&store, MIB).await;
}

#[tokio::test]
async fn azure_abort_leaves_nothing() {
    let server = AzuriteServer::start();
    server.create_container("aborts");
    let store = Store::open("azure://aborts", &azure_options(&server, MIB)).unwrap();
    let mut upload = store.begin_upload("snap.db").await.unwrap();
    upload.write(Bytes::from(data(3 * MIB, 5))).await.unwrap();
    assert!(store.list("").await.unwrap().is_empty());
    upload.abort().await.unwrap();
    assert!(store.list("").await.unwrap().is_empty());
    assert_eq!(store.head("snap.db").await.unwrap(), None);
}

#[tokio::test]
async fn azure_missing_container_is_reported_as_such() {
    let server = AzuriteServer::start();
    let store = Store::open("az://nocontainer", &azure_options(&server, MIB)).unwrap();
    let err = store.list("").await.unwrap_err();
    assert!(
        matches!(err, StoreError::MissingBucket { ref bucket, .. } if bucket == "nocontainer"),
        "{err:?}"
    );
    let err = store
        .put_small("a", Bytes::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::MissingBucket { .. }), "{err:?}");
}

#[tokio::test]
async fn azure_wrong_key_is_an_auth_error_without_the_key() {
    let server = AzuriteServer::start();
    server.create_container("auth");
    // A well-formed but wrong key (base64 of a 64-byte string).
    let wrong_key = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy0x";
    let mut options = azure_options(&server, MIB);
    options
        .extra
        .push(("azure_storage_account_key".into(), wrong_key.into()));
    let store = Store::open("az://auth", &options).unwrap();
    let err = store
        .put_small("a", Bytes::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Auth { .. }), "{err:?}");
    let text = format!("{err} {err:?}");
    assert!(!text.contains(wrong_key), "{text}");
    assert!(text.contains("AZURE_STORAGE_ACCOUNT_KEY"), "{text}");
}

// ---------------------------------------------------------------------------------------
// GCS (fake-gcs-server: it rejects object_store's uploads, so objects are created through
// its JSON API and only the read side and delete are tested)

#[tokio::test]
async fn gcs_get_list_head_delete() {
    let server = FakeGcsServer::start();
    server.create_bucket("gcsbucket");
    let snapshot = data(300_000, 6);
    server.put_object("gcsbucket", "etcd/c1/snapshot.db", &snapshot);
    server.put_object("gcsbucket", "etcd/c1/snapshot.json", b"{}");
    server.put_object("gcsbucket", "other/x", b"not under the prefix");
    let options = StoreOptions {
        endpoint_override: Some(server.endpoint.clone()),
        allow_http: true,
        max_retries: Some(1),
        // Not `google_skip_signature`: object_store 0.14 ignores it for DELETE and then asks
        // the GCE metadata server (169.254.169.254) for a token. A key with `disable_oauth`
        // sends an empty bearer token and never leaves the machine.
        extra: vec![(
            "google_service_account_key".into(),
            r#"{"private_key":"unused","private_key_id":"unused","client_email":"test@example.com","disable_oauth":true}"#.into(),
        )],
        ..StoreOptions::default()
    };
    let store = Store::open("gs://gcsbucket/etcd", &options).unwrap();

    let all = store.list("").await.unwrap();
    assert_eq!(names(&all), ["c1/snapshot.db", "c1/snapshot.json"]);
    assert_eq!(all[0].size, snapshot.len() as u64);
    assert_rfc3339_utc(&all[0].last_modified);

    let (info, got) = read_all(&store, "c1/snapshot.db").await;
    assert_eq!(info.size, snapshot.len() as u64);
    assert!(got == snapshot, "downloaded bytes differ");
    assert_eq!(
        store.get_small("c1/snapshot.json").await.unwrap(),
        &b"{}"[..]
    );
    let head = store.head("c1/snapshot.json").await.unwrap().unwrap();
    assert_eq!(head.size, 2);
    assert_eq!(store.head("c1/absent").await.unwrap(), None);
    let err = store.get("c1/absent").await.err().unwrap();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");

    store.delete("c1/snapshot.db").await.unwrap();
    assert_eq!(store.head("c1/snapshot.db").await.unwrap(), None);
    assert_eq!(names(&store.list("").await.unwrap()), ["c1/snapshot.json"]);
}

/// A save abandoned while its upload is being opened (a stop with no grace) leaves no
/// temporary file behind: the open finishes on a blocking thread after the caller is gone,
/// and what it made is removed there. The runtime's shutdown waits for that thread, so the
/// dir is looked at only once it has finished.
#[test]
fn an_upload_cancelled_while_it_opens_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store = local_store(dir.path());
            let name = format!("c1/abandoned-{round}.db");
            // Polled once, then dropped: the open is still on its blocking thread.
            let opened = tokio::time::timeout(Duration::ZERO, store.begin_upload(&name)).await;
            if let Ok(upload) = opened {
                upload.unwrap().abort().await.unwrap();
            }
        });
        drop(runtime);
        assert_eq!(
            files_under(dir.path()),
            Vec::<String>::new(),
            "round {round}: a temporary file was left"
        );
    }
}
