//! Flags of `lease`, `auth`, `user` and `role`.

use super::*;

/// `etcdops lease ...` (no revoke: revoking a lease deletes its keys).
#[derive(Debug, Subcommand)]
pub enum LeaseCommand {
    /// Every lease: ID (hex, as etcdctl prints it), granted TTL, remaining TTL, keys attached.
    List,
    /// One lease's granted and remaining TTL; with --keys, the keys attached. Exit code 1
    /// when the lease does not exist (expired or revoked); 0 under --compat etcdctl, as
    /// etcdctl, which says the lease "already expired".
    Timetolive(LeaseTimeToLiveArgs),
    /// etcdctl's lease writes (`grant`, `revoke`, `keep-alive`): refused with the one line
    /// of every write, before any connection, rather than as an unknown command.
    #[command(name = "grant", aliases = ["revoke", "keep-alive"], hide = true)]
    Write(crate::flags::WriteArgs),
}

/// Arguments of `lease timetolive`.
#[derive(Debug, Args)]
pub struct LeaseTimeToLiveArgs {
    /// The lease ID in hex, as `lease list` prints it
    #[arg(value_name = "ID")]
    pub id: etcdops::lease::LeaseId,
    /// Also list the keys attached to the lease
    #[arg(long)]
    pub keys: bool,
}

/// `etcdops auth ...`
#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Whether authentication is enabled, and whether the root user is ready for it.
    Status,
    /// Enable authentication. Refuses without a root user holding the root role, and on a
    /// cluster holding Kubernetes data (keys under /registry/ or /kubernetes.io/) unless
    /// --force: kube-apiserver's certificate user needs a role first.
    Enable(AuthEnableArgs),
    /// Disable authentication (needs the root role: --user root).
    Disable(ForceFlag),
}

/// Arguments of `auth enable`.
#[derive(Debug, Args)]
pub struct AuthEnableArgs {
    /// Enable even though the cluster holds Kubernetes data (after giving kube-apiserver's
    /// certificate user a role with readwrite on its prefix), or OpenShift's operator owns it
    #[arg(long)]
    pub force: bool,
}

/// `--force` of the access changes other than `auth enable`.
#[derive(Debug, Args)]
pub struct ForceFlag {
    /// Change it even where OpenShift's cluster-etcd-operator owns etcd (with a warning)
    #[arg(long)]
    pub force: bool,
}

/// A user or role to add or delete.
#[derive(Debug, Args)]
pub struct NameChangeArgs {
    /// The name
    pub name: String,
    /// Past the guards
    #[command(flatten)]
    pub force: ForceFlag,
}

/// `etcdops user ...`
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// List users.
    List,
    /// Show a user and its roles (with --detail, each role's permissions too).
    Get(UserGetArgs),
    /// Add a user (an existing one is left unchanged). The password comes from
    /// --password-file, --password-env or a prompt on a terminal, never the command line
    /// (the global --password is the password of --user, the connection).
    Add(UserAddArgs),
    /// Delete a user (one that does not exist is not an error).
    Delete(NameChangeArgs),
    /// Change a user's password (from --password-file, --password-env or a prompt).
    Passwd(UserPasswdArgs),
    /// Grant a role to a user.
    GrantRole(UserRoleArgs),
    /// Revoke a role from a user.
    RevokeRole(UserRoleArgs),
}

/// A user or role name.
#[derive(Debug, Args)]
pub struct NameArg {
    /// The name
    pub name: String,
}

/// Arguments of `user get`.
#[derive(Debug, Args)]
pub struct UserGetArgs {
    /// The user name
    pub name: String,
    /// Show each of the user's roles with its permissions, as `role get` does
    #[arg(long)]
    pub detail: bool,
}

/// `--interactive[=true|false]` as etcdctl has it: true unless `=false` is given.
#[derive(Debug, Args)]
pub struct InteractiveFlag {
    /// false: read the password from standard input (its first word), as etcdctl's
    /// --interactive=false does, instead of prompting on the terminal
    #[arg(
        long,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_value_t = true,
        default_missing_value = "true",
        action = ArgAction::Set
    )]
    pub interactive: bool,
}

/// Where a new password comes from: never the command line.
#[derive(Debug, Args)]
pub struct PasswordFlags {
    /// Read the new password from this file (one trailing newline is dropped)
    #[arg(long, value_name = "FILE", conflicts_with = "password_env")]
    pub password_file: Option<PathBuf>,
    /// Read the new password from this environment variable (give its name)
    #[arg(long, value_name = "VARIABLE")]
    pub password_env: Option<String>,
}

