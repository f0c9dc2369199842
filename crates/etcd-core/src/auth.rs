//! Access control: authentication on or off, users, roles and their key permissions.
//!
//! Every write is idempotent where etcd lets us tell: adding a user or role that exists,
//! granting a role or permission already held, deleting what is gone all answer
//! `changed: false` and say so. Passwords reach this module only as [`Secret`]s, read by a
//! [`PasswordSource`] the front-end chose; they never appear in results, errors or `Debug`.
//!
//! `auth enable` is guarded: it refuses when the `root` user is missing or lacks the `root`
//! role, and (unless forced) when the cluster holds Kubernetes data, whose kube-apiserver
//! would be locked out.

use crate::kv::prefix_end;
use std::fmt;
use std::path::PathBuf;

use etcd_client::{GetOptions, Permission, PermissionType, RoleRevokePermissionOptions};
use serde::Serialize;

use crate::config::{ClusterConfig, Secret};
use crate::connect::EndpointClient;
use crate::error::{Error, Result};

/// Key prefixes under which Kubernetes (kube-apiserver's `--etcd-prefix`, default `/registry`)
/// and OpenShift store their objects.
pub const KUBERNETES_PREFIXES: &[&str] = &["/registry/", "/kubernetes.io/"];

/// The user and role etcd requires before authentication can be enabled.
const ROOT: &str = "root";

/// Where a new user's password comes from. Never the command line, where `ps` and shell
/// history would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordSource {
    /// The file's contents, without one trailing newline.
    File(PathBuf),
    /// The value of this environment variable (its name is given, not the password).
    Env(String),
    /// Ask on the terminal without echo (the front-end does the asking).
    Prompt,
    /// No password: the user authenticates only with a client certificate whose common name
    /// is the user name (what kube-apiserver does).
    NoPassword,
}

impl PasswordSource {
    /// Picks the source from what the user gave: a file, an environment variable, or
    /// `no_password`; else a prompt when `interactive` (stdin is a terminal). Giving none of
    /// them without a terminal is an error that says how to give one.
    pub fn choose(
        file: Option<PathBuf>,
        env: Option<String>,
        no_password: bool,
        interactive: bool,
        user: &str,
    ) -> Result<Self> {
        match (file, env, no_password) {
            (Some(file), None, false) => Ok(Self::File(file)),
            (None, Some(var), false) => Ok(Self::Env(var)),
            (None, None, true) => Ok(Self::NoPassword),
            (None, None, false) if interactive => Ok(Self::Prompt),
            (None, None, false) => Err(Error::InvalidOption {
                option: "password",
                reason: format!(
                    "no password for user '{user}' and no terminal to ask on; give --password-file FILE or --password-env VARIABLE (passwords are never taken from the command line){}",
                    if user == ROOT {
                        ""
                    } else {
                        ", or --no-password for a user that authenticates with a client certificate"
                    }
                ),
            }),
            _ => Err(Error::InvalidOption {
                option: "password",
                reason: "give only one of --password-file, --password-env and --no-password".into(),
            }),
        }
    }

    /// Reads the password: `None` for [`PasswordSource::NoPassword`]. `prompt` asks on the
    /// terminal for [`PasswordSource::Prompt`]; it is given the user name.
    pub fn read(
        &self,
        user: &str,
        prompt: impl FnOnce(&str) -> std::io::Result<Secret>,
    ) -> Result<Option<Secret>> {
        self.read_with(user, |name| std::env::var_os(name), prompt)
    }

