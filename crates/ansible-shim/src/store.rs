//! The store settings shared by the snapshot modules (as `etcdops`' store flags), and the age
//! identities that decrypt encrypted backups: the workflow layer's own settings, flattened
//! into each module's options.

/// Identity options of a task (its `Debug` never shows `identity_content`).
pub type IdentityArgs = etcdops::snapshot::IdentitySettings;

/// Store options of a task.
pub type StoreArgs = etcdops::snapshot::StoreSettings;
