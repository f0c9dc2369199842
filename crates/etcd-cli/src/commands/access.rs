//! `etcdops lease | auth | user | role`: leases (read-only) and access control.

use std::io::IsTerminal;

use anyhow::Result;
use etcd_core::{
    AuthChange, AuthStatus, ClusterConfig, KeyRange, LeaseList, LeaseTimeToLive, PasswordSource,
    PermissionGrant, PermissionKind, RoleInfo, RoleList, Secret, UserInfo, UserList, auth_disable,
    auth_enable, auth_status, lease_list, lease_time_to_live, role_add, role_delete, role_get,
    role_grant_permission, role_list, role_revoke_permission, user_add, user_delete, user_get,
    user_grant_role, user_list, user_passwd, user_revoke_role,
};

use super::ExitStatus;
use crate::flags::{
    AuthCommand, LeaseCommand, OutputFormat, PasswordFlags, PermissionArg, RoleCommand, UserCommand,
};
use crate::output::{Render, plain, print};

/// `lease list|timetolive`
pub async fn run_lease(
    config: &ClusterConfig,
    command: &LeaseCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        LeaseCommand::List => print(format, &LeasesView(lease_list(config).await?))?,
        LeaseCommand::Timetolive(args) => {
            let lease = lease_time_to_live(config, args.id, args.keys).await?;
            let found = lease.found;
            print(format, &LeaseView(lease))?;
            if !found {
                return Ok(ExitStatus::Failure);
            }
        }
    }
    Ok(ExitStatus::Success)
}

/// `auth status|enable|disable`
pub async fn run_auth(
    config: &ClusterConfig,
    command: &AuthCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        AuthCommand::Status => print(format, &AuthStatusView(auth_status(config).await?))?,
        AuthCommand::Enable(args) => print_change(format, auth_enable(config, args.force).await?)?,
        AuthCommand::Disable => print_change(format, auth_disable(config).await?)?,
    }
    Ok(ExitStatus::Success)
}

/// `user list|get|add|delete|passwd|grant-role|revoke-role`
pub async fn run_user(
    config: &ClusterConfig,
    command: &UserCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        UserCommand::List => print(format, &UsersView(user_list(config).await?))?,
        UserCommand::Get(arg) => print(format, &UserView(user_get(config, &arg.name).await?))?,
        UserCommand::Add(args) => {
            let password = new_password(&args.name, &args.password, args.no_password)?;
            print_change(
                format,
                user_add(config, &args.name, password.as_ref()).await?,
            )?;
        }
        UserCommand::Delete(arg) => print_change(format, user_delete(config, &arg.name).await?)?,
        UserCommand::Passwd(args) => {
            let password = new_password(&args.name, &args.password, false)?
                .ok_or_else(|| anyhow::anyhow!("a password is required"))?;
            print_change(format, user_passwd(config, &args.name, &password).await?)?;
        }
        UserCommand::GrantRole(args) => print_change(
            format,
            user_grant_role(config, &args.name, &args.role).await?,
        )?,
        UserCommand::RevokeRole(args) => print_change(
            format,
            user_revoke_role(config, &args.name, &args.role).await?,
        )?,
    }
    Ok(ExitStatus::Success)
}

/// `role list|get|add|delete|grant-permission|revoke-permission`
pub async fn run_role(
    config: &ClusterConfig,
    command: &RoleCommand,
    format: OutputFormat,
) -> Result<ExitStatus> {
    match command {
        RoleCommand::List => print(format, &RolesView(role_list(config).await?))?,
        RoleCommand::Get(arg) => print(format, &RoleView(role_get(config, &arg.name).await?))?,
        RoleCommand::Add(arg) => print_change(format, role_add(config, &arg.name).await?)?,
        RoleCommand::Delete(arg) => print_change(format, role_delete(config, &arg.name).await?)?,
        RoleCommand::GrantPermission(args) => {
            let grant = PermissionGrant {
                role: args.role.clone(),
                permission: match args.permission {
                    PermissionArg::Read => PermissionKind::Read,
                    PermissionArg::Write => PermissionKind::Write,
                    PermissionArg::Readwrite => PermissionKind::Readwrite,
                },
                keys: KeyRange {
                    key: args.key.clone(),
                    range_end: args.range_end.clone(),
                    prefix: args.prefix,
                },
            };
            print_change(format, role_grant_permission(config, &grant).await?)?;
        }
        RoleCommand::RevokePermission(args) => {
            let keys = KeyRange {
                key: args.key.clone(),
                range_end: args.range_end.clone(),
                prefix: args.prefix,
            };
            print_change(
                format,
                role_revoke_permission(config, &args.role, &keys).await?,
            )?;
        }
    }
    Ok(ExitStatus::Success)
}

