//! Save once: the snapshot, then the metrics file, then the OpenShift pair, then retention
//! (never the backup just saved). And what a save would do, for check mode.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::Utc;
use etcd_common::{InvalidOption, OptionId};
use etcd_core::ClusterConfig;
use etcd_k8s::{OpenshiftBackupRequest, OpenshiftBackupResult, write_openshift_backup};
use etcd_snapshot::LockRequest;
use etcd_snapshot::opts;
use etcd_snapshot::{
    Compression, CopyReport, DEFAULT_ORPHAN_GRACE, DEFAULT_ZSTD_LEVEL, Progress, PruneEntry,
    PruneReport, RetentionPolicy, SaveFileRequest, SaveFileResult, SaveResult, SnapshotError,
    choose_source, copy_saved, prune_store, save_snapshot, save_snapshot_file, write_save_metrics,
};
use etcd_store::{LockMode, Store};
use serde::{Deserialize, Deserializer, Serialize};

use super::settings::{StoreSettings, one_or_many, recipients};
use crate::error::{Error, Result};

/// Retention rules: a backup is kept when any rule keeps it; the newest complete backup is
/// always kept. No rule set: nothing is pruned.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Retention {
    // The counts are read as any integer so that one check ([`Retention::policy`]) names
    // their true range (1 to 4294967295) whatever was given, 0 and -1 alike.
    /// Keep the N newest backups.
    pub keep_last: Option<i64>,
    /// Keep the newest backup of each of the last N hours.
    pub keep_hourly: Option<i64>,
    /// Keep the newest backup of each of the last N days.
    pub keep_daily: Option<i64>,
    /// Keep the newest backup of each of the last N weeks.
    pub keep_weekly: Option<i64>,
    /// Keep the newest backup of each of the last N months.
    pub keep_monthly: Option<i64>,
    /// Keep every backup younger than this (`36h`, `7d`).
    #[serde(deserialize_with = "max_age")]
    #[schemars(with = "Option<String>")]
    pub max_age: Option<Duration>,
    /// Remove backup objects without a manifest once older than this.
    #[serde(deserialize_with = "orphan_grace")]
    #[schemars(with = "Option<String>", extend("default" = "1h"))]
    pub orphan_grace: Duration,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention {
            keep_last: None,
            keep_hourly: None,
            keep_daily: None,
            keep_weekly: None,
            keep_monthly: None,
            max_age: None,
            orphan_grace: DEFAULT_ORPHAN_GRACE,
        }
    }
}

impl Retention {
    /// The rules, checked: a rule set to zero is refused ([`SnapshotError::InvalidOption`]
    /// naming it).
    pub fn policy(&self) -> Result<RetentionPolicy> {
        let policy = RetentionPolicy {
            keep_last: rule_count(opts::KEEP_LAST, self.keep_last)?,
            keep_hourly: rule_count(opts::KEEP_HOURLY, self.keep_hourly)?,
            keep_daily: rule_count(opts::KEEP_DAILY, self.keep_daily)?,
            keep_weekly: rule_count(opts::KEEP_WEEKLY, self.keep_weekly)?,
            keep_monthly: rule_count(opts::KEEP_MONTHLY, self.keep_monthly)?,
            max_age: self.max_age,
        };
        policy.validate()?;
        Ok(policy)
    }
}

/// The Object Lock asked: a mode with a period, the period `retain` or else the rules'
/// `max_age` (every backup younger than `max_age` is kept by the rules anyway, so a lock that
/// long never holds a backup the rules would delete). A period without a mode, or a mode with
/// neither, is refused.
pub(crate) fn lock_request(
    mode: Option<LockMode>,
    retain: Option<Duration>,
    retention: &Retention,
) -> Result<Option<LockRequest>> {
    let refuse = |option, reason: &str| -> Result<Option<LockRequest>> {
        Err(SnapshotError::from(InvalidOption::new(option, reason)).into())
    };
    match (mode, retain.or(retention.max_age)) {
        (None, _) if retain.is_some() => refuse(
            opts::OBJECT_LOCK_MODE,
            "not set, but a lock period is: give governance or compliance",
        ),
        (None, _) => Ok(None),
        (Some(_), None) => refuse(
            opts::OBJECT_LOCK_RETAIN,
            "not set, but a lock mode is: give how long after the backup's date it is \
             locked (e.g. 30d), or a max-age retention rule, whose period is then taken",
        ),
        (Some(mode), Some(retain)) => Ok(Some(LockRequest { mode, retain })),
    }
}

