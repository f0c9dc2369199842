//! `backup run --metrics-addr`: a small HTTP server beside the run, serving `/metrics` (the
//! run's metrics in Prometheus' text format), `/healthz` (the process answers) and `/readyz`
//! (200 while the chain is current, 503 with the reason when not). It lives as long as the
//! run: dropping it stops it.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::serve::Listener;
use chrono::Utc;
use etcd_common::InvalidOption;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Sleep;

use super::metrics::{METRICS_CONTENT_TYPE, RunMetrics};
use crate::error::{Result, SnapshotError};
use crate::opts;

/// Connections served at once: a scraper or two and a probe need a few; more wait in the
/// kernel's backlog, so that a flood of connections never takes the file descriptors the
/// backups need (the store, etcd, the metrics file).
const MAX_CONNECTIONS: usize = 32;

/// The longest one connection is kept (a request that never completes, a client that never
/// reads, an idle keep-alive): its slot is then free for the next one.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(30);

/// The server, running until dropped.
#[derive(Debug)]
pub(super) struct MetricsServer {
    task: JoinHandle<()>,
    /// The address it listens on (the port chosen, for port 0): for its tests.
    #[cfg_attr(not(test), expect(dead_code))]
    local_addr: SocketAddr,
}

impl MetricsServer {
    /// Listens on `addr` (refused at once, with the reason, when it cannot) and serves
    /// `metrics` until dropped.
    pub(super) async fn start(addr: SocketAddr, metrics: Arc<RunMetrics>) -> Result<MetricsServer> {
        MetricsServer::start_bounded(addr, metrics, MAX_CONNECTIONS, CONNECTION_LIFETIME).await
    }

    /// [`MetricsServer::start`], serving at most `connections` at once, each for at most
    /// `lifetime`.
    async fn start_bounded(
        addr: SocketAddr,
        metrics: Arc<RunMetrics>,
        connections: usize,
        lifetime: Duration,
    ) -> Result<MetricsServer> {
        let listener = TcpListener::bind(addr).await.map_err(|e| {
            SnapshotError::from(InvalidOption::new(
                opts::METRICS_ADDR,
                format!("cannot listen on {addr}: {e}"),
            ))
        })?;
        let local_addr = listener.local_addr().unwrap_or(addr);
        let listener = Bounded {
            listener,
            slots: Arc::new(Semaphore::new(connections)),
            lifetime,
        };
        let router = Router::new()
            .route("/metrics", get(serve_metrics))
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(serve_readiness))
            .with_state(metrics);
        let task = tokio::spawn(async move {
            // It ends only with the run (the task is aborted) or when accepting fails for
            // good; the backups go on without it either way.
            let _ = axum::serve(listener, router).await;
        });
        Ok(MetricsServer { task, local_addr })
    }

    /// The address it listens on (the port chosen, for port 0).
    #[cfg(test)]
    fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

/// A listener that accepts a connection only when one of its slots is free.
struct Bounded {
    listener: TcpListener,
    slots: Arc<Semaphore>,
    lifetime: Duration,
}

impl Listener for Bounded {
    type Io = Slot;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Slot, SocketAddr) {
        loop {
            // Never closed: a permit always comes once a connection ends.
            let Ok(permit) = self.slots.clone().acquire_owned().await else {
                std::future::pending::<()>().await;
                continue;
            };
            match self.listener.accept().await {
                Ok((stream, peer)) => {
                    let slot = Slot {
                        stream,
                        deadline: Box::pin(tokio::time::sleep(self.lifetime)),
                        _permit: permit,
                    };
                    return (slot, peer);
                }
                // Out of file descriptors, or the peer gone already: wait a little, as
                // axum's own listener does.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// One accepted connection: its slot is freed when it is closed; past its deadline every read
/// and write fails, so that it is closed.
struct Slot {
    stream: TcpStream,
    deadline: Pin<Box<Sleep>>,
    _permit: OwnedSemaphorePermit,
}

impl Slot {
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.deadline.as_mut().poll(cx).is_ready()
    }
}

fn expired_error() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection kept too long")
}

impl AsyncRead for Slot {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.expired(cx) {
            return Poll::Ready(Err(expired_error()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Slot {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.expired(cx) {
            return Poll::Ready(Err(expired_error()));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.expired(cx) {
            return Poll::Ready(Err(expired_error()));
        }
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_metrics(State(metrics): State<Arc<RunMetrics>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        metrics.render(Utc::now()),
    )
}

async fn serve_readiness(State(metrics): State<Arc<RunMetrics>>) -> impl IntoResponse {
    let readiness = metrics.readiness(Utc::now());
    let (status, verdict) = if readiness.ready {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    };
    (status, format!("{verdict}: {}\n", readiness.reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn open_descriptors() -> usize {
        std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
    }

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_flood_of_stalled_connections_holds_few_descriptors_and_expires() {
        let metrics = Arc::new(RunMetrics::new(
            Duration::from_secs(3600),
            Duration::from_secs(10),
        ));
        let lifetime = Duration::from_millis(200);
        let server =
            MetricsServer::start_bounded("127.0.0.1:0".parse().unwrap(), metrics, 8, lifetime)
                .await
                .unwrap();
        let addr = server.local_addr();
        let before = open_descriptors();
        // Each sends half a request and never finishes it.
        let mut stalled = Vec::new();
        for _ in 0..300 {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream
                .write_all(b"GET /metrics HTTP/1.1\r\nHo")
                .await
                .unwrap();
            stalled.push(stream);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let held = open_descriptors().saturating_sub(before);
        // The 300 client sockets are this process' too: the server holds at most its 8
        // (some slack for the other tests of this process).
        assert!(
            held < 300 + 8 + 40,
            "{held} descriptors held for 300 connections"
        );
        // The stalled ones expire: the endpoint answers again.
        let answer = tokio::time::timeout(Duration::from_secs(30), get(addr, "/healthz"))
            .await
            .expect("/healthz answers once the stalled connections expired");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        drop(stalled);
    }
}
