//! `etcd-ansible-shim`: the one binary behind every module of the `etcd.core` collection.
//!
//! Ansible runs a binary module as `<module> <args-file>`; the file holds a JSON object of the
//! user's options plus `_ansible_*` keys. The shim answers with one JSON object on stdout and
//! exits 0, or 1 when the module failed. No module is wired yet (they come with the Ansible
//! issue); until then every invocation fails cleanly with a message that says so.

use std::process::ExitCode;

use serde::Serialize;

/// What every module prints.
#[derive(Debug, Serialize)]
struct ModuleResult {
    changed: bool,
    failed: bool,
    msg: String,
}

fn module_name(args: &serde_json::Value, argv0: &str) -> String {
    args.get("_ansible_module_name")
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| {
            std::path::Path::new(argv0)
                .file_name()
                .map(|n| {
                    n.to_string_lossy()
                        .trim_start_matches("AnsiballZ_")
                        .to_string()
                })
                .unwrap_or_default()
        })
}

fn run() -> ModuleResult {
    let argv: Vec<String> = std::env::args().collect();
    let fail = |msg: String| ModuleResult {
        changed: false,
        failed: true,
        msg,
    };
    let Some(path) = argv.get(1) else {
        return fail("usage: etcd-ansible-shim ARGS_FILE (Ansible passes the file)".into());
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => return fail(format!("cannot read module arguments '{path}': {e}")),
    };
    let args: serde_json::Value = match serde_json::from_str(&text) {
        Ok(args) => args,
        Err(e) => return fail(format!("module arguments in '{path}' are not JSON: {e}")),
    };
    let name = module_name(&args, argv.first().map(String::as_str).unwrap_or_default());
    fail(format!(
        "module '{name}' is not available in this build of etcd.core"
    ))
}

fn main() -> ExitCode {
    let result = run();
    match serde_json::to_string(&result) {
        Ok(json) => println!("{json}"),
        Err(_) => println!(r#"{{"failed": true, "msg": "cannot encode the module result"}}"#),
    }
    if result.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
