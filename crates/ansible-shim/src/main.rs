//! `etcd-ansible-shim`: the one binary behind every module of the `etcd.core` collection.
//! Ansible runs it as `<module> <args-file>`; it prints one JSON object and exits 0, or 1
//! when the module failed. Everything else lives in the library half of this crate.

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let output = ansible_shim::run_from_argv(&argv);
    println!("{}", output.json);
    if output.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
