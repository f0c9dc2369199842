//! The backup manifest parser on arbitrary bytes: an error or a manifest that writes back
//! out and parses again to itself; never a panic.
#![no_main]

use etcd_snapshot::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(manifest) = Manifest::from_json("fuzz", data) {
        let again = Manifest::from_json("fuzz", &manifest.to_json());
        assert_eq!(
            again.ok().as_ref(),
            Some(&manifest),
            "a manifest must round-trip"
        );
    }
});
