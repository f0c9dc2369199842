//! The `latency` and `churn` findings, from each member's Prometheus `/metrics`: WAL fsync and
//! backend commit p99 (from the histograms' buckets) against etcd's guidance, and the leader
//! changes, failed proposals and slow applies each member counted since it started.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{CheckOptions, Finding, Severity, finding};
use crate::client::Client;
use crate::cluster::ClusterView;
use crate::tls;

const WAL_FSYNC: &str = "etcd_disk_wal_fsync_duration_seconds";
const BACKEND_COMMIT: &str = "etcd_disk_backend_commit_duration_seconds";
const LEADER_CHANGES: &str = "etcd_server_leader_changes_seen_total";
const PROPOSALS_FAILED: &str = "etcd_server_proposals_failed_total";
const SLOW_APPLIES: &str = "etcd_server_slow_apply_total";
/// The most of a `/metrics` answer read (etcd's is ~100-300 KiB).
const MAX_METRICS_BYTES: u64 = 32 * 1024 * 1024;

/// A latency histogram, summarized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latency {
    /// Observations since the member started.
    pub count: u64,
    /// The 99th percentile, in milliseconds, interpolated within its bucket as Prometheus'
    /// `histogram_quantile` does.
    pub p99_ms: f64,
}

/// What one member's `/metrics` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberMetrics {
    /// The member (name, or the metrics URL when given by hand).
    pub member: String,
    /// The URL read.
    pub url: String,
    /// `etcd_disk_wal_fsync_duration_seconds`.
    pub wal_fsync: Option<Latency>,
    /// `etcd_disk_backend_commit_duration_seconds`.
    pub backend_commit: Option<Latency>,
    /// `etcd_server_leader_changes_seen_total`.
    pub leader_changes: Option<u64>,
    /// `etcd_server_proposals_failed_total`.
    pub proposals_failed: Option<u64>,
    /// `etcd_server_slow_apply_total`.
    pub slow_applies: Option<u64>,
    /// Why it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl MemberMetrics {
    /// Whether any of the series judged here was found (an answer without any is not etcd's).
    fn has_etcd_series(&self) -> bool {
        self.wal_fsync.is_some()
            || self.backend_commit.is_some()
            || self.leader_changes.is_some()
            || self.proposals_failed.is_some()
            || self.slow_applies.is_some()
    }
}

/// Summarizes a Prometheus text exposition (what etcd's `/metrics` answers).
pub fn parse_metrics(member: &str, url: &str, text: &str) -> MemberMetrics {
    let mut buckets: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut counters: BTreeMap<&str, f64> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // A count cannot be NaN or infinite: such a sample is not one to judge from.
        let Some((series, value)) = split_sample(line).filter(|(_, v)| v.is_finite()) else {
            continue;
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (series, ""),
        };
        if let Some(histogram) = name.strip_suffix("_bucket")
            && (histogram == WAL_FSYNC || histogram == BACKEND_COMMIT)
            && let Some(le) = label(labels, "le")
        {
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                match le.parse() {
                    Ok(b) => b,
                    Err(_) => continue,
                }
            };
            buckets.entry(histogram).or_default().push((bound, value));
        } else if [LEADER_CHANGES, PROPOSALS_FAILED, SLOW_APPLIES].contains(&name) {
            *counters.entry(name).or_default() += value;
        }
    }
    let mut latency = |name: &str| buckets.get_mut(name).and_then(|b| summarize(b));
    let counter = |name: &str| counters.get(name).map(|v| v.max(0.0) as u64);
    MemberMetrics {
        member: member.to_string(),
        url: url.to_string(),
        wal_fsync: latency(WAL_FSYNC),
        backend_commit: latency(BACKEND_COMMIT),
        leader_changes: counter(LEADER_CHANGES),
        proposals_failed: counter(PROPOSALS_FAILED),
        slow_applies: counter(SLOW_APPLIES),
        error: None,
    }
}

/// `name{labels} value [timestamp]` -> (`name{labels}`, value).
fn split_sample(line: &str) -> Option<(&str, f64)> {
    let end_of_series = match line.find('}') {
        Some(close) => close + 1,
        None => line.find(char::is_whitespace)?,
    };
    let (series, rest) = line.split_at(end_of_series);
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some((series.trim(), value))
}

/// The value of label `key` in `a="1",le="0.5"`.
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split(',').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

/// Count and p99 of cumulative buckets `(upper bound, count)`; `None` without observations.
fn summarize(buckets: &mut [(f64, f64)]) -> Option<Latency> {
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let p99 = quantile(0.99, buckets)?;
    Some(Latency {
        count: total as u64,
        p99_ms: p99 * 1000.0,
    })
}

