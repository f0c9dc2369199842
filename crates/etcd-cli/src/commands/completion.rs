//! `etcdops completion bash|zsh|fish` and `etcdops man`: shell completion scripts and the
//! manual page, generated from the same clap definitions that parse the command line (so
//! they never fall behind it). The release build installs them (scripts/build-release).
//!
//! Run as `etcdctl` (a symlink: the drop-in), the scripts register `etcdctl`, the name the
//! shell completes. Output is rendered whole, then written: a closed pipe (`| head`) ends
//! the command quietly with exit 0, as everywhere in etcdops, instead of a panic.

use std::io::Write;

use anyhow::{Context, Result};
use clap::CommandFactory;

use super::ExitStatus;
use crate::flags::{Cli, CompletionArgs, ManArgs, Shell};

/// The name completions and the manual page are for, unless run as etcdctl.
const BIN: &str = "etcdops";

/// The name the completion scripts register: `etcdctl` when this binary was run by that name
/// (argv\[0\]), else `etcdops`.
fn bin_name() -> &'static str {
    let called = std::env::args_os().next();
    let as_etcdctl = called
        .as_deref()
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n == "etcdctl");
    if as_etcdctl { "etcdctl" } else { BIN }
}

/// `completion SHELL`: the completion script on stdout.
pub fn run_completion(args: &CompletionArgs) -> Result<ExitStatus> {
    let mut script = Vec::new();
    write_completion(args.shell, bin_name(), &mut script)?;
    write_stdout(&script)?;
    Ok(ExitStatus::Success)
}

/// Writes `bytes` to stdout; a closed pipe is an `io::Error` (BrokenPipe) the caller treats
/// as success, never a panic.
fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

/// `man [--out-dir DIR]`: etcdops.1 on stdout, or a page per command in DIR.
pub fn run_man(args: &ManArgs) -> Result<ExitStatus> {
    match &args.out_dir {
        Some(dir) => {
            // Manual pages hold no etcd data: their dir gets the usual mode, as the pages
            // clap_mangen writes do.
            #[allow(clippy::disallowed_methods)]
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
        }
        None => {
            let mut page = Vec::new();
            write_man(&mut page)?;
            write_stdout(&page)?;
        }
    }
    Ok(ExitStatus::Success)
}

/// The script for `shell`, registering `bin`, into `out` (a buffer: clap_complete panics on a
/// failed write).
fn write_completion(shell: Shell, bin: &'static str, out: &mut Vec<u8>) -> Result<()> {
    let mut command = Cli::command().name(bin);
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut command, bin, out);
    Ok(())
}

fn write_man(out: &mut dyn Write) -> Result<()> {
    clap_mangen::Man::new(Cli::command())
        .render(out)
        .context("cannot render the manual page")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion(shell: Shell) -> String {
        completion_for(shell, BIN)
    }

    fn completion_for(shell: Shell, bin: &'static str) -> String {
        let mut out = Vec::new();
        write_completion(shell, bin, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn as_etcdctl_the_scripts_register_etcdctl() {
        let bash = completion_for(Shell::Bash, "etcdctl");
        assert!(
            bash.contains("complete -F _etcdctl"),
            "registers for etcdctl"
        );
        assert!(
            !bash.contains(" etcdops"),
            "no etcdops left in the bash script"
        );
        let zsh = completion_for(Shell::Zsh, "etcdctl");
        assert!(zsh.starts_with("#compdef etcdctl"), "{}", &zsh[..40]);
        let fish = completion_for(Shell::Fish, "etcdctl");
        assert!(fish.contains("complete -c etcdctl") && !fish.contains("-c etcdops"));
    }

    #[test]
    fn completions_know_the_commands_and_their_flags() {
        let bash = completion(Shell::Bash);
        assert!(
            bash.contains("complete -F _etcdops"),
            "registers for etcdops"
        );
        assert!(bash.contains("downgrade") && bash.contains("--max-backup-age"));
        let zsh = completion(Shell::Zsh);
        assert!(zsh.starts_with("#compdef etcdops"), "{}", &zsh[..40]);
        let fish = completion(Shell::Fish);
        assert!(fish.contains("complete -c etcdops") && fish.contains("snapshot"));
    }

    #[test]
    fn the_man_page_is_roff_with_the_commands() {
        let mut out = Vec::new();
        write_man(&mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(page.contains(".TH etcdops 1"), "{}", &page[..80]);
        for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
            assert!(page.contains(section), "no {section}");
        }
        assert!(page.contains("downgrade") && page.contains("snapshot"));
    }
}
