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
                EndpointCommand::Health(flag) | EndpointCommand::Status(flag) => flag.cluster,
                EndpointCommand::Hashkv(args) => args.cluster,
            }
    }
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
    /// Offline, as etcdutl: defragment the db of the stopped member at DIR (its
    /// member/snap/db rewritten compactly, checked, and renamed over it), instead of live
    /// members; refused while etcd runs there
    #[arg(long, value_name = "DIR", conflicts_with_all = ["cluster", "force"])]
    pub data_dir: Option<std::path::PathBuf>,
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
    /// Promote a learner to a voting member; refuses one that is not in sync.
    Promote(MemberSelectArgs),
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
