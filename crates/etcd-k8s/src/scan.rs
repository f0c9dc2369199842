//! The encryption-at-rest audit: which objects under `<prefix>/<resource>/` are encrypted, by
//! which provider and key, and which are plaintext. Live through paged reads (bounded memory,
//! one revision per resource), or offline from a snapshot through the bbolt reader (no etcd
//! started).

use std::collections::{BTreeMap, HashMap};

use base64::Engine;
use etcd_core::{Client, ClusterConfig, Encoding, GetRequest, KeyValueView};
use etcd_snapshot::{
    BoltDb, Identities, PageSource, SnapshotError, SnapshotFile, key_value_fields,
    parse_revision_key, split_trailer,
};
use etcd_store::StoreOptions;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{K8sError, RESOURCES, Result, SNAPSHOT};
use crate::prefix::{
    KNOWN_PREFIXES, choose_prefix, normalize_prefix, normalize_resource, object_ref,
    resource_prefix,
};
use crate::value::{Storage, classify};
use etcd_common::InvalidOption;

/// Objects listed in a report by default (the totals always count every object).
pub const DEFAULT_MAX_OBJECTS: usize = 1000;

/// What to audit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EncryptionStatusRequest {
    /// Resources to scan (plural names, as in the EncryptionConfiguration): `secrets`,
    /// `configmaps`, ... Default: `secrets`.
    pub resources: Vec<String>,
    /// kube-apiserver's `--etcd-prefix`; found automatically when absent (`/registry`, or
    /// `/kubernetes.io` on OpenShift).
    pub prefix: Option<String>,
    /// Scan this snapshot offline instead of the live cluster: a local file (plain or zstd)
    /// or a backup URL `STORE/OBJECT` (`s3://`, `gs://`, `az://`, `file://`).
    pub snapshot: Option<String>,
    /// Read a snapshot even when etcd's SHA-256 trailer does not match its db.
    pub skip_hash_check: bool,
    /// List every object, not only the plaintext ones.
    pub list_all: bool,
    /// At most this many objects in `objects` (0: no limit). The totals count every object.
    pub max_objects: usize,
}

impl Default for EncryptionStatusRequest {
    fn default() -> Self {
        Self {
            resources: vec!["secrets".into()],
            prefix: None,
            snapshot: None,
            skip_hash_check: false,
            list_all: false,
            max_objects: DEFAULT_MAX_OBJECTS,
        }
    }
}

/// Objects stored one way (one provider and key, or plaintext).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StorageCount {
    /// How they are stored.
    #[serde(flatten)]
    pub storage: Storage,
    /// How many.
    pub count: u64,
}

/// The audit of one resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceSummary {
    /// The resource (`secrets`).
    pub resource: String,
    /// Objects found.
    pub total: u64,
    /// Of which encrypted.
    pub encrypted: u64,
    /// Of which plaintext.
    pub plaintext: u64,
    /// Counts per provider and key (and plaintext format), most frequent first.
    pub storage: Vec<StorageCount>,
}

/// One object: where it is and how it is stored; never its data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectStatus {
    /// The resource.
    pub resource: String,
    /// The namespace (absent for cluster-scoped objects).
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
    /// The etcd key.
    pub key: String,
    /// How its value is stored.
    #[serde(flatten)]
    pub storage: Storage,
}

/// The result of an audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EncryptionReport {
    /// `etcd` for a live scan, else the snapshot file or URL.
    pub source: String,
    /// Whether it was read from a snapshot.
    pub offline: bool,
    /// The prefix scanned.
    pub prefix: String,
    /// Whether the prefix was found automatically.
    pub prefix_detected: bool,
    /// The revision read (for a live scan, that of the first resource).
    pub revision: i64,
    /// Objects found, all resources together.
    pub total: u64,
    /// Of which encrypted.
    pub encrypted: u64,
    /// Of which plaintext.
    pub plaintext: u64,
    /// Whether every object found is encrypted (false when none was found).
    pub all_encrypted: bool,
    /// Per resource, in the order asked.
    pub resources: Vec<ResourceSummary>,
    /// Counts per provider and key across resources, most frequent first.
    pub keys: Vec<StorageCount>,
    /// The plaintext objects (every object with `list_all`), in key order, at most
    /// `max_objects`.
    pub objects: Vec<ObjectStatus>,
    /// Whether `objects` was cut at `max_objects`.
    pub objects_truncated: bool,
}

