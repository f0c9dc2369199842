//! Flags of `etcdops k8s ...`.

use super::*;

/// `etcdops k8s ...`
#[derive(Debug, Subcommand)]
pub enum K8sCommand {
    /// Prove encryption at rest from etcd: scans <prefix>/<resource>/ live (paged) or inside a
    /// snapshot (offline, no etcd started) and reports, per provider and key name, how many
    /// objects are encrypted, and which are plaintext (namespace/name, never data).
    ///
    /// Exit code 1 with --require-encrypted when anything is plaintext; 2 when nothing was
    /// scanned (zero objects is never a pass).
    EncryptionStatus(EncryptionStatusArgs),
    /// kube-apiserver's EncryptionConfiguration: generate it, or rotate its keys one step at a
    /// time (add-key, promote, drop-old). Written with mode 0600; the same file goes to every
    /// control-plane host.
    #[command(subcommand)]
    EncryptionConfig(EncryptionConfigCommand),
    /// Encryption keys: made once per cluster, then given to every host's config step.
    #[command(subcommand)]
    EncryptionKey(EncryptionKeyCommand),
    /// Decode stored Kubernetes values: JSON pretty-printed (Secret data redacted), protobuf
    /// to apiVersion, kind, namespace, name and size, encrypted values reported as such.
    Get(K8sGetArgs),
}

/// Arguments of `k8s encryption-status`.
#[derive(Debug, Args)]
pub struct EncryptionStatusArgs {
    /// Resources to scan, comma-separated plural names
    #[arg(
        long = "resource",
        alias = "resources",
        value_delimiter = ',',
        default_value = "secrets",
        value_name = "RESOURCES"
    )]
    pub resources: Vec<String>,
    /// Scan this snapshot offline instead of the cluster: a local file (plain or zstd) or a
    /// backup URL STORE/OBJECT
    #[arg(long, value_name = "FILE|URL")]
    pub snapshot: Option<String>,
    /// kube-apiserver's --etcd-prefix [default: found: /registry, or /kubernetes.io on OpenShift]
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// Exit with code 1 when any object is plaintext
    #[arg(long)]
    pub require_encrypted: bool,
    /// List every object, not only the plaintext ones
    #[arg(long)]
    pub all: bool,
    /// List at most N objects (0: no limit); the totals count every object
    #[arg(long, default_value_t = etcdops::kubernetes::DEFAULT_MAX_OBJECTS, value_name = "N")]
    pub max_objects: usize,
    /// Read the snapshot even when etcd's SHA-256 trailer does not match its db
    #[arg(long)]
    pub skip_hash_check: bool,
    /// Identities for an encrypted backup
    #[command(flatten)]
    pub identity: IdentityFlags,
    /// Store settings (for a backup URL)
    #[command(flatten)]
    pub store_flags: StoreFlags,
}

/// `k8s encryption-config ...`
#[derive(Debug, Subcommand)]
pub enum EncryptionConfigCommand {
    /// Write a new EncryptionConfiguration with one key (then identity, so plaintext written
    /// before stays readable). The same key on every host: give the same --key-file.
    Generate(EncryptionConfigArgs),
    /// One step of Kubernetes' key rotation, in order, each rolled out to every host (and
    /// every kube-apiserver restarted) before the next: add-key (the new key second), promote
    /// (the new key first), drop-old (after every object was rewritten). A step out of order
    /// is refused; a step already done changes nothing.
    Rotate(RotateArgs),
}

/// A provider whose keys etcdops manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    /// AES-CBC, PKCS#7 padding
    Aescbc,
    /// AES-GCM (rotate keys every 200,000 writes)
    Aesgcm,
    /// XSalsa20-Poly1305
    Secretbox,
}

