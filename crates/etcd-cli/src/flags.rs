//! Command-line flags: etcdctl's global flags and environment variables, and our commands.
//!
//! Every connection flag falls back to the `ETCDCTL_*` variable etcdctl reads; the fallback
//! itself lives in `etcd_core::ConnectionOptions::or_env` so that every front-end agrees.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use etcd_core::{ConnectionOptions, Secret};

/// Safe etcd operations: health, status and membership today; backup and restore next.
#[derive(Debug, Parser)]
#[command(name = "etcdops", version, about, max_term_width = 100)]
pub struct Cli {
    /// Connection and output flags, accepted before or after the command.
    #[command(flatten)]
    pub global: GlobalFlags,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Output format of every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// A human-readable table.
    #[default]
    Table,
    /// One JSON document on stdout, with the documented snake_case schema.
    Json,
    /// Lines in the style of etcdctl's `-w simple`.
    Simple,
}

fn duration(text: &str) -> Result<Duration, String> {
    etcd_core::parse_duration(text)
}

/// Flags shared by every command, named as etcdctl names them.
#[derive(Debug, Args, Default)]
pub struct GlobalFlags {
    /// gRPC endpoints, comma-separated [env: ETCDCTL_ENDPOINTS] [default: 127.0.0.1:2379]
    #[arg(long, global = true, value_delimiter = ',', value_name = "URLS")]
    pub endpoints: Option<Vec<String>>,
    /// Verify servers' certificates with this CA bundle [env: ETCDCTL_CACERT]
    #[arg(long, global = true, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Client certificate, for servers that require one [env: ETCDCTL_CERT]
    #[arg(long, global = true, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// Key of the client certificate [env: ETCDCTL_KEY]
    #[arg(long, global = true, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Accept any server certificate: encrypted but not authenticated; avoid
    /// [env: ETCDCTL_INSECURE_SKIP_TLS_VERIFY]
    #[arg(long, global = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_name = "BOOL")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// Verify the server certificate against this name instead of the endpoint's host
    #[arg(long, global = true, value_name = "NAME")]
    pub server_name: Option<String>,
    /// User name, or USER:PASSWORD [env: ETCDCTL_USER]
    #[arg(long, global = true, value_name = "USER")]
    pub user: Option<String>,
    /// Password of --user [env: ETCDCTL_PASSWORD]
    #[arg(long, global = true, value_name = "PASSWORD")]
    pub password: Option<String>,
    /// Time allowed to connect to one endpoint, e.g. 2s [env: ETCDCTL_DIAL_TIMEOUT] [default: 2s]
    #[arg(long, global = true, value_parser = duration, value_name = "DURATION")]
    pub dial_timeout: Option<Duration>,
    /// Time allowed for one request, e.g. 5s [env: ETCDCTL_COMMAND_TIMEOUT] [default: 5s]
    #[arg(long, global = true, value_parser = duration, value_name = "DURATION")]
    pub command_timeout: Option<Duration>,
    /// Find endpoints in the DNS SRV records of this domain [env: ETCDCTL_DISCOVERY_SRV]
    #[arg(long, short = 'd', global = true, value_name = "DOMAIN")]
    pub discovery_srv: Option<String>,
    /// Service name suffix of the SRV records [env: ETCDCTL_DISCOVERY_SRV_NAME]
    #[arg(long, global = true, value_name = "NAME")]
    pub discovery_srv_name: Option<String>,
    /// Accept plain-http _etcd-client SRV records [env: ETCDCTL_INSECURE_DISCOVERY] [default: true]
    #[arg(long, global = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_name = "BOOL")]
    pub insecure_discovery: Option<bool>,
    /// DNS server (IP or IP:PORT) for SRV discovery instead of the system resolver
    /// [env: ETCDOPS_DNS_SERVER]
    #[arg(long, global = true, value_name = "ADDR")]
    pub dns_server: Option<String>,
    /// Output format
    #[arg(long, short = 'w', global = true, value_enum, default_value_t)]
    pub write_out: OutputFormat,
    /// auto: fill unset --endpoints, --cacert, --cert and --key from the etcd found on this
    /// host (kubeadm or OpenShift static pod, or a package's config); flags and ETCDCTL_*
    /// variables still win
    #[arg(long, global = true, value_enum, value_name = "MODE")]
    pub platform: Option<PlatformMode>,
    /// Directory standing for `/` when looking for etcd's manifests and configuration
    /// (`--platform auto`, the OpenShift guard, `platform detect`) [env: ETCDOPS_PLATFORM_ROOT]
    /// [default: /]
    #[arg(long, global = true, env = "ETCDOPS_PLATFORM_ROOT", value_name = "DIR")]
    pub platform_root: Option<PathBuf>,
}

/// `--platform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlatformMode {
    /// Detect the platform and fill unset connection flags from it.
    Auto,
}

