//! Flags of `etcdops snapshot ...` and `etcdops backup ...`, and the store, identity and
//! retention flags they share.

use super::*;

/// `etcdops snapshot ...`
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Stream a snapshot from a healthy follower (or --endpoint) into a store, with a manifest.
    ///
    /// The member is chosen cluster-wide: a healthy follower with the highest raft index, ties
    /// broken by the lowest member ID, so the same command run on every control-plane host
    /// backs up the same member each time. Run it from one place, or give --endpoint to back
    /// up one particular member.
    Save(Box<SaveArgs>),
    /// List the backups in a store, newest first (from their manifests).
    List(ListArgs),
    /// Download a backup and check its SHA-256s, etcd's trailer and the bbolt meta pages.
    /// Exit code 1 when it fails the check. An encrypted backup needs --identity; without it
    /// only its stored bytes are checked, and the exit code is 2.
    Verify(VerifyArgs),
    /// Make an age key pair for encrypted backups (like age-keygen -o FILE): the identity goes
    /// into a new file, mode 0600, and only the recipient (public key) is printed, for
    /// `snapshot save --encrypt-to`. Keep the identity off the backup hosts and out of the store.
    Keygen(KeygenArgs),
    /// Delete one backup (manifest first, then its object).
    Delete(BackupArgs),
    /// Delete the backups no --keep-* or --max-age rule keeps, and old orphans.
    Prune(PruneArgs),
    /// Copy complete backups to another store (an off-site copy): each object streamed across
    /// and checked against its manifest's SHA-256 and size, the manifest written last. Backups
    /// the destination holds already are skipped; encrypted ones are copied as they are.
    Copy(CopyArgs),
    /// Read a snapshot natively (no etcd, no etcdutl) and show what `etcdutl snapshot status`
    /// shows (hash, revision, total keys, total size), then members, consistent index and
    /// term, compaction, live keys, leases and auth recorded in it.
    ///
    /// The whole db is read into memory (decompressed when zstd).
    Status(StatusArgs),
    /// Restore a snapshot natively (no etcdutl) into a new data dir for one member of a new
    /// cluster: checks etcd's SHA-256 trailer and the db, writes the new membership,
    /// consistent index and term into the db, and writes the WAL and the raft snap file.
    ///
    /// Run it once per member with the same --initial-cluster and --initial-cluster-token,
    /// then start each etcd with those same flags. Written in a temporary dir beside the
    /// target and renamed into place; a non-empty data dir or WAL dir is refused (or moved
    /// aside with --move-aside). The same restore again changes nothing ("already restored").
    Restore(Box<RestoreArgs>),
    /// Make a chain (a full backup and its delta segments, from `backup run`) into one new
    /// full backup at the chain's last revision, offline: the segments' changes are appended
    /// to the full backup's db (no etcd is started), stored like the source (compression,
    /// encryption), verified, and only then published. The old chain is left for retention
    /// (--keep-*) to drop; a killed compaction leaves it as it was.
    Compact(SnapshotCompactArgs),
}

