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
    /// A complete copy of the stopped member's data dir beside it (`DIR.bak-<UTC time>`),
    /// written under a `.part` name and renamed once whole; an identical copy (same db and
    /// WAL) is reused. Refused while etcd runs on it. Nothing is deleted.
    Backup(DataDirAsideArgs),
    /// Rename the stopped member's data dir to `DIR.bak-<UTC time>` (nothing is deleted);
    /// refused while etcd runs on it.
    MoveAside(DataDirAsideArgs),
    /// Offline, before a `--force-new-cluster` start: raise the stopped member's saved commit
    /// index to its WAL's last entry (one HardState record appended), so that etcd keeps the
    /// entries past it (writes it may have acknowledged) instead of discarding them. Nothing
    /// else is touched; refused while etcd runs on it; no-op when nothing is past the commit.
    CommitTail(CommitTailArgs),
}

/// Arguments of `data-dir inspect`.
#[derive(Debug, Args)]
pub struct DataDirInspectArgs {
    /// The member's data dir (etcd's --data-dir: the one holding member/)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Arguments of `data-dir backup`, `data-dir move-aside` and `data-dir commit-tail`.
#[derive(Debug, Args)]
pub struct DataDirAsideArgs {
    /// The member's data dir (etcd's --data-dir: the one holding member/)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Check and say what would be done; change nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `data-dir commit-tail`.
#[derive(Debug, Args)]
pub struct CommitTailArgs {
    /// The data dir, and --dry-run
    #[command(flatten)]
    pub dir: DataDirAsideArgs,
    /// Go past the guards
    #[command(flatten)]
    pub force: crate::flags::ForceFlag,
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
        assert_eq!(cli.global.printer().format(), OutputFormat::Json);
        assert!(Cli::try_parse_from(["etcdops", "data-dir", "inspect"]).is_err());
    }

    #[test]
    fn backup_and_move_aside_take_a_dir_and_dry_run() {
        let cli =
            Cli::try_parse_from(["etcdops", "data-dir", "backup", "/d", "--dry-run"]).unwrap();
        match cli.command {
            Command::DataDir(DataDirCommand::Backup(args)) => {
                assert_eq!(args.dir, PathBuf::from("/d"));
                assert!(args.dry_run);
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(["etcdops", "data-dir", "move-aside", "/d"]).unwrap();
        match cli.command {
            Command::DataDir(DataDirCommand::MoveAside(args)) => assert!(!args.dry_run),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn commit_tail_takes_a_dir_dry_run_and_force() {
        let cli =
            Cli::try_parse_from(["etcdops", "data-dir", "commit-tail", "/d", "--dry-run"]).unwrap();
        match cli.command {
            Command::DataDir(DataDirCommand::CommitTail(args)) => {
                assert_eq!(args.dir.dir, PathBuf::from("/d"));
                assert!(args.dir.dry_run && !args.force.force);
            }
            other => panic!("{other:?}"),
        }
        let cli =
            Cli::try_parse_from(["etcdops", "data-dir", "commit-tail", "/d", "--force"]).unwrap();
        match cli.command {
            Command::DataDir(DataDirCommand::CommitTail(args)) => assert!(args.force.force),
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["etcdops", "data-dir", "commit-tail"]).is_err());
    }
}