impl GlobalFlags {
    /// The connection options as given on the command line (environment not yet applied).
    pub fn connection_options(&self) -> ConnectionOptions {
        ConnectionOptions {
            endpoints: self.endpoints.clone(),
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            server_name: self.server_name.clone(),
            user: self.user.clone(),
            password: self.password.as_deref().map(Secret::new),
            dial_timeout: self.dial_timeout,
            command_timeout: self.command_timeout,
            discovery_srv: self.discovery_srv.clone(),
            discovery_srv_name: self.discovery_srv_name.clone(),
            insecure_discovery: self.insecure_discovery,
            dns_server: self.dns_server.clone(),
            ..Default::default()
        }
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check endpoints: health, status, KV hashes.
    #[command(subcommand)]
    Endpoint(EndpointCommand),
    /// Cluster membership.
    #[command(subcommand)]
    Member(MemberCommand),
    /// Snapshot backups: save, list, verify, delete, prune.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
    /// Continuous backups: `backup run` takes full backups on schedule and streams every
    /// change in between into delta segments, for restores to any revision or time.
    #[command(subcommand)]
    Backup(BackupCommand),
    /// Move leadership to another member (ID, name or peer URL).
    MoveLeader(MoveLeaderArgs),
    /// Cluster alarms (NOSPACE, CORRUPT).
    #[command(subcommand)]
    Alarm(AlarmCommand),
    /// Defragment members one at a time: followers first, the leader last, checking health
    /// after each and stopping at the first failure. Exit code 1 when it stopped early.
    Defrag(DefragArgs),
    /// Compact the key history up to a revision, or keep the last N revisions.
    Compact(CompactArgs),
    /// Versions of etcdops and of every member.
    Version,
    /// Read keys (read-only; paged, Kubernetes Secrets redacted unless --show-secrets).
    Get(GetArgs),
    /// Every retained version of a key, newest first, down to the compacted revision.
    History(HistoryArgs),
    /// Past and live events from a revision until --until-rev or --timeout.
    Watch(WatchArgs),
    /// One report: quorum, leader, unhealthy members, alarms, KV hash agreement, db size
    /// against quota, fragmentation, version skew, learners. Exit code 0 healthy, 1 warnings,
    /// 2 critical.
    Check(CheckArgs),
    /// Leases, read-only: list them with TTLs and key counts, or one lease's TTL and keys.
    #[command(subcommand)]
    Lease(LeaseCommand),
    /// Authentication: status, enable (guarded: refuses on a Kubernetes cluster unless
    /// --force), disable.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// etcd users: list, get, add, delete, passwd, grant-role, revoke-role (idempotent).
    #[command(subcommand)]
    User(UserCommand),
    /// etcd roles and their key permissions (idempotent).
    #[command(subcommand)]
    Role(RoleCommand),
    /// Kubernetes: encryption-at-rest audit (live or from a snapshot), EncryptionConfiguration
    /// generate and key rotation, new keys, decoding of stored values.
    #[command(subcommand)]
    K8s(K8sCommand),
    /// This host's etcd: detect the platform (kubeadm, OpenShift, standalone), stop or start a
    /// static etcd pod by parking its manifest.
    #[command(subcommand)]
    Platform(PlatformCommand),
    /// Certificates for a standalone cluster: a small CA, and member certificates (server and
    /// client use, DNS and IP SANs); valid files are kept, keys written 0600 and never printed.
    #[command(subcommand)]
    Pki(crate::commands::pki::PkiCommand),
}

/// `etcdops platform ...`
#[derive(Debug, Subcommand)]
pub enum PlatformCommand {
    /// Which etcd runs here (kubeadm, openshift, standalone or none), with its endpoints, data
    /// dir, certificate paths, peer URLs, name and version.
    Detect(PlatformDetectArgs),
    /// Stop the static etcd pod: move its manifest to the parking dir (kept, never deleted)
    /// and wait until etcd's client ports close.
    Stop(StaticPodArgs),
    /// Start the static etcd pod: move its manifest back and wait until etcd is healthy.
    Start(StaticPodArgs),
}

/// Arguments of `platform detect`.
#[derive(Debug, Args)]
pub struct PlatformDetectArgs {
    /// Directory standing for `/` (a copy of a host's files) [default: --platform-root, or /]
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Arguments of `platform stop|start`.
#[derive(Debug, Args)]
pub struct StaticPodArgs {
    /// The manifest in the kubelet's directory [default: the detected one, or
    /// /etc/kubernetes/manifests/etcd.yaml under --platform-root]
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Where the manifest waits while etcd is stopped [default:
    /// /etc/kubernetes/etcdops-parked under --platform-root]
    #[arg(long, value_name = "DIR")]
    pub parking_dir: Option<PathBuf>,
    /// How long to wait for etcd to go or to become healthy, e.g. 2m
    #[arg(long, value_parser = duration, value_name = "DURATION", default_value = "2m")]
    pub timeout: Duration,
    /// Say what would be done; change nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// Sort keys by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum SortByArg {
    /// Key
    Key,
    /// Creation revision
    Create,
    /// Modification revision
    Modify,
    /// Version
    Version,
    /// Value
    Value,
}

/// Sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum OrderArg {
    /// Ascending
    Ascend,
    /// Descending
    Descend,
}

/// Arguments of `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The key, or the start of a range
    #[arg(id = "key_name", value_name = "KEY")]
    pub key: String,
    /// End of the range (exclusive)
    pub range_end: Option<String>,
    /// Every key starting with KEY
    #[arg(long, conflicts_with_all = ["from_key", "range_end"])]
    pub prefix: bool,
    /// Every key from KEY on
    #[arg(long, conflicts_with = "range_end")]
    pub from_key: bool,
    /// Read at this revision (0: latest)
    #[arg(long, default_value_t = 0)]
    pub rev: i64,
    /// Keys only
    #[arg(long)]
    pub keys_only: bool,
    /// Only the number of keys
    #[arg(long)]
    pub count_only: bool,
    /// At most N keys (0: all)
    #[arg(long, default_value_t = 0)]
    pub limit: i64,
    /// Sort by (anything but KEY is sorted by etcd in one request, not paged)
    #[arg(long, value_enum, ignore_case = true)]
    pub sort_by: Option<SortByArg>,
    /// Sort order
    #[arg(long, value_enum, ignore_case = true)]
    pub order: Option<OrderArg>,
    /// Print values only
    #[arg(long)]
    pub print_value_only: bool,
    /// Show the values of Kubernetes Secrets (/registry/secrets/, /kubernetes.io/secrets/)
    #[arg(long)]
    pub show_secrets: bool,
}

/// Arguments of `history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The key
    #[arg(id = "key_name", value_name = "KEY")]
    pub key: String,
    /// Show the values of Kubernetes Secrets
    #[arg(long)]
    pub show_secrets: bool,
}