/// Prometheus' `histogram_quantile` over sorted cumulative buckets: linear within the
/// bucket the rank falls in (from 0 for the first); the highest finite bound when it falls in
/// the `+Inf` bucket.
fn quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(bound, count) in buckets {
        if count >= rank {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let width = count - lower.1;
            let share = if width > 0.0 {
                (rank - lower.1) / width
            } else {
                1.0
            };
            return Some(lower.0 + (bound - lower.0) * share);
        }
        lower = (bound, count);
    }
    Some(lower.0)
}

/// Reads `url` with one HTTP/1.0 GET (so the answer is not chunked and ends when the
/// connection closes), over TLS for `https://`, bounded by `limit` and a size cap.
async fn fetch(
    settings: &crate::config::TlsSettings,
    url: &str,
    limit: std::time::Duration,
) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    let host = parsed.host_str().ok_or("the URL has no host")?.to_string();
    let port = parsed.port_or_known_default().unwrap_or(2379);
    let host_port = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let path = match parsed.query() {
        Some(q) => format!("{}?{q}", parsed.path()),
        None => parsed.path().to_string(),
    };
    let request = format!("GET {path} HTTP/1.0\r\nHost: {host_port}\r\nAccept: text/plain\r\n\r\n");
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(&host_port)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        match parsed.scheme() {
            "https" => {
                let config = tls::http1_client_config(settings).map_err(|e| e.to_string())?;
                let name = tls::server_name(settings, &host).map_err(|e| e.to_string())?;
                let stream = tokio_rustls::TlsConnector::from(Arc::clone(&config))
                    .connect(name, tcp)
                    .await
                    .map_err(|e| tls::explain_handshake_error(&e.to_string(), settings).reason)?;
                exchange(stream, &request).await
            }
            "http" => exchange(tcp, &request).await,
            other => Err(format!(
                "unsupported scheme '{other}': use http:// or https://"
            )),
        }
    };
    let answer = tokio::time::timeout(limit, exchange)
        .await
        .map_err(|_| format!("no answer within {limit:?}"))??;
    body_of(&answer)
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    request: &str,
) -> Result<Vec<u8>, String> {
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send the request: {e}"))?;
    let mut answer = Vec::new();
    let read = (&mut stream)
        .take(MAX_METRICS_BYTES + 1)
        .read_to_end(&mut answer)
        .await;
    // A cut answer may end inside a histogram: never judged as if it were whole.
    let too_big = || {
        format!(
            "the answer is larger than {} MiB: not etcd's metrics",
            MAX_METRICS_BYTES >> 20
        )
    };
    match read {
        Ok(_) if answer.len() as u64 > MAX_METRICS_BYTES => Err(too_big()),
        Ok(_) => Ok(answer),
        // A TLS server may close without close_notify; what arrived is complete when the
        // status line and headers are there and the body parses.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => Ok(answer),
        Err(e) => Err(format!("cannot read the answer: {e}")),
    }
}

/// The body of a 200 answer, or what the status says.
fn body_of(answer: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("the answer is not HTTP (no end of headers)")?;
    let status = head.lines().next().unwrap_or_default();
    match status.split_whitespace().nth(1) {
        Some("200") => Ok(body.to_string()),
        _ => Err(format!("the server answered '{status}'")),
    }
}

impl Client {
    /// The `/metrics` of every member that answered (at its client URL), or the given URLs
    /// instead (etcd's `--listen-metrics-urls`), read at once.
    pub(crate) async fn member_metrics(
        &self,
        view: &ClusterView,
        metrics_urls: &[String],
    ) -> Vec<MemberMetrics> {
        let targets: Vec<(String, String)> = if metrics_urls.is_empty() {
            // A member that did not answer is the `members` finding's, not a metrics one.
            view.members
                .iter()
                .filter(|m| m.status.is_some())
                .filter_map(|m| {
                    let endpoint = m.endpoint.as_ref()?;
                    let name = if m.member.name.is_empty() {
                        m.member.id.to_string()
                    } else {
                        m.member.name.clone()
                    };
                    Some((name, format!("{}/metrics", endpoint.trim_end_matches('/'))))
                })
                .collect()
        } else {
            metrics_urls
                .iter()
                .map(|u| {
                    let url = if url::Url::parse(u).is_ok_and(|p| p.path() != "/") {
                        u.clone()
                    } else {
                        format!("{}/metrics", u.trim_end_matches('/'))
                    };
                    (url.clone(), url)
                })
                .collect()
        };
        let settings = &self.config().tls;
        let limit = self.config().command_timeout;
        let reads = targets.iter().map(|(member, url)| async move {
            // A URL given by hand may carry credentials: never shown.
            let shown = etcd_common::redact_endpoint(url);
            let member = if member == url { &shown } else { member };
            match fetch(settings, url, limit).await {
                Ok(text) => {
                    let m = parse_metrics(member, &shown, &text);
                    if m.has_etcd_series() {
                        m
                    } else {
                        // Another service's page (or an empty one) is not "all fine".
                        MemberMetrics {
                            error: Some(
                                "the answer holds none of etcd's disk and raft metrics".into(),
                            ),
                            ..m
                        }
                    }
                }
                Err(error) => MemberMetrics {
                    error: Some(error),
                    ..parse_metrics(member, &shown, "")
                },
            }
        });
        futures::future::join_all(reads).await
    }
}