/// Arguments of `snapshot compact`.
#[derive(Debug, Args)]
pub struct SnapshotCompactArgs {
    /// The store holding the chain (`backup run`'s STORE)
    pub store: String,
    /// The chain's full backup, as `snapshot list` names it (default: the newest chain;
    /// required when the store holds several clusters' backups)
    #[arg(long, value_name = "FULL_BACKUP")]
    pub chain: Option<String>,
    /// Where the db is rebuilt (needs room for the db and the segments; default: $TMPDIR)
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Say which chain would be compacted, with how many segments, up to which revision, and
    /// whether it is compacted already, from the store's catalog alone; writes nothing
    #[arg(long)]
    pub dry_run: bool,
    /// No progress bar
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Identities to decrypt an encrypted chain with
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// Store settings
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// Arguments of `snapshot restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A local file (plain, zstd or age-encrypted; `etcdctl snapshot save` output, an
    /// `etcdops` backup or a raw member/snap/db with --skip-hash-check), or a backup URL:
    /// STORE/OBJECT
    #[arg(
        value_name = "FILE|URL",
        required_unless_present = "from_data_dir",
        conflicts_with = "from_data_dir"
    )]
    pub source: Option<String>,
    /// Restore from a surviving member's own data dir (DIR/member/snap/db, etcd stopped)
    /// instead of a snapshot; DIR is only read. The hash check is skipped (no trailer).
    #[arg(long, value_name = "DIR")]
    pub from_data_dir: Option<std::path::PathBuf>,
    /// The data dir to create (absent or empty) [default: NAME.etcd, as etcdutl]
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<std::path::PathBuf>,
    /// A separate WAL dir to create (absent or empty) [default: DIR/member/wal]
    #[arg(long, value_name = "DIR")]
    pub wal_dir: Option<std::path::PathBuf>,
    /// This member's name, as in --initial-cluster [default: default, as etcdutl]
    #[arg(long)]
    pub name: Option<String>,
    /// Every member of the new cluster: name=peer-url,...
    /// [default: default=http://localhost:2380, as etcdutl]
    #[arg(long, value_name = "NAME=URL,...")]
    pub initial_cluster: Option<String>,
    /// The new cluster's token (member IDs derive from it) [default: etcd-cluster, as etcdutl]
    #[arg(long, value_name = "TOKEN")]
    pub initial_cluster_token: Option<String>,
    /// This member's peer URLs; must match its entry in --initial-cluster
    /// [default: http://localhost:2380, as etcdutl]
    #[arg(long, value_delimiter = ',', value_name = "URLS")]
    pub initial_advertise_peer_urls: Vec<String>,
    /// Restore even when etcd's SHA-256 trailer is missing or does not match the db (needed
    /// for a raw member/snap/db copied by hand, which has no trailer; --from-data-dir needs
    /// no flag)
    #[arg(long)]
    pub skip_hash_check: bool,
    /// Raise the latest revision by N, so revisions clients saw before stay in the past
    /// (needs --mark-compacted)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub bump_revision: u64,
    /// Mark the bumped revision compacted, so watchers of older revisions resync (only with
    /// --bump-revision)
    #[arg(long)]
    pub mark_compacted: bool,
    /// The raft .snap file (the v2 store) beside the db and WAL: by-release writes it as
    /// the snapshot's own etcdutl does (every release before 3.8), write always, skip leaves
    /// it out (etcd 3.7 and later never read it; refused for older snapshots)
    #[arg(long, value_enum, default_value_t = V2SnapshotArg::ByRelease, value_name = "WHEN")]
    pub v2_snapshot: V2SnapshotArg,
    /// Rename a non-empty data dir (and WAL dir) to DIR.bak-<UTC time> before restoring
    /// (never deletes); refused for a restored dir a member has run on since, unless --force
    #[arg(long)]
    pub move_aside: bool,
    /// With --move-aside: move the dir aside even when a member has run on it since it was
    /// restored; also restore on an OpenShift control plane, whose own restore procedure
    /// this bypasses
    #[arg(long)]
    pub force: bool,
    /// Owner of the restored tree: USER[:GROUP] (names or numeric ids)
    #[arg(long, value_name = "USER[:GROUP]")]
    pub owner: Option<String>,
    /// Point-in-time restore: URL is a store written by `backup run`; restore the newest
    /// full backup at or before revision R with its delta segments replayed up to R, keeping
    /// etcd's original revisions
    #[arg(long, value_name = "R", conflicts_with_all = ["from_data_dir", "to_time"])]
    pub to_revision: Option<i64>,
    /// Point-in-time restore to the state at time T (RFC 3339, e.g. 2026-11-30T02:15:00Z):
    /// every change `backup run` had received by then
    #[arg(long, value_name = "T", value_parser = rfc3339, conflicts_with = "from_data_dir")]
    pub to_time: Option<chrono::DateTime<chrono::Utc>>,
    /// Check everything and print what would be restored (for a point in time: which full
    /// backup, which segments, the target revision and time), writing nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Identities to decrypt an encrypted snapshot with
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// Store settings (for a backup URL)
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

fn rfc3339(text: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("'{text}' is not an RFC 3339 time such as 2026-11-30T02:15:00Z: {e}"))
}

