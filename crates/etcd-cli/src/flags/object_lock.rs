//! The S3 Object Lock flags of `snapshot save` and `backup run`.

use super::*;

/// S3 Object Lock: a retention on each object a backup writes (the bucket must have Object
/// Lock enabled); prune keeps the backup until its date.
#[derive(Debug, Args, Clone, Default)]
pub struct ObjectLockFlags {
    /// S3 Object Lock: set a retention of this mode on each backup object and manifest (the
    /// bucket must have Object Lock enabled); prune keeps a backup until its date
    #[arg(long, value_enum, value_name = "MODE")]
    pub object_lock_mode: Option<LockModeArg>,
    /// How long after the backup's date the Object Lock holds, e.g. 30d [default: --max-age]
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub object_lock_retain: Option<Duration>,
}

/// S3 Object Lock modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LockModeArg {
    /// Only an identity allowed to bypass governance may delete or shorten it early
    Governance,
    /// No one may delete it or shorten it before the date
    Compliance,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_of(args: &[&str]) -> Result<ObjectLockFlags, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied()))?;
        Ok(match cli.command {
            Command::Snapshot(SnapshotCommand::Save(save)) => save.object_lock,
            Command::Backup(BackupCommand::Run(run)) => run.object_lock,
            _ => panic!("not a save or a run"),
        })
    }

    #[test]
    fn save_and_run_take_a_lock_mode_and_a_period() {
        for command in [["snapshot", "save"], ["backup", "run"]] {
            let mut args = command.to_vec();
            args.extend(["s3://b/p", "--object-lock-mode", "compliance"]);
            args.extend(["--object-lock-retain", "30d"]);
            let lock = lock_of(&args).unwrap();
            assert_eq!(lock.object_lock_mode, Some(LockModeArg::Compliance));
            assert_eq!(
                lock.object_lock_retain,
                Some(Duration::from_secs(30 * 86400))
            );
            let none = lock_of(&[command[0], command[1], "s3://b/p"]).unwrap();
            assert_eq!(
                (none.object_lock_mode, none.object_lock_retain),
                (None, None)
            );
            for bad in [
                ["--object-lock-mode", "legal-hold"],
                ["--object-lock-retain", "soon"],
            ] {
                let mut args = command.to_vec();
                args.push("s3://b/p");
                args.extend(bad);
                assert!(lock_of(&args).is_err(), "{args:?}");
            }
        }
    }
}
