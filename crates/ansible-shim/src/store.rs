//! Store options shared by the snapshot modules (as `etcdops`' store flags).

use etcd_store::{Store, StoreOptions};
use serde::Deserialize;

use crate::outcome::ModuleError;
use crate::spec::{Kind, OptionSpec, opt};

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
