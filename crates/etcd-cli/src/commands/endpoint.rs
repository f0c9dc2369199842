//! `etcdops endpoint ...`
//!
//! `simple` and etcdctl's JSON are etcdctl's, column for column and field for field: per
//! member, as the release that answers prints it (etcdctl 3.4 writes healthy lines to stderr;
//! 3.6 adds status and hash columns). An endpoint that fails is said on stderr there, as
//! etcdctl says it; our table and JSON keep it as a row.

use anyhow::Result;
use etcdops::client::{ClusterConfig, Targets};
use etcdops::endpoint::{EndpointHashKv, endpoint_hashkv, endpoint_health, endpoint_status};

use super::ExitStatus;
use crate::flags::{Compat, EndpointArgs, EndpointCommand, OutputFormat};
use crate::output::{cell, plain, warn};
use etcdops_printer::Printer;
use etcdops_printer::views::endpoint::*;

/// Runs an endpoint command.
pub async fn run(
    config: &ClusterConfig,
    args: &EndpointArgs,
    printer: Printer,
) -> Result<ExitStatus> {
    let targets = Targets::of(args.cluster());
    let simple = printer.format == OutputFormat::Simple;
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
                None => endpoint_health(config, targets).await?,
            };
            let report = HealthView {
                report,
                etcdctl_3_4: printer.is_etcdctl(),
            };
            printer.print(&report)?;
            if simple {
                report
                    .stderr_lines()
                    .iter()
                    .for_each(|l| eprintln!("{}", plain(l)));
            }
            Ok(ExitStatus::from_ok(report.report.all_healthy))
        }
        EndpointCommand::Status(_) => {
            let report = StatusView(endpoint_status(config, targets).await?);
            printer.print(&report)?;
            if simple || printer.format.is_etcdctl_json() {
                for e in report.0.endpoints.iter().filter(|e| e.error.is_some()) {
                    eprintln!(
                        "Failed to get the status of endpoint {} ({})",
                        plain(&e.given),
                        plain(&cell(&e.error))
                    );
                }
            }
            Ok(ExitStatus::from_ok(report.0.all_answered))
        }
        EndpointCommand::Hashkv(hashkv) => {
            let report = HashKvView(endpoint_hashkv(config, targets, hashkv.rev).await?);
            printer.print(&report)?;
            let failed: Vec<&EndpointHashKv> = report
                .0
                .endpoints
                .iter()
                .filter(|e| e.error.is_some())
                .collect();
            if simple || printer.format.is_etcdctl_json() {
                for e in &failed {
                    eprintln!(
                        "Failed to get the hash of endpoint {} ({})",
                        plain(&e.given),
                        plain(&cell(&e.error))
                    );
                }
            }
            // etcdctl fails only when a member did not answer; hashes that differ are for
            // the reader to see. Ours also fails when they differ, and says so.
            let answered = failed.is_empty();
            let agree = report.0.all_agree;
            if !printer.is_etcdctl() && answered && !agree && simple {
                eprintln!(
                    "etcdops: the hashes at revision {} DO NOT agree",
                    report.0.revision
                );
            }
            Ok(ExitStatus::from_ok(match printer.compat {
                Compat::Etcdctl => answered,
                Compat::Etcdops => agree,
            }))
        }
    }
}
