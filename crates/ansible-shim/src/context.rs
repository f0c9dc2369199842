//! One module invocation: its name, Ansible's flags and the task's options.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use etcdops::client::ClusterConfig;
use etcdops::guard::{Force, Guards, Operation};

use crate::connection::{CONNECTION_OPTIONS, ConnectionArgs};
use crate::modules::{MODULES, ModuleDef, lookup};
use crate::outcome::ModuleError;
use crate::spec::{OptionSpec, normalize, parse};

/// One module invocation.
#[derive(Debug)]
pub struct Context {
    /// The module's short name (`etcd_member`).
    pub module: String,
    /// Check mode: report what would change, change nothing.
    pub check_mode: bool,
    /// Diff mode: return before/after of what changes.
    pub diff: bool,
    params: Map<String, Value>,
    def: Option<&'static ModuleDef>,
}

/// Whether an option set by `module_defaults` is one this module has no use for but another
/// module of the collection takes: such an option is dropped, not refused. An option no
/// module takes (a typo) is kept, and refused as unsupported.
fn unused_default(def: Option<&ModuleDef>, name: &str) -> bool {
    let takes = |d: &ModuleDef| {
        CONNECTION_OPTIONS
            .iter()
            .chain(d.options.iter().flat_map(|s| s.iter()))
            .any(|spec| spec.answers_to(name))
    };
    let Some(def) = def else { return false };
    !takes(def) && MODULES.iter().any(takes)
}

impl Context {
    /// Splits Ansible's `_ansible_*` keys from the task's options and names the module: the
    /// action plugin's `_etcd_module` first, else Ansible's module name, else the file the
    /// binary runs as (`AnsiballZ_etcd_member`).
    pub fn new(raw: Map<String, Value>, argv0: Option<&str>) -> Context {
        let flag = |key: &str| raw.get(key).and_then(Value::as_bool).unwrap_or(false);
        let from_argv = argv0
            .and_then(|a| std::path::Path::new(a).file_name())
            .map(|n| {
                n.to_string_lossy()
                    .trim_start_matches("AnsiballZ_")
                    .to_string()
            });
        let module = raw
            .get(crate::MODULE_KEY)
            .or_else(|| raw.get("_ansible_module_name"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or(from_argv)
            .unwrap_or_default();
        // `etcd.core.etcd_member` -> `etcd_member`
        let module = module.rsplit('.').next().unwrap_or_default().to_string();
        let def = lookup(&module);
        let from_defaults: Vec<&str> = raw
            .get(crate::DEFAULTS_KEY)
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let params: Map<String, Value> = raw
            .iter()
            .filter(|(k, _)| {
                !k.starts_with("_ansible_")
                    && k.as_str() != crate::MODULE_KEY
                    && k.as_str() != crate::DEFAULTS_KEY
            })
            .filter(|(k, _)| !(from_defaults.contains(&k.as_str()) && unused_default(def, k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Context {
            check_mode: flag("_ansible_check_mode"),
            diff: flag("_ansible_diff"),
            def,
            module,
            params,
        }
    }

    /// The module's definition, when the name is known.
    pub fn def(&self) -> Option<&'static ModuleDef> {
        self.def
    }

    /// The task's options as given (no `_ansible_*` keys).
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// Every option this module accepts: the shared connection options and its own.
    pub fn specs(&self) -> Vec<&'static [OptionSpec]> {
        // Modules that do not talk to a cluster still accept (and ignore) the connection
        // options, so that `module_defaults: {group/etcd.core.etcd: ...}` can set them for all.
        let mut specs = vec![CONNECTION_OPTIONS];
        if let Some(def) = self.def {
            specs.extend_from_slice(def.options);
        }
        specs
    }

    fn normalized(&self) -> Result<Map<String, Value>, ModuleError> {
        normalize(&self.module, &self.params, &self.specs()).map_err(ModuleError::new)
    }

    /// The module's own options, typed.
    pub fn args<T: DeserializeOwned>(&self) -> Result<T, ModuleError> {
        let mut normalized = self.normalized()?;
        for spec in CONNECTION_OPTIONS {
            normalized.remove(spec.name);
        }
        parse(&self.module, normalized).map_err(ModuleError::new)
    }

    /// The guards of the host under the `platform_root` option (default `/`).
    pub fn guards(&self) -> Result<Guards, ModuleError> {
        Ok(Guards::on_host(self.platform_root()?))
    }

    /// The OpenShift operator guard, for the modules whose workflow does not pass it itself
    /// yet (`defrag`, `snapshot restore`): refuses `operation` unless `force`; returns the
    /// warning to give when it was forced through.
    pub async fn operator_guard(
        &self,
        cluster: Option<&ClusterConfig>,
        operation: &str,
        force: bool,
    ) -> Result<Option<String>, ModuleError> {
        let operation = match operation {
            "defrag" => Operation::Defrag,
            "snapshot restore" => Operation::SnapshotRestore,
            other => return Err(ModuleError::new(format!("no guard for `{other}`"))),
        };
        let passed = self
            .guards()?
            .check(operation, Force(force), cluster)
            .await?;
        Ok(passed.warning())
    }

    /// The `platform_root` connection option: the directory standing for `/` (default `/`).
    pub fn platform_root(&self) -> Result<std::path::PathBuf, ModuleError> {
        Ok(self
            .normalized()?
            .get("platform_root")
            .and_then(Value::as_str)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from("/")))
    }

    /// The cluster to talk to, from the shared connection options.
    pub fn cluster(&self) -> Result<ClusterConfig, ModuleError> {
        let mut normalized = self.normalized()?;
        ConnectionArgs::take(&mut normalized)
            .map_err(ModuleError::new)?
            .build()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    fn parse(args: serde_json::Value) -> Result<(), String> {
        crate::parse_args(&args.to_string())
    }

    #[test]
    fn store_options_from_module_defaults_are_ignored_where_no_store_is_read() {
        // A group's defaults reach etcd_kv_info too: an option another module takes is
        // ignored there.
        parse(json!({
            "_etcd_module": "etcd_kv_info", "etcd_key": "/a",
            "allow_http": true, "s3_endpoint": "http://minio:9000",
            "_etcd_defaults": ["allow_http", "s3_endpoint"],
        }))
        .unwrap();
        // The same options written in the task itself are refused.
        let err = parse(json!({
            "_etcd_module": "etcd_kv_info", "etcd_key": "/a", "allow_http": true,
        }))
        .unwrap_err();
        assert!(err.contains("unsupported option 'allow_http'"), "{err}");
        // A typo in module_defaults is refused: no module takes it.
        let err = parse(json!({
            "_etcd_module": "etcd_kv_info", "etcd_key": "/a", "alow_http": true,
            "_etcd_defaults": ["alow_http"],
        }))
        .unwrap_err();
        assert!(err.contains("unsupported option 'alow_http'"), "{err}");
        // A module that takes the option still gets it (and checks its value).
        let err = parse(json!({
            "_etcd_module": "etcd_snapshot", "store": "/b", "allow_http": "maybe",
            "_etcd_defaults": ["allow_http"],
        }))
        .unwrap_err();
        assert!(err.contains("allow_http: expected a boolean"), "{err}");
    }
}
