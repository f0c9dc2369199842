//! How `pki` results are printed.

use crate::output::Render;
use etcdops::pki::CertificateResult;
use serde::Serialize;

/// What was kept or written.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct CertView(pub CertificateResult);

impl Render for CertView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["CERTIFICATE", "KEY", "CHANGED", "REASON", "SANS"]
    }

    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            self.0.cert_path.clone(),
            self.0.key_path.clone(),
            self.0.changed.to_string(),
            self.0.reason.clone(),
            self.0.sans.join(","),
        ]]
    }

    fn simple_lines(&self) -> Vec<String> {
        vec![format!("{}: {}", self.0.cert_path, self.0.reason)]
    }
}