    /// As [`PasswordSource::read`], with the environment given as a function (for tests).
    pub fn read_with(
        &self,
        user: &str,
        getenv: impl FnOnce(&str) -> Option<std::ffi::OsString>,
        prompt: impl FnOnce(&str) -> std::io::Result<Secret>,
    ) -> Result<Option<Secret>> {
        let (option, text) = match self {
            Self::NoPassword => return Ok(None),
            Self::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| Error::InvalidOption {
                    option: "password-file",
                    reason: format!("cannot read '{}': {e}", path.display()),
                })?;
                let text = text
                    .strip_suffix('\n')
                    .map(|t| t.strip_suffix('\r').unwrap_or(t))
                    .unwrap_or(&text)
                    .to_string();
                ("password-file", text)
            }
            Self::Env(var) => {
                let value = getenv(var).ok_or_else(|| Error::InvalidOption {
                    option: "password-env",
                    reason: format!("environment variable {var} is not set"),
                })?;
                let text = value.into_string().map_err(|_| Error::InvalidOption {
                    option: "password-env",
                    reason: format!("environment variable {var} is not valid UTF-8"),
                })?;
                ("password-env", text)
            }
            Self::Prompt => {
                let secret = prompt(user).map_err(|e| Error::InvalidOption {
                    option: "password",
                    reason: format!("cannot read the password from the terminal: {e}"),
                })?;
                ("password", secret.expose().to_string())
            }
        };
        if text.is_empty() {
            return Err(Error::InvalidOption {
                option,
                reason: format!(
                    "the password for user '{user}' is empty; etcd needs one (or --no-password for a client-certificate user)"
                ),
            });
        }
        Ok(Some(Secret::new(text)))
    }
}

/// Whether authentication is on, and whether it could be turned on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthStatus {
    /// Authentication is enabled.
    pub enabled: bool,
    /// The `root` user exists (`None` when this user may not read users).
    pub root_user_exists: Option<bool>,
    /// The `root` user holds the `root` role (`None` when unknown).
    pub root_has_root_role: Option<bool>,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthChange {
    /// Whether anything changed (false when it already was so).
    pub changed: bool,
    /// What happened, in words.
    pub message: String,
    /// The user it is about, if any.
    pub user: Option<String>,
    /// The role it is about, if any.
    pub role: Option<String>,
    /// Things to know, such as a guard overridden with `force`.
    pub warnings: Vec<String>,
}

impl AuthChange {
    fn new(changed: bool, message: String) -> Self {
        Self {
            changed,
            message,
            user: None,
            role: None,
            warnings: Vec::new(),
        }
    }

    fn user(mut self, user: &str) -> Self {
        self.user = Some(user.to_string());
        self
    }

    fn role(mut self, role: &str) -> Self {
        self.role = Some(role.to_string());
        self
    }
}

/// Every user's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserList {
    /// User names, sorted.
    pub users: Vec<String>,
}

/// One user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    /// Name.
    pub name: String,
    /// Roles granted, sorted.
    pub roles: Vec<String>,
}

/// Every role's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleList {
    /// Role names, sorted.
    pub roles: Vec<String>,
}

/// One role with its permissions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleInfo {
    /// Name.
    pub name: String,
    /// Key permissions.
    pub permissions: Vec<PermissionInfo>,
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
    /// The range is every key from `key` on (`key` empty: every key).
    pub from_key: bool,
}

impl PermissionInfo {
    fn from_bytes(kind: PermissionKind, key: &[u8], range_end: &[u8]) -> Self {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let from_key = range_end == [0];
        let prefix = !range_end.is_empty() && !from_key && range_end == prefix_end(key);
        Self {
            permission: kind,
            key: text(key),
            range_end: (!range_end.is_empty()).then(|| text(range_end)),
            prefix,
            from_key,
        }
    }