/// Where backups go and how to reach it. Each option also reads an environment variable;
/// credentials come only from the environment (AWS_*, AZURE_STORAGE_*, GOOGLE_*).
#[derive(Debug, Args, Clone, Default)]
pub struct StoreFlags {
    /// S3-compatible endpoint URL (MinIO, Ceph, ...) [env: AWS_ENDPOINT_URL]
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// S3 region [env: AWS_REGION]
    #[arg(long, value_name = "REGION")]
    pub s3_region: Option<String>,
    /// Path-style S3 requests (endpoint/bucket/key) [env: ETCDOPS_S3_PATH_STYLE]
    #[arg(long)]
    pub s3_path_style: bool,
    /// Allow plain-http store endpoints [env: ETCDOPS_ALLOW_HTTP]
    #[arg(long)]
    pub allow_http: bool,
    /// Azure: use the Azurite emulator account [env: ETCDOPS_AZURE_USE_EMULATOR]
    #[arg(long)]
    pub azure_emulator: bool,
    /// Azure or GCS endpoint override [env: ETCDOPS_STORE_ENDPOINT]
    #[arg(long, value_name = "URL")]
    pub store_endpoint: Option<String>,
    /// Multipart part size for object stores, e.g. 8MiB (at least 5MiB for S3)
    /// [env: ETCDOPS_PART_SIZE]
    #[arg(long, value_parser = byte_size, value_name = "SIZE")]
    pub part_size: Option<usize>,
    /// PEM bundle of CA certificates trusted for the store endpoint besides the system's
    /// (MinIO or Ceph with a private CA) [env: ETCDOPS_STORE_CA_BUNDLE, AWS_CA_BUNDLE]
    #[arg(long, value_name = "FILE")]
    pub store_ca_bundle: Option<std::path::PathBuf>,
}

/// Parses `8MiB`, `5MB`, `1048576`.
pub fn byte_size(text: &str) -> Result<usize, String> {
    etcdops::store::parse_size(text)
}

/// Retention rules: a backup is kept when any rule keeps it; the newest complete backup is
/// always kept.
#[derive(Debug, Args, Clone, Default)]
pub struct RetentionFlags {
    /// Keep the N newest backups
    #[arg(long, value_name = "N")]
    pub keep_last: Option<u32>,
    /// Keep the newest backup of each of the last N hours
    #[arg(long, value_name = "N")]
    pub keep_hourly: Option<u32>,
    /// Keep the newest backup of each of the last N days
    #[arg(long, value_name = "N")]
    pub keep_daily: Option<u32>,
    /// Keep the newest backup of each of the last N weeks
    #[arg(long, value_name = "N")]
    pub keep_weekly: Option<u32>,
    /// Keep the newest backup of each of the last N months
    #[arg(long, value_name = "N")]
    pub keep_monthly: Option<u32>,
    /// Keep every backup younger than this, e.g. 36h or 7d
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub max_age: Option<Duration>,
    /// Remove backup objects without a manifest once older than this
    #[arg(long, value_parser = duration, value_name = "DURATION", default_value = "1h")]
    pub orphan_grace: Duration,
}

/// A second store every backup is copied to, and its own retention.
#[derive(Debug, Args, Clone, Default)]
pub struct CopyToFlags {
    /// Also copy each backup (and, for `backup run`, each segment) to this second store once
    /// stored, read back and checked there; the same store flags and environment credentials
    /// reach both. A second store that fails is a warning, never a failure, and is caught up
    /// when it answers again
    #[arg(long, value_name = "STORE")]
    pub copy_to: Option<String>,
    /// Keep the N newest backups in the second store (its own rule; with neither
    /// --copy-keep-last nor --copy-max-age, the --keep-* and --max-age rules apply there too)
    #[arg(long, value_name = "N", requires = "copy_to")]
    pub copy_keep_last: Option<u32>,
    /// Keep every backup younger than this in the second store, e.g. 30d
    #[arg(long, value_parser = duration, value_name = "DURATION", requires = "copy_to")]
    pub copy_max_age: Option<Duration>,
}

/// Compression of stored backups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum CompressionArg {
    /// zstd
    #[default]
    Zstd,
    /// none: stored exactly as etcd sends it
    None,
}

