//! Retention rules: which backups to keep. A backup is kept when any rule keeps it, as in
//! restic and borg; the newest complete backup is always kept.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::{Result, SnapshotError};
use crate::opts;
use etcd_common::InvalidOption;

/// The retention rules (`keep_*` and `max_age` options).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Keep the N newest backups.
    pub keep_last: Option<u32>,
    /// Keep the newest backup of each of the last N hours that have one.
    pub keep_hourly: Option<u32>,
    /// ... of each of the last N days.
    pub keep_daily: Option<u32>,
    /// ... of each of the last N ISO weeks.
    pub keep_weekly: Option<u32>,
    /// ... of each of the last N months.
    pub keep_monthly: Option<u32>,
    /// Keep every backup younger than this.
    pub max_age: Option<Duration>,
}

impl RetentionPolicy {
    /// Whether any rule is set (pruning without a rule is refused).
    pub fn is_empty(&self) -> bool {
        self.keep_last.is_none()
            && self.keep_hourly.is_none()
            && self.keep_daily.is_none()
            && self.keep_weekly.is_none()
            && self.keep_monthly.is_none()
            && self.max_age.is_none()
    }

    /// Refuses a rule set to zero: `keep_last: 0` (any `keep_*` 0) or a zero `max_age` keeps
    /// nothing by itself, so alone it would prune everything but the newest backup. The error
    /// names the option as this struct does (`keep_last`); front-ends phrase it as theirs.
    pub fn validate(&self) -> Result<()> {
        let counts = [
            (opts::KEEP_LAST, self.keep_last),
            (opts::KEEP_HOURLY, self.keep_hourly),
            (opts::KEEP_DAILY, self.keep_daily),
            (opts::KEEP_WEEKLY, self.keep_weekly),
            (opts::KEEP_MONTHLY, self.keep_monthly),
        ];
        for (option, count) in counts {
            if count == Some(0) {
                return Err(SnapshotError::from(InvalidOption::new(
                    option,
                    "must be at least 1; 0 keeps nothing by this rule (leave the rule \
                             out instead)",
                )));
            }
        }
        if self.max_age == Some(Duration::ZERO) {
            return Err(SnapshotError::from(InvalidOption::new(
                opts::MAX_AGE,
                "must be more than 0s; 0 keeps nothing by this rule (leave the \
                         rule out instead)",
            )));
        }
        Ok(())
    }
}

/// One backup as retention sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionItem {
    /// Identifier (the object name).
    pub name: String,
    /// When it was taken.
    pub created_at: DateTime<Utc>,
    /// Whether it is complete and its object present (only those can be the protected newest).
    pub complete: bool,
    /// The revision it holds: the complete backup with the highest is kept too, whatever its
    /// date (a clock stepped back can date the backup with the newest data before another).
    pub revision: i64,
}

/// The decision for one backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetentionDecision {
    /// The backup.
    pub name: String,
    /// Rules that keep it; empty means delete.
    pub kept_by: Vec<String>,
}

