//! `etcdops endpoint ...`
//!
//! `simple` and etcdctl's JSON are etcdctl's, column for column and field for field: per
//! member, as the release that answers prints it (etcdctl 3.4 writes healthy lines to stderr;
//! 3.6 adds status and hash columns). An endpoint that fails is said on stderr there, as
//! etcdctl says it; our table and JSON keep it as a row.

use anyhow::Result;
use etcdops::ErrorKind;
use etcdops::client::{Client, ClusterConfig, Targets};

use super::ExitStatus;
use crate::flags::{Compat, EndpointArgs, EndpointCommand};
use crate::output::warn;
use etcdops_printer::Printer;
use etcdops_printer::views::endpoint::*;

/// Runs an endpoint command.
pub async fn run(
    config: &ClusterConfig,
    args: &EndpointArgs,
    printer: Printer,
) -> Result<ExitStatus> {
    let targets = Targets::of(args.cluster());
    let client = Client::new(config.clone());
    match &args.command {
        EndpointCommand::Health(health) => {
            let report = match health.wait {
                Some(timeout) => {
                    let done = etcdops::wait::health_when(config, targets, timeout).await?;
                    if done.waited.timed_out {
                        warn(&format!(
                            "still unhealthy after waiting {}s ({} checks)",
                            done.waited.seconds, done.waited.attempts
                        ));
                    }
                    done.report
                }
                None => client.endpoints().health(targets).await?,
            };
            // etcdctl's verdict is its release's: 3.4's ignores alarms.
            let report = match printer.compat() {
                Compat::Etcdctl => report.judged_as_release(),
                Compat::Etcdops => report,
            };
            if printer.is_etcdctl() {
                let rows = report.endpoints.iter();
                fail_as_etcdctl(rows.map(|e| (e.error_kind, e.error.as_deref())), false)?;
            }
            let report = HealthView {
                report,
                etcdctl_3_4: printer.is_etcdctl(),
            };
            printer.print(&report)?;
            Ok(ExitStatus::from_ok(report.report.all_healthy))
        }
        EndpointCommand::Status(_) => {
            let report = StatusView(client.endpoints().status(targets).await?);
            if printer.is_etcdctl() {
                let rows = report.0.endpoints.iter();
                fail_as_etcdctl(rows.map(|e| (e.error_kind, e.error.as_deref())), true)?;
            }
            printer.print(&report)?;
            Ok(ExitStatus::from_ok(report.0.all_answered))
        }
        EndpointCommand::Hashkv(hashkv) => {
            let report = HashKvView(client.endpoints().hashkv(targets, hashkv.rev).await?);
            if printer.is_etcdctl() {
                let rows = report.0.endpoints.iter();
                fail_as_etcdctl(rows.map(|e| (e.error_kind, e.error.as_deref())), true)?;
            }
            printer.print(&report)?;
            // etcdctl fails only when a member did not answer; hashes that differ are for
            // the reader to see. Ours also fails when they differ, and says so.
            let answered = report.0.endpoints.iter().all(|e| e.error.is_none());
            let agree = report.0.all_agree;
            Ok(ExitStatus::from_ok(match printer.compat() {
                Compat::Etcdctl => answered,
                Compat::Etcdops => agree,
            }))
        }
    }
}

/// A failure etcdctl meets while it builds its client, before it asks any endpoint: a TLS or
/// key file it cannot read, or (for `status` and `hashkv`, whose client authenticates first)
/// refused credentials. etcdctl then prints no rows, only the error, and exits with the
/// code of its kind (see `etcdctl_exit_code` in `main`).
#[derive(Debug)]
pub struct ClientSetupFailed {
    /// What kind of failure it is.
    pub kind: ErrorKind,
    message: String,
}

impl std::fmt::Display for ClientSetupFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ClientSetupFailed {}

/// Under etcdctl's conventions, the first endpoint failure etcdctl would have met building its
/// client, as an error; `auth_too` when refused credentials count (its `health` checks each
/// endpoint with a client of its own and reports them as unhealthy instead).
fn fail_as_etcdctl<'a>(
    rows: impl Iterator<Item = (Option<ErrorKind>, Option<&'a str>)>,
    auth_too: bool,
) -> std::result::Result<(), ClientSetupFailed> {
    for (kind, error) in rows {
        let setup = match kind {
            Some(ErrorKind::CredentialFile) => true,
            Some(ErrorKind::AuthFailed) => auth_too,
            _ => false,
        };
        if let (true, Some(kind), Some(message)) = (setup, kind, error) {
            return Err(ClientSetupFailed {
                kind,
                message: message.to_string(),
            });
        }
    }
    Ok(())
}
