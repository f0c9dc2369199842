//! Flags of `etcdops data-dir ...`.

use super::*;

/// `etcdops data-dir ...`: a member's data dir, offline (no cluster needed).
#[derive(Debug, Subcommand)]
pub enum DataDirCommand {
    /// Read-only, offline: the WAL's last entry and HardState, the newest raft snapshot, the
    /// db's revision and applied index, the member and cluster IDs, and how many committed
    /// entries the WAL holds beyond the db. A running member's dir is read as far as it
    /// can be and reported locked.
    Inspect(DataDirInspectArgs),
}

/// Arguments of `data-dir inspect`.
#[derive(Debug, Args)]
pub struct DataDirInspectArgs {
    /// The member's data dir (etcd's --data-dir: the one holding member/)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspect_takes_one_dir_and_the_global_output_format() {
        let cli = Cli::try_parse_from([
            "etcdops",
            "data-dir",
            "inspect",
            "/var/lib/etcd",
            "-w",
            "json",
        ])
        .unwrap();
        match cli.command {
            Command::DataDir(DataDirCommand::Inspect(args)) => {
                assert_eq!(args.dir, PathBuf::from("/var/lib/etcd"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(cli.global.format(), OutputFormat::Json);
        assert!(Cli::try_parse_from(["etcdops", "data-dir", "inspect"]).is_err());
    }
}
