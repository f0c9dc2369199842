//! `etcdops completion bash|zsh|fish` and `etcdops man`: shell completion scripts and the
//! manual page, generated from the same clap definitions that parse the command line (so
//! they never fall behind it). The release build installs them (scripts/build-release).

use std::io::Write;

use anyhow::{Context, Result};
use clap::CommandFactory;

use super::ExitStatus;
use crate::flags::{Cli, CompletionArgs, ManArgs, Shell};

/// The name completions and the manual page are for.
const BIN: &str = "etcdops";

/// `completion SHELL`: the completion script on stdout.
pub fn run_completion(args: &CompletionArgs) -> Result<ExitStatus> {
    let mut out = std::io::stdout().lock();
    write_completion(args.shell, &mut out)?;
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// `man [--out-dir DIR]`: etcdops.1 on stdout, or a page per command in DIR.
pub fn run_man(args: &ManArgs) -> Result<ExitStatus> {
    match &args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
        }
        None => {
            let mut out = std::io::stdout().lock();
            write_man(&mut out)?;
            out.flush()?;
        }
    }
    Ok(ExitStatus::Success)
}

fn write_completion(shell: Shell, out: &mut dyn Write) -> Result<()> {
    let mut command = Cli::command();
    match shell {
        Shell::Bash => clap_complete::generate(clap_complete::Shell::Bash, &mut command, BIN, out),
        Shell::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut command, BIN, out),
        Shell::Fish => clap_complete::generate(clap_complete::Shell::Fish, &mut command, BIN, out),
    }
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
        let mut out = Vec::new();
        write_completion(shell, &mut out).unwrap();
        String::from_utf8(out).unwrap()
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
