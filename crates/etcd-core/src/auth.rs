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

use std::path::PathBuf;

use etcd_client::GetOptions;
use etcd_common::{Hint, options};
use serde::Serialize;

use crate::client::Client;
use crate::config::{ClusterConfig, Secret};
use crate::connect::EndpointClient;
use crate::error::{Error, Result};
use crate::guard::{Change, ChangeGuard};
use crate::header::ResponseHeader;

/// Key prefixes under which Kubernetes (kube-apiserver's `--etcd-prefix`, default `/registry`)
/// and OpenShift store their objects.
pub const KUBERNETES_PREFIXES: &[&str] = &["/registry/", "/kubernetes.io/"];

/// What [`Error::ReadFile`] calls a password file (its hint is [`PASSWORD_FILE`]).
pub(crate) const PASSWORD_FILE_WHAT: &str = "password file";

/// The user and role etcd requires before authentication can be enabled.
const ROOT: &str = "root";

pub(crate) use etcd_common::options::{NO_PASSWORD, PASSWORD_ENV, PASSWORD_FILE, PREFIX_SWITCH};

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
    /// Given on the command line, as etcdctl allows (`--new-user-password`, `NAME:PASSWORD`):
    /// visible to `ps` and shell history, so only when asked for so.
    Given(Secret),
    /// The first word of the first line of standard input, as etcdctl's
    /// `--interactive=false` reads it.
    Stdin,
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
            (None, None, false) => Err(Error::InvalidRequest {
                what: "password",
                reason: format!(
                    "no password for user '{user}' and no terminal to ask on; give a file or an environment variable that holds it (passwords are never taken from the command line){}",
                    if user == ROOT {
                        ""
                    } else {
                        ", or no password for a user that authenticates with a client certificate"
                    }
                ),
                hint: if user == ROOT {
                    Hint::any_of(&[PASSWORD_FILE, PASSWORD_ENV])
                } else {
                    Hint::any_of(&[PASSWORD_FILE, PASSWORD_ENV, NO_PASSWORD])
                },
            }),
            _ => Err(Error::InvalidRequest {
                what: "password",
                reason: "give only one of a password file, a password environment variable and no password".into(),
                hint: Hint::any_of(&[PASSWORD_FILE, PASSWORD_ENV, NO_PASSWORD]),
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
        let invalid = |what, reason, option| Error::InvalidRequest {
            what,
            reason,
            hint: Hint::option(option),
        };
        let (what, text) = match self {
            Self::NoPassword => return Ok(None),
            Self::Given(secret) => ("password", secret.expose().to_string()),
            Self::Stdin => {
                let mut line = String::new();
                std::io::stdin()
                    .read_line(&mut line)
                    .map_err(|e| Error::InvalidRequest {
                        what: "password",
                        reason: format!("cannot read the password from standard input: {e}"),
                        hint: Hint::any_of(&[PASSWORD_FILE, PASSWORD_ENV]),
                    })?;
                ("password", first_word(&line).to_string())
            }
            Self::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
                    what: PASSWORD_FILE_WHAT,
                    path: path.clone(),
                    source,
                })?;
                let text = text
                    .strip_suffix('\n')
                    .map(|t| t.strip_suffix('\r').unwrap_or(t))
                    .unwrap_or(&text)
                    .to_string();
                (PASSWORD_FILE_WHAT, text)
            }
            Self::Env(var) => {
                let what = "password variable";
                let value = getenv(var).ok_or_else(|| {
                    invalid(
                        what,
                        format!("environment variable {var} is not set"),
                        PASSWORD_ENV,
                    )
                })?;
                let text = value.into_string().map_err(|_| {
                    invalid(
                        what,
                        format!("environment variable {var} is not valid UTF-8"),
                        PASSWORD_ENV,
                    )
                })?;
                (what, text)
            }
            Self::Prompt => {
                let secret = prompt(user).map_err(|e| Error::InvalidRequest {
                    what: "password",
                    reason: format!(
                        "cannot read the password from the terminal: {e}; give a file or an environment variable that holds it"
                    ),
                    hint: Hint::any_of(&[PASSWORD_FILE, PASSWORD_ENV]),
                })?;
                ("password", secret.expose().to_string())
            }
        };
        if text.is_empty() {
            return Err(invalid(
                what,
                format!(
                    "the password for user '{user}' is empty; etcd needs one (or no password at all for a client-certificate user)"
                ),
                NO_PASSWORD,
            ));
        }
        Ok(Some(Secret::new(text)))
    }
}

