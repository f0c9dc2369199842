//! `etcd_config`: writes etcd's own config file (`etcd --config-file`) from options, through
//! etcd-host's [`write_server_config`]: validated as a whole, changed only when the content
//! differs, mode 0600, diff and check mode. Returns the DNS SRV records the member needs when
//! a domain is known.

use std::collections::BTreeMap;
use std::path::PathBuf;

use etcdops::guard::Force;
use etcdops::server_config::{
    ClusterState, CompactionMode, LogLevel, ServerConfig, ServerConfigRequest, TransportSecurity,
    srv_records, write_server_config,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::context::Context;
use crate::outcome::{ModuleError, Outcome};

/// The module's options.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Args {
    path: PathBuf,
    name: String,
    data_dir: PathBuf,
    listen_client_urls: Vec<String>,
    #[serde(default)]
    advertise_client_urls: Vec<String>,
    listen_peer_urls: Vec<String>,
    #[serde(default)]
    initial_advertise_peer_urls: Vec<String>,
    #[serde(default)]
    initial_cluster: Vec<String>,
    initial_cluster_state: Option<ClusterState>,
    initial_cluster_token: Option<String>,
    peer_discovery_srv: Option<String>,
    peer_discovery_srv_name: Option<String>,
    client_cert_file: Option<PathBuf>,
    client_key_file: Option<PathBuf>,
    client_trusted_ca_file: Option<PathBuf>,
    #[serde(default)]
    client_cert_auth: bool,
    peer_cert_file: Option<PathBuf>,
    peer_key_file: Option<PathBuf>,
    peer_trusted_ca_file: Option<PathBuf>,
    #[serde(default)]
    peer_client_cert_auth: bool,
    quota_backend_bytes: Option<u64>,
    auto_compaction_mode: Option<CompactionMode>,
    auto_compaction_retention: Option<String>,
    snapshot_count: Option<u64>,
    heartbeat_interval: Option<u64>,
    election_timeout: Option<u64>,
    #[serde(default)]
    listen_metrics_urls: Vec<String>,
    log_level: Option<LogLevel>,
    #[serde(default)]
    extra: BTreeMap<String, String>,
    srv_domain: Option<String>,
    #[serde(default)]
    force: Force,
}

impl Args {
    fn config(self) -> (PathBuf, Option<String>, ServerConfig) {
        let srv_domain = self.srv_domain.or_else(|| self.peer_discovery_srv.clone());
        let config = ServerConfig {
            name: self.name,
            data_dir: self.data_dir,
            listen_client_urls: self.listen_client_urls,
            advertise_client_urls: self.advertise_client_urls,
            listen_peer_urls: self.listen_peer_urls,
            initial_advertise_peer_urls: self.initial_advertise_peer_urls,
            initial_cluster: self.initial_cluster,
            initial_cluster_state: self.initial_cluster_state,
            initial_cluster_token: self.initial_cluster_token,
            discovery_srv: self.peer_discovery_srv,
            discovery_srv_name: self.peer_discovery_srv_name,
            client_tls: TransportSecurity {
                cert_file: self.client_cert_file,
                key_file: self.client_key_file,
                trusted_ca_file: self.client_trusted_ca_file,
                client_cert_auth: self.client_cert_auth,
            },
            peer_tls: TransportSecurity {
                cert_file: self.peer_cert_file,
                key_file: self.peer_key_file,
                trusted_ca_file: self.peer_trusted_ca_file,
                client_cert_auth: self.peer_client_cert_auth,
            },
            quota_backend_bytes: self.quota_backend_bytes,
            auto_compaction_mode: self.auto_compaction_mode,
            auto_compaction_retention: self.auto_compaction_retention,
            snapshot_count: self.snapshot_count,
            heartbeat_interval: self.heartbeat_interval,
            election_timeout: self.election_timeout,
            listen_metrics_urls: self.listen_metrics_urls,
            log_level: self.log_level,
            extra: self.extra,
        };
        (self.path, srv_domain, config)
    }
}

