//! Command-line flags: etcdctl's global flags and environment variables, and our commands.
//!
//! Every connection flag falls back to the `ETCDCTL_*` variable etcdctl reads; the fallback
//! itself lives in `etcd_core::ConnectionOptions::or_env` so that every front-end agrees.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use etcd_core::{ConnectionOptions, Secret};

mod access;
mod cluster;
mod k8s;
mod kv;
mod platform;
mod snapshot;

pub use access::*;
pub use cluster::*;
pub use k8s::*;
pub use kv::*;
pub use platform::*;
pub use snapshot::*;

/// Safe etcd operations: health, status and membership today; backup and restore next.
#[derive(Debug, Parser)]
#[command(name = "etcdops", version, about, max_term_width = 100)]
pub struct Cli {
    /// Connection and output flags, accepted before or after the command.
    #[command(flatten)]
    pub global: GlobalFlags,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Output format of every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// A human-readable table.
    #[default]
    Table,
    /// One JSON document on stdout, with the documented snake_case schema.
    Json,
    /// Lines in the style of etcdctl's `-w simple`.
    Simple,
}

fn duration(text: &str) -> Result<Duration, String> {
    etcd_core::parse_duration(text)
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
    /// Output format
    #[arg(long, short = 'w', global = true, value_enum, default_value_t)]
    pub write_out: OutputFormat,
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
            dial_timeout: self.dial_timeout,
            command_timeout: self.command_timeout,
            discovery_srv: self.discovery_srv.clone(),
            discovery_srv_name: self.discovery_srv_name.clone(),
            insecure_discovery: self.insecure_discovery,
            dns_server: self.dns_server.clone(),
            ..Default::default()
        }
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check endpoints: health, status, KV hashes.
    #[command(subcommand)]
    Endpoint(EndpointCommand),
    /// Cluster membership.
    #[command(subcommand)]
    Member(MemberCommand),
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
    /// Compact the key history up to a revision, or keep the last N revisions.
    Compact(CompactArgs),
    /// Versions of etcdops and of every member.
    Version,
    /// Read keys (read-only; paged, Kubernetes Secrets redacted unless --show-secrets).
    Get(GetArgs),
    /// Every retained version of a key, newest first, down to the compacted revision.
    History(HistoryArgs),
    /// Past and live events from a revision until --until-rev or --timeout.
    Watch(WatchArgs),
    /// One report: quorum, leader, unhealthy members, alarms, KV hash agreement, db size
    /// against quota, fragmentation, version skew, learners. Exit code 0 healthy, 1 warnings,
    /// 2 critical.
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
    /// Certificates for a standalone cluster: a small CA, and member certificates (server and
    /// client use, DNS and IP SANs); valid files are kept, keys written 0600 and never printed.
    #[command(subcommand)]
    Pki(crate::commands::pki::PkiCommand),
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
        assert_eq!(after.global.write_out, OutputFormat::Json);
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
            Command::Endpoint(EndpointCommand::Hashkv(args)) => {
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
    fn write_out_rejects_unknown_formats() {
        assert!(Cli::try_parse_from(["etcdops", "-w", "yaml", "member", "list"]).is_err());
        assert_eq!(
            parse(&["-w", "simple", "member", "list"]).global.write_out,
            OutputFormat::Simple
        );
    }
}
