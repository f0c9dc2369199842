//! `etcdops platform ...`, `--platform auto`, and the host the guards look at. The work is
//! in etcd-k8s and etcdops; this prints its results.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};
use etcdops::client::ConnectionOptions;
use etcdops::guard::{Force, Guards};
use etcdops::kubernetes::{
    PlatformRequest, PodState, StaticPodRequest, detect_platform, static_pod,
};

use super::ExitStatus;
use crate::flags::{GlobalFlags, PlatformCommand, PlatformMode, StaticPodArgs};
use etcdops_printer::Printer;
use etcdops_printer::views::platform::*;

fn root(global: &GlobalFlags) -> PathBuf {
    global
        .platform_root
        .clone()
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The connection options from flags and `ETCDCTL_*`, then (with `--platform auto`) from the
/// etcd detected on this host for whatever is still unset.
pub fn connection_options(global: &GlobalFlags) -> Result<ConnectionOptions> {
    let mut options = global.connection_options().or_env()?;
    // `--user NAME` without a password: ask on a terminal, or read the first line of a piped
    // stdin, as etcdctl does.
    let user_only = options.user.as_deref().filter(|u| !u.contains(':'));
    if let Some(user) = user_only
        && options.password.is_none()
    {
        let password = if std::io::stdin().is_terminal() {
            rpassword::prompt_password(format!("Password of user {user}: "))
                .context("cannot read the password from the terminal")?
        } else {
            first_line_of_stdin().context("cannot read the password from stdin")?
        };
        if !password.is_empty() {
            options.password = Some(etcdops::client::Secret::new(password));
        }
    }
    match global.platform {
        None => Ok(options),
        Some(PlatformMode::Auto) => Ok(etcdops::platform::fill_from_host(options, &root(global))?),
    }
}

/// The first line of stdin, without its line ending, read byte by byte so that nothing after
/// it is taken from a command that reads stdin next (`user add --interactive=false`).
fn first_line_of_stdin() -> std::io::Result<String> {
    use std::io::Read;
    let mut line = Vec::new();
    let mut stdin = std::io::stdin().lock();
    let mut byte = [0u8; 1];
    while stdin.read(&mut byte)? == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| std::io::Error::other("the password is not UTF-8"))
}

/// The guards of the host under `--platform-root` (default `/`).
pub fn guards(global: &GlobalFlags) -> Guards {
    Guards::on_host(root(global))
}

/// Runs a `platform` command.
pub async fn run(
    global: &GlobalFlags,
    command: &PlatformCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    match command {
        PlatformCommand::Detect(args) => {
            let root = args.root.clone().unwrap_or_else(|| root(global));
            let info = detect_platform(&PlatformRequest { root: Some(root) })?;
            printer.print(&DetectView(info))?;
            Ok(ExitStatus::Success)
        }
        PlatformCommand::Stop(args) => pod(global, args, PodState::Stopped, printer).await,
        PlatformCommand::Start(args) => pod(global, args, PodState::Started, printer).await,
    }
}

async fn pod(
    global: &GlobalFlags,
    args: &StaticPodArgs,
    state: PodState,
    printer: Printer,
) -> Result<ExitStatus> {
    let request = StaticPodRequest {
        state,
        manifest: args.manifest.clone(),
        parking_dir: args.parking_dir.clone(),
        timeout: args.timeout.as_secs().max(1),
        root: Some(root(global)),
        dry_run: args.dry_run,
        crictl: None,
        force_new_cluster: false,
    };
    // Connection flags given explicitly are used for the health check; else the manifest's.
    let explicit = global.connection_options().or_env()?;
    let connection = if explicit.endpoints.is_some() {
        Some(explicit.build()?)
    } else {
        None
    };
    let done = static_pod(
        &guards(global),
        &request,
        connection.as_ref(),
        Force(args.force.force),
    )
    .await
    .with_context(|| format!("platform {}", state_word(state)))?;
    if let Some(warning) = &done.forced {
        crate::output::warn(warning);
    }
    printer.print(&PodView(done.result, args.dry_run))?;
    Ok(ExitStatus::Success)
}