/// Arguments of `watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The key, or the prefix with --prefix
    #[arg(id = "key_name", value_name = "KEY")]
    pub key: String,
    /// Watch every key starting with KEY
    #[arg(long)]
    pub prefix: bool,
    /// First revision to show (0: from now on)
    #[arg(long, default_value_t = 0)]
    pub rev: i64,
    /// Stop once every event up to this revision was shown
    #[arg(long, value_name = "REV")]
    pub until_rev: Option<i64>,
    /// Stop after this long, e.g. 30s
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,
    /// Show the values of Kubernetes Secrets
    #[arg(long)]
    pub show_secrets: bool,
}

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The members' --quota-backend-bytes, e.g. 8GiB [default: etcd's 2GiB]
    #[arg(long, value_parser = byte_size, value_name = "SIZE")]
    pub quota_bytes: Option<usize>,
    /// Report a defrag as worthwhile when at least this many bytes would be reclaimed
    #[arg(long, value_parser = byte_size, value_name = "SIZE", default_value = "64MiB")]
    pub defrag_min_bytes: usize,
}

/// `etcdops move-leader`.
#[derive(Debug, Args)]
pub struct MoveLeaderArgs {
    /// The member to lead: ID (hex), name or peer URL
    pub member: String,
}

/// `etcdops alarm ...`
#[derive(Debug, Subcommand)]
pub enum AlarmCommand {
    /// List active alarms.
    List,
    /// Clear every active alarm (after freeing space: compact and defrag first for NOSPACE).
    Disarm,
}

/// `etcdops compact`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("how").required(true).args(["revision", "keep_revisions"])))]
pub struct CompactArgs {
    /// Compact up to this revision
    pub revision: Option<i64>,
    /// Keep this many revisions before the current one
    #[arg(long, value_name = "N")]
    pub keep_revisions: Option<i64>,
    /// Wait until the compaction is applied to the backend
    #[arg(long)]
    pub physical: bool,
}

/// `etcdops endpoint ...`
#[derive(Debug, Subcommand)]
pub enum EndpointCommand {
    /// Health of each endpoint: a linearizable read and no alarm. Exit code 1 when any is unhealthy.
    Health(ClusterFlag),
    /// Status of each endpoint: member, version, db size, leader, raft term and indexes.
    Status(ClusterFlag),
    /// KV hash of each endpoint at one revision, and whether all agree. Exit code 1 when not.
    Hashkv(HashKvArgs),
}

/// Arguments of `defrag`.
#[derive(Debug, Args)]
pub struct DefragArgs {
    /// Which endpoints.
    #[command(flatten)]
    pub cluster: ClusterFlag,
    /// Run even on OpenShift, whose cluster-etcd-operator owns defragmentation
    #[arg(long)]
    pub force: bool,
}

