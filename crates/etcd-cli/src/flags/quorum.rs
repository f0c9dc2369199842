//! Flags of `quorum plan` and `quorum verify`: the decisions of a quorum-loss recovery
//! through etcd's own WAL replay (`etcdops::quorum`).

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `quorum`: plan a recovery from quorum loss, and verify its survivor.
#[derive(Debug, Subcommand)]
pub enum QuorumCommand {
    /// Ask the cluster first (a quorum serving: `none`, or `regrow` with the members to
    /// re-add), else choose the survivor to start once with --force-new-cluster from each
    /// member's `data-dir inspect -w json` output; refuses split history, members still
    /// running and a cluster with nothing to recover from. Read-only. Exit code 1 when
    /// refused.
    Plan(QuorumPlanArgs),
    /// Succeed when the endpoints show exactly one member, healthy, with --member-id, serving
    /// at least --min-revision: the survivor's force-new-cluster start took.
    Verify(QuorumVerifyArgs),
}

/// Arguments of `quorum plan`.
#[derive(Debug, Args)]
pub struct QuorumPlanArgs {
    /// `data-dir inspect -w json` output of each member's data dir (one file per member; the
    /// member is named by its db's membership)
    #[arg(long = "inspection", value_name = "FILE", required = true, num_args = 1..)]
    pub inspections: Vec<PathBuf>,
    /// Choose a survivor to force even when a majority of the voters still have their data
    /// (by default the plan is then `restart`: start them normally, nothing forced); for
    /// when restarting them did not bring the quorum back
    #[arg(long)]
    pub force_survivor: bool,
}

/// Arguments of `quorum verify`.
#[derive(Debug, Args)]
pub struct QuorumVerifyArgs {
    /// The survivor's member ID (hex), as `quorum plan` printed it
    #[arg(long, value_name = "ID")]
    pub member_id: String,
    /// The lowest revision the survivor must serve: its db's revision, as `quorum plan`
    /// printed it
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub min_revision: i64,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::flags::{Cli, Command};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied()))
    }

    #[test]
    fn plan_takes_one_or_more_inspections() {
        let Command::Quorum(QuorumCommand::Plan(args)) = parse(&[
            "quorum",
            "plan",
            "--inspection",
            "a.json",
            "b.json",
            "--inspection",
            "c.json",
            "-w",
            "json",
        ])
        .unwrap()
        .command
        else {
            panic!("not quorum plan")
        };
        assert_eq!(
            args.inspections,
            [
                PathBuf::from("a.json"),
                PathBuf::from("b.json"),
                PathBuf::from("c.json")
            ]
        );
        assert!(
            parse(&["quorum", "plan"]).is_err(),
            "inspections are required"
        );
    }

    #[test]
    fn verify_takes_a_member_id_and_a_revision() {
        let Command::Quorum(QuorumCommand::Verify(args)) = parse(&[
            "quorum",
            "verify",
            "--member-id",
            "8e9e05c52164694d",
            "--min-revision",
            "42",
        ])
        .unwrap()
        .command
        else {
            panic!("not quorum verify")
        };
        assert_eq!(
            (args.member_id.as_str(), args.min_revision),
            ("8e9e05c52164694d", 42)
        );
        assert!(
            parse(&[
                "quorum",
                "verify",
                "--member-id",
                "x",
                "--min-revision",
                "many"
            ])
            .is_err()
        );
        assert!(
            parse(&["quorum", "verify"]).is_err(),
            "the member ID is required"
        );
    }
}
