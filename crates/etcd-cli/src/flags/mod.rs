//! Command-line flags: etcdctl's global flags and environment variables, and our commands.
//!
//! Every connection flag falls back to the `ETCDCTL_*` variable etcdctl reads; the fallback
//! itself lives in `etcdops::client::ConnectionOptions::or_env` so that every front-end agrees.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, CommandFactory, Parser, Subcommand, ValueEnum};
use etcdops::client::{ConnectionOptions, Secret};

mod access;
mod cluster;
mod data_dir;
mod downgrade;
mod k8s;
mod kv;
mod object_lock;
mod platform;
mod quorum;
mod snapshot;
mod usage;

pub use access::*;
pub use cluster::*;
pub use data_dir::*;
pub use downgrade::*;
pub use k8s::*;
pub use kv::*;
pub use object_lock::*;
pub use platform::*;
pub use quorum::*;
pub use snapshot::*;
pub use usage::*;

// The output format and the personality are the printer's; clap reads them as flags.
pub use etcdops_printer::{Compat, OutputFormat};

/// Safe etcd operations: health, status and membership today; backup and restore next.
#[derive(Debug, Parser)]
#[command(
    name = "etcdops",
    version,
    about,
    max_term_width = 100,
    args_override_self = true
)]
pub struct Cli {
    /// Connection and output flags, accepted before or after the command.
    #[command(flatten)]
    pub global: GlobalFlags,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The command line with etcdctl's `--flag=true` and `--flag=false` forms of the switches
/// clap takes bare (`--prefix`, `--cluster`): `=true` becomes the bare switch, `=false` drops
/// it. Only the switches of the command the line names count; arguments after `--` (a
/// `watch -- COMMAND`) are left alone.
pub fn with_bool_forms(args: Vec<OsString>) -> Vec<OsString> {
    let switches = switches_of(&Cli::command(), &args);
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for arg in args {
        if rest || arg == "--" {
            rest = true;
            out.push(arg);
            continue;
        }
        let text = arg.to_string_lossy();
        let form = text
            .strip_prefix("--")
            .and_then(|flag| flag.split_once('='))
            .filter(|(name, _)| switches.contains(*name));
        match form.map(|(name, value)| (name, value.to_ascii_lowercase())) {
            Some((name, value)) if value == "true" || value == "1" => {
                out.push(OsString::from(format!("--{name}")));
            }
            Some((_, value)) if value == "false" || value == "0" => {}
            _ => out.push(arg),
        }
    }
    out
}

/// The long names of the bare switches of the command `args` name (`etcdops get ...`: the
/// root's and `get`'s).
fn switches_of(root: &clap::Command, args: &[OsString]) -> BTreeSet<String> {
    let mut switches = BTreeSet::new();
    let mut command = root;
    add_switches(command, &mut switches);
    for arg in args.iter().skip(1) {
        let word = arg.to_string_lossy();
        if word == "--" {
            break;
        }
        if let Some(sub) = command.find_subcommand(word.as_ref()) {
            command = sub;
            add_switches(command, &mut switches);
        }
    }
    switches
}

fn add_switches(command: &clap::Command, switches: &mut BTreeSet<String>) {
    for arg in command.get_arguments() {
        if let Some(long) = arg.get_long()
            && matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
        {
            switches.insert(long.to_string());
        }
    }
}

/// Whether `argv0` (the path the binary was called by) names `etcdctl`, as a symlink does.
fn is_called_etcdctl(argv0: &std::ffi::OsStr) -> bool {
    std::path::Path::new(argv0)
        .file_name()
        .is_some_and(|name| name == "etcdctl")
}

/// The compat mode of a command line clap could not parse (for the exit code of the usage
/// error): `--compat etcdctl`, `ETCDOPS_COMPAT=etcdctl`, or a binary called `etcdctl`.
pub fn compat_of_raw(args: &[OsString]) -> Compat {
    let given = args.windows(2).find_map(|pair| {
        let (flag, next) = (pair[0].to_string_lossy(), pair[1].to_string_lossy());
        match flag.strip_prefix("--compat") {
            Some("") => Some(next.into_owned()),
            Some(rest) => rest.strip_prefix('=').map(str::to_string),
            None => None,
        }
    });
    let given = given.or_else(|| std::env::var("ETCDOPS_COMPAT").ok());
    let called_as_etcdctl = args.first().is_some_and(|a| is_called_etcdctl(a));
    match given.as_deref() {
        Some("etcdctl") => Compat::Etcdctl,
        Some(_) => Compat::Etcdops,
        None if called_as_etcdctl => Compat::Etcdctl,
        None => Compat::Etcdops,
    }
}

fn duration(text: &str) -> Result<Duration, String> {
    etcdops::client::parse_duration(text)
}

/// Flags shared by every command, named as etcdctl names them.
#[derive(Debug, Args, Default)]
pub struct GlobalFlags {
    /// gRPC endpoints, comma-separated [env: ETCDCTL_ENDPOINTS] [default: 127.0.0.1:2379]
    #[arg(long, global = true, value_delimiter = ',', value_name = "URLS")]
    pub endpoints: Option<Vec<String>>,
    /// Verify servers' certificates with this CA bundle [env: ETCDCTL_CACERT]
    #[arg(long, global = true, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Client certificate, for servers that require one [env: ETCDCTL_CERT]
    #[arg(long, global = true, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// Key of the client certificate [env: ETCDCTL_KEY]
    #[arg(long, global = true, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Accept any server certificate: encrypted but not authenticated; avoid
    /// [env: ETCDCTL_INSECURE_SKIP_TLS_VERIFY]
    #[arg(long, global = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_name = "BOOL")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// Verify the server certificate against this name instead of the endpoint's host
    #[arg(long, global = true, value_name = "NAME")]
    pub server_name: Option<String>,
    /// User name, or USER:PASSWORD [env: ETCDCTL_USER]
    #[arg(long, global = true, value_name = "USER")]
    pub user: Option<String>,
    /// Password of --user [env: ETCDCTL_PASSWORD]
    #[arg(long, global = true, value_name = "PASSWORD")]
    pub password: Option<String>,
    /// A JWT etcd issued (its --auth-token jwt), sent with every request instead of --user,
    /// as etcdctl 3.7's flag [env: ETCDCTL_AUTH_JWT_TOKEN]
    #[arg(long, global = true, value_name = "TOKEN", conflicts_with = "user")]
    pub auth_jwt_token: Option<String>,
    /// Time allowed to connect to one endpoint, e.g. 2s [env: ETCDCTL_DIAL_TIMEOUT] [default: 2s]
    #[arg(long, global = true, value_parser = duration, value_name = "DURATION")]
    pub dial_timeout: Option<Duration>,
    /// Time allowed for one request, e.g. 5s [env: ETCDCTL_COMMAND_TIMEOUT] [default: 5s]
    #[arg(long, global = true, value_parser = duration, value_name = "DURATION")]
    pub command_timeout: Option<Duration>,
    /// Find endpoints in the DNS SRV records of this domain [env: ETCDCTL_DISCOVERY_SRV]
    #[arg(long, short = 'd', global = true, value_name = "DOMAIN")]
    pub discovery_srv: Option<String>,
    /// Service name suffix of the SRV records [env: ETCDCTL_DISCOVERY_SRV_NAME]
    #[arg(long, global = true, value_name = "NAME")]
    pub discovery_srv_name: Option<String>,
    /// Accept plain-http _etcd-client SRV records [env: ETCDCTL_INSECURE_DISCOVERY] [default: true]
    #[arg(long, global = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_name = "BOOL")]
    pub insecure_discovery: Option<bool>,
    /// DNS server (IP or IP:PORT) for SRV discovery instead of the system resolver
    /// [env: ETCDOPS_DNS_SERVER]
    #[arg(long, global = true, value_name = "ADDR")]
    pub dns_server: Option<String>,
    /// Output format [env: ETCDCTL_WRITE_OUT] [default: table; simple with --compat etcdctl]
    #[arg(
        long,
        short = 'w',
        global = true,
        value_enum,
        env = "ETCDCTL_WRITE_OUT",
        hide_env = true,
        value_name = "FORMAT"
    )]
    pub write_out: Option<OutputFormat>,
    /// Whose output and exit codes: etcdops' own, or etcdctl's for scripts written against
    /// etcdctl (its JSON, `simple` by default, exit code 1) [env: ETCDOPS_COMPAT]
    /// [default: etcdops; etcdctl when called as `etcdctl`]
    #[arg(
        long,
        global = true,
        value_enum,
        env = "ETCDOPS_COMPAT",
        hide_env = true,
        value_name = "MODE"
    )]
    pub compat: Option<Compat>,
    /// IDs as hex strings in etcdctl's JSON (`--compat etcdctl -w json`), as etcdctl's
    /// --hex [env: ETCDCTL_HEX]
    #[arg(long, global = true, env = "ETCDCTL_HEX", hide_env = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    pub hex: Option<bool>,
    /// Accepted for etcdctl's scripts; etcdops has no gRPC debug log [env: ETCDCTL_DEBUG]
    #[arg(long, global = true, env = "ETCDCTL_DEBUG", hide_env = true, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    pub debug: Option<bool>,
    /// Accepted for etcdctl's scripts: etcdops picks plain or TLS transport from the
    /// endpoint's scheme and the TLS flags [env: ETCDCTL_INSECURE_TRANSPORT]
    #[arg(long, global = true, env = "ETCDCTL_INSECURE_TRANSPORT", hide_env = true,
          num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_name = "BOOL")]
    pub insecure_transport: Option<bool>,
    /// Interval of HTTP/2 keepalive pings, e.g. 30s [env: ETCDCTL_KEEPALIVE_TIME]
    /// [default: 30s]
    #[arg(long, global = true, env = "ETCDCTL_KEEPALIVE_TIME", hide_env = true,
          value_parser = duration, value_name = "DURATION")]
    pub keepalive_time: Option<Duration>,
    /// Time a keepalive ping may go unanswered before the connection is closed, e.g. 10s
    /// [env: ETCDCTL_KEEPALIVE_TIMEOUT] [default: 10s]
    #[arg(long, global = true, env = "ETCDCTL_KEEPALIVE_TIMEOUT", hide_env = true,
          value_parser = duration, value_name = "DURATION")]
    pub keepalive_timeout: Option<Duration>,
    /// Accepted for etcdctl's scripts: etcdops pages its reads, so no response needs a
    /// bigger limit [env: ETCDCTL_MAX_RECV_BYTES]
    #[arg(
        long,
        global = true,
        env = "ETCDCTL_MAX_RECV_BYTES",
        hide_env = true,
        value_name = "BYTES"
    )]
    pub max_recv_bytes: Option<u64>,
    /// Accepted for etcdctl's scripts: etcdops sends no write requests
    /// [env: ETCDCTL_MAX_REQUEST_BYTES]
    #[arg(
        long,
        global = true,
        env = "ETCDCTL_MAX_REQUEST_BYTES",
        hide_env = true,
        value_name = "BYTES"
    )]
    pub max_request_bytes: Option<u64>,
    /// auto: fill unset --endpoints, --cacert, --cert and --key from the etcd found on this
    /// host (kubeadm or OpenShift static pod, or a package's config); flags and ETCDCTL_*
    /// variables still win
    #[arg(long, global = true, value_enum, value_name = "MODE")]
    pub platform: Option<PlatformMode>,
    /// Directory standing for `/` when looking for etcd's manifests and configuration
    /// (`--platform auto`, the OpenShift guard, `platform detect`) [env: ETCDOPS_PLATFORM_ROOT]
    /// [default: /]
    #[arg(long, global = true, env = "ETCDOPS_PLATFORM_ROOT", value_name = "DIR")]
    pub platform_root: Option<PathBuf>,
}