/// `--cluster`.
#[derive(Debug, Args)]
pub struct ClusterFlag {
    /// Address every member's client URLs (from the member list), not just --endpoints
    #[arg(long)]
    pub cluster: bool,
}

/// Arguments of `endpoint hashkv`.
#[derive(Debug, Args)]
pub struct HashKvArgs {
    /// Address every member's client URLs (from the member list), not just --endpoints
    #[arg(long)]
    pub cluster: bool,
    /// Revision to hash up to; 0 means the lowest current revision among the endpoints
    #[arg(long, default_value_t = 0)]
    pub rev: i64,
}

/// `etcdops member ...`
#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// List the cluster's members.
    List,
    /// Add a member (idempotent) and print what it needs to start: ETCD_NAME,
    /// ETCD_INITIAL_CLUSTER, ETCD_INITIAL_CLUSTER_STATE=existing (`-w simple`: shell variables).
    Add(MemberAddArgs),
    /// Remove a member (ID, name or peer URL); refuses to break quorum, moves leadership first.
    Remove(MemberSelectArgs),
    /// Change a member's peer URLs.
    Update(MemberUpdateArgs),
    /// Promote a learner to a voting member; refuses one that is not in sync.
    Promote(MemberSelectArgs),
}

/// Arguments of `member add`.
#[derive(Debug, Args)]
pub struct MemberAddArgs {
    /// The new member's name (its etcd --name)
    pub name: String,
    /// Its peer URLs, comma-separated
    #[arg(long, value_delimiter = ',', required = true, value_name = "URLS")]
    pub peer_urls: Vec<String>,
    /// Add it as a non-voting learner (promote it once in sync)
    #[arg(long)]
    pub learner: bool,
    /// Add a voting member even while members are unhealthy
    #[arg(long)]
    pub force: bool,
}

/// A member named by ID (hex), name or peer URL.
#[derive(Debug, Args)]
pub struct MemberSelectArgs {
    /// The member: ID (hex), name or peer URL
    pub member: String,
    /// Override the safety guard
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `member update`.
#[derive(Debug, Args)]
pub struct MemberUpdateArgs {
    /// The member: ID (hex), name or peer URL
    pub member: String,
    /// Its new peer URLs, comma-separated
    #[arg(long, value_delimiter = ',', required = true, value_name = "URLS")]
    pub peer_urls: Vec<String>,
    /// Run even on OpenShift, whose cluster-etcd-operator owns membership
    #[arg(long)]
    pub force: bool,
}

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
    /// The data dir to create (absent or empty)
    #[arg(long, value_name = "DIR")]
    pub data_dir: std::path::PathBuf,
    /// A separate WAL dir to create (absent or empty) [default: DIR/member/wal]
    #[arg(long, value_name = "DIR")]
    pub wal_dir: Option<std::path::PathBuf>,
    /// This member's name, as in --initial-cluster
    #[arg(long)]
    pub name: String,
    /// Every member of the new cluster: name=peer-url,...
    #[arg(long, value_name = "NAME=URL,...")]
    pub initial_cluster: String,
    /// The new cluster's token (member IDs derive from it)
    #[arg(long, value_name = "TOKEN")]
    pub initial_cluster_token: String,
    /// This member's peer URLs; must match its entry in --initial-cluster
    #[arg(long, value_delimiter = ',', required = true, value_name = "URLS")]
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
}