    /// The keys covered, in words: `foo`, `/registry/ (prefix)`, `[a, b)`, `all keys`.
    pub fn describe(&self) -> String {
        if self.from_key && self.key.is_empty() {
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
}

impl KeyRange {
    /// The key and range end as etcd stores them (range end empty for a single key).
    fn to_bytes(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let key = self.key.as_bytes().to_vec();
        match (&self.range_end, self.prefix) {
            (Some(_), true) => Err(Error::InvalidOption {
                option: "prefix",
                reason: "give either RANGE_END or --prefix, not both".into(),
            }),
            (Some(end), false) => {
                if !end.is_empty() && end.as_bytes() <= key.as_slice() {
                    return Err(Error::InvalidOption {
                        option: "range-end",
                        reason: format!(
                            "range end '{end}' is not after key '{}': the range would be empty",
                            self.key
                        ),
                    });
                }
                Ok((key, end.as_bytes().to_vec()))
            }
            (None, true) => {
                let end = prefix_end(&key);
                Ok((key, end))
            }
            (None, false) if key.is_empty() => Err(Error::InvalidOption {
                option: "key",
                reason: "the key is empty; give a key, or an empty key with --prefix for all keys"
                    .into(),
            }),
            (None, false) => Ok((key, Vec::new())),
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

fn check_name(option: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::InvalidOption {
            option,
            reason: format!("the {option} name is empty"),
        });
    }
    Ok(())
}

fn says(err: &Error, text: &str) -> bool {
    matches!(err, Error::Request { message, .. } if message.contains(text))
}

/// An error from an admin request, with advice when it is about missing rights.
fn with_admin_hint(err: Error) -> Error {
    match err {
        Error::Request {
            operation,
            endpoint,
            message,
        } if message.contains("permission denied") || message.contains("user name is empty") => {
            Error::Request {
                operation,
                endpoint,
                message: format!(
                    "{message}: authentication is enabled and managing it takes the root role; give --user root (or a user holding the root role)"
                ),
            }
        }
        other => other,
    }
}

async fn probe_enabled(config: &ClusterConfig, client: &EndpointClient) -> Result<bool> {
    // etcd answers Authenticate with "authentication is not enabled" before it looks at the
    // name, so a probe tells without the AuthStatus RPC, which etcd 3.4 lacks. With
    // credentials configured, they are the probe (no failed-login warning in etcd's log).
    let (name, password) = match &config.auth {
        Some(auth) => (auth.user.clone(), auth.password.expose().to_string()),
        None => ("etcdops-auth-status-probe".to_string(), String::new()),
    };
    let probe = client
        .call("auth status", |c| async move {
            c.auth_client().authenticate(name, password).await
        })
        .await;
    match probe {
        Ok(_) | Err(Error::AuthFailed { .. }) => Ok(true),
        Err(err) if says(&err, "authentication is not enabled") => Ok(false),
        Err(Error::Request { message, .. }) if message.contains("invalid user ID or password") => {
            Ok(true)
        }
        Err(err) => Err(err),
    }
}

/// `Some(roles)` of `user`, `None` when it does not exist.
async fn user_roles(client: &EndpointClient, user: &str) -> Result<Option<Vec<String>>> {
    let name = user.to_string();
    match client
        .call("user get", |mut c| async move { c.user_get(name).await })
        .await
    {
        Ok(response) => {
            let mut roles = response.roles().to_vec();
            roles.sort();
            Ok(Some(roles))
        }
        Err(err) if says(&err, "user name not found") => Ok(None),
        Err(err) => Err(with_admin_hint(err)),
    }
}

/// Whether authentication is enabled, and whether `root` is ready for it.
pub async fn auth_status(config: &ClusterConfig) -> Result<AuthStatus> {
    let (client, enabled) = config
        .read_any(|client| async move {
            let enabled = probe_enabled(config, &client).await?;
            Ok((client, enabled))
        })
        .await?;
    let root = user_roles(&client, ROOT).await.ok();
    Ok(AuthStatus {
        enabled,
        root_user_exists: root.as_ref().map(Option::is_some),
        root_has_root_role: root
            .map(|roles| roles.is_some_and(|r| r.iter().any(|role| role == ROOT))),
    })
}

/// Keys under which this cluster holds Kubernetes objects (one limit-1 keys-only read each).
async fn kubernetes_prefixes(client: &EndpointClient) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for prefix in KUBERNETES_PREFIXES {
        let response = client
            .call("read key count", |mut c| async move {
                c.get(
                    *prefix,
                    Some(
                        GetOptions::new()
                            .with_prefix()
                            .with_keys_only()
                            .with_limit(1),
                    ),
                )
                .await
            })
            .await?;
        if !response.kvs().is_empty() {
            found.push((*prefix).to_string());
        }
    }
    Ok(found)
}

/// Turns authentication on. Refuses when `root` is missing or lacks the `root` role, and,
/// unless `force`, when the cluster serves Kubernetes (its kube-apiserver would be locked out).
pub async fn auth_enable(config: &ClusterConfig, force: bool) -> Result<AuthChange> {
    let client = config.connect_any().await?;
    if probe_enabled(config, &client).await? {
        return Ok(AuthChange::new(
            false,
            "authentication is already enabled; nothing changed".into(),
        ));
    }
    match user_roles(&client, ROOT).await? {
        None => {
            return Err(Error::Refused {
                reason: "the root user does not exist, and etcd enables authentication only with a root user holding the root role (it is the user that can manage auth afterwards); create it first: `etcdops user add root --password-file FILE`, then `etcdops user grant-role root root`".into(),
            });
        }
        Some(roles) if !roles.iter().any(|r| r == ROOT) => {
            return Err(Error::Refused {
                reason: format!(
                    "the root user lacks the root role (it has: {}), and etcd enables authentication only when it holds it; grant it first: `etcdops user grant-role root root`",
                    if roles.is_empty() {
                        "none".to_string()
                    } else {
                        roles.join(", ")
                    }
                ),
            });
        }
        Some(_) => {}
    }
    let kubernetes = kubernetes_prefixes(&client).await?;
    let mut warnings = Vec::new();
    if !kubernetes.is_empty() {
        let explanation = format!(
            "this cluster holds Kubernetes data (keys under {}). kube-apiserver connects with a client certificate whose common name (CN) becomes its etcd user: with authentication enabled that user needs a role with readwrite permission on its prefix, or kube-apiserver is locked out and the Kubernetes control plane stops. Set it up first, e.g. `etcdops role add kube-apiserver`, `etcdops role grant-permission kube-apiserver readwrite /registry/ --prefix`, `etcdops user add CN --no-password`, `etcdops user grant-role CN kube-apiserver`",
            kubernetes.join(" and ")
        );
        if !force {
            return Err(Error::Refused {
                reason: format!("{explanation}; then enable with --force"),
            });
        }
        warnings.push(format!("enabled with --force although {explanation}"));
    }
    client
        .call("auth enable", |mut c| async move { c.auth_enable().await })
        .await?;
    let mut change = AuthChange::new(
        true,
        "authentication enabled; from now on connect as root or another user (--user)".into(),
    );
    change.warnings = warnings;
    Ok(change)
}

/// Turns authentication off (it takes the root role).
pub async fn auth_disable(config: &ClusterConfig) -> Result<AuthChange> {
    let client = config.connect_any().await?;
    if !probe_enabled(config, &client).await? {
        return Ok(AuthChange::new(
            false,
            "authentication is already disabled; nothing changed".into(),
        ));
    }
    client
        .call(
            "auth disable",
            |mut c| async move { c.auth_disable().await },
        )
        .await
        .map_err(with_admin_hint)?;
    Ok(AuthChange::new(true, "authentication disabled".into()))
}

/// Every user.
pub async fn user_list(config: &ClusterConfig) -> Result<UserList> {
    let response = config
        .read_any(|client| async move {
            client
                .call("user list", |mut c| async move { c.user_list().await })
                .await
        })
        .await
        .map_err(with_admin_hint)?;
    let mut users = response.users().to_vec();
    users.sort();
    Ok(UserList { users })
}

/// One user and its roles.
pub async fn user_get(config: &ClusterConfig, name: &str) -> Result<UserInfo> {
    check_name("user", name)?;
    let client = config.connect_any().await?;
    match user_roles(&client, name).await? {
        Some(roles) => Ok(UserInfo {
            name: name.to_string(),
            roles,
        }),
        None => Err(not_found("user get", "user", name, &client)),
    }
}

fn not_found(
    operation: &'static str,
    what: &'static str,
    name: &str,
    client: &EndpointClient,
) -> Error {
    Error::Request {
        operation,
        endpoint: client.endpoint().to_string(),
        message: format!(
            "{what} '{name}' does not exist; `{what} list` shows the {what}s there are"
        ),
    }
}

/// Adds a user with `password` (`None`: a user that authenticates only with a client
/// certificate). An existing user is left as it is (`changed: false`).
pub async fn user_add(
    config: &ClusterConfig,
    name: &str,
    password: Option<&Secret>,
) -> Result<AuthChange> {
    check_name("user", name)?;
    let client = config.connect_any().await?;
    let user = name.to_string();
    let password = password.map(|p| p.expose().to_string());
    let result = client
        .call("user add", |mut c| async move {
            match password {
                Some(password) => c.user_add(user, password, None).await,
                None => {
                    c.user_add(
                        user,
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
                "user '{name}' already exists; its password and roles were not changed (`user passwd` changes the password)"
            ),
        )
        .user(name)),
        Err(err) => Err(with_admin_hint(err)),
    }
}

/// Deletes a user; a user that does not exist is not an error (`changed: false`).
pub async fn user_delete(config: &ClusterConfig, name: &str) -> Result<AuthChange> {
    check_name("user", name)?;
    let client = config.connect_any().await?;
    let user = name.to_string();
    match client
        .call(
            "user delete",
            |mut c| async move { c.user_delete(user).await },
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
pub async fn user_passwd(
    config: &ClusterConfig,
    name: &str,
    password: &Secret,
) -> Result<AuthChange> {
    check_name("user", name)?;
    let client = config.connect_any().await?;
    if user_roles(&client, name).await?.is_none() {
        return Err(not_found("user passwd", "user", name, &client));
    }
    if probe_enabled(config, &client).await? {
        let (user, pw) = (name.to_string(), password.expose().to_string());
        let works = client
            .call("authenticate", |c| async move {
                c.auth_client().authenticate(user, pw).await
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
    let (user, pw) = (name.to_string(), password.expose().to_string());
    client
        .call("user passwd", |mut c| async move {
            c.user_change_password(user, pw).await
        })
        .await
        .map_err(with_admin_hint)?;
    Ok(AuthChange::new(true, format!("password of user '{name}' changed")).user(name))
}

/// Grants a role to a user; already granted is `changed: false`.
pub async fn user_grant_role(config: &ClusterConfig, name: &str, role: &str) -> Result<AuthChange> {
    check_name("user", name)?;
    check_name("role", role)?;
    let client = config.connect_any().await?;
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
    let (user, granted) = (name.to_string(), role.to_string());
    client
        .call("user grant-role", |mut c| async move {
            c.user_grant_role(user, granted).await
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
pub async fn user_revoke_role(
    config: &ClusterConfig,
    name: &str,
    role: &str,
) -> Result<AuthChange> {
    check_name("user", name)?;
    check_name("role", role)?;
    let client = config.connect_any().await?;
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
    let (user, revoked) = (name.to_string(), role.to_string());
    client
        .call("user revoke-role", |mut c| async move {
            c.user_revoke_role(user, revoked).await
        })
        .await
        .map_err(with_admin_hint)?;
    Ok(
        AuthChange::new(true, format!("role '{role}' revoked from user '{name}'"))
            .user(name)
            .role(role),
    )
}

/// Every role.
pub async fn role_list(config: &ClusterConfig) -> Result<RoleList> {
    let response = config
        .read_any(|client| async move {
            client
                .call("role list", |mut c| async move { c.role_list().await })
                .await
        })
        .await
        .map_err(with_admin_hint)?;
    let mut roles = response.roles().to_vec();
    roles.sort();
    Ok(RoleList { roles })
}

/// `Some(permissions)` of `role`, `None` when it does not exist.
async fn role_permissions(
    client: &EndpointClient,
    role: &str,
) -> Result<Option<Vec<PermissionInfo>>> {
    let name = role.to_string();
    match client
        .call("role get", |mut c| async move { c.role_get(name).await })
        .await
    {
        Ok(response) => Ok(Some(
            response.permissions().iter().map(permission_info).collect(),
        )),
        Err(err) if says(&err, "role name not found") => Ok(None),
        Err(err) => Err(with_admin_hint(err)),
    }
}

fn permission_info(p: &Permission) -> PermissionInfo {
    PermissionInfo::from_bytes(
        PermissionKind::from_pb(p.get_type()),
        p.key(),
        p.range_end(),
    )
}

/// One role and its permissions.
pub async fn role_get(config: &ClusterConfig, name: &str) -> Result<RoleInfo> {
    check_name("role", name)?;
    let client = config.connect_any().await?;
    match role_permissions(&client, name).await? {
        Some(permissions) => Ok(RoleInfo {
            name: name.to_string(),
            permissions,
        }),
        None => Err(not_found("role get", "role", name, &client)),
    }
}

/// Adds a role; an existing role is `changed: false`.
pub async fn role_add(config: &ClusterConfig, name: &str) -> Result<AuthChange> {
    check_name("role", name)?;
    let client = config.connect_any().await?;
    let role = name.to_string();
    match client
        .call("role add", |mut c| async move { c.role_add(role).await })
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
pub async fn role_delete(config: &ClusterConfig, name: &str) -> Result<AuthChange> {
    check_name("role", name)?;
    let client = config.connect_any().await?;
    let role = name.to_string();
    match client
        .call(
            "role delete",
            |mut c| async move { c.role_delete(role).await },
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
pub async fn role_grant_permission(
    config: &ClusterConfig,
    grant: &PermissionGrant,
) -> Result<AuthChange> {
    check_name("role", &grant.role)?;
    let (key, range_end) = grant.keys.to_bytes()?;
    let wanted = PermissionInfo::from_bytes(grant.permission, &key, &range_end);
    let client = config.connect_any().await?;
    let existing = role_permissions(&client, &grant.role)
        .await?
        .ok_or_else(|| not_found("role grant-permission", "role", &grant.role, &client))?;
    let same_range = existing
        .iter()
        .find(|p| p.key == wanted.key && p.range_end == wanted.range_end);
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
    let role = grant.role.clone();
    let permission =
        Permission::new(grant.permission.to_pb(), key).with_range_end(range_end.clone());
    client
        .call("role grant-permission", |mut c| async move {
            c.role_grant_permission(role, permission).await
        })
        .await
        .map_err(with_admin_hint)?;
    Ok(AuthChange::new(true, message).role(&grant.role))
}

/// Revokes a role's permission on exactly this key or range; none held is `changed: false`.
pub async fn role_revoke_permission(
    config: &ClusterConfig,
    role: &str,
    keys: &KeyRange,
) -> Result<AuthChange> {
    check_name("role", role)?;
    let (key, range_end) = keys.to_bytes()?;
    let wanted = PermissionInfo::from_bytes(PermissionKind::Readwrite, &key, &range_end);
    let client = config.connect_any().await?;
    let existing = role_permissions(&client, role)
        .await?
        .ok_or_else(|| not_found("role revoke-permission", "role", role, &client))?;
    let what = wanted.describe();
    if !existing
        .iter()
        .any(|p| p.key == wanted.key && p.range_end == wanted.range_end)
    {
        return Ok(AuthChange::new(
            false,
            format!("role '{role}' has no permission on {what}; nothing changed"),
        )
        .role(role));
    }
    let name = role.to_string();
    client
        .call("role revoke-permission", |mut c| async move {
            let options = RoleRevokePermissionOptions::new().with_range_end(range_end);
            c.role_revoke_permission(name, key, Some(options)).await
        })
        .await
        .map_err(with_admin_hint)?;
    Ok(AuthChange::new(
        true,
        format!("permission of role '{role}' on {what} revoked"),
    )
    .role(role))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ranges_resolve_like_etcdctl() {
        let single = KeyRange {
            key: "foo".into(),
            ..Default::default()
        };
        assert_eq!(single.to_bytes().unwrap(), (b"foo".to_vec(), Vec::new()));
        let prefix = KeyRange {
            key: "/registry/".into(),
            prefix: true,
            ..Default::default()
        };
        assert_eq!(
            prefix.to_bytes().unwrap(),
            (b"/registry/".to_vec(), b"/registry0".to_vec())
        );
        let all = KeyRange {
            key: String::new(),
            prefix: true,
            ..Default::default()
        };
        assert_eq!(all.to_bytes().unwrap(), (Vec::new(), vec![0]));
        let both = KeyRange {
            key: "a".into(),
            range_end: Some("b".into()),
            prefix: true,
        };
        assert!(both.to_bytes().is_err());
        let backwards = KeyRange {
            key: "b".into(),
            range_end: Some("a".into()),
            prefix: false,
        };
        assert!(backwards.to_bytes().is_err());
        assert!(KeyRange::default().to_bytes().is_err());
    }

    #[test]
    fn permissions_describe_their_range() {
        let p = |key: &[u8], end: &[u8]| PermissionInfo::from_bytes(PermissionKind::Read, key, end);
        assert_eq!(p(b"foo", b"").describe(), "foo");
        assert_eq!(
            p(b"/registry/", b"/registry0").describe(),
            "/registry/ (prefix)"
        );
        assert!(p(b"/registry/", b"/registry0").prefix);
        assert_eq!(p(b"a", b"c").describe(), "[a, c)");
        assert_eq!(p(b"", b"\0").describe(), "all keys");
        assert_eq!(
            serde_json::to_value(p(b"a", b"c")).unwrap()["permission"],
            "read"
        );
    }

    #[test]
    fn password_sources_read_file_env_and_prompt_and_never_show_the_password() {
        let dir = std::env::temp_dir().join(format!("etcdops-pw-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pw");
        std::fs::write(&file, "S3cret-from-file\n").unwrap();
        let no_prompt = |_: &str| -> std::io::Result<Secret> { panic!("no prompt expected") };
        let no_env = |_: &str| -> Option<std::ffi::OsString> { None };

        let read = PasswordSource::File(file.clone())
            .read_with("alice", no_env, no_prompt)
            .unwrap()
            .unwrap();
        assert_eq!(read.expose(), "S3cret-from-file");
        assert!(!format!("{read:?}").contains("S3cret"));

        let env = PasswordSource::Env("PW_VAR".into())
            .read_with(
                "alice",
                |name| (name == "PW_VAR").then(|| "S3cret-from-env".into()),
                no_prompt,
            )
            .unwrap()
            .unwrap();
        assert_eq!(env.expose(), "S3cret-from-env");

        let missing = PasswordSource::Env("PW_VAR".into())
            .read_with("alice", no_env, no_prompt)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("PW_VAR is not set"), "{missing}");

        let prompted = PasswordSource::Prompt
            .read_with("alice", no_env, |user| {
                assert_eq!(user, "alice");
                Ok(Secret::new("typed"))
            })
            .unwrap()
            .unwrap();
        assert_eq!(prompted.expose(), "typed");

        std::fs::write(&file, "\n").unwrap();
        let empty = PasswordSource::File(file.clone())
            .read_with("alice", no_env, no_prompt)
            .unwrap_err()
            .to_string();
        assert!(empty.contains("empty"), "{empty}");
        assert_eq!(
            PasswordSource::NoPassword
                .read_with("alice", no_env, no_prompt)
                .unwrap(),
            None
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_password_source_is_required_without_a_terminal() {
        let err = PasswordSource::choose(None, None, false, false, "root")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--password-file") && err.contains("--password-env"),
            "{err}"
        );
        assert_eq!(
            PasswordSource::choose(None, None, false, true, "root").unwrap(),
            PasswordSource::Prompt
        );
        assert_eq!(
            PasswordSource::choose(None, Some("V".into()), false, false, "root").unwrap(),
            PasswordSource::Env("V".into())
        );
        assert!(
            PasswordSource::choose(Some("f".into()), Some("V".into()), false, false, "u").is_err()
        );
    }
}