pub async fn run(context: &Context) -> Result<Outcome, ModuleError> {
    let args: Args = context.args()?;
    let force = args.force;
    let (path, srv_domain, config) = args.config();
    let records = match &srv_domain {
        Some(domain) => srv_records(&config, domain, config.discovery_srv_name.as_deref())?,
        None => Vec::new(),
    };
    let done = write_server_config(
        &context.guards()?,
        &ServerConfigRequest {
            path,
            config,
            check_mode: context.check_mode,
        },
        force,
    )
    .await?;
    let result = done.result;
    let verb = match (result.changed, result.check_mode) {
        (false, _) => "unchanged",
        (true, true) => "would write",
        (true, false) => "wrote",
    };
    let mut outcome = Outcome::unchanged(format!("{verb} {}", result.path))
        .with("path", &result.path)
        .with("content", &result.after)
        .with(
            "srv_records",
            records
                .iter()
                .map(|r| r.zone_line.clone())
                .collect::<Vec<_>>(),
        );
    outcome.changed = result.changed;
    outcome.diff = Some(json!({
        "before_header": format!("{} (mode {})", result.path, result.mode_before.as_deref().unwrap_or("absent")),
        "after_header": format!("{} (mode 0600)", result.path),
        "before": result.before.clone().unwrap_or_default(),
        "after": result.after,
    }));
    Ok(outcome)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{Value, json};

    fn run(args: Value) -> (bool, Value) {
        let out = crate::run_module_json(&args.to_string(), None);
        (out.failed, serde_json::from_str(&out.json).unwrap())
    }

    fn args(path: &std::path::Path, extra: Value) -> Value {
        let mut args = json!({
            "_ansible_module_name": "etcd.core.etcd_config",
            "path": path,
            "name": "m0",
            "data_dir": "/var/lib/etcd",
            "listen_client_urls": ["http://10.0.0.1:2379"],
            "listen_peer_urls": ["http://10.0.0.1:2380"],
            "initial_cluster": ["m0=http://10.0.0.1:2380", "m1=http://10.0.0.2:2380"],
            "initial_cluster_state": "new",
            "srv_domain": "example.com",
        });
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    }

    #[test]
    fn check_mode_then_write_then_unchanged_with_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etcd.yaml");
        let (failed, out) = run(args(&path, json!({"_ansible_check_mode": true})));
        assert!(!failed && out["changed"] == json!(true), "{out}");
        assert!(!path.exists());
        let (failed, out) = run(args(&path, json!({"_ansible_diff": true})));
        assert!(!failed && out["changed"] == json!(true), "{out}");
        assert_eq!(out["diff"]["before"], json!(""));
        assert!(
            out["diff"]["after"]
                .as_str()
                .unwrap()
                .contains("initial-cluster-state: new")
        );
        assert_eq!(
            out["srv_records"][0],
            json!("_etcd-server._tcp.example.com. 300 IN SRV 0 0 2380 10.0.0.1.")
        );
        let (failed, out) = run(args(&path, json!({})));
        assert!(!failed && out["changed"] == json!(false), "{out}");
    }

    #[test]
    fn bad_settings_fail_in_one_line_naming_the_option() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("etcd.yaml");
        let (failed, out) = run(args(&path, json!({"initial_cluster_state": "old"})));
        assert!(failed, "{out}");
        assert_eq!(
            out["msg"],
            json!("initial_cluster_state: 'old' is not one of new, existing"),
            "{out}"
        );
        let (failed, out) = run(args(
            &path,
            json!({"listen_client_urls": ["https://10.0.0.1:2379"]}),
        ));
        assert!(failed, "{out}");
        let msg = out["msg"].as_str().unwrap();
        assert!(
            msg.contains("no certificate is set; give client_cert_file"),
            "{msg}"
        );
        let (failed, out) = run(args(&path, json!({"peer_discovery_srv": "example.com"})));
        assert!(failed);
        assert!(out["msg"].as_str().unwrap().contains("not both"), "{out}");
        assert!(!path.exists());
    }
}
