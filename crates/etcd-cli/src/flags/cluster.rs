//! Flags of the cluster commands: `check`, `move-leader`, `alarm`, `compact`, `endpoint`,
//! `defrag` and `member`.

use super::*;

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The members' --quota-backend-bytes, e.g. 8GiB [default: etcd's 2GiB]
    #[arg(long, value_parser = byte_size, value_name = "SIZE")]
    pub quota_bytes: Option<usize>,
    /// Report a defrag as worthwhile when at least this many bytes would be reclaimed
    #[arg(long, value_parser = byte_size, value_name = "SIZE", default_value = "64MiB")]
    pub defrag_min_bytes: usize,
    /// A certificate expiring within this many days is a warning
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub cert_warn_days: i64,
    /// A certificate expiring within this many days (or expired) is critical (not above
    /// --cert-warn-days)
    #[arg(long, value_name = "DAYS", default_value_t = 7)]
    pub cert_critical_days: i64,
    /// Read the members' metrics here (their --listen-metrics-urls) instead of at their
    /// client URLs, comma-separated
    #[arg(long, value_delimiter = ',', value_name = "URLS")]
    pub metrics_urls: Vec<String>,
    /// Read no /metrics: no latency and churn findings
    #[arg(long, conflicts_with = "metrics_urls")]
    pub skip_metrics: bool,
    /// WAL fsync p99 above this many milliseconds is a warning (etcd's guidance: 10)
    #[arg(long, value_name = "MS", default_value_t = 10.0)]
    pub fsync_p99_warn_ms: f64,
    /// Backend commit p99 above this many milliseconds is a warning (etcd's guidance: 25)
    #[arg(long, value_name = "MS", default_value_t = 25.0)]
    pub commit_p99_warn_ms: f64,
    /// Judge a latency histogram only from this many operations on
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub latency_min_samples: u64,
    /// More leader changes than this since a member started is a warning
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_leader_changes: u64,
    /// More failed proposals than this since a member started is a warning
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_failed_proposals: u64,
    /// More slow applies than this since a member started is a warning
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_slow_applies: u64,
    /// A member (or learner) this many raft entries behind the leader is a warning
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub max_raft_index_gap: u64,
    /// The store holding this cluster's backups (s3://, gs://, az://, file:// or a dir):
    /// its newest complete backup must be recent and verify
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// The newest backup older than this (e.g. 26h) is a warning, twice as old critical
    #[arg(long, value_parser = duration, value_name = "DURATION", requires = "store")]
    pub max_backup_age: Option<Duration>,
    /// Judge the newest backup from its manifest only, without downloading it to verify it
    #[arg(long, requires = "store")]
    pub skip_backup_verify: bool,
    /// This member's data dir on this host, for the disk finding [default: the detected
    /// platform's]
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    #[command(flatten)]
    pub store_flags: StoreFlags,
    #[command(flatten)]
    pub identity: IdentityFlags,
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

/// `etcdops endpoint [--cluster] ...`: etcdctl takes `--cluster` before the subcommand too.
#[derive(Debug, Args)]
pub struct EndpointArgs {
    /// Address every member's client URLs (from the member list), not just --endpoints
    #[arg(long = "cluster", id = "endpoint_cluster")]
    pub cluster: bool,
    /// Which check.
    #[command(subcommand)]
    pub command: EndpointCommand,
}

impl EndpointArgs {
    /// Whether `--cluster` was given, before the subcommand or after it.
    pub fn cluster(&self) -> bool {
        self.cluster
            || match &self.command {
                EndpointCommand::Health(args) => args.cluster,
                EndpointCommand::Status(flag) => flag.cluster,
                EndpointCommand::Hashkv(args) => args.cluster,
            }
    }
}

/// `etcdops endpoint ...`
#[derive(Debug, Subcommand)]
pub enum EndpointCommand {
    /// Health of each endpoint: a linearizable read and no alarm. Exit code 1 when any is unhealthy.
    Health(HealthArgs),
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
    /// Offline, as etcdutl: defragment the db of the stopped member at DIR (its
    /// member/snap/db rewritten compactly, checked, and renamed over it), instead of live
    /// members; refused while etcd runs there
    #[arg(long, value_name = "DIR", conflicts_with_all = ["cluster", "force", "backup_to"])]
    pub data_dir: Option<std::path::PathBuf>,
    /// A verified backup before the change.
    #[command(flatten)]
    pub backup: BackupToFlags,
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
    List(MemberListArgs),
    /// Add a member (idempotent) and print what it needs to start: ETCD_NAME,
    /// ETCD_INITIAL_CLUSTER, ETCD_INITIAL_CLUSTER_STATE=existing (`-w simple`: shell variables).
    Add(MemberAddArgs),
    /// Remove a member (ID, name or peer URL); refuses to break quorum, moves leadership first.
    Remove(MemberSelectArgs),
    /// Change a member's peer URLs.
    Update(MemberUpdateArgs),
    /// Promote a learner to a voting member; refuses one that is not in sync (with --wait:
    /// waits until it is, then promotes it).
    Promote(MemberPromoteArgs),
}

/// Arguments of `member list`.
#[derive(Debug, Args)]
pub struct MemberListArgs {
    /// l: linearizable (after a read through raft; needs a quorum), s: serializable (what
    /// the answering member knows, even without a quorum) [default: l, as etcdctl 3.5 and
    /// 3.6; s on etcd 3.4, which has no linearizable member list]
    #[arg(long, value_enum, value_name = "l|s")]
    pub consistency: Option<ConsistencyFlag>,
}

/// `--consistency`'s values, as etcdctl spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConsistencyFlag {
    /// Linearizable.
    L,
    /// Serializable.
    S,
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
    /// A verified backup before the change.
    #[command(flatten)]
    pub backup: BackupToFlags,
}