/// A retention rule's count, refused outside 1..=4294967295 with the rule's name (0 by
/// [`RetentionPolicy::validate`], which says why 0 is not "no limit").
fn rule_count(option: OptionId, count: Option<i64>) -> Result<Option<u32>> {
    let Some(count) = count else {
        return Ok(None);
    };
    if count == 0 {
        return Ok(Some(0));
    }
    u32::try_from(count).map(Some).map_err(|_| {
        SnapshotError::from(InvalidOption::new(
            option,
            format!("must be from 1 to {}, not {count}", u32::MAX),
        ))
        .into()
    })
}

/// A duration option given as text (`7d`, `36h`), named in its error.
fn duration<'de, D: Deserializer<'de>>(
    deserializer: D,
    name: &str,
) -> std::result::Result<Option<Duration>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| {
            etcd_common::parse_duration(&text)
                .map_err(|e| serde::de::Error::custom(format!("{name}: {e}")))
        })
        .transpose()
}

fn max_age<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Duration>, D::Error> {
    duration(d, "max_age")
}

fn object_lock_retain<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Duration>, D::Error> {
    duration(d, "object_lock_retain")
}

fn orphan_grace<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Duration, D::Error> {
    Ok(duration(d, "orphan_grace")?.unwrap_or(DEFAULT_ORPHAN_GRACE))
}

/// The second store's own retention (`copy_to`). Neither rule given: the first store's rules
/// apply there too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CopyRetention {
    /// Keep the N newest backups in the second store.
    pub copy_keep_last: Option<i64>,
    /// Keep every backup younger than this in the second store (`36h`, `7d`).
    #[serde(deserialize_with = "copy_max_age")]
    #[schemars(with = "Option<String>")]
    pub copy_max_age: Option<Duration>,
}

impl CopyRetention {
    /// The second store's rules, checked: these, or `first` when none is given.
    pub fn policy(&self, first: &RetentionPolicy) -> Result<RetentionPolicy> {
        if self.copy_keep_last.is_none() && self.copy_max_age.is_none() {
            return Ok(first.clone());
        }
        let keep_last = match self.copy_keep_last {
            None => None,
            Some(n) => Some(u32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
                SnapshotError::from(InvalidOption::input(
                    "copy_keep_last",
                    format!("must be from 1 to {}, not {n}", u32::MAX),
                ))
            })?),
        };
        let policy = RetentionPolicy {
            keep_last,
            max_age: self.copy_max_age,
            ..RetentionPolicy::default()
        };
        policy.validate()?;
        Ok(policy)
    }
}

fn copy_max_age<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Duration>, D::Error> {
    duration(d, "copy_max_age")
}

fn default_level() -> i32 {
    DEFAULT_ZSTD_LEVEL
}

/// What to save where, and what to do after.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct SaveRequest {
    /// The store: a directory, `file://`, `s3://`, `gs://`, `az://`.
    #[serde(rename = "store")]
    #[schemars(extend("x-aliases" = ["dest"]))]
    pub dest: String,
    /// Stream from this member only, instead of choosing a healthy follower.
    pub endpoint: Option<String>,
    /// Compression of the stored object.
    #[serde(default)]
    pub compression: Compression,
    /// zstd level, 1 (fast) to 19 (small).
    #[serde(default = "default_level")]
    pub compression_level: i32,
    /// Labels recorded in the manifest.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Read the stored object back and check it before writing the manifest.
    #[serde(default)]
    pub verify_after_upload: bool,
    /// Encrypt with age to these public keys.
    #[serde(default)]
    pub encrypt_to: Vec<String>,
    /// Encrypt to every public key of these files.
    #[serde(default, deserialize_with = "one_or_many")]
    #[schemars(with = "Option<PathBuf>")]
    pub encrypt_to_file: Vec<PathBuf>,
    /// Also write the pair OpenShift's cluster-restore.sh reads into this directory.
    pub openshift_backup_dir: Option<PathBuf>,
    /// Write Prometheus metrics of the save here (textfile collector), atomically.
    pub metrics_file: Option<PathBuf>,
    /// After the save, prune with these rules.
    #[serde(flatten)]
    pub retention: Retention,
    /// Prune every cluster folder of the store, not only the saved cluster's.
    #[serde(default)]
    pub all_clusters: bool,
    /// Also copy the backup to this second store, read back there (with the backups of its
    /// cluster an earlier save could not copy); a failure is a warning, never a failed save.
    pub copy_to: Option<String>,
    /// The second store's own retention (its saved cluster's folder only).
    #[serde(flatten)]
    pub copy_retention: CopyRetention,
    /// How the store is reached.
    #[serde(flatten)]
    pub store: StoreSettings,
    /// Set an S3 Object Lock retention of this mode on the backup object and its manifest
    /// (the bucket must have Object Lock enabled).
    #[serde(default)]
    pub object_lock_mode: Option<LockMode>,
    /// How long after the backup's date its Object Lock holds (`30d`); `max_age` when unset.
    #[serde(default, deserialize_with = "object_lock_retain")]
    #[schemars(with = "Option<String>")]
    pub object_lock_retain: Option<Duration>,
    /// The directory standing for the host's `/` (where the OpenShift pair's static pod
    /// resources are found); `/` when absent.
    #[serde(skip)]
    pub platform_root: Option<PathBuf>,
}

