//! Store options shared by the snapshot modules (as `etcdops`' store flags), and the age
//! identities that decrypt encrypted backups. Their values deserialize straight into the
//! workflow layer's settings.

use crate::spec::{Kind, OptionSpec, opt, secret};

/// The options that decrypt an encrypted backup: an identity file on the target, or the
/// identity itself (a secret: masked in `invocation`, scrubbed from every result).
pub const IDENTITY_OPTIONS: &[OptionSpec] = &[
    opt("identity_file", Kind::Path),
    secret("identity_content", Kind::Str),
];

/// Identity options of a task (its `Debug` never shows `identity_content`).
pub type IdentityArgs = etcdops::snapshot::IdentitySettings;

/// The options that tune how a store URL is reached; credentials come from the environment.
pub const STORE_OPTIONS: &[OptionSpec] = &[
    opt("s3_endpoint", Kind::Str),
    opt("s3_region", Kind::Str),
    opt("s3_path_style", Kind::Bool).default_bool(false),
    opt("allow_http", Kind::Bool).default_bool(false),
    opt("azure_emulator", Kind::Bool).default_bool(false),
    opt("store_endpoint", Kind::Str),
    opt("part_size", Kind::Int),
    opt("store_ca_bundle", Kind::Path),
];

/// Store options of a task.
pub type StoreArgs = etcdops::snapshot::StoreSettings;
