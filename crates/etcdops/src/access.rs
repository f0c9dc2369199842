//! Authentication, users and roles: etcd's own RBAC. Reading it (`auth status`, `user get`,
//! `role list`, ...) is the library's calls on the [`Client`]'s sub-clients
//! (`client.auth().status()`, `client.users().get(..)`, `client.roles().list()`); every change
//! goes through one
//! workflow, [`change`], which passes the guards first: the OpenShift operator guard
//! (cluster-etcd-operator owns etcd's access there) and, for `auth enable`, the library's own
//! refusals (no root user; a cluster serving Kubernetes, whose kube-apiserver would be locked
//! out). `force` goes past both, and each guard forced through is a warning in the result.
//!
//! ```no_run
//! use etcdops::access::{AccessChange, AccessRequest, change};
//! use etcdops::client::{Client, ClusterConfig};
//! use etcdops::guard::Guards;
//!
//! # async fn example() -> Result<(), etcdops::Error> {
//! let client = Client::new(ClusterConfig::for_endpoints(["https://10.0.0.1:2379"])?);
//! let request = AccessRequest::new(AccessChange::RoleAdd { name: "backup".into() });
//! let done = change(&client, &Guards::on_host("/"), &request).await?;
//! println!("{}", done.message);
//! # Ok(())
//! # }
//! ```
//!
//! The sub-clients' changing calls take the guards' decision, which only [`Guards::check`]
//! makes: a change that skips the guards does not compile.
//!
//! ```compile_fail
//! # async fn bypass(client: etcdops::client::Client) {
//! let _ = client.users().delete("root").await;
//! # }
//! ```

use etcd_core::{Client, Secret};

use crate::error::Result;
use crate::guard::{Force, Guards, Operation};

/// What the access calls take and return, and the sub-clients that read.
pub use etcd_core::{
    Auth, AuthChange, AuthStatus, KeyRange, PermissionGrant, PermissionInfo, PermissionKind,
    RoleInfo, RoleList, Roles, UserInfo, UserList, Users,
};

/// One change to etcd's access control.
#[derive(Debug, Clone)]
pub enum AccessChange {
    /// Turn authentication on (needs a root user holding the root role).
    AuthEnable,
    /// Turn authentication off.
    AuthDisable,
    /// Add a user; without a password it authenticates with a client certificate whose CN
    /// is its name. An existing user is left unchanged.
    UserAdd {
        /// The user name.
        name: String,
        /// Its password, if any.
        password: Option<Secret>,
    },
    /// Delete a user (one that does not exist is not an error).
    UserDelete {
        /// The user name.
        name: String,
    },
    /// Change a user's password.
    UserPasswd {
        /// The user name.
        name: String,
        /// The new password.
        password: Secret,
    },
    /// Grant a role to a user.
    UserGrantRole {
        /// The user name.
        name: String,
        /// The role.
        role: String,
    },
    /// Revoke a role from a user.
    UserRevokeRole {
        /// The user name.
        name: String,
        /// The role.
        role: String,
    },
    /// Add a role (an existing one is left unchanged).
    RoleAdd {
        /// The role.
        name: String,
    },
    /// Delete a role (one that does not exist is not an error).
    RoleDelete {
        /// The role.
        name: String,
    },
    /// Grant a role a permission on keys.
    RoleGrantPermission(PermissionGrant),
    /// Revoke a role's permission on exactly these keys.
    RoleRevokePermission {
        /// The role.
        role: String,
        /// The keys, as the permission was granted.
        keys: KeyRange,
    },
}

/// A change and whether to go past the guards.
#[derive(Debug, Clone)]
pub struct AccessRequest {
    /// What to change.
    pub change: AccessChange,
    /// Go past the guards, with a warning each.
    pub force: Force,
}

impl AccessRequest {
    /// `change`, not forced.
    pub fn new(change: AccessChange) -> AccessRequest {
        AccessRequest {
            change,
            force: Force::default(),
        }
    }
}

/// Makes one access change after the guards let it through (see the module's docs).
pub async fn change(
    client: &Client,
    guards: &Guards,
    request: &AccessRequest,
) -> Result<AuthChange> {
    let passed = guards
        .check(
            Operation::AccessChange,
            request.force,
            Some(client.config()),
        )
        .await?;
    let (users, roles, g) = (client.users(), client.roles(), &passed);
    let mut done = match &request.change {
        AccessChange::AuthEnable => client.auth().enable(request.force.0, g).await?,
        AccessChange::AuthDisable => client.auth().disable(g).await?,
        AccessChange::UserAdd { name, password } => users.add(name, password.as_ref(), g).await?,
        AccessChange::UserDelete { name } => users.delete(name, g).await?,
        AccessChange::UserPasswd { name, password } => {
            users.change_password(name, password, g).await?
        }
        AccessChange::UserGrantRole { name, role } => users.grant_role(name, role, g).await?,
        AccessChange::UserRevokeRole { name, role } => users.revoke_role(name, role, g).await?,
        AccessChange::RoleAdd { name } => roles.add(name, g).await?,
        AccessChange::RoleDelete { name } => roles.delete(name, g).await?,
        AccessChange::RoleGrantPermission(grant) => roles.grant_permission(grant, g).await?,
        AccessChange::RoleRevokePermission { role, keys } => {
            roles.revoke_permission(role, keys, g).await?
        }
    };
    if let Some(warning) = passed.warning() {
        done.warnings.insert(0, warning);
    }
    Ok(done)
}