impl PasswordFlags {
    /// Whether a file or a variable was given.
    pub fn given(&self) -> bool {
        self.password_file.is_some() || self.password_env.is_some()
    }
}

/// Arguments of `user add`.
#[derive(Debug, Args)]
pub struct UserAddArgs {
    /// The user name
    pub name: String,
    /// Where the password comes from
    #[command(flatten)]
    pub password: PasswordFlags,
    /// No password: the user authenticates with a client certificate whose CN is its name
    #[arg(long, conflicts_with_all = ["password_file", "password_env"])]
    pub no_password: bool,
    /// The password itself, as etcdctl takes it (seen by ps and shell history: prefer
    /// --password-file or --password-env); so is NAME:PASSWORD
    #[arg(
        long,
        value_name = "PASSWORD",
        value_parser = secret,
        conflicts_with_all = ["password_file", "password_env", "no_password"]
    )]
    pub new_user_password: Option<etcdops::client::Secret>,
    /// Prompting or standard input
    #[command(flatten)]
    pub interactive: InteractiveFlag,
    /// Past the guards
    #[command(flatten)]
    pub force: ForceFlag,
}

/// A password given on the command line, kept out of `Debug`.
fn secret(text: &str) -> Result<etcdops::client::Secret, String> {
    Ok(etcdops::client::Secret::new(text))
}

/// Arguments of `user passwd`.
#[derive(Debug, Args)]
pub struct UserPasswdArgs {
    /// The user name
    pub name: String,
    /// Where the password comes from
    #[command(flatten)]
    pub password: PasswordFlags,
    /// Prompting or standard input
    #[command(flatten)]
    pub interactive: InteractiveFlag,
    /// Past the guards
    #[command(flatten)]
    pub force: ForceFlag,
}

/// Arguments of `user grant-role` and `user revoke-role`.
#[derive(Debug, Args)]
pub struct UserRoleArgs {
    /// The user name
    pub name: String,
    /// The role
    pub role: String,
    /// Past the guards
    #[command(flatten)]
    pub force: ForceFlag,
}

/// `etcdops role ...`
#[derive(Debug, Subcommand)]
pub enum RoleCommand {
    /// List roles.
    List,
    /// Show a role and its permissions.
    Get(NameArg),
    /// Add a role (an existing one is left unchanged).
    Add(NameChangeArgs),
    /// Delete a role (one that does not exist is not an error).
    Delete(NameChangeArgs),
    /// Grant a role read, write or readwrite on a key, a range [KEY, RANGE_END), a prefix or
    /// every key from KEY on.
    GrantPermission(GrantPermissionArgs),
    /// Revoke a role's permission on exactly this key, range, prefix or from-key range.
    RevokePermission(KeyRangeArgs),
}

/// Kind of permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PermissionArg {
    /// Read
    Read,
    /// Write
    Write,
    /// Read and write
    Readwrite,
}

/// Arguments of `role grant-permission`.
#[derive(Debug, Args)]
pub struct GrantPermissionArgs {
    /// The role
    pub role: String,
    /// read, write or readwrite
    #[arg(value_enum)]
    pub permission: PermissionArg,
    /// The key, or the start of the range ("" with --prefix: every key)
    #[arg(id = "permission_key", value_name = "KEY")]
    pub key: String,
    /// End of the range (exclusive)
    pub range_end: Option<String>,
    /// Every key starting with KEY
    #[arg(long, conflicts_with = "range_end")]
    pub prefix: bool,
    /// Every key from KEY on ("" with --from-key: every key)
    #[arg(long, conflicts_with_all = ["range_end", "prefix"])]
    pub from_key: bool,
    /// Past the guards
    #[command(flatten)]
    pub force: ForceFlag,
}

/// Arguments of `role revoke-permission`.
#[derive(Debug, Args)]
pub struct KeyRangeArgs {
    /// The role
    pub role: String,
    /// The key, or the start of the range
    #[arg(id = "permission_key", value_name = "KEY")]
    pub key: String,
    /// End of the range (exclusive)
    pub range_end: Option<String>,
    /// Every key starting with KEY
    #[arg(long, conflicts_with = "range_end")]
    pub prefix: bool,
    /// Every key from KEY on ("" with --from-key: every key)
    #[arg(long, conflicts_with_all = ["range_end", "prefix"])]
    pub from_key: bool,
    /// Past the guards
    #[command(flatten)]
    pub force: ForceFlag,
}
