//! `check` with everything etcd-core cannot see on its own: the certificates on this host's
//! disk (when a platform is detected), the freshness and soundness of the newest backup of
//! this cluster in a store, and this host's free space for the data dir. Both front-ends run
//! this one function, so `etcdops check` and `etcd_cluster_info` report the same findings.

use crate::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use etcd_core::{
    CertificateRole, CertificateStatus, CheckOptions, CheckReport, Client, DEFAULT_QUOTA_BYTES,
    Finding, MemberId, Severity, certificates_finding,
};
use etcd_k8s::{Platform, PlatformInfo, PlatformRequest, detect_platform};
use etcd_snapshot::{
    BackupEntry, NoProgress, SnapshotError, list_backups, verify_backup, verify_chain,
};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Error, Result};
use crate::snapshot::{IdentitySettings, StoreSettings};
use etcd_common::Hint;

/// What to check beyond the cluster itself, with every threshold.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CheckRequest {
    /// The cluster's thresholds (certificates, latency, churn, progress, db size).
    #[serde(flatten)]
    pub options: CheckOptions,
    /// The store holding this cluster's backups: its newest complete backup must be recent
    /// and verify.
    pub store: Option<String>,
    /// How the store is reached.
    #[serde(flatten)]
    pub store_settings: StoreSettings,
    /// The identities of encrypted backups (to verify them).
    #[serde(flatten)]
    pub identity: IdentitySettings,
    /// The newest backup older than this is a warning (twice as old: critical).
    #[serde(deserialize_with = "max_backup_age")]
    #[schemars(with = "Option<String>")]
    pub max_backup_age: Option<Duration>,
    /// Only judge the backup's age and manifest, without downloading it to verify it.
    pub skip_backup_verify: bool,
    /// The directory standing for `/` where the platform is detected (default `/`).
    #[schemars(skip)] // the caller's (a module's `platform_root` is a connection option)
    pub platform_root: Option<PathBuf>,
    /// This member's data dir on this host (default: the detected platform's).
    pub data_dir: Option<PathBuf>,
}

fn max_backup_age<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Duration>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| {
            etcd_common::parse_duration(&text)
                .map_err(|e| serde::de::Error::custom(format!("max_backup_age: {e}")))
        })
        .transpose()
}

/// The newest complete backup of the cluster, as judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackupFreshness {
    /// The store looked in.
    pub store: String,
    /// The backup (object name), when there is one.
    pub object: Option<String>,
    /// The newest revision it (with its chain of delta segments) holds.
    pub revision: Option<i64>,
    /// When that revision was safely stored.
    pub as_of: Option<DateTime<Utc>>,
    /// How old that is, in seconds.
    pub age_seconds: Option<i64>,
    /// Whether it (and its chain) verified; `None` when not verified.
    pub verified: Option<bool>,
}

/// This host's disk under the data dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiskSpace {
    /// The data dir looked at.
    pub data_dir: PathBuf,
    /// Bytes free for an unprivileged writer on its file system.
    pub free_bytes: u64,
    /// Size of the member's db file.
    pub db_bytes: u64,
    /// The backend quota judged against.
    pub quota_bytes: u64,
}

/// The report of `check`, with what this host and the store add.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    /// The cluster's report, its findings including those added here.
    #[serde(flatten)]
    pub report: CheckReport,
    /// The platform detected on this host, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// The newest backup of the cluster, when a store was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupFreshness>,
    /// Free space for the data dir, when one was given or detected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskSpace>,
}

/// Checks the cluster (see [`Client::check`]), then adds the certificates on this host's
/// disk (when the etcd detected here is one of the cluster's members), the `backup` finding
/// (with a store) and the `disk` finding (with a data dir, given or detected).
pub async fn check(client: &Client, request: &CheckRequest) -> Result<CheckResult> {
    validate(request)?;
    let mut report = client.check(&request.options).await?;
    let root = request
        .platform_root
        .clone()
        .unwrap_or_else(|| PathBuf::from("/"));
    let platform = detect_platform(&PlatformRequest { root: Some(root) })
        .ok()
        .filter(|p| p.platform != Platform::None && is_member_of(p, &report));
    if let Some(info) = &platform {
        report.certificates.extend(on_disk_certificates(
            info.server_cert.as_deref(),
            [&info.cert, &info.cacert].into_iter().flatten(),
        ));
        report.set_finding(certificates_finding(&report.certificates, &request.options));
    }
    let backup = match &request.store {
        Some(store) => {
            let (freshness, finding) = backup_check(request, store, report.cluster_id).await;
            report.set_finding(finding);
            Some(freshness)
        }
        None => None,
    };
    let data_dir = request
        .data_dir
        .clone()
        .or_else(|| platform.as_ref().and_then(|p| p.data_dir.clone()));
    let disk = match data_dir {
        Some(dir) => {
            let quota = request.options.quota_bytes.unwrap_or(DEFAULT_QUOTA_BYTES);
            let (space, finding) = disk_check(&dir, quota.max(0) as u64);
            report.set_finding(finding);
            space
        }
        None => None,
    };
    Ok(CheckResult {
        report,
        platform: platform.map(|p| p.platform),
        backup,
        disk,
    })
}