/// The `latency` finding: each member's WAL fsync and backend commit p99 against the
/// thresholds, judged only from histograms with enough observations.
pub fn latency_finding(metrics: &[MemberMetrics], options: &CheckOptions) -> Finding {
    if metrics.is_empty() {
        return finding(
            "latency",
            Severity::Warning,
            "no member answered, so no metrics were read: disk latency unknown".into(),
        );
    }
    let mut severity = Severity::Ok;
    let mut slow = Vec::new();
    let mut seen = Vec::new();
    for m in metrics {
        if let Some(error) = &m.error {
            severity = severity.max(Severity::Warning);
            slow.push(format!(
                "{}: metrics could not be read from {} ({error}); give the members' metrics URLs if they listen elsewhere",
                m.member, m.url
            ));
            continue;
        }
        for (what, latency, limit, advice) in [
            (
                "WAL fsync",
                &m.wal_fsync,
                options.fsync_p99_warn_ms,
                "the disk is too slow for etcd: use a dedicated SSD, away from noisy neighbours",
            ),
            (
                "backend commit",
                &m.backend_commit,
                options.commit_p99_warn_ms,
                "the disk is too slow for etcd (or the db is very large): use a faster disk, defragment",
            ),
        ] {
            let Some(latency) = latency else { continue };
            if latency.count < options.latency_min_samples {
                continue;
            }
            seen.push(format!("{} {what} p99 {:.1} ms", m.member, latency.p99_ms));
            if latency.p99_ms > limit {
                severity = severity.max(Severity::Warning);
                slow.push(format!(
                    "{}: {what} p99 is {:.1} ms over {} operations, above {limit} ms: {advice}",
                    m.member, latency.p99_ms, latency.count
                ));
            }
        }
    }
    if !slow.is_empty() {
        return finding("latency", severity, slow.join("; "));
    }
    if seen.is_empty() {
        return finding(
            "latency",
            Severity::Ok,
            format!(
                "too few disk operations yet (fewer than {}) to judge latency",
                options.latency_min_samples
            ),
        );
    }
    finding(
        "latency",
        Severity::Ok,
        format!("disk latency within etcd's guidance: {}", seen.join(", ")),
    )
}

