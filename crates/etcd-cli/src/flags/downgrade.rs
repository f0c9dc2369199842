//! Flags of `downgrade validate|enable|cancel` (etcdctl 3.6's), `completion` and `man`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use super::{IdentityFlags, StoreFlags};

/// `downgrade`: etcd 3.6's cluster downgrade, as etcdctl 3.6 has it.
#[derive(Debug, Subcommand)]
pub enum DowngradeCommand {
    /// Check that the cluster could be downgraded to TARGET_VERSION (e.g. 3.5); changes
    /// nothing.
    Validate(DowngradeTarget),
    /// Start the downgrade to TARGET_VERSION: the cluster version becomes it at once, then
    /// members are replaced one at a time with binaries of that version. Guarded: only with a
    /// verified backup of this cluster newer than --max-backup-age in --store, or --force.
    Enable(Box<DowngradeEnableArgs>),
    /// Cancel the downgrade in progress.
    Cancel,
}

/// The target version of `downgrade validate`.
#[derive(Debug, Args)]
pub struct DowngradeTarget {
    /// The version to go down to, one minor version below the cluster's (e.g. 3.5)
    #[arg(value_name = "TARGET_VERSION")]
    pub version: String,
}

/// Arguments of `downgrade enable`.
#[derive(Debug, Args)]
pub struct DowngradeEnableArgs {
    /// The version to go down to, one minor version below the cluster's (e.g. 3.5)
    #[arg(value_name = "TARGET_VERSION")]
    pub version: String,
    /// The store holding this cluster's backups (a URL or a directory, as `snapshot save
    /// --store`): the newest complete backup of this cluster in it must be newer than
    /// --max-backup-age and verify
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// How old that backup may be, e.g. 30m, 2h
    #[arg(long, value_parser = super::duration, default_value = "60m",
          value_name = "DURATION")]
    pub max_backup_age: Duration,
    /// Enable the downgrade without a verified backup (and on a host where OpenShift's
    /// operator owns etcd), with a warning
    #[arg(long)]
    pub force: bool,
    /// Once etcd has validated the target version, save a backup of the cluster into STORE
    /// and verify it before enabling the downgrade; it is the backup --store's check finds
    /// (--store defaults to it). Refused when no quorum serves
    #[arg(long, value_name = "STORE", conflicts_with = "force")]
    pub backup_to: Option<String>,
    /// How the store is reached.
    #[command(flatten)]
    pub store_flags: StoreFlags,
    /// The identities that decrypt an encrypted backup.
    #[command(flatten)]
    pub identity: IdentityFlags,
}

/// The shells `completion` writes scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// bash (`source <(etcdops completion bash)`, or a file in bash-completion's directory).
    Bash,
    /// zsh (`_etcdops`, in a directory of `$fpath`).
    Zsh,
    /// fish (`etcdops.fish`, in `~/.config/fish/completions`).
    Fish,
}

/// Arguments of `completion`.
#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Arguments of `man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write etcdops.1 and a page per command (etcdops-snapshot-save.1, ...) into this
    /// directory instead of printing etcdops.1 on stdout
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::flags::{Cli, Command, with_bool_forms};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let line = std::iter::once("etcdops")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        Cli::try_parse_from(with_bool_forms(line))
    }

    fn enable(args: &[&str]) -> DowngradeEnableArgs {
        match parse(args).unwrap().command {
            Command::Downgrade(DowngradeCommand::Enable(args)) => *args,
            other => panic!("not downgrade enable: {other:?}"),
        }
    }

    #[test]
    fn enable_takes_the_target_a_store_an_age_and_force() {
        let args = enable(&["downgrade", "enable", "3.5"]);
        assert_eq!(args.version, "3.5");
        assert_eq!(
            args.max_backup_age,
            Duration::from_secs(3600),
            "default 60m"
        );
        assert!(args.store.is_none() && !args.force);
        let args = enable(&[
            "downgrade",
            "enable",
            "3.5",
            "--store",
            "s3://b/etcd",
            "--max-backup-age=2h30m",
            "--force=true",
            "--s3-region",
            "eu-west-1",
        ]);
        assert_eq!(args.store.as_deref(), Some("s3://b/etcd"));
        assert_eq!(args.max_backup_age, Duration::from_secs(9000));
        assert!(args.force);
        assert_eq!(args.store_flags.s3_region.as_deref(), Some("eu-west-1"));
        assert!(!enable(&["downgrade", "enable", "3.5", "--force=false"]).force);
        assert!(parse(&["downgrade", "enable", "3.5", "--max-backup-age", "soon"]).is_err());
        assert!(
            parse(&["downgrade", "enable"]).is_err(),
            "the target is required"
        );
    }

    #[test]
    fn validate_takes_the_target_cancel_takes_none_completion_a_shell() {
        let Command::Downgrade(DowngradeCommand::Validate(target)) =
            parse(&["downgrade", "validate", "3.5", "-w", "json"])
                .unwrap()
                .command
        else {
            panic!("not validate")
        };
        assert_eq!(target.version, "3.5");
        assert!(parse(&["downgrade", "cancel", "3.5"]).is_err());
        let Command::Completion(args) = parse(&["completion", "zsh"]).unwrap().command else {
            panic!("not completion")
        };
        assert_eq!(args.shell, Shell::Zsh);
        assert!(parse(&["completion", "powershell"]).is_err());
        let Command::Man(args) = parse(&["man", "--out-dir", "/tmp/m"]).unwrap().command else {
            panic!("not man")
        };
        assert_eq!(args.out_dir, Some(PathBuf::from("/tmp/m")));
    }
}
