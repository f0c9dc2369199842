//! How `access` results are printed.

use crate::etcdctl::{bytes, header, put};
use crate::output::{Render, plain};
use crate::{OutputFormat, Printer};
use etcdops::access::KeyRange;
use etcdops::access::{
    AuthChange, AuthStatus, PermissionInfo, PermissionKind, RoleInfo, RoleList, UserInfo, UserList,
};
use etcdops::kv::prefix_end;
use etcdops::lease::{LeaseList, LeaseTimeToLive};
use serde_json::{Map, Value};
use std::io::{IsTerminal, Write};

/// etcdctl's words for a revoked permission: the key as given, the range end as sent.
pub fn revoked_line(role: &str, keys: &KeyRange) -> String {
    let key = &keys.key;
    let end = if keys.key.is_empty() {
        (keys.prefix || keys.from_key).then_some("\0".to_string())
    } else if keys.from_key {
        Some("\0".into())
    } else if keys.prefix {
        Some(String::from_utf8_lossy(&prefix_end(key.as_bytes())).into_owned())
    } else {
        keys.range_end.clone().filter(|e| !e.is_empty())
    };
    match end.as_deref() {
        None => format!("Permission of key {key} is revoked from role {role}"),
        Some("\0") => {
            format!("Permission of range [{key}, <open ended> is revoked from role {role}")
        }
        Some(end) => format!("Permission of range [{key}, {end}) is revoked from role {role}"),
    }
}

/// Prints a change, and its warnings on stderr. `etcdctl` is etcdctl's line for it, the
/// simple output of a change under `--compat etcdctl`.
pub fn print_change(printer: Printer, change: AuthChange, etcdctl: String) -> std::io::Result<()> {
    for warning in &change.warnings {
        crate::output::warn(warning);
    }
    let etcdctl = (printer.is_etcdctl() && change.changed).then_some(etcdctl);
    printer.print(&ChangeView { change, etcdctl })
}

/// How etcd data (a key, a name) goes into simple output: raw bytes, or escaped text.
pub(crate) type Data<'a> = &'a dyn Fn(&[u8]) -> Vec<u8>;

/// etcd data as etcdctl prints it: the bytes themselves.
pub(crate) fn raw(data: &[u8]) -> Vec<u8> {
    data.to_vec()
}

/// etcd data on one line of text, escaped (see [`plain`]).
pub(crate) fn escaped(data: &[u8]) -> Vec<u8> {
    plain(&String::from_utf8_lossy(data)).into_bytes()
}

/// etcdctl's simple output, built once for raw bytes and once for escaped text.
pub trait RawLines: Render {
    /// etcdctl's `simple` output, every line ended by a newline, etcd data put in by `data`.
    fn simple_with(&self, data: Data<'_>) -> Vec<u8>;

    /// The simple output with etcd data escaped, as lines of text.
    fn text_lines(&self) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.simple_with(&escaped)).into_owned();
        match text.strip_suffix('\n') {
            Some(text) => text.split('\n').map(str::to_string).collect(),
            None if text.is_empty() => Vec::new(),
            None => vec![text],
        }
    }
}

/// Prints `value`; its simple output raw (as etcdctl's bytes) under `--compat etcdctl` when
/// stdout is not a terminal, else escaped by [`Printer::print`].
pub fn print_raw<T: RawLines>(printer: Printer, value: &T) -> std::io::Result<()> {
    if printer.format() == OutputFormat::Simple
        && printer.is_etcdctl()
        && !std::io::stdout().is_terminal()
    {
        let mut out = std::io::stdout().lock();
        out.write_all(&value.simple_with(&raw))?;
        return out.flush();
    }
    printer.print(value)
}

/// A JSON object holding etcdctl's `header` of `h` (an empty one when etcd sent none).
pub fn with_header(h: Option<&etcdops::client::ResponseHeader>) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(
        "header".into(),
        h.map_or_else(|| Value::Object(Map::new()), |h| header(h, false)),
    );
    map
}