/// The first word of `line` (leading blanks skipped, up to the next white space), as Go's
/// `fmt.Scanf("%s")` reads it; empty when the line starts with its end.
pub(crate) fn first_word(line: &str) -> &str {
    let rest = line.trim_start_matches([' ', '\t', '\r']);
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    &rest[..end]
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
    /// etcd's auth revision (`None`: not known; etcd 3.4 has no AuthStatus request).
    pub auth_revision: Option<u64>,
    /// The header of an answer of the member asked (`None` when none came).
    #[serde(skip)]
    pub header: Option<ResponseHeader>,
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

/// `what` is "user" or "role".
fn check_name(what: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(etcd_common::InvalidOption::input(
            if what == "user" {
                "user name"
            } else {
                "role name"
            },
            format!("the {what} name is empty"),
        )
        .into());
    }
    Ok(())
}

fn says(err: &Error, text: &str) -> bool {
    matches!(err, Error::Request { message, .. } if message.contains(text))
}

/// An error from an admin request, with advice when it is about missing rights (then it is
/// [`Error::PermissionDenied`], whose hint is the user to connect as).
fn with_admin_hint(err: Error) -> Error {
    match err {
        Error::Request {
            operation,
            endpoint,
            message,
        } if message.contains("permission denied") || message.contains("user name is empty") => {
            Error::PermissionDenied {
                operation,
                endpoint,
                message: format!(
                    "{message}: authentication is enabled and managing it takes the root role; connect as user root (or a user holding the root role)"
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
    let (name, password) = (&name, &password);
    let probe = client
        .call("auth status", |c| async move {
            c.auth_client()
                .authenticate(name.clone(), password.clone())
                .await
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
    Ok(user_entry(client, user).await?.map(|(roles, _)| roles))
}

/// `Some(roles, header)` of `user`, `None` when it does not exist.
async fn user_entry(
    client: &EndpointClient,
    user: &str,
) -> Result<Option<(Vec<String>, Option<ResponseHeader>)>> {
    match client
        .call("user get", |mut c| async move { c.user_get(user).await })
        .await
    {
        Ok(response) => {
            let mut roles = response.roles().to_vec();
            roles.sort();
            Ok(Some((roles, ResponseHeader::of(response.header()))))
        }
        Err(err) if says(&err, "user name not found") => Ok(None),
        Err(err) => Err(with_admin_hint(err)),
    }
}

/// Authentication on and off ([`Client::auth`]), and its status.
#[derive(Debug, Clone, Copy)]
pub struct Auth<'c>(&'c Client);

impl Auth<'_> {
    /// Whether authentication is enabled, and whether `root` is ready for it.
    pub async fn status(&self) -> Result<AuthStatus> {
        let (client, enabled) = self
            .0
            .read_any(|client| async move {
                let enabled = probe_enabled(self.0.config(), &client).await?;
                Ok((client, enabled))
            })
            .await?;
        let root = user_entry(&client, ROOT).await.ok();
        let config = self.0.config();
        let (credentials, jwt) = (config.auth.as_ref(), config.auth_jwt_token.as_ref());
        let auth_revision = revision::auth_revision(&client, credentials, jwt).await;
        let mut header = root.as_ref().and_then(|r| r.as_ref().and_then(|(_, h)| *h));
        if header.is_none() {
            // No root user to read (or no right to): any answer of the same member will do.
            header = client
                .call("auth status", |mut c| async move { c.user_list().await })
                .await
                .ok()
                .and_then(|r| ResponseHeader::of(r.header()));
        }
        Ok(AuthStatus {
            enabled,
            root_user_exists: root.as_ref().map(Option::is_some),
            root_has_root_role: root
                .map(|entry| entry.is_some_and(|(roles, _)| roles.iter().any(|role| role == ROOT))),
            auth_revision,
            header,
        })
    }

    /// Turns authentication on. Refuses when `root` is missing or lacks the `root` role, and,
    /// unless `force`, when the cluster serves Kubernetes (its kube-apiserver would be locked out).
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn enable<G: ChangeGuard>(
        &self,
        force: bool,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(guard, "auth enable", self.enable_unguarded(force)).await
    }

    /// [`Self::enable`], once its guard let it through.
    async fn enable_unguarded(&self, force: bool) -> Result<AuthChange> {
        let client = self.0.any().await?;
        if probe_enabled(self.0.config(), &client).await? {
            return Ok(AuthChange::new(
                false,
                "authentication is already enabled; nothing changed".into(),
            ));
        }
        match user_roles(&client, ROOT).await? {
            None => {
                return Err(Error::Refused {
                reason: "the root user does not exist, and etcd enables authentication only with a root user holding the root role (it is the user that can manage auth afterwards); create it first and grant it that role (in etcdctl's words: user add root, then user grant-role root root)".into(),
            });
            }
            Some(roles) if !roles.iter().any(|r| r == ROOT) => {
                return Err(Error::Refused {
                    reason: format!(
                        "the root user lacks the root role (it has: {}), and etcd enables authentication only when it holds it; grant it first (in etcdctl's words: user grant-role root root)",
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
                "this cluster holds Kubernetes data (keys under {}). kube-apiserver connects with a client certificate whose common name (CN) becomes its etcd user: with authentication enabled that user needs a role with readwrite permission on its prefix, or kube-apiserver is locked out and the Kubernetes control plane stops. Set it up first: a role (e.g. kube-apiserver) with readwrite permission on the prefix /registry/, and a user named after the certificate's CN, without a password, holding that role",
                kubernetes.join(" and ")
            );
            if !force {
                return Err(Error::Guarded {
                    reason: format!("{explanation}; then enable it, forced"),
                    hint: Hint::option(options::FORCE),
                });
            }
            warnings.push(format!("enabled (forced) although {explanation}"));
        }
        client
            .call("auth enable", |mut c| async move { c.auth_enable().await })
            .await?;
        let mut change = AuthChange::new(
            true,
            "authentication enabled; from now on connect as root or another user".into(),
        );
        change.warnings = warnings;
        Ok(change)
    }

    /// Turns authentication off (it takes the root role).
    ///
    /// Asks `guard` first (`Change::Access`): its refusal is the error.
    pub async fn disable<G: ChangeGuard>(
        &self,
        guard: &G,
    ) -> std::result::Result<AuthChange, G::Error> {
        access_change(guard, "auth disable", self.disable_unguarded()).await
    }

    /// [`Self::disable`], once its guard let it through.
    async fn disable_unguarded(&self) -> Result<AuthChange> {
        let client = self.0.any().await?;
        if !probe_enabled(self.0.config(), &client).await? {
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

/// Runs an access change (auth, a user, a role) once `guard` lets `what` through: the one
/// door every access primitive takes. `change` is a future, so nothing of it runs before the
/// guard's answer.
async fn access_change<G: ChangeGuard, T>(
    guard: &G,
    what: &'static str,
    change: impl std::future::Future<Output = Result<T>>,
) -> std::result::Result<T, G::Error> {
    guard.check(Change::Access { what })?;
    Ok(change.await?)
}

mod revision;
mod roles;
#[cfg(test)]
mod tests;
mod users;

pub use roles::{
    KeyRange, PermissionGrant, PermissionInfo, PermissionKind, RoleInfo, RoleList, Roles,
};
pub use users::{UserInfo, UserList, Users};

impl Client {
    /// Authentication: its status, turning it on and off.
    pub fn auth(&self) -> Auth<'_> {
        Auth(self)
    }

    /// etcd's users.
    pub fn users(&self) -> Users<'_> {
        Users(self)
    }

    /// etcd's roles.
    pub fn roles(&self) -> Roles<'_> {
        Roles(self)
    }
}
