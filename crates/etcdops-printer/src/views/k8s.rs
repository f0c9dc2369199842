//! How `k8s` results are printed.

use crate::output::{Render, plain};
use etcdops::kubernetes::{
    DecodedValue, EncryptionConfigResult, EncryptionReport, NewKey, Storage,
};

fn storage_cell(storage: &Storage) -> String {
    match storage {
        Storage::Encrypted { provider, key_name } => format!("{provider} key {}", plain(key_name)),
        Storage::Plaintext { format } => {
            format!(
                "PLAINTEXT ({})",
                serde_json::to_string(format)
                    .unwrap_or_default()
                    .trim_matches('"')
            )
        }
    }
}

/// `k8s encryption status`: how each resource is stored (plain, which provider and key).
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct ReportView<'a>(pub &'a EncryptionReport);

impl Render for ReportView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["RESOURCE", "STORED AS", "OBJECTS"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for resource in &self.0.resources {
            for count in &resource.storage {
                rows.push(vec![
                    resource.resource.clone(),
                    storage_cell(&count.storage),
                    count.count.to_string(),
                ]);
            }
            if resource.storage.is_empty() {
                rows.push(vec![resource.resource.clone(), "(none)".into(), "0".into()]);
            }
        }
        rows.push(vec![
            "TOTAL".into(),
            format!(
                "{} encrypted, {} plaintext ({} {}, revision {})",
                self.0.encrypted,
                self.0.plaintext,
                if self.0.offline { "snapshot" } else { "live" },
                self.0.prefix,
                self.0.revision
            ),
            self.0.total.to_string(),
        ]);
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .rows()
            .into_iter()
            .map(|r| format!("{}, {}, {}", r[0], r[1], r[2]))
            .collect();
        lines.push(if self.0.all_encrypted {
            "all encrypted".into()
        } else {
            "NOT all encrypted".into()
        });
        lines
    }
}

/// `k8s encryption status --objects`: every object and how it is stored.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct ObjectsView<'a>(pub &'a EncryptionReport);

impl Render for ObjectsView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["RESOURCE", "NAMESPACE", "NAME", "STORED AS"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .objects
            .iter()
            .map(|o| {
                vec![
                    plain(&o.resource),
                    plain(o.namespace.as_deref().unwrap_or_default()),
                    plain(&o.name),
                    storage_cell(&o.storage),
                ]
            })
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows()
            .into_iter()
            .map(|r| {
                let at = if r[1].is_empty() {
                    r[2].clone()
                } else {
                    format!("{}/{}", r[1], r[2])
                };
                format!("{} {at}: {}", r[0], r[3])
            })
            .collect()
    }
}

/// `k8s encryption-config`: the step written (or planned) to the EncryptionConfiguration.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct ConfigView<'a>(pub &'a EncryptionConfigResult);

impl Render for ConfigView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["FIELD", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let r = self.0;
        let changed = match (r.changed, r.check_mode) {
            (false, _) => "no",
            (true, true) => "yes (check mode: not written)",
            (true, false) => "yes (written, mode 0600)",
        };
        vec![
            vec!["file".into(), r.path.clone()],
            vec!["step".into(), r.step.as_str().into()],
            vec!["changed".into(), changed.into()],
            vec![
                format!("{} keys before", r.provider),
                r.keys_before.join(", "),
            ],
            vec![
                format!("{} keys after", r.provider),
                r.keys_after.join(", "),
            ],
            vec!["file before".into(), r.diff.before.trim_end().to_string()],
            vec!["file after".into(), r.diff.after.trim_end().to_string()],
        ]
    }

    fn simple_lines(&self) -> Vec<String> {
        let r = self.0;
        let mut lines = vec![format!(
            "{} {}: {}",
            r.step.as_str(),
            r.path,
            if r.changed { "changed" } else { "unchanged" }
        )];
        lines.extend(r.diff.before.lines().map(|l| format!("- {l}")));
        lines.extend(r.diff.after.lines().map(|l| format!("+ {l}")));
        lines.push(format!("next: {}", r.next));
        lines
    }
}

/// `k8s new-key` without `--output`: the new key's name, provider and secret, for an
/// EncryptionConfiguration; shown once, so the caller says where to keep it.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct KeyView<'a>(pub &'a NewKey);

impl Render for KeyView<'_> {
    fn headers(&self) -> Vec<&'static str> {
        vec!["NAME", "PROVIDER", "SECRET"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            self.0.name.clone(),
            self.0.provider.to_string(),
            self.0.secret.clone(),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![format!("{} {}", self.0.name, self.0.secret)]
    }
}

/// `k8s new-key --output FILE`: where the new key was written.
#[derive(serde::Serialize)]
pub struct KeyWritten {
    /// The key's name.
    pub name: String,
    /// The file that holds it (0600).
    pub file: String,
}

impl Render for KeyWritten {
    fn headers(&self) -> Vec<&'static str> {
        vec!["NAME", "WRITTEN TO"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![self.name.clone(), self.file.clone()]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![format!("{} {}", self.name, self.file)]
    }
}

/// A decoded value as text, one field a line (`k8s get`).
pub fn text_block(value: &DecodedValue) -> String {
    let mut out = format!("{}\n", plain(&value.key));
    let field = |name: &str, v: &Option<String>| {
        v.as_ref()
            .map(|v| format!("  {name}: {}\n", plain(v)))
            .unwrap_or_default()
    };
    out.push_str(&format!("  stored as: {}\n", storage_cell(&value.storage)));
    out.push_str(&format!("  value size: {}\n", value.value_size));
    out.push_str(&field("apiVersion", &value.api_version));
    out.push_str(&field("kind", &value.kind));
    out.push_str(&field("namespace", &value.namespace));
    out.push_str(&field("name", &value.name));
    out.push_str(&field("uid", &value.uid));
    out.push_str(&field("created", &value.creation_timestamp));
    if let Some(size) = value.object_size {
        out.push_str(&format!("  object size: {size}\n"));
    }
    out.push_str(&field("note", &value.note));
    if let Some(object) = &value.object {
        let pretty = serde_json::to_string_pretty(object).unwrap_or_default();
        for line in pretty.lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