/// What a save did.
#[derive(Debug, Serialize)]
pub struct Saved {
    /// The backup saved.
    #[serde(flatten)]
    pub result: SaveResult,
    /// The pair for OpenShift's cluster-restore.sh, with `openshift_backup_dir`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openshift: Option<OpenshiftBackupResult>,
    /// What the prune after the save deleted and kept, with retention rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruned: Option<PruneReport>,
    /// Why the prune after the save failed: the backup is saved all the same.
    #[serde(skip)]
    pub prune_error: Option<Error>,
    /// With `copy_to`: what was copied to the second store (absent when the copy failed: a
    /// warning says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copied: Option<CopyReport>,
    /// With `copy_to` and retention rules: what the second store's prune deleted and kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_pruned: Option<PruneReport>,
    /// What went wrong on the side (the metrics file could not be written).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Saved {
    /// The saved backup's URL: the store's, then the object's name.
    pub fn object_url(&self) -> String {
        format!(
            "{}/{}",
            self.result.store.trim_end_matches('/'),
            self.result.manifest.object
        )
    }
}

/// What a save would do (check mode).
#[derive(Debug, Clone, Serialize)]
pub struct SavePreview {
    /// The store it would save to.
    pub store: String,
    /// The member endpoint it would stream from.
    pub endpoint: String,
    /// What retention would delete; `None` without rules.
    pub pruned: Option<Vec<PruneEntry>>,
    /// The prune's own warnings.
    pub warnings: Vec<String>,
}

/// A request checked before anything is saved.
struct Checked {
    store: Store,
    policy: RetentionPolicy,
    /// `copy_to`: the second store and its rules.
    copy_to: Option<(Store, RetentionPolicy)>,
    save: etcd_snapshot::SaveRequest,
    openshift: Option<OpenshiftBackupRequest>,
}

impl SaveRequest {
    /// The Object Lock asked ([`lock_request`]).
    fn object_lock(&self) -> Result<Option<LockRequest>> {
        lock_request(
            self.object_lock_mode,
            self.object_lock_retain,
            &self.retention,
        )
    }

    /// Opens the store and refuses bad rules, recipients or an OpenShift pair that cannot
    /// be written, before anything is saved.
    fn check(&self) -> Result<Checked> {
        let store = self.store.open(&self.dest)?;
        let policy = self.retention.policy()?;
        let copy_to = match &self.copy_to {
            Some(url) => Some((
                second_store(&self.store, &store, url)?,
                self.copy_retention.policy(&policy)?,
            )),
            None => None,
        };
        let encrypt_to = recipients(&self.encrypt_to, &self.encrypt_to_file)?;
        let openshift = match &self.openshift_backup_dir {
            Some(dir) => {
                let request = OpenshiftBackupRequest {
                    dir: dir.clone(),
                    root: self.platform_root.clone(),
                };
                request.check(!encrypt_to.is_empty())?;
                Some(request)
            }
            None => None,
        };
        let save = etcd_snapshot::SaveRequest {
            endpoint: self.endpoint.clone(),
            compression: self.compression,
            level: self.compression_level,
            labels: self.labels.clone(),
            verify_after_upload: self.verify_after_upload,
            encrypt_to,
            follows: None,
            object_lock: self.object_lock()?,
        };
        save.validate()?;
        if let Some(lock) = &save.object_lock {
            lock.check(&store)?;
        }
        Ok(Checked {
            store,
            policy,
            copy_to,
            save,
            openshift,
        })
    }
}

