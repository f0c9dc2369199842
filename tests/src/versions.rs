//! Tests that run on one etcd release only. `scripts/test` runs the whole suite twice, against
//! etcd 3.4.23 and 3.5.1; a test whose outcome cannot depend on the release (it starts no
//! etcd, or uses one only as a stand-in target while it tests the collection's packaging, the
//! shim cache, argument checks or docs) needs only one of those runs. `scripts/test` also runs
//! the collection's own test modules (`ansible_*`) on the 3.5 run only, and says why there.

use crate::etcd::EtcdVersion;

/// `true` on the etcd 3.4 run (after printing `why`), so the caller returns at once there and
/// runs on the 3.5 run only. `why` names what makes the test version-independent; apply it
/// explicitly per test, never to a test whose etcd answers, restores, member changes or
/// timings could differ between releases. `ETCDOPS_TEST_EVERY_VERSION=1` runs it anyway.
pub fn skip_on_etcd_3_4(why: &str) -> bool {
    if EtcdVersion::from_env() != EtcdVersion::V3_4 || set_to_1("ETCDOPS_TEST_EVERY_VERSION") {
        return false;
    }
    println!("skipped on etcd 3.4, runs on the 3.5 run only: {why}");
    true
}

/// `true` (after printing `why`) unless `ETCDOPS_E2E_SLOW=1`: the caller returns at once. For
/// the few role scenarios whose every path a faster test on real-shaped hosts also runs
/// (`why` names it); they cost minutes of ansible's Python each, and `scripts/test` must fit
/// CI's time. `ETCDOPS_E2E_SLOW=1 scripts/test` runs them.
pub fn in_slow_tier(why: &str) -> bool {
    if set_to_1("ETCDOPS_E2E_SLOW") {
        return false;
    }
    println!("slow tier, skipped (ETCDOPS_E2E_SLOW=1 runs it): {why}");
    true
}

/// Whether the environment variable `name` is `1` (the switches above).
fn set_to_1(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}
