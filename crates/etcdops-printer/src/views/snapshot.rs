//! How the snapshot commands print their results: a table, `-w simple` lines, or the
//! result's JSON.

use chrono::Utc;
use etcdops::snapshot::{
    AgainstCluster, ConsolidatePreview, ConsolidateResult, Restored, Saved, StatusResult,
};
use etcdops::snapshot::{
    Catalog, ChainReport, ChainSummary, CopyAction, CopyReport, PruneReport, TrailerCheck,
    VerifyReport,
};

use crate::output::{Render, cell, human_bytes, plain};
use crate::{OutputFormat, Printer};

/// `snapshot restore`: the member restored (or, with `--dry-run`, planned).
#[derive(serde::Serialize)]
pub struct RestoreView<'a> {
    /// The library's result.
    #[serde(flatten)]
    pub restored: &'a Restored,
    /// Whether nothing was written (`--dry-run`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

impl Render for RestoreView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "DATA DIR",
            "NAME",
            "MEMBER ID",
            "CLUSTER ID",
            "MEMBERS",
            "REVISION",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.restored.result;
        vec![vec![
            r.data_dir.display().to_string(),
            r.name.clone(),
            r.member_id.clone(),
            r.cluster_id.clone(),
            r.members
                .iter()
                .map(|m| m.name.clone())
                .collect::<Vec<_>>()
                .join(","),
            r.revision.to_string(),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        let r = &self.restored.result;
        let mut lines = Vec::new();
        if let Some(plan) = &self.restored.plan {
            let target = match &r.point_in_time {
                Some(pitr) => match pitr.target_time {
                    Some(at) => format!(
                        "revision {} (every change received by {at})",
                        pitr.target_revision
                    ),
                    None => format!("revision {}", pitr.target_revision),
                },
                None => String::new(),
            };
            lines.push(format!(
                "point in time: full backup {} (revision {}, {}) + {} delta segment(s), to {target}",
                plan.full,
                plan.full_revision,
                plan.full_created_at.format("%Y-%m-%dT%H:%M:%SZ"),
                plan.segments.len()
            ));
            for segment in &plan.segments {
                lines.push(format!("  {segment}"));
            }
        }
        if self.dry_run {
            lines.push(format!(
                "would restore {} as member {} ({}) of cluster {} at revision {}; nothing written (dry run)",
                r.data_dir.display(),
                r.name,
                r.member_id,
                r.cluster_id,
                r.revision
            ));
            return lines;
        }
        if !r.changed {
            lines.push(format!(
                "already restored: {} is member {} ({}) of cluster {} at revision {}; nothing changed",
                r.data_dir.display(),
                r.name,
                r.member_id,
                r.cluster_id,
                r.revision
            ));
            return lines;
        }
        lines.push(format!(
            "restored {} as member {} ({}) of cluster {} at revision {}",
            r.data_dir.display(),
            r.name,
            r.member_id,
            r.cluster_id,
            r.revision
        ));
        if let Some(pitr) = &r.point_in_time {
            lines.push(format!(
                "replayed {} changes; leases recreated: {}; removed: {}; detached: {}",
                pitr.changes_applied,
                pitr.leases_recreated.len(),
                pitr.leases_removed.len(),
                pitr.leases_detached.len()
            ));
        }
        lines
    }
}

/// `snapshot save`: the backup saved, and what retention deleted.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct SaveView<'a>(pub &'a Saved);

