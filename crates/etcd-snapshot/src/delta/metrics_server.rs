//! `backup run --metrics-addr`: a small HTTP server beside the run, serving `/metrics` (the
//! run's metrics in Prometheus' text format), `/healthz` (the process answers) and `/readyz`
//! (200 while the chain is current, 503 with the reason when not). It lives as long as the
//! run: dropping it stops it.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use chrono::Utc;
use etcd_common::InvalidOption;
use tokio::task::JoinHandle;

use super::metrics::{METRICS_CONTENT_TYPE, RunMetrics};
use crate::error::{Result, SnapshotError};
use crate::opts;

/// The server, running until dropped.
#[derive(Debug)]
pub(super) struct MetricsServer {
    task: JoinHandle<()>,
}

impl MetricsServer {
    /// Listens on `addr` (refused at once, with the reason, when it cannot) and serves
    /// `metrics` until dropped.
    pub(super) async fn start(addr: SocketAddr, metrics: Arc<RunMetrics>) -> Result<MetricsServer> {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            SnapshotError::from(InvalidOption::new(
                opts::METRICS_ADDR,
                format!("cannot listen on {addr}: {e}"),
            ))
        })?;
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
        Ok(MetricsServer { task })
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
