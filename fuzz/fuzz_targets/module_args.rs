//! The Ansible shim's argument parsing on arbitrary text: module names, unknown options, type
//! coercion, connection settings. An error or success, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ansible_shim::parse_args(text);
    }
});