/// Audits the live cluster, or the snapshot in `request.snapshot` (a URL is opened with
/// `store_options`; an encrypted backup is decrypted with `identities`).
pub async fn encryption_status(
    config: &ClusterConfig,
    store_options: &StoreOptions,
    request: &EncryptionStatusRequest,
    identities: &Identities,
) -> Result<EncryptionReport> {
    match &request.snapshot {
        Some(source) => {
            let snapshot = open_snapshot(source, store_options, identities).await?;
            scan_snapshot(source, &snapshot, request)
        }
        None => scan_live(config, request).await,
    }
}

/// Audits the snapshot in `request.snapshot` (required), with no cluster connection: for a
/// front-end that has no connection settings (e.g. a backup host).
pub async fn encryption_status_offline(
    store_options: &StoreOptions,
    request: &EncryptionStatusRequest,
    identities: &Identities,
) -> Result<EncryptionReport> {
    let source = request.snapshot.as_deref().ok_or_else(|| {
        K8sError::from(InvalidOption::new(
            SNAPSHOT,
            "give the snapshot file or backup URL to audit",
        ))
    })?;
    let snapshot = open_snapshot(source, store_options, identities).await?;
    scan_snapshot(source, &snapshot, request)
}

fn resources(request: &EncryptionStatusRequest) -> Result<Vec<String>> {
    if request.resources.is_empty() {
        return Err(K8sError::from(InvalidOption::new(
            RESOURCES,
            "empty; give at least one resource, e.g. secrets",
        )));
    }
    let mut out: Vec<String> = Vec::new();
    for r in &request.resources {
        let r = normalize_resource(r)?;
        if !out.contains(&r) {
            out.push(r);
        }
    }
    Ok(out)
}

/// Counts per resource and the objects to list, fed one object at a time.
struct Tally {
    prefix: String,
    resources: Vec<String>,
    counts: Vec<BTreeMap<Storage, u64>>,
    objects: Vec<ObjectStatus>,
    list_all: bool,
    max_objects: usize,
    truncated: bool,
}

impl Tally {
    fn new(prefix: String, resources: Vec<String>, request: &EncryptionStatusRequest) -> Self {
        Tally {
            counts: vec![BTreeMap::new(); resources.len()],
            prefix,
            resources,
            objects: Vec::new(),
            list_all: request.list_all,
            max_objects: request.max_objects,
            truncated: false,
        }
    }

    fn add(&mut self, index: usize, key: &str, value: &[u8]) {
        self.add_classified(index, key, classify(value));
    }

    fn add_classified(&mut self, index: usize, key: &str, storage: Storage) {
        if !storage.is_encrypted() || self.list_all {
            if self.max_objects == 0 || self.objects.len() < self.max_objects {
                let at = object_ref(&self.prefix, &self.resources[index], key);
                self.objects.push(ObjectStatus {
                    resource: at.resource,
                    namespace: at.namespace,
                    name: at.name,
                    key: key.to_string(),
                    storage: storage.clone(),
                });
            } else {
                self.truncated = true;
            }
        }
        *self.counts[index].entry(storage).or_default() += 1;
    }

