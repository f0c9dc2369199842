//! `etcdops`: parses flags, calls the etcdops library, prints the result. Nothing else.
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod commands;
mod flags;

use etcdops_printer::{output, progress};

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use commands::ExitStatus;
use flags::{Cli, Command, Compat, LeaseCommand};

fn main() -> ExitCode {
    let args = flags::with_bool_forms(std::env::args_os().collect());
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            // etcdctl exits 1 for bad arguments too; help and --version are not errors.
            return match (err.use_stderr(), flags::compat_of_raw(&args)) {
                (false, _) => ExitCode::SUCCESS,
                (true, Compat::Etcdctl) => ExitCode::from(1),
                (true, Compat::Etcdops) => ExitCode::from(2),
            };
        }
    };
    let compat = cli.global.compat();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("etcdops: error: cannot start the async runtime: {err}");
            return ExitStatus::Error.code(compat);
        }
    };
    let result = runtime.block_on(run(cli));
    // Connections may still be open; do not wait for them.
    runtime.shutdown_background();
    match result {
        Ok(status) => status.code(compat),
        Err(err) if is_broken_pipe(&err) => ExitStatus::Success.code(compat),
        // etcdctl's prefix under its personality (scripts grep `Error:`), the same one line.
        Err(err) => match compat {
            Compat::Etcdctl => {
                eprintln!("Error: {}", one_line(&err));
                ExitCode::from(etcdctl_exit_code(&err))
            }
            Compat::Etcdops => {
                eprintln!("etcdops: error: {}", one_line(&err));
                ExitStatus::Error.code(compat)
            }
        },
    }
}

/// The code etcdctl exits with for this kind of failure: 2 (its "bad connection") when the
/// credentials were refused, 128 (its "bad arguments") when a TLS or key file cannot be read,
/// else 1.
fn etcdctl_exit_code(err: &anyhow::Error) -> u8 {
    let kind = err
        .chain()
        .map(
            |cause| match cause.downcast_ref::<commands::endpoint::ClientSetupFailed>() {
                Some(failed) => failed.kind,
                None => etcdops::kind_of(cause),
            },
        )
        .find(|kind| *kind != etcdops::ErrorKind::Other);
    match kind {
        Some(etcdops::ErrorKind::AuthFailed) => 2,
        Some(etcdops::ErrorKind::CredentialFile) => 128,
        _ => 1,
    }
}

/// The error and its causes on one line, each cause once (library errors already include
/// their cause in their message).
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    // The flag that gets past or fixes it, found anywhere in the chain.
    let hint = err
        .chain()
        .find_map(etcdops::hint_of)
        .map(|hint| hint.render(etcdops::hints::Style::Cli));
    if let Some(hint) = hint
        && !line.contains(&hint)
    {
        line.push_str(&format!(" ({hint})"));
    }
    // One line, no password of a URL in it (whichever library wrote it), and nothing in it
    // (a key, etcd's message) reaches the terminal raw.
    let line = etcdops::client::redact_urls(&line.replace('\n', " "));
    output::escape(&line, output::Lines::Escape)
}

/// `etcdops ... | head` closing the pipe early is not an error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