impl Render for SaveView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let m = &self.0.result.manifest;
        let mut rows = vec![
            vec![
                "object".into(),
                format!("{}/{}", self.0.result.store, m.object),
            ],
            vec!["manifest".into(), self.0.result.manifest_name.clone()],
            vec!["cluster id".into(), m.cluster_id.to_string()],
            vec![
                "member".into(),
                format!("{} ({}) at {}", m.member_id, m.member_name, m.endpoint),
            ],
            vec!["etcd version".into(), m.etcd_version.clone()],
            vec!["revision".into(), m.revision.to_string()],
            vec!["db size".into(), human_bytes(m.db_size as i64)],
            vec!["stored size".into(), human_bytes(m.object_size as i64)],
            vec!["db sha256".into(), m.db_sha256.clone()],
            vec!["object sha256".into(), m.object_sha256.clone()],
            vec![
                "encrypted to".into(),
                m.encryption
                    .as_ref()
                    .map(|e| format!("{} ({})", e.recipients.join(", "), e.scheme))
                    .unwrap_or_else(|| "not encrypted".into()),
            ],
            vec![
                "verified after upload".into(),
                m.verified_after_upload.to_string(),
            ],
            vec![
                "took".into(),
                format!("{:.1}s", self.0.result.duration_seconds),
            ],
        ];
        if let Some(pair) = &self.0.openshift {
            rows.push(vec![
                "openshift snapshot".into(),
                pair.snapshot.display().to_string(),
            ]);
            rows.push(vec![
                "openshift static resources".into(),
                pair.static_kuberesources.display().to_string(),
            ]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "Snapshot saved at {}/{}",
            self.0.result.store, self.0.result.manifest.object
        )];
        if let Some(pair) = &self.0.openshift {
            lines.push(format!(
                "OpenShift backup written: {} and {}",
                pair.snapshot.display(),
                pair.static_kuberesources.display()
            ));
        }
        lines
    }
}

/// `snapshot copy`: each backup copied, skipped or failed.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct CopyView(pub CopyReport);

impl Render for CopyView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["OBJECT", "STORED", "ACTION"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let action = |action: CopyAction| -> String {
            match action {
                CopyAction::Copied => "copied",
                CopyAction::WouldCopy => "would copy",
                CopyAction::AlreadyPresent => "already there",
            }
            .into()
        };
        let mut rows = Vec::new();
        for e in &self.0.entries {
            rows.push(vec![
                e.object.clone(),
                human_bytes(e.bytes as i64),
                action(e.action),
            ]);
            // Its chain's segments, by sequence, under it.
            for s in self.0.segments.iter().filter(|s| s.base == e.object) {
                rows.push(vec![
                    format!("  {}", s.object),
                    human_bytes(s.bytes as i64),
                    action(s.action),
                ]);
            }
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "{} backup(s) copied from {} to {}, {} already there",
            self.0.copied, self.0.source, self.0.destination, self.0.already_present
        )];
        if !self.0.segments.is_empty() {
            lines.push(format!(
                "{} delta segment(s) copied, {} already there",
                self.0.segments_copied, self.0.segments_already_present
            ));
        }
        lines
    }
}

/// A chain as `snapshot list` shows it under its full backup:
/// `+N deltas to rev X (time), last published <age> ago`, and what breaks it.
pub fn chain_line(chain: &ChainSummary, now: chrono::DateTime<Utc>) -> String {
    let to_time = chain
        .to_time
        .map(|t| format!(" ({})", t.format("%Y-%m-%d %H:%M:%S")))
        .unwrap_or_default();
    let covered = if chain.covered_segments == chain.segments {
        String::new()
    } else {
        format!(", {} continuous", chain.covered_segments)
    };
    let mut line = format!(
        "+{} delta{}{covered} to rev {}{to_time}, last published {} ago",
        chain.segments,
        if chain.segments == 1 { "" } else { "s" },
        chain.to_revision,
        ago(now.signed_duration_since(chain.last_published))
    );
    if let Some(first) = chain.problems.first() {
        line.push_str(&format!("; BROKEN CHAIN: {first}"));
        if chain.problems.len() > 1 {
            line.push_str(&format!(" (+{} more)", chain.problems.len() - 1));
        }
    }
    line
}