/// Arguments of `snapshot save`.
#[derive(Debug, Args)]
pub struct SaveArgs {
    /// Destination: a directory, file://, s3://bucket/prefix, gs://bucket/prefix,
    /// az://container/prefix; or FILE.db (a path ending in .db or .DB that is not a
    /// directory; under --compat etcdctl any path that is not an existing directory or a
    /// URL): one plain snapshot file as `etcdctl snapshot save` writes it (etcd's stream with
    /// its SHA-256 trailer, via FILE.part, fsynced, renamed; no manifest, compression or
    /// encryption)
    pub store: String,
    /// Stream from this member only, instead of choosing a healthy follower (for FILE.db
    /// without it: the one --endpoints entry when there is exactly one, as etcdctl)
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Compression of the stored object
    #[arg(long, value_enum, default_value_t)]
    pub compression: CompressionArg,
    /// zstd level, 1 (fast) to 19 (small)
    #[arg(long, default_value_t = etcdops::snapshot::DEFAULT_ZSTD_LEVEL, value_name = "N")]
    pub compression_level: i32,
    /// A label recorded in the manifest, KEY=VALUE (repeatable)
    #[arg(long = "label", value_parser = label, value_name = "KEY=VALUE")]
    pub labels: Vec<(String, String)>,
    /// Read the stored object back and check it before writing the manifest (for an
    /// encrypted backup: its stored bytes' SHA-256 and size)
    #[arg(long)]
    pub verify_after_upload: bool,
    /// Encrypt the backup with age to this recipient: an X25519 public key age1... as
    /// age-keygen prints it (repeatable; any one recipient's identity decrypts). The object's
    /// name then ends in .age; the manifest records the public keys
    #[arg(long = "encrypt-to", value_name = "RECIPIENT")]
    pub encrypt_to: Vec<String>,
    /// Encrypt to every recipient of this file: one age1... per line, # comments and blank
    /// lines allowed (repeatable)
    #[arg(long = "encrypt-to-file", value_name = "FILE")]
    pub encrypt_to_file: Vec<PathBuf>,
    /// On an OpenShift control-plane node, also write into DIR the pair OpenShift's
    /// cluster-backup.sh writes and its cluster-restore.sh reads: snapshot_<time>.db and
    /// static_kuberesources_<time>.tar.gz (the newest kube-apiserver, kube-controller-manager,
    /// kube-scheduler and etcd static pod resources, which hold the encryption keys)
    #[arg(long, value_name = "DIR")]
    pub openshift_backup_dir: Option<PathBuf>,
    /// After a successful save, prune with these rules (in the saved cluster's folder only,
    /// unless --all-clusters)
    #[command(flatten)]
    pub retention: RetentionFlags,
    /// With --keep-*: prune every cluster folder of the store, each by its own newest
    /// backups, instead of only the saved cluster's
    #[arg(long)]
    pub all_clusters: bool,
    /// Write Prometheus metrics here (node_exporter textfile collector), atomically
    #[arg(long, value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    /// S3 Object Lock on the backup and its manifest
    #[command(flatten)]
    pub object_lock: ObjectLockFlags,
    /// A second store (after the catch-up of backups an earlier save could not copy there)
    #[command(flatten)]
    pub copy: CopyToFlags,
    /// No progress bar
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Store settings
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

fn cluster_id(text: &str) -> Result<etcdops::member::MemberId, String> {
    text.parse::<etcdops::member::MemberId>()
        .map_err(|_| format!("'{text}' is not a cluster ID (hex, as `snapshot list` shows it)"))
}

fn label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("'{text}' is not KEY=VALUE")),
    }
}

/// `etcdops backup ...`
#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Run until stopped (SIGTERM, SIGINT or Ctrl-C): a full backup every --full-every and,
    /// in between, every change from a watch in delta segments published at least every
    /// --delta-every. On stop, a full backup in progress is finished (at most 60 s, else
    /// abandoned without leftovers) and the segment being filled is published; exit 0. A
    /// restart continues the chain it left. Refused while another run holds the store's lock
    /// for this cluster (etcd-<cluster>/backup-run.lock.json). One line per full backup,
    /// segment, gap, lost full backup or failure.
    Run(Box<RunArgs>),
}

