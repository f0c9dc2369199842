//! `etcdops lease | auth | user | role`: leases (read-only) and access control.
//!
//! `simple` output is etcdctl's, byte for byte; under `--compat etcdctl` with stdout not a
//! terminal, etcd data (keys, names) is printed raw as etcdctl prints it, else escaped.

use std::io::IsTerminal;

use anyhow::Result;
use etcdops::access::KeyRange;
use etcdops::access::{
    AccessChange, AccessRequest, AuthChange, PermissionGrant, PermissionKind, change,
};
use etcdops::client::{Client, ClusterConfig, PasswordSource, Secret};
use etcdops::guard::{Force, Guards};

use super::ExitStatus;
use crate::flags::{
    AuthCommand, Compat, LeaseCommand, PasswordFlags, PermissionArg, RoleCommand, UserCommand,
};
use etcdops_printer::Printer;
use etcdops_printer::views::access::*;

/// `lease list|timetolive`
pub async fn run_lease(
    config: &ClusterConfig,
    command: &LeaseCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    let client = Client::new(config.clone());
    match command {
        LeaseCommand::List => print_raw(printer, &LeasesView(client.leases().list().await?))?,
        LeaseCommand::Timetolive(args) => {
            let lease = client.leases().time_to_live(args.id, args.keys).await?;
            let found = lease.found;
            print_raw(printer, &LeaseView(lease))?;
            // etcdctl reports a lease that is gone ("already expired") and exits 0.
            if !found && !printer.is_etcdctl() {
                return Ok(ExitStatus::Failure);
            }
        }
        // Refused before any connection by `main`; the same refusal here, whoever calls.
        LeaseCommand::Write(_) => return Err(super::refuse_write()),
    }
    Ok(ExitStatus::Success)
}

/// `auth status|enable|disable`
pub async fn run_auth(
    config: &ClusterConfig,
    guards: &Guards,
    command: &AuthCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    let client = Client::new(config.clone());
    match command {
        AuthCommand::Status => printer.print(&AuthStatusView(client.auth().status().await?))?,
        AuthCommand::Enable(args) => print_change(
            printer,
            apply(&client, guards, AccessChange::AuthEnable, args.force).await?,
            "Authentication Enabled".into(),
        )?,
        AuthCommand::Disable(force) => print_change(
            printer,
            apply(&client, guards, AccessChange::AuthDisable, force.force).await?,
            "Authentication Disabled".into(),
        )?,
    }
    Ok(ExitStatus::Success)
}

/// `user list|get|add|delete|passwd|grant-role|revoke-role`
pub async fn run_user(
    config: &ClusterConfig,
    guards: &Guards,
    command: &UserCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    let client = Client::new(config.clone());
    match command {
        UserCommand::List => print_raw(printer, &UsersView(client.users().list().await?))?,
        UserCommand::Get(args) => {
            let user = UserView(client.users().get(&args.name, args.detail).await?);
            if args.detail && printer.format().is_etcdctl_json() {
                user.print_detail_json()?;
            } else {
                print_raw(printer, &user)?;
            }
            // As etcdctl: the details up to a role etcd does not know, then the error.
            if let Some(role) = &user.0.missing_role {
                anyhow::bail!(
                    "user '{}' has role '{role}', which does not exist (etcdserver: role name not found)",
                    args.name
                );
            }
        }
        UserCommand::Add(args) => {
            let (name, source) = user_add_source(args, printer.compat())?;
            let password = source.read(&name, prompt_twice)?;
            let created = format!("User {name} created");
            let add = AccessChange::UserAdd { name, password };
            print_change(
                printer,
                apply(&client, guards, add, args.force.force).await?,
                created,
            )?;
        }
        UserCommand::Delete(arg) => print_change(
            printer,
            apply(
                &client,
                guards,
                AccessChange::UserDelete {
                    name: arg.name.clone(),
                },
                arg.force.force,
            )
            .await?,
            format!("User {} deleted", arg.name),
        )?,
        UserCommand::Passwd(args) => {
            let source = if args.interactive.interactive || args.password.given() {
                password_source(&args.name, &args.password, false)?
            } else {
                PasswordSource::Stdin
            };
            let password = source
                .read(&args.name, prompt_twice)?
                .ok_or_else(|| anyhow::anyhow!("a password is required"))?;
            let passwd = AccessChange::UserPasswd {
                name: args.name.clone(),
                password,
            };
            print_change(
                printer,
                apply(&client, guards, passwd, args.force.force).await?,
                "Password updated".into(),
            )?;
        }
        UserCommand::GrantRole(args) => print_change(
            printer,
            apply(
                &client,
                guards,
                AccessChange::UserGrantRole {
                    name: args.name.clone(),
                    role: args.role.clone(),
                },
                args.force.force,
            )
            .await?,
            format!("Role {} is granted to user {}", args.role, args.name),
        )?,
        UserCommand::RevokeRole(args) => print_change(
            printer,
            apply(
                &client,
                guards,
                AccessChange::UserRevokeRole {
                    name: args.name.clone(),
                    role: args.role.clone(),
                },
                args.force.force,
            )
            .await?,
            format!("Role {} is revoked from user {}", args.role, args.name),
        )?,
    }
    Ok(ExitStatus::Success)
}

