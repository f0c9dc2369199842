//! Flags of `usage`.

use super::*;

/// Arguments of `usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Only keys that start with PREFIX [default: every key]
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "",
        hide_default_value = true
    )]
    pub prefix: String,
    /// Group keys by their first N path segments after --prefix
    #[arg(long, value_name = "N", default_value_t = etcdops::usage::DEFAULT_DEPTH)]
    pub depth: usize,
    /// List the N largest keys, and the N largest groups of each grouping
    #[arg(long, value_name = "N", default_value_t = etcdops::usage::DEFAULT_TOP)]
    pub top: usize,
    /// kube-apiserver's --etcd-prefix, for the per-resource and per-namespace groups
    /// [default: /registry and /kubernetes.io]
    #[arg(long, value_name = "PREFIX")]
    pub kubernetes_prefix: Option<String>,
    /// Read this snapshot offline instead of the cluster (history and free pages visible): a
    /// file (plain, zstd or age-encrypted) or a backup URL STORE/OBJECT
    #[arg(long, value_name = "FILE|URL", conflicts_with = "data_dir")]
    pub snapshot: Option<String>,
    /// Read the db of the stopped member at DIR offline instead of the cluster
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
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

impl UsageArgs {
    /// Whether it reads a file: no cluster connection.
    pub fn is_offline(&self) -> bool {
        self.snapshot.is_some() || self.data_dir.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> UsageArgs {
        let cli =
            Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied())).unwrap();
        let Command::Usage(args) = cli.command else {
            panic!("not usage")
        };
        args
    }

    #[test]
    fn usage_reads_live_a_snapshot_or_a_data_dir_not_both() {
        let live = parse(&["usage"]);
        assert!(!live.is_offline());
        assert_eq!((live.prefix.as_str(), live.depth, live.top), ("", 2, 10));
        let file = parse(&[
            "usage",
            "--snapshot",
            "x.db",
            "--prefix",
            "/registry/",
            "--depth",
            "1",
            "--top",
            "3",
        ]);
        assert!(file.is_offline());
        assert_eq!((file.depth, file.top), (1, 3));
        assert!(parse(&["usage", "--data-dir", "/var/lib/etcd"]).is_offline());
        assert!(
            Cli::try_parse_from(["etcdops", "usage", "--snapshot", "x", "--data-dir", "y"])
                .is_err()
        );
        assert!(Cli::try_parse_from(["etcdops", "usage", "--depth", "x"]).is_err());
    }
}