/// Arguments of `backup run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Destination: a directory, file://, s3://bucket/prefix, gs://bucket/prefix, az://container/prefix
    pub store: String,
    /// Time between full backups, e.g. 6h
    #[arg(long, value_parser = duration, value_name = "DURATION", default_value = "6h")]
    pub full_every: Duration,
    /// Longest a change waits before it is published in a segment (the recovery point), e.g. 1m
    #[arg(long, value_parser = duration, value_name = "DURATION", default_value = "1m")]
    pub delta_every: Duration,
    /// Cut a segment once it holds this many bytes of changes (uncompressed; at most 64 MiB;
    /// cut between two revisions)
    #[arg(long, value_name = "BYTES", default_value_t = etcdops::snapshot::DEFAULT_SEGMENT_BYTES)]
    pub segment_bytes: u64,
    /// Take full backups from this member only, instead of choosing a healthy follower
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// zstd level of the full backups, 1 (fast) to 19 (small)
    #[arg(long, default_value_t = etcdops::snapshot::DEFAULT_ZSTD_LEVEL, value_name = "N")]
    pub compression_level: i32,
    /// A label recorded in each full backup's manifest, KEY=VALUE (repeatable)
    #[arg(long = "label", value_parser = label, value_name = "KEY=VALUE")]
    pub labels: Vec<(String, String)>,
    /// Encrypt full backups and segments with age to this recipient (repeatable)
    #[arg(long = "encrypt-to", value_name = "RECIPIENT")]
    pub encrypt_to: Vec<String>,
    /// Encrypt to every recipient of this file (repeatable)
    #[arg(long = "encrypt-to-file", value_name = "FILE")]
    pub encrypt_to_file: Vec<PathBuf>,
    /// After each full backup, prune with these rules (a full backup and its segments are
    /// kept or deleted together; in the backed-up cluster's folder only, unless
    /// --all-clusters)
    #[command(flatten)]
    pub retention: RetentionFlags,
    /// With --keep-*: prune every cluster folder of the store, each by its own newest
    /// backups, instead of only the backed-up cluster's
    #[arg(long)]
    pub all_clusters: bool,
    /// Keep Prometheus metrics here (node_exporter textfile collector): last full, last
    /// published revision, lag, gaps
    #[arg(long, value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    /// Serve /metrics (Prometheus), /healthz and /readyz (503 once nothing was published for
    /// twice --delta-every) on this address while running, e.g. 127.0.0.1:9479 or 0.0.0.0:9479
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Stopped (SIGTERM, SIGINT) during a full backup, wait this long for it to finish before
    /// abandoning it (its upload removed); keep it below the service manager's stop timeout
    #[arg(long, value_parser = duration, value_name = "DURATION", default_value = "60s")]
    pub stop_grace: Duration,
    /// Every N segments of a chain, compact it (as `snapshot compact` does) into a new full
    /// backup, in the background; segments keep being published meanwhile, a failure is
    /// reported and the run goes on. An encrypted run needs --identity for it
    #[arg(long, value_name = "N")]
    pub compact_after: Option<u64>,
    /// Where compactions rebuild the db (default: $TMPDIR)
    #[arg(long, value_name = "DIR", requires = "compact_after")]
    pub compact_work_dir: Option<PathBuf>,
    /// Identities that decrypt the chains for --compact-after
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// S3 Object Lock on every full backup, segment and manifest the run writes
    #[command(flatten)]
    pub object_lock: ObjectLockFlags,
    /// A second store, copied to beside the run (a slow or lost one never delays the first)
    #[command(flatten)]
    pub copy: CopyToFlags,
    /// Store settings
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// Arguments of `snapshot list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The store to list
    pub store: String,
    /// Show backup objects that have no manifest (crashed or unfinished saves) instead
    #[arg(long)]
    pub orphans: bool,
    /// Store settings
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// Arguments naming one backup.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The backup's URL: the store URL followed by the object name `snapshot list` shows
    pub url: String,
    /// No progress bar
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Store settings
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// Arguments of `snapshot verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The backup
    #[command(flatten)]
    pub backup: BackupArgs,
    /// Identities to decrypt an encrypted backup with
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// Also compare the backup with the live cluster (--endpoints): etcd's KV hash of the
    /// backup at its revision against each member's hashkv at that revision. Exit 1 when a
    /// member differs, 2 when none can be compared (compacted past the backup's revision).
    /// A backup with delta segments is compared at its chain's last revision (replayed into
    /// a private scratch dir)
    #[arg(long)]
    pub against_cluster: bool,
    /// Also restore the backup (with delta segments: its chain's last revision) into a
    /// private scratch dir, start etcd on it on free 127.0.0.1 ports and compare its hashkv
    /// and key count with the backup's; etcd is stopped and the scratch dir removed
    /// afterwards. Needs no cluster. Exit 1 when the drill fails
    #[arg(long)]
    pub restore_drill: bool,
    /// The etcd binary the restore drill starts (default: etcd on PATH)
    #[arg(long, value_name = "PATH", requires = "restore_drill")]
    pub etcd_binary: Option<std::path::PathBuf>,
}