/// Arguments of `k8s encryption-config generate` (and, flattened, `rotate`).
#[derive(Debug, Args)]
pub struct EncryptionConfigArgs {
    /// The EncryptionConfiguration file (kube-apiserver's --encryption-provider-config)
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The provider
    #[arg(long, value_enum, default_value = "aescbc")]
    pub provider: ProviderArg,
    /// Resources of the entry, comma-separated
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "secrets",
        value_name = "RESOURCES"
    )]
    pub resources: Vec<String>,
    /// The key: a JSON file from `encryption-key new --out`, or a file holding the base64 key
    /// (then --key-name names it); `-` reads standard input
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// The key's name (promote and drop-old need only this)
    #[arg(long, value_name = "NAME")]
    pub key_name: Option<String>,
    /// Check mode: show what would change (key names only), write nothing
    #[arg(long)]
    pub check: bool,
    /// generate: replace a file that holds other keys (what they encrypted becomes unreadable)
    #[arg(long)]
    pub force: bool,
    /// generate: identity first, the key second (first rollout to several apiservers: all
    /// can read encrypted data before any writes it); then `rotate --step promote`
    #[arg(long)]
    pub identity_first: bool,
}

/// A key-rotation step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RotateStepArg {
    /// Add the new key second: every apiserver can read it, none writes with it yet
    AddKey,
    /// Make the new key first: apiservers write with it
    Promote,
    /// Drop every other key (after every object was rewritten with the new key)
    DropOld,
}

/// Arguments of `k8s encryption-config rotate`.
#[derive(Debug, Args)]
pub struct RotateArgs {
    /// The step
    #[arg(long, value_enum)]
    pub step: RotateStepArg,
    /// File, provider, key
    #[command(flatten)]
    pub config: EncryptionConfigArgs,
}

/// `k8s encryption-key ...`
#[derive(Debug, Subcommand)]
pub enum EncryptionKeyCommand {
    /// Make a key: 32 bytes from the OS CSPRNG, base64, printed once (or written to --out with
    /// mode 0600). Keep it in a vault; every control-plane host needs the same key.
    New(NewKeyArgs),
}

/// Arguments of `k8s encryption-key new`.
#[derive(Debug, Args)]
pub struct NewKeyArgs {
    /// The key's name [default: key-<UTC time>]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The provider it is for
    #[arg(long, value_enum, default_value = "aescbc")]
    pub provider: ProviderArg,
    /// Write the key as JSON to this new file (mode 0600) instead of printing it
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Arguments of `k8s get`.
#[derive(Debug, Args)]
pub struct K8sGetArgs {
    /// The key, or the start of the keys with --prefix
    #[arg(id = "key_name", value_name = "KEY")]
    pub key: String,
    /// Every key starting with KEY
    #[arg(long)]
    pub prefix: bool,
    /// Read at this revision (0: latest)
    #[arg(long, default_value_t = 0)]
    pub rev: i64,
    /// At most N keys (0: all)
    #[arg(long, default_value_t = 0)]
    pub limit: i64,
}

#[cfg(test)]
mod k8s_flag_tests {
    use super::*;

    #[test]
    fn k8s_commands_parse() {
        let cli = Cli::try_parse_from([
            "etcdops",
            "k8s",
            "encryption-status",
            "--resource",
            "secrets,configmaps",
            "--snapshot",
            "/b/x.db.zst",
            "--require-encrypted",
        ])
        .unwrap();
        let Command::K8s(K8sCommand::EncryptionStatus(args)) = cli.command else {
            panic!("not encryption-status");
        };
        assert_eq!(args.resources, ["secrets", "configmaps"]);
        assert!(args.require_encrypted);
        assert_eq!(args.max_objects, etcdops::kubernetes::DEFAULT_MAX_OBJECTS);

        let cli = Cli::try_parse_from([
            "etcdops",
            "k8s",
            "encryption-config",
            "rotate",
            "--step",
            "drop-old",
            "--config",
            "/etc/k/enc.yaml",
            "--key-name",
            "k2",
            "--check",
        ])
        .unwrap();
        let Command::K8s(K8sCommand::EncryptionConfig(EncryptionConfigCommand::Rotate(args))) =
            cli.command
        else {
            panic!("not rotate");
        };
        assert_eq!(args.step, RotateStepArg::DropOld);
        assert!(args.config.check);
        assert_eq!(args.config.provider, ProviderArg::Aescbc);
        assert!(
            Cli::try_parse_from([
                "etcdops",
                "k8s",
                "encryption-config",
                "rotate",
                "--config",
                "x"
            ])
            .is_err(),
            "--step is required"
        );
        assert!(Cli::try_parse_from(["etcdops", "k8s", "get", "/registry/", "--prefix"]).is_ok());
    }
}
