//! `etcd_certificate`: a small CA (`kind: ca`) or a member certificate signed by it
//! (`kind: member`, server and client usage, DNS and IP SANs), through etcd-core's
//! [`ensure_ca`] and [`ensure_member_certificate`]: valid files are kept, keys are written
//! mode 0600 and never returned.

use std::net::IpAddr;
use std::path::PathBuf;

use etcdops::guard::Force;
use etcdops::pki::{CaRequest, MemberCertRequest, ensure_ca, ensure_member_certificate};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum CertKind {
    Ca,
    Member,
}

/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    kind: CertKind,
    ca_cert: PathBuf,
    ca_key: PathBuf,
    cert_path: Option<PathBuf>,
    key_path: Option<PathBuf>,
    common_name: Option<String>,
    #[serde(default)]
    dns_names: Vec<String>,
    #[serde(default)]
    ip_addresses: Vec<String>,
    validity_days: Option<u32>,
    #[serde(default = "default_renew_before_days")]
    renew_before_days: u32,
    #[serde(default)]
    force: Force,
}

fn default_renew_before_days() -> u32 {
    etcdops::pki::RENEW_BEFORE_DAYS
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let mut ca = CaRequest::new(&args.ca_cert, &args.ca_key);
    ca.check_mode = context.check_mode;
    let guards = context.guards()?;
    let done = match args.kind {
        CertKind::Ca => {
            if let Some(cn) = &args.common_name {
                ca.common_name = cn.clone();
            }
            if let Some(days) = args.validity_days {
                ca.validity_days = days;
            }
            ensure_ca(&guards, &ca, args.force).await?
        }
        CertKind::Member => {
            let (Some(cert), Some(key), Some(cn)) =
                (&args.cert_path, &args.key_path, &args.common_name)
            else {
                return Err(ModuleError::new(
                    "etcd_certificate: kind=member needs cert_path, key_path and common_name",
                ));
            };
            let ips = args
                .ip_addresses
                .iter()
                .map(|ip| {
                    ip.trim().parse::<IpAddr>().map_err(|_| {
                        ModuleError::new(format!(
                            "etcd_certificate: ip_addresses: '{ip}' is not an IP address"
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut request = MemberCertRequest::new(&ca, cn, cert, key);
            request.dns_names = args.dns_names.clone();
            request.ip_addresses = ips;
            request.check_mode = context.check_mode;
            if let Some(days) = args.validity_days {
                request.validity_days = days;
            }
            request.renew_before_days = args.renew_before_days;
            ensure_member_certificate(&guards, &request, args.force).await?
        }
    };
    let result = &done.result;
    let mut outcome = Outcome::unchanged(format!("{}: {}", result.cert_path, result.reason));
    outcome.changed = result.changed;
    outcome.warnings.extend(done.forced.clone());
    Ok(outcome.with_fields(result))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{Value, json};

    fn run(args: Value) -> (bool, String) {
        let out = crate::run_module_json(&args.to_string(), None);
        (out.failed, out.json)
    }

    #[test]
    fn ca_and_member_are_made_once_and_keys_never_returned() {
        let dir = tempfile::tempdir().unwrap();
        let ca = json!({
            "_ansible_module_name": "etcd_certificate",
            "kind": "ca",
            "ca_cert": dir.path().join("ca.crt"),
            "ca_key": dir.path().join("ca.key"),
        });
        let (failed, out) = run(ca.clone());
        assert!(!failed && out.contains("\"changed\":true"), "{out}");
        let mut member = ca.clone();
        member["kind"] = json!("member");
        member["cert_path"] = json!(dir.path().join("m0.crt"));
        member["key_path"] = json!(dir.path().join("m0.key"));
        member["common_name"] = json!("m0");
        member["dns_names"] = json!(["m0.example.com"]);
        member["ip_addresses"] = json!(["10.0.0.1"]);
        let (failed, out) = run(member.clone());
        assert!(!failed && out.contains("\"changed\":true"), "{out}");
        assert!(
            out.contains("IP:10.0.0.1") && out.contains("DNS:m0.example.com"),
            "{out}"
        );
        let key = std::fs::read_to_string(dir.path().join("m0.key")).unwrap();
        assert!(
            !out.contains("PRIVATE KEY") && !out.contains(key.trim()),
            "{out}"
        );
        let (failed, out) = run(member.clone());
        assert!(!failed && out.contains("\"changed\":false"), "{out}");
        member["ip_addresses"] = json!(["not-an-ip"]);
        let (failed, out) = run(member);
        assert!(
            failed && out.contains("'not-an-ip' is not an IP address"),
            "{out}"
        );
    }
}