/// Parses `8MiB`, `5MB`, `1048576`.
pub fn byte_size(text: &str) -> Result<usize, String> {
    etcd_store::parse_size(text)
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
    /// Destination: a directory, file://, s3://bucket/prefix, gs://bucket/prefix, az://container/prefix
    pub store: String,
    /// Stream from this member only, instead of choosing a healthy follower
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Compression of the stored object
    #[arg(long, value_enum, default_value_t)]
    pub compression: CompressionArg,
    /// zstd level, 1 (fast) to 19 (small)
    #[arg(long, default_value_t = etcd_snapshot::DEFAULT_ZSTD_LEVEL, value_name = "N")]
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
    /// No progress bar
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Store settings
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

fn cluster_id(text: &str) -> Result<etcd_core::MemberId, String> {
    text.parse::<etcd_core::MemberId>()
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
    Run(RunArgs),
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
    #[arg(long, value_name = "BYTES", default_value_t = etcd_snapshot::DEFAULT_SEGMENT_BYTES)]
    pub segment_bytes: u64,
    /// Take full backups from this member only, instead of choosing a healthy follower
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// zstd level of the full backups, 1 (fast) to 19 (small)
    #[arg(long, default_value_t = etcd_snapshot::DEFAULT_ZSTD_LEVEL, value_name = "N")]
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
    /// Stopped (SIGTERM, SIGINT) during a full backup, wait this long for it to finish before
    /// abandoning it (its upload removed); keep it below the service manager's stop timeout
    #[arg(long, value_parser = duration, value_name = "DURATION", default_value = "60s")]
    pub stop_grace: Duration,
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
    pub cluster: Option<etcd_core::MemberId>,
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

/// `etcdops lease ...` (no revoke: revoking a lease deletes its keys).
#[derive(Debug, Subcommand)]
pub enum LeaseCommand {
    /// Every lease: ID (hex, as etcdctl prints it), granted TTL, remaining TTL, keys attached.
    List,
    /// One lease's granted and remaining TTL; with --keys, the keys attached. Exit code 1
    /// when the lease does not exist (expired or revoked).
    Timetolive(LeaseTimeToLiveArgs),
}

/// Arguments of `lease timetolive`.
#[derive(Debug, Args)]
pub struct LeaseTimeToLiveArgs {
    /// The lease ID in hex, as `lease list` prints it
    #[arg(value_name = "ID")]
    pub id: etcd_core::LeaseId,
    /// Also list the keys attached to the lease
    #[arg(long)]
    pub keys: bool,
}

/// `etcdops auth ...`
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Whether authentication is enabled, and whether the root user is ready for it.
    Status,
    /// Enable authentication. Refuses without a root user holding the root role, and on a
    /// cluster holding Kubernetes data (keys under /registry/ or /kubernetes.io/) unless
    /// --force: kube-apiserver's certificate user needs a role first.
    Enable(AuthEnableArgs),
    /// Disable authentication (needs the root role: --user root).
    Disable,
}

/// Arguments of `auth enable`.
#[derive(Debug, Args)]
pub struct AuthEnableArgs {
    /// Enable even though the cluster holds Kubernetes data (after giving kube-apiserver's
    /// certificate user a role with readwrite on its prefix)
    #[arg(long)]
    pub force: bool,
}

/// `etcdops user ...`
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// List users.
    List,
    /// Show a user and its roles.
    Get(NameArg),
    /// Add a user (an existing one is left unchanged). The password comes from
    /// --password-file, --password-env or a prompt on a terminal, never the command line
    /// (the global --password is the password of --user, the connection).
    Add(UserAddArgs),
    /// Delete a user (one that does not exist is not an error).
    Delete(NameArg),
    /// Change a user's password (from --password-file, --password-env or a prompt).
    Passwd(UserPasswdArgs),
    /// Grant a role to a user.
    GrantRole(UserRoleArgs),
    /// Revoke a role from a user.
    RevokeRole(UserRoleArgs),
}

/// A user or role name.
#[derive(Debug, Args)]
pub struct NameArg {
    /// The name
    pub name: String,
}

/// Where a new password comes from: never the command line.
#[derive(Debug, Args)]
pub struct PasswordFlags {
    /// Read the new password from this file (one trailing newline is dropped)
    #[arg(long, value_name = "FILE", conflicts_with = "password_env")]
    pub password_file: Option<PathBuf>,
    /// Read the new password from this environment variable (give its name)
    #[arg(long, value_name = "VARIABLE")]
    pub password_env: Option<String>,
}

/// Arguments of `user add`.
#[derive(Debug, Args)]
pub struct UserAddArgs {
    /// The user name
    pub name: String,
    /// Where the password comes from
    #[command(flatten)]
    pub password: PasswordFlags,
    /// No password: the user authenticates with a client certificate whose CN is its name
    #[arg(long, conflicts_with_all = ["password_file", "password_env"])]
    pub no_password: bool,
}

/// Arguments of `user passwd`.
#[derive(Debug, Args)]
pub struct UserPasswdArgs {
    /// The user name
    pub name: String,
    /// Where the password comes from
    #[command(flatten)]
    pub password: PasswordFlags,
}

/// Arguments of `user grant-role` and `user revoke-role`.
#[derive(Debug, Args)]
pub struct UserRoleArgs {
    /// The user name
    pub name: String,
    /// The role
    pub role: String,
}

/// `etcdops role ...`
#[derive(Debug, Subcommand)]
pub enum RoleCommand {
    /// List roles.
    List,
    /// Show a role and its permissions.
    Get(NameArg),
    /// Add a role (an existing one is left unchanged).
    Add(NameArg),
    /// Delete a role (one that does not exist is not an error).
    Delete(NameArg),
    /// Grant a role read, write or readwrite on a key, a range [KEY, RANGE_END) or a prefix.
    GrantPermission(GrantPermissionArgs),
    /// Revoke a role's permission on exactly this key, range or prefix.
    RevokePermission(KeyRangeArgs),
}

/// Kind of permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PermissionArg {
    /// Read
    Read,
    /// Write
    Write,
    /// Read and write
    Readwrite,
}