/// `--platform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlatformMode {
    /// Detect the platform and fill unset connection flags from it.
    Auto,
}

impl GlobalFlags {
    /// The conventions in force: `--compat`, else etcdctl's when the binary is called
    /// `etcdctl`, else etcdops' own.
    pub fn compat(&self) -> Compat {
        self.compat.unwrap_or_else(|| {
            let called_as = std::env::args_os().next().unwrap_or_default();
            if is_called_etcdctl(&called_as) {
                Compat::Etcdctl
            } else {
                Compat::Etcdops
            }
        })
    }

    /// The printer every command prints through: the format in force (`-w` or
    /// `ETCDCTL_WRITE_OUT`, else the compat mode's default; `json` under `--compat etcdctl` is
    /// etcdctl's JSON) and the personality.
    pub fn printer(&self) -> etcdops_printer::Printer {
        etcdops_printer::Printer::new(self.write_out, self.compat(), self.hex == Some(true))
    }

    /// The connection options as given on the command line (environment not yet applied).
    pub fn connection_options(&self) -> ConnectionOptions {
        ConnectionOptions {
            endpoints: self.endpoints.clone(),
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            server_name: self.server_name.clone(),
            user: self.user.clone(),
            password: self.password.as_deref().map(Secret::new),
            auth_jwt_token: self.auth_jwt_token.as_deref().map(Secret::new),
            dial_timeout: self.dial_timeout,
            command_timeout: self.command_timeout,
            discovery_srv: self.discovery_srv.clone(),
            discovery_srv_name: self.discovery_srv_name.clone(),
            insecure_discovery: self.insecure_discovery,
            dns_server: self.dns_server.clone(),
            keepalive_time: self.keepalive_time,
            keepalive_timeout: self.keepalive_timeout,
            ..Default::default()
        }
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check endpoints: health, status, KV hashes.
    Endpoint(EndpointArgs),
    /// Cluster membership.
    #[command(subcommand)]
    Member(MemberCommand),
    /// A member's data dir, offline: inspect its WAL, snap file and db.
    #[command(subcommand)]
    DataDir(DataDirCommand),
    /// Snapshot backups: save, list, verify, delete, prune.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
    /// Continuous backups: `backup run` takes full backups on schedule and streams every
    /// change in between into delta segments, for restores to any revision or time.
    #[command(subcommand)]
    Backup(BackupCommand),
    /// Move leadership to another member (ID, name or peer URL).
    MoveLeader(MoveLeaderArgs),
    /// Cluster alarms (NOSPACE, CORRUPT).
    #[command(subcommand)]
    Alarm(AlarmCommand),
    /// Defragment members one at a time: followers first, the leader last, checking health
    /// after each and stopping at the first failure. Exit code 1 when it stopped early.
    Defrag(DefragArgs),
    /// Offline, as etcdutl 3.6's `hashkv`: etcd's KV hash of a snapshot or a stopped member's
    /// db at a revision, the hash `endpoint hashkv` gives for that member at that revision.
    Hashkv(OfflineHashKvArgs),
    /// What fills the db, per key prefix and, for Kubernetes, per resource and namespace:
    /// keys, live bytes, bytes of old revisions (what a compaction frees), largest keys,
    /// leases, free pages (what a defrag gives back). Live (paged), or offline from
    /// --snapshot or a stopped member's --data-dir (history visible).
    Usage(UsageArgs),
    /// Compact the key history up to a revision, or keep the last N revisions.
    #[command(visible_alias = "compaction")]
    Compact(CompactArgs),
    /// The version of etcdops and its etcd API (without a cluster, as etcdctl); in table and
    /// JSON also every member's that answers.
    Version,
    /// Read keys (read-only; paged, Kubernetes Secrets redacted unless --show-secrets).
    Get(GetArgs),
    /// Every retained version of a key, newest first, down to the compacted revision.
    History(HistoryArgs),
    /// Past and live events (from --rev), until Ctrl-C, --until-rev or --timeout; `-- COMMAND`
    /// runs a command per event with etcdctl's ETCD_WATCH_* variables.
    Watch(WatchArgs),
    /// One report: quorum, leader, unhealthy members, alarms, KV hash agreement, db size
    /// against quota, fragmentation, version skew, learners, raft progress, certificates
    /// (client, served, on this host's disk), disk latency and churn from /metrics; with
    /// --store the newest backup's age and soundness, with --data-dir (or a detected member)
    /// free disk space. Exit code 0 healthy, 1 warnings, 2 critical.
    Check(CheckArgs),
    /// Leases, read-only: list them with TTLs and key counts, or one lease's TTL and keys.
    #[command(subcommand)]
    Lease(LeaseCommand),
    /// Authentication: status, enable (guarded: refuses on a Kubernetes cluster unless
    /// --force), disable.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// etcd users: list, get, add, delete, passwd, grant-role, revoke-role (idempotent).
    #[command(subcommand)]
    User(UserCommand),
    /// etcd roles and their key permissions (idempotent).
    #[command(subcommand)]
    Role(RoleCommand),
    /// Kubernetes: encryption-at-rest audit (live or from a snapshot), EncryptionConfiguration
    /// generate and key rotation, new keys, decoding of stored values.
    #[command(subcommand)]
    K8s(K8sCommand),
    /// This host's etcd: detect the platform (kubeadm, OpenShift, standalone), stop or start a
    /// static etcd pod by parking its manifest.
    #[command(subcommand)]
    Platform(PlatformCommand),
    /// etcdctl's writes (`put`, `del`, `txn`, `lock`, `elect`, `make-mirror`): refused with
    /// a clear message, so that a script that writes fails loudly rather than on a usage error.
    #[command(name = "put", aliases = ["del", "txn", "lock", "elect", "make-mirror"], hide = true)]
    Write(WriteArgs),
    /// Certificates for a standalone cluster: a small CA, and member certificates (server and
    /// client use, DNS and IP SANs); valid files are kept, keys written 0600 and never printed.
    #[command(subcommand)]
    Pki(crate::commands::pki::PkiCommand),
    /// etcd 3.6's cluster downgrade, as etcdctl 3.6: validate a target version, enable the
    /// downgrade (guarded: only with a verified backup newer than --max-backup-age, or
    /// --force), cancel it.
    #[command(subcommand)]
    Downgrade(DowngradeCommand),
    /// Recovery from quorum loss through etcd's own WAL replay: plan it (the cluster asked
    /// first, then the survivor chosen from each member's data-dir inspection) and verify the
    /// survivor's force-new-cluster start.
    #[command(subcommand)]
    Quorum(QuorumCommand),
    /// Shell completion script for bash, zsh or fish on stdout.
    Completion(CompletionArgs),
    /// The manual page (roff) on stdout, or a page per command with --out-dir.
    Man(ManArgs),
}

/// Whatever etcdctl's write commands were given.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// Ignored.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub rest: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn platform_flags_parse_and_force_reaches_defrag_and_update() {
        let cli = parse(&[
            "--platform",
            "auto",
            "--platform-root=/tmp/x",
            "defrag",
            "--force",
        ]);
        assert_eq!(cli.global.platform, Some(PlatformMode::Auto));
        assert_eq!(cli.global.platform_root, Some(PathBuf::from("/tmp/x")));
        let Command::Defrag(args) = cli.command else {
            panic!("not defrag")
        };
        assert!(args.force && !args.cluster.cluster);
        let cli = parse(&[
            "member",
            "update",
            "m1",
            "--peer-urls=http://a:2380",
            "--force",
        ]);
        let Command::Member(MemberCommand::Update(args)) = cli.command else {
            panic!("not member update")
        };
        assert!(args.force);
        let cli = parse(&["platform", "detect", "--root", "/r"]);
        let Command::Platform(PlatformCommand::Detect(args)) = cli.command else {
            panic!("not platform detect")
        };
        assert_eq!(args.root, Some(PathBuf::from("/r")));
        assert!(Cli::try_parse_from(["etcdops", "--platform", "maybe", "member", "list"]).is_err());
    }

    #[test]
    fn global_flags_work_before_and_after_the_command() {
        let before = parse(&["--endpoints", "a:1,b:2", "endpoint", "health"]);
        let after = parse(&["endpoint", "health", "--endpoints=a:1,b:2", "-w", "json"]);
        assert_eq!(before.global.endpoints, after.global.endpoints);
        assert_eq!(
            before.global.endpoints.unwrap(),
            vec!["a:1".to_string(), "b:2".to_string()]
        );
        assert_eq!(after.global.write_out, Some(OutputFormat::Json));
    }

    #[test]
    fn insecure_skip_tls_verify_takes_an_optional_bool() {
        let bare = parse(&["--insecure-skip-tls-verify", "member", "list"]);
        assert_eq!(bare.global.insecure_skip_tls_verify, Some(true));
        let off = parse(&["--insecure-skip-tls-verify=false", "member", "list"]);
        assert_eq!(off.global.insecure_skip_tls_verify, Some(false));
        let unset = parse(&["member", "list"]);
        assert_eq!(unset.global.insecure_skip_tls_verify, None);
    }

    #[test]
    fn timeouts_take_go_durations() {
        let cli = parse(&[
            "--dial-timeout",
            "500ms",
            "--command-timeout=1m",
            "member",
            "list",
        ]);
        assert_eq!(cli.global.dial_timeout, Some(Duration::from_millis(500)));
        assert_eq!(cli.global.command_timeout, Some(Duration::from_secs(60)));
        assert!(
            Cli::try_parse_from(["etcdops", "--dial-timeout", "soon", "member", "list"]).is_err()
        );
    }

    #[test]
    fn flag_wins_over_environment() {
        let cli = parse(&[
            "--endpoints",
            "http://flag:1",
            "--user",
            "flaguser:pw",
            "member",
            "list",
        ]);
        let config = cli
            .global
            .connection_options()
            .or_env_from(|name| match name {
                "ETCDCTL_ENDPOINTS" => Some("http://env:2".into()),
                "ETCDCTL_USER" => Some("envuser:pw".into()),
                "ETCDCTL_COMMAND_TIMEOUT" => Some("9s".into()),
                _ => None,
            })
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(config.endpoints, vec!["http://flag:1"]);
        assert_eq!(config.auth.unwrap().user, "flaguser");
        assert_eq!(config.command_timeout, Duration::from_secs(9));
    }

    #[test]
    fn discovery_has_etcdctl_short_flag_and_hashkv_takes_rev() {
        let cli = parse(&[
            "-d",
            "example.com",
            "endpoint",
            "hashkv",
            "--rev",
            "42",
            "--cluster",
        ]);
        assert_eq!(cli.global.discovery_srv.as_deref(), Some("example.com"));
        match cli.command {
            Command::Endpoint(EndpointArgs {
                command: EndpointCommand::Hashkv(args),
                ..
            }) => {
                assert_eq!(args.rev, 42);
                assert!(args.cluster);
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_command_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let get = parse(&["get", "/a", "--key", "/k.pem", "--prefix"]);
        let Command::Get(args) = get.command else {
            panic!("not get")
        };
        assert_eq!(args.key, "/a");
        assert_eq!(get.global.key, Some(PathBuf::from("/k.pem")));
    }

    #[test]
    fn switches_take_etcdctls_bool_forms() {
        let os = |args: &[&str]| args.iter().map(OsString::from).collect::<Vec<_>>();
        let args = with_bool_forms(os(&[
            "etcdops",
            "get",
            "/a",
            "--prefix=true",
            "--keys-only=false",
            "--insecure-skip-tls-verify=false",
            "--",
            "--prefix=true",
        ]));
        assert_eq!(
            args,
            os(&[
                "etcdops",
                "get",
                "/a",
                "--prefix",
                "--insecure-skip-tls-verify=false",
                "--",
                "--prefix=true",
            ])
        );
        let cli = Cli::try_parse_from(with_bool_forms(os(&[
            "etcdops",
            "get",
            "/a",
            "--prefix=TRUE",
            "--keys-only=false",
        ])))
        .unwrap();
        let Command::Get(get) = cli.command else {
            panic!("not get")
        };
        assert!(get.prefix && !get.keys_only);
    }

    #[test]
    fn a_repeated_flag_takes_its_last_value_as_etcdctl() {
        let cli = parse(&[
            "--user", "a:1", "member", "list", "--user", "b:2", "-w", "json", "-w", "simple",
        ]);
        assert_eq!(cli.global.user.as_deref(), Some("b:2"));
        assert_eq!(cli.global.write_out, Some(OutputFormat::Simple));
    }

    #[test]
    fn etcdctls_writes_parse_to_the_refusal_and_compaction_is_compact() {
        for args in [
            &["put", "/a", "b"][..],
            &["del", "/a", "--prefix"],
            &["txn", "-i"],
            &["lock", "name", "--", "cmd"],
        ] {
            assert!(matches!(parse(args).command, Command::Write(_)), "{args:?}");
        }
        for args in [
            &["lease", "grant", "60"][..],
            &["lease", "revoke", "694d77aa9e38260f"],
            &["lease", "keep-alive", "--once", "694d77aa9e38260f"],
        ] {
            assert!(
                matches!(parse(args).command, Command::Lease(LeaseCommand::Write(_))),
                "{args:?}"
            );
        }
        assert!(matches!(
            parse(&["compaction", "5", "--physical"]).command,
            Command::Compact(CompactArgs {
                revision: Some(5),
                physical: true,
                ..
            })
        ));
    }

    #[test]
    fn compat_decides_the_default_format_and_json_schema() {
        let ours = parse(&["member", "list"]);
        assert_eq!(ours.global.printer().format(), OutputFormat::Table);
        let theirs = parse(&["--compat", "etcdctl", "member", "list"]);
        assert_eq!(theirs.global.printer().format(), OutputFormat::Simple);
        let json = parse(&["member", "list", "--compat=etcdctl", "-w", "json"]);
        assert_eq!(json.global.printer().format(), OutputFormat::EtcdctlJson);
        let hex = parse(&["member", "list", "--compat=etcdctl", "-w", "json", "--hex"]);
        assert_eq!(hex.global.printer().format(), OutputFormat::EtcdctlJsonHex);
        assert_eq!(
            parse(&["-w", "json", "member", "list"])
                .global
                .printer()
                .format(),
            OutputFormat::Json
        );
        assert!(Cli::try_parse_from(["etcdops", "-w", "etcdctl-json", "member", "list"]).is_err());
    }

    #[test]
    fn write_out_rejects_unknown_formats() {
        assert!(Cli::try_parse_from(["etcdops", "-w", "yaml", "member", "list"]).is_err());
        assert_eq!(
            parse(&["-w", "simple", "member", "list"]).global.write_out,
            Some(OutputFormat::Simple)
        );
    }
}
