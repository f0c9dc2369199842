//! The streaming part of a save: etcd's snapshot stream -> zstd -> age -> store, in three
//! stages that run at the same time, a bounded channel apart:
//!
//! 1. a tokio task receives etcd's chunks and hashes the db for the trailer check;
//! 2. a thread of its own compresses (zstd, with [`ZSTD_WORKERS`] worker threads) and
//!    encrypts (age, with `--encrypt-to`) them, so that neither stage waits for the other
//!    while etcd keeps sending;
//! 3. the caller's task hashes the stored bytes (for the manifest) and hands them to the store
//!    (local file, or multipart parts uploading in the background).
//!
//! Memory stays bounded whatever the db's size: [`CHANNEL_CHUNKS`] chunks of etcd's 32 KiB
//! between stages 1 and 3's feeder and the compressor, zstd's window and buffers, at most
//! [`OUT_BLOCKS`] blocks of [`FLUSH_BYTES`] between the compressor and the store, and the
//! store's few multipart parts.

use std::io::{self, Write};

use bytes::Bytes;
use etcd_core::{SnapshotChunk, SnapshotStream};
use etcd_store::Upload;
use futures::{Stream, StreamExt};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::crypt::encryptor;
use crate::error::{Result, SnapshotError};
use crate::manifest::Compression;
use crate::progress::Progress;
use crate::save::{SaveRequest, TrailerCheck};

/// Chunks buffered between the etcd stream and the compressor (at each of the two hops).
pub(crate) const CHANNEL_CHUNKS: usize = 32;
/// Compressed bytes collected before they are handed to the store.
pub(crate) const FLUSH_BYTES: usize = 1 << 20;
/// Blocks of about [`FLUSH_BYTES`] buffered between the compressor and the store.
pub(crate) const OUT_BLOCKS: usize = 2;
/// zstd's worker threads. The compressor thread only hands them the db in jobs of
/// [`ZSTD_JOB_BYTES`] and collects their output, so compression keeps up with etcd even when
/// another process takes a core, and a level above the default can use both cores of a small
/// host.
/// Measured against one thread on 2 cores with a CPU hog (#24): 0.85x its wall time. The
/// frame is an ordinary zstd frame.
pub(crate) const ZSTD_WORKERS: u32 = 2;
/// The db bytes of one zstd job, at every level, so that zstd's buffers (a few jobs' input
/// and output) stay small: its default (4 windows: 2 MiB at level 1, 8 MiB at level 3) took a
/// level-3 save to 99 MiB RSS; 1 MiB jobs store 0.06% more than 2 MiB ones at level 1.
pub(crate) const ZSTD_JOB_BYTES: u32 = 1 << 20;
/// Room above [`FLUSH_BYTES`] in a block: zstd writes at most 128 KiB at a time, age 64 KiB.
const BLOCK_SLACK: usize = 256 << 10;

/// What the stream produced.
pub(crate) struct Streamed {
    pub(crate) db_size: u64,
    pub(crate) db_sha256: String,
    pub(crate) object_sha256: String,
    pub(crate) object_size: u64,
}

/// What the compressor thread hands to the store side.
enum Out {
    /// The next stored bytes.
    Bytes(Bytes),
    /// Every stored byte was sent: the zstd frame and the age stream are complete.
    Done,
    /// Compression or encryption failed.
    Failed(SnapshotError),
}

fn codec(operation: &'static str) -> impl Fn(io::Error) -> SnapshotError {
    move |e| SnapshotError::Codec {
        operation,
        reason: e.to_string(),
    }
}

/// The innermost writer of the compressor thread: collects stored bytes into blocks of
/// [`FLUSH_BYTES`] and sends each to the store side, waiting while [`OUT_BLOCKS`] are queued.
struct BlockSender {
    block: Vec<u8>,
    tx: mpsc::Sender<Out>,
}

impl BlockSender {
    fn new(tx: mpsc::Sender<Out>) -> Self {
        BlockSender {
            block: Vec::with_capacity(FLUSH_BYTES + BLOCK_SLACK),
            tx,
        }
    }

    fn send(&mut self, out: Out) -> io::Result<()> {
        self.tx
            .blocking_send(out)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the store side stopped"))
    }