use etcd_common::options::{CERT_CRITICAL_DAYS, CERT_WARN_DAYS, MAX_BACKUP_AGE};

/// Refuses thresholds that would judge nonsense (before anything is read): a warning
/// threshold below the critical one, negative days, a zero maximum backup age.
fn validate(request: &CheckRequest) -> Result<()> {
    let o = &request.options;
    if o.cert_critical_days < 0 || o.cert_warn_days < 0 {
        return Err(Error::invalid(
            "certificate thresholds are days before expiry and cannot be negative; give 0 or more",
            Some(Hint::any_of(&[CERT_WARN_DAYS, CERT_CRITICAL_DAYS])),
        ));
    }
    if o.cert_warn_days < o.cert_critical_days {
        return Err(Error::invalid(
            format!(
                "the certificate warning threshold ({} days) is below the critical one ({} days): the warning must come first; give a warning threshold of at least {} days",
                o.cert_warn_days, o.cert_critical_days, o.cert_critical_days
            ),
            Some(Hint::any_of(&[CERT_WARN_DAYS, CERT_CRITICAL_DAYS])),
        ));
    }
    if request.max_backup_age.is_some_and(|age| age.as_secs() == 0) {
        return Err(Error::invalid(
            "a maximum backup age under one second would judge every backup stale; give one like 26h",
            Some(Hint::option(MAX_BACKUP_AGE)),
        ));
    }
    Ok(())
}

/// Whether the etcd detected on this host is a member of the checked cluster (one of its
/// peer or client URLs is a member's): only then are its files and disk this cluster's.
fn is_member_of(platform: &PlatformInfo, report: &CheckReport) -> bool {
    let norm = |u: &String| u.trim_end_matches('/').to_ascii_lowercase();
    let ours: std::collections::BTreeSet<String> = platform
        .peer_urls
        .iter()
        .chain(&platform.endpoints)
        .chain(&platform.listen_client_urls)
        .map(norm)
        .collect();
    report.cluster.members.iter().any(|m| {
        m.member
            .peer_urls
            .iter()
            .chain(&m.member.client_urls)
            .any(|u| ours.contains(&norm(u)))
    })
}

/// The certificates of the platform's files: the server certificate with every other
/// `*.crt` beside it (kubeadm's and OpenShift's peer certificates live in its directory),
/// and the client and CA certificates themselves (their directories may be shared with
/// anything, `/etc/ssl/certs` say, so they are not listed).
fn on_disk_certificates<'a>(
    server_cert: Option<&Path>,
    others: impl Iterator<Item = &'a PathBuf>,
) -> Vec<CertificateStatus> {
    let mut paths: std::collections::BTreeSet<PathBuf> = others.cloned().collect();
    if let Some(server) = server_cert {
        paths.insert(server.to_path_buf());
        if let Some(dir) = server.parent()
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            paths.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "crt")),
            );
        }
    }
    paths
        .iter()
        .map(|p| CertificateStatus::from_file(CertificateRole::OnDisk, p))
        .collect()
}