/// Arguments of `snapshot keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// The identity file to create (refused when it exists)
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
}

/// The age identities that decrypt encrypted backups.
#[derive(Debug, Args, Clone, Default)]
pub struct IdentityFlags {
    /// age identity file (AGE-SECRET-KEY-1... lines, # comments) to decrypt an encrypted
    /// backup with (repeatable). Keep it 0600: etcdops warns when others can read it
    #[arg(
        long = "identity",
        value_name = "FILE",
        env = "ETCDOPS_AGE_IDENTITY_FILE"
    )]
    pub identity: Vec<PathBuf>,
}

/// Arguments of `snapshot status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A local file (plain, zstd or age-encrypted; `etcdctl snapshot save` output, an
    /// `etcdops` backup or a raw member/snap/db), or a backup URL: STORE/OBJECT with s3://,
    /// gs://, az:// or file://
    #[arg(value_name = "FILE|URL")]
    pub source: String,
    /// Read the snapshot even when etcd's SHA-256 trailer does not match its db
    #[arg(long)]
    pub skip_hash_check: bool,
    /// Identities to decrypt an encrypted snapshot with
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// Store settings (for a backup URL)
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// Arguments of `snapshot prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// The store to prune
    pub store: String,
    /// Prune only this cluster's folder (the cluster ID in hex, as `snapshot list` shows
    /// it) [default: every cluster folder, the rules applied within each]
    #[arg(long, value_name = "ID", value_parser = cluster_id)]
    pub cluster: Option<etcdops::member::MemberId>,
    /// Show what would be deleted, delete nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Before deleting anything of a cluster, verify its newest backup (read it whole, as
    /// `snapshot verify` does); when that fails, nothing of that cluster is deleted, a warning
    /// says why and the exit code is 1. Without it, the newest backup kept is the newest
    /// whose object has the recorded size
    #[arg(long)]
    pub verify_newest: bool,
    /// Retention rules
    #[command(flatten)]
    pub retention: RetentionFlags,
    /// Store settings
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// Arguments of `snapshot copy`.
#[derive(Debug, Args)]
pub struct CopyArgs {
    /// The store to copy from
    pub source: String,
    /// The store to copy to
    pub destination: String,
    /// Copy only this backup (its object name, as `snapshot list` shows it); repeatable
    /// [default: every complete backup]
    #[arg(long = "backup", value_name = "OBJECT")]
    pub backups: Vec<String>,
    /// Show what would be copied, copy nothing
    #[arg(long)]
    pub dry_run: bool,
    /// No progress bar
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Store settings (for both stores)
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn snapshot_save_takes_labels_sizes_and_retention() {
        let cli = parse(&[
            "snapshot",
            "save",
            "s3://b/p",
            "--label",
            "env=prod",
            "--label",
            "team=sre",
            "--part-size",
            "16MiB",
            "--keep-last",
            "3",
            "--max-age",
            "7d",
            "--compression",
            "none",
        ]);
        let Command::Snapshot(SnapshotCommand::Save(args)) = cli.command else {
            panic!("not a save");
        };
        assert_eq!(
            args.labels,
            vec![("env".into(), "prod".into()), ("team".into(), "sre".into())]
        );
        assert_eq!(args.store_flags.part_size, Some(16 << 20));
        assert_eq!(args.retention.keep_last, Some(3));
        assert_eq!(args.retention.max_age, Some(Duration::from_secs(7 * 86400)));
        assert_eq!(args.retention.orphan_grace, Duration::from_secs(3600));
        assert_eq!(args.compression, CompressionArg::None);
        assert!(
            Cli::try_parse_from(["etcdops", "snapshot", "save", "x", "--label", "novalue"])
                .is_err()
        );
        assert!(
            Cli::try_parse_from(["etcdops", "snapshot", "save", "x", "--part-size", "5XB"])
                .is_err()
        );
    }

