//! The options of snapshot operations that their errors name (declared in
//! `etcd_common::options`; a front-end spells them), and the retention rules as one group.

use etcd_common::OptionId;

pub use etcd_common::options::{
    CHAIN, CHECK_EVERY, COMPACT_AFTER, COMPRESSION_LEVEL, DELTA_EVERY, FULL_EVERY, KEEP_DAILY,
    KEEP_HOURLY, KEEP_LAST, KEEP_MONTHLY, KEEP_WEEKLY, MAX_AGE, METRICS_ADDR, OBJECT_LOCK_MODE,
    OBJECT_LOCK_RETAIN, SEGMENT_BYTES, WORK_DIR,
};

/// The retention rules, any one of which a prune needs.
pub const RETENTION_RULES: [OptionId; 6] = [
    KEEP_LAST,
    KEEP_HOURLY,
    KEEP_DAILY,
    KEEP_WEEKLY,
    KEEP_MONTHLY,
    MAX_AGE,
];