    fn finish(
        self,
        source: String,
        offline: bool,
        prefix_detected: bool,
        revision: i64,
    ) -> Result<EncryptionReport> {
        let mut all: BTreeMap<Storage, u64> = BTreeMap::new();
        let mut summaries = Vec::new();
        for (resource, counts) in self.resources.iter().zip(self.counts) {
            let mut summary = ResourceSummary {
                resource: resource.clone(),
                total: 0,
                encrypted: 0,
                plaintext: 0,
                storage: Vec::new(),
            };
            for (storage, count) in counts {
                summary.total += count;
                if storage.is_encrypted() {
                    summary.encrypted += count;
                } else {
                    summary.plaintext += count;
                }
                *all.entry(storage.clone()).or_default() += count;
                summary.storage.push(StorageCount { storage, count });
            }
            summary.storage.sort_by_key(|c| std::cmp::Reverse(c.count));
            summaries.push(summary);
        }
        let total: u64 = summaries.iter().map(|s| s.total).sum();
        if total == 0 {
            return Err(K8sError::NothingScanned {
                prefix: self.prefix,
                resources: self.resources.join(","),
            });
        }
        let encrypted: u64 = summaries.iter().map(|s| s.encrypted).sum();
        let mut keys: Vec<StorageCount> = all
            .into_iter()
            .map(|(storage, count)| StorageCount { storage, count })
            .collect();
        keys.sort_by_key(|c| std::cmp::Reverse(c.count));
        let mut objects = self.objects;
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(EncryptionReport {
            source,
            offline,
            prefix: self.prefix,
            prefix_detected,
            revision,
            total,
            encrypted,
            plaintext: total - encrypted,
            all_encrypted: encrypted == total,
            resources: summaries,
            keys,
            objects,
            objects_truncated: self.truncated,
        })
    }
}

/// The raw bytes of a value `get_pages` handed over as text or base64.
pub(crate) fn raw_value(kv: &KeyValueView) -> Option<Vec<u8>> {
    let value = kv.value.as_ref()?;
    match kv.value_encoding {
        Some(Encoding::Base64) => base64::engine::general_purpose::STANDARD.decode(value).ok(),
        _ => Some(value.as_bytes().to_vec()),
    }
}

/// Finds the prefix on the live cluster by counting the keys under each known prefix.
pub async fn detect_prefix(config: &ClusterConfig) -> Result<String> {
    let mut counts = Vec::new();
    for prefix in KNOWN_PREFIXES {
        let request = GetRequest {
            key: format!("{prefix}/").into_bytes(),
            prefix: true,
            count_only: true,
            ..Default::default()
        };
        let summary = Client::new(config.clone())
            .kv()
            .get_pages(&request, |_| Ok(()))
            .await?;
        counts.push((prefix.to_string(), summary.count.max(0) as u64));
    }
    choose_prefix(&counts)
}

/// Audits the live cluster, page by page: memory holds one page and the objects listed.
pub async fn scan_live(
    config: &ClusterConfig,
    request: &EncryptionStatusRequest,
) -> Result<EncryptionReport> {
    let resources = resources(request)?;
    let (prefix, detected) = match &request.prefix {
        Some(p) => (normalize_prefix(p)?, false),
        None => (detect_prefix(config).await?, true),
    };
    let mut tally = Tally::new(prefix.clone(), resources.clone(), request);
    let mut revision = 0;
    for (index, resource) in resources.iter().enumerate() {
        let get = GetRequest {
            key: resource_prefix(&prefix, resource).into_bytes(),
            prefix: true,
            show_secrets: true,
            ..Default::default()
        };
        let summary = Client::new(config.clone())
            .kv()
            .get_pages(&get, |page| {
                for kv in page {
                    let value = raw_value(&kv).unwrap_or_default();
                    tally.add(index, &kv.key, &value);
                }
                Ok(())
            })
            .await?;
        if index == 0 {
            revision = summary.revision;
        }
    }
    tally.finish("etcd".into(), false, detected, revision)
}

