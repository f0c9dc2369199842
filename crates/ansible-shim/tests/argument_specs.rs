//! The argument specs the action plugin validates every task with
//! (`plugins/plugin_utils/argument_specs.json`) are the shim's own declarations, generated
//! from each module's options type: this fails on any drift. Rewrite the file with
//! `ETCDOPS_WRITE_ARGUMENT_SPECS=1 cargo test -p ansible-shim --test argument_specs`.

#![allow(clippy::unwrap_used)] // a test
#![allow(clippy::disallowed_methods)] // a test: rewrites a checked-in file, not etcd data

use std::path::Path;

use ansible_shim::modules::MODULES;
use serde_json::{Map, Value, json};

fn generated() -> String {
    let mut modules = Map::new();
    for module in MODULES {
        let spec = module.spec().unwrap();
        modules.insert(
            module.name.to_string(),
            json!({
                "connection": module.connection,
                "argument_spec": spec.argument_spec(),
            }),
        );
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(modules)).unwrap();
    text.push('\n');
    text
}

#[test]
fn the_action_plugins_argument_specs_are_the_shims_declarations() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ansible_collections/etcd/core/plugins/plugin_utils/argument_specs.json");
    let want = generated();
    if std::env::var_os("ETCDOPS_WRITE_ARGUMENT_SPECS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is not generated from the modules' options types; rewrite it with \
         ETCDOPS_WRITE_ARGUMENT_SPECS=1 cargo test -p ansible-shim --test argument_specs",
        path.display()
    );
}
