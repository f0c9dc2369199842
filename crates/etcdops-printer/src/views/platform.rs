//! How `platform` results are printed.

use crate::output::Render;
use etcdops::kubernetes::{PlatformInfo, PodState, StaticPodResult};
use std::path::PathBuf;

/// A static pod's state in one word (`running`, `stopped`).
pub fn state_word(state: PodState) -> &'static str {
    match state {
        PodState::Stopped => "stop",
        PodState::Started => "start",
    }
}

/// `platform detect`: which etcd runs on this host and where its files are.
pub struct DetectView(pub PlatformInfo);

impl serde::Serialize for DetectView {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl DetectView {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let i = &self.0;
        let mut pairs = vec![
            ("platform", i.platform.to_string()),
            ("name", i.name.clone().unwrap_or_default()),
            ("endpoints", i.endpoints.join(",")),
            ("peer_urls", i.peer_urls.join(",")),
            ("data_dir", path(&i.data_dir)),
            ("cacert", path(&i.cacert)),
            ("cert", path(&i.cert)),
            ("key", path(&i.key)),
            ("version", i.version.clone().unwrap_or_default()),
            (
                "source",
                path(&i.manifest.clone().or_else(|| i.config_file.clone())),
            ),
        ];
        if i.parked {
            pairs.push(("parked", "true".into()));
        }
        for note in &i.notes {
            pairs.push(("note", note.clone()));
        }
        pairs
    }
}

impl Render for DetectView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["SETTING", "VALUE"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        self.pairs()
            .into_iter()
            .map(|(k, v)| vec![k.to_string(), v])
            .collect()
    }

    fn simple_lines(&self) -> Vec<String> {
        self.pairs()
            .into_iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect()
    }
}

/// `platform stop|start`: the static pod's state; the flag says whether nothing was done (`--dry-run`).
pub struct PodView(pub StaticPodResult, pub bool);

impl serde::Serialize for PodView {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl Render for PodView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["RESULT"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![vec![self.0.summary(self.1)]];
        if let Some(backup) = &self.0.backup {
            rows.push(vec![format!(
                "an older parked manifest was kept as {}",
                backup.display()
            )]);
        }
        rows.extend(self.0.notes.iter().map(|n| vec![n.clone()]));
        rows
    }

    fn simple_lines(&self) -> Vec<String> {
        self.rows().into_iter().flatten().collect()
    }
}

fn path(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}