    fn send_block(&mut self) -> io::Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(
            &mut self.block,
            Vec::with_capacity(FLUSH_BYTES + BLOCK_SLACK),
        );
        self.send(Out::Bytes(Bytes::from(full)))
    }

    /// Sends the last block, then [`Out::Done`].
    fn finish(mut self) -> io::Result<()> {
        self.send_block()?;
        self.send(Out::Done)
    }
}

impl Write for BlockSender {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.block.extend_from_slice(buf);
        if self.block.len() >= FLUSH_BYTES {
            self.send_block()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

type ZstdEncoder<W> = zstd::stream::write::Encoder<'static, W>;

/// What the db bytes go through before they are stored.
enum Layers {
    Plain(BlockSender),
    Zstd(ZstdEncoder<BlockSender>),
    Age(age::stream::StreamWriter<BlockSender>),
    ZstdAge(ZstdEncoder<age::stream::StreamWriter<BlockSender>>),
}

impl Layers {
    fn new(request: &SaveRequest, out: BlockSender) -> Result<Self> {
        fn zstd<W: Write>(inner: W, level: i32) -> Result<ZstdEncoder<W>> {
            let mut encoder = ZstdEncoder::new(inner, level).map_err(codec("compress"))?;
            encoder
                .multithread(ZSTD_WORKERS)
                .and_then(|()| {
                    encoder.set_parameter(zstd::stream::raw::CParameter::JobSize(ZSTD_JOB_BYTES))
                })
                .map_err(codec("compress"))?;
            Ok(encoder)
        }
        let level = request.level;
        Ok(match (request.compression, request.encrypt_to.is_empty()) {
            (Compression::Zstd, true) => Layers::Zstd(zstd(out, level)?),
            (Compression::None, true) => Layers::Plain(out),
            (Compression::Zstd, false) => {
                Layers::ZstdAge(zstd(encryptor(&request.encrypt_to, out)?, level)?)
            }
            (Compression::None, false) => Layers::Age(encryptor(&request.encrypt_to, out)?),
        })
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Layers::Plain(w) => w.write_all(bytes),
            Layers::Zstd(w) => w.write_all(bytes),
            Layers::Age(w) => w.write_all(bytes),
            Layers::ZstdAge(w) => w.write_all(bytes),
        }
    }

    /// Ends the zstd frame and the age stream, and sends their last bytes.
    fn finish(self) -> io::Result<()> {
        match self {
            Layers::Plain(w) => w.finish(),
            Layers::Zstd(w) => w.finish()?.finish(),
            Layers::Age(w) => w.finish()?.finish(),
            Layers::ZstdAge(w) => w.finish()?.finish()?.finish(),
        }
    }
}

/// Starts the compressor thread: db bytes from `input` through `layers`, stored bytes out
/// through the layers' [`BlockSender`]. It ends when `input` closes (finishing the frame) or
/// when the store side stops listening; a failure is sent as [`Out::Failed`].
fn spawn_compressor(
    mut layers: Layers,
    mut input: mpsc::Receiver<Vec<u8>>,
    failures: mpsc::Sender<Out>,
) -> Result<()> {
    let run = move || {
        let compressed = (|| {
            while let Some(bytes) = input.blocking_recv() {
                layers.write_all(&bytes)?;
            }
            layers.finish()
        })();
        if let Err(e) = compressed
            && e.kind() != io::ErrorKind::BrokenPipe
        {
            let _ = failures.blocking_send(Out::Failed(codec("compress")(e)));
        }
    };
    std::thread::Builder::new()
        .name("etcdops-compress".into())
        .spawn(run)
        .map(drop)
        .map_err(codec("compress"))
}

/// Aborts a spawned task when dropped (the save failed or was cancelled).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// etcd's chunks, or the error that ended the stream.
type Chunks = std::pin::Pin<Box<dyn Stream<Item = Result<SnapshotChunk>> + Send>>;

/// Stage 1: receives etcd's chunks and hashes the db; returns the trailer check at the end.
fn spawn_receiver(
    mut chunks: Chunks,
    tx: mpsc::Sender<Result<SnapshotChunk>>,
) -> AbortOnDrop<TrailerCheck> {
    AbortOnDrop(tokio::spawn(async move {
        let mut trailer = TrailerCheck::default();
        while let Some(message) = chunks.next().await {
            let failed = message.is_err();
            if let Ok(chunk) = &message {
                trailer.push(&chunk.bytes);
            }
            if tx.send(message).await.is_err() || failed {
                break;
            }
        }
        trailer
    }))
}

/// Streams the snapshot into `upload` through compression and encryption as `request` says,
/// checking etcd's trailer and hashing the stored bytes on the way.
pub(crate) async fn stream_into(
    stream: SnapshotStream,
    upload: &mut Upload,
    request: &SaveRequest,
    progress: &dyn Progress,
) -> Result<Streamed> {
    let endpoint = stream.endpoint().to_string();
    let chunks = futures::stream::try_unfold(stream, |mut stream| async move {
        Ok(stream.next_chunk().await?.map(|chunk| (chunk, stream)))
    });
    pipe(endpoint, Box::pin(chunks), upload, request, progress).await
}

/// Bytes read from a local db file at a time by [`file_into`].
const FILE_CHUNK: usize = 256 << 10;

/// Streams the db in the file `path` (`db_size` bytes) followed by etcd's trailer (the
/// db's SHA-256, `db_sha256`) into `upload`, as [`stream_into`] does a member's stream: the
/// trailer is checked against the bytes read on the way, so a db changed on disk since it
/// was hashed is refused. Used to store a db built locally (a compacted chain).
pub(crate) async fn file_into(
    path: &std::path::Path,
    db_size: u64,
    db_sha256: &str,
    upload: &mut Upload,
    request: &SaveRequest,
    progress: &dyn Progress,
) -> Result<Streamed> {
    let name = path.display().to_string();
    let trailer = hex::decode(db_sha256).map_err(|e| SnapshotError::Codec {
        operation: "read",
        reason: format!("the db's SHA-256 '{db_sha256}' is not hex: {e}"),
    })?;
    let file = tokio::fs::File::open(path).await.map_err(|source| {
        SnapshotError::Data(etcd_data::Error::ReadFile {
            path: name.clone(),
            source,
        })
    })?;
    let read_failed = name.clone();
    let total = db_size + trailer.len() as u64;
    // (file, bytes of the db sent so far, trailer still to send)
    let state = (file, 0u64, Some(trailer));
    let chunks = futures::stream::try_unfold(state, move |(mut file, sent, trailer)| {
        let read_failed = read_failed.clone();
        async move {
            use tokio::io::AsyncReadExt;
            if sent < db_size {
                let want =
                    usize::try_from(db_size - sent).map_or(FILE_CHUNK, |n| n.min(FILE_CHUNK));
                let mut bytes = vec![0u8; want];
                file.read_exact(&mut bytes).await.map_err(|source| {
                    SnapshotError::Data(etcd_data::Error::ReadFile {
                        path: read_failed,
                        source,
                    })
                })?;
                let sent = sent + want as u64;
                let chunk = SnapshotChunk {
                    bytes,
                    remaining_bytes: total - sent,
                };
                return Ok(Some((chunk, (file, sent, trailer))));
            }
            Ok(trailer.map(|bytes| {
                let chunk = SnapshotChunk {
                    bytes,
                    remaining_bytes: 0,
                };
                (chunk, (file, sent, None))
            }))
        }
    });
    pipe(name, Box::pin(chunks), upload, request, progress).await
}

/// [`stream_into`] over any stream of chunks (`endpoint` names its member in errors).
async fn pipe(
    endpoint: String,
    chunks: Chunks,
    upload: &mut Upload,
    request: &SaveRequest,
    progress: &dyn Progress,
) -> Result<Streamed> {
    let (out_tx, mut out_rx) = mpsc::channel(OUT_BLOCKS);
    let layers = Layers::new(request, BlockSender::new(out_tx.clone()))?;
    let (db_tx, db_rx) = mpsc::channel::<Vec<u8>>(CHANNEL_CHUNKS);
    spawn_compressor(layers, db_rx, out_tx)?;
    let (chunk_tx, mut chunk_rx) = mpsc::channel(CHANNEL_CHUNKS);
    let receiver = spawn_receiver(chunks, chunk_tx);

    // The receiver's chunks to the compressor, with progress.
    let feed = async move {
        let mut started = false;
        while let Some(message) = chunk_rx.recv().await {
            let chunk = message?;
            if !started {
                progress.start(Some(chunk.bytes.len() as u64 + chunk.remaining_bytes));
                started = true;
            }
            progress.advance(chunk.bytes.len() as u64);
            if db_tx.send(chunk.bytes).await.is_err() {
                // The compressor stopped: the store side reports why.
                return Ok(None);
            }
        }
        drop(db_tx);
        let mut receiver = receiver;
        let trailer = (&mut receiver.0).await.map_err(|e| SnapshotError::Codec {
            operation: "receive",
            reason: e.to_string(),
        })?;
        Ok::<_, SnapshotError>(Some(trailer))
    };
    // Stage 3: the stored bytes hashed and handed to the store.
    let store = async {
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        loop {
            match out_rx.recv().await {
                Some(Out::Bytes(bytes)) => {
                    hasher.update(&bytes);
                    size += bytes.len() as u64;
                    upload.write(bytes).await?;
                }
                Some(Out::Done) => return Ok((hex::encode(hasher.finalize()), size)),
                Some(Out::Failed(e)) => return Err(e),
                None => {
                    return Err(SnapshotError::Codec {
                        operation: "compress",
                        reason: "the compressor thread stopped".into(),
                    });
                }
            }
        }
    };
    let (trailer, (object_sha256, object_size)) = futures::try_join!(feed, store)?;
    let Some(trailer) = trailer else {
        // The compressor stopped taking bytes, yet the store side saw the frame end.
        return Err(SnapshotError::Codec {
            operation: "compress",
            reason: "the compressor stopped before the end of the stream".into(),
        });
    };
    let (db_size, db_sha256) = trailer.finish(endpoint)?;
    Ok(Streamed {
        db_size,
        db_sha256,
        object_sha256,
        object_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::{local_store, names};
    use crate::crypt::Recipients;
    use crate::save::TRAILER_LEN;

    /// A db-like stream: `len` bytes (half runs, half pseudo-random) and etcd's trailer, in
    /// etcd's 32 KiB chunks.
    fn snapshot_stream(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut db: Vec<u8> = (0..len)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if (i / 4096) % 2 == 0 {
                    b'a'
                } else {
                    state as u8
                }
            })
            .collect();
        let trailer = Sha256::digest(&db);
        db.extend_from_slice(&trailer);
        db
    }

    fn chunks_of(bytes: &[u8], fail_after: Option<usize>) -> Chunks {
        let total = bytes.len() as u64;
        let mut sent = 0u64;
        let mut items: Vec<Result<SnapshotChunk>> = bytes
            .chunks(32 << 10)
            .map(|c| {
                sent += c.len() as u64;
                Ok(SnapshotChunk {
                    bytes: c.to_vec(),
                    remaining_bytes: total - sent,
                })
            })
            .collect();
        if let Some(n) = fail_after {
            items.truncate(n);
            items.push(Err(SnapshotError::NoSource {
                reason: "the member went away".into(),
            }));
        }
        Box::pin(futures::stream::iter(items))
    }

    /// Saves `stream` under `name` in a fresh local store; returns the result and the store.
    async fn save(
        stream: &[u8],
        fail_after: Option<usize>,
        request: &SaveRequest,
    ) -> (Result<Streamed>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let mut upload = store.begin_upload("b.db.zst").await.unwrap();
        let chunks = chunks_of(stream, fail_after);
        let result = pipe(
            "http://m1:2379".into(),
            chunks,
            &mut upload,
            request,
            &crate::progress::NoProgress,
        )
        .await;
        match &result {
            Ok(_) => drop(upload.complete().await.unwrap()),
            Err(_) => upload.abort().await.unwrap(),
        }
        (result, dir)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_stored_object_decompresses_to_the_stream_and_its_hashes_are_right() {
        let stream = snapshot_stream(5 << 20);
        for compression in [Compression::Zstd, Compression::None] {
            let request = SaveRequest {
                compression,
                level: 1,
                ..SaveRequest::default()
            };
            let (result, dir) = save(&stream, None, &request).await;
            let streamed = result.unwrap();
            let stored = std::fs::read(dir.path().join("b.db.zst")).unwrap();
            assert_eq!(streamed.object_size, stored.len() as u64);
            assert_eq!(streamed.object_sha256, hex::encode(Sha256::digest(&stored)));
            assert_eq!(streamed.db_size, (stream.len() - TRAILER_LEN) as u64);
            let db = &stream[..stream.len() - TRAILER_LEN];
            assert_eq!(streamed.db_sha256, hex::encode(Sha256::digest(db)));
            let plain = match compression {
                Compression::Zstd => {
                    assert!(stored.len() < stream.len() * 3 / 4, "{}", stored.len());
                    zstd::decode_all(&stored[..]).unwrap()
                }
                Compression::None => stored,
            };
            assert!(
                plain == stream,
                "{compression:?}: the stream comes back as it was"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_encrypted_object_decrypts_and_decompresses_to_the_stream() {
        let identity = age::x25519::Identity::generate();
        let mut recipients = Recipients::none();
        recipients
            .add(&identity.to_public().to_string(), "test")
            .unwrap();
        let stream = snapshot_stream(3 << 20);
        let request = SaveRequest {
            encrypt_to: recipients,
            ..SaveRequest::default()
        };
        let (result, dir) = save(&stream, None, &request).await;
        let streamed = result.unwrap();
        let stored = std::fs::read(dir.path().join("b.db.zst")).unwrap();
        assert_eq!(streamed.object_sha256, hex::encode(Sha256::digest(&stored)));
        let decryptor = age::Decryptor::new(&stored[..]).unwrap();
        let mut reader = decryptor
            .decrypt(std::iter::once(&identity as &dyn age::Identity))
            .unwrap();
        let mut compressed = Vec::new();
        io::Read::read_to_end(&mut reader, &mut compressed).unwrap();
        assert!(zstd::decode_all(&compressed[..]).unwrap() == stream);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bad_trailer_or_a_broken_stream_fails_and_leaves_nothing() {
        let mut stream = snapshot_stream(2 << 20);
        let last = stream.len() - 1;
        stream[last] ^= 1;
        let (result, dir) = save(&stream, None, &SaveRequest::default()).await;
        assert!(
            matches!(result, Err(SnapshotError::TrailerMismatch { .. })),
            "{:?}",
            result.err()
        );
        assert!(names(&local_store(&dir)).await.is_empty());

        let stream = snapshot_stream(2 << 20);
        let (result, dir) = save(&stream, Some(10), &SaveRequest::default()).await;
        let text = result.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("the member went away"), "{text}");
        assert!(names(&local_store(&dir)).await.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_db_file_is_stored_with_its_trailer_and_a_wrong_hash_is_refused() {
        let stream = snapshot_stream((1 << 20) + 4096);
        let db = &stream[..stream.len() - TRAILER_LEN];
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), db).unwrap();
        let sha = hex::encode(Sha256::digest(db));
        let dir = tempfile::tempdir().unwrap();
        let store = local_store(&dir);
        let request = SaveRequest::default();
        let mut upload = store.begin_upload("c.db.zst").await.unwrap();
        let streamed = file_into(
            file.path(),
            db.len() as u64,
            &sha,
            &mut upload,
            &request,
            &crate::progress::NoProgress,
        )
        .await
        .unwrap();
        upload.complete().await.unwrap();
        assert_eq!(streamed.db_sha256, sha);
        assert_eq!(streamed.db_size, db.len() as u64);
        let stored = std::fs::read(dir.path().join("c.db.zst")).unwrap();
        assert!(
            zstd::decode_all(&stored[..]).unwrap() == stream,
            "db || sha256(db)"
        );

        // A db that no longer matches the hash it was given (changed on disk): refused.
        let wrong = "00".repeat(32);
        let mut upload = store.begin_upload("d.db.zst").await.unwrap();
        let result = file_into(
            file.path(),
            db.len() as u64,
            &wrong,
            &mut upload,
            &request,
            &crate::progress::NoProgress,
        )
        .await;
        upload.abort().await.unwrap();
        assert!(
            matches!(result, Err(SnapshotError::TrailerMismatch { .. })),
            "{:?}",
            result.err()
        );
    }

    #[test]
    fn the_compressor_stops_when_the_store_side_stops_listening() {
        let (tx, rx) = mpsc::channel(1);
        let mut sender = BlockSender::new(tx);
        drop(rx);
        let err = sender.write_all(&vec![7u8; FLUSH_BYTES]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
