//! The output format and whose conventions it follows, chosen once from the command line.

/// Output format of every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum OutputFormat {
    /// A human-readable table.
    #[default]
    Table,
    /// One JSON document on stdout, with the documented snake_case schema (etcdctl's own
    /// JSON with `--compat etcdctl`).
    Json,
    /// Lines as etcdctl's `-w simple` prints them.
    Simple,
    /// etcdctl's `-w fields`: one `"Name" : value` line per field.
    Fields,
    /// etcdctl's `-w protobuf`: the response message, encoded.
    Protobuf,
    /// etcdctl's JSON: `-w json` under `--compat etcdctl` (not a `-w` value of its own).
    #[cfg_attr(feature = "clap", value(skip))]
    EtcdctlJson,
    /// etcdctl's JSON with IDs as hex strings: `-w json --hex` under `--compat etcdctl`.
    #[cfg_attr(feature = "clap", value(skip))]
    EtcdctlJsonHex,
    /// etcdctl's table (its columns and borders): `-w table` under `--compat etcdctl`.
    #[cfg_attr(feature = "clap", value(skip))]
    EtcdctlTable,
}

impl OutputFormat {
    /// Whether the output is JSON of either schema (no progress bars, no notes on stdout).
    pub fn is_json(self) -> bool {
        matches!(
            self,
            OutputFormat::Json | OutputFormat::EtcdctlJson | OutputFormat::EtcdctlJsonHex
        )
    }

    /// Whether the output is etcdctl's JSON.
    pub fn is_etcdctl_json(self) -> bool {
        matches!(
            self,
            OutputFormat::EtcdctlJson | OutputFormat::EtcdctlJsonHex
        )
    }
}

/// `--compat`: whose conventions the output and exit codes follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Compat {
    /// etcdops' own: `table` by default, the documented JSON schema, exit code 2 for errors.
    #[default]
    Etcdops,
    /// etcdctl's: `simple` by default, etcdctl's JSON (header, camelCase names, base64 keys
    /// and values, numeric IDs), exit code 1 for every failure. The default when the binary
    /// is called `etcdctl` (a symlink).
    Etcdctl,
}