/// `role list|get|add|delete|grant-permission|revoke-permission`
pub async fn run_role(
    config: &ClusterConfig,
    guards: &Guards,
    command: &RoleCommand,
    printer: Printer,
) -> Result<ExitStatus> {
    let client = Client::new(config.clone());
    match command {
        RoleCommand::List => print_raw(printer, &RolesView(client.roles().list().await?))?,
        RoleCommand::Get(arg) => {
            print_raw(printer, &RoleView(client.roles().get(&arg.name).await?))?
        }
        RoleCommand::Add(arg) => print_change(
            printer,
            apply(
                &client,
                guards,
                AccessChange::RoleAdd {
                    name: arg.name.clone(),
                },
                arg.force.force,
            )
            .await?,
            format!("Role {} created", arg.name),
        )?,
        RoleCommand::Delete(arg) => print_change(
            printer,
            apply(
                &client,
                guards,
                AccessChange::RoleDelete {
                    name: arg.name.clone(),
                },
                arg.force.force,
            )
            .await?,
            format!("Role {} deleted", arg.name),
        )?,
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
                    from_key: args.from_key,
                },
            };
            print_change(
                printer,
                apply(
                    &client,
                    guards,
                    AccessChange::RoleGrantPermission(grant),
                    args.force.force,
                )
                .await?,
                format!("Role {} updated", args.role),
            )?;
        }
        RoleCommand::RevokePermission(args) => {
            let keys = KeyRange {
                key: args.key.clone(),
                range_end: args.range_end.clone(),
                prefix: args.prefix,
                from_key: args.from_key,
            };
            let revoked = revoked_line(&args.role, &keys);
            let revoke = AccessChange::RoleRevokePermission {
                role: args.role.clone(),
                keys,
            };
            print_change(
                printer,
                apply(&client, guards, revoke, args.force.force).await?,
                revoked,
            )?;
        }
    }
    Ok(ExitStatus::Success)
}

/// Makes one access change through the guarded workflow.
async fn apply(
    client: &Client,
    guards: &Guards,
    change_asked: AccessChange,
    force: bool,
) -> etcdops::Result<AuthChange> {
    let request = AccessRequest {
        change: change_asked,
        force: Force(force),
    };
    change(client, guards, &request).await
}

/// The user name and where its password comes from, as etcdctl's `user add` decides:
/// `--new-user-password`, else `NAME:PASSWORD`, else our flags, else the first word of stdin
/// with `--interactive=false`, else a prompt.
fn user_add_source(
    args: &crate::flags::UserAddArgs,
    compat: Compat,
) -> Result<(String, PasswordSource)> {
    let on_command_line = |source| {
        if compat == Compat::Etcdops {
            crate::output::warn(
                "a password on the command line is seen by ps and shell history; --password-file or --password-env keep it out of sight",
            );
        }
        source
    };
    if let Some(password) = &args.new_user_password {
        let source = on_command_line(PasswordSource::Given(password.clone()));
        return Ok((args.name.clone(), source));
    }
    if !args.password.given()
        && !args.no_password
        && let Some((name, password)) = args.name.split_once(':')
    {
        if name.is_empty() {
            anyhow::bail!("empty user name is not allowed");
        }
        let source = on_command_line(PasswordSource::Given(Secret::new(password)));
        return Ok((name.to_string(), source));
    }
    if !args.interactive.interactive && !args.password.given() && !args.no_password {
        return Ok((args.name.clone(), PasswordSource::Stdin));
    }
    let source = password_source(&args.name, &args.password, args.no_password)?;
    Ok((args.name.clone(), source))
}

/// The new password's source of `user`: a file, a variable, a prompt on the terminal, or
/// none with `--no-password`.
fn password_source(user: &str, flags: &PasswordFlags, no_password: bool) -> Result<PasswordSource> {
    Ok(PasswordSource::choose(
        flags.password_file.clone(),
        flags.password_env.clone(),
        no_password,
        std::io::stdin().is_terminal(),
        user,
    )?)
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

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
