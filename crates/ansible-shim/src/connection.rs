//! The connection options every module shares, defined once (documented once in the
//! collection's doc fragment `etcd.core.connection`).
//!
//! They become etcd-core's [`ConnectionOptions`]; what a task leaves unset falls back to the
//! `ETCDCTL_*` variables (the action plugin has already filled them from the controller's
//! environment, so credentials injected there reach the module as arguments).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use etcdops::client::{ClusterConfig, ConnectionOptions, Secret, parse_duration};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::outcome::ModuleError;
use crate::spec::ModuleSpec;

/// The value of `platform`: where unset connection settings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlatformSource {
    /// The etcd found on the host (its static pod manifest, systemd unit or env file).
    Auto,
}

/// The shared connection options, as every module accepts them (a module that talks to no
/// cluster ignores them, so that `module_defaults` of the whole group can set them).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ConnectionArgs {
    endpoints: Option<Vec<String>>,
    cacert: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    cacert_content: Option<String>,
    cert_content: Option<String>,
    #[schemars(extend("x-no-log" = true))]
    key_content: Option<String>,
    user: Option<String>,
    #[schemars(extend("x-no-log" = true))]
    password: Option<String>,
    #[schemars(extend("x-no-log" = true))]
    auth_jwt_token: Option<String>,
    #[schemars(extend("default" = false))]
    insecure_skip_tls_verify: Option<bool>,
    server_name: Option<String>,
    discovery_srv: Option<String>,
    discovery_srv_name: Option<String>,
    insecure_discovery: Option<bool>,
    dns_server: Option<String>,
    #[schemars(extend("default" = "2s"))]
    dial_timeout: Option<String>,
    #[schemars(extend("default" = "5s"))]
    command_timeout: Option<String>,
    platform: Option<PlatformSource>,
    /// The directory standing for `/` (the host mounted elsewhere, a test's fake host);
    /// `root` is its old name in etcd_static_pod and etcd_platform_info.
    #[schemars(extend("x-aliases" = ["root"], "default" = "/"))]
    platform_root: Option<PathBuf>,
}

fn duration(option: &str, text: Option<String>) -> Result<Option<Duration>, String> {
    text.map(|t| {
        // A bare number is seconds, as Ansible users write timeouts.
        let spelled = if t.trim().chars().all(|c| c.is_ascii_digit()) {
            format!("{}s", t.trim())
        } else {
            t
        };
        parse_duration(&spelled).map_err(|e| format!("{option}: {e}"))
    })
    .transpose()
}

impl ConnectionArgs {
    /// The shared options' declarations, read from the type once.
    pub fn spec() -> &'static ModuleSpec {
        static SPEC: OnceLock<ModuleSpec> = OnceLock::new();
        SPEC.get_or_init(|| ModuleSpec::of::<ConnectionArgs>().unwrap_or_default())
    }

    /// Takes the shared options out of a module's parameters.
    pub fn take(params: &mut Map<String, Value>) -> Result<ConnectionArgs, String> {
        let mut mine = Map::new();
        for spec in &ConnectionArgs::spec().options {
            if let Some(value) = params.remove(&spec.name) {
                mine.insert(spec.name.clone(), value);
            }
        }
        crate::spec::parse("connection", mine)
    }

    /// Validates the options into a cluster configuration: task values first, then the
    /// `ETCDCTL_*` environment, then etcdctl's defaults.
    pub fn build(self) -> Result<ClusterConfig, ModuleError> {
        let options = ConnectionOptions {
            endpoints: self.endpoints,
            cacert: self.cacert,
            cert: self.cert,
            key: self.key,
            cacert_pem: self.cacert_content,
            cert_pem: self.cert_content,
            key_pem: self.key_content.map(Secret::new),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            server_name: self.server_name,
            user: self.user,
            password: self.password.map(Secret::new),
            auth_jwt_token: self.auth_jwt_token.map(Secret::new),
            dial_timeout: duration("dial_timeout", self.dial_timeout).map_err(ModuleError::new)?,
            command_timeout: duration("command_timeout", self.command_timeout)
                .map_err(ModuleError::new)?,
            discovery_srv: self.discovery_srv,
            discovery_srv_name: self.discovery_srv_name,
            insecure_discovery: self.insecure_discovery,
            dns_server: self.dns_server,
            ..Default::default()
        };
        // Library errors keep their hint: the module option that fixes them.
        let options = options.or_env()?;
        // `platform: auto` fills what is still unset from the etcd found on the host.
        let options = match self.platform {
            None => options,
            Some(PlatformSource::Auto) => etcdops::platform::fill_from_host(
                options,
                &host_root(self.platform_root.as_deref()),
            )?,
        };
        Ok(options.build()?)
    }
}

/// The directory standing for `/` from the `platform_root` option: unset or empty (no root)
/// is the host's own `/`. `platform: auto` and the guards read the host through it alike.
pub(crate) fn host_root(platform_root: Option<&std::path::Path>) -> PathBuf {
    platform_root
        .filter(|root| !root.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn bad_connection_values_name_the_option() {
        let err = crate::parse_args(
            r#"{"_ansible_module_name": "etcd_cluster_info", "dial_timeout": "soon"}"#,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "dial_timeout: 'soon' is not a duration; write it like 5s, 500ms or 1m30s"
        );
        let err = crate::parse_args(
            r#"{"_ansible_module_name": "etcd_cluster_info", "platform": "kubeadm"}"#,
        )
        .unwrap_err();
        assert_eq!(err, "platform: 'kubeadm' is not one of auto");
    }

    /// The timeouts' documented defaults are written by hand in the schema (the library
    /// applies them later): they must be the ones the library applies when they are unset.
    #[test]
    fn documented_timeouts_are_the_ones_the_library_applies() {
        let spec = super::ConnectionArgs::spec();
        let config =
            etcdops::client::ClusterConfig::for_endpoints(["http://127.0.0.1:2379"]).unwrap();
        for (name, applied) in [
            ("dial_timeout", config.dial_timeout),
            ("command_timeout", config.command_timeout),
        ] {
            let documented = spec.get(name).and_then(|o| o.default.clone());
            let documented = documented.as_ref().and_then(|d| d.as_str()).unwrap();
            assert_eq!(
                etcdops::client::parse_duration(documented).unwrap(),
                applied,
                "{name}"
            );
        }
    }
}
