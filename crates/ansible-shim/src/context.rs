//! One module invocation: its name, Ansible's flags and the task's options.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use etcdops::client::ClusterConfig;
use etcdops::guard::Guards;

use crate::connection::ConnectionArgs;
use crate::modules::{ModuleDef, lookup};
use crate::outcome::ModuleError;
use crate::spec::{ModuleSpec, parse};

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
    /// Every option the module accepts, read from its options type once.
    spec: ModuleSpec,
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
        // The action plugin has validated the options (ansible-core's validator: aliases
        // resolved, values coerced); unset ones come as null.
        let params: Map<String, Value> = raw
            .iter()
            .filter(|(k, v)| {
                !k.starts_with("_ansible_") && k.as_str() != crate::MODULE_KEY && !v.is_null()
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let spec = def
            .and_then(|def| def.spec().ok())
            .unwrap_or_else(|| ConnectionArgs::spec().clone());
        Context {
            spec,
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

    /// Every option this module accepts: its own and the shared connection options.
    pub fn spec(&self) -> &ModuleSpec {
        &self.spec
    }

    /// The options, refused when one is unknown to the module (the action plugin validated
    /// them already; this guards the binary run by hand).
    fn checked(&self) -> Result<Map<String, Value>, ModuleError> {
        let spec = &self.spec;
        if let Some(unknown) = self.params.keys().find(|name| spec.get(name).is_none()) {
            let mut known: Vec<&str> = spec
                .options
                .iter()
                .filter(|o| o.documented)
                .map(|o| o.name.as_str())
                .collect();
            known.sort_unstable();
            return Err(ModuleError::new(format!(
                "unsupported option '{unknown}' for {}; supported options: {}",
                self.module,
                known.join(", ")
            )));
        }
        Ok(self.params.clone())
    }

    /// The module's own options, typed.
    pub fn args<T: DeserializeOwned>(&self) -> Result<T, ModuleError> {
        self.args_except(&[])
    }

    /// The module's own options but `others` (a part the module reads as another type),
    /// typed: for a library request that refuses fields it does not know.
    pub fn args_except<T: DeserializeOwned>(&self, others: &[&str]) -> Result<T, ModuleError> {
        let mut params = self.checked()?;
        for option in &ConnectionArgs::spec().options {
            params.remove(&option.name);
        }
        for name in others {
            params.remove(*name);
        }
        parse(&self.module, params).map_err(ModuleError::new)
    }

    /// The guards of the host under the `platform_root` option (default `/`).
    pub fn guards(&self) -> Result<Guards, ModuleError> {
        Ok(Guards::on_host(self.platform_root()?))
    }

    /// The `platform_root` connection option: the directory standing for `/` (default `/`).
    pub fn platform_root(&self) -> Result<std::path::PathBuf, ModuleError> {
        let params = self.checked()?;
        let root = params.get("platform_root").and_then(Value::as_str);
        Ok(crate::connection::host_root(root.map(std::path::Path::new)))
    }

    /// The cluster to talk to, from the shared connection options.
    pub fn cluster(&self) -> Result<ClusterConfig, ModuleError> {
        let mut params = self.checked()?;
        ConnectionArgs::take(&mut params)
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
    fn options_the_module_does_not_take_are_refused_naming_the_supported_ones() {
        let err = parse(json!({
            "_etcd_module": "etcd_kv_info", "etcd_key": "/a", "allow_http": true,
        }))
        .unwrap_err();
        assert!(
            err.contains("unsupported option 'allow_http' for etcd_kv_info"),
            "{err}"
        );
        assert!(
            err.contains("etcd_key") && err.contains("platform_root"),
            "{err}"
        );
        // Unset options (null) are no options.
        parse(json!({"_etcd_module": "etcd_kv_info", "etcd_key": "/a", "allow_http": null}))
            .unwrap();
    }
}