/// The header's fields at the top level, as etcdctl's lease commands print them.
pub fn flat_header(h: Option<&etcdops::client::ResponseHeader>) -> Map<String, Value> {
    match h.map(|h| header(h, false)) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// `lease list`: the leases, as etcdctl lists them.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct LeasesView(pub LeaseList);

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
        self.text_lines()
    }
    fn etcdctl_fields(&self) -> Option<Vec<String>> {
        let mut lines = Vec::new();
        crate::fields::header(&mut lines, self.0.header.as_ref());
        for id in &self.0.listed {
            lines.push(crate::fields::line("ID", id.0));
        }
        Some(lines)
    }
    fn etcdctl_json(&self, _hex: bool) -> Option<Value> {
        // etcdctl prints lease IDs as numbers even with --hex.
        let mut map = flat_header(self.0.header.as_ref());
        let leases: Vec<Value> = self
            .0
            .listed
            .iter()
            .map(|id| serde_json::json!({ "id": id.0 }))
            .collect();
        map.insert("leases".into(), leases.into());
        Some(Value::Object(map))
    }
}

impl RawLines for LeasesView {
    fn simple_with(&self, _data: Data<'_>) -> Vec<u8> {
        // Every lease etcd listed, in its order, as etcdctl prints them.
        let mut out = format!("found {} leases\n", self.0.listed.len());
        for id in &self.0.listed {
            out.push_str(&format!("{id}\n"));
        }
        out.into_bytes()
    }
}

/// `lease timetolive`: one lease, its TTLs and (with `--keys`) its keys.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct LeaseView(pub LeaseTimeToLive);

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
        self.text_lines()
    }
    fn multiline_columns(&self) -> Vec<usize> {
        // The lease's keys, one per line.
        vec![4]
    }
    fn etcdctl_fields(&self) -> Option<Vec<String>> {
        let lease = &self.0;
        let mut lines = Vec::new();
        crate::fields::header(&mut lines, lease.header.as_ref());
        lines.push(crate::fields::line("ID", lease.id.0));
        lines.push(crate::fields::line("TTL", lease.remaining_ttl));
        lines.push(crate::fields::line("GrantedTTL", lease.granted_ttl));
        for key in lease.raw_keys.iter().flatten() {
            lines.push(crate::fields::quoted("Key", key));
        }
        Some(lines)
    }
    fn etcdctl_json(&self, _hex: bool) -> Option<Value> {
        // No omitempty here: etcdctl's own struct (ttl -1, granted-ttl 0 for a lease gone).
        let lease = &self.0;
        let mut map = flat_header(lease.header.as_ref());
        map.insert("id".into(), lease.id.0.into());
        map.insert("ttl".into(), lease.remaining_ttl.into());
        map.insert("granted-ttl".into(), lease.granted_ttl.into());
        let keys = match &lease.raw_keys {
            Some(keys) if !keys.is_empty() => keys.iter().map(|k| bytes(k)).collect(),
            _ => Value::Null,
        };
        map.insert("keys".into(), keys);
        Some(Value::Object(map))
    }
}

/// `lease X granted with TTL(Ns), remaining(Ns)`, or etcdctl's line for a lease gone.
pub fn lease_line(lease: &LeaseTimeToLive) -> String {
    if !lease.found {
        return format!("lease {} already expired", lease.id);
    }
    format!(
        "lease {} granted with TTL({}s), remaining({}s)",
        lease.id, lease.granted_ttl, lease.remaining_ttl
    )
}

impl RawLines for LeaseView {
    fn simple_with(&self, data: Data<'_>) -> Vec<u8> {
        let lease = &self.0;
        let mut out = lease_line(lease).into_bytes();
        if let (Some(keys), true) = (&lease.raw_keys, lease.found) {
            let keys: Vec<Vec<u8>> = keys.iter().map(|k| data(k)).collect();
            out.extend_from_slice(b", attached keys([");
            out.extend_from_slice(&keys.join(&b' '));
            out.extend_from_slice(b"])");
        }
        out.push(b'\n');
        out
    }
}

