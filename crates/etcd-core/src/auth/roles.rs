//! Roles and their key permissions: list, get, add, delete, grant and revoke.

use std::fmt;

use etcd_client::{Permission, PermissionType, RoleRevokePermissionOptions};
use etcd_common::Hint;
use serde::Serialize;

use super::access_change;
use super::users::not_found;
use super::{AuthChange, PREFIX_SWITCH, check_name, says, with_admin_hint};
use crate::client::Client;
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::guard::ChangeGuard;
use crate::header::ResponseHeader;
use crate::kv::prefix_end;

/// Every role's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleList {
    /// Role names, sorted.
    pub roles: Vec<String>,
    /// The header of etcd's answer.
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
}

/// One role with its permissions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleInfo {
    /// Name.
    pub name: String,
    /// Key permissions, in etcd's order (by key).
    pub permissions: Vec<PermissionInfo>,
    /// The header of etcd's answer.
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
}

/// Read, write or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionKind {
    /// Read.
    Read,
    /// Write.
    Write,
    /// Read and write.
    Readwrite,
}

impl PermissionKind {
    fn from_pb(value: i32) -> Self {
        match PermissionType::try_from(value) {
            Ok(PermissionType::Read) => Self::Read,
            Ok(PermissionType::Write) => Self::Write,
            _ => Self::Readwrite,
        }
    }

    fn to_pb(self) -> PermissionType {
        match self {
            Self::Read => PermissionType::Read,
            Self::Write => PermissionType::Write,
            Self::Readwrite => PermissionType::Readwrite,
        }
    }
}

impl fmt::Display for PermissionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Readwrite => "readwrite",
        })
    }
}

/// One permission of a role on a key or key range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PermissionInfo {
    /// Read, write or readwrite.
    pub permission: PermissionKind,
    /// The key, or the start of the range, as text.
    pub key: String,
    /// The end of the range (exclusive), as text; `None` for a single key.
    pub range_end: Option<String>,
    /// The range is every key starting with `key`.
    pub prefix: bool,
    /// The range is every key from `key` on (`key` empty or `\0`: every key).
    pub from_key: bool,
    /// The key as etcd holds it (bytes).
    #[serde(skip)]
    pub key_bytes: Vec<u8>,
    /// The range end as etcd holds it (bytes; empty for a single key, `\0` for open-ended).
    #[serde(skip)]
    pub range_end_bytes: Vec<u8>,
}

impl PermissionInfo {
    /// A permission of `kind` on `key` to `range_end` as etcd holds them (range end empty
    /// for a single key, `\0` for every key from `key` on).
    pub fn from_bytes(kind: PermissionKind, key: &[u8], range_end: &[u8]) -> Self {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let from_key = range_end == [0];
        let prefix = !range_end.is_empty() && !from_key && range_end == prefix_end(key);
        Self {
            permission: kind,
            key: text(key),
            range_end: (!range_end.is_empty()).then(|| text(range_end)),
            prefix,
            from_key,
            key_bytes: key.to_vec(),
            range_end_bytes: range_end.to_vec(),
        }
    }

    /// Whether this permission covers every key (etcdctl's `"" --prefix` or `--from-key`).
    pub fn all_keys(&self) -> bool {
        self.from_key && (self.key_bytes.is_empty() || self.key_bytes == [0])
    }

    /// The keys covered, in words: `foo`, `/registry/ (prefix)`, `[a, b)`, `all keys`.
    pub fn describe(&self) -> String {
        if self.all_keys() {
            "all keys".into()
        } else if self.from_key {
            format!("{} and every key after it", self.key)
        } else if self.prefix {
            format!("{} (prefix)", self.key)
        } else {
            match &self.range_end {
                Some(end) => format!("[{}, {end})", self.key),
                None => self.key.clone(),
            }
        }
    }
}

/// Keys a permission covers, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyRange {
    /// The key (or the start of the range).
    pub key: String,
    /// The end of the range, exclusive.
    pub range_end: Option<String>,
    /// Every key starting with `key` (etcdctl's `--prefix`).
    pub prefix: bool,
    /// Every key from `key` on (etcdctl's `--from-key`).
    pub from_key: bool,
}