/// Arguments of `role grant-permission`.
#[derive(Debug, Args)]
pub struct GrantPermissionArgs {
    /// The role
    pub role: String,
    /// read, write or readwrite
    #[arg(value_enum)]
    pub permission: PermissionArg,
    /// The key, or the start of the range ("" with --prefix: every key)
    #[arg(id = "permission_key", value_name = "KEY")]
    pub key: String,
    /// End of the range (exclusive)
    pub range_end: Option<String>,
    /// Every key starting with KEY
    #[arg(long, conflicts_with = "range_end")]
    pub prefix: bool,
}

/// Arguments of `role revoke-permission`.
#[derive(Debug, Args)]
pub struct KeyRangeArgs {
    /// The role
    pub role: String,
    /// The key, or the start of the range
    #[arg(id = "permission_key", value_name = "KEY")]
    pub key: String,
    /// End of the range (exclusive)
    pub range_end: Option<String>,
    /// Every key starting with KEY
    #[arg(long, conflicts_with = "range_end")]
    pub prefix: bool,
}

/// `etcdops k8s ...`
#[derive(Debug, Subcommand)]
pub enum K8sCommand {
    /// Prove encryption at rest from etcd: scans <prefix>/<resource>/ live (paged) or inside a
    /// snapshot (offline, no etcd started) and reports, per provider and key name, how many
    /// objects are encrypted, and which are plaintext (namespace/name, never data).
    ///
    /// Exit code 1 with --require-encrypted when anything is plaintext; 2 when nothing was
    /// scanned (zero objects is never a pass).
    EncryptionStatus(EncryptionStatusArgs),
    /// kube-apiserver's EncryptionConfiguration: generate it, or rotate its keys one step at a
    /// time (add-key, promote, drop-old). Written with mode 0600; the same file goes to every
    /// control-plane host.
    #[command(subcommand)]
    EncryptionConfig(EncryptionConfigCommand),
    /// Encryption keys: made once per cluster, then given to every host's config step.
    #[command(subcommand)]
    EncryptionKey(EncryptionKeyCommand),
    /// Decode stored Kubernetes values: JSON pretty-printed (Secret data redacted), protobuf
    /// to apiVersion, kind, namespace, name and size, encrypted values reported as such.
    Get(K8sGetArgs),
}

/// Arguments of `k8s encryption-status`.
#[derive(Debug, Args)]
pub struct EncryptionStatusArgs {
    /// Resources to scan, comma-separated plural names
    #[arg(
        long = "resource",
        alias = "resources",
        value_delimiter = ',',
        default_value = "secrets",
        value_name = "RESOURCES"
    )]
    pub resources: Vec<String>,
    /// Scan this snapshot offline instead of the cluster: a local file (plain or zstd) or a
    /// backup URL STORE/OBJECT
    #[arg(long, value_name = "FILE|URL")]
    pub snapshot: Option<String>,
    /// kube-apiserver's --etcd-prefix [default: found: /registry, or /kubernetes.io on OpenShift]
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// Exit with code 1 when any object is plaintext
    #[arg(long)]
    pub require_encrypted: bool,
    /// List every object, not only the plaintext ones
    #[arg(long)]
    pub all: bool,
    /// List at most N objects (0: no limit); the totals count every object
    #[arg(long, default_value_t = etcd_k8s::DEFAULT_MAX_OBJECTS, value_name = "N")]
    pub max_objects: usize,
    /// Read the snapshot even when etcd's SHA-256 trailer does not match its db
    #[arg(long)]
    pub skip_hash_check: bool,
    /// Identities for an encrypted backup
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// Store settings (for a backup URL)
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// `k8s encryption-config ...`
#[derive(Debug, Subcommand)]
pub enum EncryptionConfigCommand {
    /// Write a new EncryptionConfiguration with one key (then identity, so plaintext written
    /// before stays readable). The same key on every host: give the same --key-file.
    Generate(EncryptionConfigArgs),
    /// One step of Kubernetes' key rotation, in order, each rolled out to every host (and
    /// every kube-apiserver restarted) before the next: add-key (the new key second), promote
    /// (the new key first), drop-old (after every object was rewritten). A step out of order
    /// is refused; a step already done changes nothing.
    Rotate(RotateArgs),
}

/// A provider whose keys etcdops manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    /// AES-CBC, PKCS#7 padding
    Aescbc,
    /// AES-GCM (rotate keys every 200,000 writes)
    Aesgcm,
    /// XSalsa20-Poly1305
    Secretbox,
}

