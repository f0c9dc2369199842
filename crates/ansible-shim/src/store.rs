//! Store options shared by the snapshot modules (as `etcdops`' store flags), and the age
//! identities that decrypt encrypted backups.

use std::path::PathBuf;

use etcd_snapshot::Identities;
use etcd_store::{Store, StoreOptions};
use serde::Deserialize;

use crate::outcome::ModuleError;
use crate::spec::{Kind, OptionSpec, opt, secret};

/// The options that decrypt an encrypted backup: an identity file on the target, or the
/// identity itself (a secret: masked in `invocation`, scrubbed from every result).
pub const IDENTITY_OPTIONS: &[OptionSpec] = &[
    opt("identity_file", Kind::Str),
    secret("identity_content", Kind::Str),
];

/// Identity options of a task. Its `Debug` never shows `identity_content`.
#[derive(Default, Deserialize)]
pub struct IdentityArgs {
    identity_file: Option<PathBuf>,
    identity_content: Option<String>,
}

impl std::fmt::Debug for IdentityArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityArgs")
            .field("identity_file", &self.identity_file)
            .field(
                "identity_content",
                &self.identity_content.as_ref().map(|_| crate::secrets::MASK),
            )
            .finish()
    }
}

impl IdentityArgs {
    /// The identities given (none when neither option is), and a warning for an identity
    /// file others can read.
    pub fn identities(&self) -> Result<(Identities, Vec<String>), ModuleError> {
        let mut identities = Identities::none();
        let mut warnings = Vec::new();
        if let Some(path) = &self.identity_file {
            warnings.extend(identities.add_file(path)?);
        }
        if let Some(text) = &self.identity_content {
            identities.add_text(text, "option 'identity_content'")?;
        }
        Ok((identities, warnings))
    }
}

/// The options that tune how a store URL is reached; credentials come from the environment.
pub const STORE_OPTIONS: &[OptionSpec] = &[
    opt("s3_endpoint", Kind::Str),
    opt("s3_region", Kind::Str),
    opt("s3_path_style", Kind::Bool),
    opt("allow_http", Kind::Bool),
    opt("azure_emulator", Kind::Bool),
    opt("store_endpoint", Kind::Str),
    opt("part_size", Kind::Int),
];

/// Store options of a task.
#[derive(Debug, Default, Deserialize)]
pub struct StoreArgs {
    s3_endpoint: Option<String>,
    s3_region: Option<String>,
    #[serde(default)]
    s3_path_style: bool,
    #[serde(default)]
    allow_http: bool,
    #[serde(default)]
    azure_emulator: bool,
    store_endpoint: Option<String>,
    part_size: Option<usize>,
}

impl StoreArgs {
    /// Opens `url` with these options over the environment's.
    pub fn open(&self, url: &str) -> Result<Store, ModuleError> {
        Ok(Store::open(url, &self.options())?)
    }

    /// These options over the environment's.
    pub fn options(&self) -> StoreOptions {
        let mut options = StoreOptions::from_env();
        if let Some(endpoint) = &self.s3_endpoint {
            options.s3_endpoint = Some(endpoint.clone());
        }
        if let Some(region) = &self.s3_region {
            options.s3_region = Some(region.clone());
        }
        options.s3_path_style |= self.s3_path_style;
        options.allow_http |= self.allow_http;
        options.azure_use_emulator |= self.azure_emulator;
        if let Some(endpoint) = &self.store_endpoint {
            options.endpoint_override = Some(endpoint.clone());
        }
        if let Some(size) = self.part_size {
            options.part_size = size;
        }
        options
    }
}
