//! `etcdops pki ca|member`: a small CA and member certificates for a standalone cluster, over
//! `etcdops::pki`'s `ensure_ca` and `ensure_member_certificate` (valid files kept, keys 0600,
//! never printed; refused where OpenShift's operator issues etcd's certificates, unless
//! `--force`). Needs no cluster.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use etcdops::guard::Force;
use etcdops::pki::{CaRequest, MemberCertRequest, ensure_ca, ensure_member_certificate};

use super::ExitStatus;
use crate::flags::{ForceFlag, GlobalFlags};
use etcdops_printer::Printer;
use etcdops_printer::views::pki::*;

/// `etcdops pki ...`
#[derive(Debug, Subcommand)]
pub enum PkiCommand {
    /// Keep the CA, or make one (ECDSA P-256) when neither file exists; a CA that is half
    /// there or unusable is refused, never replaced.
    Ca(CaArgs),
    /// Keep a member's certificate when it is signed by the CA, matches its key, has exactly
    /// these SANs and enough validity left; otherwise issue a new key and certificate (server
    /// and client use).
    Member(MemberArgs),
}

/// Arguments of `pki ca`.
#[derive(Debug, Args)]
pub struct CaArgs {
    /// The CA certificate (PEM)
    #[arg(long, value_name = "FILE")]
    pub ca_cert: PathBuf,
    /// The CA key (PEM, written mode 0600)
    #[arg(long, value_name = "FILE")]
    pub ca_key: PathBuf,
    /// Common name of a new CA
    #[arg(long, default_value = "etcd CA")]
    pub common_name: String,
    /// Validity of a new CA, in days
    #[arg(long, default_value_t = 3650)]
    pub validity_days: u32,
    /// Say what would be done, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Go past the guards
    #[command(flatten)]
    pub force: ForceFlag,
}

/// Arguments of `pki member`.
#[derive(Debug, Args)]
pub struct MemberArgs {
    /// The CA certificate that signs it
    #[arg(long, value_name = "FILE")]
    pub ca_cert: PathBuf,
    /// The CA key
    #[arg(long, value_name = "FILE")]
    pub ca_key: PathBuf,
    /// The member's certificate (PEM)
    #[arg(long, value_name = "FILE")]
    pub cert: PathBuf,
    /// The member's key (PEM, written mode 0600)
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The member's name (subject common name)
    #[arg(long, alias = "common-name")]
    pub name: String,
    /// DNS names it is reached at (repeat, or comma-separated)
    #[arg(
        long = "dns",
        alias = "dns-names",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub dns_names: Vec<String>,
    /// IP addresses it is reached at (repeat, or comma-separated)
    #[arg(
        long = "ip",
        alias = "ip-addresses",
        value_name = "ADDR",
        value_delimiter = ','
    )]
    pub ip_addresses: Vec<IpAddr>,
    /// Validity of a new certificate, in days
    #[arg(long, default_value_t = 365)]
    pub validity_days: u32,
    /// Reissue when fewer days than this remain
    #[arg(long, default_value_t = etcdops::pki::RENEW_BEFORE_DAYS)]
    pub renew_before_days: u32,
    /// Say what would be done, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Go past the guards
    #[command(flatten)]
    pub force: ForceFlag,
}

/// Runs `pki ca` or `pki member`.
pub async fn run(
    global: &GlobalFlags,
    command: &PkiCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    let guards = super::platform::guards(global);
    let done = match command {
        PkiCommand::Ca(args) => {
            let mut request = CaRequest::new(&args.ca_cert, &args.ca_key);
            request.common_name = args.common_name.clone();
            request.validity_days = args.validity_days;
            request.check_mode = args.dry_run;
            ensure_ca(&guards, &request, Force(args.force.force)).await?
        }
        PkiCommand::Member(args) => {
            let ca = CaRequest::new(&args.ca_cert, &args.ca_key);
            let mut request = MemberCertRequest::new(&ca, &args.name, &args.cert, &args.key);
            request.dns_names = args.dns_names.clone();
            request.ip_addresses = args.ip_addresses.clone();
            request.validity_days = args.validity_days;
            request.renew_before_days = args.renew_before_days;
            request.check_mode = args.dry_run;
            ensure_member_certificate(&guards, &request, Force(args.force.force)).await?
        }
    };
    if let Some(warning) = &done.forced {
        crate::output::warn(warning);
    }
    printer.print(&CertView(done.result))?;
    Ok(ExitStatus::Success)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::Parser;

    use crate::flags::{Cli, Command};

    use super::PkiCommand;

    #[test]
    fn member_flags_take_lists_and_reject_bad_ips() {
        let cli = Cli::try_parse_from([
            "etcdops",
            "pki",
            "member",
            "--ca-cert",
            "ca.crt",
            "--ca-key",
            "ca.key",
            "--cert",
            "m.crt",
            "--key",
            "m.key",
            "--name",
            "m0",
            "--dns",
            "a.example,b.example",
            "--ip",
            "10.0.0.1",
            "--ip",
            "::1",
        ])
        .unwrap();
        let Command::Pki(PkiCommand::Member(args)) = cli.command else {
            panic!("not pki member");
        };
        assert_eq!(args.dns_names, ["a.example", "b.example"]);
        assert_eq!(args.ip_addresses.len(), 2);
        assert_eq!(args.renew_before_days, 30);
        let err = Cli::try_parse_from([
            "etcdops",
            "pki",
            "member",
            "--ca-cert",
            "c",
            "--ca-key",
            "k",
            "--cert",
            "m",
            "--key",
            "n",
            "--name",
            "m0",
            "--ip",
            "10.0.0",
        ])
        .unwrap_err();
        assert!(err.to_string().contains("invalid value '10.0.0'"), "{err}");
    }
}