/// A duration as `45s`, `12m`, `3h`, `2d`.
pub fn ago(elapsed: chrono::TimeDelta) -> String {
    let secs = elapsed.num_seconds().max(0);
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// `snapshot list`: the backups of each cluster in a store, newest first, with their chains.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct CatalogView(pub Catalog);

impl Render for CatalogView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "CREATED (UTC)",
            "CLUSTER",
            "REVISION",
            "MEMBER",
            "DB SIZE",
            "STORED",
            "COMPLETE",
            "OBJECT",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let now = Utc::now();
        let mut rows = Vec::new();
        for b in &self.0.backups {
            let m = &b.manifest;
            rows.push(vec![
                m.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                m.cluster_id.to_string(),
                m.revision.to_string(),
                m.member_name.clone(),
                human_bytes(m.db_size as i64),
                human_bytes(m.object_size as i64),
                b.complete.to_string(),
                b.object.clone(),
            ]);
            // A compacted backup says what it was made from.
            if let Some(from) = &m.compacted_from {
                rows.push(vec![
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    format!(
                        "compacted from {} + segments 1..={}",
                        from.full_backup, from.last_sequence
                    ),
                ]);
            }
            // A second line for its chain: what it covers, and whether it is broken.
            if let Some(chain) = &b.chain {
                let stored: u64 = b.deltas.iter().map(|d| d.manifest.object_size).sum();
                rows.push(vec![
                    String::new(),
                    String::new(),
                    format!("..{}", chain.to_revision),
                    String::new(),
                    String::new(),
                    human_bytes(stored as i64),
                    if chain.continuous { "true" } else { "BROKEN" }.into(),
                    chain_line(chain, now),
                ]);
            }
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        self.0.backups.iter().map(|b| b.object.clone()).collect()
    }
}

/// `snapshot list --orphans`: objects with no manifest.
#[derive(serde::Serialize)]
pub struct OrphansView(pub Catalog);