/// `auth status`: whether authentication is on.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct AuthStatusView(pub AuthStatus);

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
        let mut lines = vec![format!("Authentication Status: {}", self.0.enabled)];
        if let Some(revision) = self.0.auth_revision {
            lines.push(format!("AuthRevision: {revision}"));
        }
        lines
    }
    fn etcdctl_json(&self, _hex: bool) -> Option<Value> {
        let mut map = with_header(self.0.header.as_ref());
        put(&mut map, "enabled", self.0.enabled);
        put(&mut map, "authRevision", self.0.auth_revision.unwrap_or(0));
        Some(Value::Object(map))
    }
}

/// An access change (`auth enable`, `user add`, `role grant-permission`, ...) and etcdctl's
/// line for it; built by [`print_change`].
#[derive(serde::Serialize)]
pub struct ChangeView {
    /// What the library changed (or found already so).
    #[serde(flatten)]
    change: AuthChange,
    /// etcdctl's line for the change, printed instead of ours in simple output.
    #[serde(skip)]
    etcdctl: Option<String>,
}

impl Render for ChangeView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["CHANGED", "MESSAGE"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![
            self.change.changed.to_string(),
            self.change.message.clone(),
        ]]
    }
    fn simple_lines(&self) -> Vec<String> {
        vec![
            self.etcdctl
                .clone()
                .map_or_else(|| self.change.message.clone(), |line| plain(&line)),
        ]
    }
}

/// A list of names, one a line.
pub fn name_lines(names: &[String], data: Data<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    for name in names {
        out.extend(data(name.as_bytes()));
        out.push(b'\n');
    }
    out
}

/// `user list`.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct UsersView(pub UserList);

impl Render for UsersView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["USER"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        self.0.users.iter().map(|u| vec![plain(u)]).collect()
    }
    fn simple_lines(&self) -> Vec<String> {
        self.text_lines()
    }
    fn etcdctl_json(&self, _hex: bool) -> Option<Value> {
        let mut map = with_header(self.0.header.as_ref());
        put(&mut map, "users", self.0.users.clone());
        Some(Value::Object(map))
    }
}

impl RawLines for UsersView {
    fn simple_with(&self, data: Data<'_>) -> Vec<u8> {
        name_lines(&self.0.users, data)
    }
}

/// `user get`: a user and its roles.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct UserView(pub UserInfo);

impl UserView {
    /// etcdctl's `user get --detail -w json`: its `User:` line, then each role's JSON after
    /// an empty line (not one JSON document; etcdctl prints it so).
    pub fn print_detail_json(&self) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        writeln!(out, "User: {}", plain(&self.0.name))?;
        for role in self.0.role_details.iter().flatten() {
            let json = role_json(role);
            writeln!(out, "\n{}", crate::output::json_safe(json.to_string()))?;
        }
        if self.0.missing_role.is_some() {
            writeln!(out)?;
        }
        out.flush()
    }
}

impl Render for UserView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["USER", "ROLES"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        vec![vec![plain(&self.0.name), plain(&self.0.roles.join(", "))]]
    }
    fn simple_lines(&self) -> Vec<String> {
        self.text_lines()
    }
    fn etcdctl_json(&self, _hex: bool) -> Option<Value> {
        let mut map = with_header(self.0.header.as_ref());
        put(&mut map, "roles", self.0.roles.clone());
        Some(Value::Object(map))
    }
}

impl RawLines for UserView {
    fn simple_with(&self, data: Data<'_>) -> Vec<u8> {
        let user = &self.0;
        let mut out = b"User: ".to_vec();
        out.extend(data(user.name.as_bytes()));
        out.push(b'\n');
        match &user.role_details {
            Some(details) => {
                for role in details {
                    out.push(b'\n');
                    out.extend(role_bytes(role, data));
                }
                if user.missing_role.is_some() {
                    out.push(b'\n');
                }
            }
            None => {
                out.extend_from_slice(b"Roles:");
                for role in &user.roles {
                    out.push(b' ');
                    out.extend(data(role.as_bytes()));
                }
                out.push(b'\n');
            }
        }
        out
    }
}