/// Saves a snapshot, then writes the metrics file (of the save's success or failure), then
/// the OpenShift pair, then prunes with the rules (never the backup just saved). A prune that
/// fails after the save leaves the backup saved: it is reported, with `prune_error`.
pub async fn save(
    config: &ClusterConfig,
    request: &SaveRequest,
    progress: &dyn Progress,
) -> Result<Saved> {
    let checked = request.check()?;
    let saved = save_snapshot(config, &checked.store, &checked.save, progress).await;
    let mut warnings = Vec::new();
    if let Some(path) = &request.metrics_file {
        let written = match &saved {
            Ok(result) => write_save_metrics(path, Ok(result), Utc::now()),
            Err(e) => write_save_metrics(path, Err(&e.to_string()), Utc::now()),
        };
        if let Err(e) = written {
            warnings.push(e.to_string());
        }
    }
    let result = saved?;
    if let Some(warning) = unnamed_member(&result.manifest) {
        warnings.push(warning);
    }
    let openshift = match &checked.openshift {
        Some(pair) => Some(write_openshift_backup(&checked.store, &result.manifest, pair).await?),
        None => None,
    };
    let mut saved = Saved {
        result,
        openshift,
        pruned: None,
        prune_error: None,
        copied: None,
        copy_pruned: None,
        warnings,
    };
    if let Some((second, policy)) = &checked.copy_to {
        copy_saved_to(&checked.store, second, policy, request, &mut saved).await;
    }
    if !checked.policy.is_empty() {
        let prune = saved.result.prune_request(
            checked.policy,
            request.all_clusters,
            request.retention.orphan_grace,
        );
        match prune_store(&checked.store, &prune, Utc::now()).await {
            Ok(report) => saved.pruned = Some(report),
            Err(e) => saved.prune_error = Some(e.into()),
        }
    }
    Ok(saved)
}

/// The second store of `copy_to` (`url`), refused when it is the first (`first`).
pub(crate) fn second_store(settings: &StoreSettings, first: &Store, url: &str) -> Result<Store> {
    let second = settings.open(url)?;
    if second.same_place_as(first) {
        let reason = format!(
            "{} is the store backed up to; name a second store to copy to",
            second.url()
        );
        return Err(SnapshotError::from(InvalidOption::input("copy_to", reason)).into());
    }
    Ok(second)
}

/// `copy_to`: copies the saved backup (and what an earlier save could not copy) to the
/// second store, then prunes it by its rules; a failure of either is a warning.
async fn copy_saved_to(
    first: &Store,
    second: &Store,
    policy: &RetentionPolicy,
    request: &SaveRequest,
    saved: &mut Saved,
) {
    if request.object_lock_mode.is_some() {
        saved.warnings.push(format!(
            "the copy in {} is not Object-Locked (only the backup in {} is): the second store's retention can delete it",
            second.url(),
            first.url()
        ));
    }
    match copy_saved(first, second, &saved.result.manifest).await {
        Ok(report) => saved.copied = Some(report),
        Err(e) => {
            saved.warnings.push(format!(
                "the backup is saved in {}, but copying it to {} failed: {e}; the next save copies it, or `snapshot copy`",
                first.url(),
                second.url()
            ));
            return;
        }
    }
    if policy.is_empty() {
        return;
    }
    let prune = saved
        .result
        .prune_request(policy.clone(), false, request.retention.orphan_grace);
    match prune_store(second, &prune, Utc::now()).await {
        Ok(report) => saved.copy_pruned = Some(report),
        Err(e) => saved
            .warnings
            .push(format!("pruning the second store {}: {e}", second.url())),
    }
}

/// A backup taken from a member the endpoints given could not name: etcd refuses the member
/// list to a learner, so a save from a learner that is the only endpoint records no member
/// name. Said, so that the empty name is not taken for a bug and the fix is known.
fn unnamed_member(manifest: &etcd_snapshot::Manifest) -> Option<String> {
    manifest.member_name.is_empty().then(|| {
        format!(
            "the manifest names no member: {} ({}) does not serve the member list and no other endpoint given did (a learner serves none); list a voting member among the endpoints to record its name",
            manifest.endpoint, manifest.member_id
        )
    })
}

