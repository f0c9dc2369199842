//! How `usage` results are printed.

use crate::output::{Render, human_bytes, plain};
use etcdops::usage::{GroupTable, KeyUsage, UsageResult};

fn bytes(value: u64) -> String {
    human_bytes(i64::try_from(value).unwrap_or(i64::MAX))
}

fn optional_bytes(value: Option<u64>) -> String {
    value.map(bytes).unwrap_or_else(|| "unknown (live)".into())
}

/// The summary; in JSON, the whole report.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct SummaryView<'a>(pub &'a UsageResult);

impl SummaryView<'_> {
    fn facts(&self) -> Vec<(&'static str, String)> {
        let r = &self.0.report;
        let mut facts = vec![
            ("source", plain(&r.source)),
            ("revision", r.revision.to_string()),
            (
                "prefix",
                if r.prefix.is_empty() {
                    "(every key)".into()
                } else {
                    plain(&r.prefix)
                },
            ),
            ("keys", r.keys.to_string()),
            ("live bytes", bytes(r.live_bytes)),
            (
                "history revisions",
                r.history_revisions
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "unknown (live)".into()),
            ),
            (
                "history bytes (compaction frees)",
                optional_bytes(r.history_bytes),
            ),
        ];
        if let Some(estimate) = r.history_bytes_estimate {
            facts.push(("history bytes estimate (in use - live)", bytes(estimate)));
        }
        if let Some(compact) = r.compact_revision {
            facts.push(("compact revision", compact.to_string()));
        }
        facts.extend([
            (
                "leases",
                r.leases.map(|n| n.to_string()).unwrap_or_default(),
            ),
            ("leased keys", r.leased_keys.to_string()),
            ("db size", bytes(r.db.size)),
            ("db in use", bytes(r.db.in_use)),
            (
                "free (defrag gives back)",
                format!("{} ({:.1}%)", bytes(r.db.free), r.db.free_share * 100.0),
            ),
        ]);
        if let Some(endpoint) = &r.db.endpoint {
            facts.push(("db figures from", plain(endpoint)));
        }
        facts
    }
}

impl Render for SummaryView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["USAGE", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.facts()
            .into_iter()
            .map(|(what, value)| vec![what.to_string(), value])
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.facts()
            .into_iter()
            .map(|(what, value)| format!("{what}: {value}"))
            .collect()
    }
}

/// One grouping's largest groups.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct GroupView<'a>(pub &'a GroupTable);

impl Render for GroupView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        let by = match self.0.by.as_str() {
            "resource" => "RESOURCE",
            "namespace" => "NAMESPACE",
            _ => "PREFIX",
        };
        vec![by, "KEYS", "LIVE", "HISTORY REVS", "HISTORY", "LEASED KEYS"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .groups
            .iter()
            .map(|g| {
                vec![
                    plain(&g.group),
                    g.keys.to_string(),
                    bytes(g.live_bytes),
                    g.history_revisions
                        .map(|n| n.to_string())
                        .unwrap_or_else(|| "?".into()),
                    g.history_bytes.map(bytes).unwrap_or_else(|| "?".into()),
                    g.leased_keys.to_string(),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.0
            .groups
            .iter()
            .map(|g| {
                format!(
                    "{} {}, {} keys, {} live bytes, {} history bytes",
                    self.0.by,
                    plain(&g.group),
                    g.keys,
                    g.live_bytes,
                    g.history_bytes
                        .map(|b| b.to_string())
                        .unwrap_or_else(|| "?".into())
                )
            })
            .collect()
    }
}

/// The largest keys.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct KeysView<'a>(pub &'a [KeyUsage]);

impl Render for KeysView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "LARGEST KEY",
            "BYTES",
            "VALUE BYTES",
            "MOD REVISION",
            "LEASE",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .iter()
            .map(|k| {
                vec![
                    plain(&k.key),
                    bytes(k.bytes),
                    k.value_bytes.to_string(),
                    k.mod_revision.to_string(),
                    k.lease.clone().unwrap_or_default(),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|k| format!("{}, {} bytes", plain(&k.key), k.bytes))
            .collect()
    }
}