/// Finds, verifies and judges the newest complete backup of `cluster` in `store`.
async fn backup_check(
    request: &CheckRequest,
    store_url: &str,
    cluster: MemberId,
) -> (BackupFreshness, Finding) {
    let mut freshness = BackupFreshness {
        store: etcd_common::redact_endpoint(store_url),
        object: None,
        revision: None,
        as_of: None,
        age_seconds: None,
        verified: None,
    };
    let catalog = match request.store_settings.open(store_url) {
        Ok(store) => list_backups(&store)
            .await
            .map(|c| (store, c))
            .map_err(Into::into),
        Err(e) => Err(e),
    };
    let (store, catalog) = match catalog {
        Ok(found) => found,
        Err(e) => {
            let finding = finding(
                Severity::Warning,
                format!(
                    "the backups in {} could not be listed ({e}): whether a recent backup exists is unknown",
                    freshness.store
                ),
            );
            return (freshness, finding);
        }
    };
    let Some((entry, revision, as_of)) = newest_backup(&catalog.backups, cluster) else {
        let finding = finding(
            Severity::Critical,
            format!(
                "no complete backup of cluster {cluster} in {}: take one now (a snapshot saved to that store)",
                freshness.store
            ),
        );
        return (freshness, finding);
    };
    freshness.object = Some(entry.object.clone());
    freshness.revision = Some(revision);
    freshness.as_of = Some(as_of);
    freshness.age_seconds = Some((Utc::now() - as_of).num_seconds());
    let verification = if request.skip_backup_verify {
        None
    } else {
        let verification = verify(request, &store, &entry.object).await;
        freshness.verified = match &verification {
            Verification::Verified => Some(true),
            Verification::Failed(_) => Some(false),
            Verification::Unverifiable(_) => None,
        };
        Some(verification)
    };
    let finding = judge_backup(&freshness, request.max_backup_age, verification);
    (freshness, finding)
}

/// The newest complete backup of `cluster`, with the newest revision it and its chain hold
/// and when that revision was stored.
fn newest_backup(
    backups: &[BackupEntry],
    cluster: MemberId,
) -> Option<(&BackupEntry, i64, DateTime<Utc>)> {
    backups
        .iter()
        .filter(|b| b.complete && b.manifest.cluster_id == cluster)
        .map(|b| {
            let full = (b.manifest.revision, b.manifest.completed_at);
            let chained = b
                .chain
                .as_ref()
                .filter(|c| c.covered_segments > 0)
                .map(|c| (c.to_revision, c.to_time.unwrap_or(c.last_published)));
            let (revision, at) = chained.filter(|c| c.1 > full.1).unwrap_or(full);
            (b, revision, at)
        })
        .max_by_key(|(_, _, at)| *at)
}

/// What verifying a backup (and its chain) found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verification {
    /// It and its chain check out.
    Verified,
    /// It or its chain is damaged: why.
    Failed(String),
    /// It could not be checked (encrypted without its identity, the store not answering):
    /// why. Neither good nor bad news.
    Unverifiable(String),
}

/// Verifies `object` and its chain of delta segments.
async fn verify(request: &CheckRequest, store: &etcd_store::Store, object: &str) -> Verification {
    let unverifiable =
        |e: &SnapshotError| crate::kind_of(e) == ErrorKind::NeedsIdentity || crate::is_transient(e);
    let identities = match request.identity.identities() {
        Ok((identities, _)) => identities,
        Err(e) => {
            return Verification::Unverifiable(format!("its identity could not be read ({e})"));
        }
    };
    match verify_backup(store, object, &identities, &NoProgress).await {
        Ok(_) => {}
        Err(SnapshotError::Data(etcd_data::Error::Encrypted { .. })) => {
            return Verification::Unverifiable(
                "it is encrypted and no identity was given to verify it".into(),
            );
        }
        // Listed a moment ago, gone now: pruned (or replaced) while checked, not damaged.
        Err(SnapshotError::Store(etcd_store::StoreError::NotFound { .. })) => {
            return Verification::Unverifiable(
                "it was deleted while being checked (a prune running?); check again".into(),
            );
        }
        Err(e) if unverifiable(&e) => return Verification::Unverifiable(e.to_string()),
        Err(e) => return Verification::Failed(e.to_string()),
    }
    match verify_chain(store, object, &identities).await {
        Ok(chain) if chain.problems.is_empty() => Verification::Verified,
        Ok(chain) => Verification::Failed(format!("its chain: {}", chain.problems.join("; "))),
        Err(e) if unverifiable(&e) => Verification::Unverifiable(format!("its chain: {e}")),
        Err(e) => Verification::Failed(format!("its chain: {e}")),
    }
}

fn finding(severity: Severity, message: String) -> Finding {
    Finding {
        check: "backup",
        severity,
        message,
    }
}

/// How far in the future a backup's stamp may be before clocks are called wrong.
const CLOCK_SKEW_SECONDS: i64 = 300;