    #[test]
    fn snapshot_status_takes_a_file_or_url_and_skip_hash_check() {
        let cli = parse(&["snapshot", "status", "/tmp/x.db", "-w", "json"]);
        let Command::Snapshot(SnapshotCommand::Status(args)) = cli.command else {
            panic!("not a status");
        };
        assert_eq!(args.source, "/tmp/x.db");
        assert!(!args.skip_hash_check);
        assert_eq!(cli.global.write_out, Some(OutputFormat::Json));
        let cli = parse(&[
            "snapshot",
            "status",
            "s3://b/p/x.db.zst",
            "--skip-hash-check",
            "--s3-path-style",
        ]);
        let Command::Snapshot(SnapshotCommand::Status(args)) = cli.command else {
            panic!("not a status");
        };
        assert!(args.skip_hash_check && args.store_flags.s3_path_style);
        assert!(Cli::try_parse_from(["etcdops", "snapshot", "status"]).is_err());
    }

    #[test]
    fn snapshot_restore_takes_cluster_flags_urls_and_revision_bump() {
        let cli = parse(&[
            "snapshot",
            "restore",
            "/tmp/x.db",
            "--data-dir",
            "/var/lib/etcd",
            "--name",
            "a",
            "--initial-cluster",
            "a=http://10.0.0.1:2380,b=http://10.0.0.2:2380",
            "--initial-cluster-token",
            "tok",
            "--initial-advertise-peer-urls",
            "http://10.0.0.1:2380,http://10.0.1.1:2380",
        ]);
        let Command::Snapshot(SnapshotCommand::Restore(args)) = cli.command else {
            panic!("not a restore");
        };
        assert_eq!(args.source.as_deref(), Some("/tmp/x.db"));
        assert_eq!(
            args.data_dir,
            Some(std::path::PathBuf::from("/var/lib/etcd"))
        );
        assert_eq!(args.wal_dir, None);
        assert_eq!(args.initial_advertise_peer_urls.len(), 2);
        assert_eq!((args.bump_revision, args.mark_compacted), (0, false));
        assert!(!args.skip_hash_check);
        let cli = parse(&[
            "snapshot",
            "restore",
            "file:///b/x.db",
            "--data-dir",
            "d",
            "--wal-dir",
            "w",
            "--name",
            "a",
            "--initial-cluster",
            "a=http://h:1",
            "--initial-cluster-token",
            "t",
            "--initial-advertise-peer-urls",
            "http://h:1",
            "--bump-revision",
            "1000000",
            "--mark-compacted",
        ]);
        let Command::Snapshot(SnapshotCommand::Restore(args)) = cli.command else {
            panic!("not a restore");
        };
        assert_eq!(args.wal_dir, Some(std::path::PathBuf::from("w")));
        assert_eq!((args.bump_revision, args.mark_compacted), (1_000_000, true));
        // Every cluster flag may be left out: etcdutl's defaults apply (etcdops' restore
        // command fills them in).
        let cli = parse(&["snapshot", "restore", "x.db"]);
        let Command::Snapshot(SnapshotCommand::Restore(args)) = cli.command else {
            panic!("not a restore");
        };
        assert_eq!(
            (args.name, args.initial_cluster, args.initial_cluster_token),
            (None, None, None)
        );
        assert!(args.data_dir.is_none() && args.initial_advertise_peer_urls.is_empty());
    }

