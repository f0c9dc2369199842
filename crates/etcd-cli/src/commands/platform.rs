//! `etcdops platform ...`, `--platform auto`, and the host the guards look at. The work is
//! in etcd-k8s and etcdops; this prints its results.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};
use etcdops::client::ConnectionOptions;
use etcdops::guard::Guards;
use etcdops::kubernetes::{
    PlatformInfo, PlatformRequest, PodState, StaticPodRequest, StaticPodResult, detect_platform,
    static_pod,
};

use super::ExitStatus;
use crate::flags::{GlobalFlags, OutputFormat, PlatformCommand, PlatformMode, StaticPodArgs};
use crate::output::{Render, print};

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
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        PlatformCommand::Detect(args) => {
            let root = args.root.clone().unwrap_or_else(|| root(global));
            let info = detect_platform(&PlatformRequest { root: Some(root) })?;
            print(format, &DetectView(info))?;
            Ok(ExitStatus::Success)
        }
        PlatformCommand::Stop(args) => pod(global, args, PodState::Stopped, format).await,
        PlatformCommand::Start(args) => pod(global, args, PodState::Started, format).await,
    }
}

async fn pod(
    global: &GlobalFlags,
    args: &StaticPodArgs,
    state: PodState,
    format: OutputFormat,
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
    let result = static_pod(&request, connection.as_ref())
        .await
        .with_context(|| format!("platform {}", state_word(state)))?;
    print(format, &PodView(result, args.dry_run))?;
    Ok(ExitStatus::Success)
}

fn state_word(state: PodState) -> &'static str {
    match state {
        PodState::Stopped => "stop",
        PodState::Started => "start",
    }
}

fn path(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

struct DetectView(PlatformInfo);

impl serde::Serialize for DetectView {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl DetectView {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let i = &self.0;
        let mut pairs = vec![
            ("platform", i.platform.to_string()),
            ("name", i.name.clone().unwrap_or_default()),
            ("endpoints", i.endpoints.join(",")),
            ("peer_urls", i.peer_urls.join(",")),
            ("data_dir", path(&i.data_dir)),
            ("cacert", path(&i.cacert)),
            ("cert", path(&i.cert)),
            ("key", path(&i.key)),
            ("version", i.version.clone().unwrap_or_default()),
            (
                "source",
                path(&i.manifest.clone().or_else(|| i.config_file.clone())),
            ),
        ];
        if i.parked {
            pairs.push(("parked", "true".into()));
        }
        for note in &i.notes {
            pairs.push(("note", note.clone()));
        }
        pairs
    }
}

impl Render for DetectView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["SETTING", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.pairs()
            .into_iter()
            .map(|(k, v)| vec![k.to_string(), v])
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.pairs()
            .into_iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect()
    }
}

struct PodView(StaticPodResult, bool);

impl serde::Serialize for PodView {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl Render for PodView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["RESULT"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![vec![self.0.summary(self.1)]];
        if let Some(backup) = &self.0.backup {
            rows.push(vec![format!(
                "an older parked manifest was kept as {}",
                backup.display()
            )]);
        }
        rows.extend(self.0.notes.iter().map(|n| vec![n.clone()]));
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().flatten().collect()
    }
}