/// Arguments of `k8s encryption-config generate` (and, flattened, `rotate`).
#[derive(Debug, Args)]
pub struct EncryptionConfigArgs {
    /// The EncryptionConfiguration file (kube-apiserver's --encryption-provider-config)
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The provider
    #[arg(long, value_enum, default_value = "aescbc")]
    pub provider: ProviderArg,
    /// Resources of the entry, comma-separated
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "secrets",
        value_name = "RESOURCES"
    )]
    pub resources: Vec<String>,
    /// The key: a JSON file from `encryption-key new --out`, or a file holding the base64 key
    /// (then --key-name names it); `-` reads standard input
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// The key's name (promote and drop-old need only this)
    #[arg(long, value_name = "NAME")]
    pub key_name: Option<String>,
    /// Check mode: show what would change (key names only), write nothing
    #[arg(long)]
    pub check: bool,
    /// generate: replace a file that holds other keys (what they encrypted becomes unreadable)
    #[arg(long)]
    pub force: bool,
    /// generate: identity first, the key second (first rollout to several apiservers: all
    /// can read encrypted data before any writes it); then `rotate --step promote`
    #[arg(long)]
    pub identity_first: bool,
}

/// A key-rotation step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RotateStepArg {
    /// Add the new key second: every apiserver can read it, none writes with it yet
    AddKey,
    /// Make the new key first: apiservers write with it
    Promote,
    /// Drop every other key (after every object was rewritten with the new key)
    DropOld,
}

/// Arguments of `k8s encryption-config rotate`.
#[derive(Debug, Args)]
pub struct RotateArgs {
    /// The step
    #[arg(long, value_enum)]
    pub step: RotateStepArg,
    /// File, provider, key
    #[command(flatten)]
    pub config: EncryptionConfigArgs,
}

/// `k8s encryption-key ...`
#[derive(Debug, Subcommand)]
pub enum EncryptionKeyCommand {
    /// Make a key: 32 bytes from the OS CSPRNG, base64, printed once (or written to --out with
    /// mode 0600). Keep it in a vault; every control-plane host needs the same key.
    New(NewKeyArgs),
}

/// Arguments of `k8s encryption-key new`.
#[derive(Debug, Args)]
pub struct NewKeyArgs {
    /// The key's name [default: key-<UTC time>]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The provider it is for
    #[arg(long, value_enum, default_value = "aescbc")]
    pub provider: ProviderArg,
    /// Write the key as JSON to this new file (mode 0600) instead of printing it
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Arguments of `k8s get`.
#[derive(Debug, Args)]
pub struct K8sGetArgs {
    /// The key, or the start of the keys with --prefix
    #[arg(id = "key_name", value_name = "KEY")]
    pub key: String,
    /// Every key starting with KEY
    #[arg(long)]
    pub prefix: bool,
    /// Read at this revision (0: latest)
    #[arg(long, default_value_t = 0)]
    pub rev: i64,
    /// At most N keys (0: all)
    #[arg(long, default_value_t = 0)]
    pub limit: i64,
}

#[cfg(test)]
mod k8s_flag_tests {
    use super::*;