/// A verified backup before a change (member changes, defrag).
#[derive(Debug, Args, Clone, Default)]
pub struct BackupToFlags {
    /// Before changing anything, save a backup of the cluster into STORE (a directory,
    /// s3://, gs://, az://; reached with the store flags) and verify it; the change runs only
    /// once it verifies. Refused when no quorum serves. Nothing to change: no backup
    #[arg(long, value_name = "STORE")]
    pub backup_to: Option<String>,
    /// How STORE is reached.
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// A member named by ID (hex), name or peer URL.
#[derive(Debug, Args)]
pub struct MemberSelectArgs {
    /// The member: ID (hex), name or peer URL
    pub member: String,
    /// Override the safety guard
    #[arg(long)]
    pub force: bool,
    /// A verified backup before the change.
    #[command(flatten)]
    pub backup: BackupToFlags,
}

/// Arguments of `member promote`.
#[derive(Debug, Args)]
pub struct MemberPromoteArgs {
    /// The member: ID (hex), name or peer URL
    pub member: String,
    /// Override the safety guard
    #[arg(long)]
    pub force: bool,
    /// Wait until the learner has started and caught up with the leader, then promote it;
    /// at most DURATION (bare --wait: 2m; --wait=0s looks once). Not ready by then: an
    /// error saying what was missing
    #[arg(
        long,
        value_parser = duration,
        value_name = "DURATION",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "2m"
    )]
    pub wait: Option<Duration>,
    /// A verified backup before the change.
    #[command(flatten)]
    pub backup: BackupToFlags,
}

/// Arguments of `endpoint health`.
#[derive(Debug, Args)]
pub struct HealthArgs {
    /// Address every member's client URLs (from the member list), not just --endpoints
    #[arg(long)]
    pub cluster: bool,
    /// Check again until every endpoint is healthy, at most DURATION (after a start, a
    /// restart or a restore); the last check is printed, exit 1 if still unhealthy
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub wait: Option<Duration>,
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
    /// A verified backup before the change.
    #[command(flatten)]
    pub backup: BackupToFlags,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Command {
        let args: Vec<OsString> = std::iter::once("etcdops")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        Cli::try_parse_from(with_bool_forms(args)).unwrap().command
    }

    fn endpoint_cluster(args: &[&str]) -> bool {
        match parse(args) {
            Command::Endpoint(endpoint) => endpoint.cluster(),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn cluster_is_taken_before_and_after_the_endpoint_subcommand() {
        assert!(endpoint_cluster(&["endpoint", "--cluster", "health"]));
        assert!(endpoint_cluster(&["endpoint", "health", "--cluster"]));
        assert!(endpoint_cluster(&["endpoint", "--cluster=true", "status"]));
        assert!(endpoint_cluster(&["endpoint", "hashkv", "--cluster=true"]));
        assert!(!endpoint_cluster(&[
            "endpoint",
            "--cluster=false",
            "health"
        ]));
        assert!(!endpoint_cluster(&["endpoint", "status"]));
    }

    #[test]
    fn check_thresholds_parse_with_etcds_guidance_as_defaults() {
        let check = |args: &[&str]| match parse(args) {
            Command::Check(check) => check,
            other => panic!("parsed as {other:?}"),
        };
        let defaults = check(&["check"]);
        assert_eq!(
            (defaults.cert_warn_days, defaults.cert_critical_days),
            (30, 7)
        );
        assert_eq!(defaults.fsync_p99_warn_ms, 10.0);
        assert_eq!(defaults.commit_p99_warn_ms, 25.0);
        assert!(defaults.metrics_urls.is_empty() && defaults.store.is_none());
        let given = check(&[
            "check",
            "--metrics-urls",
            "http://a:2381,http://b:2381",
            "--fsync-p99-warn-ms",
            "7.5",
            "--store",
            "s3://bucket",
            "--max-backup-age",
            "26h",
            "--skip-backup-verify",
            "--data-dir",
            "/var/lib/etcd",
        ]);
        assert_eq!(given.metrics_urls, ["http://a:2381", "http://b:2381"]);
        assert_eq!(given.fsync_p99_warn_ms, 7.5);
        assert_eq!(given.max_backup_age, Some(Duration::from_secs(26 * 3600)));
        assert!(given.skip_backup_verify);
        assert_eq!(given.data_dir, Some(PathBuf::from("/var/lib/etcd")));
        // A backup age without a store, and metrics both skipped and given, are refused.
        let refused = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied())).is_err()
        };
        assert!(refused(&["check", "--max-backup-age", "1h"]));
        assert!(refused(&[
            "check",
            "--skip-metrics",
            "--metrics-urls",
            "http://a"
        ]));
        assert!(refused(&["check", "--cert-warn-days", "soon"]));
        assert!(refused(&[
            "check",
            "--store",
            "s3://b",
            "--max-backup-age",
            "soon"
        ]));
    }

    #[test]
    fn member_list_takes_etcdctls_consistency() {
        let consistency = |args: &[&str]| match parse(args) {
            Command::Member(MemberCommand::List(list)) => list.consistency,
            other => panic!("parsed as {other:?}"),
        };
        assert_eq!(consistency(&["member", "list"]), None);
        assert_eq!(
            consistency(&["member", "list", "--consistency", "s"]),
            Some(ConsistencyFlag::S)
        );
        assert_eq!(
            consistency(&["member", "list", "--consistency=l"]),
            Some(ConsistencyFlag::L)
        );
        assert!(Cli::try_parse_from(["etcdops", "member", "list", "--consistency", "x"]).is_err());
    }
}
