//! The `etcd.core` Ansible modules as one binary: module arguments (JSON) in, one result
//! (JSON) out. Each module is a thin layer over the same library functions as `etcdops`:
//! it parses its options ([`spec`]), builds the shared connection settings once
//! ([`connection`]), calls the library and returns the library's serializable result.
//!
//! Ansible does not mask secrets for binary modules, so [`secrets`] scrubs every secret
//! option's value from the whole output (`invocation`, messages, return values).
//!
//! ```
//! let args = r#"{"_ansible_module_name": "etcd_nonexistent", "_ansible_check_mode": true}"#;
//! let output = ansible_shim::run_module_json(args, None);
//! assert!(output.failed);
//! assert!(output.json.contains("unknown module"));
//! ```
#![deny(missing_docs)]
// Test code makes fixtures with std's creating calls; library code creates through
// `etcd_common::private` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod connection;
mod context;
pub mod modules;
mod outcome;
pub mod returns;
pub mod secrets;
pub mod spec;
mod store;

pub use context::Context;
pub use outcome::{ModuleError, Outcome};

use serde_json::{Map, Value};

/// The key the action plugin uses to name the module it resolved (the binary itself runs
/// under an architecture-specific name).
pub const MODULE_KEY: &str = "_etcd_module";

/// What the binary prints and how it exits.
#[derive(Debug, Clone)]
pub struct ShimOutput {
    /// The result document, secrets scrubbed.
    pub json: String,
    /// Whether the module failed (exit status 1).
    pub failed: bool,
}

/// Runs the module named in the arguments file `argv[1]`.
pub fn run_from_argv(argv: &[String]) -> ShimOutput {
    let Some(path) = argv.get(1) else {
        return failure(
            "usage: etcd-ansible-shim ARGS_FILE (Ansible passes the file; run modules through ansible)",
        );
    };
    match std::fs::read_to_string(path) {
        Ok(text) => run_module_json(&text, argv.first().map(String::as_str)),
        Err(e) => failure(&format!("cannot read module arguments '{path}': {e}")),
    }
}

/// Runs a module from the JSON text of its arguments. `argv0` is the path the binary was run
/// as (`AnsiballZ_<name>`), the fallback for the module's name.
pub fn run_module_json(text: &str, argv0: Option<&str>) -> ShimOutput {
    let params: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return failure("module arguments must be a JSON object"),
        Err(e) => return failure(&format!("module arguments are not JSON: {e}")),
    };
    let context = Context::new(params, argv0);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return failure(&format!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(modules::run(&context));
    // Connections may still be open; do not wait for them.
    runtime.shutdown_background();
    let failed = outcome.failed;
    ShimOutput {
        json: outcome.into_json(&context),
        failed,
    }
}

/// Parses module arguments as a module would before it runs (names, options, types, the
/// connection settings), without running it: for the fuzz target and tests. Never panics.
pub fn parse_args(text: &str) -> Result<(), String> {
    let params: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err("module arguments must be a JSON object".into()),
        Err(e) => return Err(e.to_string()),
    };
    let context = Context::new(params, None);
    if context.def().is_none() {
        return Err(format!("unknown module '{}'", context.module));
    }
    context.args::<Map<String, Value>>().map_err(|e| e.0)?;
    context.cluster().map(|_| ()).map_err(|e| e.0)
}

fn failure(msg: &str) -> ShimOutput {
    let mut doc = Map::new();
    doc.insert("failed".into(), Value::Bool(true));
    doc.insert("changed".into(), Value::Bool(false));
    doc.insert("msg".into(), Value::String(msg.to_string()));
    ShimOutput {
        json: Value::Object(doc).to_string(),
        failed: true,
    }
}
