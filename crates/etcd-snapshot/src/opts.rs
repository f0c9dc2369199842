//! The options of snapshot operations that their errors name (by their neutral ids; a
//! front-end spells them).

use etcd_common::OptionId;

/// Keep the newest N backups.
pub const KEEP_LAST: OptionId = OptionId::value("keep_last");
/// Keep the newest backup of each of the last N hours.
pub const KEEP_HOURLY: OptionId = OptionId::value("keep_hourly");
/// Keep the newest backup of each of the last N days.
pub const KEEP_DAILY: OptionId = OptionId::value("keep_daily");
/// Keep the newest backup of each of the last N weeks.
pub const KEEP_WEEKLY: OptionId = OptionId::value("keep_weekly");
/// Keep the newest backup of each of the last N months.
pub const KEEP_MONTHLY: OptionId = OptionId::value("keep_monthly");
/// Keep the backups younger than this.
pub const MAX_AGE: OptionId = OptionId::value("max_age");
/// The retention rules, any one of which a prune needs.
pub const RETENTION_RULES: [OptionId; 6] = [
    KEEP_LAST,
    KEEP_HOURLY,
    KEEP_DAILY,
    KEEP_WEEKLY,
    KEEP_MONTHLY,
    MAX_AGE,
];
/// The chain to compact, by its full backup.
pub const CHAIN: OptionId = OptionId::value("chain");
/// Where a compaction rebuilds the db.
pub const WORK_DIR: OptionId = OptionId::value("work_dir");
/// The time between delta segments of a backup run.
pub const DELTA_EVERY: OptionId = OptionId::value("delta_every");
/// The time between full backups of a backup run.
pub const FULL_EVERY: OptionId = OptionId::value("full_every");
/// The size at which a delta segment is cut.
pub const SEGMENT_BYTES: OptionId = OptionId::value("segment_bytes");
/// The time between a backup run's checks.
pub const CHECK_EVERY: OptionId = OptionId::value("check_every");
/// When a backup run compacts its chain.
pub const COMPACT_AFTER: OptionId = OptionId::value("compact_after");
/// The zstd compression level.
pub const COMPRESSION_LEVEL: OptionId = OptionId::value("compression_level");