/// Applies `policy` to `items` (any order). Returns one decision per item, newest first.
pub fn apply_retention(
    policy: &RetentionPolicy,
    items: &[RetentionItem],
    now: DateTime<Utc>,
) -> Result<Vec<RetentionDecision>> {
    if policy.is_empty() {
        return Err(SnapshotError::NoRetentionRule);
    }
    policy.validate()?;
    let mut sorted: Vec<&RetentionItem> = items.iter().collect();
    sorted.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.name.cmp(&a.name)));
    let mut reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let keep = |name: &str, why: String, reasons: &mut BTreeMap<String, Vec<String>>| {
        reasons.entry(name.to_string()).or_default().push(why);
    };

    let newest = sorted.iter().find(|i| i.complete);
    if let Some(newest) = newest {
        keep(&newest.name, "newest complete backup".into(), &mut reasons);
    }
    // The first of the highest revision in date order: the newest-dated one when they tie.
    let mut highest: Option<&RetentionItem> = None;
    for item in sorted.iter().filter(|i| i.complete) {
        if highest.is_none_or(|h| item.revision > h.revision) {
            highest = Some(item);
        }
    }
    if let Some(highest) = highest
        && newest.is_some_and(|n| n.revision < highest.revision)
    {
        keep(
            &highest.name,
            "newest data (highest revision)".into(),
            &mut reasons,
        );
    }
    if let Some(n) = policy.keep_last {
        for item in sorted.iter().take(n as usize) {
            keep(&item.name, format!("keep-last {n}"), &mut reasons);
        }
    }
    let periods: [(&str, Option<u32>, &str); 4] = [
        ("hourly", policy.keep_hourly, "%Y-%m-%d %H"),
        ("daily", policy.keep_daily, "%Y-%m-%d"),
        ("weekly", policy.keep_weekly, "%G-W%V"),
        ("monthly", policy.keep_monthly, "%Y-%m"),
    ];
    for (label, count, format) in periods {
        let Some(n) = count else { continue };
        let mut seen: HashSet<String> = HashSet::new();
        for item in &sorted {
            if seen.len() >= n as usize {
                break;
            }
            let bucket = item.created_at.format(format).to_string();
            if seen.insert(bucket.clone()) {
                keep(
                    &item.name,
                    format!("keep-{label} {n} ({bucket})"),
                    &mut reasons,
                );
            }
        }
    }
    if let Some(max_age) = policy.max_age {
        for item in &sorted {
            let age = now.signed_duration_since(item.created_at);
            if age.to_std().map(|a| a <= max_age).unwrap_or(true) {
                keep(
                    &item.name,
                    format!("younger than max-age {max_age:?}"),
                    &mut reasons,
                );
            }
        }
    }
    Ok(sorted
        .iter()
        .map(|item| RetentionDecision {
            name: item.name.clone(),
            kept_by: reasons.get(item.name.as_str()).cloned().unwrap_or_default(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn item(name: &str, y: i32, mo: u32, d: u32, h: u32) -> RetentionItem {
        let created_at = Utc.with_ymd_and_hms(y, mo, d, h, 0, 0).unwrap();
        RetentionItem {
            name: name.into(),
            created_at,
            complete: true,
            revision: created_at.timestamp(),
        }
    }

    fn kept(decisions: &[RetentionDecision]) -> Vec<&str> {
        decisions
            .iter()
            .filter(|d| !d.kept_by.is_empty())
            .map(|d| d.name.as_str())
            .collect()
    }

    #[test]
    fn the_backup_with_the_newest_data_is_kept_whatever_its_date() {
        // A clock stepped back dated the backup with the newest data (revision 900) before
        // an older one (revision 500): keep-last 1 keeps the latest-dated, and the newest
        // data is kept too.
        let mut stepped = item("newest-data", 2026, 11, 29, 9);
        stepped.revision = 900;
        let mut older = item("older-data", 2026, 11, 29, 10);
        older.revision = 500;
        let mut incomplete = item("incomplete", 2026, 11, 29, 8);
        incomplete.revision = 1000;
        incomplete.complete = false;
        let items = vec![stepped, older, incomplete];
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
        let last = RetentionPolicy {
            keep_last: Some(1),
            ..Default::default()
        };
        let decisions = apply_retention(&last, &items, now).unwrap();
        assert_eq!(kept(&decisions), ["older-data", "newest-data"]);
        let why = &decisions
            .iter()
            .find(|d| d.name == "newest-data")
            .unwrap()
            .kept_by;
        assert_eq!(why, &["newest data (highest revision)"]);
    }

    #[test]
    fn a_backup_is_kept_when_any_rule_keeps_it() {
        let items = vec![
            item("a", 2026, 11, 29, 10),
            item("b", 2026, 11, 29, 9),
            item("c", 2026, 11, 28, 23),
            item("d", 2026, 11, 28, 1),
            item("e", 2026, 10, 1, 0),
            item("f", 2026, 9, 1, 0),
        ];
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
        let daily = RetentionPolicy {
            keep_daily: Some(2),
            ..Default::default()
        };
        assert_eq!(
            kept(&apply_retention(&daily, &items, now).unwrap()),
            ["a", "c"]
        );
        let mixed = RetentionPolicy {
            keep_last: Some(2),
            keep_monthly: Some(3),
            ..Default::default()
        };
        assert_eq!(
            kept(&apply_retention(&mixed, &items, now).unwrap()),
            ["a", "b", "e", "f"]
        );
        let age = RetentionPolicy {
            max_age: Some(Duration::from_secs(30 * 3600)),
            ..Default::default()
        };
        assert_eq!(
            kept(&apply_retention(&age, &items, now).unwrap()),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn the_newest_complete_backup_survives_any_policy() {
        let mut items = vec![item("new", 2026, 11, 29, 10), item("old", 2026, 1, 1, 0)];
        items[0].complete = false;
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
        let tiny = RetentionPolicy {
            max_age: Some(Duration::from_secs(1)),
            ..Default::default()
        };
        let decisions = apply_retention(&tiny, &items, now).unwrap();
        assert_eq!(kept(&decisions), ["old"]);
        assert_eq!(decisions[1].kept_by, ["newest complete backup"]);
    }

    #[test]
    fn a_zero_rule_is_refused() {
        let items = vec![item("a", 2026, 11, 29, 10), item("b", 2026, 11, 28, 10)];
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
        let zero = |f: fn(&mut RetentionPolicy)| {
            let mut policy = RetentionPolicy::default();
            f(&mut policy);
            policy
        };
        let cases: [(&str, RetentionPolicy); 6] = [
            ("keep_last", zero(|p| p.keep_last = Some(0))),
            ("keep_hourly", zero(|p| p.keep_hourly = Some(0))),
            ("keep_daily", zero(|p| p.keep_daily = Some(0))),
            ("keep_weekly", zero(|p| p.keep_weekly = Some(0))),
            ("keep_monthly", zero(|p| p.keep_monthly = Some(0))),
            ("max_age", zero(|p| p.max_age = Some(Duration::ZERO))),
        ];
        for (option, policy) in cases {
            assert!(!policy.is_empty(), "{option}");
            let err = apply_retention(&policy, &items, now)
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("invalid {option}: must be")), "{err}");
            assert!(!err.contains("--") && !err.contains('\n'), "{err}");
            assert!(policy.validate().is_err(), "{option}");
        }
        // Also beside a sound rule.
        let mixed = RetentionPolicy {
            keep_last: Some(3),
            keep_daily: Some(0),
            ..Default::default()
        };
        assert!(apply_retention(&mixed, &items, now).is_err());
        let one = RetentionPolicy {
            keep_last: Some(1),
            ..Default::default()
        };
        assert!(one.validate().is_ok());
    }

    #[test]
    fn no_rule_is_refused() {
        let err = apply_retention(&RetentionPolicy::default(), &[], Utc::now()).unwrap_err();
        // Every rule is in the hint (front-ends render it their own way), none in the text.
        assert!(matches!(&err, SnapshotError::NoRetentionRule), "{err}");
        let hint = etcd_common::Hinted::hint(&err).expect("a hint");
        let names: Vec<_> = hint.options.iter().map(|o| o.name).collect();
        assert_eq!(
            names,
            [
                "keep_last",
                "keep_hourly",
                "keep_daily",
                "keep_weekly",
                "keep_monthly",
                "max_age"
            ]
        );
        let text = err.to_string();
        assert!(!text.contains("--") && !text.contains("keep_"), "{text}");
    }
}