impl KeyRange {
    /// The key and range end as etcd stores them (range end empty for a single key), as
    /// etcdctl makes them: an empty key with `prefix` or `from_key` is every key
    /// (`\0` to `\0`).
    pub(super) fn to_bytes(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let key = self.key.as_bytes().to_vec();
        let given = [
            (self.range_end.is_some(), "a range end"),
            (self.prefix, "a prefix"),
            (self.from_key, "from the key on"),
        ];
        let chosen: Vec<&str> = given.iter().filter(|g| g.0).map(|g| g.1).collect();
        if chosen.len() > 1 {
            return Err(Error::InvalidRequest {
                what: "prefix",
                reason: format!("give only one of {}", chosen.join(", ")),
                hint: Hint::option(PREFIX_SWITCH),
            });
        }
        if key.is_empty() && (self.prefix || self.from_key) {
            return Ok((vec![0], vec![0]));
        }
        match &self.range_end {
            Some(end) => {
                if !end.is_empty() && end.as_bytes() <= key.as_slice() {
                    return Err(etcd_common::InvalidOption::input(
                        "range end",
                        format!(
                            "range end '{end}' is not after key '{}': the range would be empty",
                            self.key
                        ),
                    )
                    .into());
                }
                Ok((key, end.as_bytes().to_vec()))
            }
            None if self.prefix => {
                let end = prefix_end(&key);
                Ok((key, end))
            }
            None if self.from_key => Ok((key, vec![0])),
            None if key.is_empty() => Err(Error::InvalidRequest {
                what: "key",
                reason: "the key is empty; give a key, or an empty key as a prefix for all keys"
                    .into(),
                hint: Hint::option(PREFIX_SWITCH),
            }),
            None => Ok((key, Vec::new())),
        }
    }
}

/// A request to grant a role a permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionGrant {
    /// The role.
    pub role: String,
    /// Read, write or readwrite.
    pub permission: PermissionKind,
    /// The keys.
    pub keys: KeyRange,
}

/// etcd's roles ([`Client::roles`]): list, get, add, delete, permissions granted.
#[derive(Debug, Clone, Copy)]
pub struct Roles<'c>(pub(super) &'c Client);

