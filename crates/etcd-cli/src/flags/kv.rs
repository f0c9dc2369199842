//! Flags of `get`, `history` and `watch`.

use super::*;

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

/// Read consistency (etcdctl's `--consistency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ConsistencyArg {
    /// Linearizable: a quorum confirms the read is current
    #[default]
    L,
    /// Serializable: the member answers from its own store, possibly stale
    S,
}

/// Arguments of `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The key, or the start of a range
    #[arg(id = "key_name", value_name = "KEY")]
    pub key: String,
    /// End of the range (exclusive)
    pub range_end: Option<String>,
    /// Every key starting with KEY (every key with "")
    #[arg(long, conflicts_with_all = ["from_key", "range_end"])]
    pub prefix: bool,
    /// Every key from KEY on (every key with "")
    #[arg(long, conflicts_with = "range_end")]
    pub from_key: bool,
    /// Read at this revision (0: latest)
    #[arg(long, default_value_t = 0)]
    pub rev: i64,
    /// Keys only
    #[arg(long)]
    pub keys_only: bool,
    /// Only the number of keys (with -w simple too, where etcdctl 3.5 wants -w fields)
    #[arg(long, conflicts_with = "keys_only")]
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
    /// Print values only; with -w simple and stdout not a terminal, the exact bytes (as
    /// etcdctl: `| auger decode` works), else escaped and binary marked
    #[arg(long)]
    pub print_value_only: bool,
    /// Only keys created at this revision or later (0: no bound)
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i64).range(0..))]
    pub min_create_rev: i64,
    /// Only keys created at this revision or earlier (0: no bound)
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i64).range(0..))]
    pub max_create_rev: i64,
    /// Only keys last modified at this revision or later (0: no bound)
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i64).range(0..))]
    pub min_mod_rev: i64,
    /// Only keys last modified at this revision or earlier (0: no bound)
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i64).range(0..))]
    pub max_mod_rev: i64,
    /// Accepted for etcdctl 3.7's scripts: every read here is streamed already, page by
    /// page, whatever the server's release
    #[arg(long)]
    pub stream: bool,
    /// l: linearizable, s: serializable (the member's own store, possibly stale)
    #[arg(
        long,
        value_enum,
        ignore_case = true,
        default_value = "l",
        value_name = "l|s"
    )]
    pub consistency: ConsistencyArg,
    /// Show the values of Kubernetes Secrets (/registry/secrets/, /kubernetes.io/secrets/).
    /// Redacted by default in every format, --compat etcdctl included (etcdctl prints them
    /// raw): a script written for etcdctl that reads a Secret's value needs this flag or
    /// ETCDOPS_SHOW_SECRETS=true. Where a script reads values (simple, etcdctl's JSON) a
    /// redacted one is left out (etcdctl's JSON, --print-value-only) and fails the command
    /// (exit code 1) after everything else is printed [env: ETCDOPS_SHOW_SECRETS]
    #[arg(long, env = "ETCDOPS_SHOW_SECRETS", hide_env = true)]
    pub show_secrets: bool,
}

/// Arguments of `history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The key
    #[arg(id = "key_name", value_name = "KEY")]
    pub key: String,
    /// Show the values of Kubernetes Secrets [env: ETCDOPS_SHOW_SECRETS]
    #[arg(long, env = "ETCDOPS_SHOW_SECRETS", hide_env = true)]
    pub show_secrets: bool,
}

/// Arguments of `watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The key, the prefix with --prefix, or the start of a range [env: ETCDCTL_WATCH_KEY]
    #[arg(id = "key_name", value_name = "KEY")]
    pub key: Option<String>,
    /// End of the range (exclusive) [env: ETCDCTL_WATCH_RANGE_END]
    #[arg(conflicts_with = "prefix")]
    pub range_end: Option<String>,
    /// Watch every key starting with KEY (every key with "")
    #[arg(long)]
    pub prefix: bool,
    /// First revision to show (0: from now on)
    #[arg(long, default_value_t = 0)]
    pub rev: i64,
    /// Show each event's previous key and value (before the event's own)
    #[arg(long)]
    pub prev_kv: bool,
    /// Ask etcd for periodic progress notifications (`progress notify: REV`)
    #[arg(long)]
    pub progress_notify: bool,
    /// Stop once every event up to this revision was shown
    #[arg(long, value_name = "REV")]
    pub until_rev: Option<i64>,
    /// Stop after this long, e.g. 30s. Without it or --until-rev the watch runs until
    /// Ctrl-C (SIGINT or SIGTERM end it, exit code 0). -w json then prints one JSON object
    /// per line (JSON Lines: each event, and `{"kind":"progress","revision":N}`); a bounded
    /// watch prints one document with its summary
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,
    /// Show the values of Kubernetes Secrets (redacted by default, --compat etcdctl
    /// included; ETCD_WATCH_VALUE is then unset). In simple and etcdctl's JSON (no value) a
    /// redacted one fails a bounded watch at its end, and is warned of at once in an
    /// unbounded one [env: ETCDOPS_SHOW_SECRETS]
    #[arg(long, env = "ETCDOPS_SHOW_SECRETS", hide_env = true)]
    pub show_secrets: bool,
    /// After `--`: a command run for each event, with ETCD_WATCH_REVISION,
    /// ETCD_WATCH_EVENT_TYPE, ETCD_WATCH_KEY and ETCD_WATCH_VALUE set as etcdctl sets them
    /// (type, key and value Go-quoted: "PUT", "key"). In a process group of its own: SIGINT
    /// or SIGTERM to the watch is passed on to it, and it is killed 2 s later if still running
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}