/// Opens a snapshot for reading page by page: a backup URL `STORE/OBJECT` when `source` has a
/// scheme (downloaded, and decompressed when zstd, into an unnamed temporary file), else a
/// local file (read in place, or decompressed into an unnamed temporary file when zstd).
pub async fn open_snapshot(
    source: &str,
    options: &StoreOptions,
    identities: &Identities,
) -> Result<SnapshotFile> {
    Ok(etcd_snapshot::open_snapshot(source, options, identities).await?)
}

/// Audits an opened snapshot (`name` is for messages): see [`scan_db`].
pub fn scan_snapshot(
    name: &str,
    snapshot: &SnapshotFile,
    request: &EncryptionStatusRequest,
) -> Result<EncryptionReport> {
    scan_db(
        name,
        snapshot.db(),
        snapshot.trailer(),
        snapshot.known_sha256().map(str::to_string),
        request,
    )
}

/// Audits a snapshot held in memory (trailer optional), e.g. in tests.
pub fn scan_snapshot_bytes(
    name: &str,
    bytes: &[u8],
    request: &EncryptionStatusRequest,
) -> Result<EncryptionReport> {
    let (db, trailer) = split_trailer(bytes);
    let trailer = trailer.and_then(|t| <[u8; 32]>::try_from(t).ok());
    scan_db(name, db, trailer, None, request)
}

