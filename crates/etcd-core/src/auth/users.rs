//! Users: list, get, add, delete, password, roles granted.

use serde::Serialize;

use super::access_change;
use super::roles::{RoleInfo, role_info};
use super::{AuthChange, check_name, probe_enabled, says, user_entry, user_roles, with_admin_hint};
use crate::client::Client;
use crate::config::Secret;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::guard::ChangeGuard;
use crate::header::ResponseHeader;

/// Every user's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserList {
    /// User names, sorted.
    pub users: Vec<String>,
    /// The header of etcd's answer.
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
}

/// One user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    /// Name.
    pub name: String,
    /// Roles granted, sorted.
    pub roles: Vec<String>,
    /// With `detail`: each role with its permissions, in the order of `roles`, up to the
    /// first one etcd does not know (see `missing_role`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role_details: Option<Vec<RoleInfo>>,
    /// With `detail`: the first role granted that etcd has no role for (etcd 3.4's `root`),
    /// where the details stop, as etcdctl's do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_role: Option<String>,
    /// The header of etcd's answer.
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
}

/// etcd's users ([`Client::users`]): list, get, add, delete, password, roles granted.
#[derive(Debug, Clone, Copy)]
pub struct Users<'c>(pub(super) &'c Client);

impl Users<'_> {
    /// Every user.
    pub async fn list(&self) -> Result<UserList> {
        let response = self
            .0
            .read_any(|client| async move {
                client
                    .call("user list", |mut c| async move { c.user_list().await })
                    .await
            })
            .await
            .map_err(with_admin_hint)?;
        let mut users = response.users().to_vec();
        users.sort();
        Ok(UserList {
            users,
            header: ResponseHeader::of(response.header()),
        })
    }

    /// One user and its roles; with `detail`, each role's permissions too (etcdctl's
    /// `user get --detail`), read from the same member.
    pub async fn get(&self, name: &str, detail: bool) -> Result<UserInfo> {
        check_name("user", name)?;
        let client = self.0.any().await?;
        let (roles, header) = user_entry(&client, name)
            .await?
            .ok_or_else(|| not_found("user get", "user", name, &client))?;
        let mut missing_role = None;
        let role_details = if detail {
            let mut details = Vec::with_capacity(roles.len());
            for role in &roles {
                match role_info(&client, role).await? {
                    Some(info) => details.push(info),
                    None => {
                        missing_role = Some(role.clone());
                        break;
                    }
                }
            }
            Some(details)
        } else {
            None
        };
        Ok(UserInfo {
            name: name.to_string(),
            roles,
            role_details,
            missing_role,
            header,
        })
    }

    /// Adds a user with `password` (`None`: a user that authenticates only with a client
    /// certificate). An existing user is left as it is (`changed: false`).
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn add<G: ChangeGuard>(
        &self,
        name: &str,
        password: Option<&Secret>,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(guard, "user add", self.add_unguarded(name, password)).await
    }

    /// [`Self::add`], once its guard let it through.
    async fn add_unguarded(&self, name: &str, password: Option<&Secret>) -> Result<AuthChange> {
        check_name("user", name)?;
        let client = self.0.any().await?;
        let password = password.map(Secret::expose);
        let result = client
            .call("user add", |mut c| async move {
                match password {
                    Some(password) => c.user_add(name, password, None).await,
                    None => {
                        c.user_add(
                            name,
                            String::new(),
                            Some(etcd_client::UserAddOptions::new().with_no_pwd()),
                        )
                        .await
                    }
                }
            })
            .await;
        match result {
        Ok(_) => Ok(AuthChange::new(true, format!("user '{name}' added")).user(name)),
        Err(err) if says(&err, "user name already exists") => Ok(AuthChange::new(
            false,
            format!(
                "user '{name}' already exists; its password and roles were not changed (changing its password is a separate step)"
            ),
        )
        .user(name)),
        Err(err) => Err(with_admin_hint(err)),
    }
    }

    /// Deletes a user; a user that does not exist is not an error (`changed: false`).
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn delete<G: ChangeGuard>(
        &self,
        name: &str,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(guard, "user delete", self.delete_unguarded(name)).await
    }

    /// [`Self::delete`], once its guard let it through.
    async fn delete_unguarded(&self, name: &str) -> Result<AuthChange> {
        check_name("user", name)?;
        let client = self.0.any().await?;
        match client
            .call(
                "user delete",
                |mut c| async move { c.user_delete(name).await },
            )
            .await
        {
            Ok(_) => Ok(AuthChange::new(true, format!("user '{name}' deleted")).user(name)),
            Err(err) if says(&err, "user name not found") => Ok(AuthChange::new(
                false,
                format!("user '{name}' does not exist; nothing changed"),
            )
            .user(name)),
            Err(err) => Err(with_admin_hint(err)),
        }
    }

    /// Sets a user's password. When authentication is enabled and the password already works,
    /// nothing changes.
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn change_password<G: ChangeGuard>(
        &self,
        name: &str,
        password: &Secret,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(
            guard,
            "user passwd",
            self.change_password_unguarded(name, password),
        )
        .await
    }

    /// [`Self::change_password`], once its guard let it through.
    async fn change_password_unguarded(&self, name: &str, password: &Secret) -> Result<AuthChange> {
        check_name("user", name)?;
        let client = self.0.any().await?;
        if user_roles(&client, name).await?.is_none() {
            return Err(not_found("user passwd", "user", name, &client));
        }
        if probe_enabled(self.0.config(), &client).await? {
            let works = client
                .call("authenticate", |c| async move {
                    c.auth_client()
                        .authenticate(name.to_string(), password.expose().to_string())
                        .await
                })
                .await
                .is_ok();
            if works {
                return Ok(AuthChange::new(
                    false,
                    format!("user '{name}' already has this password; nothing changed"),
                )
                .user(name));
            }
        }
        client
            .call("user passwd", |mut c| async move {
                c.user_change_password(name, password.expose()).await
            })
            .await
            .map_err(with_admin_hint)?;
        Ok(AuthChange::new(true, format!("password of user '{name}' changed")).user(name))
    }

    /// Grants a role to a user; already granted is `changed: false`.
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn grant_role<G: ChangeGuard>(
        &self,
        name: &str,
        role: &str,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(
            guard,
            "user grant-role",
            self.grant_role_unguarded(name, role),
        )
        .await
    }

    /// [`Self::grant_role`], once its guard let it through.
    async fn grant_role_unguarded(&self, name: &str, role: &str) -> Result<AuthChange> {
        check_name("user", name)?;
        check_name("role", role)?;
        let client = self.0.any().await?;
        let roles = user_roles(&client, name)
            .await?
            .ok_or_else(|| not_found("user grant-role", "user", name, &client))?;
        if roles.iter().any(|r| r == role) {
            return Ok(AuthChange::new(
                false,
                format!("user '{name}' already has role '{role}'; nothing changed"),
            )
            .user(name)
            .role(role));
        }
        client
            .call("user grant-role", |mut c| async move {
                c.user_grant_role(name, role).await
            })
            .await
            .map_err(|err| {
                if says(&err, "role name not found") {
                    not_found("user grant-role", "role", role, &client)
                } else {
                    with_admin_hint(err)
                }
            })?;
        Ok(
            AuthChange::new(true, format!("role '{role}' granted to user '{name}'"))
                .user(name)
                .role(role),
        )
    }

    /// Revokes a role from a user; not granted is `changed: false`.
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn revoke_role<G: ChangeGuard>(
        &self,
        name: &str,
        role: &str,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(
            guard,
            "user revoke-role",
            self.revoke_role_unguarded(name, role),
        )
        .await
    }

    /// [`Self::revoke_role`], once its guard let it through.
    async fn revoke_role_unguarded(&self, name: &str, role: &str) -> Result<AuthChange> {
        check_name("user", name)?;
        check_name("role", role)?;
        let client = self.0.any().await?;
        let roles = user_roles(&client, name)
            .await?
            .ok_or_else(|| not_found("user revoke-role", "user", name, &client))?;
        if !roles.iter().any(|r| r == role) {
            return Ok(AuthChange::new(
                false,
                format!("user '{name}' does not have role '{role}'; nothing changed"),
            )
            .user(name)
            .role(role));
        }
        client
            .call("user revoke-role", |mut c| async move {
                c.user_revoke_role(name, role).await
            })
            .await
            .map_err(with_admin_hint)?;
        Ok(
            AuthChange::new(true, format!("role '{role}' revoked from user '{name}'"))
                .user(name)
                .role(role),
        )
    }
}

pub(super) fn not_found(
    operation: &'static str,
    what: &'static str,
    name: &str,
    client: &EndpointClient,
) -> Error {
    Error::Request {
        operation,
        endpoint: client.endpoint().to_string(),
        message: format!(
            "{what} '{name}' does not exist; listing the {what}s shows the ones there are"
        ),
    }
}