impl Render for OrphansView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["LAST MODIFIED", "SIZE", "OBJECT WITHOUT MANIFEST"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        // Objects without a manifest, then temporary files of uploads never completed.
        self.0
            .orphans
            .iter()
            .chain(self.0.unfinished_uploads.iter().map(|u| &u.info))
            .map(|o| {
                vec![
                    o.last_modified.clone(),
                    human_bytes(o.size as i64),
                    o.name.clone(),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().map(|r| r[2].clone()).collect()
    }
}

/// A verified backup and, when it has delta segments, its chain.
#[derive(serde::Serialize)]
pub struct VerifyView {
    /// The library's report.
    #[serde(flatten)]
    pub report: VerifyReport,
    /// Absent for a backup without segments, so its output is as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainReport>,
    /// `--against-cluster`: the backup's KV hash against each member's at its revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against_cluster: Option<AgainstCluster>,
    /// `--restore-drill`: the backup restored and served by etcd.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_drill: Option<etcdops::snapshot::RestoreDrill>,
}

impl Render for VerifyView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.report;
        let mut rows = vec![
            vec!["object".into(), r.object.clone()],
            vec!["result".into(), "OK".into()],
            vec![
                "checked against manifest".into(),
                r.manifest_checked.to_string(),
            ],
            vec!["stored size".into(), r.object_size.to_string()],
            vec!["stored sha256".into(), r.object_sha256.clone()],
            vec!["encrypted (age)".into(), r.encrypted.to_string()],
            vec!["db size".into(), r.db_size.to_string()],
            vec!["db sha256 (= etcd trailer)".into(), r.db_sha256.clone()],
            vec!["bbolt page size".into(), r.bbolt.page_size.to_string()],
            vec!["bbolt txid".into(), r.bbolt.txid.to_string()],
        ];
        if let Some(chain) = &self.chain {
            let checked = chain.segments.iter().filter(|s| s.records_checked).count();
            rows.push(vec![
                "chain".into(),
                if chain.ok {
                    "OK".into()
                } else {
                    format!("BROKEN ({} problem(s))", chain.problems.len())
                },
            ]);
            rows.push(vec![
                "chain segments".into(),
                chain.segments.len().to_string(),
            ]);
            rows.push(vec![
                "chain verified revisions".into(),
                format!("{}..{}", chain.after_revision, chain.to_revision),
            ]);
            // Stored bytes fine but records unread: encrypted, and no --identity.
            let locked = chain
                .segments
                .iter()
                .filter(|s| s.stored_ok && !s.records_checked && s.problem.is_none())
                .count();
            rows.push(vec![
                "chain records checked".into(),
                if locked > 0 {
                    format!(
                        "{checked} of {} ({locked} encrypted: pass --identity to check them)",
                        chain.segments.len()
                    )
                } else {
                    format!("{checked} of {}", chain.segments.len())
                },
            ]);
            for problem in &chain.problems {
                rows.push(vec!["chain problem".into(), problem.clone()]);
            }
        }
        if let Some(against) = &self.against_cluster {
            rows.push(vec!["backup revision".into(), against.revision.to_string()]);
            rows.push(vec![
                "backup kv hash".into(),
                format!(
                    "{} (compacted at {})",
                    against.hash, against.compact_revision
                ),
            ]);
            for member in &against.members {
                let hash = match (member.hash, member.compact_revision) {
                    (Some(hash), Some(compact)) => format!("{hash} (compacted at {compact})"),
                    _ => "-".into(),
                };
                let outcome = match &member.outcome {
                    etcdops::snapshot::MemberOutcome::Match => "MATCH".to_string(),
                    etcdops::snapshot::MemberOutcome::Differs => format!(
                        "DIFFERS (backup: {})",
                        member.backup_hash.map_or("-".into(), |h| h.to_string())
                    ),
                    etcdops::snapshot::MemberOutcome::CannotCompare(why) => {
                        format!("CANNOT COMPARE ({why})")
                    }
                };
                rows.push(vec![member.name(), format!("{hash}: {outcome}")]);
            }
            rows.push(vec!["against cluster".into(), against.message()]);
        }
        if let Some(drill) = &self.restore_drill {
            rows.push(vec![
                "restore drill etcd".into(),
                match &drill.etcd_version {
                    Some(version) => format!("{} ({version})", drill.etcd_binary),
                    None => drill.etcd_binary.clone(),
                },
            ]);
            rows.push(vec!["restore drill".into(), drill.message()]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("{}: OK", self.report.object)];
        if let Some(chain) = &self.chain {
            if chain.ok {
                lines.push(format!(
                    "{}: chain of {} delta segment(s) OK to revision {}",
                    self.report.object,
                    chain.segments.len(),
                    chain.to_revision
                ));
            } else {
                lines.push(format!(
                    "{}: chain BROKEN, verified to revision {}",
                    self.report.object, chain.to_revision
                ));
            }
        }
        if let Some(against) = &self.against_cluster {
            lines.push(format!("{}: {}", self.report.object, against.message()));
        }
        if let Some(drill) = &self.restore_drill {
            lines.push(format!("{}: {}", self.report.object, drill.message()));
        }
        lines
    }
}

/// `snapshot status`: a snapshot's hash, revision, keys and size.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct StatusView(pub StatusResult);

impl Render for StatusView {
    fn headers(&self) -> Vec<&'static str> {
        vec![
            "HASH",
            "REVISION",
            "TOTAL KEYS (3.5)",
            "TOTAL SIZE",
            "LIVE KEYS (3.6)",
            "COMPACTED",
            "LEASES",
            "CONSISTENT INDEX",
            "TERM",
            "MEMBERS",
            "AUTH",
            "STORAGE VERSION",
            "TRAILER",
        ]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let s = &self.0.status;
        let members = s
            .members
            .iter()
            .map(|m| {
                if m.name.is_empty() {
                    m.id.clone()
                } else {
                    m.name.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(",");
        let trailer = match s.trailer {
            TrailerCheck::Verified => "sha256 ok",
            TrailerCheck::Absent => "none (raw db)",
            TrailerCheck::MismatchIgnored => "MISMATCH (ignored)",
            TrailerCheck::NotChecked => "not checked",
        };
        vec![vec![
            format!("{:x}", s.hash),
            s.revision.to_string(),
            s.total_key.to_string(),
            human_bytes(s.total_size as i64),
            s.live_keys.to_string(),
            cell(&s.compact_revision),
            s.leases.to_string(),
            cell(&s.consistent_index),
            cell(&s.term),
            members,
            if s.auth_enabled {
                "enabled"
            } else {
                "disabled"
            }
            .to_string(),
            cell(&s.storage_version),
            trailer.to_string(),
        ]]
    }

    /// etcdutl's `-w simple`: `hash, revision, total keys, total size`, and the storage
    /// version for a 3.6 snapshot (whose total keys are then its live keys, as 3.6 counts).
    fn simple_lines(&self) -> Vec<String> {
        vec![super::snapshot_etcdutl::status_simple(&self.0.status)]
    }

    /// etcdutl's table: its simple columns, in the borders of the release that wrote the
    /// snapshot (its storage version).
    fn etcdctl_table(&self) -> Option<crate::etcdctl_table::EtcdctlTable> {
        use crate::etcdctl_table::{Borders, EtcdctlTable};
        let status = &self.0.status;
        let cells = super::snapshot_etcdutl::status_columns(status);
        let mut headers = vec!["HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE"];
        let version = super::snapshot_etcdutl::storage_version(status);
        if version.is_some() {
            headers.push("VERSION");
        }
        Some(EtcdctlTable {
            headers,
            rows: vec![cells],
            borders: Borders::of_release(version.as_deref()),
        })
    }

    /// etcdctl's and etcdutl's fields: hash, revision, keys, size.
    fn etcdctl_fields(&self) -> Option<Vec<String>> {
        let json = super::snapshot_etcdutl::status_json(&self.0.status);
        Some(
            [
                ("Hash", "hash"),
                ("Revision", "revision"),
                ("Keys", "totalKey"),
                ("Size", "totalSize"),
            ]
            .iter()
            .map(|(name, field)| crate::fields::line(name, &json[*field]))
            .collect(),
        )
    }

    /// etcdutl's `-w json` (3.5's fields; 3.6's `version` and key count for a 3.6 snapshot).
    fn etcdctl_json(&self, _hex: bool) -> Option<serde_json::Value> {
        Some(super::snapshot_etcdutl::status_json(&self.0.status))
    }
}

/// What `snapshot keygen` made: where the identity is, and its public key (never the identity).
#[derive(serde::Serialize)]
pub struct KeygenView {
    /// The identity file written (0600).
    pub identity_file: String,
    /// Its public key, to encrypt to.
    pub recipient: String,
}

impl Render for KeygenView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["IDENTITY FILE", "RECIPIENT"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![self.identity_file.clone(), self.recipient.clone()]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![self.recipient.clone()]
    }
}

/// `snapshot delete`: the objects deleted.
#[derive(serde::Serialize)]
pub struct DeletedView(pub Vec<String>);

impl Render for DeletedView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["DELETED"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0.iter().map(|n| vec![n.clone()]).collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.0.iter().map(|n| format!("deleted {n}")).collect()
    }
}

/// `snapshot prune`: the backups kept and deleted, and why.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct PruneView(pub PruneReport);

impl Render for PruneView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["ACTION", "CREATED (UTC)", "OBJECT", "KEPT BY"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let delete = if self.0.dry_run {
            "would delete"
        } else {
            "deleted"
        };
        let mut rows: Vec<Vec<String>> = Vec::new();
        for entry in &self.0.kept {
            // Kept only by its Object Lock: the rules would delete it.
            let held = self.0.held.iter().any(|h| h.object == entry.object);
            rows.push(vec![
                if held { "held" } else { "keep" }.into(),
                entry.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                entry.object.clone(),
                entry.kept_by.join("; "),
            ]);
        }
        for entry in &self.0.deleted {
            rows.push(vec![
                delete.into(),
                entry.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                entry.object.clone(),
                if entry.deltas > 0 {
                    format!("with its {} delta segment(s)", entry.deltas)
                } else {
                    String::new()
                },
            ]);
        }
        for segment in &self.0.dangling_deleted {
            rows.push(vec![
                format!("{delete} (delta without its full backup)"),
                String::new(),
                segment.clone(),
                String::new(),
            ]);
        }
        for orphan in &self.0.orphans_deleted {
            rows.push(vec![
                format!("{delete} (orphan)"),
                String::new(),
                orphan.clone(),
                String::new(),
            ]);
        }
        for unfinished in &self.0.unfinished_deleted {
            rows.push(vec![
                format!("{delete} (unfinished upload)"),
                String::new(),
                unfinished.clone(),
                String::new(),
            ]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows()
            .into_iter()
            .filter(|r| r[0] != "keep")
            .map(|r| format!("{} {}", r[0], r[2]))
            .collect()
    }
}

/// `snapshot compact`: the chain consolidated into one full backup.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct CompactView(pub ConsolidateResult);

impl Render for CompactView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = &self.0;
        if let Some(busy) = &r.busy {
            // Nothing was compacted by this run: no backup of its own to show.
            return vec![
                vec!["result".into(), "not compacted (busy)".into()],
                vec!["chain".into(), r.source.clone()],
                vec!["segments".into(), r.segments.to_string()],
                vec!["why".into(), busy.clone()],
            ];
        }
        let m = &r.manifest;
        let mut rows = vec![
            vec![
                "result".into(),
                if r.changed {
                    "compacted".into()
                } else {
                    "already compacted".into()
                },
            ],
            vec!["chain".into(), r.source.clone()],
            vec!["segments".into(), r.segments.to_string()],
            vec!["object".into(), m.object.clone()],
            vec!["revision".into(), m.revision.to_string()],
            vec![
                "created (UTC)".into(),
                m.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            ],
            vec!["db size".into(), m.db_size.to_string()],
            vec!["stored size".into(), m.object_size.to_string()],
            vec!["encrypted (age)".into(), m.encryption.is_some().to_string()],
        ];
        if r.changed {
            rows.push(vec![
                "changes applied".into(),
                r.changes_applied.to_string(),
            ]);
            rows.push(vec!["verified".into(), r.verify.is_some().to_string()]);
        }
        if !r.leases_recreated.is_empty() {
            rows.push(vec![
                "leases recreated".into(),
                r.leases_recreated.join(", "),
            ]);
        }
        if !r.leases_removed.is_empty() {
            rows.push(vec!["leases removed".into(), r.leases_removed.join(", ")]);
        }
        if !r.leases_detached.is_empty() {
            rows.push(vec!["leases detached".into(), r.leases_detached.join(", ")]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let r = &self.0;
        if let Some(busy) = &r.busy {
            return vec![format!(
                "did not compact the chain of {} ({} segments): {busy}",
                r.source, r.segments
            )];
        }
        let verb = if r.changed {
            "compacted"
        } else {
            "already compacted"
        };
        vec![format!(
            "{verb} the chain of {} ({} segments) into {} at revision {}",
            r.source, r.segments, r.manifest.object, r.manifest.revision
        )]
    }
}

/// `snapshot compact --dry-run`: what a compaction of the chain would do.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct CompactPreviewView(pub ConsolidatePreview);

impl Render for CompactPreviewView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let p = &self.0;
        let mut rows = vec![
            vec![
                "result".into(),
                if p.changed {
                    "would compact".into()
                } else {
                    "already compacted".into()
                },
            ],
            vec!["chain".into(), p.source.clone()],
            vec!["chain revision".into(), p.source_revision.to_string()],
            vec!["segments".into(), p.segments.to_string()],
            vec!["to revision".into(), p.to_revision.to_string()],
            vec![
                "to time (UTC)".into(),
                p.to_time.format("%Y-%m-%d %H:%M:%S").to_string(),
            ],
        ];
        if let Some(done) = &p.compacted {
            rows.push(vec!["compacted by".into(), done.clone()]);
        }
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let p = &self.0;
        vec![match &p.compacted {
            Some(done) => format!(
                "the chain of {} is already compacted up to revision {} ({done})",
                p.source, p.to_revision
            ),
            None => format!(
                "would compact the chain of {} ({} segments) into one full backup at revision {} (dry run: nothing written)",
                p.source, p.segments, p.to_revision
            ),
        }]
    }
}

/// Prints a restore: etcdutl (and etcdctl) print nothing on stdout for one, only their log on
/// stderr, so under etcdctl's conventions the simple lines go there.
pub fn print_restore(printer: Printer, view: &RestoreView<'_>) -> std::io::Result<()> {
    if printer.format() == OutputFormat::Simple && printer.is_etcdctl() {
        for line in view.simple_lines() {
            eprintln!("{}", plain(&line));
        }
        return Ok(());
    }
    printer.print(view)
}