impl Roles<'_> {
    /// Every role.
    pub async fn list(&self) -> Result<RoleList> {
        let response = self
            .0
            .read_any(|client| async move {
                client
                    .call("role list", |mut c| async move { c.role_list().await })
                    .await
            })
            .await
            .map_err(with_admin_hint)?;
        let mut roles = response.roles().to_vec();
        roles.sort();
        Ok(RoleList {
            roles,
            header: ResponseHeader::of(response.header()),
        })
    }

    /// One role and its permissions.
    pub async fn get(&self, name: &str) -> Result<RoleInfo> {
        check_name("role", name)?;
        let client = self.0.any().await?;
        role_info(&client, name)
            .await?
            .ok_or_else(|| not_found("role get", "role", name, &client))
    }

    /// Adds a role; an existing role is `changed: false`.
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn add<G: ChangeGuard>(
        &self,
        name: &str,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(guard, "role add", self.add_unguarded(name)).await
    }

    /// [`Self::add`], once its guard let it through.
    async fn add_unguarded(&self, name: &str) -> Result<AuthChange> {
        check_name("role", name)?;
        let client = self.0.any().await?;
        match client
            .call("role add", |mut c| async move { c.role_add(name).await })
            .await
        {
            Ok(_) => Ok(AuthChange::new(true, format!("role '{name}' added")).role(name)),
            Err(err) if says(&err, "role name already exists") => Ok(AuthChange::new(
                false,
                format!("role '{name}' already exists; its permissions were not changed"),
            )
            .role(name)),
            Err(err) => Err(with_admin_hint(err)),
        }
    }

    /// Deletes a role; a role that does not exist is `changed: false`.
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn delete<G: ChangeGuard>(
        &self,
        name: &str,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(guard, "role delete", self.delete_unguarded(name)).await
    }

    /// [`Self::delete`], once its guard let it through.
    async fn delete_unguarded(&self, name: &str) -> Result<AuthChange> {
        check_name("role", name)?;
        let client = self.0.any().await?;
        match client
            .call(
                "role delete",
                |mut c| async move { c.role_delete(name).await },
            )
            .await
        {
            Ok(_) => Ok(AuthChange::new(true, format!("role '{name}' deleted")).role(name)),
            Err(err) if says(&err, "role name not found") => Ok(AuthChange::new(
                false,
                format!("role '{name}' does not exist; nothing changed"),
            )
            .role(name)),
            Err(err) => Err(with_admin_hint(err)),
        }
    }

    /// Grants a role a permission on a key or range. The same permission already held is
    /// `changed: false`; a different kind on the same range is replaced, as etcd does.
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn grant_permission<G: ChangeGuard>(
        &self,
        grant: &PermissionGrant,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(
            guard,
            "role grant-permission",
            self.grant_permission_unguarded(grant),
        )
        .await
    }

    /// [`Self::grant_permission`], once its guard let it through.
    async fn grant_permission_unguarded(&self, grant: &PermissionGrant) -> Result<AuthChange> {
        check_name("role", &grant.role)?;
        let (key, range_end) = grant.keys.to_bytes()?;
        let wanted = PermissionInfo::from_bytes(grant.permission, &key, &range_end);
        let client = self.0.any().await?;
        let existing = role_permissions(&client, &grant.role)
            .await?
            .ok_or_else(|| not_found("role grant-permission", "role", &grant.role, &client))?;
        let same_range = existing.iter().find(|p| {
            p.key_bytes == wanted.key_bytes && p.range_end_bytes == wanted.range_end_bytes
        });
        let what = wanted.describe();
        let message = match same_range {
            Some(p) if p.permission == grant.permission => {
                return Ok(AuthChange::new(
                    false,
                    format!(
                        "role '{}' already has {} permission on {what}; nothing changed",
                        grant.role, grant.permission
                    ),
                )
                .role(&grant.role));
            }
            Some(p) => format!(
                "permission of role '{}' on {what} changed from {} to {}",
                grant.role, p.permission, grant.permission
            ),
            None => format!(
                "{} permission on {what} granted to role '{}'",
                grant.permission, grant.role
            ),
        };
        let role = grant.role.as_str();
        let permission =
            &Permission::new(grant.permission.to_pb(), key).with_range_end(range_end.clone());
        client
            .call("role grant-permission", |mut c| async move {
                c.role_grant_permission(role, permission.clone()).await
            })
            .await
            .map_err(with_admin_hint)?;
        Ok(AuthChange::new(true, message).role(&grant.role))
    }

    /// Revokes a role's permission on exactly this key or range; none held is `changed: false`.
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn revoke_permission<G: ChangeGuard>(
        &self,
        role: &str,
        keys: &KeyRange,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(
            guard,
            "role revoke-permission",
            self.revoke_permission_unguarded(role, keys),
        )
        .await
    }

    /// [`Self::revoke_permission`], once its guard let it through.
    async fn revoke_permission_unguarded(&self, role: &str, keys: &KeyRange) -> Result<AuthChange> {
        check_name("role", role)?;
        let (key, range_end) = keys.to_bytes()?;
        let wanted = PermissionInfo::from_bytes(PermissionKind::Readwrite, &key, &range_end);
        let client = self.0.any().await?;
        let existing = role_permissions(&client, role)
            .await?
            .ok_or_else(|| not_found("role revoke-permission", "role", role, &client))?;
        let what = wanted.describe();
        if !existing
            .iter()
            .any(|p| p.key_bytes == wanted.key_bytes && p.range_end_bytes == wanted.range_end_bytes)
        {
            return Ok(AuthChange::new(
                false,
                format!("role '{role}' has no permission on {what}; nothing changed"),
            )
            .role(role));
        }
        let (key, range_end) = (&key, &range_end);
        client
            .call("role revoke-permission", |mut c| async move {
                let options = RoleRevokePermissionOptions::new().with_range_end(range_end.clone());
                c.role_revoke_permission(role, key.clone(), Some(options))
                    .await
            })
            .await
            .map_err(with_admin_hint)?;
        Ok(AuthChange::new(
            true,
            format!("permission of role '{role}' on {what} revoked"),
        )
        .role(role))
    }
}

/// `Some(role)` with its permissions, `None` when it does not exist.
pub(super) async fn role_info(client: &EndpointClient, role: &str) -> Result<Option<RoleInfo>> {
    match client
        .call("role get", |mut c| async move { c.role_get(role).await })
        .await
    {
        Ok(response) => Ok(Some(RoleInfo {
            name: role.to_string(),
            permissions: response.permissions().iter().map(permission_info).collect(),
            header: ResponseHeader::of(response.header()),
        })),
        Err(err) if says(&err, "role name not found") => Ok(None),
        Err(err) => Err(with_admin_hint(err)),
    }
}

/// `Some(permissions)` of `role`, `None` when it does not exist.
async fn role_permissions(
    client: &EndpointClient,
    role: &str,
) -> Result<Option<Vec<PermissionInfo>>> {
    Ok(role_info(client, role).await?.map(|r| r.permissions))
}

fn permission_info(p: &Permission) -> PermissionInfo {
    PermissionInfo::from_bytes(
        PermissionKind::from_pb(p.get_type()),
        p.key(),
        p.range_end(),
    )
}