/// What [`save`] would do, saving nothing: every check it makes first, and what it can
/// check without writing: the member it would stream from answers (chosen as the save
/// chooses it), the store could be written to ([`Store::probe`]: the bucket exists and takes
/// the credentials, the directory may be written in); then what retention would delete, the
/// backup it would write counted as its cluster's newest (every cluster's with
/// `all_clusters`; nothing when the store's directory does not exist yet, which the save
/// creates). Fails where the save would fail on those.
pub async fn preview_save(config: &ClusterConfig, request: &SaveRequest) -> Result<SavePreview> {
    let checked = request.check()?;
    let (source, _client) = choose_source(config, checked.save.endpoint.as_deref()).await?;
    checked.store.probe().await?;
    let mut preview = SavePreview {
        store: checked.store.url().to_string(),
        endpoint: source.endpoint.clone(),
        pruned: None,
        warnings: Vec::new(),
    };
    // The save would only warn about a second store it cannot write to.
    if let Some((second, _)) = &checked.copy_to
        && let Err(e) = second.probe().await
    {
        preview.warnings.push(format!(
            "the backup could not be copied to {}: {e}",
            second.url()
        ));
    }
    if checked.policy.is_empty() {
        return Ok(preview);
    }
    // A local store's directory that does not exist yet holds nothing to prune: the save
    // creates it (listing it would fail, as a listing of a store that is not there does).
    if !checked.store.exists().await? {
        preview.pruned = Some(Vec::new());
        return Ok(preview);
    }
    // The cluster the save would back up: its new backup counts for the rules.
    let saved = source.cluster_id;
    let prune = etcd_snapshot::PruneRequest {
        policy: checked.policy,
        cluster: (!request.all_clusters).then_some(saved),
        orphan_grace: request.retention.orphan_grace,
        dry_run: true,
        planned: Some(saved),
        ..etcd_snapshot::PruneRequest::default()
    };
    match prune_store(&checked.store, &prune, Utc::now()).await {
        Ok(report) => {
            preview.warnings.extend(report.warnings);
            preview.pruned = Some(report.deleted);
        }
        // The first save of this cluster: nothing to prune yet.
        Err(SnapshotError::NoSuchCluster { .. }) => preview.pruned = Some(Vec::new()),
        Err(e) => return Err(e.into()),
    }
    Ok(preview)
}

/// Whether `snapshot save DEST` writes a plain etcdctl-compatible file instead of a store.
///
/// Never for a URL (`scheme://`) or an existing directory. Otherwise: under `--compat
/// etcdctl` (`etcdctl_compat`) always, as etcdctl has no other kind of destination; without
/// it, for a name ending in `.db` in any case (`x.db`, `x.DB`: a name a user gives a db file,
/// never a store directory's).
pub fn is_file_destination(dest: &str, etcdctl_compat: bool) -> bool {
    if dest.contains("://") || std::path::Path::new(dest).is_dir() {
        return false;
    }
    etcdctl_compat || dest.to_ascii_lowercase().ends_with(".db")
}

