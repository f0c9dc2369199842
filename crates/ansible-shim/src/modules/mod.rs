//! Every module of `etcd.core`, by name.

mod cluster_info;
mod data_dir;
mod data_dir_info;
mod encryption_config;
mod encryption_info;
mod etcd_certificate;
mod etcd_config;
mod kv_info;
mod lease_info;
mod maintenance;
mod member;
mod platform_info;
mod quorum_recovery;
mod snapshot;
mod snapshot_compact;
mod snapshot_copy;
mod snapshot_info;
mod snapshot_restore;
mod static_pod;
mod usage_info;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::connection::ConnectionArgs;
use crate::context::Context;
use crate::outcome::Outcome;
use crate::spec::ModuleSpec;

fn default_wait_timeout() -> u64 {
    120
}

/// `wait` and `wait_timeout`, for a module that can wait for the cluster to settle.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitOptions {
    /// Wait (in seconds, up to `wait_timeout`).
    #[serde(default)]
    pub wait: bool,
    /// How long to wait, in seconds.
    #[serde(default = "default_wait_timeout")]
    pub wait_timeout: u64,
}

/// A module: its name, its own options, and whether it takes the connection options.
#[derive(Debug)]
pub struct ModuleDef {
    /// Short name (`etcd_member`).
    pub name: &'static str,
    /// Its own options: `ModuleSpec::of` its options type (the shared connection options
    /// come with [`ModuleDef::spec`]).
    pub options: fn() -> Result<ModuleSpec, String>,
    /// Whether it talks to a cluster.
    pub connection: bool,
}

/// Every module.
pub const MODULES: &[ModuleDef] = &[
    ModuleDef {
        name: "etcd_cluster_info",
        options: ModuleSpec::of::<cluster_info::Options>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_member",
        options: ModuleSpec::of::<member::Options>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_snapshot",
        options: ModuleSpec::of::<etcdops::snapshot::SaveRequest>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_snapshot_info",
        options: ModuleSpec::of::<snapshot_info::Args>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_snapshot_copy",
        options: ModuleSpec::of::<etcdops::snapshot::LocalCopyRequest>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_snapshot_compact",
        options: ModuleSpec::of::<etcdops::snapshot::ConsolidateRequest>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_snapshot_restore",
        options: ModuleSpec::of::<snapshot_restore::Options>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_maintenance",
        options: ModuleSpec::of::<maintenance::Options>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_kv_info",
        options: ModuleSpec::of::<kv_info::Args>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_lease_info",
        options: ModuleSpec::of::<lease_info::Args>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_platform_info",
        options: ModuleSpec::of::<platform_info::Args>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_static_pod",
        options: ModuleSpec::of::<static_pod::Options>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_encryption_info",
        options: ModuleSpec::of::<encryption_info::Args>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_encryption_config",
        options: ModuleSpec::of::<encryption_config::Args>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_config",
        options: ModuleSpec::of::<etcd_config::Args>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_certificate",
        options: ModuleSpec::of::<etcd_certificate::Args>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_data_dir",
        options: ModuleSpec::of::<data_dir::Args>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_quorum_recovery",
        options: ModuleSpec::of::<quorum_recovery::Args>,
        connection: true,
    },
    ModuleDef {
        name: "etcd_data_dir_info",
        options: ModuleSpec::of::<data_dir_info::Args>,
        connection: false,
    },
    ModuleDef {
        name: "etcd_usage_info",
        options: ModuleSpec::of::<usage_info::Args>,
        connection: true,
    },
];

/// The module called `name`.
pub fn lookup(name: &str) -> Option<&'static ModuleDef> {
    MODULES.iter().find(|m| m.name == name)
}

/// Runs the module the context names.
pub async fn run(context: &Context) -> Outcome {
    let result = match context.module.as_str() {
        "etcd_cluster_info" => cluster_info::run(context).await,
        "etcd_member" => member::run(context).await,
        "etcd_snapshot" => snapshot::run(context).await,
        "etcd_snapshot_info" => snapshot_info::run(context).await,
        "etcd_snapshot_copy" => snapshot_copy::run(context).await,
        "etcd_snapshot_compact" => snapshot_compact::run(context).await,
        "etcd_snapshot_restore" => snapshot_restore::run(context).await,
        "etcd_maintenance" => maintenance::run(context).await,
        "etcd_kv_info" => kv_info::run(context).await,
        "etcd_lease_info" => lease_info::run(context).await,
        "etcd_platform_info" => platform_info::run(context).await,
        "etcd_static_pod" => static_pod::run(context).await,
        "etcd_encryption_info" => encryption_info::run(context).await,
        "etcd_encryption_config" => encryption_config::run(context).await,
        "etcd_config" => etcd_config::run(context).await,
        "etcd_certificate" => etcd_certificate::run(context).await,
        "etcd_data_dir" => data_dir::run(context).await,
        "etcd_quorum_recovery" => quorum_recovery::run(context).await,
        "etcd_data_dir_info" => data_dir_info::run(context).await,
        "etcd_usage_info" => usage_info::run(context).await,
        other => {
            let known: Vec<&str> = MODULES.iter().map(|m| m.name).collect();
            return Outcome::failure(format!(
                "unknown module '{other}' in this build of etcd.core; known: {}",
                known.join(", ")
            ));
        }
    };
    let mut outcome = result.unwrap_or_else(|e| Outcome::failure(e.0));
    crate::returns::shape(&context.module, &mut outcome.values);
    outcome
}

impl ModuleDef {
    /// Every option the module accepts: its own and the shared connection options.
    pub fn spec(&self) -> Result<ModuleSpec, String> {
        Ok((self.options)()?.with(ConnectionArgs::spec().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::MODULES;
    use crate::connection::ConnectionArgs;

    #[test]
    fn no_module_option_shadows_a_connection_option() {
        let connection = ConnectionArgs::spec();
        for module in MODULES {
            for spec in (module.options)().unwrap().options {
                // `platform_root` is also the check's own option (the same directory).
                assert!(
                    connection.get(&spec.name).is_none() || spec.name == "platform_root",
                    "{}: option '{}' clashes with a connection option",
                    module.name,
                    spec.name
                );
            }
        }
    }

    #[test]
    fn every_module_has_an_action_plugin_and_is_in_the_action_group() {
        let collection = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../ansible_collections/etcd/core");
        let runtime = std::fs::read_to_string(collection.join("meta/runtime.yml")).unwrap();
        for module in MODULES {
            assert!(
                collection
                    .join(format!("plugins/action/{}.py", module.name))
                    .exists(),
                "{} has no action plugin",
                module.name
            );
            assert!(
                runtime.contains(&format!("- {}\n", module.name)),
                "{} is not in the action group",
                module.name
            );
        }
    }
}