/// `role list`.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct RolesView(pub RoleList);

impl Render for RolesView {
    fn headers(&self) -> Vec<&'static str> {
        vec!["ROLE"]
    }
    fn rows(&self) -> Vec<Vec<String>> {
        self.0.roles.iter().map(|r| vec![plain(r)]).collect()
    }
    fn simple_lines(&self) -> Vec<String> {
        self.text_lines()
    }
    fn etcdctl_json(&self, _hex: bool) -> Option<Value> {
        let mut map = with_header(self.0.header.as_ref());
        put(&mut map, "roles", self.0.roles.clone());
        Some(Value::Object(map))
    }
}

impl RawLines for RolesView {
    fn simple_with(&self, data: Data<'_>) -> Vec<u8> {
        name_lines(&self.0.roles, data)
    }
}

/// etcdctl's `role get` JSON: the header, then `perm` (permType 0, read, left out as Go's
/// omitempty does; keys base64).
pub fn role_json(role: &RoleInfo) -> Value {
    let mut map = with_header(role.header.as_ref());
    let perms: Vec<Value> = role
        .permissions
        .iter()
        .map(|p| {
            let mut perm = Map::new();
            let kind = match p.permission {
                PermissionKind::Read => 0,
                PermissionKind::Write => 1,
                PermissionKind::Readwrite => 2,
            };
            put(&mut perm, "permType", kind);
            if !p.key_bytes.is_empty() {
                perm.insert("key".into(), bytes(&p.key_bytes));
            }
            if !p.range_end_bytes.is_empty() {
                perm.insert("range_end".into(), bytes(&p.range_end_bytes));
            }
            Value::Object(perm)
        })
        .collect();
    put(&mut map, "perm", perms);
    Value::Object(map)
}

/// etcdctl's `role get` simple output: `Role NAME`, the read permissions, the write ones.
pub fn role_bytes(role: &RoleInfo, data: Data<'_>) -> Vec<u8> {
    let mut out = b"Role ".to_vec();
    out.extend(data(role.name.as_bytes()));
    out.extend_from_slice(b"\nKV Read:\n");
    let section = |out: &mut Vec<u8>, wanted: PermissionKind| {
        for p in role
            .permissions
            .iter()
            .filter(|p| p.permission == wanted || p.permission == PermissionKind::Readwrite)
        {
            out.extend(permission_bytes(p, data));
        }
    };
    section(&mut out, PermissionKind::Read);
    out.extend_from_slice(b"KV Write:\n");
    section(&mut out, PermissionKind::Write);
    out
}

/// One permission's line as etcdctl prints it: `\tKEY`, `\t[KEY, END)`, `\t[KEY, <open
/// ended>`, with ` (prefix KEY)` when the range is the key's prefix.
pub fn permission_bytes(p: &PermissionInfo, data: Data<'_>) -> Vec<u8> {
    let (key, end) = (&p.key_bytes, &p.range_end_bytes);
    let mut out = b"\t".to_vec();
    if end.is_empty() {
        out.extend(data(key));
        out.push(b'\n');
        return out;
    }
    out.push(b'[');
    out.extend(data(key));
    if end.as_slice() == [0] {
        out.extend_from_slice(b", <open ended>");
    } else {
        out.extend_from_slice(b", ");
        out.extend(data(end));
        out.push(b')');
    }
    if prefix_end(key) == *end {
        out.extend_from_slice(b" (prefix ");
        out.extend(data(key));
        out.push(b')');
    }
    out.push(b'\n');
    out
}

/// `role get`: a role and its permissions.
#[derive(serde::Serialize)]
#[serde(transparent)]
pub struct RoleView(pub RoleInfo);

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
        self.text_lines()
    }
    fn etcdctl_json(&self, _hex: bool) -> Option<Value> {
        Some(role_json(&self.0))
    }
}

impl RawLines for RoleView {
    fn simple_with(&self, data: Data<'_>) -> Vec<u8> {
        role_bytes(&self.0, data)
    }
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