    #[test]
    fn k8s_commands_parse() {
        let cli = Cli::try_parse_from([
            "etcdops",
            "k8s",
            "encryption-status",
            "--resource",
            "secrets,configmaps",
            "--snapshot",
            "/b/x.db.zst",
            "--require-encrypted",
        ])
        .unwrap();
        let Command::K8s(K8sCommand::EncryptionStatus(args)) = cli.command else {
            panic!("not encryption-status");
        };
        assert_eq!(args.resources, ["secrets", "configmaps"]);
        assert!(args.require_encrypted);
        assert_eq!(args.max_objects, etcd_k8s::DEFAULT_MAX_OBJECTS);

        let cli = Cli::try_parse_from([
            "etcdops",
            "k8s",
            "encryption-config",
            "rotate",
            "--step",
            "drop-old",
            "--config",
            "/etc/k/enc.yaml",
            "--key-name",
            "k2",
            "--check",
        ])
        .unwrap();
        let Command::K8s(K8sCommand::EncryptionConfig(EncryptionConfigCommand::Rotate(args))) =
            cli.command
        else {
            panic!("not rotate");
        };
        assert_eq!(args.step, RotateStepArg::DropOld);
        assert!(args.config.check);
        assert_eq!(args.config.provider, ProviderArg::Aescbc);
        assert!(
            Cli::try_parse_from([
                "etcdops",
                "k8s",
                "encryption-config",
                "rotate",
                "--config",
                "x"
            ])
            .is_err(),
            "--step is required"
        );
        assert!(Cli::try_parse_from(["etcdops", "k8s", "get", "/registry/", "--prefix"]).is_ok());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn platform_flags_parse_and_force_reaches_defrag_and_update() {
        let cli = parse(&[
            "--platform",
            "auto",
            "--platform-root=/tmp/x",
            "defrag",
            "--force",
        ]);
        assert_eq!(cli.global.platform, Some(PlatformMode::Auto));
        assert_eq!(cli.global.platform_root, Some(PathBuf::from("/tmp/x")));
        let Command::Defrag(args) = cli.command else {
            panic!("not defrag")
        };
        assert!(args.force && !args.cluster.cluster);
        let cli = parse(&[
            "member",
            "update",
            "m1",
            "--peer-urls=http://a:2380",
            "--force",
        ]);
        let Command::Member(MemberCommand::Update(args)) = cli.command else {
            panic!("not member update")
        };
        assert!(args.force);
        let cli = parse(&["platform", "detect", "--root", "/r"]);
        let Command::Platform(PlatformCommand::Detect(args)) = cli.command else {
            panic!("not platform detect")
        };
        assert_eq!(args.root, Some(PathBuf::from("/r")));
        assert!(Cli::try_parse_from(["etcdops", "--platform", "maybe", "member", "list"]).is_err());
    }

    #[test]
    fn global_flags_work_before_and_after_the_command() {
        let before = parse(&["--endpoints", "a:1,b:2", "endpoint", "health"]);
        let after = parse(&["endpoint", "health", "--endpoints=a:1,b:2", "-w", "json"]);
        assert_eq!(before.global.endpoints, after.global.endpoints);
        assert_eq!(
            before.global.endpoints.unwrap(),
            vec!["a:1".to_string(), "b:2".to_string()]
        );
        assert_eq!(after.global.write_out, OutputFormat::Json);
    }

    #[test]
    fn insecure_skip_tls_verify_takes_an_optional_bool() {
        let bare = parse(&["--insecure-skip-tls-verify", "member", "list"]);
        assert_eq!(bare.global.insecure_skip_tls_verify, Some(true));
        let off = parse(&["--insecure-skip-tls-verify=false", "member", "list"]);
        assert_eq!(off.global.insecure_skip_tls_verify, Some(false));
        let unset = parse(&["member", "list"]);
        assert_eq!(unset.global.insecure_skip_tls_verify, None);
    }

    #[test]
    fn timeouts_take_go_durations() {
        let cli = parse(&[
            "--dial-timeout",
            "500ms",
            "--command-timeout=1m",
            "member",
            "list",
        ]);
        assert_eq!(cli.global.dial_timeout, Some(Duration::from_millis(500)));
        assert_eq!(cli.global.command_timeout, Some(Duration::from_secs(60)));
        assert!(
            Cli::try_parse_from(["etcdops", "--dial-timeout", "soon", "member", "list"]).is_err()
        );
    }

    #[test]
    fn flag_wins_over_environment() {
        let cli = parse(&[
            "--endpoints",
            "http://flag:1",
            "--user",
            "flaguser:pw",
            "member",
            "list",
        ]);
        let config = cli
            .global
            .connection_options()
            .or_env_from(|name| match name {
                "ETCDCTL_ENDPOINTS" => Some("http://env:2".into()),
                "ETCDCTL_USER" => Some("envuser:pw".into()),
                "ETCDCTL_COMMAND_TIMEOUT" => Some("9s".into()),
                _ => None,
            })
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(config.endpoints, vec!["http://flag:1"]);
        assert_eq!(config.auth.unwrap().user, "flaguser");
        assert_eq!(config.command_timeout, Duration::from_secs(9));
    }

    #[test]
    fn discovery_has_etcdctl_short_flag_and_hashkv_takes_rev() {
        let cli = parse(&[
            "-d",
            "example.com",
            "endpoint",
            "hashkv",
            "--rev",
            "42",
            "--cluster",
        ]);
        assert_eq!(cli.global.discovery_srv.as_deref(), Some("example.com"));
        match cli.command {
            Command::Endpoint(EndpointCommand::Hashkv(args)) => {
                assert_eq!(args.rev, 42);
                assert!(args.cluster);
            }
            other => panic!("parsed as {other:?}"),
        }
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
        assert_eq!(cli.global.write_out, OutputFormat::Json);
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
    fn the_command_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let get = parse(&["get", "/a", "--key", "/k.pem", "--prefix"]);
        let Command::Get(args) = get.command else {
            panic!("not get")
        };
        assert_eq!(args.key, "/a");
        assert_eq!(get.global.key, Some(PathBuf::from("/k.pem")));
    }

    #[test]
    fn write_out_rejects_unknown_formats() {
        assert!(Cli::try_parse_from(["etcdops", "-w", "yaml", "member", "list"]).is_err());
        assert_eq!(
            parse(&["-w", "simple", "member", "list"]).global.write_out,
            OutputFormat::Simple
        );
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
        assert_eq!(args.data_dir, std::path::PathBuf::from("/var/lib/etcd"));
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
        // The peer URLs are required.
        assert!(
            Cli::try_parse_from([
                "etcdops",
                "snapshot",
                "restore",
                "x",
                "--data-dir",
                "d",
                "--name",
                "a",
                "--initial-cluster",
                "a=http://h:1",
                "--initial-cluster-token",
                "t",
            ])
            .is_err()
        );
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