/// `snapshot save FILE.db`: etcd's stream as it is, with its SHA-256 trailer, into one plain
/// file, as `etcdctl snapshot save` writes it (see [`etcd_snapshot::save_snapshot_file`]).
pub async fn save_file(
    config: &ClusterConfig,
    request: &SaveFileRequest,
    progress: &dyn Progress,
) -> Result<SaveFileResult> {
    Ok(save_snapshot_file(config, request, progress).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_options_deserialize_into_a_save_request() {
        let request: SaveRequest = serde_json::from_value(serde_json::json!({
            "store": "/backups", "compression": "none", "keep_last": 3, "max_age": "7d",
            "encrypt_to_file": "/r.txt", "s3_region": "eu-west-1"
        }))
        .unwrap();
        assert_eq!(request.compression, Compression::None);
        assert_eq!(request.compression_level, DEFAULT_ZSTD_LEVEL);
        assert_eq!(request.retention.keep_last, Some(3));
        assert_eq!(
            request.retention.max_age,
            Some(Duration::from_secs(7 * 86400))
        );
        assert_eq!(request.retention.orphan_grace, DEFAULT_ORPHAN_GRACE);
        assert_eq!(request.encrypt_to_file, [PathBuf::from("/r.txt")]);
        assert_eq!(request.store.s3_region.as_deref(), Some("eu-west-1"));
        let bad = serde_json::from_value::<SaveRequest>(serde_json::json!({
            "store": "/b", "orphan_grace": "soon"
        }))
        .unwrap_err();
        assert!(bad.to_string().contains("orphan_grace"), "{bad}");
    }

    /// `orphan_grace`'s documented default is written by hand in the schema (the field is
    /// text there): it must be the grace the request applies when it is unset.
    #[test]
    fn the_documented_orphan_grace_is_the_one_applied() {
        let schema = schemars::schema_for!(Retention);
        let documented = schema
            .as_value()
            .pointer("/properties/orphan_grace/default")
            .and_then(|d| d.as_str())
            .map(str::to_string)
            .unwrap();
        assert_eq!(
            etcd_common::parse_duration(&documented).unwrap(),
            Retention::default().orphan_grace
        );
    }

    #[test]
    fn a_retention_count_outside_its_range_is_refused_with_the_range() {
        for (count, words) in [
            (-1, "from 1 to 4294967295"),
            (0, "at least 1"),
            (1 << 32, "from 1 to"),
        ] {
            let retention = Retention {
                keep_daily: Some(count),
                ..Retention::default()
            };
            let message = retention.policy().unwrap_err().to_string();
            assert!(
                message.contains("keep_daily") && message.contains(words),
                "{message}"
            );
        }
        let kept = Retention {
            keep_daily: Some(i64::from(u32::MAX)),
            ..Retention::default()
        };
        assert_eq!(kept.policy().unwrap().keep_daily, Some(u32::MAX));
    }

    #[test]
    fn only_a_local_db_path_that_is_no_directory_is_a_file_destination() {
        let dir = tempfile::tempdir().unwrap();
        let as_dir = dir.path().join("store.db");
        std::fs::create_dir(&as_dir).unwrap();
        let existing = dir.path().display().to_string();
        for compat in [false, true] {
            assert!(is_file_destination("x.db", compat));
            assert!(is_file_destination("x.DB", compat));
            assert!(is_file_destination(
                &dir.path().join("new.db").display().to_string(),
                compat
            ));
            assert!(!is_file_destination(&as_dir.display().to_string(), compat));
            assert!(!is_file_destination(&existing, compat));
            assert!(!is_file_destination("file:///backups/x.db", compat));
            assert!(!is_file_destination("s3://bucket/x.db", compat));
        }
        assert!(!is_file_destination("/backups", false));
        assert!(!is_file_destination("etcd-backup.snap", false));
    }

    #[test]
    fn under_compat_any_local_name_that_is_no_directory_is_a_file() {
        assert!(is_file_destination("/backups", true));
        assert!(is_file_destination("etcd-backup.snap", true));
        assert!(is_file_destination("etcd-2026-12-01", true));
    }

    #[test]
    fn the_second_store_keeps_the_first_stores_rules_unless_given_its_own() {
        let first = Retention {
            keep_daily: Some(7),
            ..Retention::default()
        }
        .policy()
        .unwrap();
        let none: SaveRequest = serde_json::from_value(serde_json::json!({
            "store": "/b", "keep_daily": 7, "copy_to": "/dr"
        }))
        .unwrap();
        assert_eq!(none.copy_to.as_deref(), Some("/dr"));
        assert_eq!(none.copy_retention.policy(&first).unwrap(), first);
        let own: SaveRequest = serde_json::from_value(serde_json::json!({
            "store": "/b", "copy_to": "/dr", "copy_keep_last": 2, "copy_max_age": "30d"
        }))
        .unwrap();
        let policy = own.copy_retention.policy(&first).unwrap();
        assert_eq!(
            (policy.keep_last, policy.keep_daily, policy.max_age),
            (Some(2), None, Some(Duration::from_secs(30 * 86400)))
        );
        for bad in [0, -1] {
            let refused = CopyRetention {
                copy_keep_last: Some(bad),
                copy_max_age: None,
            }
            .policy(&first)
            .unwrap_err()
            .to_string();
            assert!(refused.contains("copy_keep_last"), "{refused}");
        }
        let store = Store::open("/b", &etcd_store::StoreOptions::default()).unwrap();
        let same = second_store(&StoreSettings::default(), &store, "/b/")
            .unwrap_err()
            .to_string();
        assert!(same.contains("name a second store"), "{same}");
    }

    #[test]
    fn a_rule_of_zero_is_refused_naming_it() {
        let retention = Retention {
            keep_daily: Some(0),
            ..Retention::default()
        };
        let refused = retention.policy().unwrap_err();
        match refused.library::<SnapshotError>() {
            Some(SnapshotError::InvalidOption(e)) => assert_eq!(e.option, Some(opts::KEEP_DAILY)),
            other => panic!("{other:?}"),
        }
    }
}
