//! Detection of etcd installed from a package: its systemd unit, environment files and
//! YAML config, and the binary's version.

use std::collections::BTreeMap;
use std::path::Path;

use super::*;

const CONFIG_YAML: &str = "/etc/etcd/etcd.conf.yml";
const CONFIG_ENV: [&str; 2] = ["/etc/etcd/etcd.conf", "/etc/default/etcd"];
const UNITS: [&str; 3] = [
    "/etc/systemd/system/etcd.service",
    "/usr/lib/systemd/system/etcd.service",
    "/lib/systemd/system/etcd.service",
];
const BINARIES: [&str; 3] = ["/usr/bin/etcd", "/usr/local/bin/etcd", "/opt/etcd/etcd"];

/// `KEY=value` lines (comments and `export` allowed, quotes stripped).
fn env_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (k, v) = l.split_once('=')?;
            Some((k.trim().to_string(), unquote(v)))
        })
        .collect()
}

/// A systemd unit's `ExecStart` words, `Environment=` pairs and `EnvironmentFile=` paths.
struct Unit {
    exec: Vec<String>,
    env: BTreeMap<String, String>,
    env_files: Vec<String>,
}

fn parse_unit(text: &str) -> Unit {
    let mut unit = Unit {
        exec: Vec::new(),
        env: BTreeMap::new(),
        env_files: Vec::new(),
    };
    // Continuation lines end with a backslash.
    let joined = text.replace("\\\n", " ");
    for line in joined.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("ExecStart=") {
            unit.exec = shell_words(rest.trim_start_matches(['-', '@', '+', '!']))
                .into_iter()
                .map(|w| unquote(&w))
                .collect();
        } else if let Some(rest) = line.strip_prefix("Environment=") {
            for pair in rest.split_whitespace() {
                if let Some((k, v)) = unquote(pair).split_once('=') {
                    unit.env.insert(k.to_string(), unquote(v));
                }
            }
        } else if let Some(rest) = line.strip_prefix("EnvironmentFile=") {
            unit.env_files
                .push(rest.trim().trim_start_matches('-').to_string());
        }
    }
    unit
}

/// The settings of a YAML config file (`etcd.conf.yml`) as flag name -> value.
fn yaml_config(path: &Path, text: &str) -> Result<BTreeMap<String, String>> {
    let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| K8sError::BadConfig {
        path: path.display().to_string(),
        reason: format!("not an etcd YAML configuration: {e}"),
    })?;
    let mut flags = BTreeMap::new();
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    if let Some(map) = doc.as_mapping() {
        for (k, v) in map {
            let Some(k) = k.as_str() else { continue };
            if k == "client-transport-security" {
                for (ik, iv) in v.as_mapping().into_iter().flatten() {
                    if let (Some(ik), Some(iv)) = (ik.as_str(), scalar(iv)) {
                        flags.insert(ik.to_string(), iv);
                    }
                }
            } else if let Some(v) = scalar(v) {
                flags.insert(k.to_string(), v);
            }
        }
    }
    Ok(flags)
}

pub(super) fn detect_standalone(root: &Path) -> Result<PlatformInfo> {
    let mut info = PlatformInfo::empty(Platform::Standalone, root);
    // Settings by flag name; later sources fill only what earlier ones left unset:
    // unit command line, unit Environment=, environment files, then the YAML file.
    let mut flags: BTreeMap<String, String> = BTreeMap::new();
    let mut binary = None;
    if let Some(unit_path) = UNITS
        .iter()
        .map(|u| rooted(root, Path::new(u)))
        .find(|p| exists(p))
    {
        let unit = parse_unit(&read(&unit_path)?);
        info.unit_file = Some(unit_path);
        if let Some(program) = unit.exec.first() {
            binary = Some(rooted(root, Path::new(program)));
        }
        let mut env = unit.env.clone();
        for file in &unit.env_files {
            let path = rooted(root, Path::new(file));
            if let Ok(text) = std::fs::read_to_string(&path) {
                for (k, v) in env_file(&text) {
                    env.entry(k).or_insert(v);
                }
                info.config_file.get_or_insert(path);
            }
        }
        for (k, v) in parse_flags(unit.exec.get(1..).unwrap_or(&[])) {
            flags.insert(k, expand(&v, &env));
        }
        add_env_settings(&mut flags, &env);
    }
    if info.config_file.is_none()
        && let Some(path) = CONFIG_ENV
            .iter()
            .map(|c| rooted(root, Path::new(c)))
            .find(|p| exists(p))
    {
        add_env_settings(&mut flags, &env_file(&read(&path)?));
        info.config_file = Some(path);
    }
    let yaml = flags
        .get("config-file")
        .map(|p| rooted(root, Path::new(p)))
        .or_else(|| Some(rooted(root, Path::new(CONFIG_YAML))).filter(|p| exists(p)));
    if let Some(path) = yaml {
        // etcd ignores every other flag and variable when given a config file.
        flags = yaml_config(&path, &read(&path)?)?;
        info.config_file = Some(path);
    }
    if info.unit_file.is_none() && info.config_file.is_none() {
        return Ok(PlatformInfo::empty(Platform::None, root));
    }
    let get = |flag: &str| flags.get(flag).cloned();
    info.name = get("name");
    info.listen_client_urls = list(get("listen-client-urls").as_ref());
    let mut endpoints = list(get("advertise-client-urls").as_ref());
    if endpoints.is_empty() {
        endpoints = local_urls(&info.listen_client_urls);
    }
    if endpoints.is_empty() {
        endpoints = vec!["http://127.0.0.1:2379".into()];
    }
    info.endpoints = resolved(endpoints, "client URLs", &mut info.notes);
    info.peer_urls = list(get("initial-advertise-peer-urls").as_ref());
    info.initial_cluster = get("initial-cluster");
    let path = |flag: &str| get(flag).map(|p| rooted(root, Path::new(&p)));
    info.data_dir = path("data-dir").or_else(|| {
        info.name
            .as_ref()
            .map(|n| rooted(root, Path::new(&format!("{n}.etcd"))))
    });
    info.client_cert_auth = get("client-cert-auth").is_some_and(|v| v != "false");
    info.cacert = path("trusted-ca-file");
    info.server_cert = path("cert-file");
    info.server_key = path("key-file");
    if info.client_cert_auth && info.server_cert.is_some() {
        info.cert = info.server_cert.clone();
        info.key = info.server_key.clone();
        info.notes.push("using etcd's server certificate as the client certificate (works when it carries the clientAuth usage); give a client certificate and key otherwise".into());
    }
    let binary = binary.or_else(|| {
        BINARIES
            .iter()
            .map(|b| rooted(root, Path::new(b)))
            .find(|p| exists(p))
    });
    if let Some(version) = binary.as_deref().and_then(binary_version) {
        info.version = Some(version);
        info.version_source = Some("binary".into());
    }
    Ok(info)
}

fn add_env_settings(flags: &mut BTreeMap<String, String>, env: &BTreeMap<String, String>) {
    for (k, v) in env {
        if let Some(name) = k.strip_prefix("ETCD_") {
            let flag = name.to_ascii_lowercase().replace('_', "-");
            flags.entry(flag).or_insert_with(|| expand(v, env));
        }
    }
}