/// The new password of `user`, from a file, a variable or a prompt on the terminal; `None`
/// with `--no-password`.
fn new_password(user: &str, flags: &PasswordFlags, no_password: bool) -> Result<Option<Secret>> {
    let source = PasswordSource::choose(
        flags.password_file.clone(),
        flags.password_env.clone(),
        no_password,
        std::io::stdin().is_terminal(),
        user,
    )?;
    Ok(source.read(user, prompt_twice)?)
}

/// Asks for a password twice on the terminal, without echo.
fn prompt_twice(user: &str) -> std::io::Result<Secret> {
    let first = rpassword::prompt_password(format!("Password of user {user}: "))?;
    let again = rpassword::prompt_password("Type it again: ")?;
    if first != again {
        return Err(std::io::Error::other("the two passwords differ"));
    }
    Ok(Secret::new(first))
}

/// Prints a change, and its warnings on stderr.
fn print_change(format: OutputFormat, change: AuthChange) -> std::io::Result<()> {
    for warning in &change.warnings {
        crate::output::warn(warning);
    }
    print(format, &ChangeView(change))
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct LeasesView(LeaseList);

impl Render for LeasesView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["ID", "GRANTED TTL", "REMAINING TTL", "KEYS"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .leases
            .iter()
            .map(|l| {
                vec![
                    l.id.to_string(),
                    format!("{}s", l.granted_ttl),
                    format!("{}s", l.remaining_ttl),
                    l.keys.to_string(),
                ]
            })
            .collect()
    }
    fn simple_lines(&self) -> Vec<String> {
        let mut lines = vec![format!("found {} leases", self.0.leases.len())];
        lines.extend(self.0.leases.iter().map(|l| l.id.to_string()));
        lines
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct LeaseView(LeaseTimeToLive);

impl Render for LeaseView {
    fn headers(&self) -> Vec<&'static str> {
        let mut headers = vec!["ID", "FOUND", "GRANTED TTL", "REMAINING TTL"];
        if self.0.keys.is_some() {
            headers.push("KEYS");
        }
        headers
    }
    fn rows(&self) -> Vec<Vec<String>> {
        let lease = &self.0;
        let mut row = vec![
            lease.id.to_string(),
            lease.found.to_string(),
            format!("{}s", lease.granted_ttl),
            format!("{}s", lease.remaining_ttl),
        ];
        if let Some(keys) = &lease.keys {
            row.push(keys.iter().map(|k| plain(k)).collect::<Vec<_>>().join("\n"));
        }
        vec![row]
    }
    fn simple_lines(&self) -> Vec<String> {
        let lease = &self.0;
        if !lease.found {
            return vec![format!("lease {} already expired", lease.id)];
        }
        let mut line = format!(
            "lease {} granted with TTL({}s), remaining({}s)",
            lease.id, lease.granted_ttl, lease.remaining_ttl
        );
        if let Some(keys) = lease.keys.as_ref().filter(|k| !k.is_empty()) {
            let keys: Vec<String> = keys.iter().map(|k| plain(k)).collect();
            line.push_str(&format!(", attached keys([{}])", keys.join(" ")));
        }
        vec![line]
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct AuthStatusView(AuthStatus);

fn known(value: Option<bool>) -> String {
    value.map_or_else(|| "(unknown)".into(), |v| v.to_string())
}

impl Render for AuthStatusView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["AUTH ENABLED", "ROOT USER EXISTS", "ROOT HAS ROOT ROLE"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            self.0.enabled.to_string(),
            known(self.0.root_user_exists),
            known(self.0.root_has_root_role),
        ]]
    }
    fn simple_lines(&self) -> Vec<String> {
        vec![format!("Authentication Status: {}", self.0.enabled)]
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct ChangeView(AuthChange);

impl Render for ChangeView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["CHANGED", "MESSAGE"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![self.0.changed.to_string(), self.0.message.clone()]]
    }
    fn simple_lines(&self) -> Vec<String> {
        vec![self.0.message.clone()]
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct UsersView(UserList);

impl Render for UsersView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["USER"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        self.0.users.iter().map(|u| vec![plain(u)]).collect()
    }
    fn simple_lines(&self) -> Vec<String> {
        self.0.users.iter().map(|u| plain(u)).collect()
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct UserView(UserInfo);

impl Render for UserView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["USER", "ROLES"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![plain(&self.0.name), plain(&self.0.roles.join(", "))]]
    }
    fn simple_lines(&self) -> Vec<String> {
        vec![
            format!("User: {}", plain(&self.0.name)),
            format!("Roles: {}", plain(&self.0.roles.join(" "))),
        ]
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct RolesView(RoleList);

impl Render for RolesView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["ROLE"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        self.0.roles.iter().map(|r| vec![plain(r)]).collect()
    }
    fn simple_lines(&self) -> Vec<String> {
        self.0.roles.iter().map(|r| plain(r)).collect()
    }
}

#[derive(serde::Serialize)]
#[serde(transparent)]
struct RoleView(RoleInfo);

impl Render for RoleView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["ROLE", "PERMISSION", "KEYS"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        self.0
            .permissions
            .iter()
            .map(|p| {
                vec![
                    plain(&self.0.name),
                    p.permission.to_string(),
                    plain(&p.describe()),
                ]
            })
            .collect()
    }
    fn simple_lines(&self) -> Vec<String> {
        // As etcdctl prints `role get`: read permissions, then write permissions.
        let mut lines = vec![format!("Role {}", plain(&self.0.name)), "KV Read:".into()];
        let lines_for = |wanted: PermissionKind| {
            self.0
                .permissions
                .iter()
                .filter(move |p| {
                    p.permission == wanted || p.permission == PermissionKind::Readwrite
                })
                .map(|p| format!("\t{}", plain(&p.describe())))
        };
        lines.extend(lines_for(PermissionKind::Read));
        lines.push("KV Write:".into());
        lines.extend(lines_for(PermissionKind::Write));
        lines
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::flags::{Cli, Command, RoleCommand, UserCommand};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("etcdops").chain(args.iter().copied()))
    }

    #[test]
    fn lease_timetolive_takes_a_hex_id_and_keys() {
        let cli = parse(&["lease", "timetolive", "694d77aa9e38260f", "--keys"]).unwrap();
        let Command::Lease(crate::flags::LeaseCommand::Timetolive(args)) = cli.command else {
            panic!("not a timetolive");
        };
        assert_eq!(args.id, etcd_core::LeaseId(0x694d_77aa_9e38_260f));
        assert!(args.keys);
        assert!(parse(&["lease", "timetolive", "not-hex"]).is_err());
    }

    #[test]
    fn user_add_takes_one_password_source_and_never_a_password_argument() {
        let cli = parse(&["user", "add", "alice", "--password-env", "PW"]).unwrap();
        let Command::User(UserCommand::Add(args)) = cli.command else {
            panic!("not a user add");
        };
        assert_eq!(args.password.password_env.as_deref(), Some("PW"));
        assert!(args.password.password_file.is_none() && !args.no_password);
        assert!(
            parse(&[
                "user",
                "add",
                "alice",
                "--password-env",
                "PW",
                "--password-file",
                "f"
            ])
            .is_err()
        );
        assert!(
            parse(&[
                "user",
                "add",
                "alice",
                "--no-password",
                "--password-env",
                "PW"
            ])
            .is_err()
        );
        // A second positional (a password typed on the command line) is rejected.
        assert!(parse(&["user", "add", "alice", "secret"]).is_err());
        assert!(parse(&["user", "passwd", "alice", "--no-password"]).is_err());
    }

    #[test]
    fn role_grant_permission_takes_kind_key_and_range_or_prefix() {
        let cli = parse(&[
            "role",
            "grant-permission",
            "kube",
            "readwrite",
            "/registry/",
            "--prefix",
        ])
        .unwrap();
        let Command::Role(RoleCommand::GrantPermission(args)) = cli.command else {
            panic!("not a grant-permission");
        };
        assert_eq!(args.permission, crate::flags::PermissionArg::Readwrite);
        assert_eq!(args.key, "/registry/");
        assert!(args.prefix && args.range_end.is_none());
        assert!(parse(&["role", "grant-permission", "r", "admin", "k"]).is_err());
        assert!(
            parse(&[
                "role",
                "grant-permission",
                "r",
                "read",
                "a",
                "b",
                "--prefix"
            ])
            .is_err()
        );
        let cli = parse(&["role", "revoke-permission", "r", "a", "b"]).unwrap();
        let Command::Role(RoleCommand::RevokePermission(args)) = cli.command else {
            panic!("not a revoke-permission");
        };
        assert_eq!(args.range_end.as_deref(), Some("b"));
    }

    #[test]
    fn the_command_line_has_no_clashing_argument_ids() {
        // A positional named like a global flag (`key` and `--key`) only fails at run time.
        <Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn auth_enable_takes_force() {
        let cli = parse(&["auth", "enable", "--force"]).unwrap();
        let Command::Auth(crate::flags::AuthCommand::Enable(args)) = cli.command else {
            panic!("not an auth enable");
        };
        assert!(args.force);
    }
}