/// The `backup` finding: critical when it does not verify or is more than twice the age
/// allowed, a warning when older than allowed or when it could not be verified.
fn judge_backup(
    freshness: &BackupFreshness,
    max_age: Option<Duration>,
    verification: Option<Verification>,
) -> Finding {
    let age = freshness.age_seconds.unwrap_or_default().max(0);
    let what = format!(
        "the newest backup of the cluster, {} (revision {}), is {} old",
        freshness.object.as_deref().unwrap_or("?"),
        freshness.revision.unwrap_or_default(),
        human(age)
    );
    let mut severity = Severity::Ok;
    let mut unverified = String::new();
    match verification {
        Some(Verification::Failed(problem)) => {
            return finding(
                Severity::Critical,
                format!(
                    "{what} and does NOT verify: {problem}; take a new backup and find out why"
                ),
            );
        }
        Some(Verification::Unverifiable(why)) => {
            severity = Severity::Warning;
            unverified = format!(
                "; it could not be verified ({why}): give its identity, or skip the verification"
            );
        }
        _ => {}
    }
    let verified = match freshness.verified {
        Some(true) => " and verifies",
        _ => "",
    };
    let ahead = -freshness.age_seconds.unwrap_or_default();
    if ahead > CLOCK_SKEW_SECONDS {
        // A stamp from the future would read as fresh forever (and hide newer backups).
        return finding(
            Severity::Warning,
            format!(
                "the newest backup of the cluster, {} (revision {}), is stamped {} in the future: a clock is wrong (this host's or the backup writer's), so its age cannot be judged; fix the clocks{unverified}",
                freshness.object.as_deref().unwrap_or("?"),
                freshness.revision.unwrap_or_default(),
                human(ahead)
            ),
        );
    }
    let Some(max_age) = max_age else {
        return finding(
            severity,
            format!("{what}{verified} (no maximum age given){unverified}"),
        );
    };
    let limit = max_age.as_secs() as i64;
    let (age_severity, judged) = if age > limit.saturating_mul(2) {
        (
            Severity::Critical,
            format!(
                ", more than twice the {} allowed: backups are not being taken; fix the backup job",
                human(limit)
            ),
        )
    } else if age > limit {
        (
            Severity::Warning,
            format!(
                ", older than the {} allowed: check the backup job",
                human(limit)
            ),
        )
    } else {
        (
            Severity::Ok,
            format!("{verified}, within the {} allowed", human(limit)),
        )
    };
    finding(
        severity.max(age_severity),
        format!("{what}{judged}{unverified}"),
    )
}

fn human(seconds: i64) -> String {
    let (days, hours, minutes) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match seconds {
        s if s >= 2 * 86_400 && hours == 0 => format!("{days}d"),
        s if s >= 2 * 86_400 => format!("{days}d{hours}h"),
        s if s >= 3600 && minutes == 0 => format!("{}h", s / 3600),
        s if s >= 3600 => format!("{}h{minutes}m", s / 3600),
        s if s >= 60 => format!("{minutes}m{}s", s % 60),
        s => format!("{s}s"),
    }
}

/// Free space on the data dir's file system against the db (a defrag or a snapshot copy
/// needs about its size) and against what the db may still grow to (its quota).
fn disk_check(data_dir: &Path, quota: u64) -> (Option<DiskSpace>, Finding) {
    let disk = |severity, message| Finding {
        check: "disk",
        severity,
        message,
    };
    let free = match rustix::fs::statvfs(data_dir) {
        Ok(s) => s.f_bavail.saturating_mul(s.f_frsize),
        Err(e) => {
            return (
                None,
                disk(
                    Severity::Warning,
                    format!(
                        "the free space under {} could not be read ({e}); give this member's data dir",
                        data_dir.display()
                    ),
                ),
            );
        }
    };
    let db = std::fs::metadata(data_dir.join("member/snap/db"))
        .map(|m| m.len())
        .unwrap_or(0);
    let space = DiskSpace {
        data_dir: data_dir.to_path_buf(),
        free_bytes: free,
        db_bytes: db,
        quota_bytes: quota,
    };
    let finding = judge_disk(&space);
    (Some(space), finding)
}

fn judge_disk(space: &DiskSpace) -> Finding {
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / 1_048_576.0);
    let what = format!(
        "{} free under {} for a db of {} (quota {})",
        mib(space.free_bytes),
        space.data_dir.display(),
        mib(space.db_bytes),
        mib(space.quota_bytes)
    );
    let (severity, advice) = if space.free_bytes < space.db_bytes {
        (
            Severity::Critical,
            ": less than the db itself, so a defrag or a local snapshot cannot be written; free space now",
        )
    } else if space.free_bytes < space.quota_bytes.saturating_sub(space.db_bytes) {
        (
            Severity::Warning,
            ": the db may grow to its quota and this disk cannot hold it; free space or lower the quota",
        )
    } else {
        (Severity::Ok, "")
    };
    Finding {
        check: "disk",
        severity,
        message: format!("{what}{advice}"),
    }
}

#[cfg(test)]
mod tests;