    #[test]
    fn offline_defrag_and_hashkv_take_a_data_dir_or_a_file() {
        let cli = parse(&["defrag", "--data-dir", "/var/lib/etcd"]);
        let Command::Defrag(args) = cli.command else {
            panic!("not a defrag");
        };
        assert_eq!(args.data_dir, Some(PathBuf::from("/var/lib/etcd")));
        assert!(
            Cli::try_parse_from(["etcdops", "defrag", "--data-dir", "d", "--cluster"]).is_err()
        );
        let cli = parse(&["hashkv", "x.db", "--rev", "7"]);
        let Command::Hashkv(args) = cli.command else {
            panic!("not a hashkv");
        };
        assert_eq!((args.source.as_deref(), args.rev), (Some("x.db"), 7));
        let cli = parse(&["hashkv", "--data-dir", "d"]);
        let Command::Hashkv(args) = cli.command else {
            panic!("not a hashkv");
        };
        assert_eq!(args.data_dir, Some(PathBuf::from("d")));
        assert!(Cli::try_parse_from(["etcdops", "hashkv"]).is_err());
        assert!(Cli::try_parse_from(["etcdops", "hashkv", "x.db", "--data-dir", "d"]).is_err());
    }
}

#[cfg(test)]
mod encryption_flag_tests {
    use super::*;

    #[test]
    fn encrypt_to_and_identity_are_repeatable_and_status_and_restore_take_identity() {
        let cli = Cli::try_parse_from([
            "etcdops",
            "snapshot",
            "save",
            "/b",
            "--encrypt-to",
            "age1a",
            "--encrypt-to",
            "age1b",
            "--encrypt-to-file",
            "/r.txt",
        ])
        .unwrap();
        let Command::Snapshot(SnapshotCommand::Save(args)) = cli.command else {
            panic!("not save");
        };
        assert_eq!(args.encrypt_to, ["age1a", "age1b"]);
        assert_eq!(args.encrypt_to_file, [PathBuf::from("/r.txt")]);

        let cli = Cli::try_parse_from([
            "etcdops",
            "snapshot",
            "verify",
            "/b/x.db.zst.age",
            "--identity",
            "/k1",
            "--identity",
            "/k2",
        ])
        .unwrap();
        let Command::Snapshot(SnapshotCommand::Verify(args)) = cli.command else {
            panic!("not verify");
        };
        assert_eq!(
            args.identity.identity,
            [PathBuf::from("/k1"), PathBuf::from("/k2")]
        );
        assert_eq!(args.backup.url, "/b/x.db.zst.age");
        for command in ["status", "restore"] {
            let mut argv = vec![
                "etcdops",
                "snapshot",
                command,
                "/b/x.age",
                "--identity",
                "/k",
            ];
            if command == "restore" {
                argv.extend([
                    "--data-dir",
                    "/d",
                    "--name",
                    "m",
                    "--initial-cluster",
                    "m=http://a:2380",
                    "--initial-cluster-token",
                    "t",
                    "--initial-advertise-peer-urls",
                    "http://a:2380",
                ]);
            }
            assert!(Cli::try_parse_from(argv).is_ok(), "{command}");
        }
    }
}

/// Arguments of `hashkv` (etcdutl 3.6's, offline).
#[derive(Debug, Args)]
pub struct OfflineHashKvArgs {
    /// A snapshot file (plain, zstd or age-encrypted) or a backup URL: STORE/OBJECT
    #[arg(
        value_name = "FILE|URL",
        required_unless_present = "data_dir",
        conflicts_with = "data_dir"
    )]
    pub source: Option<String>,
    /// The data dir of a stopped member (its member/snap/db) instead of a snapshot
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The revision to hash [default: the latest]
    #[arg(long, value_name = "REV", default_value_t = 0)]
    pub rev: i64,
    /// Identities to decrypt an encrypted snapshot with
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// Store settings (for a backup URL)
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// `--v2-snapshot`: whether a restore writes the raft `.snap` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum V2SnapshotArg {
    /// As the snapshot's release's etcdutl.
    ByRelease,
    /// Always.
    Write,
    /// Never (etcd 3.7 and later).
    Skip,
}

impl From<V2SnapshotArg> for etcdops::snapshot::V2Snapshot {
    fn from(arg: V2SnapshotArg) -> Self {
        match arg {
            V2SnapshotArg::ByRelease => Self::ByRelease,
            V2SnapshotArg::Write => Self::Write,
            V2SnapshotArg::Skip => Self::Skip,
        }
    }
}