/// The `churn` finding: leader changes, failed proposals and slow applies each member counted
/// since it started, against their thresholds.
pub fn churn_finding(metrics: &[MemberMetrics], options: &CheckOptions) -> Finding {
    let mut notes = Vec::new();
    let mut read = 0;
    for m in metrics.iter().filter(|m| m.error.is_none()) {
        read += 1;
        for (what, value, limit, advice) in [
            (
                "leader changes",
                m.leader_changes,
                options.max_leader_changes,
                "look for slow disks, network trouble or overloaded members",
            ),
            (
                "failed proposals",
                m.proposals_failed,
                options.max_failed_proposals,
                "proposals fail during elections and without quorum: look at the leader changes and members",
            ),
            (
                "slow applies",
                m.slow_applies,
                options.max_slow_applies,
                "applying entries took over 100 ms: look at disk latency and expensive requests",
            ),
        ] {
            if let Some(value) = value
                && value > limit
            {
                notes.push(format!(
                    "{}: {value} {what} since it started (more than {limit}): {advice}",
                    m.member
                ));
            }
        }
    }
    if read == 0 {
        return finding(
            "churn",
            Severity::Warning,
            "no member's metrics could be read: leader changes and failed proposals unknown".into(),
        );
    }
    if notes.is_empty() {
        finding(
            "churn",
            Severity::Ok,
            format!(
                "leader changes, failed proposals and slow applies within limits on {read} member(s)"
            ),
        )
    } else {
        finding("churn", Severity::Warning, notes.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(name: &str, counts: &[(&str, u64)]) -> String {
        let mut out = format!("# TYPE {name} histogram\n");
        for (le, count) in counts {
            out.push_str(&format!("{name}_bucket{{le=\"{le}\"}} {count}\n"));
        }
        let total = counts.last().map(|c| c.1).unwrap_or_default();
        out.push_str(&format!("{name}_sum 1.5\n{name}_count {total}\n"));
        out
    }

    #[test]
    fn p99_is_interpolated_within_its_bucket() {
        let text = histogram(
            WAL_FSYNC,
            &[("0.001", 50), ("0.002", 90), ("0.004", 100), ("+Inf", 100)],
        );
        let m = parse_metrics("m0", "u", &text);
        let fsync = m.wal_fsync.expect("parsed");
        assert_eq!(fsync.count, 100);
        // rank 99 in (0.002, 0.004] holding 90..100: 0.002 + 0.002 * 9/10.
        assert!((fsync.p99_ms - 3.8).abs() < 1e-9, "{fsync:?}");
        assert_eq!(m.backend_commit, None);
    }

    #[test]
    fn a_slow_histogram_is_a_warning_and_a_short_one_is_not_judged() {
        let slow = histogram(
            WAL_FSYNC,
            &[
                ("0.008", 10),
                ("0.016", 500),
                ("0.032", 1000),
                ("+Inf", 1000),
            ],
        ) + "etcd_server_leader_changes_seen_total 1\n";
        let options = CheckOptions::default();
        let m = parse_metrics("m0", "http://x/metrics", &slow);
        let f = latency_finding(std::slice::from_ref(&m), &options);
        assert_eq!(f.severity, Severity::Warning, "{f:?}");
        assert!(f.message.contains("m0: WAL fsync p99 is 31.7 ms"), "{f:?}");
        let short = histogram(WAL_FSYNC, &[("0.512", 5), ("+Inf", 5)]);
        let f = latency_finding(&[parse_metrics("m0", "u", &short)], &options);
        assert_eq!(f.severity, Severity::Ok, "{f:?}");
        assert!(f.message.contains("too few"), "{f:?}");
        assert_eq!(churn_finding(&[m], &options).severity, Severity::Ok);
    }

    #[test]
    fn counters_above_their_limits_are_churn() {
        let text = "etcd_server_leader_changes_seen_total 9\n\
                    etcd_server_proposals_failed_total 2\n\
                    etcd_server_slow_apply_total 0\n";
        let m = parse_metrics("m1", "u", text);
        assert_eq!(m.leader_changes, Some(9));
        assert_eq!(m.proposals_failed, Some(2));
        assert_eq!(m.slow_applies, Some(0));
        let f = churn_finding(&[m], &CheckOptions::default());
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("m1: 9 leader changes"), "{f:?}");
        assert!(!f.message.contains("failed proposals since"), "{f:?}");
    }

    #[test]
    fn unreadable_metrics_are_a_warning_that_says_where() {
        let m = MemberMetrics {
            error: Some("cannot connect".into()),
            ..parse_metrics("m2", "http://10.0.0.3:2381/metrics", "")
        };
        let f = latency_finding(std::slice::from_ref(&m), &CheckOptions::default());
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("http://10.0.0.3:2381/metrics"), "{f:?}");
        assert_eq!(
            churn_finding(&[m], &CheckOptions::default()).severity,
            Severity::Warning
        );
    }

    #[test]
    fn http_answers_other_than_200_are_errors() {
        assert_eq!(
            body_of(b"HTTP/1.0 200 OK\r\nA: b\r\n\r\nx 1\n"),
            Ok("x 1\n".into())
        );
        let err = body_of(b"HTTP/1.0 404 Not Found\r\n\r\n").unwrap_err();
        assert!(err.contains("404"), "{err}");
    }

    #[test]
    fn nan_and_infinite_counts_are_not_judged_as_fine() {
        let text = format!(
            "{WAL_FSYNC}_bucket{{le=\"0.001\"}} NaN\n{WAL_FSYNC}_bucket{{le=\"+Inf\"}} +Inf\n\
             {LEADER_CHANGES} NaN\n"
        );
        let m = parse_metrics("m0", "u", &text);
        assert_eq!(m.wal_fsync, None, "{m:?}");
        assert_eq!(m.leader_changes, None, "{m:?}");
        assert!(!m.has_etcd_series());
        let page = parse_metrics("m0", "u", "<html>not metrics</html>\nup 1\n");
        assert!(!page.has_etcd_series());
        assert!(parse_metrics("m0", "u", &format!("{SLOW_APPLIES} 0\n")).has_etcd_series());
    }
}