async fn run(cli: Cli) -> Result<ExitStatus> {
    // The output, chosen once: every command prints through it.
    let printer = cli.global.printer();
    // Commands that need no cluster: no connection flags to check, nothing to dial.
    match &cli.command {
        Command::Platform(command) => {
            return commands::platform::run(&cli.global, command, printer).await;
        }
        Command::Pki(command) => return commands::pki::run(&cli.global, command, printer).await,
        Command::Write(_) | Command::Lease(LeaseCommand::Write(_)) => {
            return Err(commands::refuse_write());
        }
        Command::Completion(args) => return commands::completion::run_completion(args),
        Command::Man(args) => return commands::completion::run_man(args),
        Command::Version => return commands::maintenance::run_version(&cli.global, printer).await,
        Command::Defrag(args) if args.data_dir.is_some() => {
            return commands::offline::defrag(args, printer);
        }
        Command::Hashkv(args) => return commands::offline::hashkv(args, printer).await,
        Command::Usage(args) if args.is_offline() => {
            return commands::usage::run(None, args, printer).await;
        }
        Command::DataDir(command) => {
            return commands::data_dir::run(&cli.global, command, printer).await;
        }
        _ => {}
    }
    let config = commands::platform::connection_options(&cli.global)?.build()?;
    if config.tls.insecure_skip_verify {
        eprintln!(
            "etcdops: warning: --insecure-skip-tls-verify: server certificates are not verified; anyone on the network path can impersonate etcd"
        );
    }
    match &cli.command {
        Command::Endpoint(args) => commands::endpoint::run(&config, args, printer).await,
        Command::Member(command) => {
            let guards = commands::platform::guards(&cli.global);
            commands::member::run(&config, &guards, command, printer).await
        }
        Command::Snapshot(command) => {
            commands::snapshot::run(
                &config,
                command,
                printer,
                cli.global.platform_root.as_deref(),
            )
            .await
        }
        Command::Backup(command) => commands::backup::run(&config, command, printer).await,
        Command::MoveLeader(args) => {
            commands::maintenance::run_move_leader(&config, &args.member, printer).await
        }
        Command::Alarm(command) => {
            commands::maintenance::run_alarm(&config, command, printer).await
        }
        Command::Defrag(args) => {
            let guards = commands::platform::guards(&cli.global);
            commands::maintenance::run_defrag_guarded(&config, &guards, args, printer).await
        }
        Command::Compact(args) => commands::maintenance::run_compact(&config, args, printer).await,
        Command::Check(args) => {
            let root = cli.global.platform_root.as_deref();
            commands::maintenance::run_check(&config, args, root, printer).await
        }
        Command::Lease(command) => commands::access::run_lease(&config, command, printer).await,
        Command::Auth(command) => {
            let guards = commands::platform::guards(&cli.global);
            commands::access::run_auth(&config, &guards, command, printer).await
        }
        Command::User(command) => {
            let guards = commands::platform::guards(&cli.global);
            commands::access::run_user(&config, &guards, command, printer).await
        }
        Command::Role(command) => {
            let guards = commands::platform::guards(&cli.global);
            commands::access::run_role(&config, &guards, command, printer).await
        }
        Command::Get(args) => {
            commands::kv::run_get(&config, args, printer, cli.global.hex == Some(true)).await
        }
        Command::History(args) => commands::kv::run_history(&config, args, printer).await,
        Command::Watch(args) => {
            commands::kv::run_watch(&config, args, printer, cli.global.hex == Some(true)).await
        }
        Command::K8s(command) => {
            let guards = commands::platform::guards(&cli.global);
            commands::k8s::run(&config, &guards, command, printer).await
        }
        Command::Downgrade(command) => {
            let guards = commands::platform::guards(&cli.global);
            commands::downgrade::run(&config, &guards, command, printer).await
        }
        Command::Quorum(command) => commands::quorum::run(&config, command, printer).await,
        Command::Usage(args) => commands::usage::run(Some(&config), args, printer).await,
        Command::Platform(_)
        | Command::Pki(_)
        | Command::Write(_)
        | Command::Completion(_)
        | Command::Man(_)
        | Command::Version
        | Command::Hashkv(_)
        | Command::DataDir(_) => Err(anyhow::anyhow!(
            "internal error: a command without a cluster reached the cluster commands"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcdops::client::ClientError;

    #[test]
    fn etcdctl_exit_codes_follow_the_kind_of_failure_wherever_it_is_wrapped() {
        let refused = || ClientError::AuthFailed {
            endpoint: "https://a:2379".into(),
            user: "root".into(),
            detail: "authentication failed".into(),
        };
        let unreadable = ClientError::ReadFile {
            what: "client key",
            path: "/missing.key".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(etcdctl_exit_code(&refused().into()), 2);
        let every_endpoint = ClientError::NoEndpointAvailable {
            errors: vec![refused(), refused()],
        };
        let in_a_workflow =
            anyhow::Error::from(etcdops::Error::from(every_endpoint)).context("member list");
        assert_eq!(etcdctl_exit_code(&in_a_workflow), 2);
        assert_eq!(etcdctl_exit_code(&unreadable.into()), 128);
        assert_eq!(etcdctl_exit_code(&anyhow::anyhow!("anything else")), 1);
    }

    /// Every long flag (and alias) of every command, as an option id spells it.
    fn flags(command: &clap::Command, out: &mut std::collections::BTreeSet<String>) {
        for arg in command.get_arguments() {
            // A positional argument counts as the option of the same name (`member`).
            if arg.is_positional() {
                out.insert(arg.get_id().as_str().to_string());
            }
            let longs = arg.get_long().into_iter().chain(
                arg.get_all_aliases()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|a| a.len() > 1),
            );
            out.extend(longs.map(|l| l.replace('-', "_")));
        }
        for sub in command.get_subcommands() {
            flags(sub, out);
        }
    }

    #[test]
    fn every_option_a_library_hint_names_is_a_flag_of_this_cli() {
        let mut known = std::collections::BTreeSet::new();
        flags(&<flags::Cli as clap::CommandFactory>::command(), &mut known);
        let missing: Vec<&str> = etcdops::hints::options::ALL
            .iter()
            .map(|o| o.name)
            .filter(|name| !known.contains(*name))
            .collect();
        // Options of etcd's own config file: only the `etcd_config` module writes it.
        let module_only = [
            "advertise_client_urls",
            "auto_compaction_retention",
            "election_timeout",
            "extra",
            "initial_cluster_state",
            "listen_client_urls",
            "listen_metrics_urls",
            "listen_peer_urls",
            "path",
        ];
        // Set only by library callers: `backup run` always checks every second.
        let library_only = ["check_every"];
        let mut expected: Vec<&str> = module_only.iter().chain(&library_only).copied().collect();
        expected.sort_unstable();
        assert_eq!(missing, expected);
    }
}
