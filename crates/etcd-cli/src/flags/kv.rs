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