/// SHA-256 of the whole source, hex, read in 4 MiB pieces.
fn sha256_of<S: PageSource + ?Sized>(source: &S) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 4 << 20];
    let size = source.size();
    let mut offset = 0u64;
    while offset < size {
        let n = usize::try_from((size - offset).min(buf.len() as u64)).unwrap_or(buf.len());
        source.read_exact_at(&mut buf[..n], offset)?;
        hasher.update(&buf[..n]);
        offset += n as u64;
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Where a live key of the scanned ranges is: candidate prefix, resource, and how its latest
/// revision is stored (an index into the distinct storages seen).
#[derive(Clone, Copy)]
struct Slot {
    candidate: u8,
    resource: u16,
    storage: u32,
}

/// Audits the db in `source`, page by page (memory: the tree's depth times a page, plus one
/// small record per live key of the scanned ranges; no value is kept). The `key` bucket is
/// walked once in revision order; the latest revision of each key wins and deleted keys drop
/// out. etcd's SHA-256 trailer is checked (unless `skip_hash_check`), computed on a second
/// thread while the walk runs unless `known_sha256` gives it.
pub fn scan_db<S: PageSource + Sync>(
    name: &str,
    source: S,
    trailer: Option<[u8; 32]>,
    known_sha256: Option<String>,
    request: &EncryptionStatusRequest,
) -> Result<EncryptionReport> {
    let resources = resources(request)?;
    let given = request
        .prefix
        .as_deref()
        .map(normalize_prefix)
        .transpose()?;
    let check_hash = trailer.is_some() && !request.skip_hash_check;
    let (sha, walked) = std::thread::scope(|scope| {
        let hashing = match (&known_sha256, check_hash) {
            (_, false) => None,
            (Some(known), true) => Some(Ok(Ok(known.clone()))),
            (None, true) => Some(Err(scope.spawn(|| sha256_of(&source)))),
        };
        let walked = walk_keys(name, &source, given.as_deref(), &resources);
        let sha = hashing.map(|h| match h {
            Ok(known) => known,
            Err(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the hashing thread panicked"))),
        });
        (sha, walked)
    });
    if let (Some(sha), Some(trailer)) = (sha, trailer) {
        let actual = sha.map_err(|source| {
            SnapshotError::Data(etcd_data::Error::ReadFile {
                path: name.to_string(),
                source,
            })
        })?;
        if hex::encode(trailer) != actual {
            return Err(SnapshotError::Data(etcd_data::Error::HashMismatch {
                name: name.to_string(),
                expected: hex::encode(trailer),
                actual,
            })
            .into());
        }
    }
    let walked = walked?;
    let (prefix, detected) = match given {
        Some(p) => (p, false),
        None => {
            let counts: Vec<(String, u64)> =
                walked.candidates.iter().cloned().zip(walked.seen).collect();
            (choose_prefix(&counts)?, true)
        }
    };
    let chosen = walked
        .candidates
        .iter()
        .position(|p| *p == prefix)
        .unwrap_or(0);
    let mut entries: Vec<(Vec<u8>, Slot)> = walked
        .live
        .into_iter()
        .filter(|(_, slot)| usize::from(slot.candidate) == chosen)
        .collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut tally = Tally::new(prefix, resources, request);
    for (key, slot) in entries {
        let storage = walked.storages[slot.storage as usize].clone();
        tally.add_classified(
            usize::from(slot.resource),
            &String::from_utf8_lossy(&key),
            storage,
        );
    }
    tally.finish(name.to_string(), true, detected, walked.revision)
}

struct Walked {
    candidates: Vec<String>,
    seen: Vec<u64>,
    live: HashMap<Vec<u8>, Slot>,
    storages: Vec<Storage>,
    revision: i64,
}

fn walk_keys<S: PageSource>(
    name: &str,
    source: &S,
    given: Option<&str>,
    resources: &[String],
) -> Result<Walked> {
    let bad_db = |source| -> K8sError {
        SnapshotError::Data(etcd_data::Error::BadDb {
            name: name.to_string(),
            source,
        })
        .into()
    };
    let not_etcd = |reason: String| K8sError::NotEtcdData {
        name: name.to_string(),
        reason,
    };
    let bolt = BoltDb::open(source).map_err(bad_db)?;
    let bucket = bolt
        .bucket(&bolt.root(), b"key")
        .map_err(bad_db)?
        .ok_or_else(|| not_etcd("it has no `key` bucket".into()))?;
    // Candidate prefixes: the one given, or every known one (chosen after the walk).
    let candidates: Vec<String> = match given {
        Some(p) => vec![p.to_string()],
        None => KNOWN_PREFIXES.iter().map(|p| p.to_string()).collect(),
    };
    let ranges: Vec<(u8, u16, Vec<u8>)> = candidates
        .iter()
        .enumerate()
        .flat_map(|(c, prefix)| {
            resources.iter().enumerate().map(move |(r, res)| {
                (
                    u8::try_from(c).unwrap_or(u8::MAX),
                    u16::try_from(r).unwrap_or(u16::MAX),
                    resource_prefix(prefix, res).into_bytes(),
                )
            })
        })
        .collect();
    let candidate_bytes: Vec<Vec<u8>> = candidates
        .iter()
        .map(|p| format!("{p}/").into_bytes())
        .collect();
    let mut walked = Walked {
        seen: vec![0; candidates.len()],
        candidates,
        live: HashMap::new(),
        storages: Vec::new(),
        revision: 0,
    };
    let mut storage_index: HashMap<Storage, u32> = HashMap::new();
    bolt.for_each(&bucket, |entry| -> std::result::Result<(), WalkError> {
        let (main, tombstone) = parse_revision_key(entry.key).ok_or_else(|| {
            not_etcd(format!(
                "key bucket entry {} is not a revision",
                hex::encode(entry.key)
            ))
        })?;
        walked.revision = main;
        let (key, value) = key_value_fields(entry.value).ok_or_else(|| {
            not_etcd(format!(
                "the value at revision {main} is not an mvccpb.KeyValue"
            ))
        })?;
        for (c, p) in candidate_bytes.iter().enumerate() {
            if key.starts_with(p) {
                walked.seen[c] += 1;
            }
        }
        let Some((candidate, resource, _)) = ranges.iter().find(|(_, _, p)| key.starts_with(p))
        else {
            return Ok(());
        };
        if tombstone {
            walked.live.remove(key);
            return Ok(());
        }
        let storage = classify(value);
        let next = u32::try_from(walked.storages.len()).unwrap_or(u32::MAX);
        let index = *storage_index.entry(storage.clone()).or_insert_with(|| {
            walked.storages.push(storage);
            next
        });
        let slot = Slot {
            candidate: *candidate,
            resource: *resource,
            storage: index,
        };
        match walked.live.get_mut(key) {
            Some(existing) => *existing = slot,
            None => {
                walked.live.insert(key.to_vec(), slot);
            }
        }
        Ok(())
    })
    .map_err(|e| match e {
        WalkError::Bolt(source) => bad_db(source),
        WalkError::K8s(e) => e,
    })?;
    Ok(walked)
}

/// An error inside the walk: from the db, or from what it holds.
enum WalkError {
    Bolt(etcd_snapshot::BoltError),
    K8s(K8sError),
}

impl From<etcd_snapshot::BoltError> for WalkError {
    fn from(e: etcd_snapshot::BoltError) -> Self {
        WalkError::Bolt(e)
    }
}

impl From<K8sError> for WalkError {
    fn from(e: K8sError) -> Self {
        WalkError::K8s(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_of_nothing_is_an_error_and_counts_add_up() {
        let request = EncryptionStatusRequest::default();
        let empty = Tally::new("/registry".into(), vec!["secrets".into()], &request);
        let err = empty.finish("etcd".into(), false, true, 1).unwrap_err();
        assert!(matches!(err, K8sError::NothingScanned { .. }), "{err}");

        let request = EncryptionStatusRequest {
            max_objects: 1,
            ..Default::default()
        };
        let mut tally = Tally::new("/registry".into(), vec!["secrets".into()], &request);
        tally.add(0, "/registry/secrets/a/s1", b"k8s:enc:aescbc:v1:k1:xx");
        tally.add(0, "/registry/secrets/a/s2", b"k8s:enc:aescbc:v1:k1:yy");
        tally.add(0, "/registry/secrets/b/s3", b"{\"kind\":\"Secret\"}");
        tally.add(0, "/registry/secrets/b/s4", b"k8s\0xx");
        let report = tally.finish("etcd".into(), false, true, 9).unwrap();
        assert_eq!(
            (report.total, report.encrypted, report.plaintext),
            (4, 2, 2)
        );
        assert!(!report.all_encrypted);
        assert_eq!(report.objects.len(), 1);
        assert!(report.objects_truncated);
        assert_eq!(report.objects[0].namespace.as_deref(), Some("b"));
        assert_eq!(report.keys[0].count, 2);
        assert_eq!(report.keys[0].storage.label(), "aescbc/k1");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["objects"][0]["storage"], "plaintext");
        assert_eq!(json["objects"][0]["format"], "json");
    }

    #[test]
    fn a_snapshot_that_is_not_a_db_is_a_clear_error() {
        let request = EncryptionStatusRequest::default();
        let err = scan_snapshot_bytes("x.db", &[0u8; 4096], &request).unwrap_err();
        assert!(
            err.to_string().contains("'x.db' is not a readable etcd db"),
            "{err}"
        );
        // A trailer that does not match is refused before anything else.
        let mut bytes = vec![0u8; 4096];
        bytes.extend_from_slice(&[7u8; 32]);
        let err = scan_snapshot_bytes("y.db", &bytes, &request).unwrap_err();
        assert!(err.to_string().contains("SHA-256"), "{err}");
        let bad = EncryptionStatusRequest {
            resources: vec![],
            ..Default::default()
        };
        assert!(scan_snapshot_bytes("z.db", &bytes, &bad).is_err());
    }

    #[test]
    fn requests_deserialize_from_module_arguments() {
        let request: EncryptionStatusRequest = serde_json::from_value(serde_json::json!({
            "resources": ["secrets", "configmaps"],
            "snapshot": "/backups/x.db.zst",
        }))
        .unwrap();
        assert_eq!(request.resources.len(), 2);
        assert_eq!(request.max_objects, DEFAULT_MAX_OBJECTS);
        assert!(
            serde_json::from_value::<EncryptionStatusRequest>(serde_json::json!({"resource": []}))
                .is_err()
        );
    }
}
